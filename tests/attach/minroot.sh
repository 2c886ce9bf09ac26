#!/usr/bin/env bash
# tests/attach/minroot.sh - heaptap attach to a program chrooted in a root that has glibc and nothing else
# SPDX-License-Identifier: MIT
#
# minroot.sh CASE HEAPTAP VICTIM
#
# The root is made here from this host's own files: the victim's dynamic
# loader and libc.so.6 (ldd), libm.so.6 beside them (the rest of glibc the
# library needs), and the victim (minroot_victim.c, which needs libc only).
# No libunwind.so.8, no liblzma.so.5: libheaptap_inject.so needs both, so
# heaptap must copy them in beside the library (attach/stage.c), as for a
# distroless or scratch container image.
# Cases:
#   plain     chroot ROOT: attach, the leak is recorded with its bytes, the
#             copies were what got mapped and are gone, the victim goes on
#   ro        the same with ROOT read-only and a tmpfs on its /tmp (a
#             container run with --read-only --tmpfs /tmp)
#   shm       ROOT read-only, its /tmp too, a tmpfs on its /dev/shm: the
#             session directory and the copies go there
#   noplace   ROOT read-only, its /tmp too, its /dev/shm a noexec tmpfs:
#             nothing can be copied in; one line naming the missing
#             libraries, exit 45, nothing changed in the victim
#   nolibm    ROOT without libm.so.6: one line naming it (a part of glibc is
#             never copied in), exit 45, nothing changed
#   noproc    ROOT as in plain but no /proc mounted in it: the library could
#             not read /proc/self/maps; refused before anything is stopped,
#             one line, exit 52, nothing changed
#   nomaps    ROOT as in plain with /proc mounted, but the victim's own
#             /proc/PID covered by an empty directory: preflight passes, the
#             library loads and cannot read /proc/self/maps; its session
#             ends at once with reason "error" (not after --duration),
#             nothing patched, the victim untouched
#   setgid    the plain root, the victim set-gid to a group that is not
#             ours (egid != rgid: the kernel gives it AT_SECURE, checked in
#             its auxv), so glibc's loader runs in secure mode; attached as
#             in plain, the copies found beside the library
#   setgid-host  the same set-gid victim run in this host's root (no
#             chroot): libunwind and liblzma are the host's own, nothing is
#             copied, the library is loaded in place
#   setuid    the plain root, the victim set-uid to uid 65534 (euid !=
#             ruid, AT_SECURE): the staged files and the session directory
#             must belong to its effective uid, which is not ours
#   setgid-user  the plain root, the victim run as uid/gid 65534 and set-gid
#             to gid 1, heaptap run as uid 65534 without capabilities: the
#             victim is non-dumpable, so ptrace is not permitted; one line
#             naming the set-gid program, exit 19, nothing changed
#   setuid-user  the same with the victim set-uid to uid 1: its effective
#             uid is another user's; one line naming the set-uid program,
#             exit 18, nothing changed
#   fifo      the plain root with a FIFO where this host has libunwind.so.8
#             (the path heaptap compares): never opened, so no hang;
#             libunwind is copied in as in plain
#   symlink-out  the plain root with an absolute symlink where this host
#             has liblzma.so.5, naming a FIFO of the host outside the root:
#             resolved inside the root (where it names nothing), never in
#             the host's; liblzma is copied in as in plain
# The victim runs under unshare -m with /proc mounted in its root (not in
# case noproc). Needs
# root (chroot, mount). Exit 77 says why when
# they cannot run.
set -u
case_=${1:-} HEAPTAP=${2:-} victim=${3:-}
export HEAPTAP
LIB_TAG=minroot
# the root must allow exec: build it under the working directory (ctest: the build tree), not /tmp
TMPDIR=$PWD
. "$(cd "$(dirname "$0")" && pwd)/../lib/attach.sh"
case_name=attach.minroot-$case_

case $case_ in plain | ro | shm | noplace | nolibm | noproc | nomaps | setgid | setgid-host | setuid | setgid-user | setuid-user | \
	fifo | symlink-out) ;;
*) fail "unknown case '$case_'" ;;
esac
[ -x "$victim" ] || fail "victim $victim is not an executable"
[ "$(id -u)" = 0 ] || skip "chroot needs root"
command -v chroot >/dev/null || PATH=$PATH:/usr/sbin:/sbin
command -v chroot >/dev/null || skip "no chroot program"
command -v unshare >/dev/null || skip "no unshare"
unshare -m --propagation private true 2>/dev/null || skip "unshare -m is not permitted here"

lib=$(readlink -f "$(dirname "$(readlink -f "$HEAPTAP")")/../lib/libheaptap_inject.so")
[ -f "$lib" ] || fail "no libheaptap_inject.so beside $HEAPTAP"
# what makes this case: the library needs libraries outside glibc
for n in libunwind.so.8 liblzma.so.5; do
	ldd "$lib" | grep -q "^[[:space:]]*$n " || fail "$lib does not need $n (ldd): this test has nothing to show"
done

# ---- the root
root=$tmp/root
mkdir -p "$root/tmp" || fail "mkdir $root"
chmod 1777 "$root/tmp"
copy_in() { # copy_in HOSTPATH: the file (symlinks resolved) at the same path in the root
	mkdir -p "$root$(dirname "$1")" && cp -L "$1" "$root$1" || fail "copy $1 into $root"
}
interp=$(readelf -l "$victim" | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
[ -n "$interp" ] || fail "$victim has no program interpreter"
copy_in "$interp"
libc=
for p in $(ldd "$victim" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p'); do
	copy_in "$p"
	case $p in */libc.so.6) libc=$p ;; esac
done
[ -n "$libc" ] || fail "ldd $victim shows no libc.so.6"
[ "$case_" = nolibm ] || copy_in "$(dirname "$libc")/libm.so.6"
cp "$victim" "$root/victim" || fail "copy the victim"
# set-gid to a group that is not ours, or set-uid to a user that is not us:
# the kernel sets AT_SECURE for egid != rgid or euid != ruid
SECURE_ID=65534
case $case_ in *-user) SECURE_ID=1 ;; esac # the victim's real ids are 65534 there
case $case_ in
setgid*)
	[ "$(id -g)" != "$SECURE_ID" ] || skip "our own gid is $SECURE_ID"
	chgrp "$SECURE_ID" "$root/victim" && chmod g+s "$root/victim" || fail "make the victim set-gid"
	;;
setuid*)
	[ "$(id -u)" != "$SECURE_ID" ] || skip "our own uid is $SECURE_ID"
	chown "$SECURE_ID" "$root/victim" && chmod u+s "$root/victim" || fail "make the victim set-uid"
	;;
esac
# where heaptap looks for what the library needs (attach/deps.c: the host's first directory)
dep_path() { ldd "$lib" | sed -n "s/^[[:space:]]*$1 => \(\/[^ ]*\) .*/\1/p"; }
case $case_ in
fifo)
	p=$(dep_path libunwind.so.8)
	mkdir -p "$root$(dirname "$p")" && mkfifo "$root$p" || fail "make a FIFO at $p in the root"
	;;
symlink-out)
	p=$(dep_path liblzma.so.5)
	mkfifo "$tmp/host-fifo" && mkdir -p "$root$(dirname "$p")" && ln -s "$tmp/host-fifo" "$root$p" ||
		fail "make a symlink at $p in the root"
	;;
esac
if find "$root" -type f \( -name 'libunwind*' -o -name 'liblzma*' \) | grep -q .; then
	fail "the root has libunwind or liblzma: $(find "$root" -type f \( -name 'libunwind*' -o -name 'liblzma*' \))"
fi
echo "root $root: $(cd "$root" && find . -type f | sort | tr '\n' ' ')" >&2

# ---- the victim
target_stop()
{
	{ echo quit >&"${VIC[1]}"; } 2>/dev/null
	sleep 0.1
	kill -KILL "$TPID" 2>/dev/null
}
mkdir -p "$root/proc" "$root/dev/shm"
# In a mount namespace of its own: /proc in the root (inject/ reads
# /proc/self/maps; a container has it), and the case's mounts.
coproc VIC { unshare -m --propagation private /bin/sh -c '
	r=$1
	case $2 in
	ro | shm | noplace) mount --bind "$r" "$r" && mount -o remount,bind,ro "$r" || exit 97 ;;
	esac
	[ "$2" = noproc ] || mount -t proc proc "$r/proc" || exit 97
	# nomaps: this shell execs chroot, which execs the victim: the same pid
	if [ "$2" = nomaps ]; then mkdir -p "$r/.empty" && mount --bind "$r/.empty" "$r/proc/$$" || exit 97; fi
	case $2 in
	ro) mount -t tmpfs heaptap-test-tmp "$r/tmp" || exit 97 ;;
	shm) mount -t tmpfs -o mode=1777 heaptap-test-shm "$r/dev/shm" || exit 97 ;;
	noplace) mount -t tmpfs -o noexec,mode=1777 heaptap-test-shm "$r/dev/shm" || exit 97 ;;
	esac
	[ "$2" = setgid-host ] && exec "$r/victim"
	case $2 in *-user) exec chroot --userspec=65534:65534 "$r" /victim ;; esac
	exec chroot "$r" /victim' sh "$root" "$case_" 2>"$tmp/victim.err"; }
ready_pid VIC 20 "the victim" "$tmp/victim.err"

ask() { # ask CMD: the victim's answer in $ans
	local r=0
	co_ask VIC 90 "$1" || r=$?
	[ "$r" != 1 ] || { show "victim stderr" "$tmp/victim.err"; fail "victim gone (command '$1')"; }
	[ "$r" = 0 ] || fail "victim did not answer '$1'"
}

untraced() {
	grep -q '^TracerPid:[[:space:]]*0$' /proc/"$TPID"/status || fail "victim still traced after heaptap ended ($1)"
}

# the victim's root as it sees it: read-only where the case says so
if [ "$case_" = ro ] || [ "$case_" = shm ] || [ "$case_" = noplace ]; then
	touch "/proc/$TPID/root/.heaptap-rw" 2>/dev/null && fail "the victim's root is writable"
fi

case $case_ in setgid* | setuid*)
	# what makes these cases: a set-gid/set-uid process, which glibc's loader runs in secure mode
	f=Gid
	case $case_ in setuid*) f=Uid ;; esac
	gids=$(sed -n "s/^$f:[[:space:]]*//p" /proc/"$TPID"/status)
	set -- $gids
	[ "${1:-}" != "$SECURE_ID" ] && [ "${2:-}" = "$SECURE_ID" ] ||
		fail "the victim's ${f}s are '$gids', want real != effective $SECURE_ID (a nosuid mount?)"
	sec=$(python3 -c 'import struct,sys
d=open(sys.argv[1],"rb").read()
v=[struct.unpack_from("<QQ",d,i) for i in range(0,len(d)-15,16)]
print(dict(v).get(23,"none"))' /proc/"$TPID"/auxv) || fail "cannot read the victim's auxv"
	[ "$sec" = 1 ] || fail "the victim's AT_SECURE is $sec, not 1"
	echo "victim: $f $gids, AT_SECURE=$sec" >&2
	;;
esac

if [ "$case_" = noproc ]; then
	# what makes this case: the victim's root really has no procfs at /proc
	[ -e "/proc/$TPID/root/proc/self" ] && fail "the victim's root has /proc mounted"
fi

if [ "$case_" = nomaps ]; then
	# what makes this case: procfs in the victim's root, but no maps file for it
	[ "$(stat -f -c %t "/proc/$TPID/root/proc")" = 9fa0 ] || fail "no procfs at the victim's /proc"
	[ -e "/proc/$TPID/root/proc/$TPID/maps" ] && fail "the victim's /proc/$TPID/maps is readable"
	rc=0
	timeout 120 "$HEAPTAP" attach -o "$tmp/mr.htap" --duration 600 "$TPID" 2>"$tmp/mr.err" </dev/null || rc=$?
	show "heaptap stderr" "$tmp/mr.err"
	[ "$rc" != 124 ] || fail "heaptap still recorded after 120 s: the library's session did not end"
	[ "$rc" -lt 128 ] || fail "heaptap attach died (exit $rc)"
	[ "$rc" = 1 ] || fail "heaptap attach exited $rc, not 1, when the library gave up"
	grep -q "ended the session on an error of its own" "$tmp/mr.err" || fail "heaptap did not say the library gave up"
	# the library's reason (WIRE_REC_LOG before its END), in that one line
	grep -q "ended the session on an error of its own: cannot read /proc/self/maps: [A-Z]* *(errno [0-9]*)" "$tmp/mr.err" ||
		fail "heaptap's error line does not give the library's reason"
	[ "$(grep -c "attach" "$tmp/mr.err")" -ge 1 ] && ! grep -q "library error" "$tmp/mr.err" ||
		fail "the reason was printed on a line of its own as well"
	untraced "session ended"
	ask "restored 0"
	[ "$ans" = restored ] || fail "the victim's malloc slot changed: $ans"
	for i in $(seq 50); do # the library's threads go once the session ended (5 s at most)
		grep -qx heaptap-inject /proc/"$TPID"/task/*/comm 2>/dev/null || break
		sleep 0.1
	done
	! grep -qx heaptap-inject /proc/"$TPID"/task/*/comm 2>/dev/null || fail "a heaptap-inject thread is left"
	ask ping
	[ "$ans" = pong ] || fail "victim answered '$ans' to ping"
	r=0
	"$HEAPTAP" report --format json "$tmp/mr.htap" >"$tmp/mr.json" 2>"$tmp/mr.rerr" || r=$?
	[ "$r" = 0 ] || { show "report stderr" "$tmp/mr.rerr"; fail "heaptap report exited $r"; }
	end=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["end_reason"])' "$tmp/mr.json") ||
		fail "report unreadable"
	echo "recording's end_reason: $end" >&2
	[ "$end" = error ] || fail "the session ended with reason '$end', want error"
	echo "PASS: $case_name" >&2
	exit 0
fi

if [ "$case_" = noplace ] || [ "$case_" = nolibm ] || [ "$case_" = noproc ] || [ "$case_" = setgid-user ] ||
	[ "$case_" = setuid-user ]; then
	want=45
	[ "$case_" = noproc ] && want=52
	as=()
	if [ "$case_" = setgid-user ] || [ "$case_" = setuid-user ]; then
		# heaptap as the victim's real uid, without CAP_SYS_PTRACE; its -o directory writable for it
		want=19
		[ "$case_" = setuid-user ] && want=18
		command -v setpriv >/dev/null || skip "no setpriv"
		as=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
		out=$tmp/out
		chmod 0711 "$tmp" && mkdir -m 0777 "$out" || fail "make $out"
		# a build tree below a 0700 directory (/root) is out of uid 65534's reach:
		# then heaptap (which needs only system libraries) and its output go to /tmp
		if ! "${as[@]}" test -x "$HEAPTAP" -a -w "$out"; then
			pub=$(mktemp -d /tmp/heaptap-minroot-pub.XXXXXX) || fail "mktemp in /tmp"
			suite_cleanup() { rm -rf "$pub"; }
			chmod 0755 "$pub" && cp "$HEAPTAP" "$pub/heaptap" && mkdir -m 0777 "$pub/out" || fail "fill $pub"
			HEAPTAP=$pub/heaptap out=$pub/out
		fi
		"${as[@]}" test -x "$HEAPTAP" -a -w "$out" || skip "uid 65534 cannot run $HEAPTAP or write $out"
	else
		out=$tmp
	fi
	rc=0
	timeout 60 "${as[@]}" "$HEAPTAP" attach -o "$out/mr.htap" --duration 30 "$TPID" 2>"$tmp/mr.err" </dev/null || rc=$?
	show "heaptap stderr" "$tmp/mr.err"
	[ "$rc" = "$want" ] || fail "heaptap attach exited $rc, want $want"
	[ "$(wc -l <"$tmp/mr.err")" = 1 ] || fail "heaptap said more or less than one line"
	if [ "$case_" = noproc ]; then
		grep -qF 'no /proc mounted' "$tmp/mr.err" || fail "heaptap's line does not say 'no /proc mounted'"
		[ -e "$tmp/mr.htap" ] && fail "heaptap left a recording behind"
	elif [ "$case_" = setgid-user ] || [ "$case_" = setuid-user ]; then
		w="a set-group-ID program (gid 65534, effective $SECURE_ID)"
		[ "$case_" = setuid-user ] && w="a set-user-ID program (uid 65534, effective $SECURE_ID)"
		grep -qF "$w" "$tmp/mr.err" || fail "heaptap's line does not say '$w'"
		[ -e "$out/mr.htap" ] && fail "heaptap left a recording behind"
	elif [ "$case_" = noplace ]; then
		for w in libunwind.so.8 liblzma.so.5 'dev/shm: mounted noexec' 'tmp: read-only'; do
			grep -qF "$w" "$tmp/mr.err" || fail "heaptap's line does not say '$w'"
		done
	else
		grep -qF 'libm.so.6' "$tmp/mr.err" || fail "heaptap's line does not name libm.so.6"
	fi
	untraced "refused"
	ask "restored 0"
	[ "$ans" = restored ] || fail "the victim's malloc slot changed: $ans"
	! grep -q libheaptap /proc/"$TPID"/maps || fail "heaptap's library is mapped in the victim"
	ask tmp
	[ "$ans" = "tmp n=0" ] || fail "heaptap left entries in the victim's /tmp or /dev/shm: $ans"
	ask ping
	[ "$ans" = pong ] || fail "victim answered '$ans' to ping"
	echo "PASS: $case_name" >&2
	exit 0
fi

attach_bg mr --duration 600 "$TPID"
for i in $(seq 60); do # 60 s at most; at once if heaptap ended
	ask "patched 1000"
	[ "$ans" = patched ] && break
	kill -0 "$HT_PID" 2>/dev/null || break
done
[ "$ans" = patched ] || { show "heaptap stderr" "$tmp/mr.err"; fail "no hook in the victim's malloc slot: $ans"; }
# what got mapped: the copies, from the staging directory in the victim's /tmp (/dev/shm: case shm)
place=/tmp
[ "$case_" = shm ] && place=/dev/shm
if [ "$case_" = setgid-host ]; then
	# the host's own files: the library in place, libunwind and liblzma where ldd finds them
	for n in "$lib" $(ldd "$lib" | sed -n 's/.*\(libunwind\.so\.8\|liblzma\.so\.5\) => \(\/[^ ]*\) .*/\2/p'); do
		n=$(readlink -f "$n")
		grep -qF " $n" /proc/"$TPID"/maps ||
			{ grep -e /tmp/ -e libheaptap /proc/"$TPID"/maps >&2; fail "$n is not mapped in place"; }
	done
	! grep -qE '/heaptap-[A-Za-z0-9]{6}/' /proc/"$TPID"/maps || fail "something was staged for a process that sees everything"
else
	for n in libheaptap_inject.so libunwind.so.8 liblzma.so.5; do
		grep -qE "$place/heaptap-[A-Za-z0-9]{6}/${n//./\\.}( \(deleted\))?$" /proc/"$TPID"/maps ||
			{ grep -e /tmp/ -e libheaptap /proc/"$TPID"/maps >&2; fail "$n is not mapped from a staging directory in $place"; }
	done
	# staged files and session directory go once the library is connected (3 s at most)
	for i in $(seq 30); do
		ask tmp
		[ "$ans" = "tmp n=0" ] && break
		sleep 0.1
	done
	[ "$ans" = "tmp n=0" ] || fail "heaptap's entries stay in the victim's /tmp while recording: $ans"
fi
ask "leak 9"
[ "$ans" = "leaked n=9 bytes=$((9 * 4321))" ] || fail "leak: $ans"
kill -TERM "$HT_PID"
attach_wait mr
show "heaptap stderr" "$tmp/mr.err"
attach_ok mr
ask "restored 5000"
[ "$ans" = restored ] || fail "the victim's malloc slot did not come back: $ans"
untraced "after detach"
ask ping
[ "$ans" = pong ] || fail "victim answered '$ans' to ping after detach"
if [ "$case_" != setgid-host ]; then # the host's /tmp holds other tests' heaptap-* entries
	ask tmp
	[ "$ans" = "tmp n=0" ] || fail "heaptap left entries in the victim's /tmp: $ans"
fi
# the report: minroot_leak's 9 blocks, all leaked
r=0
"$HEAPTAP" report --format json -n 1000000 -b 0 "$tmp/mr.htap" >"$tmp/mr.json" 2>"$tmp/mr.rerr" || r=$?
[ "$r" = 0 ] || { show "report stderr" "$tmp/mr.rerr"; fail "heaptap report exited $r"; }
got=$(python3 "$TESTS_LIB/htreport.py" through "$tmp/mr.json" minroot_leak) || fail "report unreadable"
want="calls=9 bytes=$((9 * 4321)) leaked=$((9 * 4321))"
echo "report: minroot_leak $got (want $want)" >&2
[ "$got" = "$want" ] || fail "the report's minroot_leak differs"
echo "PASS: $case_name" >&2

#!/usr/bin/env bash
# tests/oldlibc/oldlibc.sh - attach to programs of a Debian 11 rootfs (glibc 2.31, chroot)
#
# oldlibc.sh CASE DRIVER OKLIB UNDEFLIB HEAPTAP
#
# Before glibc 2.34, dlopen/dlsym/dlerror live in libdl.so.2 and
# pthread_create in libpthread.so.0; libc.so.6 has only its private
# __libc_dlopen_mode/__libc_dlsym. Two bullseye targets cover both paths:
#   perl  (links libdl + libpthread): loader thread made with libpthread's
#         pthread_create, dlopen/dlsym/dlerror of libdl
#   sh    (dash, links libc only): no pthread_create, no dlopen: the
#         hijacked thread itself calls __libc_dlopen_mode; no dlerror text
#   mt    (mt_victim.c, built here against the rootfs's libpthread and libc,
#         three threads): a loader thread, which calls __libc_dlopen_mode
# Cases:
#   loader, libc, threads        the no-libc test library is loaded and its start function runs
#                                (in the loader thread / in the hijacked thread / loader thread)
#   loader-dlerror, libc-dlerror, threads-dlerror
#                                a library with an undefined symbol: the dlerror() text comes
#                                back (perl), or the library's path (sh, mt: no dlerror there)
#   cli, cli-libc                the real `heaptap attach`: one clear line, exit 51, nothing left
# Every case then checks the target: alive, not traced, not stopped, its
# loop still turning, no failed call seen by it.
set -euo pipefail
case_=$1 driver=$2 oklib=$3 undeflib=$4 heaptap=$5
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/case.sh"
case_name=oldlibc.$case_

[ -r /proc/sys/kernel/yama/ptrace_scope ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope)" -ge 2 ] &&
	[ "$(id -u)" != 0 ] && skip "ptrace_scope >= 2"
set +e
root=$(bash "$here/rootfs.sh")
rc=$?
set -e
[ "$rc" = 0 ] || exit "$rc"
[ "$(id -u)" = 0 ] || skip "chroot into $root needs root"
libc=$(ls "$root"/lib/x86_64-linux-gnu/libc-2.*.so 2>/dev/null | head -n 1)
[ -n "$libc" ] || fail "$root has no libc-2.*.so"
echo "rootfs $root: $(cat "$root/.heaptap-ready")"

# The test libraries must need nothing of any glibc: no DT_NEEDED, no version.
for l in "$oklib" "$undeflib"; do
	! readelf -d "$l" | grep -q NEEDED || fail "$l has DT_NEEDED entries"
	! readelf -V "$l" | grep -q GLIBC_ || fail "$l needs a glibc symbol version"
done

# A work directory inside the rootfs: the target sees it as /tmp/$name.
name=heaptap-oldlibc.$$
work=$root/tmp/$name
rm -rf "$work"
mkdir -m 0755 "$work"
pid=
cleanup() {
	[ "$BASHPID" = "$$" ] || return 0 # not in a job killed before its exec
	if [ -n "$pid" ]; then
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$work"
	rmdir "$mnt" 2>/dev/null || true
}
trap cleanup EXIT

case $case_ in
loader | loader-dlerror | cli) target=perl ;;
threads | threads-dlerror) target=mt ;;
*) target=sh ;;
esac
if [ "$target" = mt ]; then
	# linked against the rootfs's libraries, so every symbol binds to a version glibc 2.31 has
	lib=$root/lib/x86_64-linux-gnu cc=${CC:-cc}
	crt=()
	for f in crt1.o crti.o crtn.o; do
		crt+=("$($cc -print-file-name=$f)")
		[ -f "${crt[-1]}" ] || fail "no $f to build mt_victim with"
	done
	$cc -O2 -fno-stack-protector -U_FORTIFY_SOURCE -c "$here/mt_victim.c" -o "$work/mt_victim.o"
	$cc -nostdlib -o "$work/mt_victim" "${crt[0]}" "${crt[1]}" "$work/mt_victim.o" \
		"$lib/libpthread.so.0" "$lib/libc.so.6" "${crt[2]}" -Wl,-rpath-link,"$lib" \
		-Wl,-dynamic-linker,/lib64/ld-linux-x86-64.so.2
fi
: >"$work/ticks"
# in_root CMD...: exec CMD chrooted into the rootfs as a container sees it (run it
# in the background: pid=$! is CMD's): in a mount namespace of its own, the
# rootfs's entries bound into a tmpfs and procfs at /proc. debootstrap --foreign
# leaves /proc a symlink to /proc, which is no procfs inside the root (heaptap
# resolves it there and refuses; its library could not read /proc/self/maps).
mnt=$(mktemp -d /tmp/heaptap-oldlibc-mnt.XXXXXX)
in_root() {
	exec unshare -m --propagation private /bin/sh -c '
		r=$1 m=$2
		shift 2
		mount -t tmpfs heaptap-oldlibc "$m" || exit 97
		for e in "$r"/* "$r"/.heaptap-ready; do
			n=${e##*/}
			if [ "$n" = proc ]; then mkdir "$m/proc" || exit 97
			elif [ -L "$e" ]; then ln -s "$(readlink "$e")" "$m/$n" || exit 97
			elif [ -d "$e" ]; then mkdir "$m/$n" && mount --bind "$e" "$m/$n" || exit 97
			else cp -p "$e" "$m/$n" || exit 97
			fi
		done
		mount -t proc proc "$m/proc" || exit 97
		exec chroot "$m" "$@"' sh "$root" "$mnt" "$@"
}
if [ "$target" = perl ]; then
	# a tick every 50 ms; a failed select (EINTR, ...) ends it with ERR
	in_root /usr/bin/perl -e '$| = 1; for (;;) {
		if (select(undef, undef, undef, 0.05) < 0) { print "ERR $!\n"; exit 3 }
		print ++$i, "\n" }' >>"$work/ticks" 2>&1 &
elif [ "$target" = mt ]; then
	in_root "/tmp/$name/mt_victim" >>"$work/ticks" 2>&1 &
else
	in_root /bin/sh -c 'i=0; while :; do i=$((i + 1)); echo $i;
		sleep 0.05 || { echo ERR; exit 3; }; done' >>"$work/ticks" 2>&1 &
fi
pid=$!

ticks() { wc -l <"$work/ticks"; }
wait_ticks() { # wait until the target has ticked N more times (10 s at most)
	local want=$(($(ticks) + $1)) i
	for i in $(seq 200); do
		[ "$(ticks)" -ge "$want" ] && return 0
		sleep 0.05
	done
	fail "target $pid stopped ticking ($(ticks) ticks, wanted $want)"
}
check_target() {
	kill -0 "$pid" 2>/dev/null || fail "target $pid is gone"
	local st tr
	st=$(awk '/^State:/ {print $2}' "/proc/$pid/status")
	tr=$(awk '/^TracerPid:/ {print $2}' "/proc/$pid/status")
	[ "$tr" = 0 ] || fail "target $pid still traced by $tr"
	# (dash blocks SIGCHLD for a moment around each fork: only perl's mask is steady)
	if [ "$target" = perl ]; then
		[ "$(sigblk)" = "$blk0" ] || fail "target's signal mask changed: $blk0 -> $(sigblk)"
	fi
	case $st in T | t | Z | X) fail "target $pid in state $st" ;; esac
	wait_ticks 5
	! grep -q ERR "$work/ticks" || fail "target saw a failed call: $(grep ERR "$work/ticks")"
}
sigblk() { awk '/^SigBlk:/ {print $2}' "/proc/$pid/status"; }
wait_ticks 3
blk0=$(sigblk)
ntask=$(ls "/proc/$pid/task" | wc -l)

# Which glibc path the target takes: what it has mapped.
maps=$(awk '{print $6}' "/proc/$pid/maps" | sort -u)
echo "$maps" | grep -q '/libc-2\.31\.so$' || fail "target does not run glibc 2.31: $maps"
if [ "$target" = perl ]; then
	echo "$maps" | grep -q '/libdl-2\.31\.so$' || fail "perl has no libdl-2.31.so mapped"
	echo "$maps" | grep -q '/libpthread-2\.31\.so$' || fail "perl has no libpthread-2.31.so mapped"
elif [ "$target" = mt ]; then
	echo "$maps" | grep -q '/libpthread-2\.31\.so$' || fail "mt_victim has no libpthread-2.31.so mapped"
	! echo "$maps" | grep -q '/libdl-' || fail "mt_victim has libdl mapped"
	[ "$ntask" = 3 ] || fail "mt_victim has $ntask threads, not 3"
else
	! echo "$maps" | grep -Eq '/lib(dl|pthread)-' || fail "sh has libdl or libpthread mapped"
fi

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $out"; }
run_driver() { # LIB: attach with the driver, start function oldlibc_start(/tmp/$name/marker)
	out=$("$driver" "$pid" "$1" oldlibc_start "/tmp/$name/marker")
	echo "driver: $out"
}

case $case_ in
loader | libc | threads)
	run_driver "$oklib"
	[ "$(field exit)" = 0 ] || fail "attach failed: $out"
	[ -f "$work/marker" ] || fail "the start function did not run (no marker)"
	line=$(cat "$work/marker")
	echo "marker: $line"
	[ "$(wc -l <"$work/marker")" = 1 ] || fail "start function ran more than once"
	lt=$(field loader_tid)
	if [ "$target" != sh ]; then
		[ "$(field threaded)" = 1 ] || fail "$target (libpthread loaded) was not loaded by a loader thread"
		[ "$lt" -gt 0 ] && [ "$lt" != "$pid" ] || fail "loader tid $lt"
		[ "$line" = "ran tid=$lt pid=$pid arg=/tmp/$name/marker" ] ||
			fail "marker '$line' is not the loader thread's ($lt)"
		for i in $(seq 100); do # the loader thread ends
			[ "$(ls "/proc/$pid/task" | wc -l)" = "$ntask" ] && break
			sleep 0.05
		done
		[ "$(ls "/proc/$pid/task" | wc -l)" = "$ntask" ] || fail "loader thread still there"
	else
		[ "$(field threaded)" = 0 ] || fail "sh (no libpthread) cannot have a loader thread"
		[ "$line" = "ran tid=$pid pid=$pid arg=/tmp/$name/marker" ] ||
			fail "marker '$line' is not the hijacked thread's ($pid)"
	fi
	grep -q 'liboldlibc_ok\.so' "/proc/$pid/maps" || fail "the library is not mapped in the target"
	check_target
	# a second attach finds the library loaded (same handle) and runs the start function again
	run_driver "$oklib"
	[ "$(field exit)" = 0 ] || fail "second attach failed: $out"
	[ "$(wc -l <"$work/marker")" = 2 ] || fail "second start did not run"
	line2=$(sed -n 2p "$work/marker")
	echo "marker: $line2"
	if [ "$target" != sh ]; then
		lt2=$(field loader_tid)
		[ "$lt2" != "$lt" ] && [ "$line2" = "ran tid=$lt2 pid=$pid arg=/tmp/$name/marker" ] ||
			fail "second marker '$line2' is not the new loader thread's ($lt2)"
	else
		[ "$line2" = "$line" ] || fail "second marker '$line2' differs from the first"
	fi
	;;
loader-dlerror | libc-dlerror | threads-dlerror)
	run_driver "$undeflib"
	[ "$(field exit)" = 46 ] || fail "expected exit 46 (the process could not load the library): $out"
	[ ! -e "$work/marker" ] || fail "the start function ran despite dlopen failing"
	if [ "$target" != sh ]; then
		[ "$(field threaded)" = 1 ] || fail "not through the loader thread: $out"
	fi
	if [ "$target" = perl ]; then
		grep -q 'detail=.*liboldlibc_undef\.so: undefined symbol: heaptap_oldlibc_absent' <<<"$out" ||
			fail "libdl's dlerror() text is not in the detail: $out"
	else
		# glibc < 2.34 without libdl.so.2: __libc_dlopen_mode keeps its error to itself;
		# the hijacked thread's att_inject names the library, the loader thread's outcome does not
		if [ "$target" = sh ]; then
			grep -q 'detail=.*liboldlibc_undef\.so' <<<"$out" || fail "the detail does not name the library: $out"
		else
			grep -q 'detail=dlopen returned NULL$' <<<"$out" || fail "unexpected detail: $out"
		fi
	fi
	;;
cli | cli-libc)
	libdir=$(cd "$(dirname "$heaptap")/../lib" && pwd)
	[ -f "$libdir/libheaptap_inject.so" ] || fail "no $libdir/libheaptap_inject.so"
	before=$(ls -d "$root"/tmp/heaptap-* 2>/dev/null || true)
	set +e
	(cd "$work" && HEAPTAP_LIBDIR=$libdir timeout 60 "$heaptap" attach --duration 2 "$pid") \
		>"$work/out" 2>"$work/err"
	rc=$?
	set -e
	echo "heaptap attach: exit $rc, stderr:"
	cat "$work/err"
	# refused before anything is stopped: the library's needed GLIBC versions
	# against the ones the target's libc defines (with or without libdl);
	# glibc 2.31 defines nothing new in 2.31, so its newest is GLIBC_2.30
	[ "$rc" = 51 ] || fail "expected exit 51 (the process's libc is too old), got $rc"
	[ "$(wc -l <"$work/err")" = 1 ] || fail "expected one line on stderr"
	grep -q "^heaptap: attach $pid: the process's C library is older than the library needs" \
		"$work/err" || fail "not the libc version line"
	grep -Eq "needs GLIBC_2\.(3[2-9]|[4-9][0-9]), .*libc.* defines up to GLIBC_2\.(2[0-9]|3[01])$" "$work/err" ||
		fail "the line does not name the needed and the defined glibc versions"
	left=$(ls "$work" | grep -v -e '^ticks$' -e '^out$' -e '^err$' || true)
	[ -z "$left" ] || fail "heaptap left files behind: $left"
	after=$(ls -d "$root"/tmp/heaptap-* 2>/dev/null || true)
	left=$(comm -13 <(echo "$before") <(echo "$after"))
	[ -z "$left" ] || fail "heaptap left directories in the target's /tmp: $left"
	;;
*)
	fail "unknown case $case_"
	;;
esac
check_target
echo "PASS: $case_ (target $pid ran on: $(cat "$work/ticks" | wc -l) ticks)"

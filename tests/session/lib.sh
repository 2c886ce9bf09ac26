# tests/session/lib.sh - common part of the heaptap attach end-to-end cases (sourced, bash)
# SPDX-License-Identifier: MIT
#
# Environment (ctest sets it, see CMakeLists.txt):
#   HEAPTAP          the heaptap program
#   SESSION_SERVICE  the test service (service.c)
#   SESSION_STATIC   a static program, or "" when libc.a is missing
#   SESSION_SRC      this directory
#   SESSION_KEEP     if set, keep the temporary directory
# A case exits 0 (pass), 1 (fail) or 77 (skip). Every wait is bounded.
# What every attach case needs (fail, $tmp, attach_bg, attach_wait,
# attach_ok, ...) is in tests/lib/attach.sh; this file adds the service.

LIB_TAG=sess
LIB_KEEP=${SESSION_KEEP:-}
SESSION_SRC=${SESSION_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
. "$(dirname "${BASH_SOURCE[0]}")/../lib/attach.sh"

[ -x "${SESSION_SERVICE:-}" ] || fail "SESSION_SERVICE is not an executable: ${SESSION_SERVICE:-unset}"

# at exit (cleanup): let the service go on if stopped, ask it to quit, then kill it
target_stop()
{
	kill -CONT "$TPID" 2>/dev/null
	{ echo quit >&"${SVC[1]}"; } 2>/dev/null
	sleep 0.1
	kill -KILL "$TPID" 2>/dev/null
}

# svc_start [PREFIX...]: start the service as a coprocess (PREFIX runs it, e.g.
# unshare ...), wait for "ready pid=N": TPID.
svc_start()
{
	coproc SVC { "$@" "$SESSION_SERVICE" 2>"$tmp/service.err"; }
	ready_pid SVC 20 "the service" "$tmp/service.err"
}

# svc CMD: send CMD to the service and read its one-line answer into $ans.
svc()
{
	local r=0
	co_ask SVC 90 "$1" || r=$?
	[ "$r" != 1 ] || fail "service gone (command '$1')"
	[ "$r" = 0 ] || fail "service did not answer '$1'"
}

# svc_ok: the service still answers, and its own checks are clean
svc_alive()
{
	svc ping
	[ "$ans" = pong ] || fail "service answered '$ans' to ping ($1)"
}

svc_checks()
{
	svc stats
	echo "service: $ans" >&2
	[ "$(val eintr)" = 0 ] || fail "the service saw EINTR ($1): $ans"
	[ "$(val regerr)" = 0 ] || fail "the service saw a changed register ($1): $ans"
	svc sig
	echo "service: $ans" >&2
	[ "$(val err)" = 0 ] || fail "a signal was lost, duplicated or changed ($1): $ans"
	[ "$(val sent)" = "$(val recv)" ] || fail "signals sent and received differ ($1): $ans"
	[ "$(val sent)" -gt 0 ] || fail "no signal was sent ($1): $ans"
}

# svc_untraced MS: wait (MS milliseconds at most) until no thread of the
# service has a tracer, i.e. heaptap put the hijacked thread's registers back
# and detached. Returns 1 on timeout. Only meaningful once heaptap is known to
# have seized the service (e.g. after "waitpatched"): before the seize, too,
# no thread is traced.
svc_untraced()
{
	local i f traced
	for ((i = 0; i <= $1; i += 5)); do
		traced=0
		for f in /proc/"$TPID"/task/*/status; do
			grep -q '^TracerPid:[[:space:]]*0$' "$f" 2>/dev/null || { [ -e "$f" ] && traced=1; }
		done
		[ "$traced" = 0 ] && return 0
		sleep 0.005
	done
	return 1
}

# attach_fg NAME ARGS...: heaptap attach in the foreground, bounded: $rc
attach_fg()
{
	local name=$1
	shift
	rc=0
	timeout 60 "$HEAPTAP" attach -o "$tmp/$name.htap" "$@" 2>"$tmp/$name.err" </dev/null || rc=$?
	[ "$rc" -ne 124 ] || { show "heaptap stderr" "$tmp/$name.err"; fail "heaptap attach timed out"; }
}

# one_line NAME WHAT: heaptap's stderr is one line "heaptap: attach PID: ..."
one_line()
{
	local n
	n=$(wc -l <"$tmp/$1.err")
	if [ "$n" -ne 1 ] || ! grep -q '^heaptap: attach [0-9]*: .' "$tmp/$1.err"; then
		show "heaptap stderr" "$tmp/$1.err"
		fail "$2: expected one line \"heaptap: attach PID: ...\", got $n line(s)"
	fi
	echo "heaptap said: $(cat "$tmp/$1.err")" >&2
}

# site NAME CALLS BYTES LEAKED FILE: the report of FILE (a .htap) has exactly
# these sums over every backtrace through function NAME
site()
{
	local json=$5.json r=0 got want="calls=$2 bytes=$3 leaked=$4"
	"$HEAPTAP" report --format json -n 1000000 -b 0 "$5" >"$json" 2>"$json.err" || r=$?
	[ "$r" -eq 0 ] || { show "report stderr" "$json.err"; fail "heaptap report $5 exited $r"; }
	got=$(python3 "$TESTS_LIB/htreport.py" through "$json" "$1") || fail "report of $5: $json unreadable"
	echo "report: $1 $got (want $want)" >&2
	[ "$got" = "$want" ] || fail "report of $5: $1 differs"
}

# wait_patched NAME: poll (60 s at most) until heaptap's hook is in the
# service's two watched malloc slots (its own and libsvc_relro.so's); fails
# at once if the background heaptap ended.
wait_patched()
{
	local i
	for ((i = 0; i < 60; i++)); do
		svc "waitpatched 1000"
		[ "${ans%% *}" = patched ] && return 0
		kill -0 "$HT_PID" 2>/dev/null || break
	done
	show "heaptap stderr" "$tmp/$1.err"
	kill -0 "$HT_PID" 2>/dev/null || fail "$1: heaptap ended before its hook was in the service's malloc slots ($ans)"
	fail "$1: no hook in the service's malloc slots within 60 s ($ans)"
}

# lib_threads PID: number of threads of PID named heaptap-inject (the
# library's thread and track's timer thread: a session is alive)
lib_threads()
{
	local n=0 f c
	for f in /proc/"$1"/task/*/comm; do
		c=$(cat "$f" 2>/dev/null) || continue
		[ "$c" = heaptap-inject ] && n=$((n + 1))
	done
	echo "$n"
}

# wait_no_lib_threads PID MS: wait until PID has no heaptap-inject thread
wait_no_lib_threads()
{
	local i
	for ((i = 0; i <= $2; i += 10)); do
		[ "$(lib_threads "$1")" = 0 ] && return 0
		sleep 0.01
	done
	return 1
}

# maps_modules PID: the /proc/PID/maps lines of file-backed mappings
maps_modules()
{
	grep ' /' /proc/"$1"/maps
}

# same_maps BEFORE AFTER: the lines of AFTER (maps_modules output) for the
# files BEFORE had are byte-identical to BEFORE's (heaptap's library and
# what it brought in stay loaded: their lines are not compared)
same_maps()
{
	awk 'NR == FNR { seen[$NF] = 1; next } ($NF in seen)' "$1" "$2" >"$2.cmp"
	diff "$1" "$2.cmp" >&2
}

# svc_start_private_tmp: svc_start under unshare -m with a tmpfs over /tmp
# (the service's own /tmp: its "tmp" command then counts only the session
# directories heaptap made for it, not those of tests running beside it).
# Returns 1 (nothing started) when unshare -m is not available or not
# permitted. The build tree may itself live under /tmp: then that one
# directory is bound back in.
svc_start_private_tmp()
{
	local bdir keep=
	command -v unshare >/dev/null || return 1
	unshare -m --propagation private true 2>/dev/null || return 1
	bdir=$(readlink -f "$(dirname "$(readlink -f "$HEAPTAP")")/..")
	case $bdir in /tmp/*) keep=$(mktemp -d /dev/shm/htkeep.XXXXXX) ;; esac
	PRIVATE_KEEP=$keep
	svc_start env KEEP="$keep" BDIR="$bdir" unshare -m --propagation private /bin/sh -c '
		if [ -n "$KEEP" ]; then mount --bind /tmp "$KEEP" || exit 97; fi
		mount -t tmpfs heaptap-tmp /tmp || exit 97
		if [ -n "$KEEP" ]; then
			mkdir -p "$BDIR" && mount --bind "$KEEP${BDIR#/tmp}" "$BDIR" && umount "$KEEP" || exit 97
		fi
		exec "$0"'
	[ -z "$keep" ] || rmdir "$keep" 2>/dev/null
}

# as_nobody CMD...: CMD as uid/gid 65534 (the target's or an attacker's user)
as_nobody()
{
	setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

# need_nobody: skip unless we are root and can run the service as uid 65534
need_nobody()
{
	[ "$(id -u)" -eq 0 ] || skip "needs root (the target or attacker runs as another user)"
	command -v setpriv >/dev/null || skip "no setpriv"
	as_nobody test -x "$SESSION_SERVICE" 2>/dev/null || skip "uid 65534 cannot run $SESSION_SERVICE"
}

# ht_stopped NAME SECS: wait until the background heaptap stopped itself
# (HEAPTAP_HANG); fails when it ended or did not stop in time
ht_stopped()
{
	local i
	for ((i = 0; i < $2 * 20; i++)); do
		[ "$(awk '{print $3}' /proc/"$HT_PID"/stat 2>/dev/null)" = T ] && return 0
		kill -0 "$HT_PID" 2>/dev/null || { show "heaptap stderr" "$tmp/$1.err"; fail "$1: heaptap ended instead of stopping at HEAPTAP_HANG"; }
		sleep 0.05
	done
	show "heaptap stderr" "$tmp/$1.err"
	fail "$1: heaptap did not stop at HEAPTAP_HANG within $2 s"
}

# ht_session_dir: the heaptap-XXXXXX directory the background heaptap has open
ht_session_dir()
{
	local f l
	for f in /proc/"$HT_PID"/fd/*; do
		l=$(readlink "$f" 2>/dev/null) || continue
		[[ $l =~ /heaptap-[A-Za-z0-9]{6}$ ]] && { echo "$l"; return 0; }
	done
	return 1
}

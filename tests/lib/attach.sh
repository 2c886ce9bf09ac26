# tests/lib/attach.sh - shared part of the heaptap attach end-to-end cases (sourced, bash)
# SPDX-License-Identifier: MIT
#
# Sourced by tests/session/lib.sh and tests/jvm/lib.sh, which set before it:
#   LIB_TAG         a word for the temporary directory's name (heaptap-TAG.XXXXXX)
#   LIB_KEEP        if not empty, keep the temporary directory
# and define after it:
#   suite_cleanup   (optional) called at exit, before the target is stopped
#   target_stop     called at exit when TPID is set: end the target
# What this file gives: fail/skip/show (case.sh), the checks every case
# needs (heaptap, python3, ptrace permitted), $tmp and its cleanup, the
# target's "ready pid=N" line, one-line commands to a coprocess (co_ask), and
# heaptap attach in the background (attach_bg, attach_wait, attach_ok,
# held_tid).
# A case exits 0 (pass), 1 (fail) or 77 (skip). Every wait is bounded.

set -u

TESTS_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) # this directory (htreport.py)
. "$TESTS_LIB/case.sh"
TPID=
HT_PID=
ATTACH_FLAGS=() # extra options of every attach_bg (the JVM cases add -v)

[ -x "${HEAPTAP:-}" ] || fail "HEAPTAP is not an executable: ${HEAPTAP:-unset}"
command -v python3 >/dev/null || fail "python3 is needed to read JSON reports"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/heaptap-${LIB_TAG:-test}.XXXXXX") || fail "mktemp"
cleanup()
{
	# Only the test's own shell. A background job that a signal kills before
	# it has exec'd may run this trap too (bash), and must not end the
	# target. attach_bg forks with no EXIT trap; this test is the second
	# guard, written as an if and not as an early "return": a trap that bash
	# runs from its signal handler resets its function context, and one CI
	# run (session.signal-early, SIGINT at 0 s) saw the service killed.
	if [ "$BASHPID" = "$$" ]; then
		[ -n "$HT_PID" ] && kill -KILL "$HT_PID" 2>/dev/null
		declare -F suite_cleanup >/dev/null && suite_cleanup
		if [ -n "$TPID" ]; then
			target_stop
			wait 2>/dev/null
		fi
		if [ -n "${LIB_KEEP:-}" ]; then
			echo "keeping $tmp" >&2
		else
			rm -rf "$tmp"
		fi
	fi
}
trap cleanup EXIT
ulimit -c 0

# ptrace must be allowed: Yama scope 3 forbids it, and a scope >= 1 needs root
# or CAP_SYS_PTRACE here (the target is not our child).
scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
if [ "$scope" -ge 3 ] || { [ "$scope" -ge 1 ] && [ "$(id -u)" -ne 0 ]; }; then
	skip "ptrace not permitted (kernel.yama.ptrace_scope=$scope)"
fi

# ready_pid COPROC SECS WHAT ERRFILE: read the coprocess's first line, which
# must be "ready pid=N ...": TPID=N. Fails, showing ERRFILE, otherwise.
ready_pid()
{
	local -n co=$1
	local line
	if ! read -r -t "$2" line <&"${co[0]}"; then
		show "$3 stderr" "$4"
		fail "$3 did not start"
	fi
	case $line in
	"ready pid="*) TPID=${line#ready pid=}; TPID=${TPID%% *} ;;
	*) show "$3 stderr" "$4"; fail "$3 said '$line', not ready" ;;
	esac
}

# co_ask COPROC SECS CMD: send CMD to the coprocess, read its one-line answer
# into $ans. Returns 1 when it cannot be written to (gone), 2 when no answer
# came within SECS.
co_ask()
{
	local -n co=$1
	ans=
	# bash unsets the array once it has reaped the coprocess
	[ -n "${co[1]:-}" ] || return 1
	{ echo "$3" >&"${co[1]}"; } 2>/dev/null || return 1
	read -r -t "$2" ans <&"${co[0]}" || return 2
}

# val KEY: the value of KEY=... in $ans
val()
{
	local w
	for w in $ans; do
		case $w in "$1="*) echo "${w#*=}"; return ;; esac
	done
	fail "no $1= in '$ans'"
}

# attach_bg NAME ARGS...: heaptap attach "${ATTACH_FLAGS[@]}" -o
# $tmp/NAME.htap ARGS... in the background: HT_PID; stderr in $tmp/NAME.err
attach_bg()
{
	local name=$1 exit_trap
	shift
	# the child must not inherit the EXIT trap (cleanup, or a case's own): a
	# signal the test sends it before it has exec'd heaptap would run it
	# there (see cleanup). The trap is put back as it was.
	exit_trap=$(trap -p EXIT)
	trap - EXIT
	"$HEAPTAP" attach "${ATTACH_FLAGS[@]}" -o "$tmp/$name.htap" "$@" 2>"$tmp/$name.err" </dev/null &
	HT_PID=$!
	eval "${exit_trap:-trap - EXIT}"
}

# attach_wait NAME: wait (ATTACH_WAIT_TENTHS tenths of a second, 120 s unless
# set) for the background heaptap: $rc. A heaptap that does not end is
# described (its stderr, where it waits, a backtrace when gdb is there).
attach_wait()
{
	local i
	for ((i = 0; i < ${ATTACH_WAIT_TENTHS:-1200}; i++)); do
		kill -0 "$HT_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$HT_PID" 2>/dev/null; then
		show "heaptap stderr" "$tmp/$1.err"
		echo "--- heaptap $HT_PID: wchan $(cat /proc/"$HT_PID"/wchan), syscall $(cat /proc/"$HT_PID"/syscall)" >&2
		grep -E '^(State|SigBlk|SigPnd|ShdPnd)' /proc/"$HT_PID"/status >&2
		command -v gdb >/dev/null && timeout 30 gdb -q -n --batch -p "$HT_PID" -ex bt 2>&1 | grep '^#' >&2
		fail "heaptap attach did not end within $((${ATTACH_WAIT_TENTHS:-1200} / 10)) s"
	fi
	rc=0
	wait "$HT_PID" || rc=$?
	HT_PID=
}

# attach_ok NAME: heaptap (its stderr in $tmp/NAME.err, its exit code in $rc)
# ended well: exit 0, and the library answered the stop request, i.e. its
# end record came and it says it put every slot back in $TPID. A library
# that did not answer is told apart from a missing line: heaptap then waited
# out its stop timeout (5 s), and the slots came back only when the
# connection closed.
attach_ok()
{
	[ "$rc" -eq 0 ] || { show "heaptap stderr" "$tmp/$1.err"; fail "$1: heaptap attach exited $rc"; }
	if grep -q -e 'without its end record' -e 'did not confirm that it restored' "$tmp/$1.err"; then
		show "heaptap stderr" "$tmp/$1.err"
		fail "$1: the library in $TPID did not answer heaptap's stop request: no end record came within heaptap's stop timeout, and its slots came back only when the connection closed (a fault of the library or heaptap, not of the test's timing)"
	fi
	grep -q '^heaptap: restored [1-9][0-9]* GOT slots in '"$TPID"'$' "$tmp/$1.err" ||
		{ show "heaptap stderr" "$tmp/$1.err"; fail "$1: no 'restored N GOT slots' line (or slots were left)"; }
}

# held_tid NAME: the thread heaptap held (its -v line)
held_tid()
{
	sed -n 's/^heaptap: attach [0-9]*: thread \([0-9]*\) .* stopped .*/\1/p' "$tmp/$1.err" | head -1
}

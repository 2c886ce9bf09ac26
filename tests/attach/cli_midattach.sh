#!/bin/bash
# tests/attach/cli_midattach.sh - the heaptap command itself killed mid-attach, and a target that dies mid-attach
# SPDX-License-Identifier: MIT
#
# Usage: cli_midattach.sh HEAPTAP VICTIM
#
# killed: `heaptap attach` (the real command, with HEAPTAP_HANG, see
#   attach/hang.c) is SIGKILLed at instants inside the remote calls, or
#   kills itself while the victim's thread runs one; the victim
#   (tests/attach/victim.c) must run on: not traced, no EINTR or other failed
#   blocking call, every RT signal once and in order, registers and signal
#   masks unchanged.
# exited: the victim is SIGKILLed while heaptap is stopped inside the attach;
#   heaptap then says in one line that the process exited, and exits
#   non-zero (35, ATT_E_EXITED's code).
# Exit 0 pass, 1 fail, 77 skip.
set -u
HEAPTAP=$1
VICTIM=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/heaptap-midattach.XXXXXX") || exit 1
VPID=
cleanup()
{
	[ "$BASHPID" = "$$" ] || return 0 # not in a job killed before its exec
	[ -n "$VPID" ] && kill -KILL "$VPID" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail()
{
	echo "FAIL: $*"
	exit 1
}
scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
if [ "$scope" -ge 3 ] || { [ "$scope" -ge 1 ] && [ "$(id -u)" -ne 0 ]; }; then
	echo "skip: ptrace not permitted (kernel.yama.ptrace_scope=$scope)"
	exit 77
fi

start_victim()
{
	local line
	coproc VIC { "$VICTIM"; }
	read -r -t 20 line <&"${VIC[0]}" || fail "victim did not start"
	VPID=${line#ready pid=}
	VPID=${VPID%% *}
}

# kv KEY: value of KEY= in $ans
kv()
{
	local w
	for w in $ans; do
		case $w in "$1="*) echo "${w#*=}"; return ;; esac
	done
	echo missing
}

check_victim()
{
	local i f traced
	for ((i = 0; i < 200; i++)); do
		traced=0
		for f in /proc/"$VPID"/task/*/status; do
			grep -q '^TracerPid:[[:space:]]*0$' "$f" 2>/dev/null || { [ -e "$f" ] && traced=1; }
		done
		[ "$traced" = 0 ] && break
		sleep 0.01
	done
	[ "$traced" = 0 ] || fail "$1: victim still traced"
	echo ping >&"${VIC[1]}" || fail "$1: victim gone"
	read -r -t 20 ans <&"${VIC[0]}" || fail "$1: victim does not answer"
	echo "  $1: $ans" | cut -c1-160
	for k in eintr epoll_eintr seqerr infobad regbad maskbad syserr othersig errnobad; do
		[ "$(kv $k)" = 0 ] || fail "$1: $k=$(kv $k)"
	done
	[ "$(kv sent)" = "$(kv recv)" ] || fail "$1: signals sent $(kv sent), received $(kv recv)"
	# every looping thread still turns (none left stuck): up to 10 s on a loaded machine
	local first=$ans role moved
	for ((i = 0; i < 100; i++)); do
		sleep 0.1
		echo ping >&"${VIC[1]}" || fail "$1: victim gone"
		read -r -t 20 ans <&"${VIC[0]}" || fail "$1: victim does not answer"
		moved=1
		for role in reader sleeper ticker condwait epoll busy; do
			[ "$(kv laps_$role)" -gt "$(ans=$first kv laps_$role)" ] || moved=0
		done
		[ "$moved" = 1 ] && return
	done
	fail "$1: a thread stopped turning: $first / $ans"
}

# wait_stopped PID: until heaptap stopped itself (T) or ended; echo its state
wait_stopped()
{
	local i st
	for ((i = 0; i < 3000; i++)); do
		st=$(awk '{print $3}' /proc/"$1"/stat 2>/dev/null)
		case $st in T | Z | "") break ;; esac
		sleep 0.01
	done
	echo "${st:-gone}"
}

echo "killed: heaptap SIGKILLed mid-attach"
start_victim
n=0
# the command's calls (attach/loader.c): 1 mmap at a fixed address (sent: its end
# signal is queued; end@1: the stop between the chained frames' two rt_sigreturns),
# 2 the stub: errno, mprotect, pthread_create in the target (from callregs@2 on a
# loader thread loads the library on its own)
for step in stopped masked sent resumed@1:kill end@1 callregs@2 resumed@2:kill end@2 \
	restore-fp restored random random random random random; do
	hang=$step
	[ "$step" = random ] && hang=stopped
	HEAPTAP_HANG=$hang "$HEAPTAP" attach -o "$tmp/k$n.htap" "$VPID" 2>"$tmp/k$n.err" </dev/null &
	ht=$!
	st=$(wait_stopped $ht)
	if [ "$step" = random ]; then
		kill -CONT $ht
		sleep "0.00$((RANDOM % 5))"
	elif [ "$st" != T ] && [ "${step%:kill}" = "$step" ]; then
		fail "$step: heaptap did not stop there (state $st): $(cat "$tmp/k$n.err")"
	fi
	kill -KILL $ht 2>/dev/null
	wait $ht 2>/dev/null
	check_victim "$step"
	n=$((n + 1))
done
echo quit >&"${VIC[1]}"
exec {VIC[1]}>&-
wait "$VPID" 2>/dev/null
VPID=

echo "exited: the process SIGKILLed while heaptap is inside the attach"
for step in stopped saved sent end@1 end@2 restore-fp; do
	start_victim
	HEAPTAP_HANG=$step "$HEAPTAP" attach -o "$tmp/e.htap" "$VPID" 2>"$tmp/e.err" </dev/null &
	ht=$!
	st=$(wait_stopped $ht)
	[ "$st" = T ] || fail "$step: heaptap did not stop there (state $st)"
	kill -KILL "$VPID"
	wait "$VPID" 2>/dev/null
	VPID=
	sleep 0.05
	kill -CONT $ht
	rc=0
	wait $ht || rc=$?
	echo "  $step: exit $rc: $(cat "$tmp/e.err")"
	[ "$rc" -ne 0 ] || fail "$step: heaptap exited 0"
	[ "$(wc -l <"$tmp/e.err")" -eq 1 ] || fail "$step: more than one line"
	grep -q '^heaptap: attach [0-9]*: the process exited during the attach' "$tmp/e.err" ||
		fail "$step: the line does not say the process exited"
done
echo "PASS"

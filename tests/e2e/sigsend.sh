# tests/e2e/sigsend.sh - helpers for signal*.test: a signal to heaptap record (sourced)
# SPDX-License-Identifier: MIT

# gone PID SECONDS: wait until PID has exited, at most SECONDS
gone()
{
	local i
	for i in $(seq 1 $(($2 * 20))); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
	return 1
}

# sigsend NAME SIG SIGNUM DELAY: start heaptap record -- sigwait, wait for its
# "ready", sleep DELAY seconds, send SIG to heaptap alone; heaptap must
# exit 0, the program must have got SIGNUM, and the recording must hold
# every allocation.
sigsend()
{
	local name=$1 sig=$2 num=$3 delay=$4 pid prog r
	# job control: a background job of a non-interactive shell would start
	# with SIGINT ignored, and heaptap (like a shell) keeps it ignored
	set -m
	"$HEAPTAP" record -o "$tmp/$name.htap" -- "$E2E_BIN/sigwait" \
		>"$tmp/$name.out" 2>"$tmp/$name.err" </dev/null &
	pid=$!
	set +m
	for _ in $(seq 1 200); do
		grep -q '^ready' "$tmp/$name.out" 2>/dev/null && break
		sleep 0.05
	done
	prog=$(sed -n 's/^ready pid //p' "$tmp/$name.out")
	[ -n "$prog" ] || { kill -KILL "$pid"; fail "$name: the program did not start"; }
	sleep "$delay"
	kill -"$sig" "$pid"
	if ! gone "$pid" 20; then
		kill -KILL "$pid" "$prog" 2>/dev/null
		show "heaptap stderr" "$tmp/$name.err"
		show "target output" "$tmp/$name.out"
		fail "$name: SIG$sig sent to heaptap ${delay}s after the program started: heaptap did not end within 20 s"
	fi
	r=0
	wait "$pid" || r=$?
	kill -KILL "$prog" 2>/dev/null && fail "$name: the program was still running after heaptap ended"
	[ "$r" -eq 0 ] || { show "heaptap stderr" "$tmp/$name.err"; fail "$name: heaptap record exited $r, expected 0"; }
	grep -qx "signal $num" "$tmp/$name.out" || { show "target output" "$tmp/$name.out"; fail "$name: the program did not get SIG$sig"; }
	report_json "$name"
	check "$name"
}

# tests/session/top.sh - heaptap top in a real terminal: tmux (sourced after lib.sh, bash)
# SPDX-License-Identifier: MIT
#
# Each case gets its own tmux server (a socket in $tmp), so cases and other
# users of tmux never meet. heaptap top runs in a window of 80x24 with a
# UTF-8 locale; its stderr goes to $tmp/NAME.err and its exit code to
# $tmp/NAME.rc once it ends. Every wait is bounded.

command -v tmux >/dev/null || skip "tmux is not installed (scripts/setup installs it)"
TOP_SCREEN_PY="$SESSION_SRC/top_screen.py"
TMUX_SOCK=$tmp/tmux.sock

tm()
{
	tmux -S "$TMUX_SOCK" "$@"
}

suite_cleanup()
{
	[ -n "${TMUX_WATCH:-}" ] && kill "$TMUX_WATCH" 2>/dev/null
	tm kill-server 2>/dev/null
}

# The tmux server is a daemon: a test shell killed without its cleanup
# (SIGKILL at ctest's timeout) would leave it, heaptap top in it (whose
# screen waits for q even after its session ended) and the pane's sleep.
# A watcher started with the server ends the server once this shell is
# gone (heaptap top gets SIGHUP there, a stop signal: it detaches and
# exits); suite_cleanup ends the watcher.
TMUX_WATCH=
TMUX_WATCHED=
tmux_watch()
{
	[ -n "$TMUX_WATCH" ] && [ "$TMUX_WATCHED" = "$TMUX_SOCK" ] && return
	TMUX_WATCHED=$TMUX_SOCK
	(
		trap - EXIT
		while kill -0 $$ 2>/dev/null; do sleep 1; done
		tmux -S "$TMUX_SOCK" kill-server 2>/dev/null
	) </dev/null >/dev/null 2>&1 &
	TMUX_WATCH=$!
	# not a job of this shell: the cleanup's "wait" for the target must not
	# wait for the watcher, which waits for this shell
	disown "$TMUX_WATCH"
}

# top_start NAME ARGS...: heaptap top ARGS in the window "top"
top_start()
{
	local name=$1 q a
	shift
	q=
	for a in "$@"; do q+=" $(printf '%q' "$a")"; done
	rm -f "$tmp/$name.rc"
	tm -f /dev/null new-session -d -s top -x 80 -y 24 \
		"LANG=C.UTF-8 TERM=screen $(printf '%q' "$HEAPTAP") top$q 2>$(printf '%q' "$tmp/$name.err"); echo \$? >$(printf '%q' "$tmp/$name.rc"); sleep 600" ||
		fail "tmux did not start"
	tmux_watch
	TOP_NAME=$name
}

# screen FILE: the window as text into FILE
screen()
{
	tm capture-pane -p -t top >"$1" 2>/dev/null || : >"$1"
}

# wait_screen SECS REGEX: poll the window until a line matches (grep -E);
# the last capture stays in $tmp/screen. Returns 1 on timeout.
wait_screen()
{
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		screen "$tmp/screen"
		grep -qE -- "$2" "$tmp/screen" && return 0
		[ -e "$tmp/$TOP_NAME.rc" ] && break
		sleep 0.1
	done
	return 1
}

# first_row: the function of the table's first row in $tmp/screen
first_row()
{
	python3 "$TOP_SCREEN_PY" "$tmp/screen" first
}

# keys K...: send keys to the window
keys()
{
	tm send-keys -t top "$@"
}

# top_end SECS: wait for heaptap top to end: $rc (fails on timeout)
top_end()
{
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		[ -s "$tmp/$TOP_NAME.rc" ] && break
		sleep 0.1
	done
	[ -s "$tmp/$TOP_NAME.rc" ] || { screen "$tmp/screen"; show "screen" "$tmp/screen"; show "heaptap stderr" "$tmp/$TOP_NAME.err"; fail "heaptap top did not end within $1 s"; }
	rc=$(cat "$tmp/$TOP_NAME.rc")
}

# deadline SECS: SECS, or 4 times that on a machine whose load is over 4 per CPU
# (the screen refreshes every second of heaptap's time, which a starved
# machine stretches)
deadline()
{
	local load cpus
	read -r load _ </proc/loadavg
	cpus=$(nproc)
	if awk -v l="$load" -v c="$cpus" 'BEGIN { exit !(l > 4 * c) }'; then
		echo "note: load $load on $cpus CPUs: waiting $(($1 * 4)) s instead of $1 s" >&2
		echo $(($1 * 4))
	else
		echo "$1"
	fi
}

# tests/jvm/lib.sh - common part of the heaptap-attach-to-a-JVM cases (sourced, bash)
# SPDX-License-Identifier: MIT
#
# Environment (ctest sets it, see CMakeLists.txt):
#   HEAPTAP      the heaptap program
#   JVM_JAVA     the JDK's java ("" when no JDK was found at configure time)
#   JVM_LIB      the JNI library (jvmtest.c), JVM_CLASSES the compiled JvmLeak
#   JVM_SRC      this directory
#   JVM_CYCLES   attach/detach cycles of cycles.test (else JVM_CYCLES_DEFAULT, from
#                cmake -DHEAPTAP_JVM_CYCLES=N, else 20)
#   CHOOSE_TARGET  choose_target.c (choose.test; sets JVM_NEED_JDK=0)
#   JVM_KEEP     if set, keep the temporary directory
# A case exits 0 (pass), 1 (fail) or 77 (skip: no JDK, or ptrace not
# permitted). Every wait is bounded. What every attach case needs (fail,
# $tmp, attach_bg, attach_wait, attach_ok, held_tid, ...) is in
# tests/lib/attach.sh; this file adds the JVM.

LIB_TAG=jvm
LIB_KEEP=${JVM_KEEP:-}
JVM_SRC=${JVM_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
. "$(dirname "${BASH_SOURCE[0]}")/../lib/attach.sh"
HW_PID=
ATTACH_FLAGS=(-v) # held_tid reads the held thread from -v

if [ "${JVM_NEED_JDK:-1}" = 1 ]; then
	[ -n "${JVM_JAVA:-}" ] || skip "no JDK was found when configuring (javac with include/jni.h; scripts/setup installs openjdk-17-jdk-headless)"
	[ -x "$JVM_JAVA" ] || fail "JVM_JAVA is not an executable: $JVM_JAVA"
	[ -f "${JVM_LIB:-}" ] || fail "the JNI library is missing: ${JVM_LIB:-unset}"
	[ -f "${JVM_CLASSES:-}/JvmLeak.class" ] || fail "JvmLeak.class is missing in ${JVM_CLASSES:-unset}"
	JCMD=$(dirname "$JVM_JAVA")/jcmd
fi

suite_cleanup()
{
	[ -n "$HW_PID" ] && kill -KILL "$HW_PID" 2>/dev/null
}

# at exit (cleanup): ask the Java program to quit, then kill it
target_stop()
{
	[ -n "${JVM[1]:-}" ] && { echo quit >&"${JVM[1]}"; } 2>/dev/null
	sleep 0.2
	kill -KILL "$TPID" 2>/dev/null
}

# jvm_start [JAVA OPTIONS...]: start JvmLeak as a coprocess in $tmp (where a
# crashing JVM would write hs_err_pid*.log), safepoint log in $tmp/sp.log
# (timenanos = System.nanoTime = CLOCK_MONOTONIC), error file pinned to
# $tmp too; wait for "ready pid=N": TPID.
jvm_start()
{
	rm -f "$tmp/jvm.status"
	coproc JVM { cd "$tmp" && "$JVM_JAVA" -Xlog:safepoint:file="$tmp/sp.log":timenanos \
		-XX:ErrorFile="$tmp/hs_err_pid%p.log" "$@" -cp "$JVM_CLASSES" JvmLeak "$JVM_LIB" 4 \
		2>"$tmp/jvm.err"; echo $? >"$tmp/jvm.status"; }
	ready_pid JVM 60 "the JVM" "$tmp/jvm.err"
}

# jvm CMD: send CMD to the Java program and read its one-line answer: $ans
jvm()
{
	local r=0
	co_ask JVM 120 "$1" || r=$?
	[ "$r" != 1 ] || fail "the JVM is gone (command '$1')"
	[ "$r" = 0 ] || { show "java stderr" "$tmp/jvm.err"; fail "the JVM did not answer '$1'"; }
}

jvm_alive()
{
	jvm ping
	[ "$ans" = pong ] || fail "the JVM answered '$ans' to ping ($1)"
}

# jvm_checks WHEN: its own checksum is right and it is working
jvm_checks()
{
	jvm stats
	echo "jvm: $ans ($1)" >&2
	[ "$(val bad)" = 0 ] || fail "the Java program's checksum went wrong ($1): $ans"
	[ "$(val iters)" -gt 0 ] || fail "no worker iteration ($1): $ans"
}

# no_hs_err: no JVM crash file anywhere it could have been written
no_hs_err()
{
	local f
	for f in "$tmp"/hs_err_pid*.log "$tmp"/replay_pid*.log; do
		[ -e "$f" ] && { show "crash file" "$f"; fail "the JVM wrote $f"; }
	done
	if grep -q -E 'A fatal error has been detected|SIGSEGV|SIGBUS' "$tmp/jvm.err" 2>/dev/null; then
		show "java stderr" "$tmp/jvm.err"
		fail "the JVM reported a fatal error"
	fi
}

# java_tids FILE: tids of the JVM's Java threads (jcmd Thread.print nids, and
# our own short-lived threads by name), one a line, appended to FILE
java_tids()
{
	local f
	[ -x "$JCMD" ] || fail "jcmd is missing next to $JVM_JAVA"
	timeout 60 "$JCMD" "$TPID" Thread.print >"$tmp/threads.txt" 2>&1 ||
		{ show "jcmd" "$tmp/threads.txt"; fail "jcmd $TPID Thread.print failed"; }
	grep -o 'nid=0x[0-9a-f]*' "$tmp/threads.txt" | while read -r n; do
		echo $((${n#nid=}))
	done >>"$1"
	for f in /proc/"$TPID"/task/*/comm; do
		case $(cat "$f" 2>/dev/null) in
		jvmleak-*) f=${f%/comm}; echo "${f##*/}" >>"$1" ;;
		esac
	done
	[ -s "$1" ] || fail "no Java thread found by jcmd"
}

# holdwatch_start: poll which threads of the JVM have a tracer (heaptap holds
# them), until holdwatch_stop; intervals in $tmp/holds.json
holdwatch_start()
{
	local i
	rm -f "$tmp/holds.stop" "$tmp/holds.json" "$tmp/holds.json.ready"
	python3 "$JVM_SRC/holdwatch.py" "$TPID" "$tmp/holds.json" "$tmp/holds.stop" &
	HW_PID=$!
	for ((i = 0; i < 600; i++)); do
		[ -e "$tmp/holds.json.ready" ] && return
		sleep 0.05
	done
	fail "holdwatch.py did not start"
}

holdwatch_stop()
{
	local i
	touch "$tmp/holds.stop"
	for ((i = 0; i < 300; i++)); do
		[ -s "$tmp/holds.json" ] && break
		sleep 0.1
	done
	wait "$HW_PID" 2>/dev/null
	HW_PID=
	[ -s "$tmp/holds.json" ] || fail "holdwatch.py wrote nothing"
}

# jvm_quit: stop the Java program; it exits 0 only if its checksum held
jvm_quit()
{
	local st i
	echo quit >&"${JVM[1]}" || fail "the JVM is gone before quit"
	for ((i = 0; i < 1200; i++)); do
		[ -s "$tmp/jvm.status" ] && break
		sleep 0.1
	done
	[ -s "$tmp/jvm.status" ] || fail "the JVM did not exit after quit"
	st=$(cat "$tmp/jvm.status")
	TPID=
	[ "$st" = 0 ] || { show "java stderr" "$tmp/jvm.err"; fail "the Java program exited $st"; }
	no_hs_err
}

# held_ok NAME: heaptap held one thread, stopped no other first (0
# rejected), and that thread is none of the Java threads listed in
# $tmp/java_*.txt (java_tids)
held_ok()
{
	local held
	held=$(held_tid "$1")
	[ -n "$held" ] || { show "heaptap stderr" "$tmp/$1.err"; fail "$1: no 'thread N ... stopped' line"; }
	grep -q ' 0 rejected$' "$tmp/$1.err" ||
		{ show "heaptap stderr" "$tmp/$1.err"; fail "$1: heaptap stopped and let go other threads first"; }
	if cat "$tmp"/java_*.txt 2>/dev/null | grep -qx "$held"; then
		fail "$1: heaptap held thread $held, a Java thread"
	fi
}

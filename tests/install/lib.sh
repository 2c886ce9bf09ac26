# tests/install/lib.sh - an installed heaptap against the demo service (sourced, bash)
# SPDX-License-Identifier: MIT
#
# Environment (tests/install/CMakeLists.txt): HEAPTAP_SRC, HEAPTAP_BUILD,
# HEAPTAP_VERSION, DEMO_SERVICE (demo/sample_service.c: serves requests for
# N seconds, prints "sample-service: served N requests"; remember_request()
# leaks 256 bytes on every tenth request, the first included), and the
# install layout: INSTALL_PREFIX, INSTALL_PKGLIBDIR, INSTALL_MANDIR,
# INSTALL_DATADIR (relative to the prefix), HEAPTAP (the installed one).
# Gives fail/skip/show, $tmp (removed at exit with the processes started
# here), version_ok, demo_record, demo_attach. No HEAPTAP_LIBDIR: heaptap
# must find its libraries by itself.
set -u
unset HEAPTAP_LIBDIR
TESTS_LIB=$HEAPTAP_SRC/tests/lib
. "$TESTS_LIB/case.sh"
command -v python3 >/dev/null || fail "python3 is needed to read JSON reports"
[ -x "${DEMO_SERVICE:-}" ] || fail "DEMO_SERVICE is not an executable: ${DEMO_SERVICE:-unset}"
SVC_PID=
HT_PID=
EXTRA_PIDS=()
tmp=$(mktemp -d "${TMPDIR:-/tmp}/heaptap-install.XXXXXX") || fail "mktemp"
cleanup()
{
	[ "$BASHPID" = "$$" ] || return 0
	[ -n "$HT_PID" ] && kill -KILL "$HT_PID" 2>/dev/null
	[ -n "$SVC_PID" ] && kill -KILL "$SVC_PID" 2>/dev/null
	for p in "${EXTRA_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
ulimit -c 0

ptrace_ok()
{
	local scope
	scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
	if [ "$scope" -ge 3 ] || { [ "$scope" -ge 1 ] && [ "$(id -u)" -ne 0 ]; }; then
		skip "ptrace not permitted (kernel.yama.ptrace_scope=$scope)"
	fi
}

# version_ok HEAPTAP: "heaptap VERSION (git REV)", REV this source tree's
# commit (as revision.cmake reads it), or the fallback outside git
version_ok()
{
	local got rev top
	got=$("$1" --version) || fail "$1 --version failed"
	echo "version: $got" >&2
	top=$(git -C "$HEAPTAP_SRC" rev-parse --show-toplevel 2>/dev/null) || top=
	if [ -n "$top" ] && [ "$(readlink -f "$top")" = "$(readlink -f "$HEAPTAP_SRC")" ]; then
		rev=$(git -C "$HEAPTAP_SRC" rev-parse --short=12 HEAD)
		case $got in
		"heaptap $HEAPTAP_VERSION (git $rev)" | "heaptap $HEAPTAP_VERSION (git $rev-dirty)") ;;
		*) fail "--version said '$got', want 'heaptap $HEAPTAP_VERSION (git $rev[-dirty])' (HEAD; a build older than HEAD says so too: rebuild)" ;;
		esac
	else
		[ "$got" = "heaptap $HEAPTAP_VERSION (git revision unknown: not built from a git work tree)" ] ||
			fail "--version said '$got' (source outside git)"
	fi
}

# report_site HEAPTAP FILE FUNCTION: $got = "calls=N bytes=N leaked=N" through FUNCTION
report_site()
{
	local r=0
	"$1" report --format json -n 1000000 -b 0 "$2" >"$2.json" 2>"$2.rerr" || r=$?
	[ "$r" = 0 ] || { show "report stderr" "$2.rerr"; fail "$1 report $2 exited $r"; }
	got=$(python3 "$TESTS_LIB/htreport.py" through "$2.json" "$3") || fail "report of $2 unreadable"
	echo "report $2: $3 $got" >&2
}

# preloaded_from HEAPTAP: $got = the path of the library heaptap record preloads
preloaded_from()
{
	# sh's child reads sh's maps: the library is in sh, not in grep
	got=$("$1" record -o "$tmp/sh.$RANDOM.htap" -- /bin/sh -c 'grep -o "/.*libheaptap_preload\.so" /proc/$$/maps | sort -u' 2>"$tmp/sh.err") ||
		{ show "heaptap record stderr" "$tmp/sh.err"; fail "$1 record -- /bin/sh failed"; }
}

# demo_record HEAPTAP LIBDIR: record the demo service for 1 s with the
# library from LIBDIR; remember_request's leak is recorded exactly
demo_record()
{
	local served n r=0
	"$1" record -o "$tmp/rec.htap" -- "$DEMO_SERVICE" 1 >"$tmp/rec.out" 2>"$tmp/rec.err" || r=$?
	[ "$r" = 0 ] || { show "heaptap record stderr" "$tmp/rec.err"; fail "$1 record exited $r"; }
	served=$(sed -n 's/^sample-service: served \([0-9]*\) requests$/\1/p' "$tmp/rec.out")
	[ -n "$served" ] || { show "service output" "$tmp/rec.out"; fail "the recorded service did not finish"; }
	n=$(((served + 9) / 10))
	report_site "$1" "$tmp/rec.htap" remember_request
	[ "$got" = "calls=$n bytes=$((n * 256)) leaked=$((n * 256))" ] ||
		fail "record: remember_request $got, want calls=$n bytes=$((n * 256)) leaked=$((n * 256))"
	preloaded_from "$1"
	[ "$got" = "$2/libheaptap_preload.so" ] || fail "record preloaded '$got', not $2/libheaptap_preload.so"
}

# demo_start: the demo service for 120 s in the background: SVC_PID
demo_start()
{
	"$DEMO_SERVICE" 120 >"$tmp/svc.out" 2>&1 &
	SVC_PID=$!
	sleep 0.3 # past the loader, into its loop
}

# attach_start HEAPTAP LIBDIR: heaptap attach to SVC_PID in the background
# (HT_PID); returns once LIBDIR's libheaptap_inject.so is mapped in it
attach_start()
{
	local i
	"$1" attach -o "$tmp/att.htap" "$SVC_PID" 2>"$tmp/att.err" </dev/null &
	HT_PID=$!
	for ((i = 0; i < 600; i++)); do
		grep -qF "$2/libheaptap_inject.so" /proc/"$SVC_PID"/maps 2>/dev/null && return 0
		kill -0 "$HT_PID" 2>/dev/null || break
		sleep 0.1
	done
	show "heaptap attach stderr" "$tmp/att.err"
	fail "$2/libheaptap_inject.so was not loaded into the service"
}

# attach_end HEAPTAP: heaptap detach SVC_PID; the attach ends well, the
# service runs on, remember_request's leaks were recorded
attach_end()
{
	local r=0 i n
	"$1" detach "$SVC_PID" >"$tmp/det.out" 2>"$tmp/det.err" || r=$?
	[ "$r" = 0 ] || { show "heaptap detach stderr" "$tmp/det.err"; fail "$1 detach exited $r"; }
	grep -qF "$tmp/att.htap" "$tmp/det.out" "$tmp/det.err" ||
		{ show "detach output" "$tmp/det.out"; fail "heaptap detach did not name the recording"; }
	for ((i = 0; i < 300; i++)); do
		kill -0 "$HT_PID" 2>/dev/null || break
		sleep 0.1
	done
	r=0
	wait "$HT_PID" || r=$?
	HT_PID=
	[ "$r" = 0 ] || { show "heaptap attach stderr" "$tmp/att.err"; fail "heaptap attach exited $r"; }
	kill -0 "$SVC_PID" 2>/dev/null || fail "the service did not survive the session"
	grep -q '^State:[[:space:]]*[RS]' /proc/"$SVC_PID"/status || fail "the service is not running after detach: $(grep State /proc/"$SVC_PID"/status)"
	report_site "$1" "$tmp/att.htap" remember_request
	n=${got#calls=}
	n=${n%% *}
	[ "$n" -gt 0 ] && [ "$got" = "calls=$n bytes=$((n * 256)) leaked=$((n * 256))" ] ||
		fail "attach: remember_request $got, want calls=N>0 bytes=leaked=256*N"
}

# demo_attach HEAPTAP LIBDIR: attach with LIBDIR's library, record 1 s, detach, report
demo_attach()
{
	demo_start
	attach_start "$@"
	sleep 1
	attach_end "$1"
}

# tests/e2e/init.sh - common set-up for e2e case scripts (sourced, bash)
# SPDX-License-Identifier: MIT
#
# Environment (ctest sets it, see tests/e2e/CMakeLists.txt):
#   HEAPTAP   the heaptap program to test
#   E2E_BIN   directory of the built target programs
#   E2E_SRC   this directory (for check.py)
#   E2E_KEEP  if set, keep the temporary directory and print its name
# A case script calls the helpers below and exits 0 (pass), 1 (fail) or 77
# (skip): fail, skip and show come from tests/lib/case.sh. Every heaptap run
# is bounded by a timeout so a hang is a failure.

set -u

E2E_SRC=${E2E_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
E2E_BIN=${E2E_BIN:-$PWD}
E2E_TIMEOUT=${E2E_TIMEOUT:-120}
# every call site with every backtrace: check.py needs them all for exact sums
REPORT_ARGS=${REPORT_ARGS:--n 1000000 -b 0}
. "$(dirname "${BASH_SOURCE[0]}")/../lib/case.sh"

[ -n "${HEAPTAP:-}" ] || fail "HEAPTAP is not set (path of the heaptap program)"
[ -x "$HEAPTAP" ] || fail "$HEAPTAP is not an executable (build heaptap first)"
command -v python3 >/dev/null || fail "python3 is needed to read JSON reports"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/heaptap-e2e.XXXXXX") || fail "mktemp"
if [ -n "${E2E_KEEP:-}" ]; then
	echo "keeping $tmp" >&2
else
	trap '[ "$BASHPID" != "$$" ] || rm -rf "$tmp"' EXIT
fi
# a crashing target must not leave core files behind, nor take long to dump
ulimit -c 0

# record NAME PROG [ARGS...]: heaptap record -o $tmp/NAME.htap -- PROG ARGS,
# the target's stdout in $tmp/NAME.out, heaptap's stderr in $tmp/NAME.err,
# the exit status in $rc. Never fails by itself.
record()
{
	local name=$1
	shift
	rc=0
	timeout "$E2E_TIMEOUT" "$HEAPTAP" record -o "$tmp/$name.htap" -- "$@" \
		>"$tmp/$name.out" 2>"$tmp/$name.err" </dev/null || rc=$?
	[ "$rc" -ne 124 ] || { show "heaptap stderr" "$tmp/$name.err"; fail "heaptap record $* timed out"; }
}

# record_ok NAME PROG [ARGS...]: record, which must exit 0 and leave a file
record_ok()
{
	local name=$1
	record "$@"
	if [ "$rc" -ne 0 ]; then
		show "heaptap stderr" "$tmp/$name.err"
		fail "heaptap record ${*:2} exited $rc"
	fi
	[ -s "$tmp/$name.htap" ] || fail "heaptap record ${*:2} wrote no $tmp/$name.htap"
}

# report_json NAME: heaptap report --format json of $tmp/NAME.htap into $tmp/NAME.json
report_json()
{
	local name=$1 r=0
	# shellcheck disable=SC2086 # REPORT_ARGS is a list of words
	timeout "$E2E_TIMEOUT" "$HEAPTAP" report --format json $REPORT_ARGS "$tmp/$name.htap" \
		>"$tmp/$name.json" 2>"$tmp/$name.rerr" || r=$?
	if [ "$r" -ne 0 ]; then
		show "heaptap report stderr" "$tmp/$name.rerr"
		fail "heaptap report --format json $tmp/$name.htap exited $r"
	fi
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/$name.json" ||
		{ show "report" "$tmp/$name.json"; fail "the JSON report of $name does not parse"; }
}

# check NAME: compare the target's printed expectations with the JSON report
check()
{
	local name=$1
	if ! python3 "$E2E_SRC/check.py" "$tmp/$name.out" "$tmp/$name.json"; then
		show "target output" "$tmp/$name.out"
		fail "report of $name differs from what the target printed"
	fi
}

# one_line FILE WHAT: FILE (a stderr capture) is exactly one non-empty line starting "heaptap: "
one_line()
{
	local n
	n=$(wc -l <"$1")
	if [ "$n" -ne 1 ] || ! head -n 1 "$1" | grep -q '^heaptap: .'; then
		show "stderr" "$1"
		fail "$2: expected one line \"heaptap: ...\" on stderr, got $n line(s)"
	fi
}

# tests/python/lib.sh - common set-up of the Python frame cases (sourced, bash)
# SPDX-License-Identifier: MIT
#
# The e2e helpers (tests/e2e/init.sh: record, report_json, fail, skip, show)
# with PY=/usr/bin/python3 and WL=workload.py. Skips (77) without
# /usr/bin/python3 or when this heaptap has no layout for it (a build
# without python3.11-dev's headers).
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/init.sh"

# at exit: a workload a case started in the background (TPID) ends with it
# (the loop also ends by itself once its parent is gone)
TPID=
trap '[ "$BASHPID" != "$$" ] || { [ -z "$TPID" ] || kill -KILL "$TPID" 2>/dev/null; rm -rf "$tmp"; }' EXIT

PY=${HEAPTAP_TEST_PYTHON:-/usr/bin/python3}
WL=$E2E_SRC/workload.py
[ -x "$PY" ] || skip "no $PY"

# report_all NAME: the JSON report of $tmp/NAME.htap with every native frame (--native-all)
report_all()
{
	REPORT_ARGS="-n 1000000 -b 0 --native-all" report_json "$1"
}

# check_stacks MODE NAME [ROUNDS]: tests/python/check_stacks.py on $tmp/NAME.json
check_stacks()
{
	python3 "$E2E_SRC/check_stacks.py" "$1" "$tmp/$2.json" "$WL" "${3:-5}" ||
		fail "$2: the Python frames in the report are not right"
}

# no_python_line NAME: heaptap's stderr $tmp/NAME.err says nothing about Python frames
no_python_line()
{
	if grep -q "python frames" "$tmp/$1.err"; then
		show "heaptap stderr" "$tmp/$1.err"
		fail "$1: heaptap said something about Python frames"
	fi
}

# tests/lib/case.sh - what every shell test case says: fail, skip, show (sourced, bash)
# SPDX-License-Identifier: MIT
#
# Sourced by tests/e2e/init.sh and tests/lib/attach.sh. A case exits 0
# (pass), 1 (fail MSG) or 77 (skip REASON); fail and skip print one line,
# "FAIL: CASE: MSG" or "SKIP: CASE: REASON", on stderr, CASE being the
# script's name without .test.

case_name=$(basename "$0" .test)

fail()
{
	echo "FAIL: $case_name: $*" >&2
	exit 1
}

skip()
{
	echo "SKIP: $case_name: $*" >&2
	exit 77
}

# show TITLE FILE: the start of FILE on stderr under a title (for failure output)
show()
{
	echo "--- $1:" >&2
	head -c 6000 "$2" >&2 2>/dev/null
}

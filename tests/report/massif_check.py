#!/usr/bin/env python3
# tests/report/massif_check.py - ms_print's view of a massif export against the JSON report
# SPDX-License-Identifier: MIT
#
# usage: massif_check.py MS_PRINT_OUTPUT REPORT_JSON
# ms_print must name a peak snapshot whose total is the JSON peak, whose tree
# starts with the top peak site of the JSON report (when there is one at 1%
# or more), and the last snapshot's total must be the bytes never freed.
import json
import re
import sys


def main():
    text = open(sys.argv[1]).read()
    s = json.load(open(sys.argv[2]))
    summary, errors = s["summary"], []
    rows = {int(m.group(1)): int(m.group(2).replace(",", ""))
            for m in re.finditer(r"^\s*(\d+)\s+[\d,.]+\s+([\d,]+)\s+[\d,]+\s+0\s+0$", text, re.M)}
    m = re.search(r"Detailed snapshots: \[([^\]]*)\]", text)
    peak = re.search(r"(\d+) \(peak\)", m.group(1)) if m else None
    if not rows:
        errors.append("no snapshot rows in ms_print's output")
    elif not peak:
        errors.append("ms_print shows no peak snapshot")
    else:
        n = int(peak.group(1))
        if rows.get(n) != summary["peak"]:
            errors.append("peak snapshot %d: %s bytes, the JSON peak is %d" % (n, rows.get(n), summary["peak"]))
        if max(rows.values()) != summary["peak"]:
            errors.append("the largest snapshot has %d bytes, the JSON peak is %d" %
                          (max(rows.values()), summary["peak"]))
        last = max(rows)
        if rows[last] != summary["leaked"]:
            errors.append("last snapshot: %d bytes, the JSON leaked is %d" % (rows[last], summary["leaked"]))
        top = s["peak"][0] if s["peak"] else None
        if top and top["peak"] * 100 >= summary["peak"] and top["frames"] and top["frames"][0]["function"]:
            # the first site under the peak snapshot's root line
            row = re.search(r"^\s*%d\s.*$" % n, text, re.M)
            block = text[row.end():] if row else ""
            first = re.search(r"^->[\d.]+% \(([\d,]+)B\) 0x[0-9a-f]+: (.*?)(?: \(|$)", block, re.M)
            want = (top["peak"], top["frames"][0]["function"])
            got = (int(first.group(1).replace(",", "")), first.group(2)) if first else None
            if got != want:
                errors.append("peak tree starts with %s, the JSON top peak site is %s" % (got, want))
    for e in errors:
        print("massif_check: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

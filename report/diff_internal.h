/* report/diff_internal.h - what report/diff_write.c reads of a struct rpt_diff */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_REPORT_DIFF_INTERNAL_H
#define HEAPTAP_REPORT_DIFF_INTERNAL_H

#include "report/report.h"

/* rpt_diff_side - the old (which = 0) or the new (1) analysis. */
const struct rpt_data *rpt_diff_side(const struct rpt_diff *df, int which);

/* rpt_diff_sorted_by - the cost whose change sorted the lists. */
enum rpt_diff_by rpt_diff_sorted_by(const struct rpt_diff *df);

#endif /* HEAPTAP_REPORT_DIFF_INTERNAL_H */

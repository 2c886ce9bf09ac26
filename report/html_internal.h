/* report/html_internal.h - the parts of the HTML report (html*.c) */
/* SPDX-License-Identifier: MIT */
/*
 * rpt_write_html() (html.c) writes the page template (report/html/
 * report.html, embedded at build time with the CSS and JS next to it) and
 * one JSON object the JS renders. The JSON is built by html_data.c from the
 * analysis (which includes the heap curve, made during its replay by
 * curve.c) plus one aggregate made here: the flame tree (html_flame.c, the
 * trace tree merged by function and pruned).
 */
#ifndef HEAPTAP_REPORT_HTML_INTERNAL_H
#define HEAPTAP_REPORT_HTML_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/internal.h"

/* The assets (generated from report/html/ by report/html/embed.cmake). */
extern const char rpt_html_page[];
extern const char rpt_html_css[];
extern const char rpt_html_js[];

/* Points of the RSS curve at most (the heap curve has as many: rpt_data.ncurve). */
#define HTML_POINTS RPT_CURVE_POINTS

/* One node of the flame tree: a function called from its parent's. */
struct html_flame_node {
	uint32_t parent; /* node index; the root (0) has parent 0 */
	uint32_t name;	 /* index into html_flame.names */
	uint8_t lang;	 /* a foreign frame: enum wire_lang (0 also for native code) */
	uint8_t xframe;	 /* 1: a foreign frame */
	uint64_t calls, bytes, peak, leaked; /* inclusive: itself and everything it called */
};

struct html_flame {
	struct html_flame_node *nodes;
	size_t n;
	char **names; /* owned */
	size_t nnames;
};

/*
 * html_flame_build - the trace tree as a flame tree: a trace's ip expands
 * to its inlined functions, siblings of the same function merge, and nodes
 * below 1/1000 of every total (calls, bytes, peak, leaked) are left out
 * (their costs stay in their parent), the threshold raised until at most
 * max_nodes remain. Node 0 is the root (every allocation). Parents come
 * before their children. Returns 0 or -ENOMEM.
 */
int html_flame_build(const struct rpt_data *d, size_t max_nodes, struct html_flame *fl);
void html_flame_free(struct html_flame *fl);

/*
 * html_data_write - the JSON object the page renders (summary, timeline,
 * RSS, flame tree, top lists, leaks) to f. Returns 0 or -ENOMEM.
 */
int html_data_write(FILE *f, const struct rpt_data *d, const struct rpt_print_options *p,
		    const struct html_flame *fl);

#endif /* HEAPTAP_REPORT_HTML_INTERNAL_H */

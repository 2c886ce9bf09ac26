/* report/html.c - rpt_write_html: one self-contained page (summary, chart, flame graph, tables) */
/* SPDX-License-Identifier: MIT */
/*
 * The page is report/html/report.html with its markers filled:
 *
 *   @@TITLE@@  the command, HTML-escaped
 *   @@CSS@@    report/html/report.css
 *   @@DATA@@   the JSON object of html_data.c, inside <script type="application/json">
 *   @@JS@@     report/html/report.js, which renders the data
 *
 * The three files are embedded at build time (report/html/embed.cmake), so
 * the page needs nothing but itself: no network, no other file.
 *
 * "<" inside a script element could end it early ("</script>" in a symbol
 * name or a path), so every "<" of the JSON text is written as \u003c, and
 * ">" and "&" as \u003e and \u0026 for good measure. They can only occur
 * inside JSON strings, where the escape means the same character.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/html_internal.h"

#define FLAME_MAX_NODES 20000

static void put_escaped_json(FILE *f, const char *s, size_t n)
{
	size_t i, run = 0;

	for (i = 0; i < n; i++) {
		const char *rep;

		switch (s[i]) {
		case '<':
			rep = "\\u003c";
			break;
		case '>':
			rep = "\\u003e";
			break;
		case '&':
			rep = "\\u0026";
			break;
		default:
			continue;
		}
		fwrite(s + run, 1, i - run, f);
		fputs(rep, f);
		run = i + 1;
	}
	fwrite(s + run, 1, n - run, f);
}

static void put_escaped_html(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			/* control characters have no business in a title */
			fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
		}
	}
}

/* The JSON data in a malloc'd buffer. Returns 0 or -ENOMEM / -EIO. */
static int make_data(const struct rpt_data *d, const struct rpt_print_options *p, char **buf,
		     size_t *len)
{
	struct html_flame fl;
	FILE *m;
	int ret;

	*buf = NULL;
	*len = 0;
	ret = html_flame_build(d, FLAME_MAX_NODES, &fl);
	if (ret < 0)
		return ret;
	m = open_memstream(buf, len);
	if (!m) {
		ret = -ENOMEM;
		goto out_flame;
	}
	ret = html_data_write(m, d, p, &fl);
	if (fclose(m) && !ret)
		ret = -ENOMEM;
	if (ret < 0) {
		free(*buf);
		*buf = NULL;
	}
out_flame:
	html_flame_free(&fl);
	return ret;
}

int rpt_write_html(FILE *f, const struct rpt_data *d, const struct rpt_print_options *p)
{
	const char *page = rpt_html_page;
	char *data;
	size_t len;
	int ret;

	ret = make_data(d, p, &data, &len);
	if (ret < 0)
		return ret;
	/* each marker in turn; text between them goes out as it is */
	while (*page) {
		const char *m = strstr(page, "@@");
		const char *end;

		if (!m) {
			fputs(page, f);
			break;
		}
		fwrite(page, 1, (size_t)(m - page), f);
		end = strstr(m + 2, "@@");
		if (!end) {
			fputs(m, f);
			break;
		}
		if (!strncmp(m, "@@TITLE@@", 9))
			put_escaped_html(f, rpt_get_summary(d)->command);
		else if (!strncmp(m, "@@CSS@@", 7))
			fputs(rpt_html_css, f);
		else if (!strncmp(m, "@@JS@@", 6))
			fputs(rpt_html_js, f);
		else if (!strncmp(m, "@@DATA@@", 8))
			put_escaped_json(f, data, len);
		else
			fwrite(m, 1, (size_t)(end + 2 - m), f);
		page = end + 2;
	}
	free(data);
	if (fflush(f) || ferror(f))
		return -EIO;
	return 0;
}

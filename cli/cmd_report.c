/* cli/cmd_report.c - heaptap report: summary and top call sites of a recording */
/* SPDX-License-Identifier: MIT */
/*
 * Reads the recording only through recfile/ and report/. A recording cut
 * short gives one warning line and the report of what it holds; a file that
 * is not a recording gives one error line and exit 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "recfile/recfile.h"
#include "report/report.h"

#define DEFAULT_TOP 10
#define BACKTRACES_PER_SITE 5
#define TEXT_MAX_FRAMES 32

void cli_usage_report(FILE *f)
{
	fputs("usage: heaptap report [--format FMT] [-o OUT] [-n N] [-b N] FILE\n"
	      "       heaptap report --diff [--format text|json] [--cost COST] [-n N] OLD NEW\n"
	      "\n"
	      "Print the summary of a recording (calls, temporary allocations, peak heap,\n"
	      "peak RSS, leaks) and the top call sites by allocation calls, peak memory,\n"
	      "leaked memory and temporary allocations, with their backtraces.\n"
	      "\n"
	      "options:\n"
	      "  -f, --format FMT   text (default) or json\n"
	      "                     html: one self-contained page to open in a browser (-o OUT.html)\n"
	      "                     pprof: gzip'd profile.proto heap profile (go tool pprof)\n"
	      "                     heaptrack: heaptrack_print's input, zstd'd (-o OUT.zst)\n"
	      "                     collapsed: folded stacks for flamegraph.pl, inferno, speedscope\n"
	      "                     massif: valgrind massif's file for ms_print, massif-visualizer\n"
	      "      --cost COST    collapsed: calls (default), bytes, peak, leaked or temporary\n"
	      "      --diff         per call site, what grew and shrank from OLD to NEW; sorted\n"
	      "                     by the change of --cost: bytes (default), calls, peak, leaked\n"
	      "  -o, --output OUT   write the report to OUT (default: standard output); an\n"
	      "                     existing OUT or a symlink is refused\n"
	      "      --force        replace an existing OUT (a symlink itself, never its target)\n"
	      "  -n, --top N        call sites per list (default 10)\n"
	      "  -b, --backtraces N backtraces shown per call site (default 5, 0 = all)\n"
	      "      --threads N    threads reading the events (default: one per CPU)\n"
	      "      --native-all   keep CPython's evaluation-loop frames that Python frames\n"
	      "                     stand for (folded away by default)\n"
	      "  -h, --help         show this help\n"
	      "\n"
	      "See heaptap-report(1) for the JSON schema.\n",
	      f);
}

static int parse_count(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || s[0] == '+' || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * Formats whose output is not text. Without -o they are refused when
 * standard output is a terminal. No default case: a new format must say.
 */
static int format_is_binary(enum cli_format f)
{
	switch (f) {
	case CLI_FORMAT_TEXT:
	case CLI_FORMAT_JSON:
	case CLI_FORMAT_HTML:
	case CLI_FORMAT_COLLAPSED:
	case CLI_FORMAT_MASSIF:
		return 0;
	case CLI_FORMAT_PPROF:
	case CLI_FORMAT_HEAPTRACK:
		break;
	}
	return 1;
}

/*
 * Where the report goes: the -o file (created before the analysis, so a
 * bad path fails fast) or standard output. Prints the reason
 * and returns NULL on failure.
 */
static FILE *open_output(const struct cli_report_args *a)
{
	struct stat in, o;
	FILE *f;
	int fd;

	if (!a->output) {
		if (format_is_binary(a->format) && isatty(STDOUT_FILENO)) {
			cli_msg("report: this format is binary: give -o FILE or redirect standard output");
			return NULL;
		}
		return stdout;
	}
	if (stat(a->file, &in) == 0 && stat(a->output, &o) == 0 && in.st_dev == o.st_dev &&
	    in.st_ino == o.st_ino) {
		cli_msg("report: -o %s: that is the recording itself", a->output);
		return NULL;
	}
	/*
	 * A new file only: an existing one, or a symlink someone put where the
	 * report goes, is never written through. --force removes the name
	 * first (a symlink itself, not what it points to) and creates it anew.
	 */
	if (a->force && lstat(a->output, &o) == 0 && !S_ISDIR(o.st_mode) && unlink(a->output) < 0) {
		cli_msg("report: -o %s: cannot remove it: %s", a->output, strerror(errno));
		return NULL;
	}
	fd = open(a->output, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0) {
		if (errno == EEXIST)
			cli_msg("report: -o %s: %s exists; remove it first or give --force to replace it",
				a->output, lstat(a->output, &o) == 0 && S_ISLNK(o.st_mode) ? "a symlink of that name" : "it");
		else
			cli_msg("report: %s: %s", a->output, strerror(errno));
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		cli_msg("report: %s: %s", a->output, strerror(errno));
		close(fd);
	}
	return f;
}

/*
 * close_output - finish the -o file (nothing for stdout). Returns 0, or
 * -errno when closing failed (the data may not be on disk).
 */
static int close_output(FILE *f)
{
	if (f == stdout)
		return 0;
	if (fclose(f) != 0)
		return errno ? -errno : -EIO;
	return 0;
}

/* parse_format - --format NAME into a->format. 0 or -EINVAL with err. */
static int parse_format(const char *name, struct cli_report_args *a, char *err, size_t errlen)
{
	static const char *const formats[] = {
		[CLI_FORMAT_TEXT] = "text",	      [CLI_FORMAT_JSON] = "json",
		[CLI_FORMAT_HTML] = "html",	      [CLI_FORMAT_PPROF] = "pprof",
		[CLI_FORMAT_HEAPTRACK] = "heaptrack", [CLI_FORMAT_COLLAPSED] = "collapsed",
		[CLI_FORMAT_MASSIF] = "massif",
	};

	for (size_t k = 0; k < sizeof(formats) / sizeof(formats[0]); k++)
		if (formats[k] && !strcmp(name, formats[k])) {
			a->format = (enum cli_format)k;
			return 0;
		}
	snprintf(err, errlen, "unknown format '%s' (see --help)", name);
	return -EINVAL;
}

/* parse_cost - --cost NAME into a->cost. 0 or -EINVAL with err. */
static int parse_cost(const char *name, struct cli_report_args *a, char *err, size_t errlen)
{
	static const char *const costs[] = {
		[RPT_FOLD_CALLS] = "calls", [RPT_FOLD_BYTES] = "bytes",
		[RPT_FOLD_PEAK] = "peak", [RPT_FOLD_LEAKED] = "leaked",
		[RPT_FOLD_TEMPORARY] = "temporary",
	};

	a->cost = -1;
	for (int k = 0; k < (int)(sizeof(costs) / sizeof(costs[0])); k++)
		if (!strcmp(name, costs[k]))
			a->cost = k;
	if (a->cost < 0) {
		snprintf(err, errlen, "--cost '%s': one of calls, bytes, peak, leaked, temporary",
			 name);
		return -EINVAL;
	}
	return 0;
}

/*
 * parse_files - the recordings after the options (argv[first..argc)): one,
 * or OLD and NEW with --diff, and the options that go with each. 0 or
 * -EINVAL with err.
 */
static int parse_files(int argc, char **argv, int first, struct cli_report_args *a, char *err,
		       size_t errlen)
{
	if (first >= argc) {
		snprintf(err, errlen, "no recording given");
		return -EINVAL;
	}
	if (a->diff) {
		if (first + 2 != argc) {
			snprintf(err, errlen, "--diff takes two recordings, OLD and NEW");
			return -EINVAL;
		}
		if (a->format != CLI_FORMAT_TEXT && a->format != CLI_FORMAT_JSON) {
			snprintf(err, errlen, "--diff writes text or json");
			return -EINVAL;
		}
		if (a->cost == RPT_FOLD_TEMPORARY) {
			snprintf(err, errlen, "--diff --cost: one of bytes, calls, peak, leaked");
			return -EINVAL;
		}
		a->file = argv[first];
		a->file2 = argv[first + 1];
		return 0;
	}
	if (first + 1 < argc) {
		snprintf(err, errlen, "one recording at a time ('%s' is one too many)", argv[first + 1]);
		return -EINVAL;
	}
	a->file = argv[first];
	if (a->cost >= 0 && a->format != CLI_FORMAT_COLLAPSED) {
		snprintf(err, errlen, "--cost goes with --format collapsed");
		return -EINVAL;
	}
	return 0;
}

int cli_report_parse(int argc, char **argv, struct cli_report_args *a, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "diff", no_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "cost", required_argument, NULL, 'c' },
		{ "top", required_argument, NULL, 'n' },
		{ "backtraces", required_argument, NULL, 'b' },
		{ "threads", required_argument, NULL, 't' },
		{ "force", no_argument, NULL, 'F' },
		{ "native-all", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	int c;

	memset(a, 0, sizeof(*a));
	a->cost = -1;
	a->top = DEFAULT_TOP;
	a->backtraces = BACKTRACES_PER_SITE;
	err[0] = '\0';
	cli_getopt_reset();
	while ((c = getopt_long(argc, argv, ":f:o:n:b:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (parse_format(optarg, a, err, errlen) < 0)
				return -EINVAL;
			break;
		case 'c':
			if (parse_cost(optarg, a, err, errlen) < 0)
				return -EINVAL;
			break;
		case 'd':
			a->diff = 1;
			break;
		case 'F':
			a->force = 1;
			break;
		case 'N':
			a->native_all = 1;
			break;
		case 'o':
			if (!optarg[0]) {
				snprintf(err, errlen, "-o: empty file name");
				return -EINVAL;
			}
			a->output = optarg;
			break;
		case 'n':
			if (parse_count(optarg, 1000000, &v) < 0) {
				snprintf(err, errlen, "-n '%s': not a number from 0 to 1000000", optarg);
				return -EINVAL;
			}
			a->top = v;
			break;
		case 'b':
			if (parse_count(optarg, 1000000000, &v) < 0) {
				snprintf(err, errlen, "-b '%s': not a number (0 = all)", optarg);
				return -EINVAL;
			}
			a->backtraces = v ? v : SIZE_MAX;
			break;
		case 't':
			if (parse_count(optarg, 64, &v) < 0 || v == 0) {
				snprintf(err, errlen, "--threads '%s': not a number from 1 to 64", optarg);
				return -EINVAL;
			}
			a->threads = (unsigned)v;
			break;
		case 'h':
			a->help = 1;
			return 0;
		default: /* ':' (missing argument) or '?' */
			return cli_getopt_error(c, argv, err, errlen);
		}
	}
	return parse_files(argc, argv, optind, a, err, errlen);
}

/* open and analyze path into *r and *d; prints the reason and returns -1 on failure */
static int load(const char *path, const struct cli_report_args *a, struct rec_reader **r,
		struct rpt_data **d)
{
	struct rpt_options ro = { .threads = a->threads, .native_all = a->native_all };
	int rerr = 0, ret;

	*d = NULL;
	*r = rec_open(path, &rerr);
	if (!*r) {
		if (rerr == REC_E_IO || rerr == -REC_E_IO)
			cli_msg("report: %s: %s", path, strerror(errno));
		else if (rerr == REC_E_MAGIC || rerr == -REC_E_MAGIC)
			cli_msg("report: %s: not a heaptap recording", path);
		else
			cli_msg("report: %s: %s", path, rec_strerror(rerr));
		return -1;
	}
	ret = rpt_analyze(*r, &ro, d);
	if (ret < 0) {
		cli_msg("report: %s: %s", path, strerror(-ret));
		rec_close(*r);
		*r = NULL;
		return -1;
	}
	if (rpt_get_summary(*d)->truncated)
		cli_msg("report: %s: recording is truncated (%s); reporting what it holds", path,
			rec_strerror(rpt_get_summary(*d)->truncated));
	return 0;
}

/* heaptap report --diff OLD NEW (report/diff.c) */
static int report_diff(const struct cli_report_args *a)
{
	static const enum rpt_diff_by by_cost[] = {
		[RPT_FOLD_CALLS] = RPT_DIFF_CALLS, [RPT_FOLD_BYTES] = RPT_DIFF_BYTES,
		[RPT_FOLD_PEAK] = RPT_DIFF_PEAK,   [RPT_FOLD_LEAKED] = RPT_DIFF_LEAKED,
	};
	struct rpt_diff_print dp = { .old_path = a->file, .new_path = a->file2, .top = a->top };
	struct rec_reader *r[2] = { NULL, NULL };
	struct rpt_data *d[2] = { NULL, NULL };
	struct rpt_diff *df = NULL;
	int ret, code = CLI_EXIT_FAIL;
	FILE *out = NULL;

	if (load(a->file, a, &r[0], &d[0]) || load(a->file2, a, &r[1], &d[1]))
		goto out_free;
	ret = rpt_diff_new(d[0], d[1], a->cost < 0 ? RPT_DIFF_BYTES : by_cost[a->cost], &df);
	if (ret < 0) {
		cli_msg("report: --diff: %s", strerror(-ret));
		goto out_free;
	}
	if (a->output) {
		/* open_output() checks OLD (a->file); NEW must not be overwritten either */
		struct stat n, o;

		if (stat(a->file2, &n) == 0 && stat(a->output, &o) == 0 && n.st_dev == o.st_dev &&
		    n.st_ino == o.st_ino) {
			cli_msg("report: -o %s: that is the recording itself", a->output);
			goto out_free;
		}
	}
	out = open_output(a);
	if (!out)
		goto out_free;
	if (a->format == CLI_FORMAT_JSON)
		ret = rpt_write_diff_json(out, df, &dp);
	else
		ret = rpt_write_diff_text(out, df, &dp);
	if (ret < 0)
		cli_msg("report: writing the diff: %s", strerror(-ret));
	else
		code = CLI_EXIT_OK;
	ret = close_output(out);
	if (ret < 0 && code == CLI_EXIT_OK) {
		cli_msg("report: %s: %s", a->output, strerror(-ret));
		code = CLI_EXIT_FAIL;
	}
	if (code != CLI_EXIT_OK && a->output)
		unlink(a->output); /* no half-written report left behind */
out_free:
	rpt_diff_free(df);
	for (int i = 0; i < 2; i++) {
		rpt_free(d[i]);
		rec_close(r[i]);
	}
	return code;
}

int cli_cmd_report(int argc, char **argv)
{
	struct cli_report_args a;
	struct rpt_options ro = { 0 };
	struct rpt_print_options po;
	struct rec_reader *r = NULL;
	struct rpt_data *d = NULL;
	FILE *out = NULL;
	char err[256];
	int ret, rerr = 0, code = CLI_EXIT_FAIL;

	ret = cli_report_parse(argc, argv, &a, err, sizeof(err));
	if (ret < 0) {
		cli_msg("report: %s (see heaptap report --help)", err);
		return CLI_EXIT_USAGE;
	}
	if (a.help) {
		cli_usage_report(stdout);
		return CLI_EXIT_OK;
	}
	if (a.diff)
		return report_diff(&a);
	r = rec_open(a.file, &rerr);
	if (!r) {
		if (rerr == REC_E_IO || rerr == -REC_E_IO)
			cli_msg("report: %s: %s", a.file, strerror(errno));
		else if (rerr == REC_E_MAGIC || rerr == -REC_E_MAGIC)
			cli_msg("report: %s: not a heaptap recording", a.file);
		else
			cli_msg("report: %s: %s", a.file, rec_strerror(rerr));
		return CLI_EXIT_FAIL;
	}
	out = open_output(&a);
	if (!out)
		goto out_close;
	ro.threads = a.threads;
	ro.native_all = a.native_all;
	if (a.format == CLI_FORMAT_HEAPTRACK) /* no costs needed: the events are read once, while written */
		ret = rpt_load_for_heaptrack(r, &ro, &d);
	else
		ret = rpt_analyze(r, &ro, &d);
	if (ret < 0) {
		cli_msg("report: %s: %s", a.file, strerror(-ret));
		goto out_output;
	}
	if (rpt_get_summary(d)->truncated)
		cli_msg("report: %s: recording is truncated (%s); reporting what it holds", a.file,
			rec_strerror(rpt_get_summary(d)->truncated));

	memset(&po, 0, sizeof(po));
	po.path = a.file;
	po.top = a.top;
	po.backtraces = a.backtraces;
	po.max_frames = TEXT_MAX_FRAMES;
	if (a.format == CLI_FORMAT_JSON)
		ret = rpt_write_json(out, d, &po);
	else if (a.format == CLI_FORMAT_HTML)
		ret = rpt_write_html(out, d, &po);
	else if (a.format == CLI_FORMAT_PPROF)
		ret = rpt_write_pprof(out, d);
	else if (a.format == CLI_FORMAT_HEAPTRACK)
		ret = rpt_write_heaptrack(out, d);
	else if (a.format == CLI_FORMAT_COLLAPSED)
		ret = rpt_write_collapsed(out, d, a.cost < 0 ? RPT_FOLD_CALLS : (enum rpt_fold_cost)a.cost);
	else if (a.format == CLI_FORMAT_MASSIF)
		ret = rpt_write_massif(out, d, &po);
	else
		ret = rpt_write_text(out, d, &po);
	if (ret < 0) {
		cli_msg("report: writing the report: %s", strerror(-ret));
		goto out_free;
	}
	code = CLI_EXIT_OK;
out_free:
	rpt_free(d);
out_output:
	ret = close_output(out);
	if (ret < 0 && code == CLI_EXIT_OK) {
		cli_msg("report: %s: %s", a.output, strerror(-ret));
		code = CLI_EXIT_FAIL;
	}
	if (code != CLI_EXIT_OK && a.output)
		unlink(a.output); /* no half-written report left behind */
out_close:
	rec_close(r);
	return code;
}

/* cli/sample_snap.c - heaptap attach --snapshot-every: one pprof heap profile per period into a directory */
/* SPDX-License-Identifier: MIT */
/*
 * itp_run calls cli_snap_write with the interpreter's per-trace sums
 * (interpret/agg.c) every SECS and at the end (the last one holds all
 * since the one before: none is taken while the session stops). Each call
 * builds one profile with report/'s pprof builder (rpt_pprof_*): sample
 * types alloc_objects, alloc_space (allocated since the previous snapshot), inuse_objects,
 * inuse_space (live now), one sample per trace, one location per call site
 * address with the lines of its symbol chain (the interpreter names each
 * address once per session, interpret/snapsym.c), one mapping per loaded
 * module (its executable segment as /proc/PID/maps has it, path, build-id),
 * so the profile reads the same on a host without the binaries, and a
 * reader can still symbolize what is left unnamed. Written as
 * DIR/heaptap.PID.YYYYmmddTHHMMSSZ.pb.gz through a temporary name and a
 * rename, so a collector never reads half a file. Sampled sessions carry the
 * period and a comment that the values are estimates.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "interpret/interpret.h"
#include "report/report.h"
#include "track/wire.h"

/* mapping id of the module holding ip (0: none) */
static uint64_t map_of(const struct itp_snapshot *s, const uint64_t *ids, uint64_t ip)
{
	for (size_t i = 0; i < s->nmods; i++)
		if (ip >= s->mods[i].lo && ip < s->mods[i].hi)
			return ids[i];
	return 0;
}

/*
 * The mappings' file offsets: the kernel's, from the line of /proc/PID/maps
 * that starts where a module's executable segment does (offs[i], limits[i];
 * left as they are when there is none). The lines' other fields, the path
 * among them, are not read.
 */
static void kernel_offsets(pid_t pid, const struct itp_snapshot *s, uint64_t *offs, uint64_t *limits)
{
	char path[64], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8];

		/* a long path leaves the rest of its line for the next read: it fails this scan */
		if (sscanf(line, "%llx-%llx %7s %llx", &lo, &hi, perms, &off) != 4 || !strchr(perms, 'x'))
			continue;
		for (size_t i = 0; i < s->nmods; i++) {
			if (s->mods[i].text_lo == lo && lo < hi) {
				offs[i] = off;
				limits[i] = hi;
			}
		}
	}
	fclose(f);
}

/*
 * One mapping per module, for readers that symbolize themselves as they
 * would from /proc/PID/maps: its executable segment (start, limit, file
 * offset), path and build-id; the Has* flags say what its locations carry.
 */
static int mappings(struct rpt_pprof *p, const struct itp_snapshot *s, pid_t pid, uint64_t *map_ids)
{
	uint64_t *offs = calloc(s->nmods + 1, sizeof(*offs) * 2), *limits;
	int *has = calloc(s->nmods + 1, sizeof(*has) * 3);
	int rc = 0;

	if (!offs || !has) {
		rc = -ENOMEM;
		goto out;
	}
	limits = offs + s->nmods + 1;
	for (size_t i = 0; i < s->nmods; i++) {
		/* without the kernel's word: the segment's first page is at its address in the file */
		offs[i] = s->mods[i].text_vaddr;
		limits[i] = s->mods[i].text_hi;
	}
	kernel_offsets(pid, s, offs, limits);
	for (size_t i = 0; s->frames && i < s->nips; i++) {
		const struct itp_snap_frames *fr = &s->frames[i];
		uint64_t ip = s->ips[i];

		for (size_t m = 0; fr->n && m < s->nmods; m++) {
			if (ip < s->mods[m].lo || ip >= s->mods[m].hi)
				continue;
			has[3 * m] |= fr->v[fr->n - 1].function != NULL;
			for (uint32_t k = 0; k < fr->n; k++) {
				has[3 * m + 1] |= fr->v[k].file != NULL;
				has[3 * m + 2] |= fr->v[k].line != 0;
			}
			break;
		}
	}
	for (size_t i = 0; i < s->nmods; i++) {
		const struct itp_snap_module *m = &s->mods[i];
		int text = m->text_hi > m->text_lo;
		struct rpt_pprof_map pm = {
			.start = text ? m->text_lo : m->lo,
			.limit = text ? limits[i] : m->hi,
			.file_offset = text ? offs[i] : m->lo - m->base,
			.path = m->path,
			.build_id = m->build_id,
			.build_id_len = m->build_id_len,
			.has_functions = has[3 * i],
			.has_filenames = has[3 * i + 1],
			.has_line_numbers = has[3 * i + 2],
			/* file and line come from DWARF, which also gives the inlined levels */
			.has_inline_frames = has[3 * i + 1] && has[3 * i + 2],
		};

		map_ids[i] = rpt_pprof_mapping(p, &pm);
		if (!map_ids[i]) {
			rc = -errno;
			break;
		}
	}
out:
	free(offs);
	free(has);
	return rc;
}

/* the location of s->ips[ip], made on first use into loc[ip]; 0 and errno on failure */
static uint64_t location(struct rpt_pprof *p, const struct itp_snapshot *s, const uint64_t *map_ids,
			 uint64_t *loc, uint32_t ip)
{
	struct rpt_pprof_line lines[64];
	size_t n = 0;

	if (loc[ip])
		return loc[ip];
	if (s->frames) {
		const struct itp_snap_frames *fr = &s->frames[ip];

		for (; n < fr->n && n < sizeof(lines) / sizeof(lines[0]); n++)
			lines[n] = (struct rpt_pprof_line){ .function = fr->v[n].function,
							    .file = fr->v[n].file,
							    .line = fr->v[n].line };
	}
	/* unnamed: the mapping and the address, for a reader to name or show as module+offset */
	/* a foreign (Java, Python) frame is no address: no mapping, address 0, its lines */
	if (wire_is_xframe(s->ips[ip]))
		loc[ip] = rpt_pprof_location(p, 0, 0, lines, n);
	else
		loc[ip] = rpt_pprof_location(p, s->ips[ip] == WIRE_IP_CUT ? 0 : map_of(s, map_ids, s->ips[ip]),
					     s->ips[ip], lines, n);
	return loc[ip];
}

static int build(struct rpt_pprof *p, const struct itp_snapshot *s, pid_t pid)
{
	uint64_t *map_ids = calloc(s->nmods + 1, sizeof(*map_ids));
	uint64_t *loc = calloc(s->nips + 1, sizeof(*loc));
	uint64_t *stack = malloc(sizeof(*stack) * 4096);
	char comment[160];
	int rc = -ENOMEM;

	if (!map_ids || !loc || !stack)
		goto out;
	rc = rpt_pprof_heap_types(p);
	if (rc)
		goto out;
	rpt_pprof_time(p, s->start_realtime_ns + s->since_ns, s->elapsed_ns - s->since_ns);
	if (s->sample_bytes) {
		snprintf(comment, sizeof(comment),
			 "heaptap sampled session: values are estimates (one sample per %" PRIu64
			 " bytes on average)", s->sample_bytes);
		rc = rpt_pprof_comment(p, comment);
		if (!rc)
			rc = rpt_pprof_period(p, "space", "bytes", s->sample_bytes);
		if (rc)
			goto out;
	}
	rc = mappings(p, s, pid, map_ids);
	if (rc)
		goto out;
	for (size_t t = 1; t < s->ntraces; t++) {
		const struct itp_snap_trace *tr = &s->traces[t];
		int64_t v[RPT_PPROF_HEAP_NVALUES];
		size_t n = 0, k = t;

		if (!tr->alloc_bytes && tr->inuse_bytes <= 0)
			continue;
		/* leaf first: this trace's ip, then its parents' */
		while (k && k < s->ntraces && n < 4096) {
			uint32_t ip = s->traces[k].ip;

			if (ip < s->nips) {
				stack[n] = location(p, s, map_ids, loc, ip);
				if (!stack[n++]) {
					rc = -errno;
					goto out;
				}
			}
			if (s->traces[k].parent >= k)
				break; /* parents are older: anything else is corrupt */
			k = s->traces[k].parent;
		}
		v[RPT_PPROF_ALLOC_OBJECTS] = (int64_t)tr->alloc_objects;
		v[RPT_PPROF_ALLOC_SPACE] = (int64_t)tr->alloc_bytes;
		v[RPT_PPROF_INUSE_OBJECTS] = tr->inuse_objects > 0 ? tr->inuse_objects : 0;
		v[RPT_PPROF_INUSE_SPACE] = tr->inuse_bytes > 0 ? tr->inuse_bytes : 0;
		rc = rpt_pprof_sample(p, v, RPT_PPROF_HEAP_NVALUES, stack, n);
		if (rc)
			goto out;
	}
	rc = 0;
out:
	free(map_ids);
	free(loc);
	free(stack);
	return rc;
}

void cli_snap_write(const struct itp_snapshot *s, void *arg)
{
	struct cli_snap *sn = arg;
	struct rpt_pprof *p = rpt_pprof_new();
	char path[CLI_SNAP_PATH], tmp[CLI_SNAP_PATH + 8], when[32];
	time_t now = time(NULL);
	struct tm tm;
	FILE *f;
	int rc, fd;

	if (!p) {
		sn->errors++;
		return;
	}
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
	/* a second snapshot in the same second gets a number */
	if (!strcmp(when, sn->last_when))
		snprintf(path, sizeof(path), "%s/heaptap.%d.%s.%u.pb.gz", sn->dir, (int)sn->pid, when,
			 ++sn->same);
	else
		snprintf(path, sizeof(path), "%s/heaptap.%d.%s.pb.gz", sn->dir, (int)sn->pid, when);
	if (strcmp(when, sn->last_when))
		sn->same = 0;
	snprintf(sn->last_when, sizeof(sn->last_when), "%s", when);
	snprintf(tmp, sizeof(tmp), "%s.part", path);
	rc = build(p, s, sn->pid);
	/* 0600 like a recording; a new file (never through a symlink), renamed into place */
	fd = rc ? -1 : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	if (f) {
		rc = rpt_pprof_write(p, f, 1);
		if (fclose(f) && !rc)
			rc = -EIO;
		if (!rc && rename(tmp, path) < 0)
			rc = -errno;
		if (rc)
			unlink(tmp);
	} else if (!rc) {
		rc = -errno;
	}
	rpt_pprof_free(p);
	if (rc) {
		if (!sn->errors++)
			cli_msg("attach: snapshot %s: %s", path, strerror(-rc));
		return;
	}
	sn->written++;
}

void cli_snap_stats(const struct itp_result *res)
{
	cli_msg("attach: snapshot names: %llu addresses looked up once each (%llu named), %.1f KiB "
		"cached, %.1f ms spent naming",
		(unsigned long long)res->snap_ips, (unsigned long long)res->snap_named,
		(double)res->snap_sym_bytes / 1024.0, (double)res->snap_symbolize_ns / 1e6);
}

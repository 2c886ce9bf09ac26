/* cli/sample_args.c - the sampling options: --sample BYTES, HEAPTAP_SAMPLE_SEED, the closing line */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cli/cli.h"
#include "interpret/interpret.h"
#include "track/wire.h"

int cli_parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		mul = 1ull << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mul = 1ull << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mul = 1ull << 30;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i' && mul > 1)
		end++; /* "512Ki" */
	if ((*end == 'B' || *end == 'b') && end[1] == '\0')
		end++;
	if (*end || v > UINT64_MAX / mul)
		return -EINVAL;
	*out = (uint64_t)v * mul;
	return 0;
}

int cli_parse_sample(const char *s, uint64_t *out, char *err, size_t errlen)
{
	uint64_t v;

	if (cli_parse_bytes(s, &v) < 0 || v == 0 || v > CLI_SAMPLE_MAX) {
		snprintf(err, errlen,
			 "--sample '%s': not a byte count from 1 to 1G (suffixes K, M, G)", s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

uint64_t cli_sample_seed(void)
{
	const char *e = getenv("HEAPTAP_SAMPLE_SEED");
	uint64_t v;

	if (!e || cli_parse_bytes(e, &v) < 0)
		return 0;
	return v;
}

void cli_sample_start(int conn, uint64_t sample)
{
	/* at once after accept: an attached library waits for it before its hooks are installed */
	(void)itp_send_sample(conn, sample, sample ? cli_sample_seed() : 0);
}

void cli_sample_start_xframes(int conn, uint64_t sample, uint32_t langs_off)
{
	uint8_t msg[2 * (2 + 2 * WIRE_VARINT_MAX)];
	uint64_t seed = sample ? cli_sample_seed() : 0;
	size_t n = 2, k;
	ssize_t w;

	if (!langs_off) {
		cli_sample_start(conn, sample);
		return;
	}
	/* one write: the library's start peeks at both before its hooks record (track/sample.c) */
	msg[0] = WIRE_CTL_SAMPLE;
	n += wire_put_varint(msg + n, sample);
	n += wire_put_varint(msg + n, seed);
	msg[1] = (uint8_t)(n - 2);
	k = n;
	msg[n++] = WIRE_CTL_XFRAMES;
	n++;
	n += wire_put_varint(msg + n, langs_off);
	msg[k + 1] = (uint8_t)(n - k - 2);
	do
		w = send(conn, msg, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (w < 0 && errno == EINTR);
}

void cli_sample_options(struct itp_options *opt, uint64_t sample)
{
	opt->sample_ctl = 0; /* cli_sample_start sent it already */
	opt->sample_bytes = sample;
}

char *cli_format_bytes(uint64_t v, char *buf, size_t len)
{
	if (v && !(v % (1ull << 30)))
		snprintf(buf, len, "%" PRIu64 "G", v >> 30);
	else if (v && !(v % (1ull << 20)))
		snprintf(buf, len, "%" PRIu64 "M", v >> 20);
	else if (v && !(v % (1ull << 10)))
		snprintf(buf, len, "%" PRIu64 "K", v >> 10);
	else
		snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

void cli_sample_summary(const char *cmd, uint64_t sample, const struct itp_result *res)
{
	char b[32];

	if (!sample)
		return;
	cli_msg("%s: sampled, one sample per %s bytes on average: %llu sampled allocations stand "
		"for an estimate; exact totals %llu allocations, %llu bytes (per call site)",
		cmd, cli_format_bytes(sample, b, sizeof(b)),
		(unsigned long long)res->final.alloc_calls, (unsigned long long)res->site_calls,
		(unsigned long long)res->site_bytes);
}

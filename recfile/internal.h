/* recfile/internal.h - on-disk layout constants and the writer/reader structs */
/* SPDX-License-Identifier: MIT */
/*
 * The format is described for users in docs/recording.md and heaptap(5);
 * this header is its single definition in code.
 *
 *   file   := file_header chunk* [end_chunk]
 *
 *   file_header (16 bytes)
 *   +---------+---------+---------+
 *   | magic 8 | version | flags   |    magic "HEAPTAP\0", u32 version, u32 flags
 *   +---------+---------+---------+
 *
 *   chunk_header (32 bytes, little-endian), then csize bytes of payload
 *    0 u32 tag      REC_CHUNK_TAG ("HTCK")
 *    4 u16 section  enum rec_section
 *    6 u16 flags    0 in version 1; readers ignore bits they do not know
 *    8 u32 csize    payload bytes (one zstd frame with content checksum)
 *   12 u32 usize    uncompressed payload bytes (<= REC_MAX_CHUNK)
 *   16 u64 first    table index of the chunk's first record
 *   24 u32 count    records in the chunk
 *   28 u32 check    FNV-1a 32 over bytes 0..27 of this header
 *
 * Every chunk decodes on its own: delta states start from zero in each.
 */
#ifndef HEAPTAP_RECFILE_INTERNAL_H
#define HEAPTAP_RECFILE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "recfile/recfile.h"

#define REC_MAGIC "HEAPTAP\0"
#define REC_MAGIC_LEN 8
#define REC_VERSION 3
#define REC_FILE_HDR 16
#define REC_CHUNK_HDR 32
#define REC_CHUNK_TAG 0x4b435448u	  /* "HTCK" as little-endian bytes */
#define REC_MAX_CHUNK (16u * 1024 * 1024) /* uncompressed bytes per chunk, reader limit */
#define REC_CHUNK_TARGET (1u * 1024 * 1024) /* the writer cuts a chunk past this */
#define REC_MAX_STRING (1u * 1024 * 1024)   /* longest string or meta value */
#define REC_MAX_BUILD_ID 1024
#define REC_MAX_CHAIN 4096		    /* links in one symbol chain */
#define REC_MAX_INDEX (UINT32_MAX - 1)	    /* REC_NONE is never a valid index */
#ifndef REC_ZSTD_LEVEL
#define REC_ZSTD_LEVEL 3 /* see docs/recording.md "Compression level" */
#endif

/* Section types; the numbering is also the writer's flush order. */
enum rec_section {
	REC_SEC_STRINGS = 1,	/* varint len, bytes; string 0 ("") is implicit */
	REC_SEC_MODULES = 2,	/* varint path string, base, size, idlen, id bytes */
	REC_SEC_IPS = 3,	/* varint zigzag(ip - previous ip) */
	REC_SEC_SYMBOLS = 4,	/* zigzag ip-index delta, module+1, n, n x (fn, file, line) */
	REC_SEC_TRACES = 5,	/* count x varint (own index - parent), then count x
				 * varint zigzag(ip - previous ip) */
	REC_SEC_ALLOCINFOS = 6, /* count x varint size, then count x varint
				 * zigzag(trace - previous trace) << 4 | kind
				 * (kind 15: varint kind follows) */
	REC_SEC_EVENTS = 7,	/* see "Event chunk payload" below */
	REC_SEC_TICKS = 8,	/* varint time delta, event index delta, zigzag rss delta */
	REC_SEC_META = 9,	/* varint keylen, key, varint vallen, value */
	REC_SEC_END = 10,	/* no payload; first = total events */
	REC_SEC_SITES = 11,	/* varint ip index + 1 (0: no ip), varint calls, varint bytes
				 * (exact counts per call site of a sampled recording; sites.c) */
	REC_SEC_XFRAMES = 12,	/* varint ip index, u8 lang, u8 kind: the ip is a foreign
				 * (Java, Python) frame (xframes.c) */
	REC_SEC_NUM = 13,
};

/*
 * Event chunk payload (count = events, from the chunk header):
 *
 *   u8 mode                      REC_EVM_RECENT, REC_EVM_RANKED or REC_EVM_DELTA,
 *                                maybe | REC_EVF_AGE, | REC_EVF_SPLIT (always, since
 *                                version 2), | REC_EVF_LANES (version 3)
 *   [RANKED: varint D, D x varint info]   the chunk's infos, most used first
 *   ops[(count + 3) / 4]         2 bits per event, event i at bits 2*(i%4)
 *                                of byte i/4: enum rec_ev_op, 3 = weighted alloc
 *                                with REC_EVF_LANES (version 3) instead:
 *   ops[count]                   one byte per event: op | lane << 2, the lane
 *                                being the event's thread modulo REC_EV_LANES
 *   [SPLIT: u32 length of the allocs' codes]
 *   count x info code            with SPLIT the allocs' codes, then the frees',
 *                                each in event order; without (version 1), one
 *                                column in event order
 *     RECENT: varint zigzag(info - hw - 1), hw = highest info so far in
 *             this chunk (-1 at its start): a newly made info costs one byte
 *     RANKED: u8 rank (< 255), or 255 then varint (rank - 255)
 *     DELTA:  varint zigzag(info - previous info of the same class), the
 *             classes being allocs (ops 0, 3) and frees (ops 1, 2), each
 *             starting from 0
 *     with REC_EVF_AGE in mode, frees are coded differently: as the age
 *     (allocs back, counting within this chunk) of an alloc with the same
 *     info, predicted to stay the same (a program freeing in the order it
 *     allocated frees at a constant age). age starts at 1:
 *       0        the same age as before: info = that of the alloc age back
 *       2k + 2   the age changes by unzigzag(k); info as above
 *       2k + 1   no such alloc: info = previous free's info + unzigzag(k)
 *                (the previous free's info starts at 0)
 *     with REC_EVF_LANES, each lane has its own age, previous free's info
 *     and allocs to count back: a free's age counts the allocs of its lane
 *   one varint weight per weighted alloc, in event order
 *
 * Columns rather than records: each column has its own statistics, which
 * zstd's entropy stage then codes close to their entropy (docs/recording.md
 * has the measurements behind this).
 */
#define REC_EV_WEIGHTED 3 /* op code of a weighted (sampled) allocation */
#define REC_EVM_RECENT 0
#define REC_EVM_RANKED 1
#define REC_EVM_DELTA 2
#define REC_EVF_AGE 0x10    /* mode flag: frees coded by age (see above) */
#define REC_EVF_SPLIT 0x20  /* mode flag: allocs' and frees' codes in two columns (version 2) */
#define REC_EVF_LANES 0x40  /* mode flag: a byte per op with its lane (version 3) */
#define REC_EV_LANES 64	    /* lanes: threads modulo this */
#define REC_EV_AGE_SEARCH 8 /* allocs either side of the predicted age the writer tries */
#define REC_EV_SAMPLE 32768 /* events the writer codes in each mode to choose one */
#define REC_EV_SLICES 4     /* ... in that many slices spread over the chunk */
#define REC_EV_PRIME 4096   /* allocs before a slice its AGE trial may refer to */
#define REC_EV_CHUNK (512u * 1024) /* events per chunk */
#define REC_EV_ESC 255
#define REC_KIND_ESC 15	  /* kind field value meaning "varint kind follows" */

struct rec_chunk_hdr {
	uint32_t tag;
	uint16_t section;
	uint16_t flags;
	uint32_t csize;
	uint32_t usize;
	uint64_t first;
	uint32_t count;
	uint32_t check;
};

/* Little-endian helpers (the format is little-endian on every host). */
static inline void rec_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void rec_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void rec_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t rec_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t rec_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t rec_get64(const uint8_t *p)
{
	return (uint64_t)rec_get32(p) | (uint64_t)rec_get32(p + 4) << 32;
}

static inline uint64_t rec_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t rec_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* chunk.c */
uint32_t rec_fnv32(const uint8_t *p, size_t n);
void rec_chunk_encode(uint8_t out[REC_CHUNK_HDR], const struct rec_chunk_hdr *h);
/* rec_chunk_decode - parse and check tag and checksum; 0 or -REC_E_CORRUPT. */
int rec_chunk_decode(const uint8_t in[REC_CHUNK_HDR], struct rec_chunk_hdr *h);

/* ------------------------------------------------------------------ */
/* Writer                                                              */

struct rec_wbuf {
	uint8_t *p;
	size_t len, cap;
	uint8_t *p2;	 /* second column (traces, allocinfos), appended at flush */
	size_t len2, cap2;
	uint64_t first;	 /* table index of the buffer's first record */
	uint32_t count;	 /* records buffered */
	uint64_t prev_a; /* delta states, reset when the buffer is written */
	uint64_t prev_b;
	uint64_t prev_c;
};

/* String interning: open addressing over offsets into one arena. */
struct rec_strtab {
	uint32_t *slot;	 /* string index + 1, 0 = empty */
	size_t nslot;	 /* power of two */
	uint64_t *hash;	 /* per string index */
	size_t *off;	 /* per string index, into arena */
	uint32_t *len;	 /* per string index */
	size_t n, cap;	 /* strings (incl. "" at 0) */
	char *arena;
	size_t arena_len, arena_cap;
};

/* the pending events' columns: put.c appends, encode_events.c codes them */
struct rec_evcols {
	uint32_t *info;
	uint8_t *op;
	/*
	 * per event: for a free whose alloc is known (rec_put_free_of), how
	 * many allocs back it was, counted from the free (>= 1); else 0, also
	 * for an age past UINT32_MAX (the coder looks back at most a chunk).
	 * 4 bytes, not the alloc's 8-byte number: the columns of a 512
	 * Ki-event chunk are written once and read in every mode trial and the
	 * final coding, past the caches.
	 */
	uint32_t *age;
	size_t cap;		/* entries of info, op and age */
	struct rec_wbuf weights; /* varints */
};

struct rec_bg;

struct rec_writer {
	int fd;		 /* -1: a discarding writer (rec_writer_discard) */
	int discard;	 /* chunks are dropped, not compressed or written */
	rec_symbol_fn on_symbol; /* rec_writer_symbols: rec_put_symbol calls it instead */
	void *on_symbol_arg;
	int err;	 /* first error (positive enum rec_err), sticky */
	void *cctx;	 /* ZSTD_CCtx */
	struct rec_wbuf sec[REC_SEC_NUM];
	uint8_t *out;	 /* chunk header + compressed payload */
	size_t out_cap;
	struct rec_strtab strs;
	uint32_t nmodules, nips, ntraces, ninfos;
	uint64_t nevents;
	uint8_t *symbolized; /* bitmap over ips */
	size_t symbolized_bytes;
	uint64_t written;    /* file bytes written */
	struct rec_evcols ev;	    /* pending events, encoded at flush (encode_events.c) */
	struct rec_bg *bg;	    /* the chunk thread (bg.c), or NULL: chunks written inline */
	/* the encoder's own (the chunk thread's while there is one) */
	uint32_t *ev_freq;	    /* per info: uses in the pending chunk */
	uint32_t *ev_rank;
	size_t ev_freq_cap;
	uint32_t *ev_ids;	    /* distinct infos of the pending chunk */
	size_t ev_ids_cap;
	uint32_t *ev_hist;	    /* infos of the chunk's allocs, in order (AGE) */
	size_t ev_hist_cap;
	uint8_t *ev_fcol;	    /* the frees' codes of the chunk being coded (REC_EVF_SPLIT) */
	size_t ev_fcol_cap;
	uint64_t nallocs;	    /* alloc events so far (rec_writer_nallocs) */
	uint8_t lane;		    /* rec_put_lane's lane << 2, or'ed into each op */
	uint32_t *ev_lpos;	    /* per alloc of the chunk: lane << 24 | its index in the lane */
	size_t ev_lpos_cap;
	void *sample_cctx;	    /* ZSTD_CCtx judging the modes */
	uint8_t *sample, *sample_out;
	size_t sample_cap, sample_out_cap;
};

/* the delta class of an event op: 0 for allocs, 1 for frees */
static inline int rec_ev_class(uint32_t op)
{
	op &= 3; /* without the lane */
	return op == REC_EV_FREE || op == REC_EV_FREE_TEMP;
}

int rec_strtab_intern(struct rec_strtab *t, const char *s, size_t len, uint32_t *idx, int *added);
void rec_strtab_free(struct rec_strtab *t);
int rec_wbuf_reserve(struct rec_wbuf *b, size_t more);
/* rec_writer_flush_upto - write every non-empty section up to and including sec. */
int rec_writer_flush_upto(struct rec_writer *w, int sec);
/* rec_writer_record_done - count a record appended to sec and cut the chunk if full. */
int rec_writer_record_done(struct rec_writer *w, int sec);
/*
 * rec_encode_events - encode n events of ev (whose infos are below ninfos)
 * into out (its len set to the payload's); uses w's encoder scratch only.
 */
int rec_encode_events(struct rec_writer *w, const struct rec_evcols *ev, size_t n, uint32_t ninfos,
		      struct rec_wbuf *out);
/* rec_write_chunk - compress and write one chunk (writer.c); 0 or a negative enum rec_err */
int rec_write_chunk(struct rec_writer *w, int sec, const uint8_t *p, size_t len, uint64_t first,
		    uint32_t count);
/* bg.c: the chunk thread; see there */
int rec_bg_start(struct rec_writer *w);
int rec_bg_submit(struct rec_writer *w, int sec, struct rec_wbuf *b);
int rec_bg_stop(struct rec_writer *w);
/* rec_decode_events - decode an event chunk payload; 0 or -REC_E_CORRUPT / -REC_E_NOMEM. */
int rec_decode_events(const struct rec_reader *r, const uint8_t *p, size_t len, uint32_t count,
		      struct rec_event *ev, size_t *n);

/* ------------------------------------------------------------------ */
/* Reader                                                              */

struct rec_evchunk {
	uint64_t off; /* payload offset in the file */
	uint32_t csize, usize;
	uint64_t first;
	uint32_t count;
};

struct rec_meta_kv {
	char *key;
	char *value;
};

struct rec_reader {
	int fd;		   /* -1 for a memory reader */
	uint8_t *mem;	   /* the whole file for rec_open_mem */
	uint64_t size;	   /* file bytes at open */
	int truncated;	   /* positive enum rec_err, 0 if complete */
	uint64_t fixed;	   /* dangling references set to 0 / REC_NONE */
	uint64_t dropped;  /* events dropped (atomic) */
	void *dctx;	   /* ZSTD_DCtx used while opening */

	void **blocks;	   /* memory freed at close (string arenas, chunk copies) */
	size_t nblocks, cap_blocks;

	const char **strs;
	size_t nstrs, cap_strs;
	struct rec_module *mods;
	uint32_t *mod_path; /* string index of each module's path */
	size_t nmods, cap_mods;
	struct rec_ip *ips;
	size_t nips, cap_ips;
	struct rec_frame *frames;
	size_t nframes, cap_frames;
	struct rec_trace *traces;
	size_t ntraces, cap_traces;
	struct rec_allocinfo *infos;
	size_t ninfos, cap_infos;
	struct rec_tick *ticks;
	size_t nticks, cap_ticks;
	struct rec_meta_kv *meta;
	size_t nmeta, cap_meta;
	struct rec_site_count *sites;
	size_t nsites, cap_sites;
	struct rec_xfrec {
		uint32_t ip;
		uint8_t lang, kind;
	} *xfs;			/* foreign-frame records, applied to ips after loading */
	size_t nxfs, cap_xfs;
	struct rec_evchunk *evc;
	size_t nevc, cap_evc;
	uint64_t nevents;
	/* symbol records, applied to ips after loading */
	struct rec_symrec {
		uint32_t ip, module, frame;
	} *syms;
	size_t nsyms, cap_syms;
};

/* rec_grow - make room for n + more elements of size elem in *arr; 0 or -REC_E_NOMEM. */
int rec_grow(void **arr, size_t *cap, size_t n, size_t more, size_t elem);
int rec_keep_block(struct rec_reader *r, void *block);
/* rec_read_at - read len bytes at off; -REC_E_TRUNCATED if the file ends first. */
int rec_read_at(const struct rec_reader *r, uint64_t off, void *buf, size_t len);
/* rec_decode_table - decode one table chunk's payload p[0..len) into r. */
int rec_decode_table(struct rec_reader *r, const struct rec_chunk_hdr *h, uint8_t *p, size_t len);
/* rec_fixup - validate cross-references after loading. */
void rec_fixup(struct rec_reader *r);
/* sites.c: rec_dec_sites - decode count site records from [*p, end); 0 or -REC_E_CORRUPT / NOMEM. */
int rec_dec_sites(struct rec_reader *r, const uint8_t **p, const uint8_t *end, uint32_t count);
/* sites.c: rec_fixup_sites - site ip indices past the ip table become REC_NONE (counted). */
void rec_fixup_sites(struct rec_reader *r);
/* xframes.c: rec_dec_xframes - decode count foreign-frame records; 0 or -REC_E_CORRUPT / NOMEM. */
int rec_dec_xframes(struct rec_reader *r, const uint8_t **p, const uint8_t *end, uint32_t count);
/* xframes.c: rec_fixup_xframes - mark the ips they name (after the ip table is whole). */
void rec_fixup_xframes(struct rec_reader *r);

#endif /* HEAPTAP_RECFILE_INTERNAL_H */

/* recfile/encode_events.c - the writer's event chunk encoder */
/* SPDX-License-Identifier: MIT */
/*
 * Turns the pending events (info and op arrays, weight varints) into an
 * event chunk payload (internal.h "Event chunk payload"). The mode is
 * chosen per chunk: when few distinct infos recur (the usual case: the same
 * call sites and sizes again and again) their ranks by use count are coded,
 * so the most used info is byte 0; when most events name infos that are new
 * (distinct stacks everywhere), the distance to the highest info seen so
 * far is coded, where a new info is a 0.
 */
#include <stdlib.h>
#include <zstd.h>

#include "track/wire.h"
#include "recfile/internal.h"

/*
 * rank the nd distinct infos in ids by use count, most used first, with a
 * counting sort (counts are at most n): qsort cost a third of the writer's
 * time with many distinct infos. Equal counts keep first-use order.
 */
static int rank_by_use(struct rec_writer *w, size_t nd, uint32_t maxf)
{
	uint32_t *start;
	size_t cap = 0;
	uint32_t *sorted = NULL;
	int ret;

	start = calloc((size_t)maxf + 2, sizeof(*start));
	if (!start)
		return -REC_E_NOMEM;
	ret = rec_grow((void **)&sorted, &cap, 0, nd, sizeof(*sorted));
	if (ret)
		goto out;
	/* start[f] = number of infos used more than f times (descending order) */
	for (size_t i = 0; i < nd; i++)
		start[w->ev_freq[w->ev_ids[i]]]++;
	for (uint32_t f = maxf, acc = 0; f > 0; f--) {
		uint32_t c = start[f];

		start[f] = acc;
		acc += c;
	}
	for (size_t i = 0; i < nd; i++) {
		uint32_t id = w->ev_ids[i];
		uint32_t rk = start[w->ev_freq[id]]++;

		sorted[rk] = id;
		w->ev_rank[id] = rk;
	}
	memcpy(w->ev_ids, sorted, nd * sizeof(*sorted));
out:
	free(sorted);
	free(start);
	return ret;
}

/* AGE coding's state of one lane (REC_EVF_LANES; all events are lane 0 without) */
struct lane_state {
	int64_t age;	    /* allocs of the lane back to the predicted freed one */
	uint32_t prev_free; /* previous free's info */
	uint32_t nh;	    /* the lane's allocs so far in the coded range */
	uint32_t base;	    /* where they are in the history */
};

/* code info in the alloc modes (RECENT, RANKED, DELTA); st carries their state */
struct code_state {
	int64_t hw;	  /* RECENT: highest info so far */
	uint32_t prev[2]; /* DELTA: previous info per class */
	size_t gnh;	  /* AGE: allocs so far in the coded range, all lanes */
	uint32_t lmask;	  /* an op's lane is op >> 2 & lmask: 0 codes as one lane */
	/*
	 * [lmask + 1] of the caller's: apart, so that the fields above stay
	 * in registers in the coding loops
	 */
	struct lane_state *l;
};

/*
 * The writer's columns, copied out of struct rec_writer: the coders store
 * through a uint8_t pointer, which may alias anything, so the compiler
 * reloaded every w->ev_* pointer for every event; a local struct whose
 * address goes only to inlined code cannot be aliased.
 */
struct cols {
	const uint32_t *info, *rank;
	const uint8_t *op;
	const uint32_t *age;
	uint32_t *hist;
	uint32_t *lpos; /* per alloc of the range: lane << 24 | index in the lane */
};

static inline __attribute__((always_inline)) uint8_t *
put_plain(const struct cols *w, int mode, struct code_state *st, uint32_t info, int cl, uint8_t *p)
{
	switch (mode) {
	case REC_EVM_RANKED: {
		uint32_t r = w->rank[info];

		if (r < REC_EV_ESC) {
			*p++ = (uint8_t)r;
		} else {
			*p++ = REC_EV_ESC;
			p += wire_put_varint(p, r - REC_EV_ESC);
		}
		break;
	}
	case REC_EVM_DELTA:
		p += wire_put_varint(p, rec_zigzag((int64_t)info - st->prev[cl]));
		st->prev[cl] = info;
		break;
	default:
		p += wire_put_varint(p, rec_zigzag((int64_t)info - st->hw - 1));
		break;
	}
	if ((int64_t)info > st->hw)
		st->hw = info;
	return p;
}

/*
 * AGE coding of a free (REC_EVF_AGE): find an alloc of the same info in
 * this chunk, as close as possible to the predicted age (allocs back); hist
 * holds the infos of the chunk's allocs so far.
 */
static inline __attribute__((always_inline)) uint8_t *
put_age(const struct cols *w, struct code_state *st, struct lane_state *l, int lanes, uint32_t info,
	uint32_t age, uint32_t lane, uint8_t *p)
{
	const uint32_t *hist = w->hist + l->base;
	int64_t nh = (int64_t)l->nh, a = 0;

	if (l->age <= nh && hist[nh - l->age] == info) {
		*p++ = 0;
		goto out;
	}
	/* the caller told which alloc this frees (rec_put_free_of): its age in its lane */
	if (!lanes) {
		if (age && age <= nh && hist[nh - age] == info)
			a = age;
	} else if (age && age <= st->gnh) {
		uint32_t pos = w->lpos[st->gnh - age];

		if (pos >> 24 == lane && hist[pos & 0xffffff] == info)
			a = nh - (pos & 0xffffff);
	}
	/* else the nearest alloc of that info around the predicted age */
	for (int64_t d = 1; d <= REC_EV_AGE_SEARCH && !a; d++) {
		if (l->age + d <= nh && hist[nh - l->age - d] == info)
			a = l->age + d;
		else if (l->age - d >= 1 && l->age - d <= nh && hist[nh - l->age + d] == info)
			a = l->age - d;
	}
	if (a) {
		p += wire_put_varint(p, rec_zigzag(a - l->age) * 2 + 2);
		l->age = a;
	} else {
		p += wire_put_varint(p, rec_zigzag((int64_t)info - l->prev_free) * 2 + 1);
	}
out:
	l->prev_free = info;
	if ((int64_t)info > st->hw)
		st->hw = info;
	return p;
}

/*
 * What every coder state needs from the events before a slice: the highest
 * info in [0, upto) (a free's AGE hint is its age, which needs no count of
 * the allocs before it). choose_mode asks for slices in
 * increasing order, so the scan goes on from where the last one stopped and
 * the whole chunk is read at most once (scanning from 0 for every mode and
 * slice was 80% of the encoder's time).
 */
struct prefix {
	size_t upto;
	int64_t hw;
};

static void prefix_to(const struct rec_evcols *ev, struct prefix *pf, size_t start)
{
	int64_t hw = pf->hw;

	for (size_t i = pf->upto; i < start; i++)
		if ((int64_t)ev->info[i] > hw)
			hw = ev->info[i];
	pf->upto = start;
	pf->hw = hw;
}

/*
 * a fresh coder state for the events [from, to): every lane's age 1, and
 * each lane's place in the history (w->ev_hist) after the allocs of the
 * lanes before it
 */
static void state_init(struct code_state *st, struct lane_state *l, const uint8_t *op, size_t from,
		       size_t to, int64_t hw, uint32_t lmask)
{
	uint32_t base = 0, count[REC_EV_LANES] = { 0 };

	*st = (struct code_state){ .hw = hw, .lmask = lmask, .l = l };
	for (size_t i = from; i < to && lmask; i++)
		if (!rec_ev_class(op[i]))
			count[op[i] >> 2 & lmask]++;
	for (uint32_t k = 0; k <= lmask; k++) {
		st->l[k] = (struct lane_state){ .age = 1, .base = base };
		base += count[k];
	}
}

/* an alloc of info in lane (l) joins the history; without lanes, lpos is not kept */
static inline __attribute__((always_inline)) void
hist_push(const struct cols *c, struct code_state *st, struct lane_state *l, int lanes,
	  uint32_t lane, uint32_t info)
{
	c->hist[l->base + l->nh] = info;
	if (lanes)
		c->lpos[st->gnh++] = lane << 24 | l->nh;
	l->nh++;
}

/*
 * the state a coder has at event start of the chunk, for coding [start,
 * start + n) without coding [0, start): highest info, last info per class,
 * and the infos of up to REC_EV_PRIME allocs before start in w->ev_hist (a
 * trial on a slice must see what the real coder would, or a fresh start
 * flatters some modes); pf is the prefix scan, brought up to start here
 */
static void prime(struct rec_writer *w, const struct rec_evcols *ev, size_t start, size_t n,
		  uint32_t lmask, struct prefix *pf, struct code_state *st, struct lane_state *l)
{
	struct cols c = { .hist = w->ev_hist, .lpos = w->ev_lpos };
	size_t k = start, h = 0;
	int seen[2] = { 0, 0 };
	uint32_t prev[2] = { 0, 0 };

	prefix_to(ev, pf, start);
	while (k > 0 && (!seen[0] || !seen[1] || h < REC_EV_PRIME)) {
		int cl = rec_ev_class(ev->op[--k]);

		if (!seen[cl]) {
			prev[cl] = ev->info[k];
			seen[cl] = 1;
		}
		if (!cl && h < REC_EV_PRIME)
			h++;
	}
	state_init(st, l, ev->op, k, start + n, pf->hw, lmask);
	st->prev[0] = prev[0];
	st->prev[1] = prev[1];
	/* the allocs before start, oldest first; each lane's last free */
	for (size_t i = k; i < start; i++) {
		if (!rec_ev_class(ev->op[i]))
			hist_push(&c, st, &st->l[ev->op[i] >> 2 & lmask], lmask != 0,
				  ev->op[i] >> 2 & lmask, ev->info[i]);
		else
			st->l[ev->op[i] >> 2 & lmask].prev_free = ev->info[i];
	}
}

/* where the coders write: allocs' codes at a, frees' codes at f (REC_EVF_SPLIT) */
struct outs {
	uint8_t *a, *f;
};

/*
 * the info codes of events [start, start + n) in mode (with REC_EVF_AGE or
 * not), allocs' at o->a and frees' at o->f, from the coder state st;
 * advances both
 */
static inline __attribute__((always_inline)) void
put_infos_in(const struct cols *col, int mode, int age, int lanes, struct code_state *st,
	     size_t start, size_t n, struct outs *o)
{
	uint8_t *a = o->a, *f = o->f;
	struct lane_state l0 = st->l[0]; /* without lanes: a local, kept in registers */

	for (size_t i = start; i < start + n; i++) {
		uint32_t info = col->info[i];
		uint32_t lane = lanes ? col->op[i] >> 2 : 0;
		struct lane_state *l = lanes ? &st->l[lane] : &l0;
		int cl = rec_ev_class(col->op[i]);

		if (!cl) {
			hist_push(col, st, l, lanes, lane, info);
			a = put_plain(col, mode, st, info, 0, a);
		} else if (age) {
			f = put_age(col, st, l, lanes, info, col->age[i], lane, f);
		} else {
			f = put_plain(col, mode, st, info, 1, f);
		}
	}
	if (!lanes)
		st->l[0] = l0;
	o->a = a;
	o->f = f;
}

static void put_infos(struct rec_writer *w, const struct rec_evcols *ev, int mode,
		      const struct code_state *st0, size_t start, size_t n, struct outs *o)
{
	struct code_state st = *st0;
	struct lane_state l[REC_EV_LANES];
	struct cols c = {.info = ev->info, .rank = w->ev_rank, .op = ev->op,
			 .age = ev->age, .hist = w->ev_hist, .lpos = w->ev_lpos};

	memcpy(l, st0->l, (st.lmask + 1) * sizeof(*l));
	st.l = l;
	/* one loop per mode, each with its mode a constant; lanes come with AGE only */
	if (st.lmask)
		mode |= REC_EVF_LANES;
	switch (mode) {
	case REC_EVM_RECENT:
		put_infos_in(&c, REC_EVM_RECENT, 0, 0, &st, start, n, o);
		break;
	case REC_EVM_RANKED:
		put_infos_in(&c, REC_EVM_RANKED, 0, 0, &st, start, n, o);
		break;
	case REC_EVM_DELTA:
		put_infos_in(&c, REC_EVM_DELTA, 0, 0, &st, start, n, o);
		break;
	case REC_EVM_RECENT | REC_EVF_AGE:
		put_infos_in(&c, REC_EVM_RECENT, 1, 0, &st, start, n, o);
		break;
	case REC_EVM_RANKED | REC_EVF_AGE:
		put_infos_in(&c, REC_EVM_RANKED, 1, 0, &st, start, n, o);
		break;
	case REC_EVM_DELTA | REC_EVF_AGE:
		put_infos_in(&c, REC_EVM_DELTA, 1, 0, &st, start, n, o);
		break;
	case REC_EVM_RECENT | REC_EVF_AGE | REC_EVF_LANES:
		put_infos_in(&c, REC_EVM_RECENT, 1, 1, &st, start, n, o);
		break;
	case REC_EVM_RANKED | REC_EVF_AGE | REC_EVF_LANES:
		put_infos_in(&c, REC_EVM_RANKED, 1, 1, &st, start, n, o);
		break;
	default:
		put_infos_in(&c, REC_EVM_DELTA, 1, 1, &st, start, n, o);
		break;
	}
}

/*
 * Pick the mode that compresses best: each candidate codes REC_EV_SAMPLE
 * events taken as REC_EV_SLICES slices spread over the chunk (its start
 * alone misled: a program's first allocations look unlike the rest), zstd
 * level 1 compresses that, and the sizes are compared (scaled to the
 * chunk, the rank table added). Trying is the only
 * reliable judge: which mode wins depends on how infos repeat and in which
 * order memory is given back, which no cheap count tells
 * (docs/recording.md has the cases).
 */
/*
 * compressed size of the info column of [start, start + n) in mode, by zstd
 * level 1, from the primed state st (prime leaves each lane's primed
 * history alone for the next mode: put_infos only appends after it)
 */
static size_t zsize1(struct rec_writer *w, const uint8_t *p, size_t len)
{
	size_t cs = ZSTD_compressCCtx(w->sample_cctx, w->sample_out, w->sample_out_cap, p, len, 1);

	return ZSTD_isError(cs) ? len : cs;
}

/* adds the allocs' column's compressed size to cs[0] (unless frees_only), the frees' to cs[1] */
static void trial(struct rec_writer *w, const struct rec_evcols *ev, int m,
		  const struct code_state *st, size_t start, size_t n, int frees_only, size_t *cs)
{
	uint8_t *fcol = w->sample + n * WIRE_VARINT_MAX;
	struct outs o = { .a = w->sample, .f = fcol };

	/* the two columns as the chunk has them: each compressed on its own */
	put_infos(w, ev, m, st, start, n, &o);
	if (!frees_only)
		cs[0] += zsize1(w, w->sample, (size_t)(o.a - w->sample));
	cs[1] += zsize1(w, fcol, (size_t)(o.f - fcol));
}

/* four ops a byte without their lanes, event i at bits 2 * (i % 4); returns the bytes */
static size_t pack_ops(uint8_t *p, const uint8_t *op, size_t n)
{
	size_t i = 0;

	for (; i + 4 <= n; i += 4)
		p[i / 4] = (uint8_t)((op[i] & 3) | (op[i + 1] & 3) << 2 | (op[i + 2] & 3) << 4 |
				     (op[i + 3] & 3) << 6);
	if (i < n) {
		p[i / 4] = 0;
		for (; i < n; i++)
			p[i / 4] |= (uint8_t)((op[i] & 3) << (2 * (i % 4)));
	}
	return (n + 3) / 4;
}

/*
 * AGE with lanes (REC_EVF_LANES: a free's age counted among its own
 * thread's allocs, which the threads' interleaving leaves alone): the
 * frees' column, the same whatever the allocs' mode, into *lf; and the
 * slice's ops column in its two forms, 2 bits an op (ops[0]) or a byte
 * with the lane (ops[1]). Lanes pay when the frees they save cost more
 * than the lanes' column.
 */
static void trial_lanes(struct rec_writer *w, const struct rec_evcols *ev, size_t start, size_t ns,
			struct prefix *pf, size_t *lf, size_t *ops)
{
	struct code_state st;
	struct lane_state l[REC_EV_LANES];
	size_t cs[2] = { 0, 0 };

	prime(w, ev, start, ns, REC_EV_LANES - 1, pf, &st, l);
	trial(w, ev, REC_EVM_RECENT | REC_EVF_AGE, &st, start, ns, 1, cs);
	*lf += cs[1];
	ops[0] += zsize1(w, w->sample, pack_ops(w->sample, ev->op + start, ns));
	ops[1] += zsize1(w, ev->op + start, ns);
}

#define NMODES ((REC_EVM_DELTA | REC_EVF_AGE) + 1)

/* the mode of the chunk, maybe with REC_EVF_LANES (only if has_lanes) */
static int choose_mode(struct rec_writer *w, const struct rec_evcols *ev, size_t n, size_t nd,
		       int can_rank, int has_lanes)
{
	size_t nslices = n <= REC_EV_SAMPLE ? 1 : REC_EV_SLICES;
	size_t ns = n <= REC_EV_SAMPLE ? n : REC_EV_SAMPLE / REC_EV_SLICES;
	size_t best = SIZE_MAX, need = ns * WIRE_VARINT_MAX, cs[NMODES][2] = { { 0 } };
	size_t lf = 0, ops[2] = { 0, 0 };
	struct prefix pf = { .hw = -1 };
	int mode = REC_EVM_RECENT;

	if (n <= 64)
		return can_rank ? REC_EVM_RANKED : REC_EVM_RECENT;
	if (!w->sample_cctx)
		w->sample_cctx = ZSTD_createCCtx();
	if (!w->sample_cctx || rec_grow((void **)&w->sample, &w->sample_cap, 0, 2 * need, 1) ||
	    rec_grow((void **)&w->sample_out, &w->sample_out_cap, 0, ZSTD_compressBound(need), 1))
		return can_rank ? REC_EVM_RANKED : REC_EVM_RECENT; /* no memory to try: guess */
	/*
	 * each slice compressed on its own: together, a program whose
	 * pattern repeats with the slices' spacing would look free
	 */
	for (size_t k = 0; k < nslices; k++) {
		struct code_state st;
		struct lane_state l[1];

		prime(w, ev, k * (n / nslices), ns, 0, &pf, &st, l);
		for (int m = 0; m < NMODES; m++) {
			if ((m & ~REC_EVF_AGE) > REC_EVM_DELTA ||
			    ((m & ~REC_EVF_AGE) == REC_EVM_RANKED && !can_rank))
				continue;
			trial(w, ev, m, &st, k * (n / nslices), ns, 0, cs[m]);
		}
		if (has_lanes)
			trial_lanes(w, ev, k * (n / nslices), ns, &pf, &lf, ops);
	}
	for (int m = 0; m < NMODES + REC_EVM_DELTA + 1; m++) {
		int lm = m >= NMODES ? (m - NMODES) | REC_EVF_AGE | REC_EVF_LANES : m;
		size_t cost;

		if ((lm & REC_EVF_LANES) && !has_lanes)
			break;
		if ((lm & 15) > REC_EVM_DELTA || ((lm & 15) == REC_EVM_RANKED && !can_rank))
			continue;
		if (lm & REC_EVF_LANES)
			cost = cs[lm & 15][0] + lf + ops[1];
		else
			cost = cs[lm][0] + cs[lm][1] + ops[0];
		cost = (size_t)((double)cost * n / (ns * nslices));
		if ((lm & 15) == REC_EVM_RANKED)
			cost += nd * 2; /* the table: about two bytes an entry */
		if (cost < best) {
			best = cost;
			mode = lm;
		}
	}
	return mode;
}

int rec_encode_events(struct rec_writer *w, const struct rec_evcols *ev, size_t n, uint32_t ninfos,
		      struct rec_wbuf *b)
{
	size_t nd = 0, cap;
	uint32_t maxf = 0;
	uint8_t *p;
	int can_rank, mode, ret;
	uint8_t lanes = 0; /* the ops or'ed: any lane but 0?, then REC_EVF_LANES or 0 */

	/* count uses per info (the arrays grow with the info table) */
	if (w->ev_freq_cap < ninfos) {
		cap = w->ev_freq_cap;
		ret = rec_grow((void **)&w->ev_freq, &cap, 0, ninfos, sizeof(*w->ev_freq));
		if (ret)
			return ret;
		memset(w->ev_freq + w->ev_freq_cap, 0, (cap - w->ev_freq_cap) * sizeof(*w->ev_freq));
		cap = w->ev_freq_cap;
		ret = rec_grow((void **)&w->ev_rank, &cap, 0, ninfos, sizeof(*w->ev_rank));
		if (ret)
			return ret;
		w->ev_freq_cap = cap;
	}
	ret = rec_grow((void **)&w->ev_ids, &w->ev_ids_cap, 0, n, sizeof(*w->ev_ids));
	if (ret)
		return ret;
	ret = rec_grow((void **)&w->ev_hist, &w->ev_hist_cap, 0, n, sizeof(*w->ev_hist));
	if (ret)
		return ret;
	ret = rec_grow((void **)&w->ev_lpos, &w->ev_lpos_cap, 0, n, sizeof(*w->ev_lpos));
	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++) {
		uint32_t f = ++w->ev_freq[ev->info[i]];

		lanes |= ev->op[i];
		if (f == 1)
			w->ev_ids[nd++] = ev->info[i];
		if (f > maxf)
			maxf = f;
	}
	/* a rank table can pay for itself only when infos recur */
	can_rank = nd * 4 <= n;
	if (can_rank) {
		ret = rank_by_use(w, nd, maxf);
		if (ret)
			goto out_reset;
	}
	mode = choose_mode(w, ev, n, nd, can_rank, lanes >> 2 != 0);
	lanes = mode & REC_EVF_LANES;
	mode &= ~REC_EVF_LANES;

	/* frees' codes go to a column of their own, copied after the allocs' */
	ret = rec_grow((void **)&w->ev_fcol, &w->ev_fcol_cap, 0, n * WIRE_VARINT_MAX + 1, 1);
	if (ret)
		goto out_reset;
	/* mode + table + ops + alloc column length + allocs + frees + weights */
	b->len = 0;
	ret = rec_wbuf_reserve(b, 1 + (nd + 1) * WIRE_VARINT_MAX + n + 4 +
				      n * WIRE_VARINT_MAX + ev->weights.len);
	if (ret)
		goto out_reset;
	p = b->p;
	*p++ = (uint8_t)(mode | REC_EVF_SPLIT | lanes);
	if ((mode & ~REC_EVF_AGE) == REC_EVM_RANKED) {
		p += wire_put_varint(p, nd);
		for (size_t i = 0; i < nd; i++)
			p += wire_put_varint(p, w->ev_ids[i]);
	}
	if (lanes) {
		/* a byte per op, with its lane */
		memcpy(p, ev->op, n);
		p += n;
	} else {
		p += pack_ops(p, ev->op, n);
	}
	{
		struct code_state st;
		struct lane_state l[REC_EV_LANES];
		struct outs o = { .a = p + 4, .f = w->ev_fcol };
		size_t flen;

		state_init(&st, l, ev->op, 0, n, -1, lanes ? REC_EV_LANES - 1 : 0);
		put_infos(w, ev, mode, &st, 0, n, &o);
		/* at most n varints: below 2^32 for any chunk of REC_EV_CHUNK events */
		rec_le32(p, (uint32_t)(o.a - (p + 4)));
		flen = (size_t)(o.f - w->ev_fcol);
		memcpy(o.a, w->ev_fcol, flen);
		p = o.a + flen;
	}
	if (ev->weights.len)
		memcpy(p, ev->weights.p, ev->weights.len);
	p += ev->weights.len;
	b->len = (size_t)(p - b->p);
	ret = 0;
out_reset:
	for (size_t i = 0; i < nd; i++)
		w->ev_freq[w->ev_ids[i]] = 0;
	return ret;
}

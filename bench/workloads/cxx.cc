/* bench/workloads/cxx.cc - a C++ service's churn: strings, vectors, maps, deep template stacks, threads */
/* SPDX-License-Identifier: MIT */
/*
 * cxx [N [T]]: T threads (default 6, 1 to 8) each handle N requests
 * (default 8,000). A request is dispatched through 20 to 60 levels of
 * mutually recursive class templates (Stage<0..3>::run, not inlined; the
 * small inline helpers between them vanish into their callers), chosen by
 * one of 256 request kinds, so a thread meets a few hundred distinct deep
 * paths over and over, as a server's handlers do. At the end of the path
 * the handler builds a std::map<std::string, std::vector<uint32_t>> of 3
 * to 8 keys (some short enough for the string's inline buffer, most not),
 * grows the vectors by push_back, joins the keys into a reply string and
 * erases part of the map; the reply goes to the next thread's mailbox,
 * which that thread empties (frees) every 16 requests: blocks are freed by
 * other threads than the one that allocated them.
 *
 * Every allocation of the program's C++ code goes through the operator new
 * below, whose cxx_alloc counts calls and bytes per thread (a plain
 * thread-local add) and calls malloc; at the end it prints them as check.py lines (see
 * tests/e2e/expect.h): everything is freed before the end, so nothing of
 * it leaks. Output by write(2) from a stack buffer: printing allocates
 * nothing.
 */
#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>
#include <unistd.h>

static thread_local unsigned long tl_calls, tl_bytes;
static std::atomic<unsigned long> g_calls, g_bytes;

/* cxx_alloc - operator new's work: malloc, counted (a named frame the checks can find) */
static __attribute__((noinline)) void *cxx_alloc(std::size_t n)
{
	std::size_t want = n ? n : 1;
	void *p = malloc(want);

	if (!p)
		throw std::bad_alloc();
	tl_calls++;
	tl_bytes += want;
	return p;
}

void *operator new(std::size_t n)
{
	return cxx_alloc(n);
}

__attribute__((noinline)) void operator delete(void *p) noexcept
{
	free(p);
}

__attribute__((noinline)) void operator delete(void *p, std::size_t) noexcept
{
	free(p);
}

/* add_counts - this thread's operator new calls and bytes into the totals */
static void add_counts()
{
	g_calls += tl_calls;
	g_bytes += tl_bytes;
	tl_calls = tl_bytes = 0;
}

struct mailbox {
	std::mutex lock;
	std::vector<std::string> items;
};

struct ctx {
	uint64_t seed;
	mailbox *out; /* the next thread's */
	unsigned long sum;
};

static inline uint64_t next_rand(uint64_t &s)
{
	s = s * 6364136223846793005u + 1442695040888963407u;
	return s >> 33;
}

/* a key of 4 to 41 characters: the shorter ones fit the string's inline buffer */
static inline std::string make_key(unsigned kind, unsigned i, uint64_t r)
{
	std::string k = "k" + std::to_string(kind) + "." + std::to_string(i);

	k.append(r % 32, '_');
	return k;
}

static __attribute__((noinline)) std::string handle(ctx &c, unsigned kind)
{
	std::map<std::string, std::vector<uint32_t>> m;
	unsigned nkeys = 3 + kind % 6;
	std::string reply;

	for (unsigned i = 0; i < nkeys; i++) {
		uint64_t r = next_rand(c.seed);
		std::vector<uint32_t> &v = m[make_key(kind, i, r)];
		unsigned nv = (unsigned)(r >> 8) % 24;

		for (unsigned j = 0; j < nv; j++)
			v.push_back(j * kind);
	}
	for (const auto &kv : m) {
		reply += kv.first;
		reply += ':';
		reply += std::to_string(kv.second.size());
		reply += ';';
	}
	m.erase(m.begin());
	for (const auto &kv : m)
		c.sum += kv.second.size();
	return reply;
}

template <int K> struct Stage {
	static __attribute__((noinline)) size_t run(ctx &c, unsigned kind, uint32_t path, int depth);
};

/* inlined into each Stage: a frame that does not exist at run time */
template <int K> static inline size_t next(ctx &c, unsigned kind, uint32_t path, int depth)
{
	if (depth == 0) {
		std::string r = handle(c, kind);
		size_t n = r.size();
		std::lock_guard<std::mutex> g(c.out->lock);

		c.out->items.push_back(std::move(r));
		return n;
	}
	switch (path & 3) {
	case 0:
		return Stage<0>::run(c, kind, path >> 2 | path << 30, depth - 1) + K;
	case 1:
		return Stage<1>::run(c, kind, path >> 2 | path << 30, depth - 1) ^ K;
	case 2:
		return Stage<2>::run(c, kind, path >> 2 | path << 30, depth - 1) + 2 * K;
	default:
		return Stage<3>::run(c, kind, path >> 2 | path << 30, depth - 1) - K;
	}
}

template <int K> size_t Stage<K>::run(ctx &c, unsigned kind, uint32_t path, int depth)
{
	return next<K>(c, kind, path, depth) + 1; /* work after the call: no tail call */
}

struct worker_arg {
	unsigned long requests;
	unsigned id;
	mailbox *in, *out;
	unsigned long sum;
};

/* drain - free what other threads sent here */
static void drain(mailbox *in)
{
	std::vector<std::string> got;

	{
		std::lock_guard<std::mutex> g(in->lock);
		got.swap(in->items);
	}
}

static void work(worker_arg *a)
{
	ctx c = { 0x9E3779B97F4A7C15ull * (a->id + 1), a->out, 0 };

	for (unsigned long i = 0; i < a->requests; i++) {
		unsigned kind = (unsigned)next_rand(c.seed) % 256;
		uint32_t path = kind * 2654435761u;

		c.sum += Stage<0>::run(c, kind, path, 20 + (int)(kind % 41));
		if (i % 16 == 15)
			drain(a->in);
	}
	a->sum = c.sum;
	add_counts();
}

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void out(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0 && write(1, buf, (size_t)n) < 0)
		_exit(1);
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 8000, sum = 0;
	unsigned nt = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 6;

	if (nt < 1 || nt > 8) {
		out("cxx: 1 to 8 threads\n");
		return 2;
	}
	{
		std::vector<mailbox> boxes(nt);
		std::vector<worker_arg> args(nt);
		std::vector<std::thread> th;

		for (unsigned t = 0; t < nt; t++)
			args[t] = { n, t, &boxes[t], &boxes[(t + 1) % nt], 0 };
		if (nt == 1) {
			work(&args[0]); /* single-threaded: no thread at all */
		} else {
			for (unsigned t = 0; t < nt; t++)
				th.emplace_back(work, &args[t]);
			for (auto &x : th)
				x.join();
		}
		for (unsigned t = 0; t < nt; t++) {
			drain(&boxes[t]);
			sum += args[t].sum;
		}
	}
	add_counts();
	out("cxx: %u threads x %lu requests, checksum %lu\n", nt, n, sum);
	out("site cxx_alloc calls=%lu bytes=%lu leaked=0\n", g_calls.load(), g_bytes.load());
	return 0;
}

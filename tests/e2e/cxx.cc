/* tests/e2e/cxx.cc - C++ allocations: new/delete, new[], std::vector, std::string, templates, inlining */
/* SPDX-License-Identifier: MIT */
/*
 * Target of cxx.test. Every allocation goes through libstdc++'s operator new,
 * which calls malloc, so the report's backtraces run through libstdc++ and
 * its header code before they reach the program's named functions; the test
 * finds them by demangled, qualified name (cx::..., with template
 * arguments) and checks file:line of the program's frames, and that an
 * always_inline member function of a class template shows as an inlined
 * frame of its caller.
 *
 * The numbers come from watching the containers: a new vector capacity c is
 * one allocation of c * sizeof(int) bytes and a free of the old buffer; a
 * new string capacity c is one allocation of c + 1 bytes. new int[n] has no
 * array cookie (int has no destructor).
 */
#include <cstdlib>
#include <string>
#include <vector>

#include "expect.h"

#define NOINLINE __attribute__((noinline))
#define AT(s, call) (ex_site_at(&(s), __FILE__, __LINE__), (call))
#define CALL(s, call) ((s).caller = "main", (s).caller_line = __LINE__, (call))

static struct ex_site s_newdel = EX_SITE("cx::new_delete");
static struct ex_site s_widget = EX_SITE("cx::Pool<cx::Widget>::make");
static struct ex_site s_arr_int = EX_SITE("cx::make_array<int>");
static struct ex_site s_arr_dbl = EX_SITE("cx::make_array<double>");
static struct ex_site s_vec = EX_SITE("cx::fill_vector");
static struct ex_site s_str = EX_SITE("cx::grow_string");
static struct ex_site s_inl = EX_SITE("cx::outer_inl");
static int inl_line, outer_line;

namespace cx {

struct Widget {
	long a[6];
};

/* a class template whose member function allocates */
template <typename T> struct Pool {
	T *items[4];
	int n = 0;

	NOINLINE void make()
	{
		items[n] = AT(s_widget, new T());
		ex_alloc(&s_widget, EX_MALLOC, items[n], sizeof(T));
		n++;
	}
};

/* a function template, two instantiations: two sites */
template <typename T> NOINLINE T *make_array(size_t n, struct ex_site *s)
{
	T *p = AT(*s, new T[n]);

	ex_alloc(s, EX_MALLOC, p, n * sizeof(T));
	return p;
}

/* new followed at once by delete: temporary */
NOINLINE void new_delete()
{
	for (int i = 0; i < 5; i++) {
		int *p = AT(s_newdel, new int(i));

		ex_alloc(&s_newdel, EX_MALLOC, p, sizeof(int));
		ex_free(&s_newdel, p, sizeof(int));
		delete p;
	}
}

/* push_back 100 ints; the buffer grows by libstdc++'s policy, watched here */
NOINLINE std::vector<int> *fill_vector()
{
	std::vector<int> *v = new std::vector<int>;

	/* the vector object itself: one allocation from here too */
	ex_site_at(&s_vec, __FILE__, 0);
	ex_alloc(&s_vec, EX_MALLOC, v, sizeof(*v));
	for (int i = 0; i < 100; i++) {
		int *old = v->data();
		size_t oldcap = v->capacity();

		v->push_back(i);
		if (v->capacity() != oldcap) {
			ex_alloc(&s_vec, EX_MALLOC, v->data(), v->capacity() * sizeof(int));
			ex_free(&s_vec, old, oldcap * sizeof(int));
		}
	}
	return v;
}

/* a string past the small-string buffer, appended to until it grew twice */
NOINLINE std::string *grow_string()
{
	std::string *s = new std::string;

	ex_alloc(&s_str, EX_MALLOC, s, sizeof(*s));
	for (int i = 0; i < 60; i++) {
		const char *old = s->data();
		size_t oldcap = s->capacity();
		bool was_heap = oldcap > 15;

		s->append("abcdefgh", 8);
		if (s->capacity() != oldcap) {
			ex_alloc(&s_str, EX_MALLOC, s->data(), s->capacity() + 1);
			if (was_heap)
				ex_free(&s_str, (void *)old, oldcap + 1);
		}
	}
	return s;
}

/*
 * A member of a class template, inlined into outer_inl even at -O0. (Not a
 * static function: gcc gives those no linkage name, and their DWARF name
 * has no namespace in it.)
 */
template <typename T> struct Box {
	__attribute__((always_inline)) inline T *alloc(size_t n)
	{
		inl_line = __LINE__ + 1;
		return new T[n];
	}
};

NOINLINE char *outer_inl()
{
	Box<char> box;
	char *p;

	outer_line = __LINE__ + 1;
	p = box.alloc(333);
	ex_alloc(&s_inl, EX_MALLOC, p, 333);
	return p;
}

} /* namespace cx */

int main()
{
	cx::Pool<cx::Widget> pool;
	int *ai;
	double *ad;
	std::vector<int> *v;
	std::string *s;

	CALL(s_newdel, cx::new_delete());
	for (int i = 0; i < 3; i++)
		pool.make();
	ai = CALL(s_arr_int, cx::make_array<int>(50, &s_arr_int));
	ad = CALL(s_arr_dbl, cx::make_array<double>(30, &s_arr_dbl));
	v = CALL(s_vec, cx::fill_vector());
	s = CALL(s_str, cx::grow_string());
	CALL(s_inl, cx::outer_inl());

	/* free some: the array of ints, the vector (buffer and object) */
	ex_free(&s_arr_int, ai, 50 * sizeof(int));
	delete[] ai;
	ex_free(&s_vec, v->data(), v->capacity() * sizeof(int));
	ex_free(&s_vec, v, sizeof(*v));
	delete v;
	(void)ad;
	(void)s;

	ex_print();
	ex_printf("frame cx::Box<char>::alloc file=%s line=%d inlined=1 outer=cx::outer_inl\n", __FILE__,
		  inl_line);
	ex_printf("frame cx::outer_inl file=%s line=%d inlined=0\n", __FILE__, outer_line);
	return 0;
}

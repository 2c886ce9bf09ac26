/* inject/poke.c - rewrite one GOT word, with RELRO pages made writable only around the store */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target. The store is one aligned 8-byte compare-and-swap
 * (lock cmpxchg): a thread calling through the slot sees either the old or
 * the new function, never a torn pointer, and a word that changed since we
 * read it (the lazy binder resolving it at that moment, someone else
 * patching) is not overwritten. A read-only page (PT_GNU_RELRO after
 * relocation) is writable for the few instructions between the two
 * mprotect calls and then gets exactly its previous protection back.
 */
#include <errno.h>
#include <sys/mman.h>

#include "inject/internal.h"

int inj_poke(uintptr_t addr, uintptr_t expect, uintptr_t val, int prot)
{
	uintptr_t page = addr & ~((uintptr_t)inj_g.page - 1);
	bool ro = !(prot & PROT_WRITE);
	int ret = 0;

	if (addr % sizeof(uintptr_t))
		return -EINVAL;
	if (ro && mprotect((void *)page, (size_t)inj_g.page, prot | PROT_WRITE) < 0)
		return -errno;
	if (!__atomic_compare_exchange_n((uintptr_t *)addr, &expect, val, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		ret = -EAGAIN;
	/*
	 * Putting back a protection the page had a moment ago does not fail in
	 * practice; if it did, the page stays writable, which the program does
	 * not notice. Counted, not reported as "not written".
	 */
	if (ro && mprotect((void *)page, (size_t)inj_g.page, prot) < 0)
		inj_g.st.failed++;
	return ret;
}

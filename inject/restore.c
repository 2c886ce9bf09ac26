/* inject/restore.c - put every rewritten slot back: at session end and in a forked child */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target.
 *
 * End of session (inj_before_end, track's before_end callback, called once
 * from the thread that ends the session: the timer thread on STOP or EOF,
 * or a trk_stop caller; neither holds the loader's lock): under the lock,
 * walk the modules with dl_iterate_phdr so none can be unmapped meanwhile,
 * and in each module we patched put the saved value back into every word
 * that still holds our hook (compare-and-swap from the hook, so a word
 * someone else rewrote since is left to them and counted as left). Pages
 * get the protection /proc/self/maps shows now (read-only RELRO goes back
 * to read-only). The tables are emptied and the library's thread stops.
 *
 * Fork: the prepare handler takes the lock, so the child gets consistent
 * tables and no half-done write. The child has one thread; it must not
 * take the loader's lock (another parent thread may have held it at fork
 * and will never release it here), so it restores from the tables alone
 * and reads each word first with process_vm_readv: a module unloaded since
 * the last pass gives EFAULT instead of a crash. Then track is told
 * (trk_after_fork_child): the child records nothing and drops the socket.
 */
#include <errno.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "inject/internal.h"

struct restore {
	uint64_t restored, left;
};

/* put_back - restore slot s whose page currently has protection prot. */
static void put_back(const struct inj_slot *s, int prot, struct restore *r)
{
	uintptr_t hook = inj_g.hookv[s->want];
	uintptr_t v = __atomic_load_n((uintptr_t *)s->addr, __ATOMIC_ACQUIRE);

	if (v != hook || inj_poke(s->addr, hook, s->saved, prot) < 0)
		r->left++;
	else
		r->restored++;
}

static int restore_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct restore *r = data;

	(void)size;
	for (size_t i = 0; i < inj_g.nmods; i++) {
		const struct inj_mod *m = &inj_g.mods[i];

		if (m->bias != info->dlpi_addr || m->phdr != info->dlpi_phdr)
			continue;
		for (size_t k = 0; k < inj_g.nslots; k++) {
			const struct inj_slot *s = &inj_g.slots[k];
			int prot;

			if (s->mod != i)
				continue;
			prot = inj_maps_prot(s->addr);
			put_back(s, prot >= 0 ? prot : s->prot, r);
		}
		break;
	}
	return 0;
}

static void clear_tables(void)
{
	inj_g.nmods = 0;
	inj_g.nslots = 0;
	inj_g.any_pending = false;
}

void inj_before_end(void *arg, uint64_t *restored, uint64_t *left)
{
	struct restore r = {0, 0};

	(void)arg;
	pthread_mutex_lock(&inj_g.lock);
	inj_g.closing = 1;
	if (inj_maps_read() < 0)
		inj_g.nranges = 0; /* every page then gets its recorded protection */
	dl_iterate_phdr(restore_cb, &r);
	inj_g.st.restored += r.restored;
	inj_g.st.left += r.left;
	clear_tables();
	pthread_cond_broadcast(&inj_g.wake);
	pthread_mutex_unlock(&inj_g.lock);
	*restored = r.restored;
	*left = r.left;
}

void inj_fork_prepare(void)
{
	pthread_mutex_lock(&inj_g.lock);
}

void inj_fork_parent(void)
{
	pthread_mutex_unlock(&inj_g.lock);
}

/*
 * readable_word - the word at addr, or false when its page is not mapped.
 * process_vm_readv reads through the kernel (EFAULT, no fault); where a
 * seccomp policy forbids it, mincore still tells whether the page is mapped.
 */
static bool readable_word(uintptr_t addr, uintptr_t *v)
{
	struct iovec local = {.iov_base = v, .iov_len = sizeof(*v)};
	struct iovec remote = {.iov_base = (void *)addr, .iov_len = sizeof(*v)};
	unsigned char vec;

	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof(*v))
		return true;
	if (errno == EFAULT)
		return false;
	if (mincore((void *)(addr & ~((uintptr_t)inj_g.page - 1)), 1, &vec) < 0)
		return false;
	*v = __atomic_load_n((uintptr_t *)addr, __ATOMIC_ACQUIRE);
	return true;
}

void inj_fork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
	int saved_errno = errno;

	for (size_t k = 0; k < inj_g.nslots; k++) {
		const struct inj_slot *s = &inj_g.slots[k];
		uintptr_t v;

		if (!readable_word(s->addr, &v) || v != inj_g.hookv[s->want])
			continue;
		(void)inj_poke(s->addr, v, s->saved, s->prot);
	}
	clear_tables();
	inj_g.closing = 1;
	/* the library's thread does not exist here: a start call may begin anew */
	atomic_store(&inj_g.detach_req, 0);
	atomic_store(&inj_g.run, INJ_IDLE);
	inj_g.lock = fresh;
	inj_g.wake = fresh_cond;
	trk_after_fork_child();
	errno = saved_errno;
}

/* pyframes/read.c - fault-safe reads of the interpreter's memory and the reader's own memory */
/* SPDX-License-Identifier: MIT */
/*
 * Memory the reader cannot vouch for (a code object seen for the first
 * time, its names and line table, a frame outside the thread's frame
 * stack) is read with process_vm_readv on the process itself: the kernel
 * copies what is mapped and says EFAULT for the rest, so a stale or wrong
 * pointer never faults the target. The reader's own tables live in one
 * MAP_NORESERVE mapping made at start and handed out by an atomic bump
 * pointer: no malloc, no lock, from any thread inside a hook.
 */
#include <errno.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "pyframes/internal.h"

#define ARENA_SIZE (256ul << 20) /* address space only: pages are touched as used */

static uint8_t *arena;
static _Atomic size_t arena_used;

int pyf_read(void *dst, uintptr_t src, size_t len)
{
	struct iovec l = { .iov_base = dst, .iov_len = len };
	struct iovec r = { .iov_base = (void *)src, .iov_len = len };
	int e = errno;
	ssize_t n;

	if (!len)
		return 0;
	if (src < 4096 || src > (1ull << 47) || len > (1ull << 47) - src)
		return -EFAULT;
	n = process_vm_readv(pyf_g.pid, &l, 1, &r, 1, 0);
	if (n < 0 && (errno == EPERM || errno == ENOSYS)) {
		n = -errno; /* a seccomp filter, or a kernel without the call */
		errno = e;
		return (int)n;
	}
	errno = e;
	return n == (ssize_t)len ? 0 : -EFAULT;
}

int pyf_arena_init(void)
{
	void *p;

	if (arena)
		return 0;
	p = mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	arena = p;
	return 0;
}

void *pyf_arena_alloc(size_t len)
{
	size_t at;

	len = (len + 7) & ~(size_t)7;
	if (!arena || len > ARENA_SIZE)
		return NULL;
	at = atomic_fetch_add_explicit(&arena_used, len, memory_order_relaxed);
	if (at > ARENA_SIZE - len) {
		atomic_fetch_sub_explicit(&arena_used, len, memory_order_relaxed);
		return NULL;
	}
	return arena + at;
}

/* put_utf8 - code point c as UTF-8 at out + n if it fits in cap; the new n, or n when full. */
static size_t put_utf8(char *out, size_t n, size_t cap, uint32_t c)
{
	uint8_t b[4];
	size_t k;

	if (c >= 0xd800 && (c < 0xe000 || c > 0x10ffff))
		c = 0xfffd; /* a lone surrogate or junk: the replacement character */
	if (c < 0x80) {
		b[0] = (uint8_t)c;
		k = 1;
	} else if (c < 0x800) {
		b[0] = (uint8_t)(0xc0 | c >> 6);
		b[1] = (uint8_t)(0x80 | (c & 63));
		k = 2;
	} else if (c < 0x10000) {
		b[0] = (uint8_t)(0xe0 | c >> 12);
		b[1] = (uint8_t)(0x80 | ((c >> 6) & 63));
		b[2] = (uint8_t)(0x80 | (c & 63));
		k = 3;
	} else {
		b[0] = (uint8_t)(0xf0 | c >> 18);
		b[1] = (uint8_t)(0x80 | ((c >> 12) & 63));
		b[2] = (uint8_t)(0x80 | ((c >> 6) & 63));
		b[3] = (uint8_t)(0x80 | (c & 63));
		k = 4;
	}
	if (k > cap - n)
		return n;
	memcpy(out + n, b, k);
	return n + k;
}

int pyf_unicode(uintptr_t obj, char *out, size_t cap)
{
	const struct pyf_layout *L = pyf_g.L;
	uint8_t head[256], chunk[1024];
	uint32_t state, kind;
	int64_t length;
	uintptr_t data;
	size_t n = 0, i = 0;

	if (!pyf_ptr_ok(obj) || L->u_compact_size > sizeof(head) ||
	    pyf_read(head, obj, L->u_compact_size) < 0)
		return -EFAULT;
	memcpy(&state, head + L->u_state, sizeof(state));
	memcpy(&length, head + L->u_length, sizeof(length));
	kind = (state & L->st_kind_mask) >> L->st_kind_shift;
	if (!(state & L->st_compact_bit) || (L->st_ready_bit && !(state & L->st_ready_bit)) ||
	    length < 0 || (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL; /* a legacy (non-compact) string: not a code object's name */
	if (state & L->st_ascii_bit) {
		n = (size_t)length < cap ? (size_t)length : cap;
		return pyf_read(out, obj + L->u_ascii_size, n) < 0 ? -EFAULT : (int)n;
	}
	data = obj + L->u_compact_size;
	while (i < (size_t)length && n < cap) {
		size_t take = ((size_t)length - i) * kind, k;

		if (take > sizeof(chunk))
			take = sizeof(chunk);
		if (pyf_read(chunk, data + i * kind, take) < 0)
			return -EFAULT;
		for (k = 0; k + kind <= take; k += kind) {
			uint32_t c = kind == 1 ? chunk[k] : kind == 2 ? (uint32_t)(chunk[k] | chunk[k + 1] << 8)
					: (uint32_t)chunk[k] | (uint32_t)chunk[k + 1] << 8 |
					  (uint32_t)chunk[k + 2] << 16 | (uint32_t)chunk[k + 3] << 24;
			size_t m = put_utf8(out, n, cap, c);

			if (m == n)
				return (int)n; /* full */
			n = m;
		}
		i += take / kind;
	}
	return (int)n;
}

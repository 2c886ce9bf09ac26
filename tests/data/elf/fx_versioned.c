/* tests/data/elf/fx_versioned.c - needs fx_old@GLIBC_2.2.5 and fx_new@GLIBC_2.34 from "libc.so.6" */
/* SPDX-License-Identifier: MIT */
int fx_old(void);
int fx_new(void);
int fx_both(void);

int fx_both(void)
{
	return fx_old() + fx_new();
}

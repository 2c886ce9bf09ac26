/* tests/data/elf/fx_fakelibc.c - a "libc.so.6" defining versions, for elfr_file_version_missing */
/* SPDX-License-Identifier: MIT */
int fx_old(void);
int fx_new(void);

int fx_old(void)
{
	return 1;
}

#ifdef FX_NEW
int fx_new(void)
{
	return 2;
}
#endif

/* tests/attach/static_victim.c - statically linked target: attach must refuse it */
/* SPDX-License-Identifier: MIT */
#include <unistd.h>

int main(void)
{
	char c;

	(void)!write(1, "ready\n", 6);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

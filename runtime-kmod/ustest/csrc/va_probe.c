// SPDX-License-Identifier: GPL-2.0
/*
 * FGFT_VA_MAP in user space: pointers among the unnamed arguments are
 * probed (arrays decay), other arguments pass unchanged and each argument
 * is evaluated once (bit-fields, const members, doubles, no arguments).
 * Exit status 0 when exactly the two pointer arguments were probed.
 */
#include <stdio.h>

struct fgft_txn;
static int probes;

static struct fgft_txn *fgft_current(void)
{
	return NULL;
}

static void *fgft_kobj(struct fgft_txn *t, const void *p)
{
	(void)t;
	probes++;
	return (void *)p;
}

#include "fgft/va.h"

struct sample {
	unsigned int bit:1;
	char name[4];
	const int c;
};

#define my_printf(fmt, ...) printf(fmt FGFT_VA_MAP(__VA_ARGS__))

int main(void)
{
	struct sample v = { 1, "ab", 3 };
	double d = 1.5;
	int i = 0;

	my_printf("none\n");
	my_printf("%u %s %d %f %p %d\n", v.bit, v.name, v.c, d, (void *)&v, i++);
	printf("probes=%d i=%d\n", probes, i);
	return probes != 2 || i != 1;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The functions whose join points the hook-cost benchmark times.  The same
 * file builds in the kernel and, with the user-space shim, in user space.
 */
#ifndef FGFT_BENCH_TARGET_H
#define FGFT_BENCH_TARGET_H

#include <linux/compiler.h>
#include <linux/types.h>

struct fgft_bench_obj {
	unsigned long sum;
	unsigned long hits;
};

extern unsigned long fgft_bench_advice_hits;

void fgft_bench_access(struct fgft_bench_obj *o, unsigned long v);
void fgft_bench_count(struct fgft_bench_obj *o);

#endif /* FGFT_BENCH_TARGET_H */

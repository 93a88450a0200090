// SPDX-License-Identifier: GPL-2.0
/*
 * One member write per call: the join point the benchmark times.
 */
#include "bench_target.h"

unsigned long fgft_bench_advice_hits;

noinline void fgft_bench_access(struct fgft_bench_obj *o, unsigned long v)
{
	o->sum += v;
}

noinline void fgft_bench_count(struct fgft_bench_obj *o)
{
	o->hits++;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Memory and preemption hooks of fgft_compat.h for the kernel: the data
 * structures allocate through these so every allocation is counted
 * (debugfs mem_live, fgft_stats_read()) and uses GFP_ATOMIC where the
 * context cannot sleep (interrupts, spinlocks, RCU readers).
 */
#include <linux/slab.h>
#include <linux/sched.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>

#include "fgft_internal.h"

atomic_long_t fgft_mem_live = ATOMIC_LONG_INIT(0);

static bool fgft_may_sleep(void)
{
	return preemptible() && !rcu_preempt_depth();
}

static gfp_t fgft_gfp(void)
{
	return fgft_may_sleep() ? GFP_KERNEL : GFP_ATOMIC | __GFP_NOWARN;
}

void *fgft_mem_zalloc(size_t size)
{
	void *p = kzalloc(size, fgft_gfp());

	if (p)
		atomic_long_inc(&fgft_mem_live);
	return p;
}

void *fgft_mem_realloc(void *p, size_t size)
{
	void *q = krealloc(p, size, fgft_gfp());

	if (q && !p)
		atomic_long_inc(&fgft_mem_live);
	return q;
}

void fgft_mem_free(void *p)
{
	if (!p)
		return;
	kfree(p);
	atomic_long_dec(&fgft_mem_live);
}

void fgft_preempt_point(void)
{
	if (fgft_may_sleep())
		cond_resched();
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Times fgft_bench_access() at module load and prints one line per variant:
 *   FGFT-MARK bench variant=V ns_per_call=X iters=N
 * The plain build (not woven) also times a kprobe with an empty handler on
 * the function's entry and one inside it.  The woven build times the hook
 * switched off and switched on with empty advice, and checks the switches
 * with a counting advice.
 */
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/preempt.h>

#include "bench_target.h"

static unsigned long iters = 2000000;
module_param(iters, ulong, 0444);
MODULE_PARM_DESC(iters, "calls per timed run");

static u64 best_ns(void)
{
	struct fgft_bench_obj o = { 0 };
	u64 best = U64_MAX;
	unsigned long i;
	int round;

	for (round = 0; round < 5; round++) {
		u64 t0, t1;

		preempt_disable();
		t0 = ktime_get_ns();
		for (i = 0; i < iters; i++)
			fgft_bench_access(&o, i);
		t1 = ktime_get_ns();
		preempt_enable();
		best = min(best, t1 - t0);
		cond_resched();
	}
	return best;
}

static void report(const char *variant, u64 ns)
{
	u64 milli = div64_u64(ns * 1000, iters);

	pr_info("FGFT-MARK bench variant=%s ns_per_call=%llu.%03llu iters=%lu\n",
		variant, milli / 1000, milli % 1000, iters);
}

static int __maybe_unused fgft_bench_pre(struct kprobe *p, struct pt_regs *regs)
{
	return 0;
}

static void __maybe_unused bench_kprobes(void)
{
	struct kprobe kp = {
		.symbol_name = "fgft_bench_access",
		.pre_handler = fgft_bench_pre,
	};
	unsigned int off;

	if (register_kprobe(&kp) == 0) {
		report("kprobe-entry", best_ns());
		unregister_kprobe(&kp);
	}
	/* A probe inside the function (int3, or a jump once optimized). */
	for (off = 5; off < 32; off++) {
		struct kprobe in = {
			.symbol_name = "fgft_bench_access",
			.offset = off,
			.pre_handler = fgft_bench_pre,
		};

		if (register_kprobe(&in) == 0) {
			msleep(200);
			report("kprobe-inside", best_ns());
			unregister_kprobe(&in);
			break;
		}
	}
}

static int __init fgft_bench_init(void)
{
#ifdef FGFT_ASPECT_BENCH_H
	struct fgft_bench_obj o = { 0 };
	unsigned long before;

	report("disabled", best_ns());
	static_branch_enable(&fgft_aspect_bench_empty_key);
	report("enabled-empty", best_ns());
	static_branch_disable(&fgft_aspect_bench_empty_key);
	before = fgft_bench_advice_hits;
	fgft_bench_count(&o);
	static_branch_enable(&fgft_aspect_bench_count_key);
	fgft_bench_count(&o);
	fgft_bench_count(&o);
	static_branch_disable(&fgft_aspect_bench_count_key);
	fgft_bench_count(&o);
	pr_info("FGFT-MARK bench-switch advice_hits=%lu calls=%lu\n",
		fgft_bench_advice_hits - before, o.hits);
#else
	report("plain", best_ns());
	bench_kprobes();
#endif
	return 0;
}

static void __exit fgft_bench_exit(void)
{
}

module_init(fgft_bench_init);
module_exit(fgft_bench_exit);

MODULE_DESCRIPTION("fgft aspect hook-cost benchmark");
MODULE_LICENSE("GPL");

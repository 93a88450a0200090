// SPDX-License-Identifier: GPL-2.0
/*
 * The user-space hook-cost benchmark: the same woven bench_target.c and
 * generated fgft_aspect_bench.c as the kernel module, on the static-key
 * shim, against the original bench_target.c (symbols prefixed plain_).
 *
 *   bench-user [CALLS_PER_BATCH]
 *
 * Prints FGFT-MARK bench variant=plain|disabled|enabled-empty
 *  ns_per_call=X iters=N (the best of 3000 interleaved batches), and FGFT-MARK bench-switch advice_hits=H calls=C
 * (the counting advice switched on for 2 of 4 calls: H must be 2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_target.h"
#include "fgft_aspect_bench.h"

void plain_fgft_bench_access(struct fgft_bench_obj *o, unsigned long v);

static unsigned long iters = 10000;

typedef void (*bench_fn)(struct fgft_bench_obj *, unsigned long);

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double once(bench_fn fn)
{
	struct fgft_bench_obj o = { 0 };
	double t0 = now_ns();
	unsigned long i;

	for (i = 0; i < iters; i++)
		fn(&o, i);
	return (now_ns() - t0) / iters;
}

static void report(const char *variant, double ns)
{
	printf("FGFT-MARK bench variant=%s ns_per_call=%.3f iters=%lu\n", variant, ns, iters);
}

static double min2(double a, double b)
{
	return a < b ? a : b;
}

/*
 * Short batches of the three variants, interleaved (the machine is shared):
 * the best batch of each is its cost, free of preemption and interrupts.
 */
static void measure(int batches)
{
	double plain = 1e300, off = 1e300, on = 1e300;
	int r;

	for (r = 0; r < batches; r++) {
		plain = min2(plain, once(plain_fgft_bench_access));
		off = min2(off, once(fgft_bench_access));
	}
	static_branch_enable(&fgft_aspect_bench_empty_key);
	for (r = 0; r < batches; r++) {
		plain = min2(plain, once(plain_fgft_bench_access));
		on = min2(on, once(fgft_bench_access));
	}
	static_branch_disable(&fgft_aspect_bench_empty_key);
	report("plain", plain);
	report("disabled", off);
	report("enabled-empty", on);
}

int main(int argc, char **argv)
{
	struct fgft_bench_obj o = { 0 };
	unsigned long before;

	if (argc > 1)
		iters = strtoul(argv[1], NULL, 10);
	measure(3000);

	before = fgft_bench_advice_hits;
	fgft_bench_count(&o);
	static_branch_enable(&fgft_aspect_bench_count_key);
	fgft_bench_count(&o);
	fgft_bench_count(&o);
	static_branch_disable(&fgft_aspect_bench_count_key);
	fgft_bench_count(&o);
	printf("FGFT-MARK bench-switch advice_hits=%lu calls=%lu\n",
	       fgft_bench_advice_hits - before, o.hits);
	return 0;
}

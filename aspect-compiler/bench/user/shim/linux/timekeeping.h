/* SPDX-License-Identifier: GPL-2.0 */
/* User-space shim: the clock. */
#ifndef FGFT_SHIM_TIMEKEEPING_H
#define FGFT_SHIM_TIMEKEEPING_H
#include <time.h>
#include <linux/types.h>
static inline u64 ktime_get_mono_fast_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}
#endif

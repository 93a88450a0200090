/* SPDX-License-Identifier: GPL-2.0 */
/* User-space shim: atomics and barriers. */
#ifndef FGFT_SHIM_ATOMIC_H
#define FGFT_SHIM_ATOMIC_H
typedef struct {
	int counter;
} atomic_t;
#define ATOMIC_INIT(i) { (i) }
#define atomic_inc_return(v) __atomic_add_fetch(&(v)->counter, 1, __ATOMIC_SEQ_CST)
#define atomic_read(v) __atomic_load_n(&(v)->counter, __ATOMIC_RELAXED)
#define atomic_set(v, i) __atomic_store_n(&(v)->counter, (i), __ATOMIC_RELAXED)
#define smp_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#define smp_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#endif

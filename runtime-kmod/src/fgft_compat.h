/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Lets the runtime's data structures (interval index, range table, object
 * tracker, undo log) build both inside fgft_rt.ko and in user space, where
 * the fgft-rt-ustest crate runs unit and property tests on the same files.
 *
 * The data-structure files include only this header.  Memory comes from
 * fgft_mem_*(), provided by mem.c in the kernel and by the test shim in user
 * space; fgft_preempt_point() is called between bounded steps of long
 * operations (cond_resched() where the context allows it).
 */
#ifndef _FGFT_COMPAT_H
#define _FGFT_COMPAT_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/string.h>
#include <linux/compiler.h>
#else
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

#ifndef likely
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#endif
#ifndef __always_inline
#define __always_inline	inline
#endif
#endif /* __KERNEL__ */

/* Access rights, identical to FGFT_R / FGFT_W of <fgft/runtime.h>. */
#define FGFT_DS_R	0x1u
#define FGFT_DS_W	0x2u
#define FGFT_DS_RW	(FGFT_DS_R | FGFT_DS_W)
/*
 * With R or W: memory used in place whose stores are not logged for undo
 * (DMA rings and buffers: the device checkpoint's job), FGFT_NOLOG.
 */
#define FGFT_DS_NOLOG	0x4u

/*
 * Zeroed allocation; may sleep only when the calling context allows it (the
 * kernel implementation picks GFP_KERNEL or GFP_ATOMIC itself).
 */
void *fgft_mem_zalloc(size_t size);
/* Resizes @p (NULL allocates); the grown tail is not zeroed. */
void *fgft_mem_realloc(void *p, size_t size);
void fgft_mem_free(void *p);
/* A preemption point between bounded steps of a long operation. */
void fgft_preempt_point(void);

#endif /* _FGFT_COMPAT_H */

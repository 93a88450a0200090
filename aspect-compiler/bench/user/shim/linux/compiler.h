/* SPDX-License-Identifier: GPL-2.0 */
/* User-space shim: compiler attributes and once-accessors. */
#ifndef FGFT_SHIM_COMPILER_H
#define FGFT_SHIM_COMPILER_H
#define noinline __attribute__((__noinline__))
#ifndef __always_inline
#define __always_inline inline __attribute__((__always_inline__))
#endif
#define __maybe_unused __attribute__((__unused__))
#define __user
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#define barrier() __asm__ __volatile__("" : : : "memory")
#endif

/* SPDX-License-Identifier: GPL-2.0 */
/* User-space shim: the kernel types the generated aspect C uses. */
#ifndef FGFT_SHIM_TYPES_H
#define FGFT_SHIM_TYPES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef unsigned long long u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef long long s64;
typedef uint16_t __be16;
#endif

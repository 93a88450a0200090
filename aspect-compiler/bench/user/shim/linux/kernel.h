/* SPDX-License-Identifier: GPL-2.0 */
/* User-space shim: kernel.h odds and ends. */
#ifndef FGFT_SHIM_KERNEL_H
#define FGFT_SHIM_KERNEL_H
#include <stdio.h>
#include <linux/compiler.h>
#include <linux/types.h>
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define _RET_IP_ ((unsigned long)__builtin_return_address(0))
#define pr_info(...) printf(__VA_ARGS__)
#endif

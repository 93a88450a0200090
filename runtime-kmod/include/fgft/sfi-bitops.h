/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fgft: force-included (-include) first in every SFI unit.  The kernel's
 * bitops and atomics are inline assembly that the sanitizer does not see;
 * they announce their accesses through linux/instrumented.h, whose KASAN
 * hooks are empty in a kernel built without KASAN.  Its KCSAN hook,
 * kcsan_check_access(), is empty too, but it says what the access is:
 * routed to the runtime (fgft_kcsan_check()), a bitop's or an atomic's
 * access is range-checked like any other, so a wild set_bit() fails the
 * body.  It is not logged: the bitops whose effect an abort must undo
 * (an allocation bitmap's __test_and_set_bit_le()) are wrapped kernel
 * calls with their own undo in compensations.toml.
 */
#ifndef _FGFT_SFI_BITOPS_H
#define _FGFT_SFI_BITOPS_H

#include <linux/kcsan-checks.h>

void fgft_kcsan_check(unsigned long addr, size_t size, int type);

/* After the kernel's own (empty) definition: its uses call the runtime. */
#define kcsan_check_access(ptr, size, type) \
	fgft_kcsan_check((unsigned long)(ptr), size, type)

#endif /* _FGFT_SFI_BITOPS_H */

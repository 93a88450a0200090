/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of the compiler-sanitizer call-backs fgft_rt.ko provides to
 * SFI modules (see <fgft/runtime.h>).  The compiler calls them by name; no
 * module includes this header.
 */
#ifndef _FGFT_ASAN_H
#define _FGFT_ASAN_H

#include <linux/types.h>

/*
 * A load of up to 8 bytes: the compiler passes @addr only; the inline
 * check that replaces the call (include/fgft/sfi-as.sh) adds its site's
 * number.
 */
#define FGFT_ASAN_DECL(n)						\
	void __asan_load##n##_noabort(unsigned long addr,		\
				      unsigned long site);		\
	void __asan_store##n##_noabort(unsigned long addr)

FGFT_ASAN_DECL(1);
FGFT_ASAN_DECL(2);
FGFT_ASAN_DECL(4);
FGFT_ASAN_DECL(8);
void __asan_load16_noabort(unsigned long addr);
void __asan_store16_noabort(unsigned long addr);

void __asan_loadN_noabort(unsigned long addr, size_t size);
void __asan_storeN_noabort(unsigned long addr, size_t size);
void __asan_handle_no_return(void);
void __asan_alloca_poison(unsigned long addr, size_t size);
void __asan_allocas_unpoison(void *stack_top, void *stack_bottom);
void __asan_register_globals(void *globals, size_t n);
void __asan_unregister_globals(void *globals, size_t n);
void *__asan_memcpy(void *dst, const void *src, size_t len);
void *__asan_memmove(void *dst, const void *src, size_t len);
void *__asan_memset(void *dst, int c, size_t len);
void *__hwasan_memcpy(void *dst, const void *src, size_t len);
void *__hwasan_memmove(void *dst, const void *src, size_t len);
void *__hwasan_memset(void *dst, int c, size_t len);
/* The instrumented bitops' and atomics' hook (include/fgft/sfi-bitops.h). */
void fgft_kcsan_check(unsigned long addr, size_t size, int type);

#endif /* _FGFT_ASAN_H */

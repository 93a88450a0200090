/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fgft runtime: probing the unnamed arguments of variadic kernel calls that
 * SFI code makes.  Generated SFI headers wrap each variadic kernel function
 * the closure calls as
 *
 *	#define f(named, ...) f(checked(named) FGFT_VA_MAP(__VA_ARGS__))
 *
 * The argument-counting macros below are the usual preprocessor idiom (a
 * leading comma per argument, unused placeholder parameters), which is why
 * scripts/checkpatch.sh lets COMPLEX_MACRO, SPACING and MACRO_ARG_UNUSED pass
 * for this file only.
 */
#ifndef _FGFT_VA_H
#define _FGFT_VA_H

/*
 * The unnamed arguments of a variadic kernel call (the %s and %p
 * arguments of a printk-style function) are probed like named kernel-object
 * arguments when they are pointers; other arguments pass unchanged (`0 ? x :
 * x` evaluates x once and makes arrays, bit-fields and const values plain
 * rvalues).  FGFT_VA_MAP(...) turns up to 24 arguments into ", FGFT_VA_ARG(a)"
 * each, so a generated call reads f(named FGFT_VA_MAP(__VA_ARGS__)).
 */
#define FGFT_VA_ARG(x) ({						\
	__auto_type __fgft_va = 0 ? (x) : (x);				\
	if (__builtin_classify_type(__fgft_va) == 5 /* pointer */)	\
		fgft_kobj(fgft_current(),				\
			  (const void *)(unsigned long)__fgft_va);	\
	__fgft_va;							\
})
#define FGFT_VA_NTH(_0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12,	\
		    _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, _23,	\
		    _24, n, ...) n
#define FGFT_VA_COUNT(...) FGFT_VA_NTH(_, ##__VA_ARGS__, 24, 23, 22, 21, 20,	\
				       19, 18, 17, 16, 15, 14, 13, 12, 11, 10,	\
				       9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define FGFT_VA_CAT_(a, b) a##b
#define FGFT_VA_CAT(a, b) FGFT_VA_CAT_(a, b)
#define FGFT_VA_MAP(...)							\
	FGFT_VA_CAT(FGFT_VA_, FGFT_VA_COUNT(__VA_ARGS__))(__VA_ARGS__)
#define FGFT_VA_0()
#define FGFT_VA_1(x) , FGFT_VA_ARG(x)
#define FGFT_VA_2(x, ...) , FGFT_VA_ARG(x) FGFT_VA_1(__VA_ARGS__)
#define FGFT_VA_3(x, ...) , FGFT_VA_ARG(x) FGFT_VA_2(__VA_ARGS__)
#define FGFT_VA_4(x, ...) , FGFT_VA_ARG(x) FGFT_VA_3(__VA_ARGS__)
#define FGFT_VA_5(x, ...) , FGFT_VA_ARG(x) FGFT_VA_4(__VA_ARGS__)
#define FGFT_VA_6(x, ...) , FGFT_VA_ARG(x) FGFT_VA_5(__VA_ARGS__)
#define FGFT_VA_7(x, ...) , FGFT_VA_ARG(x) FGFT_VA_6(__VA_ARGS__)
#define FGFT_VA_8(x, ...) , FGFT_VA_ARG(x) FGFT_VA_7(__VA_ARGS__)
#define FGFT_VA_9(x, ...) , FGFT_VA_ARG(x) FGFT_VA_8(__VA_ARGS__)
#define FGFT_VA_10(x, ...) , FGFT_VA_ARG(x) FGFT_VA_9(__VA_ARGS__)
#define FGFT_VA_11(x, ...) , FGFT_VA_ARG(x) FGFT_VA_10(__VA_ARGS__)
#define FGFT_VA_12(x, ...) , FGFT_VA_ARG(x) FGFT_VA_11(__VA_ARGS__)
#define FGFT_VA_13(x, ...) , FGFT_VA_ARG(x) FGFT_VA_12(__VA_ARGS__)
#define FGFT_VA_14(x, ...) , FGFT_VA_ARG(x) FGFT_VA_13(__VA_ARGS__)
#define FGFT_VA_15(x, ...) , FGFT_VA_ARG(x) FGFT_VA_14(__VA_ARGS__)
#define FGFT_VA_16(x, ...) , FGFT_VA_ARG(x) FGFT_VA_15(__VA_ARGS__)
#define FGFT_VA_17(x, ...) , FGFT_VA_ARG(x) FGFT_VA_16(__VA_ARGS__)
#define FGFT_VA_18(x, ...) , FGFT_VA_ARG(x) FGFT_VA_17(__VA_ARGS__)
#define FGFT_VA_19(x, ...) , FGFT_VA_ARG(x) FGFT_VA_18(__VA_ARGS__)
#define FGFT_VA_20(x, ...) , FGFT_VA_ARG(x) FGFT_VA_19(__VA_ARGS__)
#define FGFT_VA_21(x, ...) , FGFT_VA_ARG(x) FGFT_VA_20(__VA_ARGS__)
#define FGFT_VA_22(x, ...) , FGFT_VA_ARG(x) FGFT_VA_21(__VA_ARGS__)
#define FGFT_VA_23(x, ...) , FGFT_VA_ARG(x) FGFT_VA_22(__VA_ARGS__)
#define FGFT_VA_24(x, ...) , FGFT_VA_ARG(x) FGFT_VA_23(__VA_ARGS__)

#endif /* _FGFT_VA_H */

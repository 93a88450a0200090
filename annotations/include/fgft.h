/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fgft.h - inline annotations for fgft, the fine-grained fault tolerance
 * compiler.
 *
 * Every macro here compiles away: a normal build of an annotated driver is
 * byte for byte the build of the driver without annotations.  fgft-cc reads
 * the annotations from the source text (with tree-sitter), never from the
 * preprocessor output, so they may stand wherever a comment could, within
 * the placement rules below.  Each one has a sidecar (TOML) equivalent; see
 * annotations/README.md.
 *
 * Entry points and device state (before a function definition or
 * prototype, on its own line or before the return type):
 *
 *   FGFT_ISOLATE     run this entry point as a transaction in the SFI module
 *   FGFT_CHECKPOINT  the driver's device checkpoint function,
 *                    int fn(struct device *dev) or the driver's own form;
 *                    overrides the one fgft-cc derives from suspend code
 *   FGFT_RESTORE     the driver's device restore function (likewise)
 *
 * Both are called with the transaction's device key (the entry point's
 * first pointer parameter) converted by FGFT_KEY_TO_DEV, at file scope:
 *
 *   FGFT_KEY_TO_DEV(expr);  expr is C over `key` (a void *), e.g.
 *                           ((struct foo *)key)->pdev; without it, known
 *                           key types give their struct device *
 *
 *	FGFT_ISOLATE
 *	static int foo_get_regs_len(struct net_device *dev)
 *	{ ... }
 *
 * Marshaling hints (inside a struct field or a function parameter
 * declaration, after its name or before its type):
 *
 *   FGFT_NULLTERM            a NUL-terminated string
 *   FGFT_BLOB(len)           a buffer of len bytes; len is a C expression
 *                            over the struct's other fields or the
 *                            function's other parameters
 *   FGFT_OPAQUE(type)        copy sizeof(type) bytes, do not look inside
 *   FGFT_NODEREF             pass the pointer through, never copy its target
 *                            (iomem, locks, struct pci_dev)
 *   FGFT_RECURSIVE           a linked structure: follow it through the
 *                            object tracker
 *   FGFT_CONTAINER(outer, member)
 *                            the pointer points at member `member` of a
 *                            struct outer (container_of); marshal that
 *   FGFT_SHARED(len)         memory used in place, never copied (DMA
 *                            buffers and rings): the pointer crosses as
 *                            is and [ptr, ptr + len) is granted read-write
 *                            for the transaction; writes through it are
 *                            not undone on abort (the device checkpoint's
 *                            restore brings such memory back)
 *   FGFT_SHARED_RO(len)      the same, granted read-only
 *
 *	struct foo_priv {
 *		char name[16];
 *		const char *fw_name FGFT_NULLTERM;
 *		u8 *prom FGFT_BLOB(prom_len);
 *		unsigned int prom_len;
 *		void __iomem *ioaddr FGFT_NODEREF;
 *		u8 *rx_ring FGFT_SHARED(RX_RING_BYTES);
 *	};
 *
 *	static void foo_get_regs(struct net_device *dev,
 *				 struct ethtool_regs *regs,
 *				 void *p FGFT_BLOB(regs->len));
 *
 * Kernel functions (at file scope, followed by a semicolon):
 *
 *   FGFT_PURE(fn)   the kernel function fn has no side effect to undo:
 *                   SFI code may call it with no compensation entry
 *
 *	FGFT_PURE(ioread8);
 *
 * Defining FGFT_ANALYZE changes nothing: the macros stay empty, because
 * fgft-cc takes them from the text and GCC has no attribute to carry them.
 */
#ifndef _FGFT_H
#define _FGFT_H

#define FGFT_ISOLATE
#define FGFT_CHECKPOINT
#define FGFT_RESTORE

/*
 * The argument lists are variadic only so that the unused arguments do not
 * draw warnings; fgft-cc checks the number of arguments: FGFT_BLOB(len),
 * FGFT_OPAQUE(type), FGFT_CONTAINER(outer, member), FGFT_SHARED(len),
 * FGFT_SHARED_RO(len).
 */
#define FGFT_NULLTERM
#define FGFT_BLOB(...)
#define FGFT_OPAQUE(...)
#define FGFT_NODEREF
#define FGFT_RECURSIVE
#define FGFT_CONTAINER(...)
#define FGFT_SHARED(...)
#define FGFT_SHARED_RO(...)

/*
 * Expands to a declaration that generates no code, so that the semicolon
 * after it is valid at file scope and in a block alike.
 */
#define FGFT_PURE(fn) _Static_assert(1, "fgft: " #fn " is side-effect free")
#define FGFT_KEY_TO_DEV(...) _Static_assert(1, "fgft: device key conversion")

#endif /* _FGFT_H */

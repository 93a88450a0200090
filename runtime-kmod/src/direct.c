// SPDX-License-Identifier: GPL-2.0
/*
 * fgft runtime: the checked forms of the kernel functions SFI code calls
 * directly.
 *
 * The kernel's inline helpers and printing macros compiled into an SFI
 * unit call a few kernel functions out of line: strnlen() behind the
 * fortified string helpers, the printk family behind pr_*() and dev_*(),
 * the list checks behind list_add() (CONFIG_DEBUG_LIST), the bit searches
 * behind for_each_set_bit().  fgft-cc cannot rewrite those calls in the
 * source (they are in the kernel's headers), so sfi-as.sh rewrites them in
 * the unit's assembly: each `call NAME` or `jmp NAME` of a name listed in
 * include/fgft/sfi-direct.list becomes a call of fgft_d_NAME, defined here.
 * Every one checks, against the running body's grants, what the kernel
 * function reads and writes through its arguments -- the strings and
 * buffers a format's conversions read, a destination and its size, a
 * bitmap's words, the list nodes -- before it calls the kernel function
 * (or, for the list checks, instead of it).  A check that fails aborts the
 * body (cause range); a kernel assertion the arguments would trip (a
 * corrupted list the kernel would BUG() on) aborts it with cause assert.
 * Outside a transaction the checks pass and the kernel function runs as
 * it would.
 */
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/printk.h>
#include <linux/device.h>
#include <linux/netdevice.h>
#include <linux/seq_file.h>
#include <linux/sysfs.h>
#include <linux/find.h>
#include <linux/bitops.h>
#include <linux/list.h>
#include <linux/poison.h>
#include <linux/refcount.h>
#include <linux/workqueue.h>
#include <linux/dynamic_debug.h>
#include <linux/ctype.h>
#include <linux/limits.h>

#include <fgft/runtime.h>
#include "fgft_internal.h"

/* The nesting of %pV a format walk follows (the kernel's own use nests one). */
#define FGFT_D_VDEPTH	4

/*
 * Memory the kernel function writes: granted to the body, the store
 * logged when the transaction logs its stores (fgft_check_or_fail()).
 */
static __always_inline void fgft_d_write(void *p, size_t len)
{
	if (len && !fgft_win_allows(p, len, FGFT_W))
		fgft_check_or_fail(p, len, FGFT_W);
}

/* Whether @len bytes at @p can be read without a fault (kernel memory). */
static bool fgft_d_readable(const char *p, size_t len)
{
	const char *end = p + len;
	char c;

	if (end < p || (unsigned long)p < TASK_SIZE_MAX)
		return false;
	for (; p < end; p = PTR_ALIGN(p + 1, PAGE_SIZE))
		if (copy_from_kernel_nofault(&c, p, 1))
			return false;
	return !copy_from_kernel_nofault(&c, end - 1, 1);
}

/*
 * Memory the kernel function reads: granted to the body, or kernel memory
 * the body holds a pointer to and did not need (the device name a message
 * prints, a MAC address behind net_device.dev_addr), probed as
 * fgft_kobj() probes a kernel-object argument.  A pointer that is neither
 * (wild, non-canonical, user space, a freed vmalloc area) fails the body
 * instead of faulting in the kernel function.
 */
static void fgft_d_read(const void *p, size_t len)
{
	if (!len || fgft_win_allows(p, len, FGFT_R) ||
	    fgft_check(p, len, FGFT_R) || fgft_d_readable(p, len))
		return;
	fgft_check_or_fail(p, len, FGFT_R);
}

/*
 * Reads the string at @s up to its NUL or @max bytes, checked as
 * fgft_d_read() checks, and returns its length (at most @max): eight bytes
 * a check where this cpu's windows allow them, else a byte a check.
 */
static size_t fgft_d_str(const char *s, size_t max)
{
	size_t n = 0, i;
	char c = 0;

	while (n < max) {
		if (max - n >= 8 && fgft_win_allows(s + n, 8, FGFT_R)) {
			for (i = 0; i < 8; i++)
				if (!s[n + i])
					return n + i;
			n += 8;
			continue;
		}
		if (fgft_check(s + n, 1, FGFT_R))
			c = s[n];
		else if (copy_from_kernel_nofault(&c, s + n, 1) ||
			 (unsigned long)(s + n) < TASK_SIZE_MAX)
			fgft_check_or_fail(s + n, 1, FGFT_R);
		if (!c)
			return n;
		n++;
	}
	return n;
}

/* A pointer the kernel's vsprintf() prints as "(null)" or "(efault)". */
static bool fgft_d_no_deref(const void *p)
{
	return (unsigned long)p < PAGE_SIZE || IS_ERR_VALUE(p);
}

static void fgft_d_vcheck(const char *fmt, va_list args, int depth);

/*
 * The bytes a %p extension reads at @p: @ext points at the letter after
 * the `p`, @width is the field width (-1: none).  The ones that follow
 * pointers of the object (a dentry's names, a device node's parents) get
 * the object's first byte probed: a wild or non-canonical pointer fails
 * the body instead of faulting in vsprintf().
 */
static void fgft_d_pointer(const char *ext, const void *p, int width,
			   int depth)
{
	const struct va_format *vaf;
	va_list va;
	size_t n;

	if (fgft_d_no_deref(p))
		return;
	switch (*ext) {
	case 'M':
	case 'm':
		n = ETH_ALEN;
		break;
	case 'I':
	case 'i':
		if (ext[1] == '4')
			n = 4;
		else if (ext[1] == '6')
			n = 16;
		else	/* 'S': a struct sockaddr_in or _in6 */
			n = sizeof(struct sockaddr_in6);
		break;
	case 'U':
		n = 16;
		break;
	case 'h':
	case 'E':
		/* A hex dump or an escaped buffer of @width bytes (hex: 64 at most). */
		n = width < 0 ? 1 : width;
		if (*ext == 'h')
			n = min_t(size_t, n, 64);
		break;
	case 'b':
		/* A bitmap of @width bits, in whole words. */
		n = width < 0 ? 0 : BITS_TO_LONGS(width) * sizeof(long);
		break;
	case 'a':
		n = ext[1] == 'd' ? sizeof(dma_addr_t) : sizeof(phys_addr_t);
		break;
	case 'N':
		n = sizeof(netdev_features_t);
		break;
	case 'R':
	case 'r':
		n = sizeof(struct resource);
		break;
	case 'G':
		n = ext[1] == 'g' ? sizeof(gfp_t) : sizeof(unsigned long);
		break;
	case 'V':
		fgft_d_read(p, sizeof(*vaf));
		vaf = p;
		fgft_d_read(vaf->va, sizeof(*vaf->va));
		if (depth >= FGFT_D_VDEPTH) {
			fgft_fail_cause(FGFT_CAUSE_RANGE);
			return;
		}
		va_copy(va, *vaf->va);
		fgft_d_vcheck(vaf->fmt, va, depth + 1);
		va_end(va);
		return;
	case 'S':
	case 's':
	case 'B':
	case 'K':
	case 'x':
	case 'e':
	case 'k':	/* %pks: the kernel reads it with a nofault copy */
		return;
	default:
		if (!isalnum(*ext))
			return;		/* plain %p: the value only */
		/* d, D, g, C, O, f, t and what a later kernel adds. */
		n = 1;
		break;
	}
	fgft_d_read(p, n);
}

/*
 * Walks a format of the kernel's vsprintf() with its arguments (a copy
 * the caller owns) and checks what vsprintf() reads through them: each %s
 * to its precision or NUL, each %p extension's bytes.  It follows
 * format_decode(): flags, a width and a precision (either may be `*`, an
 * int argument), a qualifier (hh h l ll L z Z t), the conversion; a
 * conversion vsprintf() refuses (%n, an unknown letter) ends the walk, as
 * it ends vsprintf()'s output.
 */
static void fgft_d_vcheck(const char *fmt, va_list args, int depth)
{
	size_t len = fgft_d_str(fmt, SIZE_MAX);
	const char *f = fmt, *end = fmt + len;
	int width, prec;
	char q;

	while (f < end) {
		if (*f++ != '%')
			continue;
		if (*f == '%') {
			f++;
			continue;
		}
		while (*f == '-' || *f == '+' || *f == ' ' || *f == '#' ||
		       *f == '0')
			f++;
		width = -1;
		if (*f == '*') {
			width = va_arg(args, int);
			f++;
		} else if (isdigit(*f)) {
			width = 0;
			while (isdigit(*f))
				width = width * 10 + (*f++ - '0');
		}
		prec = -1;
		if (*f == '.') {
			f++;
			prec = 0;
			if (*f == '*') {
				prec = va_arg(args, int);
				f++;
			} else {
				while (isdigit(*f))
					prec = prec * 10 + (*f++ - '0');
			}
			if (prec < 0)
				prec = 0;
		}
		q = 0;
		if (*f == 'h' || *f == 'l' || *f == 'L' || *f == 'z' ||
		    *f == 'Z' || *f == 't') {
			q = *f++;
			if ((q == 'h' || q == 'l') && *f == q) {
				q = q == 'l' ? 'L' : 'H';
				f++;
			}
		}
		switch (*f++) {
		case 'c':
			(void)va_arg(args, int);
			break;
		case 's':
			{
				const char *s = va_arg(args, const char *);

				if (!fgft_d_no_deref(s))
					fgft_d_str(s, prec < 0 ? SIZE_MAX : prec);
			}
			break;
		case 'p':
			fgft_d_pointer(f, va_arg(args, const void *), width,
				       depth);
			while (isalnum(*f))
				f++;
			break;
		case 'd':
		case 'i':
		case 'o':
		case 'u':
		case 'x':
		case 'X':
			if (q == 'l' || q == 'L' || q == 'z' || q == 'Z' ||
			    q == 't')
				(void)va_arg(args, long);
			else
				(void)va_arg(args, int);
			break;
		default:
			return;
		}
	}
}

static void fgft_d_check_fmt(const char *fmt, va_list args)
{
	va_list c;

	va_copy(c, args);
	fgft_d_vcheck(fmt, c, 0);
	va_end(c);
}

/* The bytes vsnprintf() will write for @fmt: its length and the NUL. */
static size_t fgft_d_out_len(const char *fmt, va_list args)
{
	va_list c;
	int n;

	va_copy(c, args);
	n = vsnprintf(NULL, 0, fmt, c);
	va_end(c);
	return n < 0 ? 1 : (size_t)n + 1;
}

/* A device or net device the kernel prints the name of: its original. */
static const void *fgft_d_dev(const void *dev)
{
	return dev ? fgft_kobj(fgft_current(), dev) : NULL;
}

/* ---- strings ---- */

__kernel_size_t fgft_d_strnlen(const char *s, __kernel_size_t max)
{
	return fgft_d_str(s, max);
}
EXPORT_SYMBOL_GPL(fgft_d_strnlen);

char *fgft_d_strchr(const char *s, int c)
{
	fgft_d_str(s, SIZE_MAX);
	return strchr(s, c);
}
EXPORT_SYMBOL_GPL(fgft_d_strchr);

/* ---- formatting into a buffer ---- */

int fgft_d_sprintf(char *buf, const char *fmt, ...)
{
	va_list args;
	int n;

	va_start(args, fmt);
	fgft_d_check_fmt(fmt, args);
	fgft_d_write(buf, fgft_d_out_len(fmt, args));
	n = vsprintf(buf, fmt, args);
	va_end(args);
	return n;
}
EXPORT_SYMBOL_GPL(fgft_d_sprintf);

/*
 * A format into @buf of @size bytes: its arguments, and the bytes it will
 * write (the kernel writes nothing for a size past INT_MAX, but a WARN).
 */
static void fgft_d_bounded(char *buf, size_t size, const char *fmt,
			   va_list args)
{
	fgft_d_check_fmt(fmt, args);
	if (size && size <= INT_MAX)
		fgft_d_write(buf, min(size, fgft_d_out_len(fmt, args)));
}

int fgft_d_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list args;
	int n;

	va_start(args, fmt);
	fgft_d_bounded(buf, size, fmt, args);
	n = vsnprintf(buf, size, fmt, args);
	va_end(args);
	return n;
}
EXPORT_SYMBOL_GPL(fgft_d_snprintf);

int fgft_d_scnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list args;
	int n;

	va_start(args, fmt);
	fgft_d_bounded(buf, size, fmt, args);
	n = vscnprintf(buf, size, fmt, args);
	va_end(args);
	return n;
}
EXPORT_SYMBOL_GPL(fgft_d_scnprintf);

int fgft_d_sysfs_emit(char *buf, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;
	int n;

	va_start(args, fmt);
	/* The kernel refuses (a WARN, 0 bytes) a buffer that is not a page. */
	fgft_d_bounded(buf, buf && !offset_in_page(buf) ? PAGE_SIZE : 0, fmt,
		       args);
	vaf.fmt = fmt;
	vaf.va = &args;
	n = sysfs_emit(buf, "%pV", &vaf);
	va_end(args);
	return n;
}
EXPORT_SYMBOL_GPL(fgft_d_sysfs_emit);

int fgft_d_sysfs_emit_at(char *buf, int at, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;
	int n;

	va_start(args, fmt);
	fgft_d_bounded(buf + at, buf && !offset_in_page(buf) && at >= 0 &&
		       at < PAGE_SIZE ? PAGE_SIZE - at : 0, fmt, args);
	vaf.fmt = fmt;
	vaf.va = &args;
	n = sysfs_emit_at(buf, at, "%pV", &vaf);
	va_end(args);
	return n;
}
EXPORT_SYMBOL_GPL(fgft_d_sysfs_emit_at);

void fgft_d_seq_printf(struct seq_file *m, const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	fgft_d_check_fmt(fmt, args);
	seq_vprintf((struct seq_file *)fgft_d_dev(m), fmt, args);
	va_end(args);
}
EXPORT_SYMBOL_GPL(fgft_d_seq_printf);

/*
 * sscanf(): the input string, then each conversion's destination for the
 * bytes vsscanf() stores there (a %s or %[ at most its width, or the
 * input's length, and the NUL).
 */
int fgft_d_sscanf(const char *buf, const char *fmt, ...)
{
	size_t in = fgft_d_str(buf, SIZE_MAX);
	size_t flen = fgft_d_str(fmt, SIZE_MAX);
	const char *f = fmt, *end = fmt + flen;
	va_list args, c;
	size_t width, n;
	bool skip;
	char q;
	int r;

	va_start(args, fmt);
	va_copy(c, args);
	while (f < end) {
		if (*f++ != '%' || *f == '%') {
			f += f[-1] == '%';
			continue;
		}
		skip = *f == '*';
		f += skip;
		width = 0;
		while (isdigit(*f))
			width = width * 10 + (*f++ - '0');
		q = 0;
		if (*f == 'h' || *f == 'l' || *f == 'L' || *f == 'z' ||
		    *f == 'Z') {
			q = *f++;
			if ((q == 'h' || q == 'l') && *f == q) {
				q = q == 'l' ? 'L' : 'H';
				f++;
			}
		}
		switch (*f) {
		case 'c':
			n = width ? width : 1;
			break;
		case 's':
		case '[':
			n = (width ? min(width, in) : in) + 1;
			if (*f == '[') {
				/* The set: a `]` first is a member. */
				f += f[1] == '^';
				f += f[1] == ']';
				while (f[1] && f[1] != ']')
					f++;
			}
			break;
		case 'n':
			n = sizeof(int);
			break;
		case 'd':
		case 'i':
		case 'o':
		case 'u':
		case 'x':
		case 'X':
			n = q == 'H' ? 1 : q == 'h' ? 2 :
			    (q == 'l' || q == 'L' || q == 'z' || q == 'Z') ?
			    8 : 4;
			break;
		default:
			n = 0;
			f = end;	/* vsscanf() stops at what it cannot read */
			continue;
		}
		f++;
		if (!skip)
			fgft_d_write(va_arg(c, void *), n);
	}
	va_end(c);
	r = vsscanf(buf, fmt, args);
	va_end(args);
	return r;
}
EXPORT_SYMBOL_GPL(fgft_d_sscanf);

/* ---- printing ---- */

int fgft_d__printk(const char *fmt, ...)
{
	va_list args;
	int r;

	va_start(args, fmt);
	fgft_d_check_fmt(fmt, args);
	r = vprintk(fmt, args);
	va_end(args);
	return r;
}
EXPORT_SYMBOL_GPL(fgft_d__printk);

/*
 * The printing functions with a level or a device first: the format and
 * its arguments checked, the device translated, the call made with the
 * body's format as a %pV.
 */
#define FGFT_D_VAF(call)				\
	do {						\
		struct va_format vaf;			\
		va_list args;				\
							\
		va_start(args, fmt);			\
		fgft_d_check_fmt(fmt, args);		\
		vaf.fmt = fmt;				\
		vaf.va = &args;				\
		call;					\
		va_end(args);				\
	} while (0)

void fgft_d___warn_printk(const char *fmt, ...)
{
	FGFT_D_VAF(__warn_printk("%pV", &vaf));
}
EXPORT_SYMBOL_GPL(fgft_d___warn_printk);

#define FGFT_D_DEV(name)						\
void fgft_d_##name(const struct device *dev, const char *fmt, ...)	\
{									\
	FGFT_D_VAF(name(fgft_d_dev(dev), "%pV", &vaf));			\
}									\
EXPORT_SYMBOL_GPL(fgft_d_##name)

FGFT_D_DEV(_dev_err);
FGFT_D_DEV(_dev_warn);
FGFT_D_DEV(_dev_info);
FGFT_D_DEV(_dev_notice);

#define FGFT_D_NETDEV(name)						\
void fgft_d_##name(const struct net_device *dev, const char *fmt, ...)	\
{									\
	FGFT_D_VAF(name(fgft_d_dev(dev), "%pV", &vaf));			\
}									\
EXPORT_SYMBOL_GPL(fgft_d_##name)

FGFT_D_NETDEV(netdev_err);
FGFT_D_NETDEV(netdev_warn);
FGFT_D_NETDEV(netdev_info);
FGFT_D_NETDEV(netdev_notice);

void fgft_d__dev_printk(const char *level, const struct device *dev,
			const char *fmt, ...)
{
	fgft_d_str(level, SIZE_MAX);
	FGFT_D_VAF(_dev_printk(level, fgft_d_dev(dev), "%pV", &vaf));
}
EXPORT_SYMBOL_GPL(fgft_d__dev_printk);

int fgft_d_dev_printk_emit(int level, const struct device *dev,
			   const char *fmt, ...)
{
	va_list args;
	int r;

	va_start(args, fmt);
	fgft_d_check_fmt(fmt, args);
	r = dev_vprintk_emit(level, fgft_d_dev(dev), fmt, args);
	va_end(args);
	return r;
}
EXPORT_SYMBOL_GPL(fgft_d_dev_printk_emit);

void fgft_d_netdev_printk(const char *level, const struct net_device *dev,
			  const char *fmt, ...)
{
	fgft_d_str(level, SIZE_MAX);
	FGFT_D_VAF(netdev_printk(level, fgft_d_dev(dev), "%pV", &vaf));
}
EXPORT_SYMBOL_GPL(fgft_d_netdev_printk);

/*
 * Dynamic debug: the descriptor is the SFI module's own (its __dyndbg
 * section, an address the code names), read and written by the kernel.
 */
void fgft_d___dynamic_pr_debug(struct _ddebug *desc, const char *fmt, ...)
{
	FGFT_D_VAF(__dynamic_pr_debug(desc, "%pV", &vaf));
}
EXPORT_SYMBOL_GPL(fgft_d___dynamic_pr_debug);

void fgft_d___dynamic_dev_dbg(struct _ddebug *desc, const struct device *dev,
			      const char *fmt, ...)
{
	FGFT_D_VAF(__dynamic_dev_dbg(desc, fgft_d_dev(dev), "%pV", &vaf));
}
EXPORT_SYMBOL_GPL(fgft_d___dynamic_dev_dbg);

void fgft_d___dynamic_netdev_dbg(struct _ddebug *desc,
				 const struct net_device *dev,
				 const char *fmt, ...)
{
	FGFT_D_VAF(__dynamic_netdev_dbg(desc, fgft_d_dev(dev), "%pV", &vaf));
}
EXPORT_SYMBOL_GPL(fgft_d___dynamic_netdev_dbg);

struct workqueue_struct *fgft_d_alloc_workqueue(const char *fmt,
						unsigned int flags,
						int max_active, ...)
{
	struct workqueue_struct *wq;
	struct va_format vaf;
	va_list args;

	va_start(args, max_active);
	fgft_d_check_fmt(fmt, args);
	vaf.fmt = fmt;
	vaf.va = &args;
	wq = alloc_workqueue("%pV", flags, max_active, &vaf);
	va_end(args);
	return wq;
}
EXPORT_SYMBOL_GPL(fgft_d_alloc_workqueue);

/* ---- bit searches: the bitmap's words from the start bit's ---- */

static void fgft_d_bitmap(const unsigned long *addr, unsigned long nbits,
			  unsigned long start)
{
	unsigned long w = start / BITS_PER_LONG;

	if (start < nbits)
		fgft_d_read(addr + w, (BITS_TO_LONGS(nbits) - w) * sizeof(long));
}

unsigned long fgft_d__find_next_bit(const unsigned long *addr,
				    unsigned long nbits, unsigned long start)
{
	fgft_d_bitmap(addr, nbits, start);
	return _find_next_bit(addr, nbits, start);
}
EXPORT_SYMBOL_GPL(fgft_d__find_next_bit);

unsigned long fgft_d__find_next_zero_bit(const unsigned long *addr,
					 unsigned long nbits,
					 unsigned long start)
{
	fgft_d_bitmap(addr, nbits, start);
	return _find_next_zero_bit(addr, nbits, start);
}
EXPORT_SYMBOL_GPL(fgft_d__find_next_zero_bit);

unsigned long fgft_d__find_first_bit(const unsigned long *addr,
				     unsigned long size)
{
	fgft_d_bitmap(addr, size, 0);
	return _find_first_bit(addr, size);
}
EXPORT_SYMBOL_GPL(fgft_d__find_first_bit);

unsigned long fgft_d__find_first_zero_bit(const unsigned long *addr,
					  unsigned long size)
{
	fgft_d_bitmap(addr, size, 0);
	return _find_first_zero_bit(addr, size);
}
EXPORT_SYMBOL_GPL(fgft_d__find_first_zero_bit);

/* ---- assertions the kernel makes on the body's arguments ---- */

/*
 * CONFIG_DEBUG_LIST: list_add() asks __list_add_valid_or_report(), which
 * BUG()s on a corrupted list (CONFIG_BUG_ON_DATA_CORRUPTION) in kernel
 * text.  Here the two nodes' links are read checked and compared as the
 * kernel compares them; a corrupted list aborts the body (cause assert)
 * before the kernel's check runs, and a sound one is what the kernel
 * would answer, true, with no call.
 */
/* Whether list_add() of @new between @prev and @next keeps the list sound. */
static bool fgft_d_list_add_ok(struct list_head *new, struct list_head *prev,
			       struct list_head *next)
{
	if (!prev || !next)
		return false;
	fgft_d_read(&prev->next, sizeof(prev->next));
	fgft_d_read(&next->prev, sizeof(next->prev));
	return READ_ONCE(next->prev) == prev && READ_ONCE(prev->next) == next &&
	       new != prev && new != next;
}

/* Whether list_del() of @entry finds it linked where its links say. */
static bool fgft_d_list_del_ok(struct list_head *entry)
{
	struct list_head *prev, *next;

	fgft_d_read(entry, sizeof(*entry));
	prev = READ_ONCE(entry->prev);
	next = READ_ONCE(entry->next);
	if (!prev || !next || prev == LIST_POISON2 || next == LIST_POISON1)
		return false;
	fgft_d_read(&prev->next, sizeof(prev->next));
	fgft_d_read(&next->prev, sizeof(next->prev));
	return READ_ONCE(prev->next) == entry && READ_ONCE(next->prev) == entry;
}

/*
 * Since 6.6 (CONFIG_LIST_HARDENED, which defines __list_valid_slowpath)
 * the slow paths are __list_*_valid_or_report(); __list_valid_slowpath is
 * __preserve_most under clang without CONFIG_DEBUG_LIST, but fgft's SFI
 * units are built by gcc (sfi-as.sh wraps gcc's cc1), where it is empty.
 */
#ifdef __list_valid_slowpath
bool fgft_d___list_add_valid_or_report(struct list_head *new,
				       struct list_head *prev,
				       struct list_head *next)
{
	if (fgft_d_list_add_ok(new, prev, next))
		return true;
	fgft_fail_cause(FGFT_CAUSE_ASSERT);
	return __list_add_valid_or_report(new, prev, next);
}
EXPORT_SYMBOL_GPL(fgft_d___list_add_valid_or_report);

bool fgft_d___list_del_entry_valid_or_report(struct list_head *entry)
{
	if (fgft_d_list_del_ok(entry))
		return true;
	fgft_fail_cause(FGFT_CAUSE_ASSERT);
	return __list_del_entry_valid_or_report(entry);
}
EXPORT_SYMBOL_GPL(fgft_d___list_del_entry_valid_or_report);
#elif IS_ENABLED(CONFIG_DEBUG_LIST)
/* Before 6.6 the checks are __list_add_valid() and __list_del_entry_valid(). */
bool fgft_d___list_add_valid(struct list_head *new, struct list_head *prev,
			     struct list_head *next)
{
	if (fgft_d_list_add_ok(new, prev, next))
		return true;
	fgft_fail_cause(FGFT_CAUSE_ASSERT);
	return __list_add_valid(new, prev, next);
}
EXPORT_SYMBOL_GPL(fgft_d___list_add_valid);

bool fgft_d___list_del_entry_valid(struct list_head *entry)
{
	if (fgft_d_list_del_ok(entry))
		return true;
	fgft_fail_cause(FGFT_CAUSE_ASSERT);
	return __list_del_entry_valid(entry);
}
EXPORT_SYMBOL_GPL(fgft_d___list_del_entry_valid);
#endif

/* refcount_t's saturation report sets the count: a store through @r. */
void fgft_d_refcount_warn_saturate(refcount_t *r,
				   enum refcount_saturation_type t)
{
	fgft_d_write(r, sizeof(*r));
	refcount_warn_saturate(r, t);
}
EXPORT_SYMBOL_GPL(fgft_d_refcount_warn_saturate);

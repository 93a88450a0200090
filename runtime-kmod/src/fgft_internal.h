/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fgft_rt.ko internals shared by its files (not part of the API).
 */
#ifndef _FGFT_INTERNAL_H
#define _FGFT_INTERNAL_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/sched.h>
#include <linux/preempt.h>
#include <linux/percpu.h>
#include <linux/minmax.h>
#include <linux/atomic.h>
#include <linux/bug.h>
#include <asm/asm.h>
#include <fgft/runtime.h>

#include "fgft_rtab.h"
#include "fgft_objtrack.h"
#include "fgft_undolog.h"

/*
 * Registers saved by fgft_jb_call() (jmp.S hard-codes these offsets; core.c
 * checks them at build time).  rsp is the stack pointer at the call of the
 * body and rip the instruction right after that call (the landing point).
 */
struct fgft_jmpbuf {
	unsigned long rbx;
	unsigned long rbp;
	unsigned long r12;
	unsigned long r13;
	unsigned long r14;
	unsigned long r15;
	unsigned long rsp;
	unsigned long rip;
};

long fgft_jb_call(struct fgft_jmpbuf *jb, long (*fn)(void *arg), void *arg);
/*
 * Does not return; not declared __noreturn so that callers end with an
 * explicit BUG() objtool can see (it cannot analyse the stack switch).
 */
void fgft_jb_longjmp(struct fgft_jmpbuf *jb, long ret);

/* Value found in rax at the landing point after a recovery. */
#define FGFT_LANDED	(-1000L)

enum fgft_txn_state {
	FGFT_TXN_FREE = 0,
	FGFT_TXN_OPEN,		/* begun, not running a body */
	FGFT_TXN_BODY,		/* fgft_txn_call() is running the body */
};

/*
 * The execution context a transaction belongs to: the bits of preempt_count
 * that tell process context from serving a softirq, a hard irq (and its
 * nesting level) or an NMI.  An interrupt borrows `current`, so transactions
 * are keyed by (task, context).
 */
#define FGFT_CTX_MASK	(NMI_MASK | HARDIRQ_MASK | SOFTIRQ_OFFSET)

static __always_inline unsigned int fgft_ctx(void)
{
	return preempt_count() & FGFT_CTX_MASK;
}

struct fgft_devreg;

/*
 * The write log of a transaction whose objects are used in place
 * (fgft_txn_log_stores()): the old bytes of every checked store outside the
 * body's stack, taken before the store lands, in 16-byte pieces; an abort
 * writes them back newest first, before the undo log runs.
 */
#define FGFT_WREC_BYTES	16

struct fgft_wrec {
	unsigned long addr;
	u32 len;
	u8 old[FGFT_WREC_BYTES];
};

struct fgft_wlog {
	struct fgft_wrec *r;
	u32 n;
	u32 cap;
};

/*
 * Events of one transaction, summed per entry point beside the stage
 * times: they say why a stage takes what it takes.
 */
enum fgft_event {
	FGFT_EV_CHECK = 0,	/* sanitizer call-backs in the body */
	FGFT_EV_SLOW,		/* ... past the last-hit window */
	FGFT_EV_GLOBAL,		/* ... allowed by a grant of a kernel variable */
	FGFT_EV_LOGGED,		/* write-log records */
	FGFT_EV_GRANTS,		/* range-table slots at the end */
	FGFT_EV_COPIES,		/* tracked objects at the end */
	FGFT_EV_HEAP,		/* accesses allowed by the driver's heap */
	FGFT_EV_NR,
};

/*
 * This cpu's inline windows: the last hits of the body running here, four
 * that allowed a load and two a store, as the range checks inlined into
 * SFI code read them (the offsets are in include/fgft/sfi-as.sh).  A
 * window is a start and its span plus one (end - start + 1): a load of n
 * bytes at a is allowed inline when span1 - n does not borrow and
 * a - start < span1 - n (unsigned) for one of the read windows, one
 * subtraction and one compare (a borrow folded in without a branch)
 * standing for a >= start, a + n <= end and no wrap; a store likewise
 * with a write window, which holds a grant only when its stores need no
 * write-log record.  Empty: span1 0 (every access borrows).  Only the body of the current context, or code outside any
 * transaction (where every access is allowed), ever sees a window: the
 * body's call clears them and puts the caller's back, the scheduler's
 * notifiers clear and reload them across a switch, and a revoke clears
 * them.
 */
struct fgft_span {
	unsigned long start;
	unsigned long end;
};

/* struct fgft_iwin and struct fgft_pcwin: include/fgft/runtime.h */

/* The windows as spans: what a body's call saves and puts back. */
struct fgft_pcspan {
	struct fgft_span r[FGFT_WIN_R];
	struct fgft_span w[FGFT_WIN_W];
	unsigned long stack_hi;
	struct fgft_txn *body;
	u8 touched;
	u8 copies;
	unsigned int sites_n;
	unsigned int sites_base;
};

#define FGFT_IWIN_EMPTY	{ ~0UL, 0 }
#define FGFT_PCWIN_EMPTY	{						\
	.r = { FGFT_IWIN_EMPTY, FGFT_IWIN_EMPTY,			\
	       FGFT_IWIN_EMPTY, FGFT_IWIN_EMPTY },			\
	.w = { FGFT_IWIN_EMPTY, FGFT_IWIN_EMPTY },			\
	.stack_hi = 0,							\
	.body = NULL,							\
	.touched = 0,							\
	.copies = 0,							\
	.sites = NULL,							\
	.io = { FGFT_IO_EMPTY, FGFT_IO_EMPTY },				\
}

/*
 * A cpu's site caches and the numbers of those filled since they were last
 * emptied (at most FGFT_SITES_DIRTY; a fill past that empties them first).
 */
#define FGFT_SITES_DIRTY	64

struct fgft_sitetab {
	struct fgft_site s[FGFT_SITES];
	unsigned int n;
	unsigned int base;	/* entries of the bodies this one interrupted */
	u16 dirty[FGFT_SITES_DIRTY];
};

extern struct fgft_sitetab __percpu *fgft_sitetab;

/*
 * The caches a body fills are listed on its cpu; a body's call (an
 * interrupt's) lists after the entries of the body it interrupted, from
 * base.  Emptying empties every listed cache; the entries from base on go.
 *
 * Why a fill needs no interrupts off: it reserves its entry (n + 1), then
 * writes the site's number there, then the cache.  An interrupt's body in
 * between empties every listed cache when it begins and ends, lists only
 * after the reserved entry and leaves the list as it found it, so the
 * cache the fill goes on to fill is listed before it holds anything.
 * Preemption is off.
 */
static __always_inline void fgft_sites_empty(struct fgft_sitetab *st)
{
	unsigned int i, n;

	n = min_t(unsigned int, READ_ONCE(st->n), FGFT_SITES_DIRTY);
	for (i = 0; i < n; i++)
		WRITE_ONCE(st->s[READ_ONCE(st->dirty[i]) &
				 (FGFT_SITES - 1)].lim8, 0);
}

static __always_inline void fgft_sites_clear(void)
{
	struct fgft_sitetab *st;

	if (!fgft_sitetab)
		return;
	st = this_cpu_ptr(fgft_sitetab);
	fgft_sites_empty(st);
	WRITE_ONCE(st->n, READ_ONCE(st->base));
}

/* A body's call begins on this cpu: its caches are listed from here. */
static __always_inline void fgft_sites_enter(struct fgft_pcspan *w)
{
	struct fgft_sitetab *st;

	if (!fgft_sitetab)
		return;
	st = this_cpu_ptr(fgft_sitetab);
	w->sites_n = READ_ONCE(st->n);
	w->sites_base = READ_ONCE(st->base);
	WRITE_ONCE(st->base, w->sites_n);
}

/* It ends: the list is as it found it, every cache empty. */
static __always_inline void fgft_sites_leave(const struct fgft_pcspan *w)
{
	struct fgft_sitetab *st;

	if (!fgft_sitetab)
		return;
	st = this_cpu_ptr(fgft_sitetab);
	fgft_sites_empty(st);
	WRITE_ONCE(st->base, w->sites_base);
	WRITE_ONCE(st->n, w->sites_n);
}
#define FGFT_SPAN_EMPTY	{ ~0UL, 0 }

/*
 * Window @k of kind @kind (r or w) becomes [@st, @st + @len): its start,
 * span plus one and lim8, all from here; @len 0 empties it.
 */
#define fgft_win_set(kind, k, st, len) do {				\
	unsigned long __st = (st), __len = (len);			\
									\
	this_cpu_write(fgft_win.kind[k].start, __len ? __st : ~0UL);	\
	this_cpu_write(fgft_win.kind[k].span1, __len ? __len + 1 : 0);	\
	this_cpu_write(fgft_win.kind[k].lim8, FGFT_WIN_LIM8(__len));	\
} while (0)

/* Writes @sp into window @k of kind @kind (r or w). */
#define fgft_win_write(kind, k, sp) do {					\
	unsigned long __s = (sp).start, __e = (sp).end;			\
									\
	fgft_win_set(kind, k, __s, __e > __s ? __e - __s : 0);		\
} while (0)

/* Window @k of kind @kind as a span. */
#define fgft_win_read(kind, k, sp) do {					\
	unsigned long __b = this_cpu_read(fgft_win.kind[k].start);	\
									\
	unsigned long __l = this_cpu_read(fgft_win.kind[k].span1);	\
									\
	(sp).start = __l ? __b : ~0UL;					\
	(sp).end = __l ? __b + __l - 1 : 0;				\
} while (0)

/*
 * Empties this cpu's MMIO pages (fgft_mmio_check()): a body's call and its
 * end, a switch and a revoke, with the windows.  The caller's pages are not
 * put back when a body's call returns; its next access finds them again.
 */
static __always_inline void fgft_io_clear(void)
{
	int k;

	for (k = 0; k < FGFT_WIN_IO; k++)
		this_cpu_write(fgft_win.io[k], FGFT_IO_EMPTY);
}

/*
 * The windows' fields are written one by one: a task preempted in between
 * and resumed on another cpu (whose windows its scheduler notifier just
 * loaded) would finish the update there, pairing one grant's start with
 * another's span.  So every update runs with preemption off (the checks'
 * call-backs switch user access off around it: the enable may call the
 * scheduler).
 */
#define fgft_win_begin()	preempt_disable_notrace()
#define fgft_win_end()		preempt_enable_notrace()

static __always_inline void fgft_win_put(const struct fgft_pcspan *w)
{
	int k;

	fgft_win_begin();
	for (k = 0; k < FGFT_WIN_R; k++)
		fgft_win_write(r, k, w->r[k]);
	for (k = 0; k < FGFT_WIN_W; k++)
		fgft_win_write(w, k, w->w[k]);
	this_cpu_write(fgft_win.stack_hi, w->stack_hi);
	this_cpu_write(fgft_win.body, w->body);
	this_cpu_write(fgft_win.touched, w->touched);
	this_cpu_write(fgft_win.copies, w->copies);
	fgft_io_clear();
	fgft_sites_leave(w);
	fgft_win_end();
}

static __always_inline void fgft_win_get(struct fgft_pcspan *w)
{
	int k;

	fgft_win_begin();
	for (k = 0; k < FGFT_WIN_R; k++)
		fgft_win_read(r, k, w->r[k]);
	for (k = 0; k < FGFT_WIN_W; k++)
		fgft_win_read(w, k, w->w[k]);
	w->stack_hi = this_cpu_read(fgft_win.stack_hi);
	w->body = this_cpu_read(fgft_win.body);
	w->touched = this_cpu_read(fgft_win.touched);
	w->copies = this_cpu_read(fgft_win.copies);
	fgft_sites_enter(w);
	fgft_win_end();
}

/* Empties the grant windows (a revoke); the stack window stays. */
static __always_inline void fgft_win_clear(void)
{
	int k;

	fgft_win_begin();
	for (k = 0; k < FGFT_WIN_R; k++)
		fgft_win_set(r, k, 0, 0);
	for (k = 0; k < FGFT_WIN_W; k++)
		fgft_win_set(w, k, 0, 0);
	fgft_io_clear();
	fgft_sites_clear();
	fgft_win_end();
}

/* Empties every window, the stack's too (another task or body runs). */
static __always_inline void fgft_win_clear_all(void)
{
	fgft_win_clear();
	this_cpu_write(fgft_win.stack_hi, 0);
	this_cpu_write(fgft_win.body, NULL);
	this_cpu_write(fgft_win.touched, 0);
	this_cpu_write(fgft_win.copies, 0);
}

/*
 * A kernel call deferred to commit.  The cell holds its arguments; the
 * deferred record makes the call when the transaction ends, unless the
 * undo record pushed after it has cancelled the cell: an abort runs the
 * undo records (last in, first out) before the deferred ones, so an
 * aborted transaction skips the call and a committed one makes it.
 */
struct fgft_commit_cell {
	unsigned long cancelled;
	unsigned long a[4];
	fgft_commit_fn fn;
	bool own;	/* allocated, not one of the transaction's cells */
};

/* Cells a transaction carries: a transmit's deferred calls need none. */
#define FGFT_TXN_CELLS	8

struct fgft_txn {
	struct fgft_jmpbuf jb;

	/* Identity: written only by the owning task in the owning context. */
	struct task_struct *task;
	unsigned int ctx;
	u8 state;
	u8 active;	/* the innermost body running for (task, ctx) */
	u8 failed;
	u8 checkpointed;	/* this transaction took the device checkpoint */
	u8 logging;	/* stores are logged (objects used in place) */
	u8 tables;	/* granted or copied: the range table, tracker to reset */
	u8 dev_touched;	/* the body accessed a device (fgft_dev_touch()) */
	u8 irreversible;	/* it made a call no abort undoes */
	u8 quiet;	/* a trap the kernel printed nothing for: noted at the end */
	u8 trapnr;	/* that trap's number (X86_TRAP_*), for the note */
	u8 nkret;	/* fgft_kret() calls (kret[] is a ring of the last ones) */

	struct fgft_txn *outer;	/* enclosing transaction, same (task, ctx) */
	unsigned int nr_inner;	/* transactions open inside this one */
	/* Open in process context: on the task's preempt-notifier list. */
	struct preempt_notifier pn;
	/* Open in an interrupt context: the next one down this cpu's stack. */
	struct fgft_txn *below;
	struct fgft_txn *next_free;	/* pool */
	struct list_head all;		/* every pooled transaction */

	struct fgft_entry *ep;
	struct fgft_entry_rt *rt;	/* ep->rt at the begin */
	void *dev;
	struct fgft_devreg *dreg;
	enum fgft_cause cause;

	/* Stack the body may use: [current sp, stack_hi). */
	unsigned long stack_lo;
	unsigned long stack_hi;

	/* This cpu's inline windows at the call of the body, put back after. */
	struct fgft_pcspan caller_win;

	/* State at the call of the body, to repair what a fault leaves. */
	unsigned int saved_pc;
	/* softirq_count() apart: on PREEMPT_RT it is not in preempt_count(). */
	unsigned int saved_sc;
	int saved_rcu;
	bool saved_irqs_off;

	u64 t_fault;
	unsigned long fault_ip;
	unsigned long fault_addr;
	unsigned int fault_len;
	unsigned int fault_rights;

	struct fgft_rtab rtab;
	struct fgft_objtrack objs;
	struct fgft_undolog log;
	struct fgft_wlog wlog;
	struct fgft_commit_cell cells[FGFT_TXN_CELLS];
	/* Pointers wrapped kernel calls returned, ungranted (fgft_kret()). */
	const void *kret[FGFT_KRET_NR];
	u8 ncells;	/* cells[] used by this transaction */
	/* What the transaction did, for --stage-times figures (plain adds). */
	u32 ev[FGFT_EV_NR];
};

/* Logs the bytes a store of @len at @addr is about to overwrite. */
void fgft_log_store(struct fgft_txn *t, unsigned long addr, size_t len);

DECLARE_PER_CPU(struct fgft_txn *, fgft_hit);
DECLARE_PER_CPU(struct fgft_txn *, fgft_irq_top);


/*
 * Whether no transaction is open in the current (task, context): nothing
 * on this cpu's interrupt stack, or nothing on the task's preempt
 * notifiers (a task with none, most tasks, answers with one load).
 */
static __always_inline bool fgft_none_open(void)
{
	if (fgft_ctx())
		return !this_cpu_read(fgft_irq_top);
	return hlist_empty(&current->preempt_notifiers);
}

struct fgft_txn *fgft_active_slow(void);
struct fgft_txn *fgft_top(void);

/*
 * The transaction whose body the current task is running in the current
 * context, or NULL.  The per-cpu last hit is validated against current: a
 * transaction's identity fields are written only by its owner, and pooled
 * transactions are never freed while the module is loaded, so a stale
 * pointer is always safe to read and never matches another task.
 */
static __always_inline struct fgft_txn *fgft_active(void)
{
	struct fgft_txn *t = this_cpu_read(fgft_hit);

	if (likely(t && READ_ONCE(t->task) == current &&
		   READ_ONCE(t->active) && t->ctx == fgft_ctx()))
		return t;
	if (likely(fgft_none_open()))
		return NULL;
	return fgft_active_slow();
}

/* Whether window kind @kind already holds [@st, @st + @sp). */
#define fgft_win_has(kind, nr, st, sp) ({				\
	bool __has = false;						\
	int __k;							\
									\
	for (__k = 0; __k < (nr) && !__has; __k++)			\
		__has = this_cpu_read(fgft_win.kind[__k].start) == (st) &&	\
			this_cpu_read(fgft_win.kind[__k].span1) == (sp) + 1;	\
	__has;								\
})

/* @t's body runs here (it starts, or resumes after a switch). */
static __always_inline void fgft_win_body(struct fgft_txn *t)
{
	this_cpu_write(fgft_win.stack_hi, t->stack_hi);
	this_cpu_write(fgft_win.body, t);
	this_cpu_write(fgft_win.touched, 0);
	this_cpu_write(fgft_win.copies, t->objs.n != 0);
}

/*
 * The body running here stops running here (it returns, aborts, or its
 * task is switched out): what its register accesses noted inline goes to
 * its transaction.
 */
static __always_inline void fgft_win_fold(void)
{
	struct fgft_txn *t = this_cpu_read(fgft_win.body);

	if (t && this_cpu_read(fgft_win.touched))
		t->dev_touched = 1;
}

/* @t tracks a copy now: kernel-object arguments need the tracker. */
static __always_inline void fgft_win_copies(const struct fgft_txn *t)
{
	if (this_cpu_read(fgft_win.body) == t)
		this_cpu_write(fgft_win.copies, 1);
}

/*
 * [@st, @st + @sp) becomes window 0 of kind @kind (@nr windows), the others
 * move down one place, unless it is there already.
 */
#define fgft_win_push(kind, nr, st, sp) do {				\
	int __k;							\
									\
	if (fgft_win_has(kind, nr, st, sp))				\
		break;							\
	for (__k = (nr) - 1; __k > 0; __k--) {				\
		this_cpu_write(fgft_win.kind[__k].start,		\
			       this_cpu_read(fgft_win.kind[__k - 1].start));	\
		this_cpu_write(fgft_win.kind[__k].span1,		\
			       this_cpu_read(fgft_win.kind[__k - 1].span1));	\
		this_cpu_write(fgft_win.kind[__k].lim8,			\
			       this_cpu_read(fgft_win.kind[__k - 1].lim8));	\
	}								\
	fgft_win_set(kind, 0, st, sp);					\
} while (0)

/*
 * Site cache @site (a load-check site's number) of this cpu becomes the
 * read window that allows up to 8 bytes at @addr, if one does: the site's
 * next loads there pass inline.  Only for @t's body running here; the
 * order of the writes is fgft_sites_empty()'s.  Preemption is off (the
 * caller's: a pair of its own per fill cost as much as the fill under
 * QEMU's TCG).
 */
static __always_inline void fgft_site_fill_in(const struct fgft_txn *t,
					      unsigned long site,
					      unsigned long addr)
{
	unsigned long start = 0, lim8 = 0;
	struct fgft_sitetab *st;
	unsigned int i;
	int k;

	if (!fgft_sitetab || this_cpu_read(fgft_win.body) != t)
		return;
	for (k = 0; k < FGFT_WIN_R && !lim8; k++) {
		start = this_cpu_read(fgft_win.r[k].start);
		lim8 = this_cpu_read(fgft_win.r[k].lim8);
		if (addr - start >= lim8)
			lim8 = 0;
	}
	if (!lim8)
		return;
	site &= FGFT_SITES - 1;
	st = this_cpu_ptr(fgft_sitetab);
	if (READ_ONCE(st->n) >= FGFT_SITES_DIRTY)
		fgft_sites_clear();
	i = READ_ONCE(st->n);
	if (i >= FGFT_SITES_DIRTY)
		return;
	WRITE_ONCE(st->n, i + 1);
	barrier();
	WRITE_ONCE(st->dirty[i], site);
	barrier();
	WRITE_ONCE(st->s[site].start, start);
	WRITE_ONCE(st->s[site].lim8, lim8);
}

static __always_inline void fgft_site_fill(const struct fgft_txn *t,
					   unsigned long site,
					   unsigned long addr)
{
	fgft_win_begin();
	fgft_site_fill_in(t, site, addr);
	fgft_win_end();
}

/*
 * @t's last hit goes into this cpu's windows of each kind it allows (first
 * place; the others move down one), then, for a load check's @site (>= 0),
 * into the site's cache (fgft_site_fill_in()), with preemption off once
 * for both.  An interrupt in between sees a mix: only code outside any
 * transaction can (an interrupt's body sets its own and puts this one
 * back), and there every access is allowed.  A grant already in a window
 * stays where it is (a logged store calls the runtime for an object its
 * loads find inline).
 */
static __always_inline void fgft_win_load_site(const struct fgft_txn *t,
					       long site, unsigned long addr)
{
	const struct fgft_rtab_win *h = &t->rtab.hit;
	unsigned long span = h->end - h->start;

	fgft_win_begin();
	if (h->id >= 0 && h->end > h->start) {
		if (h->rights & FGFT_R)
			fgft_win_push(r, FGFT_WIN_R, h->start, span);
		if ((h->rights & FGFT_W) &&
		    (!t->logging || (h->rights & FGFT_NOLOG)))
			fgft_win_push(w, FGFT_WIN_W, h->start, span);
	}
	if (site >= 0)
		fgft_site_fill_in(t, site, addr);
	fgft_win_end();
}

static __always_inline void fgft_win_load(const struct fgft_txn *t)
{
	fgft_win_load_site(t, -1, 0);
}

/* The body's own stack: from the current stack pointer up to stack_hi. */
static __always_inline bool fgft_on_stack(const struct fgft_txn *t,
					  unsigned long addr, size_t len)
{
	unsigned long end = addr + len;

	return addr >= current_stack_pointer && end <= t->stack_hi &&
	       end >= addr;
}

/*
 * Aborts the running body of @t: never returns.  The out-of-line part is
 * not declared __noreturn and the BUG() after it tells objtool (which, on
 * 6.1, checks each object alone) that nothing follows.
 */
void fgft_fail_active_jump(struct fgft_txn *t, enum fgft_cause cause,
			   unsigned long ip);

static __always_inline void __noreturn
fgft_fail_active(struct fgft_txn *t, enum fgft_cause cause)
{
	fgft_fail_active_jump(t, cause, _RET_IP_);
	BUG();
}

/* check.c */
bool fgft_allows(struct fgft_txn *t, unsigned long addr, size_t len,
		 unsigned int rights);
/*
 * Whether @len bytes at @addr lie in device memory: this cpu's MMIO pages,
 * or pages mapped in the vmalloc area to frames that are no RAM (loaded
 * into the MMIO pages then).
 */
bool fgft_mmio_ok(unsigned long addr, unsigned long len);
void fgft_note_refusal(struct fgft_txn *t, unsigned long addr, size_t len,
		       unsigned int rights, unsigned long ip);
int fgft_check_init(void);
bool fgft_heap_allows(struct fgft_txn *t, struct fgft_heap *h,
		      unsigned long addr, size_t len, unsigned int rights);
void fgft_check_exit(void);
extern bool fgft_check_reads;

/* mem.c */
extern atomic_long_t fgft_mem_live;

/* checkpoint.c */
struct fgft_devreg *fgft_devreg_get(void *dev);
void fgft_devreg_put(struct fgft_devreg *r);
int fgft_devreg_checkpoint(struct fgft_devreg *r, void *dev);
void fgft_devreg_restore(struct fgft_devreg *r, void *dev);
void fgft_checkpoint_exit(void);
void fgft_quiet_init(void);

/* debugfs.c and statistics */
struct fgft_entry_rt {
	struct fgft_entry *ep;
	struct list_head node;
	struct dentry *dir;
	bool isolate;
	/* Transactions begun and committed (per cpu: no atomics). */
	struct fgft_counts __percpu *counts;
	atomic64_t aborts[FGFT_CAUSE_NR];
	/* Stage times of --stage-times stubs (per cpu: no atomics). */
	struct fgft_stage_sums __percpu *stages;
	/*
	 * Set by the first stage stamps handed over: from then on each
	 * transaction's events are summed beside the times (the first
	 * stamped one's are not).
	 */
	bool stamped;
};

void fgft_stage_events(struct fgft_entry_rt *rt, struct fgft_txn *t);

struct fgft_stage_sums {
	u64 txns;
	u64 cycles[FGFT_ST_NR];
	u64 ev[FGFT_EV_NR];
	u64 plain;
	u64 plain_cycles;
};

/* Counters of every transaction, kept per cpu (the fast path's only ones). */
struct fgft_counts {
	u64 txns;
	u64 commits;
};

DECLARE_PER_CPU(struct fgft_counts, fgft_gcounts);
/* The sum over the cpus of @c, of its txns (or its commits). */
u64 fgft_counts_sum(const struct fgft_counts __percpu *c, bool commits);
void fgft_counts_zero(struct fgft_counts __percpu *c);

struct fgft_gstats {
	atomic64_t aborts[FGFT_CAUSE_NR];
	atomic64_t begin_disabled;
	atomic64_t begin_errors;
	atomic64_t residue_fixups;
	atomic64_t missing_unlocks;
	atomic64_t restores;
	atomic64_t restores_skipped;
	atomic64_t retries;
	atomic64_t retried;
	atomic64_t retry_sum_ns;
	atomic64_t retry_max_ns;
	atomic64_t refusals;
	atomic64_t rec_count;
	atomic64_t rec_sum_ns;
	atomic64_t rec_max_ns;
	atomic64_t rec_hist[FGFT_HIST_BUCKETS];
};

extern struct fgft_gstats fgft_gstats;
extern atomic_t fgft_pool_size;

void fgft_stats_recovery(u64 ns);
int fgft_debugfs_init(void);
void fgft_debugfs_exit(void);
int fgft_debugfs_entry_add(struct fgft_entry_rt *rt);
void fgft_debugfs_entry_del(struct fgft_entry_rt *rt);

#endif /* _FGFT_INTERNAL_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * fgft_rt core: transactions, the (task, context) lookup, the fault trap.
 *
 * A transaction belongs to the task and the execution context (process,
 * softirq, hard irq) that began it.  The open transactions of a task in
 * process context are on the task's preempt-notifier list; those of the
 * interrupt contexts are on a per-cpu stack; nested ones also hang off
 * their enclosing one through ->outer.  No lookup takes a lock.  Checks
 * need "the transaction whose body is running here": a per-cpu last hit
 * answers that, validated against current and the context, and the lists
 * are the fallback.
 *
 * Transactions come from a pool that only grows while the module is loaded,
 * so a stale per-cpu pointer always points at a transaction (possibly
 * reused by another task, which the validation then rejects).
 */
#define pr_fmt(fmt) "fgft: " fmt

#include <linux/module.h>
#include <linux/kdebug.h>
#include <linux/preempt.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/sched/clock.h>
#include <linux/rcupdate.h>
#include <linux/interrupt.h>
#include <linux/uaccess.h>
#include <linux/mm.h>
#include <linux/build_bug.h>
#include <linux/kallsyms.h>
#include <linux/ratelimit.h>
#include <asm/trapnr.h>
#include <asm/ptrace.h>
#include <asm/pgtable.h>

#include "fgft_internal.h"

DEFINE_PER_CPU(struct fgft_txn *, fgft_hit);
atomic_t fgft_pool_size = ATOMIC_INIT(0);
struct fgft_gstats fgft_gstats;

static bool recover_core_text;
module_param(recover_core_text, bool, 0644);
MODULE_PARM_DESC(recover_core_text,
		 "Also recover faults whose instruction is in core kernel text (called from a body); default: module text only");

/* Grants revoked between two preemption points of fgft_unmap(). */
#define FGFT_REVOKE_BATCH	32
/*
 * Array capacity a pooled transaction keeps between uses: enough for a NAPI
 * poll over a full ring (a grant and a tracked copy per buffer), so that the
 * I/O path does not grow its arrays again on every call.
 */
#define FGFT_POOL_KEEP		1024
/* Caller frame a body may use when it runs on an interrupt stack. */
#define FGFT_IRQ_CALLER_WINDOW	1024

static_assert(offsetof(struct fgft_jmpbuf, rbx) == 0);
static_assert(offsetof(struct fgft_jmpbuf, rsp) == 48);
static_assert(offsetof(struct fgft_jmpbuf, rip) == 56);
static_assert(FGFT_R == FGFT_DS_R && FGFT_W == FGFT_DS_W &&
	      FGFT_NOLOG == FGFT_DS_NOLOG);

/* ---- (task, context) -> innermost transaction ---- */

#ifndef CONFIG_PREEMPT_NOTIFIERS
#error "fgft_rt keeps a task's transactions on its preempt notifiers: CONFIG_PREEMPT_NOTIFIERS (selected by KVM) is needed"
#endif

/*
 * Process context: a task's open transactions are on its own
 * preempt-notifier list, newest first.  Only the task adds to and removes
 * from that list, so finding, pushing and popping take no lock, and the
 * scheduler tells the transaction when the task runs again on a cpu.
 */
static void fgft_sched_in(struct preempt_notifier *pn, int cpu)
{
	struct fgft_txn *t = container_of(pn, struct fgft_txn, pn);

	/* The body resumes here: the checks' last hit is this one again. */
	if (READ_ONCE(t->active)) {
		this_cpu_write(fgft_hit, t);
		fgft_win_load(t);
		fgft_win_body(t);
	}
}

/* The next task on this cpu must not check against this task's window. */
static void fgft_sched_out(struct preempt_notifier *pn,
			   struct task_struct *next)
{
	fgft_win_fold();
	fgft_win_clear_all();
}

static struct preempt_ops fgft_pn_ops = {
	.sched_in = fgft_sched_in,
	.sched_out = fgft_sched_out,
};

static __always_inline struct fgft_txn *task_top(struct task_struct *task)
{
	struct preempt_notifier *pn;

	hlist_for_each_entry(pn, &task->preempt_notifiers, link)
		if (pn->ops == &fgft_pn_ops)
			return container_of(pn, struct fgft_txn, pn);
	return NULL;
}

/*
 * Interrupt contexts: a per-cpu stack.  A softirq or hard irq runs to its
 * end on one cpu and nests strictly inside what it interrupted, so the
 * transactions opened in those contexts form one stack per cpu, and the
 * innermost one of the current context is on top or not open.
 */
DEFINE_PER_CPU(struct fgft_txn *, fgft_irq_top);

static __always_inline struct fgft_txn *top_of_ctx(unsigned int ctx)
{
	struct fgft_txn *t;

	if (!ctx)
		return task_top(current);
	t = this_cpu_read(fgft_irq_top);
	return t && t->ctx == ctx ? t : NULL;
}

struct fgft_txn *fgft_top(void)
{
	return top_of_ctx(fgft_ctx());
}

struct fgft_txn *fgft_active_slow(void)
{
	struct fgft_txn *t = fgft_top();

	while (t && t->state != FGFT_TXN_BODY)
		t = t->outer;
	if (t)
		this_cpu_write(fgft_hit, t);
	return t;
}

/*
 * The innermost transaction: the one whose body is running when it has no
 * inner transaction open (every kernel-call wrapper asks, so this is the
 * per-cpu last hit, with no lock), else the top of the task's stack.
 */
struct fgft_txn *fgft_current(void)
{
	struct fgft_txn *t = fgft_active();

	if (likely(t && !READ_ONCE(t->nr_inner)))
		return t;
	return fgft_top();
}
EXPORT_SYMBOL_GPL(fgft_current);

void fgft_irreversible(struct fgft_txn *txn)
{
	if (txn)
		txn->irreversible = 1;
}
EXPORT_SYMBOL_GPL(fgft_irreversible);

bool fgft_txn_retriable(struct fgft_txn *txn)
{
	return !IS_ERR_OR_NULL(txn) && !txn->irreversible;
}
EXPORT_SYMBOL_GPL(fgft_txn_retriable);

void fgft_dev_touch(void)
{
	struct fgft_txn *t = fgft_current();

	if (t)
		t->dev_touched = 1;
}
EXPORT_SYMBOL_GPL(fgft_dev_touch);

static __always_inline void txn_push(struct fgft_txn *t)
{
	struct fgft_txn *outer = top_of_ctx(t->ctx);

	t->outer = outer;
	t->nr_inner = 0;
	if (outer)
		outer->nr_inner++;
	if (t->ctx) {
		/* An interrupt in between pushes and pops: the top is back. */
		t->below = this_cpu_read(fgft_irq_top);
		barrier();
		this_cpu_write(fgft_irq_top, t);
	} else {
		/*
		 * What preempt_notifier_register() does, inline on the fast
		 * path; the scheduler walks the list when it switches the task.
		 */
		preempt_disable();
		hlist_add_head(&t->pn.link, &current->preempt_notifiers);
		preempt_enable();
	}
}

static __always_inline void txn_pop(struct fgft_txn *t)
{
	if (t->ctx) {
		this_cpu_write(fgft_irq_top, t->below);
	} else {
		preempt_disable();
		hlist_del(&t->pn.link);
		preempt_enable();
	}
	if (t->outer)
		t->outer->nr_inner--;
}

/* ---- pool ---- */

static DEFINE_RAW_SPINLOCK(fgft_pool_lock);
static struct fgft_txn *fgft_pool_head;
/*
 * Free transactions per cpu, one for process context and one for the
 * interrupt contexts, taken and given back without a lock.
 */
static DEFINE_PER_CPU(struct fgft_txn *, fgft_spare[2]);
static LIST_HEAD(fgft_pool_all);

static struct fgft_txn *txn_new(gfp_t gfp)
{
	struct fgft_txn *t = kzalloc(sizeof(*t), gfp);
	unsigned long flags;

	if (!t)
		return NULL;
	preempt_notifier_init(&t->pn, &fgft_pn_ops);
	fgft_rtab_init(&t->rtab);
	fgft_objtrack_init(&t->objs);
	fgft_undo_init(&t->log);
	raw_spin_lock_irqsave(&fgft_pool_lock, flags);
	list_add(&t->all, &fgft_pool_all);
	raw_spin_unlock_irqrestore(&fgft_pool_lock, flags);
	atomic_inc(&fgft_pool_size);
	return t;
}

static noinline struct fgft_txn *txn_alloc_slow(void)
{
	struct fgft_txn *t;
	unsigned long flags;
	bool sleep = preemptible() && !rcu_preempt_depth();

	raw_spin_lock_irqsave(&fgft_pool_lock, flags);
	t = fgft_pool_head;
	if (t)
		fgft_pool_head = t->next_free;
	raw_spin_unlock_irqrestore(&fgft_pool_lock, flags);
	if (t)
		return t;
	return txn_new(sleep ? GFP_KERNEL : GFP_ATOMIC | __GFP_NOWARN);
}

static __always_inline struct fgft_txn *txn_alloc(void)
{
	struct fgft_txn *t = this_cpu_xchg(fgft_spare[!!fgft_ctx()], NULL);

	return likely(t) ? t : txn_alloc_slow();
}

/*
 * Whether a table holds nothing: a transaction that granted, copied or
 * logged nothing (an empty one, or one whose objects are all in place and
 * whose grants were batched elsewhere) skips the resets.
 */
static bool rtab_idle(const struct fgft_rtab *r)
{
	return !r->ng && !r->ix.n;
}

static bool objs_idle(const struct fgft_objtrack *o)
{
	return !o->n && !o->byk.n && !o->byc.n &&
	       (!o->arena || (!o->arena->used && !o->arena->next));
}

/*
 * What a pooled transaction keeps of its range table and tracker: empty,
 * big arrays given back (only for one that used them: ->tables).
 */
static void txn_trim(struct fgft_txn *t)
{
	const u32 keep = FGFT_POOL_KEEP;

	if (!rtab_idle(&t->rtab) || t->rtab.gcap > keep ||
	    t->rtab.ix.cap > keep)
		fgft_rtab_trim(&t->rtab, keep);
	if (!objs_idle(&t->objs) || t->objs.cap > keep ||
	    t->objs.byk.cap > keep || t->objs.byc.cap > keep)
		fgft_objtrack_trim(&t->objs, keep);
}

/* This cpu's spare is taken: @t goes to the pool. */
static noinline void txn_spare_full(struct fgft_txn *t)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&fgft_pool_lock, flags);
	t->next_free = fgft_pool_head;
	fgft_pool_head = t;
	raw_spin_unlock_irqrestore(&fgft_pool_lock, flags);
}

/* The last step of a release: @t is free, back to this cpu or the pool. */
static __always_inline void txn_give_back(struct fgft_txn *t)
{
	WRITE_ONCE(t->active, 0);
	t->state = FGFT_TXN_FREE;
	WRITE_ONCE(t->task, NULL);
	t = this_cpu_xchg(fgft_spare[!!t->ctx], t);
	if (unlikely(t))
		txn_spare_full(t);
}

/* Gives @t back clean: fgft_txn_begin() sets only its identity. */
static __always_inline void txn_release(struct fgft_txn *t)
{
	if (t->tables) {
		txn_trim(t);
		t->tables = 0;
	}
	if (t->log.n || t->log.cap > FGFT_POOL_KEEP)
		fgft_undo_trim(&t->log, FGFT_POOL_KEEP);
	if (unlikely(t->failed || t->fault_addr || t->cause)) {
		t->failed = 0;
		t->quiet = 0;
		t->cause = FGFT_CAUSE_NONE;
		t->t_fault = 0;
		t->fault_ip = 0;
		t->fault_addr = 0;
		t->fault_len = 0;
		t->fault_rights = 0;
	}
	t->dreg = NULL;
	t->ncells = 0;
	t->checkpointed = 0;
	t->dev_touched = 0;
	t->irreversible = 0;
	if (t->nkret) {
		memset(t->kret, 0, sizeof(t->kret));
		t->nkret = 0;
	}
	t->logging = 0;
	t->wlog.n = 0;
	if (t->wlog.cap > FGFT_POOL_KEEP) {
		fgft_mem_free(t->wlog.r);
		t->wlog.r = NULL;
		t->wlog.cap = 0;
	}
	txn_give_back(t);
}

static void pool_destroy(void)
{
	struct fgft_txn *t, *n;
	int cpu;

	list_for_each_entry_safe(t, n, &fgft_pool_all, all) {
		list_del(&t->all);
		fgft_rtab_destroy(&t->rtab);
		fgft_objtrack_destroy(&t->objs);
		fgft_undo_destroy(&t->log);
		fgft_mem_free(t->wlog.r);
		kfree(t);
	}
	fgft_pool_head = NULL;
	atomic_set(&fgft_pool_size, 0);
	for_each_possible_cpu(cpu) {
		per_cpu(fgft_spare[0], cpu) = NULL;
		per_cpu(fgft_spare[1], cpu) = NULL;
	}
}

/* ---- locks (the undo log's release hook) ---- */

static void fgft_release_lock(void *ctx, u32 kind, void *lock,
			      unsigned long flags)
{
	switch (kind) {
	case FGFT_LOCK_SPIN:
		spin_unlock(lock);
		break;
	case FGFT_LOCK_SPIN_IRQSAVE:
		spin_unlock_irqrestore(lock, flags);
		break;
	case FGFT_LOCK_SPIN_IRQ:
		spin_unlock_irq(lock);
		break;
	case FGFT_LOCK_SPIN_BH:
		spin_unlock_bh(lock);
		break;
	case FGFT_LOCK_MUTEX:
		mutex_unlock(lock);
		break;
	case FGFT_LOCK_RCU:
		rcu_read_unlock();
		break;
	case FGFT_LOCK_BH:
		local_bh_enable();
		break;
	case FGFT_LOCK_CALL:
		((void (*)(void *))flags)(lock);
		break;
	case FGFT_LOCK_RAW_SPIN:
		raw_spin_unlock(lock);
		break;
	case FGFT_LOCK_RAW_SPIN_IRQSAVE:
		raw_spin_unlock_irqrestore(lock, flags);
		break;
	case FGFT_LOCK_RAW_SPIN_IRQ:
		raw_spin_unlock_irq(lock);
		break;
	default:
		WARN_ONCE(1, "fgft: unknown lock kind %u\n", kind);
	}
}

static const struct fgft_undo_ops fgft_lock_ops = {
	.unlock = fgft_release_lock,
};

/* ---- statistics ---- */

DEFINE_PER_CPU(struct fgft_counts, fgft_gcounts);

u64 fgft_counts_sum(const struct fgft_counts __percpu *c, bool commits)
{
	u64 n = 0;
	int cpu;

	for_each_possible_cpu(cpu) {
		const struct fgft_counts *p = per_cpu_ptr(c, cpu);

		n += commits ? READ_ONCE(p->commits) : READ_ONCE(p->txns);
	}
	return n;
}

void fgft_counts_zero(struct fgft_counts __percpu *c)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct fgft_counts *p = per_cpu_ptr(c, cpu);

		WRITE_ONCE(p->txns, 0);
		WRITE_ONCE(p->commits, 0);
	}
}

/* @m = max(@m, @ns), lock-free. */
static void stat_max(atomic64_t *m, u64 ns)
{
	u64 max = atomic64_read(m);

	while (ns > max) {
		u64 old = atomic64_cmpxchg(m, max, ns);

		if (old == max)
			break;
		max = old;
	}
}

void fgft_stats_recovery(u64 ns)
{
	int b = 0;

	atomic64_inc(&fgft_gstats.rec_count);
	atomic64_add(ns, &fgft_gstats.rec_sum_ns);
	stat_max(&fgft_gstats.rec_max_ns, ns);
	if (ns >= 256)
		b = min_t(int, ilog2(ns) - 7, FGFT_HIST_BUCKETS - 1);
	atomic64_inc(&fgft_gstats.rec_hist[b]);
}

void fgft_stats_read(struct fgft_stats *st)
{
	int i;

	memset(st, 0, sizeof(*st));
	st->txns = fgft_counts_sum(&fgft_gcounts, false);
	st->commits = fgft_counts_sum(&fgft_gcounts, true);
	for (i = 0; i < FGFT_CAUSE_NR; i++)
		st->aborts[i] = atomic64_read(&fgft_gstats.aborts[i]);
	st->recoveries = atomic64_read(&fgft_gstats.rec_count);
	st->recovery_ns_sum = atomic64_read(&fgft_gstats.rec_sum_ns);
	st->recovery_ns_max = atomic64_read(&fgft_gstats.rec_max_ns);
	st->refusals = atomic64_read(&fgft_gstats.refusals);
	st->residue_fixups = atomic64_read(&fgft_gstats.residue_fixups);
	st->missing_unlocks = atomic64_read(&fgft_gstats.missing_unlocks);
	st->restores = atomic64_read(&fgft_gstats.restores);
	st->restores_skipped = atomic64_read(&fgft_gstats.restores_skipped);
	st->retries = atomic64_read(&fgft_gstats.retries);
	st->retried = atomic64_read(&fgft_gstats.retried);
	st->retry_ns_sum = atomic64_read(&fgft_gstats.retry_sum_ns);
	st->retry_ns_max = atomic64_read(&fgft_gstats.retry_max_ns);
	st->mem_live = atomic_long_read(&fgft_mem_live);
	st->open = st->txns - st->commits;
	for (i = 0; i < FGFT_CAUSE_NR; i++)
		st->open -= st->aborts[i];
	st->pool = atomic_read(&fgft_pool_size);
}
EXPORT_SYMBOL_GPL(fgft_stats_read);

/* ---- transactions ---- */

static int txn_err(const struct fgft_txn *t)
{
	return t->ep && t->ep->err ? t->ep->err : -EIO;
}

static noinline int txn_checkpoint(struct fgft_txn *t)
{
	struct fgft_txn *o;
	int err;

	t->dreg = fgft_devreg_get(t->dev);
	if (!t->dreg)
		return 0;
	/* A nested transaction on the same device keeps the outer checkpoint. */
	for (o = t->outer; o; o = o->outer)
		if (o->dev == t->dev && o->dreg)
			return 0;
	err = fgft_devreg_checkpoint(t->dreg, t->dev);
	if (err) {
		fgft_devreg_put(t->dreg);
		t->dreg = NULL;
		return err;
	}
	t->checkpointed = 1;
	return 0;
}

static noinline struct fgft_txn *txn_begin_failed(struct fgft_txn *t, int err)
{
	txn_pop(t);
	txn_release(t);
	atomic64_inc(&fgft_gstats.begin_errors);
	return ERR_PTR(err);
}

struct fgft_txn *fgft_txn_begin(struct fgft_entry *ep, void *dev)
{
	struct fgft_entry_rt *rt = ep ? ep->rt : NULL;
	struct fgft_txn *t;
	int err;

	if ((rt && !READ_ONCE(rt->isolate)) || in_nmi()) {
		atomic64_inc(&fgft_gstats.begin_disabled);
		return NULL;
	}
	t = txn_alloc();
	if (!t) {
		atomic64_inc(&fgft_gstats.begin_errors);
		return ERR_PTR(-ENOMEM);
	}
	/* The rest is clean: txn_release() left it so. */
	t->ep = ep;
	t->rt = rt;
	t->dev = dev;
	t->ctx = fgft_ctx();
	t->state = FGFT_TXN_OPEN;
	/* Events are summed only for stage-stamped stubs. */
	if (rt && READ_ONCE(rt->stamped))
		memset(t->ev, 0, sizeof(t->ev));
	WRITE_ONCE(t->task, current);
	txn_push(t);
	if (dev) {
		err = txn_checkpoint(t);
		if (err)
			return txn_begin_failed(t, err);
	}
	this_cpu_inc(fgft_gcounts.txns);
	if (rt)
		this_cpu_inc(rt->counts->txns);
	return t;
}
EXPORT_SYMBOL_GPL(fgft_txn_begin);

/* Repairs what a fault left behind once the tracked locks are released. */
static void txn_fix_residue(struct fgft_txn *t)
{
	bool fixed = false;

	if (!t->saved_irqs_off && irqs_disabled()) {
		local_irq_enable();
		fixed = true;
	}
	while (rcu_preempt_depth() > t->saved_rcu) {
		rcu_read_unlock();
		fixed = true;
	}
	while (in_task() && !irqs_disabled() &&
	       (softirq_count() & ~SOFTIRQ_OFFSET) >
	       (t->saved_sc & ~SOFTIRQ_OFFSET)) {
		local_bh_enable();
		fixed = true;
	}
	while ((preempt_count() & PREEMPT_MASK) >
	       (t->saved_pc & PREEMPT_MASK)) {
		preempt_enable();
		fixed = true;
	}
	if (fixed) {
		atomic64_inc(&fgft_gstats.residue_fixups);
		pr_warn_ratelimited("%s: repaired irq/preempt/rcu state left by a fault\n",
				    t->ep && t->ep->name ? t->ep->name : "txn");
	}
}

/*
 * Writes the logged old bytes back, newest first, while the transaction
 * still holds its locks (before the undo log releases them).
 */
static void wlog_replay(struct fgft_txn *t)
{
	u32 i = t->wlog.n;

	while (i--) {
		const struct fgft_wrec *r = &t->wlog.r[i];

		/* Readable when logged, and frees wait for the commit. */
		memcpy((void *)r->addr, r->old, r->len);
	}
	t->wlog.n = 0;
}

/*
 * A committed transaction's writes belong to its enclosing one when that
 * one logs too: its abort must write them back as well.
 */
static void wlog_hand_up(struct fgft_txn *t)
{
	struct fgft_txn *o = t->outer;
	u32 i;

	if (!o || !o->logging || !t->wlog.n)
		goto out;
	for (i = 0; i < t->wlog.n; i++) {
		const struct fgft_wrec *r = &t->wlog.r[i];

		if (o->wlog.n == o->wlog.cap) {
			u32 ncap = o->wlog.cap ? o->wlog.cap * 2 : 64;
			struct fgft_wrec *nr;

			nr = fgft_mem_realloc(o->wlog.r, ncap * sizeof(*nr));
			if (!nr) {
				pr_warn_ratelimited("fgft: write log of an outer transaction lost %u records\n",
						    t->wlog.n - i);
				break;
			}
			o->wlog.r = nr;
			o->wlog.cap = ncap;
		}
		o->wlog.r[o->wlog.n++] = *r;
	}
out:
	t->wlog.n = 0;
}

/*
 * The recovery of a trap the kernel printed nothing for (a divide error, a
 * general protection fault, BUG() or a stack-protector failure of SFI code)
 * is noted when the transaction ends, outside the trap, and at most once a
 * minute: a driver that faults on every call must not keep a CPU busy on
 * the console.  Every recovery is counted in debugfs.
 */
static DEFINE_RATELIMIT_STATE(fgft_quiet_rs, 60 * HZ, 1);
static atomic_t fgft_quiet_unnoted = ATOMIC_INIT(0);

static void note_quiet_recovery(struct fgft_txn *t)
{
	const char *w;

	if (t->cause == FGFT_CAUSE_STACK)
		w = "stack-protector failure";
	else if (t->trapnr == X86_TRAP_DE)
		w = "divide error";
	else if (t->trapnr == X86_TRAP_UD)
		w = "BUG()";
	else if (t->trapnr == X86_TRAP_GP)
		w = "general protection fault";
	else
		w = "trap";

	if (!__ratelimit(&fgft_quiet_rs)) {
		atomic_inc(&fgft_quiet_unnoted);
		return;
	}
	pr_warn("%s: recovered: %s at %pS caught, transaction aborted (%d more recovered since the last note; all in debugfs fgft/stats)\n",
		t->ep && t->ep->name ? t->ep->name : "txn", w,
		(void *)t->fault_ip, atomic_xchg(&fgft_quiet_unnoted, 0));
}

/* Ends @t (the innermost transaction of its task and context). */
static noinline int txn_finish(struct fgft_txn *t, bool abort)
{
	struct fgft_entry_rt *rt = t->rt;
	int ret = abort ? txn_err(t) : 0;

	if (unlikely(t->wlog.n)) {
		if (abort)
			wlog_replay(t);
		else
			wlog_hand_up(t);
	}
	if (t->log.n) {
		fgft_undo_finish(&t->log, abort, &fgft_lock_ops);
		if (t->log.missing_unlocks)
			atomic64_add(t->log.missing_unlocks,
				     &fgft_gstats.missing_unlocks);
	}
	if (abort && t->failed)
		txn_fix_residue(t);
	if (rt && READ_ONCE(rt->stamped) && rt->stages)
		fgft_stage_events(rt, t);
	/* What an inner call did to a device, the outer did (commit or not). */
	if (t->dev_touched && t->outer)
		t->outer->dev_touched = 1;
	if (t->dreg) {
		if (abort && (t->dev_touched || (t->ep && t->ep->always_restore))) {
			fgft_devreg_restore(t->dreg, t->dev);
			atomic64_inc(&fgft_gstats.restores);
		} else if (abort) {
			/* No register access, no device call: nothing to bring back. */
			atomic64_inc(&fgft_gstats.restores_skipped);
		}
		fgft_devreg_put(t->dreg);
		t->dreg = NULL;
	}
	if (t->tables) {
		if (!rtab_idle(&t->rtab))
			fgft_rtab_reset(&t->rtab);
		if (!objs_idle(&t->objs))
			fgft_objtrack_reset(&t->objs);
	}
	if (abort) {
		enum fgft_cause c = t->failed ? t->cause : FGFT_CAUSE_NONE;

		atomic64_inc(&fgft_gstats.aborts[c]);
		if (rt)
			atomic64_inc(&rt->aborts[c]);
		if (t->failed) {
			fgft_stats_recovery(local_clock() - t->t_fault);
			if (t->quiet)
				note_quiet_recovery(t);
		}
	} else {
		this_cpu_inc(fgft_gcounts.commits);
		if (rt)
			this_cpu_inc(rt->counts->commits);
	}
	txn_pop(t);
	txn_release(t);
	return ret;
}

/* Aborts the transactions opened inside @t and still open. */
static bool abort_inner(struct fgft_txn *t)
{
	struct fgft_txn *top;

	if (!t->nr_inner && t->state != FGFT_TXN_FREE)
		return true;
	for (;;) {
		top = top_of_ctx(t->ctx);
		if (!top)
			return false;
		if (top == t)
			return true;
		txn_finish(top, true);
	}
}

static bool txn_owned(const struct fgft_txn *t)
{
	return t->task == current && t->ctx == fgft_ctx();
}

long fgft_txn_call(struct fgft_txn *txn, long (*fn)(void *arg), void *arg)
{
	struct fgft_txn *prev = NULL, *o;
	unsigned long sp = current_stack_pointer;
	unsigned long base = (unsigned long)task_stack_page(current);
	long ret;

	if (IS_ERR_OR_NULL(txn) || !fn)
		return -EINVAL;
	if (WARN_ON_ONCE(!txn_owned(txn) || txn->state != FGFT_TXN_OPEN))
		return -EINVAL;
	if (txn->failed)
		return txn_err(txn);
	for (o = txn->outer; o; o = o->outer) {
		if (o->state == FGFT_TXN_BODY) {
			prev = o;
			break;
		}
	}
	if (sp >= base && sp < base + THREAD_SIZE) {
		txn->stack_lo = base;
		txn->stack_hi = base + THREAD_SIZE;
	} else {
		/* An interrupt stack: the body's frames and its caller's. */
		txn->stack_lo = sp - THREAD_SIZE;
		txn->stack_hi = sp + FGFT_IRQ_CALLER_WINDOW;
	}
	txn->saved_pc = preempt_count();
	txn->saved_sc = softirq_count();
	txn->saved_irqs_off = irqs_disabled();
	txn->saved_rcu = rcu_preempt_depth();
	if (prev)
		WRITE_ONCE(prev->active, 0);
	/* What the interrupted code or the enclosing body checks against. */
	fgft_win_get(&txn->caller_win);
	fgft_win_clear();
	fgft_win_body(txn);
	txn->state = FGFT_TXN_BODY;
	WRITE_ONCE(txn->active, 1);
	this_cpu_write(fgft_hit, txn);
	barrier();
	ret = fgft_jb_call(&txn->jb, fn, arg);
	barrier();
	/* Returned or aborted here: its device accesses count. */
	fgft_win_fold();
	WRITE_ONCE(txn->active, 0);
	txn->state = FGFT_TXN_OPEN;
	/*
	 * The caller's window: the interrupted code's, the enclosing body's
	 * (of this task, also right on another cpu after a sleep) or empty.
	 */
	fgft_win_put(&txn->caller_win);
	if (prev) {
		WRITE_ONCE(prev->active, 1);
		this_cpu_write(fgft_hit, prev);
	}
	if (READ_ONCE(txn->failed)) {
		abort_inner(txn);
		return txn_err(txn);
	}
	return ret;
}
EXPORT_SYMBOL_GPL(fgft_txn_call);

bool fgft_txn_failed(const struct fgft_txn *txn)
{
	return IS_ERR_OR_NULL(txn) || READ_ONCE(txn->failed);
}
EXPORT_SYMBOL_GPL(fgft_txn_failed);

enum fgft_cause fgft_txn_cause(const struct fgft_txn *txn)
{
	return IS_ERR_OR_NULL(txn) ? FGFT_CAUSE_NONE : READ_ONCE(txn->cause);
}
EXPORT_SYMBOL_GPL(fgft_txn_cause);

/*
 * Whether committing @t (open, owned, innermost, not failed) is only
 * ending it: nothing to write back, undo, restore, reset or sum.
 */
static __always_inline bool txn_plain(const struct fgft_txn *t)
{
	return !(t->tables | t->wlog.n | t->log.n | t->dev_touched) && !t->dreg &&
	       !(t->rt && READ_ONCE(t->rt->stamped));
}

void fgft_txn_commit(struct fgft_txn *txn)
{
	if (IS_ERR_OR_NULL(txn))
		return;
	/* Open, owned, innermost, not failed: the usual case. */
	if (likely(txn->state == FGFT_TXN_OPEN && txn->task == current &&
		   !(txn->nr_inner | txn->failed))) {
		if (!txn_plain(txn)) {
			txn_finish(txn, false);
			return;
		}
		/*
		 * A call that only used objects in place (or an empty one):
		 * what txn_finish() and txn_release() do of it, inline.
		 */
		this_cpu_inc(fgft_gcounts.commits);
		if (txn->rt)
			this_cpu_inc(txn->rt->counts->commits);
		txn_pop(txn);
		txn->logging = 0;
		txn_give_back(txn);
		return;
	}
	if (WARN_ON_ONCE(txn->state != FGFT_TXN_OPEN))
		return;
	WARN_ON_ONCE(txn->task != current);
	if (!abort_inner(txn)) {
		WARN_ONCE(1, "fgft: commit of a transaction that is not open\n");
		return;
	}
	if (WARN_ONCE(txn->failed, "fgft: commit of a failed transaction, aborting\n")) {
		txn_finish(txn, true);
		return;
	}
	txn_finish(txn, false);
}
EXPORT_SYMBOL_GPL(fgft_txn_commit);

int fgft_txn_abort(struct fgft_txn *txn)
{
	if (IS_ERR_OR_NULL(txn))
		return -EINVAL;
	if (WARN_ON_ONCE(txn->state != FGFT_TXN_OPEN))
		return txn_err(txn);
	WARN_ON_ONCE(txn->task != current);
	if (!abort_inner(txn)) {
		WARN_ONCE(1, "fgft: abort of a transaction that is not open\n");
		return -EINVAL;
	}
	return txn_finish(txn, true);
}
EXPORT_SYMBOL_GPL(fgft_txn_abort);

static bool fgft_retry = true;
module_param(fgft_retry, bool, 0644);
MODULE_PARM_DESC(fgft_retry, "run an aborted call of a retry entry once more");

u64 fgft_txn_retry(struct fgft_entry *ep, int err)
{
	if (!READ_ONCE(fgft_retry) || !ep)
		return 0;
	atomic64_inc(&fgft_gstats.retries);
	return local_clock() ?: 1;
}
EXPORT_SYMBOL_GPL(fgft_txn_retry);

void fgft_txn_retried(struct fgft_entry *ep, u64 t0)
{
	u64 ns = local_clock() - t0;

	atomic64_inc(&fgft_gstats.retried);
	atomic64_add(ns, &fgft_gstats.retry_sum_ns);
	stat_max(&fgft_gstats.retry_max_ns, ns);
}
EXPORT_SYMBOL_GPL(fgft_txn_retried);

void fgft_fail_active_jump(struct fgft_txn *t, enum fgft_cause cause,
			   unsigned long ip)
{
	if (cause <= FGFT_CAUSE_NONE || cause >= FGFT_CAUSE_NR)
		cause = FGFT_CAUSE_EXPLICIT;
	t->cause = cause;
	t->t_fault = local_clock();
	if (!t->fault_ip)
		t->fault_ip = ip;
	WRITE_ONCE(t->failed, 1);
	fgft_jb_longjmp(&t->jb, FGFT_LANDED);
}

void __noreturn fgft_txn_fail(struct fgft_txn *txn, enum fgft_cause cause)
{
	struct fgft_txn *a = fgft_active();

	if (IS_ERR_OR_NULL(txn) || !txn_owned(txn) ||
	    txn->state != FGFT_TXN_BODY) {
		WARN_ONCE(txn, "fgft: %s() outside its body\n", __func__);
		txn = a;
	}
	if (!txn) {
		pr_crit("%s() called outside any transaction body\n", __func__);
		BUG();
	}
	txn->fault_ip = _RET_IP_;
	fgft_fail_active(txn, cause);
}
EXPORT_SYMBOL_GPL(fgft_txn_fail);

void fgft_fail_cause(enum fgft_cause cause)
{
	struct fgft_txn *t = fgft_active();

	if (!t)
		return;
	t->fault_ip = _RET_IP_;
	fgft_fail_active(t, cause);
}
EXPORT_SYMBOL_GPL(fgft_fail_cause);

/* ---- the fault trap ---- */

static bool ip_recoverable(unsigned long ip)
{
	if (ip >= MODULES_VADDR && ip < MODULES_END)
		return true;
	return READ_ONCE(recover_core_text);
}

/*
 * The SFI module's own __stack_chk_fail is one trapping instruction (a
 * call there would break objtool's user-access rules): a trap in a function
 * of that name is a stack-protector failure of SFI code.
 */
static bool stack_chk_trap(unsigned long ip)
{
	char name[KSYM_SYMBOL_LEN];

	sprint_symbol_no_offset(name, ip);
	return !strncmp(name, "__stack_chk_fail", strlen("__stack_chk_fail")) &&
	       (name[strlen("__stack_chk_fail")] == ' ' ||
		!name[strlen("__stack_chk_fail")]);
}

/* A trap at BUG() of SFI code: ud2 right after FGFT_SFI_BUG_MARK. */
static bool sfi_bug_trap(unsigned long ip)
{
	char mark[FGFT_SFI_BUG_MARK_LEN];

	if (copy_from_kernel_nofault(mark, (void *)(ip - sizeof(mark)),
				     sizeof(mark)))
		return false;
	return !memcmp(mark, FGFT_SFI_BUG_MARK, sizeof(mark));
}

static int fgft_die(struct notifier_block *nb, unsigned long val, void *data)
{
	struct die_args *args = data;
	struct pt_regs *regs = args->regs;
	enum fgft_cause cause;
	struct fgft_txn *t;

	switch (val) {
	case DIE_OOPS:
		cause = FGFT_CAUSE_OOPS;
		break;
	case DIE_GPF:
		cause = FGFT_CAUSE_GPF;
		break;
	case DIE_TRAP:
		cause = FGFT_CAUSE_TRAP;
		break;
	default:
		return NOTIFY_DONE;
	}
	if (fgft_none_open() || !regs || user_mode(regs) ||
	    in_nmi())
		return NOTIFY_DONE;
	if (args->trapnr == X86_TRAP_DF || args->trapnr == X86_TRAP_MC)
		return NOTIFY_DONE;
	t = fgft_active();
	if (!t)
		return NOTIFY_DONE;
	/* Only a fault of the body itself: on its stack, below its caller. */
	if (regs->sp >= t->jb.rsp || regs->sp < t->stack_lo)
		return NOTIFY_DONE;
	if (!ip_recoverable(regs->ip))
		return NOTIFY_DONE;
	/*
	 * Only an oops, or a BUG() the kernel's bug table knows, has printed
	 * a report by now: the runtime's line says that it ends here.  The
	 * other traps are noted when the transaction ends.
	 */
	t->quiet = val != DIE_OOPS;
	t->trapnr = args->trapnr;
	if (args->trapnr == X86_TRAP_UD) {
		if (stack_chk_trap(regs->ip))
			cause = FGFT_CAUSE_STACK;
		else if (!sfi_bug_trap(regs->ip))
			t->quiet = 0;
	}
	t->cause = cause;
	t->t_fault = local_clock();
	t->fault_ip = regs->ip;
	WRITE_ONCE(t->failed, 1);
	if (!t->quiet)
		pr_err("%s: recovered: fault at %pS caught, transaction aborted\n",
		       t->ep && t->ep->name ? t->ep->name : "txn",
		       (void *)regs->ip);
	regs->bx = t->jb.rbx;
	regs->bp = t->jb.rbp;
	regs->r12 = t->jb.r12;
	regs->r13 = t->jb.r13;
	regs->r14 = t->jb.r14;
	regs->r15 = t->jb.r15;
	regs->sp = t->jb.rsp;
	regs->ip = t->jb.rip;
	regs->ax = FGFT_LANDED;
	regs->flags &= ~X86_EFLAGS_AC;
	return NOTIFY_STOP;
}

static struct notifier_block fgft_die_nb = {
	.notifier_call = fgft_die,
	.priority = INT_MAX - 1,
};

/* ---- range table API ---- */

int fgft_map(struct fgft_txn *txn, const void *addr, size_t len,
	     unsigned int rights)
{
	int id;

	if (IS_ERR_OR_NULL(txn))
		return -EINVAL;
	txn->tables = 1;
	id = fgft_rtab_map(&txn->rtab, (uintptr_t)addr, len, rights);
	return id < 0 ? id : 0;
}
EXPORT_SYMBOL_GPL(fgft_map);

int fgft_map_derived(struct fgft_txn *txn, const void *parent,
		     const void *addr, size_t len, unsigned int rights)
{
	int id;

	if (IS_ERR_OR_NULL(txn))
		return -EINVAL;
	txn->tables = 1;
	id = fgft_rtab_map_derived(&txn->rtab, (uintptr_t)parent,
				   (uintptr_t)addr, len, rights);
	return id < 0 ? id : 0;
}
EXPORT_SYMBOL_GPL(fgft_map_derived);

void fgft_txn_log_stores(struct fgft_txn *txn)
{
	if (IS_ERR_OR_NULL(txn))
		return;
	txn->logging = 1;
	/* Stores from now on need records: none passes inline. */
	fgft_win_clear();
}
EXPORT_SYMBOL_GPL(fgft_txn_log_stores);

int fgft_place_obj(struct fgft_txn *txn, const void *obj, size_t size,
		   unsigned int rights)
{
	if (IS_ERR_OR_NULL(txn))
		return -EINVAL;
	if (!obj || !size)
		return 0;
	txn->tables = 1;
	/*
	 * Placed already when a grant starts here and covers it (the range
	 * table is the visited set: one lookup, and the tracker is left out,
	 * since the translation of an object used in place is the identity).
	 */
	return fgft_rtab_place(&txn->rtab, (uintptr_t)obj, size, rights);
}
EXPORT_SYMBOL_GPL(fgft_place_obj);

void fgft_unmap(struct fgft_txn *txn, const void *addr)
{
	if (IS_ERR_OR_NULL(txn))
		return;
	/* The inline window may hold what is revoked. */
	fgft_win_clear();
	fgft_rtab_unmap(&txn->rtab, (uintptr_t)addr, FGFT_REVOKE_BATCH);
}
EXPORT_SYMBOL_GPL(fgft_unmap);

/* ---- object tracker API ---- */

void *fgft_obj_copy(struct fgft_txn *txn, const void *kobj, size_t ksize,
		    size_t csize)
{
	if (IS_ERR_OR_NULL(txn))
		return NULL;
	txn->tables = 1;
	fgft_win_copies(txn);
	return fgft_objtrack_copy(&txn->objs, kobj, ksize, csize);
}
EXPORT_SYMBOL_GPL(fgft_obj_copy);

int fgft_obj_track(struct fgft_txn *txn, const void *kobj, size_t ksize,
		   void *copy, size_t csize)
{
	if (IS_ERR_OR_NULL(txn))
		return -EINVAL;
	txn->tables = 1;
	fgft_win_copies(txn);
	return fgft_objtrack_add(&txn->objs, kobj, ksize, copy, csize);
}
EXPORT_SYMBOL_GPL(fgft_obj_track);

void *fgft_obj_find(struct fgft_txn *txn, const void *kobj)
{
	/* An entry marshaled in place copies nothing: most lookups. */
	if (IS_ERR_OR_NULL(txn) || !txn->objs.n)
		return NULL;
	return fgft_objtrack_find(&txn->objs, kobj);
}
EXPORT_SYMBOL_GPL(fgft_obj_find);

void *fgft_obj_orig(struct fgft_txn *txn, const void *copy)
{
	return IS_ERR_OR_NULL(txn) ? NULL : fgft_objtrack_orig(&txn->objs, copy);
}
EXPORT_SYMBOL_GPL(fgft_obj_orig);

void *fgft_obj_to_copy(struct fgft_txn *txn, const void *kptr)
{
	return IS_ERR_OR_NULL(txn) ? NULL :
		fgft_objtrack_to_copy(&txn->objs, kptr);
}
EXPORT_SYMBOL_GPL(fgft_obj_to_copy);

void *fgft_obj_to_orig(struct fgft_txn *txn, const void *cptr)
{
	return IS_ERR_OR_NULL(txn) ? NULL :
		fgft_objtrack_to_orig(&txn->objs, cptr);
}
EXPORT_SYMBOL_GPL(fgft_obj_to_orig);

void *fgft_kobj(struct fgft_txn *txn, const void *p)
{
	void *o;
	u8 byte;

	if (IS_ERR_OR_NULL(txn) || !p)
		return (void *)p;
	if (txn->objs.n) {
		o = fgft_objtrack_to_orig(&txn->objs, p);
		if (o)
			return o;
	}
	/*
	 * Not a copy: a kernel object the SFI code holds a pointer to.  A
	 * NULL-based or wild pointer would fault inside the kernel function
	 * (outside SFI code, with an oops report), so probe it first; memory
	 * the transaction used last (its windows), or its stack, needs no
	 * probe.  The probe is cheaper than a lookup in the range table
	 * (granted memory passes it too).
	 */
	if (fgft_rtab_hit(&txn->rtab, (uintptr_t)p, 1, FGFT_R) ||
	    fgft_on_stack(txn, (unsigned long)p, 1) ||
	    (this_cpu_read(fgft_win.body) == txn && fgft_win_allows(p, 1, FGFT_R)))
		return (void *)p;
	if (copy_from_kernel_nofault(&byte, p, sizeof(byte))) {
		pr_err_ratelimited("%s: kernel-call argument %p is not kernel memory\n",
				   txn->ep && txn->ep->name ?
				   txn->ep->name : "txn", p);
		if (txn->state == FGFT_TXN_BODY && txn_owned(txn))
			fgft_fail_active(txn, FGFT_CAUSE_RANGE);
	}
	return (void *)p;
}
EXPORT_SYMBOL_GPL(fgft_kobj);

void fgft_kret(struct fgft_txn *txn, const void *p)
{
	if (IS_ERR_OR_NULL(txn) || IS_ERR_OR_NULL(p))
		return;
	/* A ring: nkret stays in [1, FGFT_KRET_NR] once a pointer is noted. */
	txn->kret[txn->nkret % FGFT_KRET_NR] = p;
	txn->nkret = txn->nkret % FGFT_KRET_NR + 1;
}
EXPORT_SYMBOL_GPL(fgft_kret);

void *fgft_ret_ptr(const void *p, size_t len)
{
	struct fgft_txn *t = fgft_active();
	unsigned long a = (unsigned long)p;
	void *o;
	int i;

	if (!t || IS_ERR_OR_NULL(p))
		return (void *)p;
	if (!len)
		len = 1;
	if (t->objs.n) {
		o = fgft_objtrack_to_orig(&t->objs, p);
		/* All of it inside the original, as the caller will read it. */
		if (o && fgft_objtrack_to_orig(&t->objs, (const char *)p + len - 1) ==
			 (char *)o + len - 1)
			return o;
		if (o || fgft_objtrack_in_copy(&t->objs, p))
			goto refuse;
	}
	for (i = 0; i < FGFT_KRET_NR; i++)
		if (t->kret[i] == p)
			return (void *)p;
	/* The body's own frames, below its caller's, end with it. */
	if (a + len >= a && !(a < t->jb.rsp && a + len > t->stack_lo) &&
	    fgft_allows(t, a, len, FGFT_R))
		return (void *)p;
refuse:
	fgft_note_refusal(t, a, len, FGFT_R, _RET_IP_);
	pr_err_ratelimited("%s: returned pointer %p (%zu bytes) lies outside the call's grants\n",
			   t->ep && t->ep->name ? t->ep->name : "txn", p, len);
	fgft_fail_active(t, FGFT_CAUSE_RET);
}
EXPORT_SYMBOL_GPL(fgft_ret_ptr);

void fgft_out_ptr(const void *old, const void *p)
{
	struct fgft_txn *t = fgft_active();
	unsigned long a = (unsigned long)p;
	int i;

	if (!t || p == old || IS_ERR_OR_NULL(p))
		return;
	if (t->objs.n) {
		/* A copy: copy-out writes its original. */
		if (fgft_objtrack_to_orig(&t->objs, p))
			return;
		if (fgft_objtrack_in_copy(&t->objs, p))
			goto refuse;
		/* The original of a copy the transaction made. */
		if (fgft_objtrack_to_copy(&t->objs, p))
			return;
	}
	for (i = 0; i < FGFT_KRET_NR; i++)
		if (t->kret[i] == p)
			return;
	/* Granted memory, the body's own frames excepted (they end with it). */
	if (!(a < t->jb.rsp && a >= t->stack_lo) && fgft_allows(t, a, 1, FGFT_R))
		return;
refuse:
	fgft_note_refusal(t, a, 1, FGFT_R, _RET_IP_);
	pr_err_ratelimited("%s: copy-out would store pointer %p (was %p) in a kernel object: outside the call's grants\n",
			   t->ep && t->ep->name ? t->ep->name : "txn", p, old);
	fgft_fail_active(t, FGFT_CAUSE_RET);
}
EXPORT_SYMBOL_GPL(fgft_out_ptr);

void *fgft_shadow(struct fgft_txn *txn, void *p, size_t size)
{
	unsigned long lo = (unsigned long)p, *w;
	void *sh;
	size_t i;

	if (IS_ERR_OR_NULL(txn) || !p)
		return p;
	/*
	 * Only the stack dies with the body: memory elsewhere (a wait entry
	 * in the driver's object) is the kernel object it is, or its copy's.
	 */
	if (!object_is_on_stack(p))
		return fgft_kobj(txn, p);
	sh = fgft_objtrack_find(&txn->objs, p);
	if (sh)
		return sh;
	txn->tables = 1;
	fgft_win_copies(txn);
	sh = fgft_objtrack_copy(&txn->objs, p, size, size);
	if (!sh) {
		if (txn->state == FGFT_TXN_BODY && txn_owned(txn))
			fgft_fail_active(txn, FGFT_CAUSE_EXPLICIT);
		return p;
	}
	memcpy(sh, p, size);
	w = sh;
	for (i = 0; i < size / sizeof(*w); i++)
		if (w[i] >= lo && w[i] < lo + size)
			w[i] += (unsigned long)sh - lo;
	return sh;
}
EXPORT_SYMBOL_GPL(fgft_shadow);

/* Releases the locks the body has unlocked (mutexes too when @mutexes). */
static void release_unlocked(struct fgft_txn *txn, bool mutexes)
{
	struct fgft_undolog *l;
	struct fgft_rec *r;
	u32 i;

	if (IS_ERR_OR_NULL(txn) || !txn_owned(txn))
		return;
	l = &txn->log;
	/* Most bodies hold no lock here: no record to walk. */
	if (!l->nlocks)
		return;
	/* Newest first, so interrupt flags come back in the order saved. */
	i = fgft_undo_locks_from(l);
	while ((r = fgft_undo_lock_prev(l, &i))) {
		if (r->released || !r->unlock_pending ||
		    (!mutexes && r->lock_kind == FGFT_LOCK_MUTEX))
			continue;
		r->released = 1;
		l->nlocks--;
		fgft_release_lock(NULL, r->lock_kind, (void *)r->a[0], r->a[1]);
	}
}

void fgft_sleep_point(struct fgft_txn *txn)
{
	release_unlocked(txn, false);
}
EXPORT_SYMBOL_GPL(fgft_sleep_point);

void fgft_callback_point(struct fgft_txn *txn)
{
	release_unlocked(txn, true);
}
EXPORT_SYMBOL_GPL(fgft_callback_point);

/* Below this, lib/iomap.c takes a cookie for a port (or warns): no access. */
#define FGFT_PIO_RESERVED	0x40000UL

void fgft_iomem_check(const void __iomem *addr)
{
	const void *p = (const void __force *)addr;
	struct fgft_txn *txn;

	/* A port cookie, or the first byte in device memory. */
	if ((unsigned long)p < FGFT_PIO_RESERVED ||
	    fgft_mmio_ok((unsigned long)p, 1))
		return;
	txn = fgft_current();
	if (IS_ERR_OR_NULL(txn))
		return;
	pr_err_ratelimited("%s: I/O address %p is neither a port nor device memory\n",
			   txn->ep && txn->ep->name ? txn->ep->name : "txn",
			   p);
	if (txn->state == FGFT_TXN_BODY && txn_owned(txn))
		fgft_fail_active(txn, FGFT_CAUSE_RANGE);
}
EXPORT_SYMBOL_GPL(fgft_iomem_check);

/* ---- undo log API ---- */

int fgft_undo_push(struct fgft_txn *txn, fgft_comp_fn fn, unsigned long a0,
		   unsigned long a1, unsigned long a2, unsigned long a3)
{
	if (IS_ERR_OR_NULL(txn))
		return -EINVAL;
	return fgft_undo_add_in(&txn->log, FGFT_REC_UNDO, fn, a0, a1, a2, a3);
}
EXPORT_SYMBOL_GPL(fgft_undo_push);

int fgft_undo_push_late(struct fgft_txn *txn, fgft_comp_fn fn,
			unsigned long a0, unsigned long a1, unsigned long a2,
			unsigned long a3)
{
	if (IS_ERR_OR_NULL(txn))
		return -EINVAL;
	return fgft_undo_add_in(&txn->log, FGFT_REC_UNDO_LATE, fn, a0, a1, a2, a3);
}
EXPORT_SYMBOL_GPL(fgft_undo_push_late);

int fgft_defer_push(struct fgft_txn *txn, fgft_comp_fn fn, unsigned long a0,
		    unsigned long a1, unsigned long a2, unsigned long a3)
{
	if (IS_ERR_OR_NULL(txn))
		return -EINVAL;
	return fgft_undo_add_in(&txn->log, FGFT_REC_DEFER, fn, a0, a1, a2, a3);
}
EXPORT_SYMBOL_GPL(fgft_defer_push);

static void fgft_commit_run(unsigned long cell, unsigned long a1,
			    unsigned long a2, unsigned long a3)
{
	struct fgft_commit_cell *c = (struct fgft_commit_cell *)cell;

	if (!c->cancelled)
		c->fn(c->a);
	if (c->own)
		fgft_mem_free(c);
}

static void fgft_commit_cancel(unsigned long cell, unsigned long a1,
			       unsigned long a2, unsigned long a3)
{
	((struct fgft_commit_cell *)cell)->cancelled = 1;
}

/*
 * Fails the running body when it cannot record what it must (no memory):
 * a refused range check aborts it like any other (the null page is never
 * granted).
 */
static void fgft_commit_fail(void)
{
	fgft_check_or_fail(NULL, 1, FGFT_W);
}

void fgft_commit_push(struct fgft_txn *txn, fgft_commit_fn fn,
		      unsigned long a0, unsigned long a1, unsigned long a2,
		      unsigned long a3)
{
	struct fgft_commit_cell *c;

	if (IS_ERR_OR_NULL(txn))
		return;
	if (txn->ncells < FGFT_TXN_CELLS) {
		c = &txn->cells[txn->ncells++];
		c->cancelled = 0;
		c->own = false;
	} else {
		c = fgft_mem_zalloc(sizeof(*c));
		if (!c) {
			fgft_commit_fail();
			return;
		}
		c->own = true;
	}
	c->fn = fn;
	c->a[0] = a0;
	c->a[1] = a1;
	c->a[2] = a2;
	c->a[3] = a3;
	if (fgft_defer_push(txn, fgft_commit_run, (unsigned long)c, 0, 0, 0)) {
		if (c->own)
			fgft_mem_free(c);
		else
			txn->ncells--;
		fgft_commit_fail();
		return;
	}
	/* Without the undo record the call is skipped on commit too. */
	if (fgft_undo_push(txn, fgft_commit_cancel, (unsigned long)c, 0, 0, 0))
		c->cancelled = 1;
}
EXPORT_SYMBOL_GPL(fgft_commit_push);

/*
 * Fails the running body of @txn (it is the caller's), or warns when the
 * call did not come from a body and there is nowhere to land.
 */
static void lock_misuse(struct fgft_txn *txn, const char *what, void *lock)
{
	pr_err_ratelimited("%s: %s %p inside a transaction\n",
			   txn->ep && txn->ep->name ? txn->ep->name : "txn",
			   what, lock);
	if (txn->state == FGFT_TXN_BODY && txn_owned(txn))
		fgft_fail_active(txn, FGFT_CAUSE_LOCK);
	WARN_ONCE(1, "fgft: %s outside a transaction body\n", what);
}

/*
 * A lock word comes from SFI code: a NULL or wild pointer would fault
 * inside the core kernel's lock code, which is not recoverable (and may
 * have disabled interrupts first).  Probes it; a lock that cannot be read
 * fails the running body before anything is taken or released.
 */
static bool lock_readable(struct fgft_txn *txn, void *lock)
{
	uintptr_t a = (uintptr_t)lock;
	u32 word;

	/*
	 * Memory the body was granted lately, or its stack, is mapped: no
	 * probe (a lock lives in the object it guards, which the body has
	 * just used).
	 */
	if (fgft_rtab_hit(&txn->rtab, a, sizeof(word), FGFT_R) ||
	    fgft_rtab_hit_victim(&txn->rtab, a, sizeof(word), FGFT_R) ||
	    fgft_on_stack(txn, a, sizeof(word)))
		return true;
	if (!copy_from_kernel_nofault(&word, lock, sizeof(word)))
		return true;
	pr_err_ratelimited("%s: lock %p is not kernel memory\n",
			   txn->ep && txn->ep->name ? txn->ep->name : "txn",
			   lock);
	if (txn->state == FGFT_TXN_BODY && txn_owned(txn))
		fgft_fail_active(txn, FGFT_CAUSE_RANGE);
	WARN_ONCE(1, "fgft: bad lock outside a transaction body\n");
	return false;
}

/*
 * Common part of the lock wrappers.  Returns true when the caller must take
 * the lock and record it; false when the transaction already holds it with
 * an unlock pending (two-phase locking keeps holding it).
 */
static bool lock_prepare(struct fgft_txn *txn, void *lock)
{
	struct fgft_rec *r;

	if (!lock_readable(txn, lock))
		return false;
	r = fgft_undo_find_lock(&txn->log, lock);
	if (r) {
		if (r->unlock_pending) {
			r->unlock_pending = 0;
			return false;
		}
		lock_misuse(txn, "re-lock of held lock", lock);
		return false;
	}
	if (fgft_undo_room(&txn->log, 1)) {
		if (txn->state == FGFT_TXN_BODY && txn_owned(txn))
			fgft_fail_active(txn, FGFT_CAUSE_EXPLICIT);
		/* Not in a body: take the lock untracked rather than lose it. */
		return true;
	}
	return true;
}

static void lock_record(struct fgft_txn *txn, u32 kind, void *lock,
			unsigned long flags)
{
	if (txn->log.n < txn->log.cap)
		fgft_undo_add_lock(&txn->log, kind, lock, flags);
}

void fgft_spin_lock(struct fgft_txn *txn, spinlock_t *lock)
{
	if (IS_ERR_OR_NULL(txn)) {
		spin_lock(lock);
		return;
	}
	if (!lock_prepare(txn, lock))
		return;
	spin_lock(lock);
	lock_record(txn, FGFT_LOCK_SPIN, lock, 0);
}
EXPORT_SYMBOL_GPL(fgft_spin_lock);

int fgft_spin_trylock(struct fgft_txn *txn, spinlock_t *lock)
{
	if (IS_ERR_OR_NULL(txn))
		return spin_trylock(lock);
	if (!lock_prepare(txn, lock))
		return 1;
	if (!spin_trylock(lock))
		return 0;
	lock_record(txn, FGFT_LOCK_SPIN, lock, 0);
	return 1;
}
EXPORT_SYMBOL_GPL(fgft_spin_trylock);

void fgft_spin_lock_irqsave(struct fgft_txn *txn, spinlock_t *lock)
{
	unsigned long flags;

	if (IS_ERR_OR_NULL(txn)) {
		WARN_ONCE(1, "fgft: %s() without a transaction\n", __func__);
		spin_lock_irq(lock);
		return;
	}
	if (!lock_prepare(txn, lock))
		return;
	spin_lock_irqsave(lock, flags);
	lock_record(txn, FGFT_LOCK_SPIN_IRQSAVE, lock, flags);
}
EXPORT_SYMBOL_GPL(fgft_spin_lock_irqsave);

void fgft_spin_lock_irq(struct fgft_txn *txn, spinlock_t *lock)
{
	if (IS_ERR_OR_NULL(txn)) {
		spin_lock_irq(lock);
		return;
	}
	if (!lock_prepare(txn, lock))
		return;
	spin_lock_irq(lock);
	lock_record(txn, FGFT_LOCK_SPIN_IRQ, lock, 0);
}
EXPORT_SYMBOL_GPL(fgft_spin_lock_irq);

void fgft_spin_lock_bh(struct fgft_txn *txn, spinlock_t *lock)
{
	if (IS_ERR_OR_NULL(txn)) {
		spin_lock_bh(lock);
		return;
	}
	if (!lock_prepare(txn, lock))
		return;
	spin_lock_bh(lock);
	lock_record(txn, FGFT_LOCK_SPIN_BH, lock, 0);
}
EXPORT_SYMBOL_GPL(fgft_spin_lock_bh);

/*
 * raw_spinlock_t: the same tracking with the raw primitives.  Without
 * PREEMPT_RT a spinlock_t is a raw_spinlock_t inside; with it, a spinlock_t
 * is a sleeping rt_mutex and a raw_spinlock_t the only spinning lock.
 */
void fgft_raw_spin_lock(struct fgft_txn *txn, raw_spinlock_t *lock)
{
	if (IS_ERR_OR_NULL(txn)) {
		raw_spin_lock(lock);
		return;
	}
	if (!lock_prepare(txn, lock))
		return;
	raw_spin_lock(lock);
	lock_record(txn, FGFT_LOCK_RAW_SPIN, lock, 0);
}
EXPORT_SYMBOL_GPL(fgft_raw_spin_lock);

void fgft_raw_spin_lock_irqsave(struct fgft_txn *txn, raw_spinlock_t *lock)
{
	unsigned long flags;

	if (IS_ERR_OR_NULL(txn)) {
		WARN_ONCE(1, "fgft: %s() without a transaction\n", __func__);
		raw_spin_lock_irq(lock);
		return;
	}
	if (!lock_prepare(txn, lock))
		return;
	raw_spin_lock_irqsave(lock, flags);
	lock_record(txn, FGFT_LOCK_RAW_SPIN_IRQSAVE, lock, flags);
}
EXPORT_SYMBOL_GPL(fgft_raw_spin_lock_irqsave);

void fgft_raw_spin_lock_irq(struct fgft_txn *txn, raw_spinlock_t *lock)
{
	if (IS_ERR_OR_NULL(txn)) {
		raw_spin_lock_irq(lock);
		return;
	}
	if (!lock_prepare(txn, lock))
		return;
	raw_spin_lock_irq(lock);
	lock_record(txn, FGFT_LOCK_RAW_SPIN_IRQ, lock, 0);
}
EXPORT_SYMBOL_GPL(fgft_raw_spin_lock_irq);

void fgft_mutex_lock(struct fgft_txn *txn, struct mutex *lock)
{
	if (IS_ERR_OR_NULL(txn)) {
		mutex_lock(lock);
		return;
	}
	if (!lock_prepare(txn, lock))
		return;
	mutex_lock(lock);
	lock_record(txn, FGFT_LOCK_MUTEX, lock, 0);
}
EXPORT_SYMBOL_GPL(fgft_mutex_lock);

int fgft_mutex_trylock(struct fgft_txn *txn, struct mutex *lock)
{
	if (IS_ERR_OR_NULL(txn))
		return mutex_trylock(lock);
	if (!lock_prepare(txn, lock))
		return 1;
	if (!mutex_trylock(lock))
		return 0;
	lock_record(txn, FGFT_LOCK_MUTEX, lock, 0);
	return 1;
}
EXPORT_SYMBOL_GPL(fgft_mutex_trylock);

int fgft_mutex_lock_interruptible(struct fgft_txn *txn, struct mutex *lock)
{
	int ret;

	if (IS_ERR_OR_NULL(txn))
		return mutex_lock_interruptible(lock);
	if (!lock_prepare(txn, lock))
		return 0;
	ret = mutex_lock_interruptible(lock);
	if (ret)
		return ret;
	lock_record(txn, FGFT_LOCK_MUTEX, lock, 0);
	return 0;
}
EXPORT_SYMBOL_GPL(fgft_mutex_lock_interruptible);

/*
 * An unlock inside the transaction: a lock it took stays held until the end
 * (two-phase locking); one it did not take is released at the end.
 */
static bool unlock_typed(struct fgft_txn *txn, u32 kind, void *lock,
			 unsigned long flags)
{
	struct fgft_rec *r = fgft_undo_find_lock(&txn->log, lock);

	if (r) {
		r->unlock_pending = 1;
		return true;
	}
	if (!lock_readable(txn, lock))
		return false;
	if (!kind) {
		lock_misuse(txn, "untyped unlock of a lock it did not take",
			    lock);
		return false;
	}
	if (fgft_undo_add_unlock(&txn->log, kind, lock, flags)) {
		/* No memory to defer it: release now rather than leak it. */
		fgft_release_lock(NULL, kind, lock, flags);
	}
	return true;
}

void fgft_unlock(struct fgft_txn *txn, void *lock)
{
	if (WARN_ON_ONCE(IS_ERR_OR_NULL(txn)))
		return;
	unlock_typed(txn, 0, lock, 0);
}
EXPORT_SYMBOL_GPL(fgft_unlock);

void fgft_spin_unlock(struct fgft_txn *txn, spinlock_t *lock)
{
	if (IS_ERR_OR_NULL(txn))
		spin_unlock(lock);
	else
		unlock_typed(txn, FGFT_LOCK_SPIN, lock, 0);
}
EXPORT_SYMBOL_GPL(fgft_spin_unlock);

void fgft_spin_unlock_irq(struct fgft_txn *txn, spinlock_t *lock)
{
	if (IS_ERR_OR_NULL(txn))
		spin_unlock_irq(lock);
	else
		unlock_typed(txn, FGFT_LOCK_SPIN_IRQ, lock, 0);
}
EXPORT_SYMBOL_GPL(fgft_spin_unlock_irq);

void fgft_spin_unlock_irqrestore(struct fgft_txn *txn, spinlock_t *lock,
				 unsigned long flags)
{
	if (IS_ERR_OR_NULL(txn))
		spin_unlock_irqrestore(lock, flags);
	else
		unlock_typed(txn, FGFT_LOCK_SPIN_IRQSAVE, lock, flags);
}
EXPORT_SYMBOL_GPL(fgft_spin_unlock_irqrestore);

void fgft_spin_unlock_bh(struct fgft_txn *txn, spinlock_t *lock)
{
	if (IS_ERR_OR_NULL(txn))
		spin_unlock_bh(lock);
	else
		unlock_typed(txn, FGFT_LOCK_SPIN_BH, lock, 0);
}
EXPORT_SYMBOL_GPL(fgft_spin_unlock_bh);

void fgft_raw_spin_unlock(struct fgft_txn *txn, raw_spinlock_t *lock)
{
	if (IS_ERR_OR_NULL(txn))
		raw_spin_unlock(lock);
	else
		unlock_typed(txn, FGFT_LOCK_RAW_SPIN, lock, 0);
}
EXPORT_SYMBOL_GPL(fgft_raw_spin_unlock);

void fgft_raw_spin_unlock_irq(struct fgft_txn *txn, raw_spinlock_t *lock)
{
	if (IS_ERR_OR_NULL(txn))
		raw_spin_unlock_irq(lock);
	else
		unlock_typed(txn, FGFT_LOCK_RAW_SPIN_IRQ, lock, 0);
}
EXPORT_SYMBOL_GPL(fgft_raw_spin_unlock_irq);

void fgft_raw_spin_unlock_irqrestore(struct fgft_txn *txn,
				     raw_spinlock_t *lock, unsigned long flags)
{
	if (IS_ERR_OR_NULL(txn))
		raw_spin_unlock_irqrestore(lock, flags);
	else
		unlock_typed(txn, FGFT_LOCK_RAW_SPIN_IRQSAVE, lock, flags);
}
EXPORT_SYMBOL_GPL(fgft_raw_spin_unlock_irqrestore);

void fgft_mutex_unlock(struct fgft_txn *txn, struct mutex *lock)
{
	if (IS_ERR_OR_NULL(txn))
		mutex_unlock(lock);
	else
		unlock_typed(txn, FGFT_LOCK_MUTEX, lock, 0);
}
EXPORT_SYMBOL_GPL(fgft_mutex_unlock);

/*
 * Sections without a lock word: an RCU read-side section, bottom halves
 * disabled.  They nest, so each entry is its own record, keyed by a tag of
 * the kind; a leave marks the newest entry still open, and two-phase
 * locking keeps it until the end (or a sleep or callback point), as for
 * spin locks.  A leave of a section entered before the transaction is
 * deferred to its end.
 */
static u8 fgft_rcu_tag, fgft_bh_tag;

static void section_take(u32 kind)
{
	if (kind == FGFT_LOCK_RCU)
		rcu_read_lock();
	else
		local_bh_disable();
}

/* The newest record of @tag not released, unlock pending or not. */
static struct fgft_rec *section_rec(struct fgft_txn *txn, void *tag,
				    bool pending)
{
	struct fgft_undolog *l = &txn->log;
	u32 i = fgft_undo_locks_from(l);
	struct fgft_rec *r;

	while ((r = fgft_undo_lock_prev(l, &i))) {
		if (!r->released && r->a[0] == (unsigned long)tag &&
		    !!r->unlock_pending == pending)
			return r;
	}
	return NULL;
}

static void section_enter(struct fgft_txn *txn, u32 kind, void *tag)
{
	struct fgft_rec *r;

	if (IS_ERR_OR_NULL(txn)) {
		section_take(kind);
		return;
	}
	/* Entered again after a leave two-phase locking kept open. */
	r = section_rec(txn, tag, true);
	if (r) {
		r->unlock_pending = 0;
		return;
	}
	if (fgft_undo_room(&txn->log, 1) &&
	    txn->state == FGFT_TXN_BODY && txn_owned(txn)) {
		fgft_fail_active(txn, FGFT_CAUSE_EXPLICIT);
		return;
	}
	section_take(kind);
	lock_record(txn, kind, tag, 0);
}

static void section_leave(struct fgft_txn *txn, u32 kind, void *tag)
{
	struct fgft_rec *r;

	if (IS_ERR_OR_NULL(txn)) {
		fgft_release_lock(NULL, kind, tag, 0);
		return;
	}
	r = section_rec(txn, tag, false);
	if (r) {
		r->unlock_pending = 1;
		return;
	}
	if (fgft_undo_add_unlock(&txn->log, kind, tag, 0))
		fgft_release_lock(NULL, kind, tag, 0);
}

void fgft_rcu_read_lock(struct fgft_txn *txn)
{
	section_enter(txn, FGFT_LOCK_RCU, &fgft_rcu_tag);
}
EXPORT_SYMBOL_GPL(fgft_rcu_read_lock);

void fgft_rcu_read_unlock(struct fgft_txn *txn)
{
	section_leave(txn, FGFT_LOCK_RCU, &fgft_rcu_tag);
}
EXPORT_SYMBOL_GPL(fgft_rcu_read_unlock);

void fgft_local_bh_disable(struct fgft_txn *txn)
{
	section_enter(txn, FGFT_LOCK_BH, &fgft_bh_tag);
}
EXPORT_SYMBOL_GPL(fgft_local_bh_disable);

void fgft_local_bh_enable(struct fgft_txn *txn)
{
	section_leave(txn, FGFT_LOCK_BH, &fgft_bh_tag);
}
EXPORT_SYMBOL_GPL(fgft_local_bh_enable);

/*
 * Locks taken by a kernel function the runtime has no primitive for
 * (netif_tx_lock_bh(), down(), rtnl_lock()): the generated wrapper asks
 * fgft_call_lock() first and, when told to, calls the lock function and
 * then fgft_call_locked().  A record is keyed by the function's argument
 * and @release, the generated function that calls the matching unlock; it
 * is held to the end of the transaction (two-phase locking), released at a
 * sleep or callback point after the body unlocked it, and on abort.
 */
static struct fgft_rec *call_rec(struct fgft_txn *txn, void *arg,
				 void (*release)(void *))
{
	struct fgft_undolog *l = &txn->log;
	u32 i = fgft_undo_locks_from(l);
	struct fgft_rec *r;

	while ((r = fgft_undo_lock_prev(l, &i))) {
		if (!r->released && r->lock_kind == FGFT_LOCK_CALL &&
		    r->a[0] == (unsigned long)arg &&
		    r->a[1] == (unsigned long)release)
			return r;
	}
	return NULL;
}

bool fgft_call_lock(struct fgft_txn *txn, void *arg, void (*release)(void *))
{
	struct fgft_rec *r;

	if (IS_ERR_OR_NULL(txn))
		return true;
	r = call_rec(txn, arg, release);
	if (r) {
		if (r->unlock_pending) {
			r->unlock_pending = 0;
			return false;
		}
		lock_misuse(txn, "re-lock of held lock", arg);
		return false;
	}
	if (fgft_undo_room(&txn->log, 1) &&
	    txn->state == FGFT_TXN_BODY && txn_owned(txn))
		fgft_fail_active(txn, FGFT_CAUSE_EXPLICIT);
	return true;
}
EXPORT_SYMBOL_GPL(fgft_call_lock);

void fgft_call_locked(struct fgft_txn *txn, void *arg, void (*release)(void *))
{
	if (IS_ERR_OR_NULL(txn))
		return;
	lock_record(txn, FGFT_LOCK_CALL, arg, (unsigned long)release);
}
EXPORT_SYMBOL_GPL(fgft_call_locked);

void fgft_call_unlock(struct fgft_txn *txn, void *arg, void (*release)(void *))
{
	struct fgft_rec *r;

	if (IS_ERR_OR_NULL(txn)) {
		release(arg);
		return;
	}
	r = call_rec(txn, arg, release);
	if (r && !r->unlock_pending) {
		r->unlock_pending = 1;
		return;
	}
	/* Taken before the transaction: released at its end. */
	if (fgft_undo_add_unlock(&txn->log, FGFT_LOCK_CALL, arg,
				 (unsigned long)release))
		release(arg);
}
EXPORT_SYMBOL_GPL(fgft_call_unlock);

/* ---- module ---- */

static int __init fgft_init(void)
{
	int i, err;

	preempt_notifier_inc();
	/* Pre-fill the pool so atomic contexts rarely allocate. */
	for (i = 0; i < 2 * num_online_cpus() + 2; i++) {
		struct fgft_txn *t = txn_new(GFP_KERNEL);

		if (!t)
			break;
		txn_release(t);
	}
	fgft_quiet_init();
	err = fgft_check_init();
	if (err)
		goto out_pool;
	err = register_die_notifier(&fgft_die_nb);
	if (err)
		goto out_check;
	err = fgft_debugfs_init();
	if (err)
		goto out_die;
	pr_info("runtime loaded (%d pooled transactions)\n",
		atomic_read(&fgft_pool_size));
	return 0;

out_die:
	unregister_die_notifier(&fgft_die_nb);
out_check:
	fgft_check_exit();
out_pool:
	pool_destroy();
	preempt_notifier_dec();
	return err;
}

static void __exit fgft_exit(void)
{
	struct fgft_stats st;
	int cpu;

	fgft_debugfs_exit();
	unregister_die_notifier(&fgft_die_nb);
	fgft_check_exit();
	fgft_checkpoint_exit();
	fgft_stats_read(&st);
	WARN_ON(st.open);
	for_each_possible_cpu(cpu) {
		per_cpu(fgft_hit, cpu) = NULL;
		WARN_ON(per_cpu(fgft_irq_top, cpu));
	}
	pool_destroy();
	preempt_notifier_dec();
	WARN_ON(atomic_long_read(&fgft_mem_live));
}

module_init(fgft_init);
module_exit(fgft_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("fgft runtime: driver entry points as transactions");

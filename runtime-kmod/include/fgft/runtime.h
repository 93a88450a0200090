/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fgft runtime API: the contract between code that fgft-cc generates and the
 * fgft runtime module (fgft_rt.ko).
 *
 * A transaction wraps one call of an isolated driver entry point:
 *
 *	txn = fgft_txn_begin(&ep, dev);		checkpoint the device
 *	if (!txn)				isolation switched off
 *		return original(args);
 *	if (IS_ERR(txn))
 *		return PTR_ERR(txn);
 *	copy = fgft_obj_copy(txn, kobj, size);	marshal (object tracker)
 *	fgft_map(txn, copy, size, FGFT_RW);	grant the SFI code access
 *	ret = fgft_txn_call(txn, thunk, &args);	run the SFI copy
 *	if (fgft_txn_failed(txn))
 *		return fgft_txn_abort(txn);	undo log, device restore, error
 *	...copy out...
 *	fgft_txn_commit(txn);
 *	return ret;
 *
 * SFI code never sees kernel objects directly, only the copies it was granted.
 * Every load and store it makes goes through fgft_check() (source checks and
 * the compiler's __asan_* call-backs, which this module provides); a check that
 * fails aborts the transaction before the access happens.
 */
#ifndef _FGFT_RUNTIME_H
#define _FGFT_RUNTIME_H

#include <linux/types.h>
#include <linux/compiler.h>
#include <linux/err.h>
#include <linux/spinlock_types.h>
#include <linux/percpu.h>
#include <linux/refcount.h>
#include <asm/asm.h>
#include <asm/msr.h>

struct fgft_txn;
struct mutex;

/*
 * Whether the running context may restore a device at once (the restore
 * sleeps and takes the driver's locks): process context with bottom halves
 * on, outside any RCU read-side section.  preemptible() alone is not
 * enough on PREEMPT_RT, where it holds inside local_bh_disable() and
 * rcu_read_lock(): a transmit (under the queue's lock), a threaded
 * interrupt handler, a NAPI poll.  Elsewhere the restore is deferred.
 * A macro: it needs <linux/sched.h> (rcu_preempt_depth() on 6.1), which
 * the code that restores devices has and this header does not pull in.
 */
#define fgft_may_restore_now() \
	(preemptible() && !softirq_count() && !rcu_preempt_depth())

/* Access rights in the range table. */
#define FGFT_R	0x1u
#define FGFT_W	0x2u
#define FGFT_RW	(FGFT_R | FGFT_W)
/* With FGFT_R/FGFT_W: stores there are never logged (shared DMA memory). */
#define FGFT_NOLOG	0x4u

/*
 * This cpu's inline windows (src/fgft_internal.h says how the runtime
 * keeps them; include/fgft/sfi-as.sh reads them by offset): the grants the
 * loads of the body running here, and its stores that need no write-log
 * record, allowed last, each a start and a span plus one (0: empty).
 */
#define FGFT_WIN_R	4
#define FGFT_WIN_W	2

struct fgft_iwin {
	unsigned long start;
	unsigned long span1;	/* end - start + 1; 0: empty */
	/*
	 * end - start - 7 when the window holds 8 bytes or more, else 0: an
	 * access of up to 8 bytes at a is inside when a - start < lim8
	 * (unsigned), one load and one compare (include/fgft/sfi-as.sh).
	 */
	unsigned long lim8;
};

/* lim8 of a window of @span bytes. */
#define FGFT_WIN_LIM8(span)	((span) >= 8 ? (span) - 7 : 0)

/*
 * One load-check site's cache (include/fgft/sfi-as.sh): the grant that
 * allowed the site's last load that called the runtime, as start and lim8
 * (0: empty).  Whatever site a cache is filled for, it only ever holds a
 * range the running body may read.
 */
struct fgft_site {
	unsigned long start;
	unsigned long lim8;
};

/*
 * MMIO pages per cpu the accessors of SFI code pass inline; an empty one
 * holds a value no masked address equals (bits 3-11 set).
 */
#define FGFT_WIN_IO	2
#define FGFT_IO_EMPTY	(~0UL)

/* Site caches per cpu; a site's number is taken modulo this. */
#define FGFT_SITES	512

struct fgft_pcwin {
	struct fgft_iwin r[FGFT_WIN_R];	/* most recent first */
	struct fgft_iwin w[FGFT_WIN_W];
	/*
	 * The body's stack, [%rsp, stack_hi): loads and stores there pass
	 * inline too (0: none).  Set when a body starts or resumes here.
	 */
	unsigned long stack_hi;
	/*
	 * The transaction whose body runs here (NULL: none), set and put
	 * back with stack_hi; whether that body touched its device here
	 * (the runtime adds it to the transaction when the body stops
	 * running here); whether its transaction tracks copies.  Per-cpu
	 * accesses are not checked, so SFI code's wrappers and register
	 * accessors read and write them inline instead of calling.
	 */
	struct fgft_txn *body;
	u8 touched;
	u8 copies;
	/*
	 * This cpu's FGFT_SITES site caches (never NULL once the runtime is
	 * loaded).  Emptied whenever the windows are: a body starts, stops or
	 * resumes here, or a grant is revoked.
	 */
	struct fgft_site *sites;
	/*
	 * The device-memory pages the MMIO accessors of the body running
	 * here reached last, most recent first (fgft_mmio_check()): page
	 * addresses, FGFT_IO_EMPTY when empty.  Emptied with the windows.
	 */
	unsigned long io[FGFT_WIN_IO];
};

DECLARE_PER_CPU_ALIGNED(struct fgft_pcwin, fgft_win);

/* Whether window @w of this cpu allows @len bytes at @a. */
#define fgft_win_covers(w, a, len) ({					\
	unsigned long __s1 = this_cpu_read(fgft_win.w.span1);		\
									\
	__s1 > (len) &&							\
		(a) - this_cpu_read(fgft_win.w.start) < __s1 - (len);	\
})

/*
 * Whether this cpu's windows allow a load (@rights FGFT_R) or a store that
 * needs no log (FGFT_W) of @len bytes at @p, as the checks inlined into SFI
 * code test them; a load from the body's stack passes too.  The kernel-call
 * wrappers of an SFI module test their arguments here before they call
 * fgft_check_or_fail(), which answers everything else.
 */
static __always_inline bool fgft_win_allows(const void *p, size_t len,
					    unsigned int rights)
{
	unsigned long a = (unsigned long)p;

	/* The body's stack: loads, and stores that need no record. */
	if (a >= current_stack_pointer && a + len >= a &&
	    a + len <= this_cpu_read(fgft_win.stack_hi))
		return true;
	if ((rights & FGFT_R) &&
	    !(fgft_win_covers(r[0], a, len) ||
	      fgft_win_covers(r[1], a, len) ||
	      fgft_win_covers(r[2], a, len) ||
	      fgft_win_covers(r[3], a, len)))
		return false;
	if ((rights & FGFT_W) &&
	    !(fgft_win_covers(w[0], a, len) ||
	      fgft_win_covers(w[1], a, len)))
		return false;
	return rights & FGFT_RW;
}

/* Why a transaction aborted (counted per cause in debugfs). */
enum fgft_cause {
	FGFT_CAUSE_NONE = 0,
	FGFT_CAUSE_OOPS,	/* page fault / oops in SFI code (DIE_OOPS) */
	FGFT_CAUSE_GPF,		/* general protection (DIE_GPF) */
	FGFT_CAUSE_TRAP,	/* divide error, BUG(), other traps (DIE_TRAP) */
	FGFT_CAUSE_RANGE,	/* range-table check refused an access */
	FGFT_CAUSE_EXPLICIT,	/* fgft_txn_fail() called by generated code */
	FGFT_CAUSE_LOCK,	/* lock misuse: re-taking a held lock (added) */
	FGFT_CAUSE_ICALL,	/* a call through a pointer its dispatch refused */
	FGFT_CAUSE_STACK,	/* a stack-protector canary of SFI code changed */
	FGFT_CAUSE_RET,		/* a pointer SFI code returns or writes back lies outside its grants */
	FGFT_CAUSE_ASSERT,	/* a kernel assertion the body's arguments would trip */
	FGFT_CAUSE_NR,
};

struct fgft_entry_rt;	/* runtime-private per-entry state */

/*
 * Added: a driver's heap (heap.c).  The objects a driver whose entry
 * points use kernel objects in place allocates through the table's
 * allocators (`heap = true` in compensations.toml), in its main module or
 * in a transaction that commits, until it frees them through the table's
 * frees.  Such a driver keeps them where no marshaling follows: lists and
 * caches hanging off its inodes (fat's cache of cluster runs).  Its
 * in-place transactions may touch them, their stores logged.  The SFI
 * module defines the heap (it is loaded first); the entries point at it.
 */
struct fgft_heap {
	const char *name;
	void *tab;		/* the runtime's table; NULL before init */
	long nr_live;		/* objects in it (statistics) */
};

int fgft_heap_init(struct fgft_heap *h);
void fgft_heap_destroy(struct fgft_heap *h);
/*
 * @obj, @len bytes, is the driver's: from now on, or from @txn's commit
 * when @txn is not NULL (an abort frees it again).
 */
void fgft_heap_add(struct fgft_heap *h, struct fgft_txn *txn, const void *obj,
		   size_t len);
/*
 * The object starting at @obj, or else the one containing it (a receive
 * buffer freed through its data pointer), goes back to its allocator:
 * called before it does.
 */
void fgft_heap_del(struct fgft_heap *h, const void *obj);
/*
 * The object at @obj is handed over to the kernel (napi_build_skb() makes
 * a receive buffer a frame's head): out of the heap now, or at @txn's
 * commit when @txn is not NULL (an abort leaves it the driver's).
 */
void fgft_heap_out(struct fgft_heap *h, struct fgft_txn *txn, const void *obj);

/*
 * One isolated entry point.  Generated code defines one static instance per
 * entry point and registers it at module init.
 */
struct fgft_entry {
	const char *name;	/* e.g. "e1000_get_regs_len" */
	const char *origin;	/* "drivers/net/ethernet/intel/e1000/e1000_ethtool.c:316" */
	int err;		/* returned to the caller on abort, e.g. -EIO */
	/*
	 * An abort restores the device checkpoint even when the call did not
	 * touch the device (its abort path relies on the restore: a NAPI poll
	 * completed with the device's interrupts still masked).
	 */
	bool always_restore;
	struct fgft_entry_rt *rt;
	/* Added: the driver's heap, for an entry that works in place. */
	struct fgft_heap *heap;
};

int fgft_entry_register(struct fgft_entry *ep);	/* debugfs switch, stats */
void fgft_entry_unregister(struct fgft_entry *ep);

/*
 * Stage times (benchmarks only): a stub generated with `fgft-cc split
 * --stage-times` stamps the cycle counter between the stages of its
 * transaction and hands the stamps over; debugfs entries/NAME/stages shows
 * the sums.  Stamp k is taken before stage k, stamp FGFT_ST_NR after the
 * last; a stage a call skipped has its stamp equal to the previous one.
 */
enum fgft_stage {
	FGFT_ST_BEGIN = 0,	/* fgft_txn_begin (with the device checkpoint) */
	FGFT_ST_GRANT,		/* the SFI module's grants of kernel variables */
	FGFT_ST_COPY_IN,	/* copies and grants of the arguments */
	FGFT_ST_BODY,		/* fgft_txn_call: the checked body, its wrappers */
	FGFT_ST_COPY_OUT,	/* copy-out */
	FGFT_ST_COMMIT,		/* fgft_txn_commit */
	FGFT_ST_NR,
};

static inline u64 fgft_stamp(void)
{
	return rdtsc_ordered();
}

/* One transaction's stamps: @ts[0..FGFT_ST_NR]. */
void fgft_stage_add(struct fgft_entry *ep, const u64 *ts);
/* One call of the entry with isolation off, stamped @t0 before. */
void fgft_stage_plain(struct fgft_entry *ep, u64 t0);

/* ---- transactions ---- */

/*
 * Starts a transaction for @ep on device @dev (the key its checkpoint callbacks
 * were registered under; NULL for none).  Takes the device checkpoint.
 * Returns NULL when isolation is switched off for @ep, an ERR_PTR on failure.
 * Usable in process, softirq and hard-irq context; nests.
 */
struct fgft_txn *fgft_txn_begin(struct fgft_entry *ep, void *dev);

/*
 * Runs @fn(@arg) as the body of @txn.  A fault in the body (oops, GPF, divide
 * error, BUG(), refused range check) lands here: the return value is then
 * meaningless and fgft_txn_failed() is true.
 */
long fgft_txn_call(struct fgft_txn *txn, long (*fn)(void *arg), void *arg);

bool fgft_txn_failed(const struct fgft_txn *txn);
enum fgft_cause fgft_txn_cause(const struct fgft_txn *txn);

/* Releases deferred locks, runs deferred actions, revokes every grant. */
void fgft_txn_commit(struct fgft_txn *txn);

/*
 * Runs the undo log last-in first-out, releases every lock taken inside the
 * transaction, restores the device checkpoint, revokes every grant, frees the
 * transaction.  Returns the entry point's error code.
 */
int fgft_txn_abort(struct fgft_txn *txn);

/*
 * The recovery policy `retry`: called by a stub after fgft_txn_abort()
 * returned @err.  Nonzero when the aborted call is to run once more (it
 * left no trace): the time the retry starts (local_clock(), ns), which the
 * stub hands to fgft_txn_retried() once the retry commits.  Counts the
 * retry (stats: retries); 0 when the module parameter fgft_retry is 0.
 */
u64 fgft_txn_retry(struct fgft_entry *ep, int err);

/*
 * The body made a call no abort undoes (an `irreversible` wrapper called
 * at once: d_splice_alias()): an abort then leaves that call's effect, and
 * the call is not run once more (it would make the call again).
 */
void fgft_irreversible(struct fgft_txn *txn);

/* Before fgft_txn_abort(): whether the call may run once more. */
bool fgft_txn_retriable(struct fgft_txn *txn);

/*
 * The retry that started at @t0 (fgft_txn_retry()) committed: its time is
 * the second half of the recovery (stats: retry_ns_sum, retry_ns_max; the
 * abort's own is recovery_ns_*).
 */
void fgft_txn_retried(struct fgft_entry *ep, u64 t0);

/*
 * Marshaling in place (the I/O path): the stub grants the objects the body
 * uses where they are instead of copying them, and the runtime logs the old
 * bytes of every store the body makes outside its stack (and of the memory
 * a wrapped kernel call is about to write), to write them back on abort.
 * Call after fgft_txn_begin(), before the body.
 */
void fgft_txn_log_stores(struct fgft_txn *txn);

/*
 * Grants @txn the @size bytes at @obj in place, once: returns 1 the first
 * time, 0 when @obj is NULL or already placed, or a negative error.
 */
int fgft_place_obj(struct fgft_txn *txn, const void *obj, size_t size,
		   unsigned int rights);

/*
 * Masks interrupt line @irq for a pause (an aborted handler's device is
 * restored later, in process context): nothing if it is masked already or
 * is no interrupt.
 */
void fgft_irq_quiesce(int irq);

/* The innermost transaction of the current task, or NULL. */
struct fgft_txn *fgft_current(void);

/*
 * fgft_current() for the kernel-call wrappers of SFI code, which run in a
 * body: the transaction whose body runs on this cpu, read inline (struct
 * fgft_pcwin), else the runtime's answer.
 */
static __always_inline struct fgft_txn *fgft_body(void)
{
	struct fgft_txn *t = this_cpu_read(fgft_win.body);

	return likely(t) ? t : fgft_current();
}

/*
 * File systems: before a truncation to @newsize inside a transaction,
 * writes back the dirty page cache past it (an abort puts the size back and
 * must find that data on disk); returns the old size (compensations.toml
 * truncate_setsize).
 */
struct inode;
long fgft_fs_keep_tail(struct inode *inode, loff_t newsize);

/*
 * The undo of insert_inode_locked() (compensations.toml): the new inode of
 * an aborted operation leaves the inode hash and, if it still holds it,
 * its I_NEW lock (waking whoever found it there); the undo of new_inode()
 * then drops it.
 */
void fgft_new_inode_unhash(struct inode *inode);

/*
 * The undo of hlist_del() and hlist_del_init() (compensations.toml): puts
 * @n back where it was, after the node or head whose next pointer was at
 * @pprev.  The chain's lock, held to the end of the transaction, kept
 * everyone else off it in between.
 */
static inline void fgft_hlist_relink(struct hlist_node *n,
				     struct hlist_node **pprev)
{
	struct hlist_node *next = *pprev;

	n->next = next;
	if (next)
		next->pprev = &n->next;
	WRITE_ONCE(n->pprev, pprev);
	WRITE_ONCE(*pprev, n);
}

/*
 * Marks the innermost transaction as having touched its device: SFI code
 * calls it at every register access (the inline accessors, redefined in the
 * SFI module) and device wrappers at every device call.  An aborted
 * transaction that never touched its device leaves the device as it was, so
 * its checkpoint is not restored (unless the entry says always_restore).
 * Outside a transaction it does nothing.
 */
void fgft_dev_touch(void);

/*
 * fgft_dev_touch() for the kernel-call wrappers of SFI code: the body
 * running here notes the access in struct fgft_pcwin, without a call.
 */
static __always_inline void fgft_touch(void)
{
	if (likely(this_cpu_read(fgft_win.body)))
		this_cpu_write(fgft_win.touched, 1);
	else
		fgft_dev_touch();
}

/*
 * The same in SFI code, whose plain per-cpu loads and stores the sanitizer
 * checks (as the offsets they are): one per-cpu OR, written in assembly.
 * SFI code runs only in bodies; a body starts with the flag clear.
 */
static __always_inline void fgft_touch_sfi(void)
{
	this_cpu_or(fgft_win.touched, 1);
}

/* Aborts the current transaction from inside its body (does not return). */
void __noreturn fgft_txn_fail(struct fgft_txn *txn, enum fgft_cause cause);

/*
 * Aborts the running transaction with @cause from a check of SFI code (an
 * indirect call the dispatch does not know): does not return inside one;
 * outside one it returns.  Declared as returning, so objtool reads the
 * caller's code after it as reachable.  (A stack-protector failure of SFI
 * code is a trap in the SFI module's own __stack_chk_fail, which the
 * runtime counts as cause STACK.)
 */
void fgft_fail_cause(enum fgft_cause cause);

/*
 * BUG() in SFI code: a marked ud2 with no entry in the kernel's bug table,
 * so the kernel's #UD handler prints no report before the runtime's die
 * notifier aborts the transaction (a 7-byte nop whose displacement spells
 * "FGFT", then ud2).  The runtime notes the recovery itself, rate limited.
 */
#define FGFT_SFI_BUG_INSNS "nopl 0x54464746(%rax)\n\tud2"
#define FGFT_SFI_BUG_MARK "\x0f\x1f\x80\x46\x47\x46\x54"
#define FGFT_SFI_BUG_MARK_LEN 7

/* ---- range table (a mapping database) ---- */

/* Grants @txn @rights on [@addr, @addr + @len).  Returns 0 or -errno. */
int fgft_map(struct fgft_txn *txn, const void *addr, size_t len,
	     unsigned int rights);

/*
 * Grants a range derived from the grant that contains @parent: it is revoked
 * whenever that grant is.  Rights are at most the parent's.
 */
int fgft_map_derived(struct fgft_txn *txn, const void *parent,
		     const void *addr, size_t len, unsigned int rights);

/* Revokes the grant starting at @addr and everything derived from it. */
void fgft_unmap(struct fgft_txn *txn, const void *addr);

/*
 * True when the current task may access [@addr, @addr + @len) with @rights.
 * Outside a transaction every access is allowed.
 */
bool fgft_check(const void *addr, size_t len, unsigned int rights);

/* Checks and aborts the current transaction (cause RANGE) when refused. */
void fgft_check_or_fail(const void *addr, size_t len, unsigned int rights);

/*
 * Added: ranges every transaction may access, e.g. the SFI module's own
 * .data/.bss (SFI code reaches its globals through pointers, as list_add()
 * on a static list head does).  fgft_map_module() grants a module's
 * writable data RW and its read-only data R until fgft_unmap_module() or
 * the module's unload; the SFI module calls it from its init function with
 * THIS_MODULE.  Checked after the transaction's own grants.
 */
struct module;
int fgft_global_map(const void *addr, size_t len, unsigned int rights);
void fgft_global_unmap(const void *addr);
int fgft_map_module(struct module *mod);
void fgft_unmap_module(struct module *mod);

/*
 * Sanitizer call-backs.  An SFI module is compiled with
 *   -fsanitize=kernel-address -fasan-shadow-offset=0xdffffc0000000000
 *   --param asan-instrumentation-with-call-threshold=0
 *   --param asan-stack=0 --param asan-globals=0
 * so that every load and store it makes, including those inside inlined
 * kernel helpers, calls __asan_{load,store}{1,2,4,8,16,N}_noabort(); this
 * module provides them (and __asan_handle_no_return, __asan_mem*,
 * __hwasan_mem* that gcc 12 and the 6.12 fortify headers emit) and routes
 * them to fgft_check_or_fail().  The kernel's own stack of the current task
 * is always accessible.  Read checks are switched off per SFI build with
 * --param asan-instrument-reads=0 (no load call-backs are emitted at all),
 * or for every module at run time with fgft_rt's check_reads=0 parameter;
 * building fgft_rt with FGFT_NO_READ_CHECKS=1 makes the load call-backs
 * empty.  Atomic and bit operations are inline asm and not instrumented.
 */

/* ---- object tracker ---- */

/*
 * Returns the SFI copy of kernel object @kobj (@ksize bytes), allocating a
 * zeroed one of @csize bytes on first use.  Copies live until the transaction
 * ends.  Returns NULL on allocation failure.
 */
void *fgft_obj_copy(struct fgft_txn *txn, const void *kobj, size_t ksize,
		    size_t csize);
void *fgft_obj_find(struct fgft_txn *txn, const void *kobj);	/* or NULL */
void *fgft_obj_orig(struct fgft_txn *txn, const void *copy);	/* or NULL */

/*
 * Added: track a copy the caller owns (not freed at the end), and translate
 * pointers into the middle of a tracked object to the same offset on the
 * other side (NULL when outside, or past the other side's size).
 */
int fgft_obj_track(struct fgft_txn *txn, const void *kobj, size_t ksize,
		   void *copy, size_t csize);
void *fgft_obj_to_copy(struct fgft_txn *txn, const void *kptr);
void *fgft_obj_to_orig(struct fgft_txn *txn, const void *cptr);
/*
 * Added: the pointer a wrapper hands the kernel for SFI pointer @p: the
 * original of a tracked copy, else @p after a probe -- a pointer that is not
 * kernel memory fails the running body (FGFT_CAUSE_RANGE) instead of
 * faulting inside the kernel function.
 */
void *fgft_kobj(struct fgft_txn *txn, const void *p);

/*
 * Added: the boundary for a pointer SFI code returns to the kernel.
 * fgft_kret() notes a pointer that a wrapped kernel call returned to the
 * body and that the call did not grant (a dentry from d_splice_alias()): the
 * last FGFT_KRET_NR of them.  fgft_ret_ptr() is what an entry's thunk hands
 * back for the body's return value @p, @len bytes behind it: NULL and error
 * pointers as they are; a pointer into a tracked copy as its original (one
 * past the original's end, or into the copy's own tail, is refused: the copy
 * dies with the transaction); as it is, a pointer a kernel call returned or
 * one into memory the call was granted, the body's own frames excepted.  Anything else
 * fails the running body (FGFT_CAUSE_RET): the kernel never dereferences a
 * corrupted return value outside the transaction.
 */
#define FGFT_KRET_NR	8
void fgft_kret(struct fgft_txn *txn, const void *p);
void *fgft_ret_ptr(const void *p, size_t len);
/*
 * Added: the boundary for a pointer copy-out writes back into a kernel
 * object.  An entry's thunk checks, in the body and before copy-out writes
 * anything, each pointer member copy-out will store (@p, in the copy) over
 * the original's (@old): @old itself, NULL, an error pointer, a tracked
 * copy (copy-out stores its original) or original, a pointer a kernel call
 * returned (fgft_kret()) or one into memory the call was granted, its own
 * frames excepted, pass; anything else fails the body (FGFT_CAUSE_RET).
 */
void fgft_out_ptr(const void *old, const void *p);

/*
 * Added: the checked forms of the kernel functions SFI code calls directly
 * (src/direct.c).  sfi-as.sh turns a call of each name that
 * include/fgft/sfi-direct.list lists into a call of fgft_d_NAME, which
 * checks what the kernel function reads through its arguments (granted,
 * or kernel memory a probe finds readable) and writes (granted, logged),
 * then calls it; a corrupted list aborts the body with FGFT_CAUSE_ASSERT
 * before the kernel's list check would BUG().  Not called from C.
 */
struct device;
struct net_device;
struct seq_file;
struct _ddebug;
struct list_head;
struct workqueue_struct;
__kernel_size_t fgft_d_strnlen(const char *s, __kernel_size_t max);
char *fgft_d_strchr(const char *s, int c);
__printf(2, 3) int fgft_d_sprintf(char *buf, const char *fmt, ...);
__printf(3, 4) int fgft_d_snprintf(char *buf, size_t size, const char *fmt,
				   ...);
__printf(3, 4) int fgft_d_scnprintf(char *buf, size_t size, const char *fmt,
				    ...);
__printf(2, 3) int fgft_d_sysfs_emit(char *buf, const char *fmt, ...);
__printf(3, 4) int fgft_d_sysfs_emit_at(char *buf, int at, const char *fmt,
					...);
__printf(2, 3) void fgft_d_seq_printf(struct seq_file *m, const char *fmt,
				      ...);
__scanf(2, 3) int fgft_d_sscanf(const char *buf, const char *fmt, ...);
__printf(1, 2) int fgft_d__printk(const char *fmt, ...);
__printf(1, 2) void fgft_d___warn_printk(const char *fmt, ...);
__printf(2, 3) void fgft_d__dev_err(const struct device *dev,
				    const char *fmt, ...);
__printf(2, 3) void fgft_d__dev_warn(const struct device *dev,
				     const char *fmt, ...);
__printf(2, 3) void fgft_d__dev_info(const struct device *dev,
				     const char *fmt, ...);
__printf(2, 3) void fgft_d__dev_notice(const struct device *dev,
				       const char *fmt, ...);
__printf(3, 4) void fgft_d__dev_printk(const char *level,
				       const struct device *dev,
				       const char *fmt, ...);
__printf(3, 4) int fgft_d_dev_printk_emit(int level, const struct device *dev,
					  const char *fmt, ...);
__printf(2, 3) void fgft_d_netdev_err(const struct net_device *dev,
				      const char *fmt, ...);
__printf(2, 3) void fgft_d_netdev_warn(const struct net_device *dev,
				       const char *fmt, ...);
__printf(2, 3) void fgft_d_netdev_info(const struct net_device *dev,
				       const char *fmt, ...);
__printf(2, 3) void fgft_d_netdev_notice(const struct net_device *dev,
					 const char *fmt, ...);
__printf(3, 4) void fgft_d_netdev_printk(const char *level,
					 const struct net_device *dev,
					 const char *fmt, ...);
__printf(2, 3) void fgft_d___dynamic_pr_debug(struct _ddebug *desc,
					      const char *fmt, ...);
__printf(3, 4) void fgft_d___dynamic_dev_dbg(struct _ddebug *desc,
					     const struct device *dev,
					     const char *fmt, ...);
__printf(3, 4) void fgft_d___dynamic_netdev_dbg(struct _ddebug *desc,
						const struct net_device *dev,
						const char *fmt, ...);
__printf(1, 4) struct workqueue_struct *
fgft_d_alloc_workqueue(const char *fmt, unsigned int flags, int max_active,
		       ...);
unsigned long fgft_d__find_next_bit(const unsigned long *addr,
				    unsigned long nbits, unsigned long start);
unsigned long fgft_d__find_next_zero_bit(const unsigned long *addr,
					 unsigned long nbits,
					 unsigned long start);
unsigned long fgft_d__find_first_bit(const unsigned long *addr,
				     unsigned long size);
unsigned long fgft_d__find_first_zero_bit(const unsigned long *addr,
					  unsigned long size);
bool fgft_d___list_add_valid_or_report(struct list_head *new,
				       struct list_head *prev,
				       struct list_head *next);
bool fgft_d___list_del_entry_valid_or_report(struct list_head *entry);
/* Before 6.6, with CONFIG_DEBUG_LIST. */
bool fgft_d___list_add_valid(struct list_head *new, struct list_head *prev,
			     struct list_head *next);
bool fgft_d___list_del_entry_valid(struct list_head *entry);
void fgft_d_refcount_warn_saturate(refcount_t *r,
				   enum refcount_saturation_type t);

/*
 * fgft_kobj() for the wrappers of SFI code: a pointer into what the body's
 * checks allowed last (or its stack) is a kernel object as it is when the
 * body's transaction tracks no copy: no translation, no probe, no call.
 */
static __always_inline void *fgft_kobj_in(struct fgft_txn *txn, const void *p)
{
	if (txn && txn == this_cpu_read(fgft_win.body) &&
	    !this_cpu_read(fgft_win.copies) && p &&
	    fgft_win_allows(p, 1, FGFT_R))
		return (void *)p;
	return fgft_kobj(txn, p);
}

/*
 * Added: the stand-in a wrapper hands the kernel for SFI memory @p (@size
 * bytes) that the kernel keeps a pointer to after the call, such as a wait
 * entry on the SFI stack.  One per address, alive to the end of the
 * transaction; made on first use from what @p holds, pointers into @p moved
 * to the same offset in the stand-in (a list head's self-links).  An abort
 * so never leaves the kernel pointing into a dead stack frame.  Memory not
 * on the stack is handed over as fgft_kobj() does (the original of a copy);
 * outside a transaction, @p; no memory fails the running body
 * (FGFT_CAUSE_EXPLICIT).
 */
void *fgft_shadow(struct fgft_txn *txn, void *p, size_t size);

/*
 * Added: the body is about to sleep or wait (msleep, udelay, ...).  Spin
 * locks it has already unlocked, whose release two-phase locking defers to
 * the end, are released now: the driver does not hold them across the wait
 * and the kernel must not sleep with them held.  Mutexes stay deferred.
 */
void fgft_sleep_point(struct fgft_txn *txn);

/*
 * Added: a kernel call that may call back into the driver's main module
 * (the mii library calls the driver's mdio_read).  That code takes the
 * driver's locks itself, so every lock the body has already unlocked,
 * mutexes too, is released now rather than at the end.
 */
void fgft_callback_point(struct fgft_txn *txn);

/*
 * Added: an I/O cookie SFI code hands an accessor (ioread32, iowrite8, ...):
 * a port cookie or an address whose page is device memory (as for
 * fgft_mmio_miss()) passes; anything else (a corrupted __iomem pointer, or
 * one to kernel memory) fails the running body instead of faulting inside
 * the accessor or writing that memory.  The cookie is never read.
 */
void fgft_iomem_check(const void __iomem *addr);

/*
 * Added: the slow path of fgft_mmio_check(): an MMIO access of @len bytes at
 * @addr by the body running here passes when each page it touches is mapped
 * in the vmalloc area (where ioremap() maps) to a frame that is no RAM (no
 * struct page, or a reserved one), and its page then goes into this cpu's
 * MMIO pages; anything else (a NULL-based or corrupted register base, a
 * pointer to kernel memory) fails the body (FGFT_CAUSE_RANGE) before the
 * access.  Outside a body it does nothing.
 */
void fgft_mmio_miss(unsigned long addr, unsigned long len,
		    unsigned int rights);

/*
 * The check before each MMIO accessor of SFI code (readl(), writel(), ...;
 * compensations.toml [inline] mmio_read and mmio_write) of @len bytes at @a
 * (@rights FGFT_R or FGFT_W, for the report): an aligned access inside one
 * of this cpu's MMIO pages passes with two per-cpu loads (inline assembly,
 * which the sanitizer does not see); any other calls the runtime.
 */
static __always_inline void fgft_mmio_check(unsigned long a, unsigned long len,
					    unsigned int rights)
{
	unsigned long k = a & (PAGE_MASK | (len - 1));
	unsigned long p0, p1;

	/* Not this_cpu_read(): a plain %gs-relative load, which is checked. */
	asm volatile("movq %%gs:fgft_win+%c1, %0" : "=r" (p0)
		     : "i" (offsetof(struct fgft_pcwin, io[0])));
	if (likely(k == p0))
		return;
	asm volatile("movq %%gs:fgft_win+%c1, %0" : "=r" (p1)
		     : "i" (offsetof(struct fgft_pcwin, io[1])));
	if (likely(k == p1))
		return;
	fgft_mmio_miss(a, len, rights);
}

/*
 * The redefinitions of the MMIO accessors in SFI code: @fn is the kernel's
 * accessor of @len bytes, @a the address, evaluated once.  Each marks the
 * body as having touched its device, as every register accessor does.
 */
#define FGFT_MMIO_R(fn, len, a) ({					\
	__auto_type __fgft_io = (a);					\
									\
	fgft_mmio_check((unsigned long)__fgft_io, len, FGFT_R);	\
	fgft_touch_sfi();						\
	(fn)(__fgft_io);						\
})
#define FGFT_MMIO_W(fn, len, v, a) ({					\
	__auto_type __fgft_io = (a);					\
									\
	fgft_mmio_check((unsigned long)__fgft_io, len, FGFT_W);	\
	fgft_touch_sfi();						\
	(fn)((v), __fgft_io);						\
})

/*
 * The redefinitions of the string port accessors in SFI code (insw(),
 * outsl(), ...; compensations.toml [inline] rep_in and rep_out): @fn moves
 * @n elements of @size bytes between port @port and the buffer @b in one
 * instruction the sanitizer does not see, so the buffer is checked first as
 * a wrapper checks a kernel call's buffer: @rights FGFT_W for rep_in
 * (written, its old bytes logged where the body works in place), FGFT_R
 * for rep_out.
 */
#define FGFT_REP(fn, size, rights, port, b, n) ({			\
	__auto_type __fgft_b = (b);					\
	unsigned long __fgft_n = (n);					\
									\
	fgft_check_or_fail(__fgft_b, __fgft_n * (size), rights);	\
	fgft_touch_sfi();						\
	(fn)((port), __fgft_b, __fgft_n);				\
})

/* Probes of the unnamed arguments of variadic kernel calls. */
#include <fgft/va.h>

/* ---- undo log ---- */

typedef void (*fgft_comp_fn)(unsigned long a0, unsigned long a1,
			     unsigned long a2, unsigned long a3);

/* Run @fn(a0..a3) if the transaction aborts (LIFO). */
int fgft_undo_push(struct fgft_txn *txn, fgft_comp_fn fn, unsigned long a0,
		   unsigned long a1, unsigned long a2, unsigned long a3);

/*
 * The same, run after every other undo record and after the transaction's
 * locks are released: an undo that calls back into the driver, which takes
 * its own locks (iput() of a new inode, which the file system evicts).
 */
int fgft_undo_push_late(struct fgft_txn *txn, fgft_comp_fn fn,
			unsigned long a0, unsigned long a1, unsigned long a2,
			unsigned long a3);

/* Run @fn(a0..a3) when the transaction ends, commit or abort (e.g. kfree). */
int fgft_defer_push(struct fgft_txn *txn, fgft_comp_fn fn, unsigned long a0,
		    unsigned long a1, unsigned long a2, unsigned long a3);

typedef void (*fgft_commit_fn)(unsigned long *a);

/*
 * Defer a kernel call to commit: @fn(a) runs with a[] = @a0..@a3 when the
 * transaction commits, and not at all when it aborts.  Outside a
 * transaction nothing is recorded (the caller makes the call itself).  When
 * it cannot record the call (no memory) it fails the running body.
 */
void fgft_commit_push(struct fgft_txn *txn, fgft_commit_fn fn,
		      unsigned long a0, unsigned long a1, unsigned long a2,
		      unsigned long a3);

/* Lock tracking: locks taken in a transaction are released at its end. */
void fgft_spin_lock(struct fgft_txn *txn, spinlock_t *lock);
void fgft_spin_lock_irqsave(struct fgft_txn *txn, spinlock_t *lock);
void fgft_spin_lock_bh(struct fgft_txn *txn, spinlock_t *lock);
void fgft_mutex_lock(struct fgft_txn *txn, struct mutex *lock);
int fgft_mutex_trylock(struct fgft_txn *txn, struct mutex *lock);
int fgft_mutex_lock_interruptible(struct fgft_txn *txn, struct mutex *lock);
/* An unlock inside the transaction is deferred to its end (two-phase locking). */
void fgft_unlock(struct fgft_txn *txn, void *lock);

/*
 * Added: typed variants.  For a lock taken in the transaction they behave
 * like fgft_unlock(); for one it did not take (e.g. held by the caller) the
 * release is deferred to the end of the transaction and done with the right
 * primitive (fgft_unlock() cannot know it and fails the transaction with
 * FGFT_CAUSE_LOCK instead).  @flags of the irqrestore variant is used only
 * for such a foreign lock.  A lock taken with fgft_spin_lock_irqsave() is
 * released with the flags saved when it was taken.
 */
void fgft_spin_lock_irq(struct fgft_txn *txn, spinlock_t *lock);
int fgft_spin_trylock(struct fgft_txn *txn, spinlock_t *lock);
void fgft_spin_unlock(struct fgft_txn *txn, spinlock_t *lock);
void fgft_spin_unlock_irq(struct fgft_txn *txn, spinlock_t *lock);
void fgft_spin_unlock_irqrestore(struct fgft_txn *txn, spinlock_t *lock,
				 unsigned long flags);
void fgft_spin_unlock_bh(struct fgft_txn *txn, spinlock_t *lock);
void fgft_mutex_unlock(struct fgft_txn *txn, struct mutex *lock);

/* The same for raw_spinlock_t (not a spinlock_t on PREEMPT_RT). */
void fgft_raw_spin_lock(struct fgft_txn *txn, raw_spinlock_t *lock);
void fgft_raw_spin_lock_irqsave(struct fgft_txn *txn, raw_spinlock_t *lock);
void fgft_raw_spin_lock_irq(struct fgft_txn *txn, raw_spinlock_t *lock);
void fgft_raw_spin_unlock(struct fgft_txn *txn, raw_spinlock_t *lock);
void fgft_raw_spin_unlock_irq(struct fgft_txn *txn, raw_spinlock_t *lock);
void fgft_raw_spin_unlock_irqrestore(struct fgft_txn *txn,
				     raw_spinlock_t *lock, unsigned long flags);

/*
 * Added: sections without a lock word, which nest.  Entered in a
 * transaction, each is left at its end (two-phase locking) or at a sleep or
 * callback point after the body left it, and on abort; left in a
 * transaction without having been entered there, it is left at the end.
 */
void fgft_rcu_read_lock(struct fgft_txn *txn);
void fgft_rcu_read_unlock(struct fgft_txn *txn);
void fgft_local_bh_disable(struct fgft_txn *txn);
void fgft_local_bh_enable(struct fgft_txn *txn);

/*
 * Added: locks taken by kernel functions the runtime has no primitive for
 * (netif_tx_lock_bh(), down(), rtnl_lock()).  A wrapper calls
 * fgft_call_lock(); when it returns true, it takes the lock with the real
 * function and calls fgft_call_locked() (if the lock succeeded).  false
 * means the transaction holds it already, its unlock pending: two-phase
 * locking keeps it.  @release calls the matching unlock on @arg; the
 * runtime calls it at the end, at a sleep or callback point after the
 * body unlocked, or on abort.  fgft_call_unlock() is the body's unlock.
 */
bool fgft_call_lock(struct fgft_txn *txn, void *arg, void (*release)(void *));
void fgft_call_locked(struct fgft_txn *txn, void *arg, void (*release)(void *));
void fgft_call_unlock(struct fgft_txn *txn, void *arg, void (*release)(void *));

/* ---- device checkpoints ---- */

struct fgft_dev_ops {
	int (*checkpoint)(void *dev);	/* save device state; cheap */
	void (*restore)(void *dev);	/* bring the device back */
};

int fgft_dev_register(void *dev, const struct fgft_dev_ops *ops);
void fgft_dev_unregister(void *dev);
/* Registers @ops for @dev unless it has callbacks already (idempotent). */
int fgft_dev_ensure(void *dev, const struct fgft_dev_ops *ops);
/* Drops every device registered with @ops (module exit). */
void fgft_dev_unregister_ops(const struct fgft_dev_ops *ops);

struct pci_dev;
/* A reusable PCI config-space checkpoint (pci_store/load_saved_state). */
int fgft_pci_checkpoint(struct pci_dev *pdev);
void fgft_pci_restore(struct pci_dev *pdev);
void fgft_pci_forget(struct pci_dev *pdev);

/* ---- statistics (added; also in /sys/kernel/debug/fgft/) ---- */

#define FGFT_HIST_BUCKETS	28	/* bucket i: [2^(i+7), 2^(i+8)) ns */

struct fgft_stats {
	u64 txns;			/* transactions begun */
	u64 commits;
	u64 aborts[FGFT_CAUSE_NR];	/* by cause; NONE = caller aborted */
	u64 recoveries;			/* aborts after a failure */
	u64 recovery_ns_sum;
	u64 recovery_ns_max;
	u64 refusals;			/* range checks refused */
	u64 residue_fixups;		/* preempt/irq/rcu state repaired */
	u64 missing_unlocks;		/* locks released at the end */
	u64 restores;			/* aborts that restored the device */
	u64 restores_skipped;		/* aborts that left it: not touched */
	u64 retries;			/* aborted calls run once more */
	u64 retried;			/* ... whose second run committed */
	u64 retry_ns_sum;		/* their second runs' time */
	u64 retry_ns_max;
	long mem_live;			/* runtime allocations alive */
	int open;			/* transactions open now */
	int pool;			/* transactions pooled */
};

void fgft_stats_read(struct fgft_stats *st);

/* ---- fault injection (fgft-cc inject) ---- */

/* True when variant @id is armed (module parameter fgft_inject_id). */
bool fgft_inject_hit(int id);

#endif /* _FGFT_RUNTIME_H */

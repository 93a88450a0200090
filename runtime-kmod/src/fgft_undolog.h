/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Undo log: one last-in first-out list of records per transaction.
 *
 *  - UNDO: a compensation, run only when the transaction aborts
 *    (kmalloc -> kfree, request_irq -> free_irq, ...);
 *  - DEFER: an action run when the transaction ends, commit or abort
 *    (a kfree the body asked for, ...);
 *  - LOCK: a lock taken inside the transaction.  An unlock inside the body
 *    only marks the record (two-phase locking); every lock still held is
 *    released when the transaction ends, commit or abort, so none leaks;
 *  - UNLOCK: an unlock of a lock the transaction did not take, deferred to
 *    the end.
 *
 * An abort walks the list once from the newest record to the oldest: each
 * compensation runs with the locks held that were held when its call was
 * made.  A commit releases the locks first (newest first), then runs the
 * DEFER actions in the order the body made them: they are the body's own
 * calls, put off to its end, and a body that made one under a spinlock
 * made it after its unlock (sync_dirty_buffer() sleeps), or before a
 * brelse() of the same buffer.
 */
#ifndef _FGFT_UNDOLOG_H
#define _FGFT_UNDOLOG_H

#include "fgft_compat.h"

typedef void (*fgft_undo_fn)(unsigned long a0, unsigned long a1,
			     unsigned long a2, unsigned long a3);

enum fgft_rec_kind {
	FGFT_REC_UNDO = 1,
	FGFT_REC_DEFER,
	FGFT_REC_LOCK,
	FGFT_REC_UNLOCK,
	FGFT_REC_UNDO_LATE,	/* an undo run after the locks are released */
};

/* Lock kinds: how a lock record is released. */
enum fgft_lock_kind {
	FGFT_LOCK_SPIN = 1,
	FGFT_LOCK_SPIN_IRQSAVE,
	FGFT_LOCK_SPIN_BH,
	FGFT_LOCK_MUTEX,
	FGFT_LOCK_SPIN_IRQ,
	FGFT_LOCK_RCU,		/* rcu_read_lock(): no lock word, nests */
	FGFT_LOCK_BH,		/* local_bh_disable(): no lock word, nests */
	/* A kernel lock function: a[0] its argument, a[1] its release. */
	FGFT_LOCK_CALL,
	/* raw_spinlock_t (a spinlock_t is a sleeping lock on PREEMPT_RT). */
	FGFT_LOCK_RAW_SPIN,
	FGFT_LOCK_RAW_SPIN_IRQSAVE,
	FGFT_LOCK_RAW_SPIN_IRQ,
};

struct fgft_rec {
	u8 kind;
	u8 lock_kind;
	u8 unlock_pending;	/* LOCK: the body asked to unlock */
	u8 released;
	fgft_undo_fn fn;
	/* LOCK / UNLOCK: a[0] lock, a[1] irq flags (CALL: the release) */
	unsigned long a[4];
};

/* LOCK records a log lists by index (more: its walks go through r[]). */
#define FGFT_LOCKIDX	8

struct fgft_undolog {
	struct fgft_rec *r;
	u32 n;
	u32 cap;
	u32 nlocks;		/* LOCK records not yet released */
	/*
	 * LOCK records in r[], released ones too, and the indices of the
	 * first FGFT_LOCKIDX: a lookup of a lock, or of those to release at
	 * a call-back, visits them instead of every record (a file system's
	 * body logs hundreds of undos and holds a lock or two).
	 */
	u32 nlockrec;
	u32 lockrec[FGFT_LOCKIDX];
	/* Statistics of the last finish. */
	u32 ran_undo;
	u32 ran_defer;
	u32 released_locks;
	u32 missing_unlocks;	/* held at the end without an unlock */
};

/* Releases a lock; the kernel passes the real unlock functions. */
struct fgft_undo_ops {
	void (*unlock)(void *ctx, u32 lock_kind, void *lock,
		       unsigned long flags);
	void *ctx;
};

void fgft_undo_init(struct fgft_undolog *l);
/* Makes room for @extra more records (call before taking a lock). */
int fgft_undo_reserve(struct fgft_undolog *l, u32 extra);

/* fgft_undo_reserve() with the common case (room left) inline. */
static __always_inline int fgft_undo_room(struct fgft_undolog *l, u32 extra)
{
	if (likely(l->n + extra >= l->n && l->n + extra <= l->cap))
		return 0;
	return fgft_undo_reserve(l, extra);
}

/* Adds an UNDO or DEFER record. */
int fgft_undo_add(struct fgft_undolog *l, u8 kind, fgft_undo_fn fn,
		  unsigned long a0, unsigned long a1, unsigned long a2,
		  unsigned long a3);

/* fgft_undo_add(), inline for the runtime's own callers. */
static __always_inline int fgft_undo_add_in(struct fgft_undolog *l, u8 kind,
					    fgft_undo_fn fn, unsigned long a0,
					    unsigned long a1, unsigned long a2,
					    unsigned long a3)
{
	struct fgft_rec *r;

	if ((kind != FGFT_REC_UNDO && kind != FGFT_REC_DEFER &&
	     kind != FGFT_REC_UNDO_LATE) || !fn)
		return -EINVAL;
	if (fgft_undo_room(l, 1))
		return -ENOMEM;
	r = &l->r[l->n++];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->fn = fn;
	r->a[0] = a0;
	r->a[1] = a1;
	r->a[2] = a2;
	r->a[3] = a3;
	return 0;
}
/* Records a lock taken (room must have been reserved). */
void fgft_undo_add_lock(struct fgft_undolog *l, u32 lock_kind, void *lock,
			unsigned long flags);
/* Defers the release of a lock the transaction did not take. */
int fgft_undo_add_unlock(struct fgft_undolog *l, u32 lock_kind, void *lock,
			 unsigned long flags);
/*
 * The LOCK records of @l, newest first: start with
 * *@i = fgft_undo_locks_from(@l), then each fgft_undo_lock_prev() gives the
 * next older one, NULL after the oldest.  Records added meanwhile are not
 * visited.
 */
static inline u32 fgft_undo_locks_from(const struct fgft_undolog *l)
{
	return l->nlockrec <= FGFT_LOCKIDX ? l->nlockrec : l->n;
}

static inline struct fgft_rec *fgft_undo_lock_prev(struct fgft_undolog *l,
						   u32 *i)
{
	if (l->nlockrec <= FGFT_LOCKIDX)
		return *i ? &l->r[l->lockrec[--*i]] : NULL;
	while (*i) {
		struct fgft_rec *r = &l->r[--*i];

		if (r->kind == FGFT_REC_LOCK)
			return r;
	}
	return NULL;
}

/* The newest LOCK record of @lock still held, or NULL. */
struct fgft_rec *fgft_undo_find_lock(struct fgft_undolog *l, const void *lock);
/*
 * Runs the log: on abort newest first, UNDO and DEFER records and the lock
 * releases; on commit the lock releases, then the DEFER records oldest
 * first.  Releases every held lock either way.  Empties it.
 */
void fgft_undo_finish(struct fgft_undolog *l, bool abort,
		      const struct fgft_undo_ops *ops);
void fgft_undo_trim(struct fgft_undolog *l, u32 keep);
void fgft_undo_destroy(struct fgft_undolog *l);

#endif /* _FGFT_UNDOLOG_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * Undo log.  See fgft_undolog.h.
 * Builds in the kernel and in user space (see fgft_compat.h).
 */
#include "fgft_undolog.h"

void fgft_undo_init(struct fgft_undolog *l)
{
	memset(l, 0, sizeof(*l));
}

int fgft_undo_reserve(struct fgft_undolog *l, u32 extra)
{
	struct fgft_rec *nr;
	u32 ncap = l->cap ? l->cap : 8;

	if (l->n + extra < l->n)
		return -ENOMEM;
	if (l->n + extra <= l->cap)
		return 0;
	while (ncap < l->n + extra) {
		if (ncap > 0x10000000u)
			return -ENOMEM;
		ncap *= 2;
	}
	nr = fgft_mem_realloc(l->r, (size_t)ncap * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	l->r = nr;
	l->cap = ncap;
	return 0;
}

int fgft_undo_add(struct fgft_undolog *l, u8 kind, fgft_undo_fn fn,
		  unsigned long a0, unsigned long a1, unsigned long a2,
		  unsigned long a3)
{
	return fgft_undo_add_in(l, kind, fn, a0, a1, a2, a3);
}

void fgft_undo_add_lock(struct fgft_undolog *l, u32 lock_kind, void *lock,
			unsigned long flags)
{
	struct fgft_rec *r = &l->r[l->n++];

	memset(r, 0, sizeof(*r));
	r->kind = FGFT_REC_LOCK;
	r->lock_kind = (u8)lock_kind;
	r->a[0] = (unsigned long)lock;
	r->a[1] = flags;
	l->nlocks++;
	if (l->nlockrec < FGFT_LOCKIDX)
		l->lockrec[l->nlockrec] = l->n - 1;
	l->nlockrec++;
}

int fgft_undo_add_unlock(struct fgft_undolog *l, u32 lock_kind, void *lock,
			 unsigned long flags)
{
	struct fgft_rec *r;

	if (fgft_undo_room(l, 1))
		return -ENOMEM;
	r = &l->r[l->n++];
	memset(r, 0, sizeof(*r));
	r->kind = FGFT_REC_UNLOCK;
	r->lock_kind = (u8)lock_kind;
	r->a[0] = (unsigned long)lock;
	r->a[1] = flags;
	return 0;
}

struct fgft_rec *fgft_undo_find_lock(struct fgft_undolog *l, const void *lock)
{
	u32 i = fgft_undo_locks_from(l);
	struct fgft_rec *r;

	if (!l->nlocks)
		return NULL;
	while ((r = fgft_undo_lock_prev(l, &i))) {
		if (!r->released && r->a[0] == (unsigned long)lock)
			return r;
	}
	return NULL;
}

void fgft_undo_finish(struct fgft_undolog *l, bool abort,
		      const struct fgft_undo_ops *ops)
{
	u32 i;

	l->ran_undo = 0;
	l->ran_defer = 0;
	l->released_locks = 0;
	l->missing_unlocks = 0;
	for (i = l->n; i > 0; i--) {
		struct fgft_rec *r = &l->r[i - 1];

		switch (r->kind) {
		case FGFT_REC_UNDO:
			if (!abort)
				break;
			r->fn(r->a[0], r->a[1], r->a[2], r->a[3]);
			l->ran_undo++;
			break;
		case FGFT_REC_DEFER:
			if (!abort)
				break;
			r->fn(r->a[0], r->a[1], r->a[2], r->a[3]);
			l->ran_defer++;
			break;
		case FGFT_REC_LOCK:
			if (r->released)
				break;
			if (!r->unlock_pending)
				l->missing_unlocks++;
			r->released = 1;
			l->nlocks--;
			l->released_locks++;
			ops->unlock(ops->ctx, r->lock_kind, (void *)r->a[0],
				    r->a[1]);
			break;
		case FGFT_REC_UNLOCK:
			ops->unlock(ops->ctx, r->lock_kind, (void *)r->a[0],
				    r->a[1]);
			l->released_locks++;
			break;
		default:
			break;
		}
	}
	/* A commit's deferred calls, in the body's order, no lock held. */
	for (i = 0; !abort && i < l->n; i++) {
		struct fgft_rec *r = &l->r[i];

		if (r->kind != FGFT_REC_DEFER)
			continue;
		r->fn(r->a[0], r->a[1], r->a[2], r->a[3]);
		l->ran_defer++;
	}
	/*
	 * Undos that call back into the driver (iput() of a new inode evicts
	 * it through the file system, which takes its own locks) run once the
	 * transaction holds none.
	 */
	for (i = l->n; abort && i > 0; i--) {
		struct fgft_rec *r = &l->r[i - 1];

		if (r->kind != FGFT_REC_UNDO_LATE)
			continue;
		r->fn(r->a[0], r->a[1], r->a[2], r->a[3]);
		l->ran_undo++;
	}
	l->n = 0;
	l->nlocks = 0;
	l->nlockrec = 0;
}

void fgft_undo_trim(struct fgft_undolog *l, u32 keep)
{
	l->n = 0;
	l->nlocks = 0;
	l->nlockrec = 0;
	if (l->cap > keep) {
		fgft_mem_free(l->r);
		l->r = NULL;
		l->cap = 0;
	}
}

void fgft_undo_destroy(struct fgft_undolog *l)
{
	fgft_mem_free(l->r);
	fgft_undo_init(l);
}

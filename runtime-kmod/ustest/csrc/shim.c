// SPDX-License-Identifier: GPL-2.0
/*
 * User-space shim for the runtime's data structures: the memory and
 * preemption hooks of fgft_compat.h, with per-thread accounting and
 * allocation-failure injection, plus constructors for the Rust tests.
 */
#include <stdlib.h>
#include "fgft_rtab.h"
#include "fgft_objtrack.h"
#include "fgft_undolog.h"

static _Thread_local long us_live;
static _Thread_local long us_fail_in = -1;
static _Thread_local unsigned long us_points;

static int us_should_fail(void)
{
	if (us_fail_in < 0)
		return 0;
	if (us_fail_in == 0) {
		us_fail_in = -1;
		return 1;
	}
	us_fail_in--;
	return 0;
}

void *fgft_mem_zalloc(size_t size)
{
	void *p;

	if (us_should_fail())
		return NULL;
	p = calloc(1, size);
	if (p)
		us_live++;
	return p;
}

void *fgft_mem_realloc(void *p, size_t size)
{
	void *q;

	if (us_should_fail())
		return NULL;
	q = realloc(p, size);
	if (q && !p)
		us_live++;
	return q;
}

void fgft_mem_free(void *p)
{
	if (p) {
		us_live--;
		free(p);
	}
}

void fgft_preempt_point(void)
{
	us_points++;
}

long us_mem_live(void)
{
	return us_live;
}

/* The @n-th allocation from now (0 = the next one) fails; -1 disables. */
void us_mem_fail_in(long n)
{
	us_fail_in = n;
}

unsigned long us_preempt_points(void)
{
	return us_points;
}

struct fgft_rtab *us_rtab_new(void)
{
	struct fgft_rtab *t = malloc(sizeof(*t));

	if (t)
		fgft_rtab_init(t);
	return t;
}

void us_rtab_free(struct fgft_rtab *t)
{
	fgft_rtab_destroy(t);
	free(t);
}

unsigned int us_rtab_nlive(const struct fgft_rtab *t)
{
	return t->nlive;
}

unsigned long long us_rtab_slow(const struct fgft_rtab *t)
{
	return t->nr_slow;
}

int us_rtab_grant(const struct fgft_rtab *t, int id, uintptr_t *start,
		  uintptr_t *end, unsigned int *rights, int *parent)
{
	if (id < 0 || (unsigned int)id >= t->ng || !t->g[id].live)
		return -ENOENT;
	*start = t->g[id].start;
	*end = t->g[id].end;
	*rights = t->g[id].rights;
	*parent = t->g[id].parent;
	return 0;
}

struct fgft_objtrack *us_ot_new(void)
{
	struct fgft_objtrack *ot = malloc(sizeof(*ot));

	if (ot)
		fgft_objtrack_init(ot);
	return ot;
}

void us_ot_free(struct fgft_objtrack *ot)
{
	fgft_objtrack_destroy(ot);
	free(ot);
}

struct fgft_undolog *us_undo_new(void)
{
	struct fgft_undolog *l = malloc(sizeof(*l));

	if (l)
		fgft_undo_init(l);
	return l;
}

void us_undo_free(struct fgft_undolog *l)
{
	fgft_undo_destroy(l);
	free(l);
}

/* Marks the newest held record of @lock as unlocked by the body. */
int us_undo_mark_unlock(struct fgft_undolog *l, void *lock)
{
	struct fgft_rec *r = fgft_undo_find_lock(l, lock);

	if (!r)
		return -ENOENT;
	r->unlock_pending = 1;
	return 0;
}

/* Clears the mark again (the body re-took a lock whose unlock is pending). */
int us_undo_relock(struct fgft_undolog *l, void *lock)
{
	struct fgft_rec *r = fgft_undo_find_lock(l, lock);

	if (!r)
		return -ENOENT;
	if (!r->unlock_pending)
		return -EDEADLK;
	r->unlock_pending = 0;
	return 0;
}

void us_undo_finish(struct fgft_undolog *l, int abort,
		    void (*unlock)(void *, unsigned int, void *,
				   unsigned long),
		    void *ctx)
{
	struct fgft_undo_ops ops = { .unlock = unlock, .ctx = ctx };

	fgft_undo_finish(l, abort != 0, &ops);
}

void us_undo_stats(const struct fgft_undolog *l, unsigned int out[5])
{
	out[0] = l->ran_undo;
	out[1] = l->ran_defer;
	out[2] = l->released_locks;
	out[3] = l->missing_unlocks;
	out[4] = l->nlocks;
}

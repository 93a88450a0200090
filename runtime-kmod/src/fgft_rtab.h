/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Range table: a mapping database in the style of L4's (seed 002).
 *
 * A grant gives a transaction rights (read, write) on [start, end).  Grants
 * derive from grants (an object reached through another one); the
 * derivation tree is kept as first-child / sibling links.  Revoking a grant
 * revokes its subtree in post-order, one leaf per step: every step leaves a
 * valid tree, and a revoke is split into bounded batches with a preemption
 * point between them.  A cursor remembers where the next step starts, so a
 * preempted revoke resumes where it stopped.
 *
 * Lookups use a last-hit window first, then the interval index (binary
 * search plus a walk bounded by the running maximum of ends).  An access is
 * allowed when grants holding the rights cover every byte of it.
 *
 * One table belongs to one transaction and is only touched by the task (and
 * context) that owns it, so it needs no lock.
 */
#ifndef _FGFT_RTAB_H
#define _FGFT_RTAB_H

#include "fgft_ivx.h"

struct fgft_grant {
	uintptr_t start;
	uintptr_t end;
	u32 rights;
	u32 seq;	/* creation order: later grants win ties */
	int parent;	/* -1 for a root grant */
	int child;	/* first child, -1 if none */
	int next;	/* next sibling, -1 if none */
	int prev;	/* previous sibling, -1 if first */
	u8 live;
	u8 unused;	/* slot on the free list */
};

/* A window of a live grant that recently allowed an access. */
struct fgft_rtab_win {
	uintptr_t start;
	uintptr_t end;
	u32 rights;
	int id;		/* -1: empty */
};

/*
 * Windows kept behind the last hit: an I/O-path body alternates between a
 * few objects (the frame, the ring, a descriptor, the private area), and
 * a hit in one of them is not a lookup.
 */
#define FGFT_RTAB_VICTIMS	7

struct fgft_rtab_hs {
	uintptr_t start;
	int id;
	u32 gen;	/* the slot is used when it is the table's hgen */
};

struct fgft_rtab {
	/* Last-hit window: an access inside it with these rights is allowed. */
	struct fgft_rtab_win hit;
	/*
	 * Earlier hits, a ring: vic[vnext] is the next to be replaced (a hit
	 * there swaps it with the last hit).
	 */
	struct fgft_rtab_win vic[FGFT_RTAB_VICTIMS];
	u32 vnext;

	struct fgft_grant *g;
	u32 ng;		/* slots used in g[] (live, dead or free) */
	u32 gcap;
	int free_head;	/* free slots chained through .next */
	u32 nlive;
	u32 ndead;	/* revoked, not yet compacted */
	u32 seq;
	struct fgft_ivx ix;
	/*
	 * Start address -> the newest grant starting there (open addressing,
	 * 1 << hbits slots; a reset moves to the next generation instead of
	 * clearing them): fgft_rtab_find_start() without settling the index,
	 * for the in-place walk's visited test.
	 */
	struct fgft_rtab_hs *hs;
	u32 hbits;
	u32 hgen;
	u32 hn;
	u8 hoff;	/* could not grow: full lookups until the next reset */

	/* Statistics, read by debugfs and the tests. */
	u64 nr_slow;
	u64 nr_revoked;
	u64 nr_preempt_points;
};

/* Result of fgft_rtab_check_slow() when several grants cover the access. */
#define FGFT_RTAB_PIECEWISE	0x7fffffff

/* A resumable revoke of one grant's subtree. */
struct fgft_revoke {
	int root;
	int cursor;
	u32 removed;
	bool done;
};

void fgft_rtab_init(struct fgft_rtab *t);
/* Returns the new grant's id (>= 0) or -EINVAL / -ENOMEM. */
int fgft_rtab_map(struct fgft_rtab *t, uintptr_t start, size_t len,
		  u32 rights);
/*
 * Grants a range derived from the live grant containing @parent_addr (the
 * most recent one when several do).  Rights are cut to the parent's.
 * Returns the id, -ENOENT (no parent), -EPERM (no rights left), -EINVAL or
 * -ENOMEM.
 */
int fgft_rtab_map_derived(struct fgft_rtab *t, uintptr_t parent_addr,
			  uintptr_t start, size_t len, u32 rights);
/* The most recent live grant starting at @addr, or -ENOENT. */
int fgft_rtab_find_start(struct fgft_rtab *t, uintptr_t addr);

/*
 * An object placed in the table (the in-place walk, fgft_place_obj()): 0 when
 * a grant starting at @start already covers @len bytes with @rights, else a
 * new grant (1), or a negative errno.  The table is the walk's visited set.
 */
int fgft_rtab_place(struct fgft_rtab *t, uintptr_t start, size_t len,
		    u32 rights);
/* The most recent live grant containing @addr, or -ENOENT. */
int fgft_rtab_find_containing(struct fgft_rtab *t, uintptr_t addr);

void fgft_rtab_revoke_begin(struct fgft_rtab *t, struct fgft_revoke *rv,
			    int id);
/* Removes up to @budget grants; returns true once the root is gone. */
bool fgft_rtab_revoke_step(struct fgft_rtab *t, struct fgft_revoke *rv,
			   u32 budget);
/*
 * Revokes the most recent grant starting at @addr and everything derived
 * from it, @batch grants at a time with a preemption point in between.
 * Returns the number of grants removed or -ENOENT.
 */
int fgft_rtab_unmap(struct fgft_rtab *t, uintptr_t addr, u32 batch);
/*
 * Sorts the grants made since the last lookup into the index.  Lookups do
 * it themselves; a table shared under a reader-writer lock is settled by
 * its writers, so that its readers never write.
 */
static inline void fgft_rtab_settle(struct fgft_rtab *t)
{
	fgft_ivx_settle(&t->ix);
}

/* Revokes everything (end of transaction). */
void fgft_rtab_reset(struct fgft_rtab *t);
/* Like reset, and frees the arrays once they grew beyond @keep grants. */
void fgft_rtab_trim(struct fgft_rtab *t, u32 keep);
void fgft_rtab_destroy(struct fgft_rtab *t);

/*
 * Returns -1 when the access is refused, the id of a grant that covers it
 * alone, or FGFT_RTAB_PIECEWISE.  Does not touch the last-hit window.
 */
int fgft_rtab_check_slow(struct fgft_rtab *t, uintptr_t addr, size_t len,
			 u32 rights);
/* Full check: last-hit window, then the index (updates the window). */
bool fgft_rtab_check(struct fgft_rtab *t, uintptr_t addr, size_t len,
		     u32 rights);
/* The same for a caller that tried the windows already: the index only. */
bool fgft_rtab_check_index(struct fgft_rtab *t, uintptr_t addr, size_t len,
			   u32 rights);

static inline bool fgft_rtab_win_ok(const struct fgft_rtab_win *w,
				    uintptr_t addr, size_t len, u32 rights)
{
	uintptr_t end = addr + len;

	return addr >= w->start && end <= w->end && end >= addr &&
	       !(rights & ~w->rights);
}

static inline bool fgft_rtab_hit(const struct fgft_rtab *t, uintptr_t addr,
				 size_t len, u32 rights)
{
	return likely(fgft_rtab_win_ok(&t->hit, addr, len, rights));
}

/*
 * Whether an earlier hit's window allows the access; if so it becomes the
 * last hit (the last hit takes its place).
 */
static inline bool fgft_rtab_hit_victim(struct fgft_rtab *t, uintptr_t addr,
					size_t len, u32 rights)
{
	struct fgft_rtab_win w;
	int i;

	for (i = 0; i < FGFT_RTAB_VICTIMS; i++) {
		if (!fgft_rtab_win_ok(&t->vic[i], addr, len, rights))
			continue;
		w = t->vic[i];
		t->vic[i] = t->hit;
		t->hit = w;
		return true;
	}
	return false;
}

/* Checks every invariant; returns 0 or a negative code naming the first
 * broken one (used by the tests).
 */
int fgft_rtab_validate(struct fgft_rtab *t);

#endif /* _FGFT_RTAB_H */

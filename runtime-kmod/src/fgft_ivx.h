/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Interval index: entries [start, end) sorted by start, each carrying the
 * running maximum of the ends before it (its "reach").  A point lookup is a
 * binary search for the last entry starting at or before the point followed
 * by a walk to the left that stops as soon as the reach falls at or below the
 * point, so disjoint intervals cost O(log n) and overlapping ones only what
 * actually overlaps.  Deleted entries become tombstones until the next
 * compaction, so a deletion costs O(log n) and compaction is amortised.
 *
 * Insertions append: an entry in order extends the sorted part, others
 * wait behind it until fgft_ivx_settle() sorts them and merges them in
 * (one sort for a batch of grants instead of one memmove each: an I/O
 * path's copy-in grants hundreds of objects at addresses in no order).
 * Lookups need a settled index; so does fgft_ivx_kill().
 */
#ifndef _FGFT_IVX_H
#define _FGFT_IVX_H

#include "fgft_compat.h"

struct fgft_ive {
	uintptr_t start;
	uintptr_t end;
	uintptr_t reach;	/* max(end) over this entry and all before it */
	u32 id;
	u32 dead;
};

struct fgft_ivx {
	struct fgft_ive *e;
	u32 n;
	u32 cap;
	u32 ndead;
	u32 nsorted;	/* e[0, nsorted) sorted, reach valid; then appended */
};

/* Sorts the appended entries into the index. */
void fgft_ivx_settle(struct fgft_ivx *x);

static inline bool fgft_ivx_settled(const struct fgft_ivx *x)
{
	return x->nsorted == x->n;
}

int fgft_ivx_insert(struct fgft_ivx *x, uintptr_t start, uintptr_t end,
		    u32 id);
/* Number of entries whose start is <= @p (settles the index first). */
u32 fgft_ivx_upper(struct fgft_ivx *x, uintptr_t p);
/* Number of entries whose start is < @p (settles the index first). */
u32 fgft_ivx_lower(struct fgft_ivx *x, uintptr_t p);
/* The same over the sorted part only (an owner that settles at insert). */
u32 fgft_ivx_upper_sorted(const struct fgft_ivx *x, uintptr_t p);
u32 fgft_ivx_lower_sorted(const struct fgft_ivx *x, uintptr_t p);
/* Marks the live entry (@start, @id) dead.  Returns 0 or -ENOENT. */
int fgft_ivx_kill(struct fgft_ivx *x, uintptr_t start, u32 id);
void fgft_ivx_compact(struct fgft_ivx *x);
void fgft_ivx_reset(struct fgft_ivx *x);
void fgft_ivx_destroy(struct fgft_ivx *x);
/* Frees the array when it grew beyond @keep entries (pooled owners). */
void fgft_ivx_trim(struct fgft_ivx *x, u32 keep);

#endif /* _FGFT_IVX_H */

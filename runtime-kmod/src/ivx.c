// SPDX-License-Identifier: GPL-2.0
/*
 * Interval index used by the range table and the object tracker.
 * Builds in the kernel and in user space (see fgft_compat.h).
 */
#include "fgft_ivx.h"

static int ivx_grow(struct fgft_ivx *x)
{
	u32 ncap = x->cap ? x->cap * 2 : 16;
	struct fgft_ive *ne;

	if (ncap < x->cap)
		return -ENOMEM;
	ne = fgft_mem_realloc(x->e, (size_t)ncap * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	x->e = ne;
	x->cap = ncap;
	return 0;
}

u32 fgft_ivx_upper(const struct fgft_ivx *x, uintptr_t p)
{
	u32 lo = 0, hi = x->n;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (x->e[mid].start <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

u32 fgft_ivx_lower(const struct fgft_ivx *x, uintptr_t p)
{
	u32 lo = 0, hi = x->n;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (x->e[mid].start < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int fgft_ivx_insert(struct fgft_ivx *x, uintptr_t start, uintptr_t end,
		    u32 id)
{
	uintptr_t before;
	u32 pos, k;

	if (x->n == x->cap) {
		/* Reuse tombstones before growing. */
		if (x->ndead)
			fgft_ivx_compact(x);
		if (x->n == x->cap && ivx_grow(x))
			return -ENOMEM;
	}
	pos = fgft_ivx_upper(x, start);
	memmove(&x->e[pos + 1], &x->e[pos],
		(size_t)(x->n - pos) * sizeof(x->e[0]));
	x->n++;
	before = pos ? x->e[pos - 1].reach : 0;
	x->e[pos].start = start;
	x->e[pos].end = end;
	x->e[pos].reach = before > end ? before : end;
	x->e[pos].id = id;
	x->e[pos].dead = 0;
	/* The reach is a running maximum: stop once it already covers end. */
	for (k = pos + 1; k < x->n && x->e[k].reach < end; k++)
		x->e[k].reach = end;
	return 0;
}

int fgft_ivx_kill(struct fgft_ivx *x, uintptr_t start, u32 id)
{
	u32 i;

	for (i = fgft_ivx_lower(x, start); i < x->n && x->e[i].start == start;
	     i++) {
		if (x->e[i].id == id && !x->e[i].dead) {
			x->e[i].dead = 1;
			x->ndead++;
			return 0;
		}
	}
	return -ENOENT;
}

void fgft_ivx_compact(struct fgft_ivx *x)
{
	uintptr_t reach = 0;
	u32 i, j = 0;

	for (i = 0; i < x->n; i++) {
		if (x->e[i].dead)
			continue;
		x->e[j] = x->e[i];
		if (x->e[j].end > reach)
			reach = x->e[j].end;
		x->e[j].reach = reach;
		j++;
	}
	x->n = j;
	x->ndead = 0;
}

void fgft_ivx_reset(struct fgft_ivx *x)
{
	x->n = 0;
	x->ndead = 0;
}

void fgft_ivx_destroy(struct fgft_ivx *x)
{
	fgft_mem_free(x->e);
	x->e = NULL;
	x->n = 0;
	x->cap = 0;
	x->ndead = 0;
}

void fgft_ivx_trim(struct fgft_ivx *x, u32 keep)
{
	if (x->cap > keep)
		fgft_ivx_destroy(x);
	else
		fgft_ivx_reset(x);
}

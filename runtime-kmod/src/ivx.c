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

int fgft_ivx_insert(struct fgft_ivx *x, uintptr_t start, uintptr_t end,
		    u32 id)
{
	struct fgft_ive *e;

	if (x->n == x->cap) {
		/* Reuse tombstones before growing. */
		if (x->ndead)
			fgft_ivx_compact(x);
		if (x->n == x->cap && ivx_grow(x))
			return -ENOMEM;
	}
	e = &x->e[x->n];
	e->start = start;
	e->end = end;
	e->id = id;
	e->dead = 0;
	if (fgft_ivx_settled(x) && (!x->n || x->e[x->n - 1].start <= start)) {
		/* In order: the sorted part grows, the reach with it. */
		uintptr_t before = x->n ? x->e[x->n - 1].reach : 0;

		e->reach = before > end ? before : end;
		x->nsorted++;
	}
	x->n++;
	return 0;
}

static void ive_swap(struct fgft_ive *a, struct fgft_ive *b)
{
	struct fgft_ive t = *a;

	*a = *b;
	*b = t;
}

/* Moves a[root] down the max-heap a[0, n) by start. */
static void ive_sift(struct fgft_ive *a, u32 root, u32 n)
{
	u32 child;

	for (; (child = 2 * root + 1) < n; root = child) {
		if (child + 1 < n && a[child].start < a[child + 1].start)
			child++;
		if (a[root].start >= a[child].start)
			break;
		ive_swap(&a[root], &a[child]);
	}
}

/*
 * Insertion sort by start for a small batch (a transaction's grants come a
 * few at a time: an in-place walk grants about a dozen), which moves each
 * entry once instead of swapping it down a heap; stable.
 */
#define IVE_SMALL	16

static void ive_isort(struct fgft_ive *a, u32 n)
{
	u32 i, j;

	for (i = 1; i < n; i++) {
		struct fgft_ive v = a[i];

		for (j = i; j > 0 && a[j - 1].start > v.start; j--)
			a[j] = a[j - 1];
		a[j] = v;
	}
}

/*
 * Heapsort by start: no recursion, no allocation, no indirect call
 * (insertion sort for a small batch).
 */
static void ive_sort(struct fgft_ive *a, u32 n)
{
	u32 i, end;

	if (n <= IVE_SMALL) {
		ive_isort(a, n);
		return;
	}
	for (i = n / 2; i-- > 0;)
		ive_sift(a, i, n);
	for (end = n; end-- > 1;) {
		ive_swap(&a[0], &a[end]);
		ive_sift(a, 0, end);
	}
}

/* Number of entries among e[0, n) whose start is <= @p. */
static u32 ive_upper(const struct fgft_ive *e, u32 n, uintptr_t p)
{
	u32 lo = 0, hi = n;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (e[mid].start <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * A few appended entries move into place one at a time; a batch is sorted
 * and merged from the end, through a copy of itself in the array's spare
 * room (grown for it; without memory, one at a time too).  An appended
 * entry lands after the entries already there with the same start, as an
 * insertion in place would.
 */
void fgft_ivx_settle(struct fgft_ivx *x)
{
	u32 s = x->nsorted, m = x->n - s, low = s, i, j, k;
	struct fgft_ive *b;
	uintptr_t reach;

	if (!m)
		return;
	if (m > 1)
		ive_sort(&x->e[s], m);
	if (s && x->e[s - 1].start > x->e[s].start) {
		while (m > 4 && x->cap - x->n < m && !ivx_grow(x))
			;
		if (m > 4 && x->cap - x->n >= m) {
			b = &x->e[x->n];
			memcpy(b, &x->e[s], (size_t)m * sizeof(x->e[0]));
			i = s;
			j = m;
			k = x->n;
			while (j) {
				if (i && x->e[i - 1].start > b[j - 1].start)
					x->e[--k] = x->e[--i];
				else
					x->e[--k] = b[--j];
			}
			low = i;
		} else {
			for (j = s; j < x->n; j++) {
				struct fgft_ive v = x->e[j];

				k = ive_upper(x->e, j, v.start);
				memmove(&x->e[k + 1], &x->e[k],
					(size_t)(j - k) * sizeof(x->e[0]));
				x->e[k] = v;
				if (k < low)
					low = k;
			}
		}
	}
	reach = low ? x->e[low - 1].reach : 0;
	for (i = low; i < x->n; i++) {
		if (x->e[i].end > reach)
			reach = x->e[i].end;
		x->e[i].reach = reach;
	}
	x->nsorted = x->n;
}

u32 fgft_ivx_upper(struct fgft_ivx *x, uintptr_t p)
{
	fgft_ivx_settle(x);
	return ive_upper(x->e, x->n, p);
}

u32 fgft_ivx_lower(struct fgft_ivx *x, uintptr_t p)
{
	fgft_ivx_settle(x);
	return fgft_ivx_lower_sorted(x, p);
}

u32 fgft_ivx_upper_sorted(const struct fgft_ivx *x, uintptr_t p)
{
	return ive_upper(x->e, x->nsorted, p);
}

u32 fgft_ivx_lower_sorted(const struct fgft_ivx *x, uintptr_t p)
{
	u32 lo = 0, hi = x->nsorted;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (x->e[mid].start < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
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

	fgft_ivx_settle(x);
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
	x->nsorted = j;
	x->ndead = 0;
}

void fgft_ivx_reset(struct fgft_ivx *x)
{
	x->n = 0;
	x->nsorted = 0;
	x->ndead = 0;
}

void fgft_ivx_destroy(struct fgft_ivx *x)
{
	fgft_mem_free(x->e);
	x->e = NULL;
	x->nsorted = 0;
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

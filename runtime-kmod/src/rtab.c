// SPDX-License-Identifier: GPL-2.0
/*
 * Range table (mapping database).  See fgft_rtab.h.
 * Builds in the kernel and in user space (see fgft_compat.h).
 */
#include "fgft_rtab.h"

static void win_clear(struct fgft_rtab_win *w)
{
	w->start = (uintptr_t)-1;
	w->end = 0;
	w->rights = 0;
	w->id = -1;
}

static void hit_clear(struct fgft_rtab *t)
{
	int i;

	win_clear(&t->hit);
	for (i = 0; i < FGFT_RTAB_VICTIMS; i++)
		win_clear(&t->vic[i]);
	t->vnext = 0;
}

/*
 * Makes grant @id the last hit; the last hit takes the place of the victim
 * that left the last hit longest ago (a ring: shifting the windows down
 * cost a memmove of all of them per grant).
 */
static __always_inline void hit_set(struct fgft_rtab *t, int id)
{
	t->vic[t->vnext] = t->hit;
	if (++t->vnext == FGFT_RTAB_VICTIMS)
		t->vnext = 0;
	t->hit.start = t->g[id].start;
	t->hit.end = t->g[id].end;
	t->hit.rights = t->g[id].rights;
	t->hit.id = id;
}

void fgft_rtab_init(struct fgft_rtab *t)
{
	memset(t, 0, sizeof(*t));
	t->free_head = -1;
	hit_clear(t);
}

static bool rights_ok(u32 rights)
{
	return (rights & FGFT_DS_RW) && !(rights & ~(FGFT_DS_RW | FGFT_DS_NOLOG));
}

/* Makes the slots of revoked grants reusable once the index forgot them. */
static void rtab_compact(struct fgft_rtab *t)
{
	u32 i;

	fgft_ivx_compact(&t->ix);
	for (i = 0; i < t->ng; i++) {
		struct fgft_grant *gr = &t->g[i];

		if (gr->live || gr->unused)
			continue;
		gr->unused = 1;
		gr->next = t->free_head;
		t->free_head = (int)i;
	}
	t->ndead = 0;
}

static int slot_alloc(struct fgft_rtab *t)
{
	struct fgft_grant *ng;
	u32 ncap;
	int id;

	if (t->free_head < 0 && t->ndead)
		rtab_compact(t);
	if (t->free_head >= 0) {
		id = t->free_head;
		t->free_head = t->g[id].next;
		return id;
	}
	if (t->ng == t->gcap) {
		ncap = t->gcap ? t->gcap * 2 : 16;
		if (ncap > 0x40000000u)
			return -ENOMEM;
		ng = fgft_mem_realloc(t->g, (size_t)ncap * sizeof(*ng));
		if (!ng)
			return -ENOMEM;
		t->g = ng;
		t->gcap = ncap;
	}
	return (int)t->ng++;
}

static void slot_release(struct fgft_rtab *t, int id)
{
	t->g[id].unused = 1;
	t->g[id].live = 0;
	t->g[id].next = t->free_head;
	t->free_head = id;
}

static u32 hs_slot(uintptr_t start, u32 bits)
{
	return (u32)(((u64)start * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

/* The slot of @start, or the empty slot where it would go. */
static struct fgft_rtab_hs *hs_find(struct fgft_rtab_hs *hs, u32 bits,
				    u32 gen, uintptr_t start)
{
	u32 mask = (1u << bits) - 1, i = hs_slot(start, bits);

	while (hs[i].gen == gen && hs[i].start != start)
		i = (i + 1) & mask;
	return &hs[i];
}

/* Twice the slots, the used ones moved over; false without memory. */
static bool hs_grow(struct fgft_rtab *t)
{
	u32 nbits = t->hbits ? t->hbits + 1 : 6, i;
	struct fgft_rtab_hs *nh, *sl;

	nh = nbits < 28 ? fgft_mem_zalloc(sizeof(*nh) << nbits) : NULL;
	if (!nh)
		return false;
	if (!t->hgen)
		t->hgen = 1;
	for (i = 0; t->hbits && i < 1u << t->hbits; i++) {
		if (t->hs[i].gen != t->hgen)
			continue;
		sl = hs_find(nh, nbits, t->hgen, t->hs[i].start);
		*sl = t->hs[i];
	}
	fgft_mem_free(t->hs);
	t->hs = nh;
	t->hbits = nbits;
	return true;
}

/* Remembers @id as the newest grant starting at @start. */
static void hs_put(struct fgft_rtab *t, uintptr_t start, int id)
{
	struct fgft_rtab_hs *sl;

	if (t->hoff)
		return;
	if ((t->hn + 1) * 2 > (t->hbits ? 1u << t->hbits : 0) && !hs_grow(t)) {
		t->hoff = 1;
		return;
	}
	sl = hs_find(t->hs, t->hbits, t->hgen, start);
	if (sl->gen != t->hgen) {
		t->hn++;
		sl->gen = t->hgen;
		sl->start = start;
	}
	sl->id = id;
}

/*
 * The newest grant starting at @start if it is live, -ENOENT if no grant
 * started there since the reset, 1 when it cannot tell (that one revoked).
 */
static __always_inline int hs_get(struct fgft_rtab *t, uintptr_t start)
{
	const struct fgft_rtab_hs *sl;
	const struct fgft_grant *gr;

	if (t->hoff)
		return 1;
	if (!t->hn)
		return -ENOENT;
	sl = hs_find(t->hs, t->hbits, t->hgen, start);
	if (sl->gen != t->hgen)
		return -ENOENT;
	gr = &t->g[sl->id];
	return gr->live && gr->start == start ? sl->id : 1;
}

static void hs_clear(struct fgft_rtab *t)
{
	if (t->hn && !++t->hgen) {
		/* Wrapped: every slot would look used. */
		memset(t->hs, 0, sizeof(*t->hs) << t->hbits);
		t->hgen = 1;
	}
	t->hn = 0;
	t->hoff = 0;
}

static int grant_new(struct fgft_rtab *t, uintptr_t start, size_t len,
		     u32 rights, int parent)
{
	struct fgft_grant *gr;
	uintptr_t end = start + len;
	int id;

	if (!len || end < start || !rights_ok(rights))
		return -EINVAL;
	id = slot_alloc(t);
	if (id < 0)
		return id;
	if (fgft_ivx_insert(&t->ix, start, end, (u32)id)) {
		slot_release(t, id);
		return -ENOMEM;
	}
	gr = &t->g[id];
	gr->start = start;
	gr->end = end;
	gr->rights = rights;
	gr->seq = ++t->seq;
	gr->parent = parent;
	gr->child = -1;
	gr->prev = -1;
	gr->next = -1;
	gr->live = 1;
	gr->unused = 0;
	if (parent >= 0) {
		struct fgft_grant *p = &t->g[parent];

		gr->next = p->child;
		if (p->child >= 0)
			t->g[p->child].prev = id;
		p->child = id;
	}
	t->nlive++;
	hs_put(t, start, id);
	/*
	 * A new grant is about to be used (an in-place walk grants what the
	 * body reads next): its first access is a hit among the recent
	 * windows, not a lookup in the index.
	 */
	hit_set(t, id);
	return id;
}

int fgft_rtab_map(struct fgft_rtab *t, uintptr_t start, size_t len,
		  u32 rights)
{
	return grant_new(t, start, len, rights, -1);
}

int fgft_rtab_place(struct fgft_rtab *t, uintptr_t start, size_t len,
		    u32 rights)
{
	int id = fgft_rtab_find_start(t, start);

	if (id >= 0 && t->g[id].end >= start + len &&
	    !(rights & ~t->g[id].rights))
		return 0;
	id = grant_new(t, start, len, rights, -1);
	return id < 0 ? id : 1;
}

int fgft_rtab_find_containing(struct fgft_rtab *t, uintptr_t addr)
{
	const struct fgft_ivx *x = &t->ix;
	int best = -1;
	u32 i;

	for (i = fgft_ivx_upper(&t->ix, addr); i > 0 && x->e[i - 1].reach > addr;
	     i--) {
		const struct fgft_ive *e = &x->e[i - 1];

		if (e->dead || e->end <= addr)
			continue;
		if (best < 0 || t->g[e->id].seq > t->g[best].seq)
			best = (int)e->id;
	}
	return best < 0 ? -ENOENT : best;
}

int fgft_rtab_map_derived(struct fgft_rtab *t, uintptr_t parent_addr,
			  uintptr_t start, size_t len, u32 rights)
{
	int parent = fgft_rtab_find_containing(t, parent_addr);

	if (!rights_ok(rights))
		return -EINVAL;
	if (parent < 0)
		return -ENOENT;
	rights &= t->g[parent].rights;
	if (!(rights & FGFT_DS_RW))
		return -EPERM;
	return grant_new(t, start, len, rights, parent);
}

int fgft_rtab_find_start(struct fgft_rtab *t, uintptr_t addr)
{
	const struct fgft_ivx *x = &t->ix;
	int best = hs_get(t, addr);
	u32 i;

	/* The visited set answers without settling the index. */
	if (best != 1)
		return best;
	best = -1;
	for (i = fgft_ivx_lower(&t->ix, addr); i < x->n && x->e[i].start == addr;
	     i++) {
		if (x->e[i].dead)
			continue;
		if (best < 0 || t->g[x->e[i].id].seq > t->g[best].seq)
			best = (int)x->e[i].id;
	}
	return best < 0 ? -ENOENT : best;
}

static int first_leaf(const struct fgft_rtab *t, int n)
{
	while (t->g[n].child >= 0)
		n = t->g[n].child;
	return n;
}

/* Removes leaf @n, which is always the first child of its parent. */
static void remove_leaf(struct fgft_rtab *t, int n)
{
	struct fgft_grant *gr = &t->g[n];
	int i;

	if (gr->prev >= 0)
		t->g[gr->prev].next = gr->next;
	else if (gr->parent >= 0)
		t->g[gr->parent].child = gr->next;
	if (gr->next >= 0)
		t->g[gr->next].prev = gr->prev;
	gr->live = 0;
	gr->next = -1;
	gr->prev = -1;
	gr->parent = -1;
	fgft_ivx_kill(&t->ix, gr->start, (u32)n);
	t->nlive--;
	t->ndead++;
	t->nr_revoked++;
	if (t->hit.id == n)
		win_clear(&t->hit);
	for (i = 0; i < FGFT_RTAB_VICTIMS; i++)
		if (t->vic[i].id == n)
			win_clear(&t->vic[i]);
}

void fgft_rtab_revoke_begin(struct fgft_rtab *t, struct fgft_revoke *rv,
			    int id)
{
	rv->root = id;
	rv->cursor = first_leaf(t, id);
	rv->removed = 0;
	rv->done = false;
}

bool fgft_rtab_revoke_step(struct fgft_rtab *t, struct fgft_revoke *rv,
			   u32 budget)
{
	while (!rv->done && budget--) {
		int n = rv->cursor;
		int next = t->g[n].next;
		int parent = t->g[n].parent;

		remove_leaf(t, n);
		rv->removed++;
		if (n == rv->root) {
			rv->done = true;
			break;
		}
		/* Post-order successor: next sibling's first leaf, or parent. */
		rv->cursor = next >= 0 ? first_leaf(t, next) : parent;
	}
	return rv->done;
}

int fgft_rtab_unmap(struct fgft_rtab *t, uintptr_t addr, u32 batch)
{
	struct fgft_revoke rv;
	int id = fgft_rtab_find_start(t, addr);

	if (id < 0)
		return id;
	if (!batch)
		batch = 1;
	fgft_rtab_revoke_begin(t, &rv, id);
	while (!fgft_rtab_revoke_step(t, &rv, batch)) {
		t->nr_preempt_points++;
		fgft_preempt_point();
	}
	if (t->ndead > 8 && t->ndead * 2 > t->ix.n)
		rtab_compact(t);
	return (int)rv.removed;
}

void fgft_rtab_reset(struct fgft_rtab *t)
{
	t->ng = 0;
	t->free_head = -1;
	t->nlive = 0;
	t->ndead = 0;
	fgft_ivx_reset(&t->ix);
	hs_clear(t);
	hit_clear(t);
}

void fgft_rtab_trim(struct fgft_rtab *t, u32 keep)
{
	fgft_rtab_reset(t);
	if (t->gcap > keep) {
		fgft_mem_free(t->g);
		t->g = NULL;
		t->gcap = 0;
	}
	fgft_ivx_trim(&t->ix, keep);
	if (t->hbits && (1u << t->hbits) > 2 * keep) {
		fgft_mem_free(t->hs);
		t->hs = NULL;
		t->hbits = 0;
		t->hgen = 0;
	}
}

void fgft_rtab_destroy(struct fgft_rtab *t)
{
	fgft_mem_free(t->g);
	fgft_mem_free(t->hs);
	fgft_ivx_destroy(&t->ix);
	fgft_rtab_init(t);
}

/* Grants made since the last settle that a lookup scans instead. */
#define FGFT_RTAB_TAIL	16

/*
 * A live grant with @rights that covers [@addr, @end) alone, among the
 * sorted part of the index and the grants appended since (at most
 * FGFT_RTAB_TAIL): -1 if none does.  Settles nothing: a body that grants
 * and looks up in turn (a file system's buffers and folios) would sort the
 * index again at every lookup.
 */
static int cover_unsettled(const struct fgft_rtab *t, uintptr_t addr,
			   uintptr_t end, u32 rights)
{
	const struct fgft_ivx *x = &t->ix;
	u32 i;

	for (i = fgft_ivx_upper_sorted(x, addr); i > 0 && x->e[i - 1].reach > addr;
	     i--) {
		const struct fgft_ive *e = &x->e[i - 1];

		if (!e->dead && e->end >= end &&
		    (t->g[e->id].rights & rights) == rights)
			return (int)e->id;
	}
	for (i = x->nsorted; i < x->n; i++) {
		const struct fgft_ive *e = &x->e[i];

		if (!e->dead && e->start <= addr && e->end >= end &&
		    (t->g[e->id].rights & rights) == rights)
			return (int)e->id;
	}
	return -1;
}

int fgft_rtab_check_slow(struct fgft_rtab *t, uintptr_t addr, size_t len,
			 u32 rights)
{
	const struct fgft_ivx *x = &t->ix;
	uintptr_t end = addr + len;
	uintptr_t a = addr;
	int id;

	t->nr_slow++;
	if (end < addr)
		return -1;
	if (!len)
		return FGFT_RTAB_PIECEWISE;
	if (!fgft_ivx_settled(x) && x->n - x->nsorted <= FGFT_RTAB_TAIL) {
		id = cover_unsettled(t, addr, end, rights);
		if (id >= 0)
			return id;
	}
	while (a < end) {
		uintptr_t best_end = a;
		int best = -1;
		u32 i;

		for (i = fgft_ivx_upper(&t->ix, a); i > 0 && x->e[i - 1].reach > a;
		     i--) {
			const struct fgft_ive *e = &x->e[i - 1];

			if (e->dead || e->end <= best_end)
				continue;
			if ((t->g[e->id].rights & rights) != rights)
				continue;
			best = (int)e->id;
			best_end = e->end;
			if (best_end >= end)
				break;
		}
		if (best < 0)
			return -1;
		if (a == addr && best_end >= end)
			return best;
		a = best_end;
	}
	return FGFT_RTAB_PIECEWISE;
}

bool fgft_rtab_check(struct fgft_rtab *t, uintptr_t addr, size_t len,
		     u32 rights)
{
	if (fgft_rtab_hit(t, addr, len, rights) ||
	    fgft_rtab_hit_victim(t, addr, len, rights))
		return true;
	return fgft_rtab_check_index(t, addr, len, rights);
}

bool fgft_rtab_check_index(struct fgft_rtab *t, uintptr_t addr, size_t len,
			   u32 rights)
{
	int id;

	id = fgft_rtab_check_slow(t, addr, len, rights);
	if (id < 0)
		return false;
	if (id != FGFT_RTAB_PIECEWISE)
		hit_set(t, id);
	return true;
}

int fgft_rtab_validate(struct fgft_rtab *t)
{
	const struct fgft_ivx *x = &t->ix;
	uintptr_t reach = 0;
	u32 i, live = 0, dead = 0, in_ix = 0, ix_dead = 0;

	fgft_ivx_settle(&t->ix);

	for (i = 0; i < x->n; i++) {
		const struct fgft_ive *e = &x->e[i];

		if (i && x->e[i - 1].start > e->start)
			return -1;	/* index not sorted */
		if (e->end > reach)
			reach = e->end;
		if (e->reach != reach)
			return -2;	/* running maximum wrong */
		if (e->id >= t->ng)
			return -3;
		if (e->dead) {
			ix_dead++;
			continue;
		}
		in_ix++;
		if (!t->g[e->id].live || t->g[e->id].start != e->start ||
		    t->g[e->id].end != e->end)
			return -4;	/* index entry without its grant */
	}
	if (ix_dead != x->ndead)
		return -5;
	for (i = 0; i < t->ng; i++) {
		const struct fgft_grant *gr = &t->g[i];
		int c, prev = -1;

		if (gr->unused)
			continue;
		if (!gr->live) {
			dead++;
			continue;
		}
		live++;
		if (gr->parent >= 0) {
			const struct fgft_grant *p = &t->g[gr->parent];

			if (!p->live)
				return -6;	/* orphan */
			if ((gr->rights & ~p->rights) != 0)
				return -7;	/* rights grew */
		}
		for (c = gr->child; c >= 0; c = t->g[c].next) {
			if ((u32)c >= t->ng || !t->g[c].live)
				return -8;
			if (t->g[c].parent != (int)i || t->g[c].prev != prev)
				return -9;
			prev = c;
		}
		if (gr->parent < 0 && (gr->prev >= 0 || gr->next >= 0))
			return -10;
	}
	if (live != t->nlive || live != in_ix)
		return -11;
	if (dead != t->ndead)
		return -12;
	return 0;
}

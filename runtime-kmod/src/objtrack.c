// SPDX-License-Identifier: GPL-2.0
/*
 * Object tracker.  See fgft_objtrack.h.
 * Builds in the kernel and in user space (see fgft_compat.h).
 */
#include "fgft_objtrack.h"

void fgft_objtrack_init(struct fgft_objtrack *ot)
{
	memset(ot, 0, sizeof(*ot));
}

static size_t span(size_t size)
{
	return size ? size : 1;
}

/* Index of the object whose exact start on side @x is @p, or -1. */
static int exact(const struct fgft_ivx *x, uintptr_t p)
{
	u32 i = fgft_ivx_lower_sorted(x, p);

	if (i < x->n && x->e[i].start == p)
		return (int)x->e[i].id;
	return -1;
}

/* Smallest object on side @x containing @p, or -1. */
static int containing(const struct fgft_ivx *x, uintptr_t p)
{
	uintptr_t best_len = 0;
	int best = -1;
	u32 i;

	for (i = fgft_ivx_upper_sorted(x, p); i > 0 && x->e[i - 1].reach > p; i--) {
		const struct fgft_ive *e = &x->e[i - 1];

		if (e->end <= p)
			continue;
		if (best < 0 || e->end - e->start < best_len) {
			best = (int)e->id;
			best_len = e->end - e->start;
		}
	}
	return best;
}

/*
 * @size zeroed bytes from the arena: the newest chunk when it has room, else
 * a new chunk (of its own size for a copy bigger than a chunk).
 */
static void *arena_alloc(struct fgft_objtrack *ot, size_t size)
{
	size_t need = (size + FGFT_ARENA_ALIGN - 1) & ~(size_t)(FGFT_ARENA_ALIGN - 1);
	struct fgft_chunk *c = ot->arena;
	size_t cap = FGFT_ARENA_CHUNK - sizeof(*c);
	void *p;

	if (need < size)
		return NULL;
	if (c && c->cap - c->used >= need) {
		p = c->data + c->used;
		c->used += need;
		memset(p, 0, size);
		return p;
	}
	if (need > cap)
		cap = need;
	if (cap + sizeof(*c) < cap)
		return NULL;
	c = fgft_mem_zalloc(sizeof(*c) + cap);
	if (!c)
		return NULL;
	c->cap = cap;
	c->used = need;
	c->next = ot->arena;
	ot->arena = c;
	ot->nr_chunks++;
	return c->data;
}

/* Frees the arena's chunks; with @keep, one chunk of the usual size stays. */
static void arena_reset(struct fgft_objtrack *ot, bool keep)
{
	struct fgft_chunk *c = ot->arena, *n, *kept = NULL;

	for (; c; c = n) {
		n = c->next;
		if (keep && !kept && c->cap == FGFT_ARENA_CHUNK - sizeof(*c)) {
			kept = c;
			continue;
		}
		fgft_mem_free(c);
	}
	if (kept) {
		kept->next = NULL;
		kept->used = 0;
	}
	ot->arena = kept;
}

static int track(struct fgft_objtrack *ot, const void *kobj, size_t ksize,
		 void *copy, size_t csize, u8 owned)
{
	uintptr_t k = (uintptr_t)kobj, c = (uintptr_t)copy;
	struct fgft_obj *o;

	if (k + span(ksize) < k || c + span(csize) < c)
		return -EINVAL;
	if (ot->n == ot->cap) {
		u32 ncap = ot->cap ? ot->cap * 2 : 8;

		o = fgft_mem_realloc(ot->o, (size_t)ncap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		ot->o = o;
		ot->cap = ncap;
	}
	/* Settled at once: the lookups take a const tracker. */
	if (fgft_ivx_insert(&ot->byk, k, k + span(ksize), ot->n))
		return -ENOMEM;
	fgft_ivx_settle(&ot->byk);
	if (fgft_ivx_insert(&ot->byc, c, c + span(csize), ot->n)) {
		fgft_ivx_kill(&ot->byk, k, ot->n);
		fgft_ivx_compact(&ot->byk);
		return -ENOMEM;
	}
	fgft_ivx_settle(&ot->byc);
	o = &ot->o[ot->n++];
	o->kaddr = k;
	o->ksize = ksize;
	o->copy = copy;
	o->csize = csize;
	o->owned = owned;
	return 0;
}

int fgft_objtrack_add(struct fgft_objtrack *ot, const void *kobj,
		      size_t ksize, void *copy, size_t csize)
{
	if (!kobj || !copy)
		return -EINVAL;
	if (exact(&ot->byk, (uintptr_t)kobj) >= 0)
		return -EEXIST;
	return track(ot, kobj, ksize, copy, csize, 0);
}

void *fgft_objtrack_copy(struct fgft_objtrack *ot, const void *kobj,
			 size_t ksize, size_t csize)
{
	int i = exact(&ot->byk, (uintptr_t)kobj);
	void *copy;

	if (i >= 0)
		return ot->o[i].csize >= csize ? ot->o[i].copy : NULL;
	if (!kobj)
		return NULL;
	copy = arena_alloc(ot, span(csize));
	if (!copy)
		return NULL;
	/* On failure the arena space stays used until the reset. */
	if (track(ot, kobj, ksize, copy, csize, 1))
		return NULL;
	ot->nr_alloc++;
	return copy;
}

void *fgft_objtrack_find(const struct fgft_objtrack *ot, const void *kobj)
{
	int i = exact(&ot->byk, (uintptr_t)kobj);

	return i >= 0 ? ot->o[i].copy : NULL;
}

void *fgft_objtrack_orig(const struct fgft_objtrack *ot, const void *copy)
{
	int i = exact(&ot->byc, (uintptr_t)copy);

	return i >= 0 ? (void *)ot->o[i].kaddr : NULL;
}

void *fgft_objtrack_to_copy(const struct fgft_objtrack *ot, const void *kptr)
{
	uintptr_t p = (uintptr_t)kptr;
	int i = containing(&ot->byk, p);
	uintptr_t off;

	if (i < 0)
		return NULL;
	off = p - ot->o[i].kaddr;
	if (off >= span(ot->o[i].csize))
		return NULL;
	return (char *)ot->o[i].copy + off;
}

void *fgft_objtrack_to_orig(const struct fgft_objtrack *ot, const void *cptr)
{
	uintptr_t p = (uintptr_t)cptr;
	int i = containing(&ot->byc, p);
	uintptr_t off;

	if (i < 0)
		return NULL;
	off = p - (uintptr_t)ot->o[i].copy;
	if (off >= span(ot->o[i].ksize))
		return NULL;
	return (void *)(ot->o[i].kaddr + off);
}

bool fgft_objtrack_in_copy(const struct fgft_objtrack *ot, const void *cptr)
{
	return containing(&ot->byc, (uintptr_t)cptr) >= 0;
}

void fgft_objtrack_reset(struct fgft_objtrack *ot)
{
	arena_reset(ot, true);
	ot->n = 0;
	fgft_ivx_reset(&ot->byk);
	fgft_ivx_reset(&ot->byc);
}

void fgft_objtrack_trim(struct fgft_objtrack *ot, u32 keep)
{
	fgft_objtrack_reset(ot);
	if (!keep)
		arena_reset(ot, false);
	if (ot->cap > keep) {
		fgft_mem_free(ot->o);
		ot->o = NULL;
		ot->cap = 0;
	}
	fgft_ivx_trim(&ot->byk, keep);
	fgft_ivx_trim(&ot->byc, keep);
}

void fgft_objtrack_destroy(struct fgft_objtrack *ot)
{
	fgft_objtrack_reset(ot);
	arena_reset(ot, false);
	fgft_mem_free(ot->o);
	fgft_ivx_destroy(&ot->byk);
	fgft_ivx_destroy(&ot->byc);
	fgft_objtrack_init(ot);
}

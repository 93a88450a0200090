/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Object tracker: kernel object <-> SFI copy, with both sizes.
 *
 * Exact lookups answer "what is the copy of this kernel object" and back;
 * interior lookups translate a pointer into the middle of one side to the
 * same offset on the other side (used when marshaling embedded pointers).
 * When tracked kernel objects overlap (an object and a member of it), the
 * smallest one containing the pointer wins.  Copies the tracker allocated
 * itself come from an arena of chunks (no allocation per copy once the
 * first chunk exists); they die when the transaction ends, and the arena
 * keeps one chunk for the next transaction of the pooled tracker.
 */
#ifndef _FGFT_OBJTRACK_H
#define _FGFT_OBJTRACK_H

#include "fgft_ivx.h"

struct fgft_obj {
	uintptr_t kaddr;
	size_t ksize;
	void *copy;
	size_t csize;
	u8 owned;	/* made by the tracker: dies at reset */
};

/* Size of an arena chunk, header included; bigger copies get their own. */
#define FGFT_ARENA_CHUNK	16384
/* Alignment of every copy in the arena (a cache line: members may be). */
#define FGFT_ARENA_ALIGN	64

struct fgft_chunk {
	struct fgft_chunk *next;
	size_t cap;	/* bytes of data[] */
	size_t used;
	char data[] __aligned(FGFT_ARENA_ALIGN);
};

struct fgft_objtrack {
	struct fgft_obj *o;
	u32 n;
	u32 cap;
	struct fgft_ivx byk;	/* kernel side */
	struct fgft_ivx byc;	/* copy side */
	struct fgft_chunk *arena;	/* newest chunk first */
	u64 nr_alloc;		/* copies made (statistics) */
	u64 nr_chunks;		/* arena chunks allocated (statistics) */
};

void fgft_objtrack_init(struct fgft_objtrack *ot);
/*
 * The copy of @kobj; allocates a zeroed @csize-byte one on first use.
 * NULL on allocation failure, or when @kobj is tracked with a smaller copy.
 */
void *fgft_objtrack_copy(struct fgft_objtrack *ot, const void *kobj,
			 size_t ksize, size_t csize);
/* Tracks a copy the caller owns (it is not freed at reset). */
int fgft_objtrack_add(struct fgft_objtrack *ot, const void *kobj,
		      size_t ksize, void *copy, size_t csize);
void *fgft_objtrack_find(const struct fgft_objtrack *ot, const void *kobj);
void *fgft_objtrack_orig(const struct fgft_objtrack *ot, const void *copy);
void *fgft_objtrack_to_copy(const struct fgft_objtrack *ot, const void *kptr);
void *fgft_objtrack_to_orig(const struct fgft_objtrack *ot, const void *cptr);
/* Whether @cptr lies in a copy (its tail past the original's size too). */
bool fgft_objtrack_in_copy(const struct fgft_objtrack *ot, const void *cptr);
/* Ends owned copies and forgets everything (keeps one arena chunk). */
void fgft_objtrack_reset(struct fgft_objtrack *ot);
void fgft_objtrack_trim(struct fgft_objtrack *ot, u32 keep);
void fgft_objtrack_destroy(struct fgft_objtrack *ot);

#endif /* _FGFT_OBJTRACK_H */

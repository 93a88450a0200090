// SPDX-License-Identifier: GPL-2.0
/*
 * fgft runtime: a driver's heap.  The live objects a driver allocated
 * through the compensation table's allocators (`heap = true`), natively in
 * its main module or in a transaction that committed, and has not freed
 * through the table's frees.  A driver whose entry points use kernel
 * objects in place keeps such objects where no marshaling reaches them:
 * in lists and caches hanging off its inodes (fat's cache of cluster runs).
 * Its in-place transactions may touch them; their stores are logged like
 * every in-place store, so an abort puts them back.
 *
 * Invariant: an object is in the table from its allocation (or its
 * transaction's commit) until the driver frees it, and is taken out
 * before the memory goes back to the allocator.
 */
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <fgft/runtime.h>

#include "fgft_internal.h"
#include "fgft_rtab.h"

struct fgft_heap_tab {
	rwlock_t lock;
	struct fgft_rtab rt;
};

static struct fgft_heap_tab *heap_tab(struct fgft_heap *h)
{
	/* Pairs with the release in fgft_heap_init(): seen whole or not. */
	return smp_load_acquire(&h->tab);
}

int fgft_heap_init(struct fgft_heap *h)
{
	struct fgft_heap_tab *tab = kzalloc(sizeof(*tab), GFP_KERNEL);

	if (!tab)
		return -ENOMEM;
	rwlock_init(&tab->lock);
	fgft_rtab_init(&tab->rt);
	/* Published initialized: pairs with heap_tab(). */
	smp_store_release(&h->tab, tab);
	return 0;
}
EXPORT_SYMBOL_GPL(fgft_heap_init);

void fgft_heap_destroy(struct fgft_heap *h)
{
	struct fgft_heap_tab *tab = xchg(&h->tab, NULL);

	if (!tab)
		return;
	fgft_rtab_destroy(&tab->rt);
	kfree(tab);
}
EXPORT_SYMBOL_GPL(fgft_heap_destroy);

static void heap_add_now(struct fgft_heap *h, unsigned long obj, size_t len)
{
	struct fgft_heap_tab *tab = heap_tab(h);
	unsigned long flags;

	if (!tab || !len)
		return;
	write_lock_irqsave(&tab->lock, flags);
	/* Without memory for the slot the object stays unknown: refused. */
	if (fgft_rtab_map(&tab->rt, obj, len, FGFT_RW) >= 0)
		h->nr_live++;
	/* Readers under the read lock find it settled. */
	fgft_rtab_settle(&tab->rt);
	write_unlock_irqrestore(&tab->lock, flags);
}

static void heap_add_at_commit(unsigned long *a)
{
	heap_add_now((struct fgft_heap *)a[0], a[1], a[2]);
}

void fgft_heap_add(struct fgft_heap *h, struct fgft_txn *txn, const void *obj,
		   size_t len)
{
	if (!h || IS_ERR_OR_NULL(obj))
		return;
	if (txn)
		fgft_commit_push(txn, heap_add_at_commit, (unsigned long)h,
				 (unsigned long)obj, len, 0);
	else
		heap_add_now(h, (unsigned long)obj, len);
}
EXPORT_SYMBOL_GPL(fgft_heap_add);

void fgft_heap_del(struct fgft_heap *h, const void *obj)
{
	struct fgft_heap_tab *tab;
	unsigned long flags;

	if (!h || IS_ERR_OR_NULL(obj))
		return;
	tab = heap_tab(h);
	if (!tab)
		return;
	write_lock_irqsave(&tab->lock, flags);
	if (fgft_rtab_find_start(&tab->rt, (uintptr_t)obj) < 0) {
		int id = fgft_rtab_find_containing(&tab->rt, (uintptr_t)obj);

		if (id >= 0)
			obj = (const void *)tab->rt.g[id].start;
	}
	while (fgft_rtab_unmap(&tab->rt, (uintptr_t)obj, UINT_MAX) > 0)
		h->nr_live--;
	write_unlock_irqrestore(&tab->lock, flags);
}
EXPORT_SYMBOL_GPL(fgft_heap_del);

static void heap_del_at_commit(unsigned long *a)
{
	fgft_heap_del((struct fgft_heap *)a[0], (const void *)a[1]);
}

void fgft_heap_out(struct fgft_heap *h, struct fgft_txn *txn, const void *obj)
{
	if (!h || IS_ERR_OR_NULL(obj))
		return;
	if (txn)
		fgft_commit_push(txn, heap_del_at_commit, (unsigned long)h,
				 (unsigned long)obj, 0, 0);
	else
		fgft_heap_del(h, obj);
}
EXPORT_SYMBOL_GPL(fgft_heap_out);

/*
 * Whether @addr..+@len lies in one object of @h with @rights; if so, the
 * object is granted to @t for the rest of the transaction, so that the
 * next accesses there are checked inline.
 */
bool fgft_heap_allows(struct fgft_txn *t, struct fgft_heap *h,
		      unsigned long addr, size_t len, unsigned int rights)
{
	struct fgft_heap_tab *tab = heap_tab(h);
	uintptr_t start = 0, end = 0;
	unsigned long flags;
	int id;

	if (!tab || !READ_ONCE(h->nr_live))
		return false;
	read_lock_irqsave(&tab->lock, flags);
	id = fgft_rtab_check_slow(&tab->rt, addr, len, rights);
	if (id >= 0 && id != FGFT_RTAB_PIECEWISE) {
		start = tab->rt.g[id].start;
		end = tab->rt.g[id].end;
	} else if (id >= 0) {
		/* Across adjacent objects: this access only. */
		start = addr;
		end = addr + len;
	}
	read_unlock_irqrestore(&tab->lock, flags);
	if (id < 0)
		return false;
	fgft_rtab_map(&t->rtab, start, end - start, FGFT_RW);
	return true;
}

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
 * The objects sit in a red-black tree by address, each add and each free
 * O(log n): a NIC driver adds and frees a receive buffer per frame.
 *
 * Invariants: an object is in the tree from its allocation (or its
 * transaction's commit) until the driver frees it, and is taken out
 * before the memory goes back to the allocator.  The objects in the tree
 * are disjoint: memory the allocator hands out is no live object's, so an
 * object it overlaps was freed where the table did not see it (the stack
 * freed a buffer the driver handed on), and is dropped when it is added.
 */
#include <linux/rbtree.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <fgft/runtime.h>

#include "fgft_internal.h"
#include "fgft_rtab.h"

struct fgft_heap_obj {
	struct rb_node rb;
	unsigned long start;
	unsigned long end;
};

struct fgft_heap_tab {
	rwlock_t lock;
	struct rb_root root;
	/* Nodes of freed objects, for the next adds (under the lock). */
	struct fgft_heap_obj *spare;
	unsigned long nr_spare;
};

/* Spare nodes kept beyond which freed ones go back to the allocator. */
#define FGFT_HEAP_SPARE	256

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
	tab->root = RB_ROOT;
	/* Published initialized: pairs with heap_tab(). */
	smp_store_release(&h->tab, tab);
	return 0;
}
EXPORT_SYMBOL_GPL(fgft_heap_init);

void fgft_heap_destroy(struct fgft_heap *h)
{
	struct fgft_heap_tab *tab = xchg(&h->tab, NULL);
	struct fgft_heap_obj *o, *n;

	if (!tab)
		return;
	rbtree_postorder_for_each_entry_safe(o, n, &tab->root, rb)
		kfree(o);
	while (tab->spare) {
		o = tab->spare;
		tab->spare = (struct fgft_heap_obj *)o->end;
		kfree(o);
	}
	kfree(tab);
}
EXPORT_SYMBOL_GPL(fgft_heap_destroy);

/* The object with the highest start at or below @addr, or NULL. */
static struct fgft_heap_obj *obj_at_or_below(struct fgft_heap_tab *tab,
					     unsigned long addr)
{
	struct rb_node *n = tab->root.rb_node;
	struct fgft_heap_obj *best = NULL;

	while (n) {
		struct fgft_heap_obj *o = rb_entry(n, struct fgft_heap_obj, rb);

		if (o->start <= addr) {
			best = o;
			n = n->rb_right;
		} else {
			n = n->rb_left;
		}
	}
	return best;
}

/* The object containing @addr, or NULL. */
static struct fgft_heap_obj *obj_containing(struct fgft_heap_tab *tab,
					    unsigned long addr)
{
	struct fgft_heap_obj *o = obj_at_or_below(tab, addr);

	return o && addr < o->end ? o : NULL;
}

/* Takes @o out of the tree; its node becomes a spare (under the lock). */
static void obj_drop(struct fgft_heap *h, struct fgft_heap_tab *tab,
		     struct fgft_heap_obj *o)
{
	rb_erase(&o->rb, &tab->root);
	h->nr_live--;
	if (tab->nr_spare >= FGFT_HEAP_SPARE) {
		kfree(o);
		return;
	}
	/* A spare's end links the next spare. */
	o->end = (unsigned long)tab->spare;
	tab->spare = o;
	tab->nr_spare++;
}

static void heap_add_now(struct fgft_heap *h, unsigned long obj, size_t len)
{
	struct fgft_heap_tab *tab = heap_tab(h);
	unsigned long end = obj + len, flags;
	struct fgft_heap_obj *o, *old;
	struct rb_node **link, *parent = NULL;

	if (!tab || !len || end < obj)
		return;
	write_lock_irqsave(&tab->lock, flags);
	o = tab->spare;
	if (o) {
		tab->spare = (struct fgft_heap_obj *)o->end;
		tab->nr_spare--;
	} else {
		write_unlock_irqrestore(&tab->lock, flags);
		/* Without memory the object stays unknown: refused. */
		o = kmalloc(sizeof(*o), GFP_ATOMIC);
		if (!o)
			return;
		write_lock_irqsave(&tab->lock, flags);
	}
	o->start = obj;
	o->end = end;
	/* Objects it overlaps were freed unseen: dropped. */
	old = obj_at_or_below(tab, end - 1);
	while (old && old->end > obj) {
		struct rb_node *prev = rb_prev(&old->rb);

		obj_drop(h, tab, old);
		old = prev ? rb_entry(prev, struct fgft_heap_obj, rb) : NULL;
	}
	link = &tab->root.rb_node;
	while (*link) {
		parent = *link;
		if (obj < rb_entry(parent, struct fgft_heap_obj, rb)->start)
			link = &parent->rb_left;
		else
			link = &parent->rb_right;
	}
	rb_link_node(&o->rb, parent, link);
	rb_insert_color(&o->rb, &tab->root);
	h->nr_live++;
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
	struct fgft_heap_obj *o;
	unsigned long flags;

	if (!h || IS_ERR_OR_NULL(obj))
		return;
	tab = heap_tab(h);
	if (!tab)
		return;
	write_lock_irqsave(&tab->lock, flags);
	/* The object @obj points into (its start, or inside it). */
	o = obj_containing(tab, (unsigned long)obj);
	if (o)
		obj_drop(h, tab, o);
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
	unsigned long start = 0, end = 0, flags, a = addr;
	struct fgft_heap_obj *o;

	if (!tab || !READ_ONCE(h->nr_live) || !len || addr + len < addr)
		return false;
	read_lock_irqsave(&tab->lock, flags);
	o = obj_containing(tab, addr);
	if (o && addr + len <= o->end) {
		start = o->start;
		end = o->end;
	} else {
		/* Across adjacent objects: this access only. */
		while (o && o->start <= a && a < addr + len) {
			struct rb_node *next = rb_next(&o->rb);

			a = o->end;
			o = next ? rb_entry(next, struct fgft_heap_obj, rb) :
				   NULL;
		}
		if (a >= addr + len) {
			start = addr;
			end = addr + len;
		}
	}
	read_unlock_irqrestore(&tab->lock, flags);
	if (end == start)
		return false;
	fgft_rtab_map(&t->rtab, start, end - start, FGFT_RW);
	return true;
}

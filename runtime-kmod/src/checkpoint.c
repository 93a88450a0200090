// SPDX-License-Identifier: GPL-2.0
/*
 * Device checkpoints: a registry of per-device checkpoint/restore
 * callbacks used by fgft_txn_begin()/fgft_txn_abort(), and a reusable PCI
 * config-space checkpoint.  pci_restore_state() consumes the state saved in
 * the pci_dev, so the runtime keeps its own copy (pci_store_saved_state())
 * and loads it back before every restore (pci_load_saved_state()).
 */
#define pr_fmt(fmt) "fgft: " fmt

#include <linux/module.h>
#include <linux/hashtable.h>
#include <linux/refcount.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/pci.h>

#include "fgft_internal.h"

struct fgft_devreg {
	struct hlist_node node;
	void *dev;
	const struct fgft_dev_ops *ops;
	refcount_t ref;
};

static DEFINE_HASHTABLE(fgft_devs, 6);
static DEFINE_SPINLOCK(fgft_devs_lock);

static struct fgft_devreg *devreg_find(void *dev)
{
	struct fgft_devreg *r;

	hash_for_each_possible(fgft_devs, r, node, (unsigned long)dev)
		if (r->dev == dev)
			return r;
	return NULL;
}

int fgft_dev_register(void *dev, const struct fgft_dev_ops *ops)
{
	struct fgft_devreg *r;
	unsigned long flags;
	int err = 0;

	if (!dev || !ops)
		return -EINVAL;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	r->dev = dev;
	r->ops = ops;
	refcount_set(&r->ref, 1);
	spin_lock_irqsave(&fgft_devs_lock, flags);
	if (devreg_find(dev))
		err = -EEXIST;
	else
		hash_add(fgft_devs, &r->node, (unsigned long)dev);
	spin_unlock_irqrestore(&fgft_devs_lock, flags);
	if (err)
		kfree(r);
	return err;
}
EXPORT_SYMBOL_GPL(fgft_dev_register);

void fgft_dev_unregister(void *dev)
{
	struct fgft_devreg *r;
	unsigned long flags;

	spin_lock_irqsave(&fgft_devs_lock, flags);
	r = devreg_find(dev);
	if (r)
		hash_del(&r->node);
	spin_unlock_irqrestore(&fgft_devs_lock, flags);
	if (r)
		fgft_devreg_put(r);
}
EXPORT_SYMBOL_GPL(fgft_dev_unregister);

/*
 * Registers @ops for @dev unless the device already has callbacks: generated
 * stubs call it before every transaction, so a device is registered the
 * first time one of its entry points runs, whatever bus brought it.
 */
int fgft_dev_ensure(void *dev, const struct fgft_dev_ops *ops)
{
	struct fgft_devreg *r;
	unsigned long flags;
	bool found;

	if (!dev || !ops)
		return -EINVAL;
	spin_lock_irqsave(&fgft_devs_lock, flags);
	found = devreg_find(dev);
	spin_unlock_irqrestore(&fgft_devs_lock, flags);
	if (found)
		return 0;
	r = kzalloc(sizeof(*r), preemptible() ? GFP_KERNEL : GFP_ATOMIC);
	if (!r)
		return -ENOMEM;
	r->dev = dev;
	r->ops = ops;
	refcount_set(&r->ref, 1);
	spin_lock_irqsave(&fgft_devs_lock, flags);
	found = devreg_find(dev);
	if (!found)
		hash_add(fgft_devs, &r->node, (unsigned long)dev);
	spin_unlock_irqrestore(&fgft_devs_lock, flags);
	if (found)
		kfree(r);
	return 0;
}
EXPORT_SYMBOL_GPL(fgft_dev_ensure);

/* Drops every registration that uses @ops (a driver module going away). */
void fgft_dev_unregister_ops(const struct fgft_dev_ops *ops)
{
	struct fgft_devreg *r;
	struct hlist_node *tmp;
	unsigned long flags;
	HLIST_HEAD(dead);
	int bkt;

	spin_lock_irqsave(&fgft_devs_lock, flags);
	hash_for_each_safe(fgft_devs, bkt, tmp, r, node) {
		if (r->ops == ops) {
			hash_del(&r->node);
			hlist_add_head(&r->node, &dead);
		}
	}
	spin_unlock_irqrestore(&fgft_devs_lock, flags);
	hlist_for_each_entry_safe(r, tmp, &dead, node) {
		hlist_del(&r->node);
		fgft_devreg_put(r);
	}
}
EXPORT_SYMBOL_GPL(fgft_dev_unregister_ops);

struct fgft_devreg *fgft_devreg_get(void *dev)
{
	struct fgft_devreg *r;
	unsigned long flags;

	spin_lock_irqsave(&fgft_devs_lock, flags);
	r = devreg_find(dev);
	if (r)
		refcount_inc(&r->ref);
	spin_unlock_irqrestore(&fgft_devs_lock, flags);
	return r;
}

void fgft_devreg_put(struct fgft_devreg *r)
{
	if (refcount_dec_and_test(&r->ref))
		kfree(r);
}

int fgft_devreg_checkpoint(struct fgft_devreg *r, void *dev)
{
	return r->ops->checkpoint ? r->ops->checkpoint(dev) : 0;
}

void fgft_devreg_restore(struct fgft_devreg *r, void *dev)
{
	if (r->ops->restore)
		r->ops->restore(dev);
}

/* ---- reusable PCI state ---- */

struct fgft_pcisave {
	struct list_head node;
	struct pci_dev *pdev;
	struct pci_saved_state *state;
};

static LIST_HEAD(fgft_pci_saves);
static DEFINE_SPINLOCK(fgft_pci_lock);

static struct fgft_pcisave *pcisave_find(struct pci_dev *pdev)
{
	struct fgft_pcisave *s;

	list_for_each_entry(s, &fgft_pci_saves, node)
		if (s->pdev == pdev)
			return s;
	return NULL;
}

int fgft_pci_checkpoint(struct pci_dev *pdev)
{
	struct pci_saved_state *st, *old = NULL;
	struct fgft_pcisave *s, *fresh;
	unsigned long flags;
	bool have;

	if (!pdev)
		return -EINVAL;
	if (!preemptible()) {
		/* Cannot allocate here: the last checkpoint stays valid. */
		spin_lock_irqsave(&fgft_pci_lock, flags);
		s = pcisave_find(pdev);
		have = s && s->state;
		spin_unlock_irqrestore(&fgft_pci_lock, flags);
		return have ? 0 : -EAGAIN;
	}
	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return -ENOMEM;
	pci_save_state(pdev);
	st = pci_store_saved_state(pdev);
	if (!st) {
		kfree(fresh);
		return -ENOMEM;
	}
	spin_lock_irqsave(&fgft_pci_lock, flags);
	s = pcisave_find(pdev);
	if (s) {
		old = s->state;
		s->state = st;
	} else {
		fresh->pdev = pci_dev_get(pdev);
		fresh->state = st;
		list_add(&fresh->node, &fgft_pci_saves);
		fresh = NULL;
	}
	spin_unlock_irqrestore(&fgft_pci_lock, flags);
	kfree(old);
	kfree(fresh);
	return 0;
}
EXPORT_SYMBOL_GPL(fgft_pci_checkpoint);

void fgft_pci_restore(struct pci_dev *pdev)
{
	struct fgft_pcisave *s;
	unsigned long flags;
	int err = -ENOENT;

	spin_lock_irqsave(&fgft_pci_lock, flags);
	s = pcisave_find(pdev);
	if (s && s->state)
		err = pci_load_saved_state(pdev, s->state);
	spin_unlock_irqrestore(&fgft_pci_lock, flags);
	if (err) {
		pr_warn_ratelimited("%s: no PCI checkpoint to restore (%d)\n",
				    pci_name(pdev), err);
		return;
	}
	pci_restore_state(pdev);
}
EXPORT_SYMBOL_GPL(fgft_pci_restore);

void fgft_pci_forget(struct pci_dev *pdev)
{
	struct fgft_pcisave *s;
	unsigned long flags;

	spin_lock_irqsave(&fgft_pci_lock, flags);
	s = pcisave_find(pdev);
	if (s)
		list_del(&s->node);
	spin_unlock_irqrestore(&fgft_pci_lock, flags);
	if (!s)
		return;
	kfree(s->state);
	pci_dev_put(s->pdev);
	kfree(s);
}
EXPORT_SYMBOL_GPL(fgft_pci_forget);

void fgft_checkpoint_exit(void)
{
	struct fgft_devreg *r;
	struct hlist_node *tmp;
	int bkt;

	while (!list_empty(&fgft_pci_saves)) {
		struct fgft_pcisave *s = list_first_entry(&fgft_pci_saves,
							  struct fgft_pcisave,
							  node);

		fgft_pci_forget(s->pdev);
	}
	hash_for_each_safe(fgft_devs, bkt, tmp, r, node) {
		hash_del(&r->node);
		fgft_devreg_put(r);
	}
}

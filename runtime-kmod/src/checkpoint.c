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
#include <linux/rculist.h>
#include <linux/interrupt.h>
#include <linux/irq.h>
#include <linux/workqueue.h>

#include "fgft_internal.h"

struct fgft_devreg {
	struct hlist_node node;
	void *dev;
	const struct fgft_dev_ops *ops;
	refcount_t ref;
	struct rcu_head rcu;
};

/*
 * Registrations are looked up on every transaction (an I/O-path entry's
 * every packet): readers walk the table under RCU, with no lock; writers
 * serialize on fgft_devs_lock, and a registration is freed a grace period
 * after its last reference goes.
 */
static DEFINE_HASHTABLE(fgft_devs, 6);
static DEFINE_SPINLOCK(fgft_devs_lock);

/* Under rcu_read_lock() or fgft_devs_lock. */
static struct fgft_devreg *devreg_find(void *dev)
{
	struct fgft_devreg *r;

	hash_for_each_possible_rcu(fgft_devs, r, node, (unsigned long)dev,
				   lockdep_is_held(&fgft_devs_lock))
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
		hash_add_rcu(fgft_devs, &r->node, (unsigned long)dev);
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
		hash_del_rcu(&r->node);
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
	rcu_read_lock();
	found = devreg_find(dev);
	rcu_read_unlock();
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
		hash_add_rcu(fgft_devs, &r->node, (unsigned long)dev);
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
			hash_del_rcu(&r->node);
			hlist_add_head(&r->node, &dead);
		}
	}
	spin_unlock_irqrestore(&fgft_devs_lock, flags);
	/* Readers may still be on the old links: wait before relinking. */
	synchronize_rcu();
	hlist_for_each_entry_safe(r, tmp, &dead, node) {
		hlist_del(&r->node);
		fgft_devreg_put(r);
	}
}
EXPORT_SYMBOL_GPL(fgft_dev_unregister_ops);

struct fgft_devreg *fgft_devreg_get(void *dev)
{
	struct fgft_devreg *r;

	rcu_read_lock();
	r = devreg_find(dev);
	if (r && !refcount_inc_not_zero(&r->ref))
		r = NULL;
	rcu_read_unlock();
	return r;
}

void fgft_devreg_put(struct fgft_devreg *r)
{
	if (refcount_dec_and_test(&r->ref))
		kfree_rcu(r, rcu);
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

/* Under rcu_read_lock() or fgft_pci_lock (atomic checks take no lock). */
static struct fgft_pcisave *pcisave_find(struct pci_dev *pdev)
{
	struct fgft_pcisave *s;

	list_for_each_entry_rcu(s, &fgft_pci_saves, node,
				lockdep_is_held(&fgft_pci_lock))
		if (s->pdev == pdev)
			return s;
	return NULL;
}

/*
 * The first checkpoint of a device asked for in atomic context (an entry on
 * the I/O path, before any process-context one): the config space is saved
 * in the pci_dev itself, which needs no allocation, and a work item keeps a
 * reusable copy of it as soon as it can sleep.
 */
struct fgft_pci_pending {
	struct list_head node;
	struct pci_dev *pdev;
};

static LIST_HEAD(fgft_pci_pend);
static void fgft_pci_store_fn(struct work_struct *work);
static DECLARE_WORK(fgft_pci_store_work, fgft_pci_store_fn);

static int pci_checkpoint_atomic(struct pci_dev *pdev)
{
	struct fgft_pci_pending *p, *q;
	unsigned long flags;
	bool queued = false;

	p = kzalloc(sizeof(*p), GFP_ATOMIC | __GFP_NOWARN);
	if (!p)
		return -EAGAIN;
	spin_lock_irqsave(&fgft_pci_lock, flags);
	list_for_each_entry(q, &fgft_pci_pend, node)
		queued |= q->pdev == pdev;
	if (!queued) {
		p->pdev = pci_dev_get(pdev);
		list_add_tail(&p->node, &fgft_pci_pend);
	}
	spin_unlock_irqrestore(&fgft_pci_lock, flags);
	if (queued) {
		kfree(p);
		return 0;
	}
	pci_save_state(pdev);
	schedule_work(&fgft_pci_store_work);
	return 0;
}

static void fgft_pci_store_fn(struct work_struct *work)
{
	struct fgft_pci_pending *p;
	unsigned long flags;

	for (;;) {
		spin_lock_irqsave(&fgft_pci_lock, flags);
		p = list_first_entry_or_null(&fgft_pci_pend,
					     struct fgft_pci_pending, node);
		if (p)
			list_del(&p->node);
		spin_unlock_irqrestore(&fgft_pci_lock, flags);
		if (!p)
			break;
		if (fgft_pci_checkpoint(p->pdev))
			pr_warn("%s: no reusable PCI checkpoint\n",
				pci_name(p->pdev));
		pci_dev_put(p->pdev);
		kfree(p);
	}
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
		rcu_read_lock();
		s = pcisave_find(pdev);
		have = s && READ_ONCE(s->state);
		rcu_read_unlock();
		return have ? 0 : pci_checkpoint_atomic(pdev);
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
		WRITE_ONCE(s->state, st);
	} else {
		fresh->pdev = pci_dev_get(pdev);
		fresh->state = st;
		list_add_rcu(&fresh->node, &fgft_pci_saves);
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
	else if (pdev->state_saved)
		err = 0;	/* saved in atomic context, not yet kept */
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
		list_del_rcu(&s->node);
	spin_unlock_irqrestore(&fgft_pci_lock, flags);
	if (!s)
		return;
	synchronize_rcu();
	kfree(s->state);
	pci_dev_put(s->pdev);
	kfree(s);
}
EXPORT_SYMBOL_GPL(fgft_pci_forget);

/* ---- interrupt lines of aborted handlers ---- */

/*
 * An interrupt handler that aborts before it acknowledged its device
 * leaves a level-triggered line asserted; its device restore runs later,
 * in process context, and an interrupt storm on the line would keep that
 * from ever running.  The line is masked meanwhile and unmasked after a
 * pause long enough for the deferred restore (a restore that has not
 * finished by then masks it again at the next abort).
 */
#define FGFT_QUIET_SLOTS	8
#define FGFT_QUIET_MS		50

struct fgft_quiet {
	struct delayed_work work;
	int irq;		/* -1: free */
};

static struct fgft_quiet fgft_quiet[FGFT_QUIET_SLOTS];
static DEFINE_RAW_SPINLOCK(fgft_quiet_lock);

static void fgft_quiet_end(struct work_struct *w)
{
	struct fgft_quiet *q = container_of(to_delayed_work(w),
					    struct fgft_quiet, work);
	struct irq_data *d;
	unsigned long flags;
	int irq;

	raw_spin_lock_irqsave(&fgft_quiet_lock, flags);
	irq = q->irq;
	q->irq = -1;
	raw_spin_unlock_irqrestore(&fgft_quiet_lock, flags);
	/*
	 * A restore that freed and requested the line again (close and open)
	 * left it enabled: enabling it once more would be unbalanced.
	 */
	d = irq >= 0 ? irq_get_irq_data(irq) : NULL;
	if (d && irqd_irq_disabled(d))
		enable_irq(irq);
}

void fgft_quiet_init(void)
{
	int i;

	for (i = 0; i < FGFT_QUIET_SLOTS; i++) {
		INIT_DELAYED_WORK(&fgft_quiet[i].work, fgft_quiet_end);
		fgft_quiet[i].irq = -1;
	}
}

void fgft_irq_quiesce(int irq)
{
	struct fgft_quiet *q = NULL;
	unsigned long flags;
	int i;

	if (irq < 0 || !irq_get_irq_data(irq))
		return;
	raw_spin_lock_irqsave(&fgft_quiet_lock, flags);
	for (i = 0; i < FGFT_QUIET_SLOTS; i++) {
		if (fgft_quiet[i].irq == irq) {
			/* Masked already: one disable per pause. */
			raw_spin_unlock_irqrestore(&fgft_quiet_lock, flags);
			return;
		}
		if (!q && fgft_quiet[i].irq < 0)
			q = &fgft_quiet[i];
	}
	if (q)
		q->irq = irq;
	raw_spin_unlock_irqrestore(&fgft_quiet_lock, flags);
	/* With no free slot the line stays as it is. */
	if (!q)
		return;
	disable_irq_nosync(irq);
	schedule_delayed_work(&q->work, msecs_to_jiffies(FGFT_QUIET_MS));
}
EXPORT_SYMBOL_GPL(fgft_irq_quiesce);

void fgft_checkpoint_exit(void)
{
	struct fgft_devreg *r;
	struct hlist_node *tmp;
	int bkt;

	flush_work(&fgft_pci_store_work);
	for (bkt = 0; bkt < FGFT_QUIET_SLOTS; bkt++)
		flush_delayed_work(&fgft_quiet[bkt].work);
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

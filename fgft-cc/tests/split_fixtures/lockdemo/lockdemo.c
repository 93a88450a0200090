// SPDX-License-Identifier: GPL-2.0
/*
 * A virtual net driver for the split build tests (with --kdir): entry points
 * that lock through kernel functions the runtime has no primitive for
 * (down()/up(), netif_tx_lock_bh()), wait on a wait queue with
 * wait_event_timeout() (a wait entry on the SFI stack), and close and open
 * the device around a ring change (dev_close() calls back into ndo_stop).
 * The entry points are not static: the ethtool_ops that holds them is in
 * the other unit, lockdemo_ethtool.c.
 */
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/semaphore.h>
#include <linux/wait.h>

#include "lockdemo.h"

static int lockdemo_open(struct net_device *dev)
{
	return 0;
}

static int lockdemo_stop(struct net_device *dev)
{
	return 0;
}

static netdev_tx_t lockdemo_xmit(struct sk_buff *skb, struct net_device *dev)
{
	dev_kfree_skb(skb);
	return NETDEV_TX_OK;
}

static const struct net_device_ops lockdemo_netdev_ops = {
	.ndo_open = lockdemo_open,
	.ndo_stop = lockdemo_stop,
	.ndo_start_xmit = lockdemo_xmit,
};

/* Under the driver's semaphore, as drivers that sleep for their device do. */
u32 lockdemo_get_msglevel(struct net_device *dev)
{
	struct lockdemo *ld = netdev_priv(dev);
	u32 v;

	if (down_interruptible(&ld->sem))
		return 0;
	v = ld->msg_enable;
	up(&ld->sem);
	return v;
}

void lockdemo_set_msglevel(struct net_device *dev, u32 v)
{
	struct lockdemo *ld = netdev_priv(dev);

	down(&ld->sem);
	ld->msg_enable = v;
	up(&ld->sem);
	netif_tx_lock_bh(dev);
	ld->ready = 1;
	netif_tx_unlock_bh(dev);
}

/* Waits for the (virtual) device to be ready, at most a jiffy. */
int lockdemo_nway_reset(struct net_device *dev)
{
	struct lockdemo *ld = netdev_priv(dev);

	if (!wait_event_timeout(ld->wq, READ_ONCE(ld->ready), 1))
		return -ETIMEDOUT;
	return 0;
}

void lockdemo_get_ringparam(struct net_device *dev, struct ethtool_ringparam *ring,
				   struct kernel_ethtool_ringparam *kring,
				   struct netlink_ext_ack *extack)
{
	struct lockdemo *ld = netdev_priv(dev);

	ring->rx_max_pending = 256;
	/* A trylock: the runtime holds what it took to the end. */
	if (!mutex_trylock(&ld->cfg_lock))
		return;
	ring->rx_pending = ld->rx_pending;
	mutex_unlock(&ld->cfg_lock);
}

int lockdemo_set_ringparam(struct net_device *dev, struct ethtool_ringparam *ring,
				  struct kernel_ethtool_ringparam *kring,
				  struct netlink_ext_ack *extack)
{
	struct lockdemo *ld = netdev_priv(dev);
	bool running = netif_running(dev);

	if (running)
		dev_close(dev);
	ld->rx_pending = ring->rx_pending;
	/*
	 * A kernel inline helper whose body calls wrapped exports
	 * (get_random_bytes, dev_addr_mod).
	 */
	eth_hw_addr_random(dev);
	if (running)
		return dev_open(dev, extack);
	return 0;
}

static struct net_device *lockdemo_dev;

static int __init lockdemo_init(void)
{
	struct net_device *dev = alloc_etherdev(sizeof(struct lockdemo));
	struct lockdemo *ld;
	int err;

	if (!dev)
		return -ENOMEM;
	ld = netdev_priv(dev);
	ld->dev = dev;
	sema_init(&ld->sem, 1);
	init_waitqueue_head(&ld->wq);
	mutex_init(&ld->cfg_lock);
	ld->rx_pending = 64;
	dev->netdev_ops = &lockdemo_netdev_ops;
	dev->ethtool_ops = &lockdemo_ethtool_ops;
	eth_hw_addr_random(dev);
	err = register_netdev(dev);
	if (err) {
		free_netdev(dev);
		return err;
	}
	lockdemo_dev = dev;
	return 0;
}

static void __exit lockdemo_exit(void)
{
	unregister_netdev(lockdemo_dev);
	free_netdev(lockdemo_dev);
}

module_init(lockdemo_init);
module_exit(lockdemo_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("fgft split fixture: locks through kernel functions, waits, dev_close");

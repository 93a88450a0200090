// SPDX-License-Identifier: GPL-2.0
/*
 * A tiny net driver for the split tests: its isolated ethtool entry point
 * reads a member of an object the kernel declares const (the net_device's
 * `const struct net_device_ops *netdev_ops`).  fgft spells that object's
 * type with typeof, and the copy it makes of it must still be writable
 * (a copy-in through a const type does not compile).
 */
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>

struct constdemo {
	u32 msg_enable;
};

static int constdemo_open(struct net_device *dev)
{
	return 0;
}

static int constdemo_stop(struct net_device *dev)
{
	return 0;
}

static netdev_tx_t constdemo_xmit(struct sk_buff *skb, struct net_device *dev)
{
	dev_kfree_skb(skb);
	return NETDEV_TX_OK;
}

static const struct net_device_ops constdemo_netdev_ops = {
	.ndo_open = constdemo_open,
	.ndo_stop = constdemo_stop,
	.ndo_start_xmit = constdemo_xmit,
};

/* Link is up when the device can be opened and messages are enabled. */
static u32 constdemo_get_link(struct net_device *dev)
{
	struct constdemo *cd = netdev_priv(dev);

	return dev->netdev_ops->ndo_open && cd->msg_enable ? 1 : 0;
}

static const struct ethtool_ops constdemo_ethtool_ops = {
	.get_link = constdemo_get_link,
};

static struct net_device *constdemo_dev;

static int __init constdemo_init(void)
{
	struct net_device *dev = alloc_etherdev(sizeof(struct constdemo));
	int err;

	if (!dev)
		return -ENOMEM;
	dev->netdev_ops = &constdemo_netdev_ops;
	dev->ethtool_ops = &constdemo_ethtool_ops;
	eth_hw_addr_random(dev);
	err = register_netdev(dev);
	if (err) {
		free_netdev(dev);
		return err;
	}
	constdemo_dev = dev;
	return 0;
}

static void __exit constdemo_exit(void)
{
	unregister_netdev(constdemo_dev);
	free_netdev(constdemo_dev);
}

module_init(constdemo_init);
module_exit(constdemo_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("fgft split fixture: a copy of a const kernel object");

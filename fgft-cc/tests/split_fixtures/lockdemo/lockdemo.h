/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LOCKDEMO_H
#define _LOCKDEMO_H

#include <linux/netdevice.h>
#include <linux/ethtool.h>
#include <linux/semaphore.h>
#include <linux/wait.h>
#include <linux/mutex.h>

struct lockdemo {
	struct net_device *dev;
	struct semaphore sem;
	wait_queue_head_t wq;
	struct mutex cfg_lock;
	u32 ready;
	u32 rx_pending;
	u32 msg_enable;
};

u32 lockdemo_get_msglevel(struct net_device *dev);
void lockdemo_set_msglevel(struct net_device *dev, u32 v);
int lockdemo_nway_reset(struct net_device *dev);
void lockdemo_get_ringparam(struct net_device *dev, struct ethtool_ringparam *ring,
			    struct kernel_ethtool_ringparam *kring,
			    struct netlink_ext_ack *extack);
int lockdemo_set_ringparam(struct net_device *dev, struct ethtool_ringparam *ring,
			   struct kernel_ethtool_ringparam *kring,
			   struct netlink_ext_ack *extack);

extern const struct ethtool_ops lockdemo_ethtool_ops;

#endif /* _LOCKDEMO_H */

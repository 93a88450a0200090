// SPDX-License-Identifier: GPL-2.0
/*
 * A library net module for the split tests, with no module init or exit
 * (the bus modules that create its devices call tracedemo_setup()), that
 * needs no hint.  It fires its own tracepoints from isolated entry points
 * (CREATE_TRACE_POINTS in this unit), sizes its queue array by the
 * net_device's queue count (the object is the device's private area), keeps
 * its counters in aligned storage (ALIGN of another member's memory), names
 * a record that only a global's declaration defines, and passes a function
 * of another unit inside a macro.
 */
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/slab.h>

#include "tracedemo.h"

#define CREATE_TRACE_POINTS
#include "tracedemo_trace.h"

#define TRACEDEMO_NCOUNTERS 4

static struct tracedemo_board {
	const char *name;
	u32 flags;
} tracedemo_boards[] = {
	{ "tracedemo A", 1 },
	{ "tracedemo B", 2 },
};

struct tracedemo_queue {
	u64 packets;
	u64 bytes;
};

struct tracedemo_priv {
	struct tracedemo_board *board;
	/* One per transmit queue of the net_device. */
	struct tracedemo_queue *queues;
	void *storage;
	/* TRACEDEMO_NCOUNTERS counters, 8-byte aligned in storage. */
	u64 *counters;
	size_t storage_size;
	u32 msg_level;
	int (*done)(struct tracedemo_priv *tp);
};

static int tracedemo_submit(struct tracedemo_priv *tp, u32 level,
			    int (*done)(struct tracedemo_priv *tp))
{
	tp->msg_level = level;
	tp->done = done;
	return 0;
}

static void tracedemo_get_drvinfo(struct net_device *dev,
				  struct ethtool_drvinfo *info)
{
	struct tracedemo_priv *tp = netdev_priv(dev);

	strscpy(info->driver, "tracedemo", sizeof(info->driver));
	snprintf(info->bus_info, sizeof(info->bus_info), "board %u",
		 tp->board->flags);
}

static u32 tracedemo_get_msglevel(struct net_device *dev)
{
	struct tracedemo_priv *tp = netdev_priv(dev);

	if (trace_tracedemo_set_level_enabled())
		trace_tracedemo_set_level(tp->msg_level);
	return tp->msg_level;
}

static void tracedemo_set_msglevel(struct net_device *dev, u32 level)
{
	struct tracedemo_priv *tp = netdev_priv(dev);

	trace_tracedemo_set_level(level);
	TRACEDEMO_SUBMIT(tp, level);
}

static int tracedemo_get_sset_count(struct net_device *dev, int sset)
{
	return sset == ETH_SS_STATS ? TRACEDEMO_NCOUNTERS : -EOPNOTSUPP;
}

static void tracedemo_get_ethtool_stats(struct net_device *dev,
					struct ethtool_stats *stats, u64 *data)
{
	struct tracedemo_priv *tp = netdev_priv(dev);
	u64 packets = 0;
	unsigned int i;

	for (i = 0; i < dev->num_tx_queues; i++)
		packets += tp->queues[i].packets;
	for (i = 0; i < TRACEDEMO_NCOUNTERS; i++)
		data[i] = tp->counters[i];
	trace_tracedemo_stats(dev->num_tx_queues, packets);
}

static const struct ethtool_ops tracedemo_ethtool_ops = {
	.get_drvinfo = tracedemo_get_drvinfo,
	.get_msglevel = tracedemo_get_msglevel,
	.set_msglevel = tracedemo_set_msglevel,
	.get_sset_count = tracedemo_get_sset_count,
	.get_ethtool_stats = tracedemo_get_ethtool_stats,
};

/* Gives a net_device of a bus module tracedemo's private state and ops. */
int tracedemo_setup(struct net_device *dev, unsigned int board)
{
	struct tracedemo_priv *tp = netdev_priv(dev);

	tp->board = &tracedemo_boards[board % ARRAY_SIZE(tracedemo_boards)];
	tp->queues = kcalloc(dev->num_tx_queues, sizeof(*tp->queues),
			     GFP_KERNEL);
	if (!tp->queues)
		return -ENOMEM;
	tp->storage_size = TRACEDEMO_NCOUNTERS * sizeof(u64) + 8;
	tp->storage = kzalloc(tp->storage_size, GFP_KERNEL);
	if (!tp->storage) {
		kfree(tp->queues);
		return -ENOMEM;
	}
	tp->counters = (u64 *)ALIGN((unsigned long)tp->storage, 8);
	dev->ethtool_ops = &tracedemo_ethtool_ops;
	return 0;
}
EXPORT_SYMBOL_GPL(tracedemo_setup);

/* Frees what tracedemo_setup() allocated. */
void tracedemo_teardown(struct net_device *dev)
{
	struct tracedemo_priv *tp = netdev_priv(dev);

	kfree(tp->storage);
	kfree(tp->queues);
}
EXPORT_SYMBOL_GPL(tracedemo_teardown);

MODULE_DESCRIPTION("fgft split fixture: tracepoints, a library module");
MODULE_LICENSE("GPL");

// SPDX-License-Identifier: GPL-2.0
/*
 * A virtual net driver for the split tests that needs no hint: what the
 * kernel hands its ethtool entry points is sized by fgft's contracts, and
 * its rings by the allocation sites below (kcalloc, a local's value,
 * dma_alloc_coherent for the descriptors).  The sites are written as
 * upstream drivers write them: a local given two values, sizeof of a local
 * pointer, a pointer into another ring's memory (desc + K), a volatile
 * status word the device writes; and a macro defined inside a function.
 */
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#define RINGDEMO_NREGS 8
#define RINGDEMO_LO 4
#define RINGDEMO_EEPROM_LEN 64

struct ringdemo_desc {
	__le32 addr;
	__le32 len;
};

struct ringdemo_buf {
	u64 bytes;
	u32 flags;
};

struct ringdemo_ring {
	unsigned int count;
	struct ringdemo_buf *buf;
	struct ringdemo_desc *desc;
	/* The descriptors past the first RINGDEMO_LO. */
	struct ringdemo_desc *hi;
	volatile __le32 *status;
	dma_addr_t dma;
	dma_addr_t status_dma;
};

struct ringdemo {
	struct net_device *dev;
	u32 regs[RINGDEMO_NREGS];
	u8 eeprom[RINGDEMO_EEPROM_LEN];
	unsigned int nrings;
	struct ringdemo_ring *rings;
	u64 stats[2];
};

static const char ringdemo_stat_names[][ETH_GSTRING_LEN] = {
	"packets", "bytes",
};

static const char ringdemo_test_names[][ETH_GSTRING_LEN] = {
	"ring walk",
};

static int ringdemo_alloc_ring(struct ringdemo_ring *r, unsigned int count)
{
	struct ringdemo_desc *d;
	size_t size;

	r->count = count;
	size = sizeof(struct ringdemo_buf) * r->count;
	r->buf = vzalloc(size);
	if (!r->buf)
		return -ENOMEM;
	/* The fixture is built and split, never loaded: no device here. */
	size = r->count * sizeof(*d);
	r->desc = dma_alloc_coherent(NULL, size, &r->dma, GFP_KERNEL);
	if (!r->desc) {
		vfree(r->buf);
		return -ENOMEM;
	}
	r->hi = r->desc + RINGDEMO_LO;
	r->status = dma_alloc_coherent(NULL, sizeof(*r->status), &r->status_dma, GFP_KERNEL);
	if (!r->status) {
		dma_free_coherent(NULL, size, r->desc, r->dma);
		vfree(r->buf);
		return -ENOMEM;
	}
	return 0;
}

static int ringdemo_alloc(struct ringdemo *rd)
{
	unsigned int i;
	int err;

	rd->rings = kcalloc(rd->nrings, sizeof(struct ringdemo_ring), GFP_KERNEL);
	if (!rd->rings)
		return -ENOMEM;
	for (i = 0; i < rd->nrings; i++) {
		err = ringdemo_alloc_ring(&rd->rings[i], 16);
		if (err)
			return err;
	}
	return 0;
}

static void ringdemo_free(struct ringdemo *rd)
{
	unsigned int i;

	if (!rd->rings)
		return;
	for (i = 0; i < rd->nrings; i++) {
		struct ringdemo_ring *r = &rd->rings[i];

		if (r->status)
			dma_free_coherent(NULL, sizeof(*r->status), (void *)r->status,
					  r->status_dma);
		if (r->desc)
			dma_free_coherent(NULL, r->count * sizeof(struct ringdemo_desc),
					  r->desc, r->dma);
		vfree(r->buf);
	}
	kfree(rd->rings);
	rd->rings = NULL;
}

static int ringdemo_open(struct net_device *dev)
{
	return 0;
}

static int ringdemo_stop(struct net_device *dev)
{
	return 0;
}

static netdev_tx_t ringdemo_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct ringdemo *rd = netdev_priv(dev);

	rd->stats[0]++;
	rd->stats[1] += skb->len;
	dev_kfree_skb(skb);
	return NETDEV_TX_OK;
}

static const struct net_device_ops ringdemo_netdev_ops = {
	.ndo_open = ringdemo_open,
	.ndo_stop = ringdemo_stop,
	.ndo_start_xmit = ringdemo_xmit,
};

static int ringdemo_get_regs_len(struct net_device *dev)
{
	return RINGDEMO_NREGS * sizeof(u32);
}

static void ringdemo_get_regs(struct net_device *dev, struct ethtool_regs *regs, void *p)
{
	struct ringdemo *rd = netdev_priv(dev);
	u32 *out = p;
	int i;

	regs->version = 1;
	for (i = 0; i < RINGDEMO_NREGS; i++)
		out[i] = rd->regs[i];
}

static int ringdemo_get_eeprom_len(struct net_device *dev)
{
	return RINGDEMO_EEPROM_LEN;
}

static int ringdemo_get_eeprom(struct net_device *dev, struct ethtool_eeprom *ee, u8 *bytes)
{
	struct ringdemo *rd = netdev_priv(dev);
	u32 i;

	if (ee->offset + ee->len > RINGDEMO_EEPROM_LEN)
		return -EINVAL;
	for (i = 0; i < ee->len; i++)
		bytes[i] = rd->eeprom[ee->offset + i];
	return 0;
}

static int ringdemo_set_eeprom(struct net_device *dev, struct ethtool_eeprom *ee, u8 *bytes)
{
	struct ringdemo *rd = netdev_priv(dev);
	u32 i;

	if (ee->offset + ee->len > RINGDEMO_EEPROM_LEN)
		return -EINVAL;
	for (i = 0; i < ee->len; i++)
		rd->eeprom[ee->offset + i] = bytes[i];
	return 0;
}

static int ringdemo_get_sset_count(struct net_device *dev, int sset)
{
	switch (sset) {
	case ETH_SS_STATS:
		return ARRAY_SIZE(ringdemo_stat_names);
	case ETH_SS_TEST:
		return ARRAY_SIZE(ringdemo_test_names);
	default:
		return -EOPNOTSUPP;
	}
}

static void ringdemo_get_strings(struct net_device *dev, u32 sset, u8 *data)
{
	if (sset == ETH_SS_STATS)
		memcpy(data, ringdemo_stat_names, sizeof(ringdemo_stat_names));
	else if (sset == ETH_SS_TEST)
		memcpy(data, ringdemo_test_names, sizeof(ringdemo_test_names));
}

static void ringdemo_get_ethtool_stats(struct net_device *dev, struct ethtool_stats *stats,
				       u64 *data)
{
	struct ringdemo *rd = netdev_priv(dev);
	static const int at[] = {
#define RINGDEMO_STAT(i) (i)
		RINGDEMO_STAT(0),
		RINGDEMO_STAT(1),
#undef RINGDEMO_STAT
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(at); i++)
		data[i] = rd->stats[at[i]];
}

/* Walks every ring's bookkeeping and descriptors. */
static void ringdemo_self_test(struct net_device *dev, struct ethtool_test *test, u64 *data)
{
	struct ringdemo *rd = netdev_priv(dev);
	unsigned int i, j;
	u64 seen = 0;

	for (i = 0; i < rd->nrings; i++) {
		struct ringdemo_ring *r = &rd->rings[i];

		for (j = 0; j < r->count; j++) {
			seen += r->buf[j].bytes;
			r->desc[j].len = cpu_to_le32(0);
		}
		r->hi[0].addr = cpu_to_le32(0);
		seen += le32_to_cpu(*r->status);
	}
	data[0] = seen;
	test->flags = 0;
}

static const struct ethtool_ops ringdemo_ethtool_ops = {
	.get_regs_len = ringdemo_get_regs_len,
	.get_regs = ringdemo_get_regs,
	.get_eeprom_len = ringdemo_get_eeprom_len,
	.get_eeprom = ringdemo_get_eeprom,
	.set_eeprom = ringdemo_set_eeprom,
	.get_sset_count = ringdemo_get_sset_count,
	.get_strings = ringdemo_get_strings,
	.get_ethtool_stats = ringdemo_get_ethtool_stats,
	.self_test = ringdemo_self_test,
};

static struct net_device *ringdemo_dev;

static int __init ringdemo_init(void)
{
	struct net_device *dev = alloc_etherdev(sizeof(struct ringdemo));
	struct ringdemo *rd;
	int err;

	if (!dev)
		return -ENOMEM;
	rd = netdev_priv(dev);
	rd->dev = dev;
	rd->nrings = 2;
	err = ringdemo_alloc(rd);
	if (err)
		goto out;
	dev->netdev_ops = &ringdemo_netdev_ops;
	dev->ethtool_ops = &ringdemo_ethtool_ops;
	eth_hw_addr_random(dev);
	err = register_netdev(dev);
	if (err)
		goto out;
	ringdemo_dev = dev;
	return 0;
out:
	ringdemo_free(rd);
	free_netdev(dev);
	return err;
}

static void __exit ringdemo_exit(void)
{
	unregister_netdev(ringdemo_dev);
	ringdemo_free(netdev_priv(ringdemo_dev));
	free_netdev(ringdemo_dev);
}

module_init(ringdemo_init);
module_exit(ringdemo_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("fgft split fixture: contracts and inferred ring hints");

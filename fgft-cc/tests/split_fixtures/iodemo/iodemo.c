// SPDX-License-Identifier: GPL-2.0
/*
 * A PCI NIC for the split tests whose I/O path is isolated: a transmit that
 * copies the frame into a bounce buffer the device reads, an interrupt
 * handler that masks the device and schedules NAPI, and a poll that hands
 * frames to the stack and unmasks.  Its PM callbacks give the device
 * checkpoint.  Open allocates a record the transmit updates: the driver's
 * heap, which its in-place entry points may touch.
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/netdevice.h>
#include <linux/etherdevice.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/slab.h>

#define IODEMO_TX_BUF	2048
#define IODEMO_ISR	0x00
#define IODEMO_IMR	0x04
#define IODEMO_TXLEN	0x08
#define IODEMO_RXLEN	0x0c

struct iodemo_log {
	unsigned int last_len;
	unsigned int frames;
};

struct iodemo {
	struct net_device *dev;
	struct pci_dev *pdev;
	void __iomem *mmio;
	struct napi_struct napi;
	u8 *tx_buf;
	dma_addr_t tx_dma;
	unsigned int tx_packets;
	unsigned int rx_packets;
	struct iodemo_log *log;
};

/* Frames longer are not taken off the ring: a global the poll reads. */
static unsigned int rx_limit = IODEMO_TX_BUF;
module_param(rx_limit, uint, 0644);

static netdev_tx_t iodemo_start_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct iodemo *p = netdev_priv(dev);
	unsigned int len = skb->len;

	if (len > IODEMO_TX_BUF) {
		dev->stats.tx_dropped++;
		dev_kfree_skb_any(skb);
		return NETDEV_TX_OK;
	}
	skb_copy_and_csum_dev(skb, p->tx_buf);
	iowrite32(len, p->mmio + IODEMO_TXLEN);
	p->tx_packets++;
	if (p->log) {
		p->log->last_len = len;
		p->log->frames++;
	}
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

static irqreturn_t iodemo_interrupt(int irq, void *dev_instance)
{
	struct net_device *dev = dev_instance;
	struct iodemo *p = netdev_priv(dev);
	u32 isr = ioread32(p->mmio + IODEMO_ISR);

	if (!isr)
		return IRQ_NONE;
	iowrite32(isr, p->mmio + IODEMO_ISR);
	if (napi_schedule_prep(&p->napi)) {
		iowrite32(0, p->mmio + IODEMO_IMR);
		__napi_schedule(&p->napi);
	}
	return IRQ_HANDLED;
}

static int iodemo_poll(struct napi_struct *napi, int budget)
{
	struct iodemo *p = container_of(napi, struct iodemo, napi);
	int done = 0;

	while (done < budget) {
		u32 len = ioread32(p->mmio + IODEMO_RXLEN);
		struct sk_buff *skb;

		if (!len || len > rx_limit)
			break;
		skb = napi_alloc_skb(napi, len);
		if (!skb)
			break;
		skb_put(skb, len);
		skb->protocol = eth_type_trans(skb, p->dev);
		napi_gro_receive(napi, skb);
		p->rx_packets++;
		done++;
	}
	if (done < budget && napi_complete_done(napi, done))
		iowrite32(1, p->mmio + IODEMO_IMR);
	return done;
}

static int iodemo_open(struct net_device *dev)
{
	struct iodemo *p = netdev_priv(dev);
	int err;

	p->log = kzalloc(sizeof(*p->log), GFP_KERNEL);
	if (!p->log)
		return -ENOMEM;
	err = request_irq(p->pdev->irq, iodemo_interrupt, IRQF_SHARED,
			  dev->name, dev);
	if (err) {
		kfree(p->log);
		p->log = NULL;
		return err;
	}
	napi_enable(&p->napi);
	iowrite32(1, p->mmio + IODEMO_IMR);
	netif_start_queue(dev);
	return 0;
}

static int iodemo_stop(struct net_device *dev)
{
	struct iodemo *p = netdev_priv(dev);

	netif_stop_queue(dev);
	iowrite32(0, p->mmio + IODEMO_IMR);
	napi_disable(&p->napi);
	free_irq(p->pdev->irq, dev);
	kfree(p->log);
	p->log = NULL;
	return 0;
}

static const struct net_device_ops iodemo_netdev_ops = {
	.ndo_open = iodemo_open,
	.ndo_stop = iodemo_stop,
	.ndo_start_xmit = iodemo_start_xmit,
};

static int iodemo_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct net_device *dev;
	struct iodemo *p;
	int err;

	err = pcim_enable_device(pdev);
	if (err)
		return err;
	dev = devm_alloc_etherdev(&pdev->dev, sizeof(*p));
	if (!dev)
		return -ENOMEM;
	SET_NETDEV_DEV(dev, &pdev->dev);
	p = netdev_priv(dev);
	p->dev = dev;
	p->pdev = pdev;
	p->mmio = pcim_iomap(pdev, 0, 0);
	if (!p->mmio)
		return -ENOMEM;
	p->tx_buf = dmam_alloc_coherent(&pdev->dev, IODEMO_TX_BUF, &p->tx_dma,
					GFP_KERNEL);
	if (!p->tx_buf)
		return -ENOMEM;
	dev->netdev_ops = &iodemo_netdev_ops;
	netif_napi_add(dev, &p->napi, iodemo_poll);
	pci_set_drvdata(pdev, dev);
	return register_netdev(dev);
}

static void iodemo_remove(struct pci_dev *pdev)
{
	struct net_device *dev = pci_get_drvdata(pdev);

	unregister_netdev(dev);
}

static int iodemo_suspend(struct device *d)
{
	struct net_device *dev = dev_get_drvdata(d);
	struct iodemo *p = netdev_priv(dev);

	if (!netif_running(dev))
		return 0;
	netif_device_detach(dev);
	iowrite32(0, p->mmio + IODEMO_IMR);
	return 0;
}

static int iodemo_resume(struct device *d)
{
	struct net_device *dev = dev_get_drvdata(d);
	struct iodemo *p = netdev_priv(dev);

	if (!netif_running(dev))
		return 0;
	iowrite32(1, p->mmio + IODEMO_IMR);
	netif_device_attach(dev);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(iodemo_pm_ops, iodemo_suspend, iodemo_resume);

static const struct pci_device_id iodemo_ids[] = {
	{ PCI_DEVICE(0x1af4, 0x10ff) },
	{ }
};
MODULE_DEVICE_TABLE(pci, iodemo_ids);

static struct pci_driver iodemo_driver = {
	.name = "iodemo",
	.id_table = iodemo_ids,
	.probe = iodemo_probe,
	.remove = iodemo_remove,
	.driver.pm = pm_sleep_ptr(&iodemo_pm_ops),
};
module_pci_driver(iodemo_driver);

MODULE_DESCRIPTION("fgft split test fixture: an isolated NIC I/O path");
MODULE_LICENSE("GPL");

// SPDX-License-Identifier: GPL-2.0
/*
 * fgft_ne2k: a PCI driver for NE2000-compatible network cards built around
 * the National Semiconductor DP8390 network interface controller, such as
 * the Realtek RTL8029 (PCI 10ec:8029) that QEMU models as "ne2k_pci".
 *
 * Written for the fgft corpus from the DP8390 datasheet and the NE2000
 * programming model: the card has 16 KiB of packet memory at 0x4000-0x7fff,
 * reached by the host only through the controller's "remote DMA" port; the
 * controller moves frames between the wire and that memory by itself
 * ("local DMA"). The receive side is a ring of 256-byte pages; every frame
 * starts on a page with a 4-byte header (status, next page, byte count).
 *
 * Management entry points carry FGFT_* annotations (fgft.h): they compile
 * away, and tell fgft-cc which entry points to run as transactions and how
 * to marshal their arguments.
 */

#include <linux/module.h>
#include <linux/pci.h>
#include <linux/netdevice.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/mii.h>
#include <linux/crc32.h>
#include <linux/interrupt.h>
#include <linux/delay.h>
#include <linux/spinlock.h>
#include <linux/pm.h>

#include "fgft.h"

#define DRV_NAME	"fgft_ne2k"

/* I/O space of the card: 16 DP8390 registers, the data port, the reset. */
#define NE_CMD		0x00	/* command register, all pages */
#define NE_DATAPORT	0x10	/* remote DMA data window */
#define NE_RESET	0x1f	/* read then write to reset the card */
#define NE_IO_EXTENT	0x20

/* Command register bits. */
#define CR_STP		0x01	/* stop: no receive or transmit */
#define CR_STA		0x02	/* start */
#define CR_TXP		0x04	/* transmit the frame at TPSR */
#define CR_RREAD	0x08	/* remote DMA read */
#define CR_RWRITE	0x10	/* remote DMA write */
#define CR_NODMA	0x20	/* abort or complete remote DMA */
#define CR_PAGE0	0x00
#define CR_PAGE1	0x40
#define CR_PAGE2	0x80
#define CR_PAGE_MASK	0xc0

/* Page 0 registers, written. */
#define P0_PSTART	0x01	/* first page of the receive ring */
#define P0_PSTOP	0x02	/* page after the receive ring */
#define P0_BNRY		0x03	/* last ring page read by the host */
#define P0_TPSR		0x04	/* first page of the frame to send */
#define P0_TBCR0	0x05	/* transmit byte count */
#define P0_TBCR1	0x06
#define P0_ISR		0x07	/* interrupt status, write 1 to clear */
#define P0_RSAR0	0x08	/* remote DMA start address */
#define P0_RSAR1	0x09
#define P0_RBCR0	0x0a	/* remote DMA byte count */
#define P0_RBCR1	0x0b
#define P0_RCR		0x0c	/* receive configuration */
#define P0_TCR		0x0d	/* transmit configuration */
#define P0_DCR		0x0e	/* data configuration */
#define P0_IMR		0x0f	/* interrupt mask */

/* Page 0 registers, read. */
#define P0_TSR		0x04	/* transmit status */
#define P0_ID0		0x0a	/* RTL8029: 0x50 'P' */
#define P0_ID1		0x0b	/* RTL8029: 0x43 'C' */
#define P0_RSR		0x0c	/* receive status */
#define P0_CNTR0	0x0d	/* frame alignment errors, clear on read */
#define P0_CNTR1	0x0e	/* CRC errors, clear on read */
#define P0_CNTR2	0x0f	/* missed frames, clear on read */

/* Page 1 registers. */
#define P1_PAR0		0x01	/* station address, 6 registers */
#define P1_CURR		0x07	/* next ring page the NIC will fill */
#define P1_MAR0		0x08	/* multicast hash filter, 8 registers */

/* Interrupt status and mask bits. */
#define ISR_PRX		0x01	/* frame received */
#define ISR_PTX		0x02	/* frame sent */
#define ISR_RXE		0x04	/* receive error */
#define ISR_TXE		0x08	/* transmit error */
#define ISR_OVW		0x10	/* receive ring overflow */
#define ISR_CNT		0x20	/* a tally counter reached half range */
#define ISR_RDC		0x40	/* remote DMA complete */
#define ISR_RST		0x80	/* the NIC is in reset state */
#define NE_IRQ_MASK	(ISR_PRX | ISR_PTX | ISR_RXE | ISR_TXE | \
			 ISR_OVW | ISR_CNT)

/* Receive configuration. */
#define RCR_AB		0x04	/* accept broadcast */
#define RCR_AM		0x08	/* accept multicast through the hash */
#define RCR_PRO		0x10	/* promiscuous */
#define RCR_MON		0x20	/* monitor: check frames, store none */

/* Transmit configuration. */
#define TCR_NORMAL	0x00
#define TCR_LOOPBACK	0x02	/* internal loopback */

/* Transmit status. */
#define TSR_PTX		0x01
#define TSR_ABT		0x08	/* aborted after too many collisions */
#define TSR_FU		0x20	/* FIFO underrun */
#define TSR_OWC		0x80	/* out of window collision */

/* Receive status (also the first byte of each ring header). */
#define RSR_PRX		0x01
#define RSR_CRC		0x02
#define RSR_FAE		0x04
#define RSR_MPA		0x10

/* Data configuration: word transfers, normal operation, FIFO threshold. */
#define DCR_WTS		0x01
#define DCR_LS		0x08
#define DCR_FT_SHIFT	5
#define DCR_FT_MASK	0x60

/* Packet memory: one transmit buffer, then the receive ring. */
#define NE_PAGE_SIZE	256
#define NE_MEM_START	0x40
#define NE_MEM_STOP	0x80
#define NE_TX_START	NE_MEM_START
#define NE_TX_PAGES	6	/* 1536 bytes: one full Ethernet frame */
#define NE_RX_START	(NE_TX_START + NE_TX_PAGES)
#define NE_RX_STOP	NE_MEM_STOP
#define NE_RX_PAGES	(NE_RX_STOP - NE_RX_START)

#define NE_PROM_LEN	32	/* station address PROM, each byte doubled */
#define NE_REGS_LEN	48	/* register pages 0, 1 and 2 */
#define NE_RESET_US	2000
#define NE_RDC_LOOPS	1000
#define NE_TX_TIMEOUT	(2 * HZ)
#define NE_NAPI_BUDGET	16

static int debug = -1;
module_param(debug, int, 0444);
MODULE_PARM_DESC(debug, "netif message level (-1: default)");

#define NE_MSG_DEFAULT	(NETIF_MSG_DRV | NETIF_MSG_PROBE | NETIF_MSG_LINK)

/* Ring header the NIC writes before every received frame. */
struct fgft_ne2k_rxhdr {
	u8 status;
	u8 next;
	__le16 count;	/* header included */
};

/* Driver counters, all under fgft_ne2k.lock. */
struct fgft_ne2k_stats {
	u64 rx_packets;
	u64 tx_packets;
	u64 rx_bytes;
	u64 tx_bytes;
	u64 rx_frame_errors;
	u64 rx_crc_errors;
	u64 rx_missed_errors;
	u64 rx_over_errors;
	u64 rx_bad_headers;
	u64 rx_dropped;
	u64 tx_aborted_errors;
	u64 tx_fifo_errors;
	u64 tx_window_errors;
	u64 tx_dropped;
	u64 tx_timeouts;
	u64 irqs;
	u64 polls;
};

static const char fgft_ne2k_gstrings[][ETH_GSTRING_LEN] = {
	"rx_packets",
	"tx_packets",
	"rx_bytes",
	"tx_bytes",
	"rx_frame_align_errors",
	"rx_crc_errors",
	"rx_missed_errors",
	"rx_ring_overflows",
	"rx_bad_headers",
	"rx_dropped",
	"tx_aborted_errors",
	"tx_fifo_underruns",
	"tx_window_errors",
	"tx_dropped",
	"tx_timeouts",
	"irqs",
	"napi_polls",
};

#define NE_NSTATS	ARRAY_SIZE(fgft_ne2k_gstrings)

static_assert(sizeof(struct fgft_ne2k_stats) == NE_NSTATS * sizeof(u64));

/* Register state kept across suspend. */
struct fgft_ne2k_saved {
	u8 par[ETH_ALEN];
	u8 mar[8];
	u8 rcr;
	u8 dcr;
	bool valid;
};

struct fgft_ne2k {
	struct net_device *ndev;
	struct pci_dev *pdev FGFT_NODEREF;
	void __iomem *ioaddr FGFT_NODEREF;
	struct napi_struct napi;
	/*
	 * Serializes every register access: the page select bits of the
	 * command register and the single remote DMA channel are shared.
	 * Outside the lock the command register always selects page 0.
	 */
	spinlock_t lock;
	bool irq_masked;	/* NAPI owns the interrupt */
	u8 rx_next;		/* next ring page to read */
	u8 rcr;			/* receive configuration in force */
	u8 dcr;			/* data configuration in force */
	u8 mc_filter[8];
	unsigned int tx_len;	/* length of the frame in flight, or 0 */
	u32 msg_enable;
	u8 prom[NE_PROM_LEN];
	struct fgft_ne2k_stats stats;
	struct fgft_ne2k_saved saved;
};

static inline u8 ne_read(struct fgft_ne2k *lp, unsigned int reg)
{
	return ioread8(lp->ioaddr + reg);
}

static inline void ne_write(struct fgft_ne2k *lp, unsigned int reg, u8 val)
{
	iowrite8(val, lp->ioaddr + reg);
}

/* Selects a register page, keeping the start/stop state. */
static void ne_page(struct fgft_ne2k *lp, u8 page)
{
	u8 cr = ne_read(lp, NE_CMD) & (CR_STA | CR_STP);

	ne_write(lp, NE_CMD, cr | CR_NODMA | page);
}

/* Waits for the end of a remote DMA transfer and acknowledges it. */
static void ne_wait_rdc(struct fgft_ne2k *lp)
{
	int i;

	for (i = 0; i < NE_RDC_LOOPS; i++) {
		if (ne_read(lp, P0_ISR) & ISR_RDC)
			break;
		udelay(1);
	}
	if (i == NE_RDC_LOOPS && netif_msg_hw(lp))
		netdev_warn(lp->ndev, "remote DMA did not complete\n");
	ne_write(lp, P0_ISR, ISR_RDC);
}

static void ne_setup_rdma(struct fgft_ne2k *lp, unsigned int addr,
			  unsigned int count, u8 dir)
{
	count = ALIGN(count, 2);
	ne_write(lp, NE_CMD, CR_NODMA | CR_PAGE0 | CR_STA);
	ne_write(lp, P0_ISR, ISR_RDC);
	ne_write(lp, P0_RBCR0, count & 0xff);
	ne_write(lp, P0_RBCR1, count >> 8);
	ne_write(lp, P0_RSAR0, addr & 0xff);
	ne_write(lp, P0_RSAR1, addr >> 8);
	ne_write(lp, NE_CMD, dir | CR_PAGE0 | CR_STA);
}

/* Copies @count bytes of card memory at @addr to @buf (word mode). */
static void ne_pio_read(struct fgft_ne2k *lp, void *buf, unsigned int count,
			unsigned int addr)
{
	ne_setup_rdma(lp, addr, count, CR_RREAD);
	ioread16_rep(lp->ioaddr + NE_DATAPORT, buf, count / 2);
	if (count & 1) {
		u16 w = ioread16(lp->ioaddr + NE_DATAPORT);

		((u8 *)buf)[count - 1] = w & 0xff;
	}
	ne_wait_rdc(lp);
}

/* Copies @count bytes of @buf to card memory at @addr (word mode). */
static void ne_pio_write(struct fgft_ne2k *lp, const void *buf,
			 unsigned int count, unsigned int addr)
{
	ne_setup_rdma(lp, addr, count, CR_RWRITE);
	iowrite16_rep(lp->ioaddr + NE_DATAPORT, buf, count / 2);
	if (count & 1)
		iowrite16(((const u8 *)buf)[count - 1],
			  lp->ioaddr + NE_DATAPORT);
	ne_wait_rdc(lp);
}

/*
 * Hard reset through the reset port; the NIC comes back stopped, with
 * ISR_RST set. Caller holds the lock or owns the device exclusively.
 */
static int fgft_ne2k_chip_reset(struct fgft_ne2k *lp)
{
	int i;

	ne_write(lp, NE_RESET, ne_read(lp, NE_RESET));
	for (i = 0; i < NE_RESET_US; i++) {
		if (ne_read(lp, P0_ISR) & ISR_RST)
			break;
		udelay(1);
	}
	ne_write(lp, P0_ISR, 0xff);
	if (i == NE_RESET_US) {
		netdev_err(lp->ndev, "card did not come out of reset\n");
		return -EIO;
	}
	return 0;
}

/* Stops receive and transmit and masks every interrupt. */
static void fgft_ne2k_chip_stop(struct fgft_ne2k *lp)
{
	int i;

	ne_write(lp, NE_CMD, CR_NODMA | CR_PAGE0 | CR_STP);
	ne_write(lp, P0_IMR, 0);
	for (i = 0; i < NE_RESET_US; i++) {
		if (ne_read(lp, P0_ISR) & ISR_RST)
			break;
		udelay(1);
	}
	ne_write(lp, P0_ISR, 0xff);
	lp->tx_len = 0;
}

static void fgft_ne2k_write_filters(struct fgft_ne2k *lp)
{
	int i;

	ne_page(lp, CR_PAGE1);
	for (i = 0; i < 8; i++)
		ne_write(lp, P1_MAR0 + i, lp->mc_filter[i]);
	ne_page(lp, CR_PAGE0);
	ne_write(lp, P0_RCR, lp->rcr);
}

/*
 * Programs the station address into PAR0-5; the card must be started, or in
 * loopback and monitor mode (chip_init), as remote DMA starts it. Some NE2000 clones, QEMU's
 * model among them, match unicast frames against the image of the address
 * PROM in card memory instead, so the address also goes there (each byte
 * doubled, as the PROM is laid out); the PROM is read-only on the cards
 * that honour PAR0-5, which ignore that write.
 */
static void fgft_ne2k_write_mac(struct fgft_ne2k *lp, const u8 *addr)
{
	__le16 image[ETH_ALEN];
	int i;

	ne_page(lp, CR_PAGE1);
	for (i = 0; i < ETH_ALEN; i++)
		ne_write(lp, P1_PAR0 + i, addr[i]);
	ne_page(lp, CR_PAGE0);

	for (i = 0; i < ETH_ALEN; i++)
		image[i] = cpu_to_le16(addr[i] | addr[i] << 8);
	ne_pio_write(lp, image, sizeof(image), 0);
}

/*
 * The datasheet's initialization sequence. Leaves the NIC started, with
 * interrupts enabled if @irqs. Caller holds the lock.
 */
static void fgft_ne2k_chip_init(struct fgft_ne2k *lp, bool irqs)
{
	struct net_device *ndev = lp->ndev;

	ne_write(lp, NE_CMD, CR_NODMA | CR_PAGE0 | CR_STP);
	ne_write(lp, P0_DCR, lp->dcr);
	ne_write(lp, P0_RBCR0, 0);
	ne_write(lp, P0_RBCR1, 0);
	ne_write(lp, P0_RCR, RCR_MON);
	ne_write(lp, P0_TCR, TCR_LOOPBACK);
	ne_write(lp, P0_PSTART, NE_RX_START);
	ne_write(lp, P0_PSTOP, NE_RX_STOP);
	ne_write(lp, P0_BNRY, NE_RX_START);
	ne_write(lp, P0_ISR, 0xff);
	ne_write(lp, P0_IMR, 0);

	fgft_ne2k_write_mac(lp, ndev->dev_addr);
	ne_page(lp, CR_PAGE1);
	ne_write(lp, P1_CURR, NE_RX_START + 1);
	lp->rx_next = NE_RX_START + 1;

	ne_write(lp, NE_CMD, CR_NODMA | CR_PAGE0 | CR_STA);
	ne_write(lp, P0_TCR, TCR_NORMAL);
	fgft_ne2k_write_filters(lp);
	lp->tx_len = 0;
	lp->irq_masked = !irqs;
	if (irqs)
		ne_write(lp, P0_IMR, NE_IRQ_MASK);
}

/* Empties the receive ring after an overflow or a corrupt header. */
static void fgft_ne2k_ring_reset(struct fgft_ne2k *lp)
{
	bool resend;
	u8 cr = ne_read(lp, NE_CMD);

	ne_write(lp, NE_CMD, CR_NODMA | CR_PAGE0 | CR_STP);
	udelay(1600);	/* let a frame in progress finish */
	ne_write(lp, P0_RBCR0, 0);
	ne_write(lp, P0_RBCR1, 0);
	resend = (cr & CR_TXP) &&
		 !(ne_read(lp, P0_ISR) & (ISR_PTX | ISR_TXE));
	ne_write(lp, P0_TCR, TCR_LOOPBACK);
	ne_write(lp, NE_CMD, CR_NODMA | CR_PAGE0 | CR_STA);

	ne_write(lp, P0_BNRY, NE_RX_START);
	ne_page(lp, CR_PAGE1);
	ne_write(lp, P1_CURR, NE_RX_START + 1);
	ne_page(lp, CR_PAGE0);
	lp->rx_next = NE_RX_START + 1;

	ne_write(lp, P0_ISR, ISR_OVW | ISR_PRX | ISR_RXE);
	ne_write(lp, P0_TCR, TCR_NORMAL);
	if (resend)
		ne_write(lp, NE_CMD, CR_NODMA | CR_PAGE0 | CR_STA | CR_TXP);
}

/* Folds the clear-on-read tally counters into the statistics. */
static void fgft_ne2k_collect_counters(struct fgft_ne2k *lp)
{
	lp->stats.rx_frame_errors += ne_read(lp, P0_CNTR0);
	lp->stats.rx_crc_errors += ne_read(lp, P0_CNTR1);
	lp->stats.rx_missed_errors += ne_read(lp, P0_CNTR2);
}

static void fgft_ne2k_tx_done(struct fgft_ne2k *lp, u8 isr)
{
	u8 tsr = ne_read(lp, P0_TSR);

	ne_write(lp, P0_ISR, ISR_PTX | ISR_TXE);
	if (!lp->tx_len)
		return;
	if (isr & ISR_PTX && tsr & TSR_PTX) {
		lp->stats.tx_packets++;
		lp->stats.tx_bytes += lp->tx_len;
	} else {
		if (tsr & TSR_ABT)
			lp->stats.tx_aborted_errors++;
		if (tsr & TSR_FU)
			lp->stats.tx_fifo_errors++;
		if (tsr & TSR_OWC)
			lp->stats.tx_window_errors++;
		if (netif_msg_tx_err(lp))
			netdev_dbg(lp->ndev, "transmit error, tsr %#04x\n",
				   tsr);
	}
	lp->tx_len = 0;
	netif_wake_queue(lp->ndev);
}

static bool fgft_ne2k_hdr_ok(const struct fgft_ne2k_rxhdr *h,
			     unsigned int len)
{
	return (h->status & RSR_PRX) &&
	       h->next >= NE_RX_START && h->next < NE_RX_STOP &&
	       len >= ETH_HLEN && len <= ETH_FRAME_LEN + ETH_FCS_LEN;
}

/* Reads up to @budget frames off the ring; returns how many. */
static int fgft_ne2k_rx(struct fgft_ne2k *lp, int budget)
{
	struct net_device *ndev = lp->ndev;
	int done = 0;

	while (done < budget) {
		struct fgft_ne2k_rxhdr hdr;
		struct sk_buff *skb = NULL;
		unsigned long flags;
		unsigned int len, start, first;
		u8 curr;

		spin_lock_irqsave(&lp->lock, flags);
		ne_page(lp, CR_PAGE1);
		curr = ne_read(lp, P1_CURR);
		ne_page(lp, CR_PAGE0);
		if (curr == lp->rx_next) {
			spin_unlock_irqrestore(&lp->lock, flags);
			break;
		}
		ne_pio_read(lp, &hdr, sizeof(hdr), lp->rx_next * NE_PAGE_SIZE);
		len = le16_to_cpu(hdr.count) - sizeof(hdr);
		if (!fgft_ne2k_hdr_ok(&hdr, len)) {
			if (netif_msg_rx_err(lp))
				netdev_warn(ndev,
					    "bad ring header %02x %02x %04x at page %#04x\n",
					    hdr.status, hdr.next,
					    le16_to_cpu(hdr.count), lp->rx_next);
			lp->stats.rx_bad_headers++;
			fgft_ne2k_ring_reset(lp);
			spin_unlock_irqrestore(&lp->lock, flags);
			break;
		}
		skb = napi_alloc_skb(&lp->napi, len);
		if (skb) {
			start = lp->rx_next * NE_PAGE_SIZE + sizeof(hdr);
			first = min(len, NE_RX_STOP * NE_PAGE_SIZE - start);
			ne_pio_read(lp, skb_put(skb, len), first, start);
			if (first < len)
				ne_pio_read(lp, skb->data + first, len - first,
					    NE_RX_START * NE_PAGE_SIZE);
			lp->stats.rx_packets++;
			lp->stats.rx_bytes += len;
		} else {
			lp->stats.rx_dropped++;
		}
		lp->rx_next = hdr.next;
		ne_write(lp, P0_BNRY, hdr.next == NE_RX_START ?
			 NE_RX_STOP - 1 : hdr.next - 1);
		spin_unlock_irqrestore(&lp->lock, flags);

		if (skb) {
			skb->protocol = eth_type_trans(skb, ndev);
			napi_gro_receive(&lp->napi, skb);
		}
		done++;
	}
	return done;
}

static int fgft_ne2k_poll(struct napi_struct *napi, int budget)
{
	struct fgft_ne2k *lp = container_of(napi, struct fgft_ne2k, napi);
	unsigned long flags;
	int work;
	u8 isr;

	spin_lock_irqsave(&lp->lock, flags);
	lp->stats.polls++;
	isr = ne_read(lp, P0_ISR);
	if (isr & (ISR_PTX | ISR_TXE))
		fgft_ne2k_tx_done(lp, isr);
	if (isr & ISR_CNT) {
		fgft_ne2k_collect_counters(lp);
		ne_write(lp, P0_ISR, ISR_CNT);
	}
	if (isr & ISR_OVW) {
		lp->stats.rx_over_errors++;
		fgft_ne2k_ring_reset(lp);
	} else if (isr & (ISR_PRX | ISR_RXE)) {
		if (isr & ISR_RXE && ne_read(lp, P0_RSR) & RSR_MPA)
			lp->stats.rx_missed_errors++;
		ne_write(lp, P0_ISR, ISR_PRX | ISR_RXE);
	}
	spin_unlock_irqrestore(&lp->lock, flags);

	work = fgft_ne2k_rx(lp, budget);
	if (work < budget && napi_complete_done(napi, work)) {
		spin_lock_irqsave(&lp->lock, flags);
		lp->irq_masked = false;
		ne_write(lp, P0_IMR, NE_IRQ_MASK);
		spin_unlock_irqrestore(&lp->lock, flags);
	}
	return work;
}

static irqreturn_t fgft_ne2k_interrupt(int irq, void *dev_id)
{
	struct net_device *ndev = dev_id;
	struct fgft_ne2k *lp = netdev_priv(ndev);
	u8 isr;

	spin_lock(&lp->lock);
	if (lp->irq_masked) {
		spin_unlock(&lp->lock);
		return IRQ_NONE;
	}
	isr = ne_read(lp, P0_ISR);
	if (isr == 0xff || !(isr & NE_IRQ_MASK)) {
		spin_unlock(&lp->lock);
		return IRQ_NONE;
	}
	ne_write(lp, P0_IMR, 0);
	lp->irq_masked = true;
	lp->stats.irqs++;
	spin_unlock(&lp->lock);

	napi_schedule(&lp->napi);
	return IRQ_HANDLED;
}

/* net_device_ops */

static int fgft_ne2k_open(struct net_device *ndev)
{
	struct fgft_ne2k *lp = netdev_priv(ndev);
	unsigned long flags;
	int err;

	spin_lock_irqsave(&lp->lock, flags);
	err = fgft_ne2k_chip_reset(lp);
	if (!err)
		fgft_ne2k_chip_init(lp, false);
	spin_unlock_irqrestore(&lp->lock, flags);
	if (err)
		return err;

	err = request_irq(lp->pdev->irq, fgft_ne2k_interrupt, IRQF_SHARED,
			  ndev->name, ndev);
	if (err) {
		netdev_err(ndev, "cannot get IRQ %d: %d\n", lp->pdev->irq, err);
		return err;
	}
	napi_enable(&lp->napi);

	spin_lock_irqsave(&lp->lock, flags);
	lp->irq_masked = false;
	ne_write(lp, P0_IMR, NE_IRQ_MASK);
	spin_unlock_irqrestore(&lp->lock, flags);

	netif_carrier_on(ndev);
	netif_start_queue(ndev);
	if (netif_msg_ifup(lp))
		netdev_info(ndev, "up, irq %d\n", lp->pdev->irq);
	return 0;
}

static int fgft_ne2k_stop(struct net_device *ndev)
{
	struct fgft_ne2k *lp = netdev_priv(ndev);
	unsigned long flags;

	netif_stop_queue(ndev);
	netif_carrier_off(ndev);
	napi_disable(&lp->napi);

	spin_lock_irqsave(&lp->lock, flags);
	lp->irq_masked = true;
	fgft_ne2k_chip_stop(lp);
	fgft_ne2k_collect_counters(lp);
	spin_unlock_irqrestore(&lp->lock, flags);

	free_irq(lp->pdev->irq, ndev);
	return 0;
}

static netdev_tx_t fgft_ne2k_start_xmit(struct sk_buff *skb,
					struct net_device *ndev)
{
	struct fgft_ne2k *lp = netdev_priv(ndev);
	unsigned long flags;
	unsigned int len;

	if (skb_padto(skb, ETH_ZLEN)) {
		spin_lock_irqsave(&lp->lock, flags);
		lp->stats.tx_dropped++;
		spin_unlock_irqrestore(&lp->lock, flags);
		return NETDEV_TX_OK;
	}
	len = max_t(unsigned int, skb->len, ETH_ZLEN);

	spin_lock_irqsave(&lp->lock, flags);
	if (lp->tx_len || len > NE_TX_PAGES * NE_PAGE_SIZE) {
		lp->stats.tx_dropped++;
		spin_unlock_irqrestore(&lp->lock, flags);
		dev_kfree_skb_any(skb);
		return NETDEV_TX_OK;
	}
	ne_pio_write(lp, skb->data, len, NE_TX_START * NE_PAGE_SIZE);
	ne_write(lp, P0_TPSR, NE_TX_START);
	ne_write(lp, P0_TBCR0, len & 0xff);
	ne_write(lp, P0_TBCR1, len >> 8);
	lp->tx_len = len;
	netif_stop_queue(ndev);
	ne_write(lp, NE_CMD, CR_NODMA | CR_PAGE0 | CR_STA | CR_TXP);
	spin_unlock_irqrestore(&lp->lock, flags);

	skb_tx_timestamp(skb);
	dev_consume_skb_any(skb);
	return NETDEV_TX_OK;
}

static void fgft_ne2k_get_stats64(struct net_device *ndev,
				  struct rtnl_link_stats64 *s)
{
	struct fgft_ne2k *lp = netdev_priv(ndev);
	const struct fgft_ne2k_stats *st = &lp->stats;
	unsigned long flags;

	spin_lock_irqsave(&lp->lock, flags);
	s->rx_packets = st->rx_packets;
	s->tx_packets = st->tx_packets;
	s->rx_bytes = st->rx_bytes;
	s->tx_bytes = st->tx_bytes;
	s->rx_frame_errors = st->rx_frame_errors;
	s->rx_crc_errors = st->rx_crc_errors;
	s->rx_missed_errors = st->rx_missed_errors;
	s->rx_over_errors = st->rx_over_errors;
	s->rx_dropped = st->rx_dropped;
	s->rx_errors = st->rx_frame_errors + st->rx_crc_errors +
		       st->rx_over_errors + st->rx_bad_headers;
	s->tx_aborted_errors = st->tx_aborted_errors;
	s->tx_fifo_errors = st->tx_fifo_errors;
	s->tx_window_errors = st->tx_window_errors;
	s->tx_dropped = st->tx_dropped;
	s->tx_errors = st->tx_aborted_errors + st->tx_fifo_errors +
		       st->tx_window_errors;
	spin_unlock_irqrestore(&lp->lock, flags);
}

/* Builds the receive configuration and hash filter from the flags. */
static void fgft_ne2k_set_rx_mode(struct net_device *ndev)
{
	struct fgft_ne2k *lp = netdev_priv(ndev);
	struct netdev_hw_addr *ha;
	u8 filter[8] = { };
	unsigned long flags;
	u8 rcr = RCR_AB;

	if (ndev->flags & IFF_PROMISC) {
		rcr |= RCR_PRO | RCR_AM;
		memset(filter, 0xff, sizeof(filter));
	} else if (ndev->flags & IFF_ALLMULTI) {
		rcr |= RCR_AM;
		memset(filter, 0xff, sizeof(filter));
	} else if (!netdev_mc_empty(ndev)) {
		rcr |= RCR_AM;
		netdev_for_each_mc_addr(ha, ndev) {
			/* the six high bits of the big-endian CRC */
			u32 bit = ether_crc(ETH_ALEN, ha->addr) >> 26;

			filter[bit >> 3] |= 1 << (bit & 7);
		}
	}

	spin_lock_irqsave(&lp->lock, flags);
	lp->rcr = rcr;
	memcpy(lp->mc_filter, filter, sizeof(filter));
	if (netif_running(ndev))
		fgft_ne2k_write_filters(lp);
	spin_unlock_irqrestore(&lp->lock, flags);
}

static int fgft_ne2k_set_mac_address(struct net_device *ndev, void *p)
{
	struct fgft_ne2k *lp = netdev_priv(ndev);
	unsigned long flags;
	int err;

	err = eth_prepare_mac_addr_change(ndev, p);
	if (err)
		return err;
	eth_commit_mac_addr_change(ndev, p);

	/* a stopped card gets the address at the next open */
	if (netif_running(ndev)) {
		spin_lock_irqsave(&lp->lock, flags);
		fgft_ne2k_write_mac(lp, ndev->dev_addr);
		spin_unlock_irqrestore(&lp->lock, flags);
	}
	return 0;
}

static void fgft_ne2k_tx_timeout(struct net_device *ndev,
				 unsigned int txqueue)
{
	struct fgft_ne2k *lp = netdev_priv(ndev);
	unsigned long flags;
	u8 isr, tsr;

	spin_lock_irqsave(&lp->lock, flags);
	isr = ne_read(lp, P0_ISR);
	tsr = ne_read(lp, P0_TSR);
	lp->stats.tx_timeouts++;
	if (!fgft_ne2k_chip_reset(lp))
		fgft_ne2k_chip_init(lp, true);
	spin_unlock_irqrestore(&lp->lock, flags);

	netdev_warn(ndev, "transmit timed out (isr %#04x, tsr %#04x), card reset\n",
		    isr, tsr);
	netif_wake_queue(ndev);
}

/* Restarts the card: the NE2000 has no PHY, so this is its link reset. */
static int fgft_ne2k_restart(struct net_device *ndev)
{
	struct fgft_ne2k *lp = netdev_priv(ndev);
	unsigned long flags;
	int err;

	if (!netif_running(ndev))
		return -EAGAIN;
	netif_tx_disable(ndev);
	spin_lock_irqsave(&lp->lock, flags);
	err = fgft_ne2k_chip_reset(lp);
	if (!err)
		fgft_ne2k_chip_init(lp, !lp->irq_masked);
	spin_unlock_irqrestore(&lp->lock, flags);
	netif_wake_queue(ndev);
	return err;
}

/*
 * The card has no MII PHY; these ioctls answer mii-tool with a PHY that
 * reports the card's fixed 10BASE-T half duplex link.
 */
FGFT_ISOLATE
static int fgft_ne2k_eth_ioctl(struct net_device *ndev, struct ifreq *ifr,
			       int cmd)
{
	struct mii_ioctl_data *mii = if_mii(ifr);
	bool link = netif_running(ndev) && netif_carrier_ok(ndev);

	switch (cmd) {
	case SIOCGMIIPHY:
		mii->phy_id = 0;
		fallthrough;
	case SIOCGMIIREG:
		if (mii->phy_id != 0)
			return -ENODEV;
		switch (mii->reg_num) {
		case MII_BMSR:
			mii->val_out = BMSR_10HALF | (link ? BMSR_LSTATUS : 0);
			break;
		case MII_ADVERTISE:
			mii->val_out = ADVERTISE_10HALF | ADVERTISE_CSMA;
			break;
		case MII_LPA:
			mii->val_out = link ? LPA_10HALF : 0;
			break;
		default:
			mii->val_out = 0;
			break;
		}
		return 0;
	case SIOCSMIIREG:
		if (mii->phy_id != 0)
			return -ENODEV;
		if (mii->reg_num == MII_BMCR && mii->val_in & BMCR_RESET)
			return fgft_ne2k_restart(ndev);
		return -EOPNOTSUPP;
	default:
		return -EOPNOTSUPP;
	}
}

static const struct net_device_ops fgft_ne2k_netdev_ops = {
	.ndo_open		= fgft_ne2k_open,
	.ndo_stop		= fgft_ne2k_stop,
	.ndo_start_xmit		= fgft_ne2k_start_xmit,
	.ndo_get_stats64	= fgft_ne2k_get_stats64,
	.ndo_set_rx_mode	= fgft_ne2k_set_rx_mode,
	.ndo_set_mac_address	= fgft_ne2k_set_mac_address,
	.ndo_validate_addr	= eth_validate_addr,
	.ndo_tx_timeout		= fgft_ne2k_tx_timeout,
	.ndo_eth_ioctl		= fgft_ne2k_eth_ioctl,
};

/* ethtool_ops */

FGFT_ISOLATE
static void fgft_ne2k_get_drvinfo(struct net_device *ndev,
				  struct ethtool_drvinfo *info)
{
	struct fgft_ne2k *lp = netdev_priv(ndev);

	strscpy(info->driver, DRV_NAME, sizeof(info->driver));
	strscpy(info->bus_info, pci_name(lp->pdev), sizeof(info->bus_info));
}

FGFT_ISOLATE
static u32 fgft_ne2k_get_link(struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev);
}

FGFT_ISOLATE
static int fgft_ne2k_get_link_ksettings(struct net_device *ndev,
					struct ethtool_link_ksettings *cmd)
{
	ethtool_link_ksettings_zero_link_mode(cmd, supported);
	ethtool_link_ksettings_add_link_mode(cmd, supported, 10baseT_Half);
	ethtool_link_ksettings_add_link_mode(cmd, supported, TP);
	ethtool_link_ksettings_zero_link_mode(cmd, advertising);
	ethtool_link_ksettings_add_link_mode(cmd, advertising, 10baseT_Half);
	cmd->base.speed = SPEED_10;
	cmd->base.duplex = DUPLEX_HALF;
	cmd->base.port = PORT_TP;
	cmd->base.autoneg = AUTONEG_DISABLE;
	return 0;
}

FGFT_ISOLATE
static u32 fgft_ne2k_get_msglevel(struct net_device *ndev)
{
	struct fgft_ne2k *lp = netdev_priv(ndev);

	return lp->msg_enable;
}

FGFT_ISOLATE
static void fgft_ne2k_set_msglevel(struct net_device *ndev, u32 level)
{
	struct fgft_ne2k *lp = netdev_priv(ndev);

	lp->msg_enable = level;
}

FGFT_ISOLATE
static int fgft_ne2k_get_regs_len(struct net_device *ndev)
{
	return NE_REGS_LEN;
}

/* Register pages 0 to 2, 16 registers each, page 0 as read. */
FGFT_ISOLATE
static void fgft_ne2k_get_regs(struct net_device *ndev,
			       struct ethtool_regs *regs,
			       void *p FGFT_BLOB(regs->len))
{
	struct fgft_ne2k *lp = netdev_priv(ndev);
	static const u8 pages[] = { CR_PAGE0, CR_PAGE1, CR_PAGE2 };
	unsigned long flags;
	u8 *buf = p;
	int pg, reg;

	regs->version = 1;
	memset(buf, 0, regs->len);
	spin_lock_irqsave(&lp->lock, flags);
	for (pg = 0; pg < ARRAY_SIZE(pages); pg++) {
		ne_page(lp, pages[pg]);
		for (reg = 0; reg < 16; reg++) {
			unsigned int at = pg * 16 + reg;

			if (at >= regs->len)
				break;
			buf[at] = ne_read(lp, reg);
		}
	}
	ne_page(lp, CR_PAGE0);
	/* reading the tally counters cleared them: keep their counts */
	if (regs->len > P0_CNTR2) {
		lp->stats.rx_frame_errors += buf[P0_CNTR0];
		lp->stats.rx_crc_errors += buf[P0_CNTR1];
		lp->stats.rx_missed_errors += buf[P0_CNTR2];
	}
	spin_unlock_irqrestore(&lp->lock, flags);
}

FGFT_ISOLATE
static int fgft_ne2k_get_eeprom_len(struct net_device *ndev)
{
	return NE_PROM_LEN;
}

/* The station address PROM, as read at probe time. */
FGFT_ISOLATE
static int fgft_ne2k_get_eeprom(struct net_device *ndev,
				struct ethtool_eeprom *ee,
				u8 *data FGFT_BLOB(ee->len))
{
	struct fgft_ne2k *lp = netdev_priv(ndev);

	if (ee->offset >= NE_PROM_LEN || ee->len > NE_PROM_LEN - ee->offset)
		return -EINVAL;
	ee->magic = lp->pdev->vendor | (lp->pdev->device << 16);
	memcpy(data, lp->prom + ee->offset, ee->len);
	return 0;
}

FGFT_ISOLATE
static void fgft_ne2k_get_ringparam(struct net_device *ndev,
				    struct ethtool_ringparam *ring,
				    struct kernel_ethtool_ringparam *kring,
				    struct netlink_ext_ack *extack)
{
	/* counted in frames of the largest size the memory holds */
	ring->rx_max_pending = NE_RX_PAGES * NE_PAGE_SIZE / ETH_FRAME_LEN;
	ring->rx_pending = ring->rx_max_pending;
	ring->tx_max_pending = 1;
	ring->tx_pending = 1;
}

FGFT_ISOLATE
static int fgft_ne2k_get_sset_count(struct net_device *ndev, int sset)
{
	return sset == ETH_SS_STATS ? NE_NSTATS : -EOPNOTSUPP;
}

FGFT_ISOLATE
static void fgft_ne2k_get_strings(struct net_device *ndev, u32 sset,
				  u8 *data FGFT_BLOB(NE_NSTATS * ETH_GSTRING_LEN))
{
	if (sset == ETH_SS_STATS)
		memcpy(data, fgft_ne2k_gstrings, sizeof(fgft_ne2k_gstrings));
}

FGFT_ISOLATE
static void fgft_ne2k_get_ethtool_stats(struct net_device *ndev,
					struct ethtool_stats *stats,
					u64 *data FGFT_BLOB(stats->n_stats * sizeof(u64)))
{
	struct fgft_ne2k *lp = netdev_priv(ndev);
	unsigned long flags;

	spin_lock_irqsave(&lp->lock, flags);
	memcpy(data, &lp->stats, sizeof(lp->stats));
	spin_unlock_irqrestore(&lp->lock, flags);
}

FGFT_ISOLATE
static int fgft_ne2k_nway_reset(struct net_device *ndev)
{
	return fgft_ne2k_restart(ndev);
}

static const struct ethtool_ops fgft_ne2k_ethtool_ops = {
	.get_drvinfo		= fgft_ne2k_get_drvinfo,
	.get_link		= fgft_ne2k_get_link,
	.get_link_ksettings	= fgft_ne2k_get_link_ksettings,
	.get_msglevel		= fgft_ne2k_get_msglevel,
	.set_msglevel		= fgft_ne2k_set_msglevel,
	.get_regs_len		= fgft_ne2k_get_regs_len,
	.get_regs		= fgft_ne2k_get_regs,
	.get_eeprom_len		= fgft_ne2k_get_eeprom_len,
	.get_eeprom		= fgft_ne2k_get_eeprom,
	.get_ringparam		= fgft_ne2k_get_ringparam,
	.get_strings		= fgft_ne2k_get_strings,
	.get_sset_count		= fgft_ne2k_get_sset_count,
	.get_ethtool_stats	= fgft_ne2k_get_ethtool_stats,
	.nway_reset		= fgft_ne2k_nway_reset,
};

/* sysfs attributes of the PCI device */

FGFT_ISOLATE
static ssize_t chip_id_show(struct device *dev FGFT_CONTAINER(pci_dev, dev),
			    struct device_attribute *attr,
			    char *buf FGFT_BLOB(PAGE_SIZE))
{
	struct fgft_ne2k *lp = netdev_priv(dev_get_drvdata(dev));
	unsigned long flags;
	u8 id0, id1;

	spin_lock_irqsave(&lp->lock, flags);
	id0 = ne_read(lp, P0_ID0);
	id1 = ne_read(lp, P0_ID1);
	spin_unlock_irqrestore(&lp->lock, flags);
	if (id0 == 'P' && id1 == 'C')
		return sysfs_emit(buf, "rtl8029\n");
	return sysfs_emit(buf, "dp8390 %02x%02x\n", id0, id1);
}
static DEVICE_ATTR_RO(chip_id);

FGFT_ISOLATE
static ssize_t prom_show(struct device *dev FGFT_CONTAINER(pci_dev, dev),
			 struct device_attribute *attr,
			 char *buf FGFT_BLOB(PAGE_SIZE))
{
	struct fgft_ne2k *lp = netdev_priv(dev_get_drvdata(dev));

	return sysfs_emit(buf, "%*phN\n", NE_PROM_LEN, lp->prom);
}
static DEVICE_ATTR_RO(prom);

FGFT_ISOLATE
static ssize_t tx_timeouts_show(struct device *dev FGFT_CONTAINER(pci_dev, dev),
				struct device_attribute *attr,
				char *buf FGFT_BLOB(PAGE_SIZE))
{
	struct fgft_ne2k *lp = netdev_priv(dev_get_drvdata(dev));
	unsigned long flags;
	u64 n;

	spin_lock_irqsave(&lp->lock, flags);
	n = lp->stats.tx_timeouts;
	spin_unlock_irqrestore(&lp->lock, flags);
	return sysfs_emit(buf, "%llu\n", n);
}
static DEVICE_ATTR_RO(tx_timeouts);

FGFT_ISOLATE
static ssize_t ring_overflows_show(struct device *dev FGFT_CONTAINER(pci_dev, dev),
				   struct device_attribute *attr,
				   char *buf FGFT_BLOB(PAGE_SIZE))
{
	struct fgft_ne2k *lp = netdev_priv(dev_get_drvdata(dev));
	unsigned long flags;
	u64 n;

	spin_lock_irqsave(&lp->lock, flags);
	n = lp->stats.rx_over_errors;
	spin_unlock_irqrestore(&lp->lock, flags);
	return sysfs_emit(buf, "%llu\n", n);
}
static DEVICE_ATTR_RO(ring_overflows);

/* FIFO threshold in bytes: 2, 4, 8 or 12 (word mode), DCR bits FT1:FT0. */
FGFT_ISOLATE
static ssize_t fifo_threshold_show(struct device *dev FGFT_CONTAINER(pci_dev, dev),
				   struct device_attribute *attr,
				   char *buf FGFT_BLOB(PAGE_SIZE))
{
	static const u8 bytes[] = { 2, 4, 8, 12 };
	struct fgft_ne2k *lp = netdev_priv(dev_get_drvdata(dev));

	return sysfs_emit(buf, "%u\n",
			  bytes[(lp->dcr & DCR_FT_MASK) >> DCR_FT_SHIFT]);
}

FGFT_ISOLATE
static ssize_t fifo_threshold_store(struct device *dev FGFT_CONTAINER(pci_dev, dev),
				    struct device_attribute *attr,
				    const char *buf,
				    size_t count)
{
	struct fgft_ne2k *lp = netdev_priv(dev_get_drvdata(dev));
	unsigned long flags;
	unsigned int val;
	u8 ft;
	int err;

	err = kstrtouint(buf, 0, &val);
	if (err)
		return err;
	switch (val) {
	case 2:
		ft = 0;
		break;
	case 4:
		ft = 1;
		break;
	case 8:
		ft = 2;
		break;
	case 12:
		ft = 3;
		break;
	default:
		return -EINVAL;
	}
	spin_lock_irqsave(&lp->lock, flags);
	lp->dcr = (lp->dcr & ~DCR_FT_MASK) | (ft << DCR_FT_SHIFT);
	ne_write(lp, P0_DCR, lp->dcr);
	spin_unlock_irqrestore(&lp->lock, flags);
	return count;
}
static DEVICE_ATTR_RW(fifo_threshold);

static struct attribute *fgft_ne2k_attrs[] = {
	&dev_attr_chip_id.attr,
	&dev_attr_prom.attr,
	&dev_attr_tx_timeouts.attr,
	&dev_attr_ring_overflows.attr,
	&dev_attr_fifo_threshold.attr,
	NULL,
};
ATTRIBUTE_GROUPS(fgft_ne2k);

/* Power management */

/* Reads back the configuration the NIC holds, so resume can rewrite it. */
static void fgft_ne2k_save_state(struct fgft_ne2k *lp)
{
	struct fgft_ne2k_saved *sv = &lp->saved;
	int i;

	ne_page(lp, CR_PAGE1);
	for (i = 0; i < ETH_ALEN; i++)
		sv->par[i] = ne_read(lp, P1_PAR0 + i);
	for (i = 0; i < 8; i++)
		sv->mar[i] = ne_read(lp, P1_MAR0 + i);
	ne_page(lp, CR_PAGE0);
	sv->rcr = lp->rcr;
	sv->dcr = lp->dcr;
	sv->valid = true;
	fgft_ne2k_collect_counters(lp);
}

static void fgft_ne2k_restore_state(struct fgft_ne2k *lp)
{
	struct fgft_ne2k_saved *sv = &lp->saved;

	if (!sv->valid)
		return;
	memcpy(lp->mc_filter, sv->mar, sizeof(lp->mc_filter));
	lp->rcr = sv->rcr;
	lp->dcr = sv->dcr;
	if (!ether_addr_equal(sv->par, lp->ndev->dev_addr))
		netdev_warn(lp->ndev, "station address changed over suspend\n");
	sv->valid = false;
}

static int fgft_ne2k_suspend(struct device *dev)
{
	struct net_device *ndev = dev_get_drvdata(dev);
	struct fgft_ne2k *lp = netdev_priv(ndev);
	unsigned long flags;

	if (!netif_running(ndev))
		return 0;
	netif_device_detach(ndev);
	napi_disable(&lp->napi);

	spin_lock_irqsave(&lp->lock, flags);
	fgft_ne2k_save_state(lp);
	lp->irq_masked = true;
	fgft_ne2k_chip_stop(lp);
	spin_unlock_irqrestore(&lp->lock, flags);
	return 0;
}

static int fgft_ne2k_resume(struct device *dev)
{
	struct net_device *ndev = dev_get_drvdata(dev);
	struct fgft_ne2k *lp = netdev_priv(ndev);
	unsigned long flags;
	int err;

	if (!netif_running(ndev))
		return 0;

	spin_lock_irqsave(&lp->lock, flags);
	fgft_ne2k_restore_state(lp);
	err = fgft_ne2k_chip_reset(lp);
	if (!err)
		fgft_ne2k_chip_init(lp, true);
	spin_unlock_irqrestore(&lp->lock, flags);

	napi_enable(&lp->napi);
	netif_device_attach(ndev);
	return err;
}

static DEFINE_SIMPLE_DEV_PM_OPS(fgft_ne2k_pm_ops, fgft_ne2k_suspend,
				fgft_ne2k_resume);

/* PCI glue */

/* Reads the station address PROM through remote DMA (word mode). */
static void fgft_ne2k_read_prom(struct fgft_ne2k *lp)
{
	ne_write(lp, NE_CMD, CR_NODMA | CR_PAGE0 | CR_STP);
	ne_write(lp, P0_DCR, lp->dcr);
	ne_write(lp, P0_RBCR0, 0);
	ne_write(lp, P0_RBCR1, 0);
	ne_write(lp, P0_IMR, 0);
	ne_write(lp, P0_ISR, 0xff);
	ne_write(lp, P0_RCR, RCR_MON);
	ne_write(lp, P0_TCR, TCR_LOOPBACK);
	ne_pio_read(lp, lp->prom, NE_PROM_LEN, 0);
	ne_write(lp, NE_CMD, CR_NODMA | CR_PAGE0 | CR_STP);
}

static int fgft_ne2k_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct net_device *ndev;
	struct fgft_ne2k *lp;
	u8 addr[ETH_ALEN];
	int i, err;

	err = pci_enable_device(pdev);
	if (err)
		return err;
	if (!(pci_resource_flags(pdev, 0) & IORESOURCE_IO) ||
	    pci_resource_len(pdev, 0) < NE_IO_EXTENT) {
		dev_err(&pdev->dev, "BAR 0 is not an I/O window of %d bytes\n",
			NE_IO_EXTENT);
		err = -ENODEV;
		goto err_disable;
	}
	err = pci_request_regions(pdev, DRV_NAME);
	if (err)
		goto err_disable;

	ndev = alloc_etherdev(sizeof(*lp));
	if (!ndev) {
		err = -ENOMEM;
		goto err_release;
	}
	SET_NETDEV_DEV(ndev, &pdev->dev);
	lp = netdev_priv(ndev);
	lp->ndev = ndev;
	lp->pdev = pdev;
	spin_lock_init(&lp->lock);
	lp->msg_enable = netif_msg_init(debug, NE_MSG_DEFAULT);
	lp->dcr = DCR_WTS | DCR_LS | (2 << DCR_FT_SHIFT);
	lp->rcr = RCR_AB;
	lp->irq_masked = true;

	lp->ioaddr = pci_iomap(pdev, 0, NE_IO_EXTENT);
	if (!lp->ioaddr) {
		err = -ENOMEM;
		goto err_free;
	}

	err = fgft_ne2k_chip_reset(lp);
	if (err)
		goto err_unmap;
	fgft_ne2k_read_prom(lp);
	if (lp->prom[28] != 0x57 || lp->prom[30] != 0x57)
		dev_warn(&pdev->dev, "no NE2000 signature in the PROM (%02x %02x)\n",
			 lp->prom[28], lp->prom[30]);
	for (i = 0; i < ETH_ALEN; i++)
		addr[i] = lp->prom[2 * i];
	if (is_valid_ether_addr(addr)) {
		eth_hw_addr_set(ndev, addr);
	} else {
		dev_warn(&pdev->dev, "invalid PROM address %pM, using a random one\n",
			 addr);
		eth_hw_addr_random(ndev);
	}

	ndev->netdev_ops = &fgft_ne2k_netdev_ops;
	ndev->ethtool_ops = &fgft_ne2k_ethtool_ops;
	ndev->watchdog_timeo = NE_TX_TIMEOUT;
	ndev->priv_flags |= IFF_LIVE_ADDR_CHANGE;
	ndev->min_mtu = ETH_MIN_MTU;
	ndev->max_mtu = ETH_DATA_LEN;
	netif_napi_add(ndev, &lp->napi, fgft_ne2k_poll);
	pci_set_drvdata(pdev, ndev);

	err = register_netdev(ndev);
	if (err)
		goto err_napi;
	netif_carrier_off(ndev);
	if (netif_msg_probe(lp))
		netdev_info(ndev, "NE2000 at %s, %pM, irq %d\n", pci_name(pdev),
			    ndev->dev_addr, pdev->irq);
	return 0;

err_napi:
	netif_napi_del(&lp->napi);
err_unmap:
	pci_iounmap(pdev, lp->ioaddr);
err_free:
	free_netdev(ndev);
err_release:
	pci_release_regions(pdev);
err_disable:
	pci_disable_device(pdev);
	return err;
}

static void fgft_ne2k_remove(struct pci_dev *pdev)
{
	struct net_device *ndev = pci_get_drvdata(pdev);
	struct fgft_ne2k *lp = netdev_priv(ndev);

	unregister_netdev(ndev);
	netif_napi_del(&lp->napi);
	pci_iounmap(pdev, lp->ioaddr);
	free_netdev(ndev);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
}

static const struct pci_device_id fgft_ne2k_pci_tbl[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REALTEK, 0x8029) },
	{ }
};
MODULE_DEVICE_TABLE(pci, fgft_ne2k_pci_tbl);

static struct pci_driver fgft_ne2k_driver = {
	.name		= DRV_NAME,
	.id_table	= fgft_ne2k_pci_tbl,
	.probe		= fgft_ne2k_probe,
	.remove		= fgft_ne2k_remove,
	.dev_groups	= fgft_ne2k_groups,
	.driver.pm	= pm_sleep_ptr(&fgft_ne2k_pm_ops),
};
module_pci_driver(fgft_ne2k_driver);

MODULE_DESCRIPTION("NE2000-compatible PCI Ethernet driver (fgft corpus)");
MODULE_LICENSE("GPL");

// SPDX-License-Identifier: GPL-2.0
/*
 * fgft-pkt: send raw Ethernet frames (AF_PACKET) out of interface A to the
 * MAC address of interface B, both in this guest and on one QEMU hub, and
 * count how many arrive on B.
 *
 *   fgft-pkt [-u] [-n COUNT] [-t TIMEOUT_MS] [-d SECONDS [-r FPS]] [-s SIZE]
 *            [-w LINK_WAIT_MS] IFACE_A IFACE_B
 *
 * Count mode (default): send COUNT frames (default 1000), then wait up to
 * TIMEOUT_MS (default 2000) for the missing ones. Throughput mode (-d):
 * send as fast as the stack takes frames for SECONDS (or, with -r, FPS
 * frames a second, paced from the first send), then wait 500 ms for
 * stragglers. Both print
 *
 *   FGFT-MARK pkt sent=N received=M secs=S fps=F mode=... lost=L ...
 *
 * where secs runs from the first send to the end of sending (throughput
 * mode) or to the last frame received (count mode), and fps = received /
 * secs. -u brings both interfaces up first; the tool always waits up to
 * LINK_WAIT_MS (default 5000) for both links to be up (operstate "up", or
 * "unknown": drivers that never change their carrier, such as 8139too,
 * tulip, ne2k-pci and pcnet32 on QEMU, stay "unknown"), and
 * reports that wait as FGFT-MARK pkt-link a=0|1 b=0|1 wait_ms=T. Then it
 * sends uncounted probe frames until one gets through (again at most
 * LINK_WAIT_MS) and reports that time as settle_ms (-1: none got through).
 *
 * Frames carry EtherType 0x88b5 (IEEE local experimental), a magic, a run
 * id and a sequence number; only this run's frames are counted, each once.
 *
 * Exit status: 0 if at least one frame arrived, 1 if none did or on a
 * set-up error, 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>

#include "fgft-link.h"

#define FGFT_ETH_P	0x88b5
#define FGFT_MAGIC	0x46474654u	/* "FGFT" */
#define MAX_SEQ		(1u << 24)
#define HDR_LEN		(ETH_HLEN + 12)

struct iface {
	const char *name;
	int index;
	uint8_t mac[ETH_ALEN];
};

static uint8_t seen[MAX_SEQ / 8];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int iface_info(int fd, struct iface *ifc)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifc->name);
	if (ioctl(fd, SIOCGIFINDEX, &ifr) < 0)
		return -1;
	ifc->index = ifr.ifr_ifindex;
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0)
		return -1;
	memcpy(ifc->mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	return 0;
}

struct counters {
	unsigned long sent;
	unsigned long received;
	unsigned long dups;
	unsigned long tx_retries;
	unsigned long tx_errors;
	double first_tx;
	double last_rx;
};

/* Read every frame queued on the receive socket; count ours once each. */
static void drain(int rx, uint32_t run, struct counters *k)
{
	uint8_t buf[2048];
	uint32_t v, seq;
	ssize_t n;

	for (;;) {
		n = recv(rx, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0)
			return;
		if (n < HDR_LEN)
			continue;
		memcpy(&v, buf + ETH_HLEN, 4);
		if (ntohl(v) != FGFT_MAGIC)
			continue;
		memcpy(&v, buf + ETH_HLEN + 4, 4);
		if (ntohl(v) != run)
			continue;
		memcpy(&v, buf + ETH_HLEN + 8, 4);
		seq = ntohl(v) % MAX_SEQ;
		if (seen[seq / 8] & (1u << (seq % 8))) {
			k->dups++;
			continue;
		}
		seen[seq / 8] |= 1u << (seq % 8);
		k->received++;
		k->last_rx = now_s();
	}
}

/* Send one frame, retrying while the queue is full. 0 on success. */
static int send_one(int tx, int rx, uint8_t *frame, size_t size,
		    struct sockaddr_ll *to, uint32_t run, struct counters *k)
{
	struct pollfd p = { .fd = tx, .events = POLLOUT };
	uint32_t v = htonl((uint32_t)k->sent);
	int tries;

	memcpy(frame + ETH_HLEN + 8, &v, 4);
	for (tries = 0; tries < 1000; tries++) {
		if (sendto(tx, frame, size, MSG_DONTWAIT,
			   (struct sockaddr *)to, sizeof(*to)) == (ssize_t)size)
			return 0;
		if (errno != ENOBUFS && errno != EAGAIN)
			break;
		k->tx_retries++;
		drain(rx, run, k);
		poll(&p, 1, 1);
	}
	k->tx_errors++;
	return -1;
}

/*
 * Send uncounted probe frames (another run id), one per 10 ms, until one
 * arrives or wait_s passes. Right after link-up frames can be lost for a
 * while (about 1 s seen with QEMU's e1000, whose receiver holds off after
 * it is enabled), which would otherwise count as lost traffic. Returns the
 * seconds it took, or -1 if nothing arrived.
 */
static double settle(int tx, int rx, uint8_t *frame, size_t size,
		     struct sockaddr_ll *to, uint32_t probe, double wait_s)
{
	struct counters p = { 0 };
	double t0 = now_s(), last = 0;
	uint32_t v = htonl(probe);

	memcpy(frame + ETH_HLEN + 4, &v, 4);
	while (!p.received && now_s() - t0 < wait_s) {
		if (now_s() - last >= 0.01) {
			last = now_s();
			if (!send_one(tx, rx, frame, size, to, probe, &p))
				p.sent++;
		}
		drain(rx, probe, &p);
		usleep(500);
	}
	memset(seen, 0, sizeof(seen));
	return p.received ? now_s() - t0 : -1;
}

static void print_usage(void)
{
	fprintf(stderr,
		"usage: fgft-pkt [-u] [-n COUNT] [-t TIMEOUT_MS] [-d SECONDS [-r FPS]] [-s SIZE]\n"
		"                [-w LINK_WAIT_MS] IFACE_A IFACE_B\n");
}

int main(int argc, char **argv)
{
	unsigned long count = 1000, timeout_ms = 2000, wait_ms = 5000;
	struct iface a = { 0 }, b = { 0 };
	struct counters k = { 0 };
	struct sockaddr_ll to, at;
	double duration = 0, rate = 0, t0, end, secs, settle_s, due;
	size_t size = 60;
	int opt, up = 0, rx, tx, bufsz = 8 << 20;
	uint8_t frame[ETH_FRAME_LEN];
	uint32_t run, v;

	while ((opt = getopt(argc, argv, "un:t:d:r:s:w:h")) != -1) {
		switch (opt) {
		case 'u':
			up = 1;
			break;
		case 'n':
			count = strtoul(optarg, NULL, 0);
			break;
		case 't':
			timeout_ms = strtoul(optarg, NULL, 0);
			break;
		case 'd':
			duration = strtod(optarg, NULL);
			break;
		case 'r':
			rate = strtod(optarg, NULL);
			break;
		case 's':
			size = strtoul(optarg, NULL, 0);
			break;
		case 'w':
			wait_ms = strtoul(optarg, NULL, 0);
			break;
		default:
			print_usage();
			return 2;
		}
	}
	if (argc - optind != 2 || size < HDR_LEN || size > ETH_FRAME_LEN ||
	    count > MAX_SEQ || duration < 0 || rate < 0 ||
	    (rate > 0 && duration <= 0)) {
		print_usage();
		return 2;
	}
	if (size < ETH_ZLEN)
		size = ETH_ZLEN;
	a.name = argv[optind];
	b.name = argv[optind + 1];

	tx = socket(AF_PACKET, SOCK_RAW, 0);
	rx = socket(AF_PACKET, SOCK_RAW, htons(FGFT_ETH_P));
	if (tx < 0 || rx < 0) {
		perror("fgft-pkt: socket");
		return 1;
	}
	if (iface_info(tx, &a) < 0 || iface_info(tx, &b) < 0) {
		perror("fgft-pkt: interface");
		return 1;
	}
	if (up && (iface_up(tx, a.name) < 0 || iface_up(tx, b.name) < 0)) {
		perror("fgft-pkt: bringing interfaces up");
		return 1;
	}
	t0 = now_s();
	while ((!link_ready(a.name) || !link_ready(b.name)) &&
	       now_s() - t0 < wait_ms / 1000.0)
		usleep(10000);
	printf("FGFT-MARK pkt-link a=%d b=%d wait_ms=%.0f\n",
	       link_ready(a.name), link_ready(b.name), (now_s() - t0) * 1000);

	if (setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &bufsz,
		       sizeof(bufsz)) < 0)
		setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	memset(&at, 0, sizeof(at));
	at.sll_family = AF_PACKET;
	at.sll_protocol = htons(FGFT_ETH_P);
	at.sll_ifindex = b.index;
	if (bind(rx, (struct sockaddr *)&at, sizeof(at)) < 0) {
		perror("fgft-pkt: bind");
		return 1;
	}
	while (recv(rx, frame, sizeof(frame), MSG_DONTWAIT) >= 0)
		;	/* drop what arrived before this run */

	memset(&to, 0, sizeof(to));
	to.sll_family = AF_PACKET;
	to.sll_protocol = htons(FGFT_ETH_P);
	to.sll_ifindex = a.index;
	to.sll_halen = ETH_ALEN;
	memcpy(to.sll_addr, b.mac, ETH_ALEN);

	run = (uint32_t)getpid() ^ (uint32_t)(now_s() * 1e6);
	memset(frame, 0xa5, sizeof(frame));
	memcpy(frame, b.mac, ETH_ALEN);
	memcpy(frame + ETH_ALEN, a.mac, ETH_ALEN);
	frame[12] = FGFT_ETH_P >> 8;
	frame[13] = FGFT_ETH_P & 0xff;
	v = htonl(FGFT_MAGIC);
	memcpy(frame + ETH_HLEN, &v, 4);
	settle_s = settle(tx, rx, frame, size, &to, ~run, wait_ms / 1000.0);
	v = htonl(run);
	memcpy(frame + ETH_HLEN + 4, &v, 4);

	k.first_tx = now_s();
	if (duration > 0) {
		while (now_s() - k.first_tx < duration && k.sent < MAX_SEQ) {
			/* Paced: frame N goes at first_tx + N / rate. */
			due = rate > 0 ? k.first_tx + k.sent / rate : 0;
			if (now_s() < due) {
				drain(rx, run, &k);
				usleep(200);
				continue;
			}
			if (!send_one(tx, rx, frame, size, &to, run, &k))
				k.sent++;
			drain(rx, run, &k);
		}
		end = now_s();
		while (now_s() - end < 0.5 && k.received < k.sent) {
			drain(rx, run, &k);
			usleep(1000);
		}
		secs = end - k.first_tx;
	} else {
		while (k.sent < count) {
			if (!send_one(tx, rx, frame, size, &to, run, &k))
				k.sent++;
			else if (k.tx_errors > count)
				break;
			drain(rx, run, &k);
		}
		end = now_s();
		while (now_s() - end < timeout_ms / 1000.0 &&
		       k.received < k.sent) {
			drain(rx, run, &k);
			usleep(1000);
		}
		secs = (k.received ? k.last_rx : now_s()) - k.first_tx;
	}
	if (secs <= 0)
		secs = 1e-6;
	printf("FGFT-MARK pkt sent=%lu received=%lu secs=%.3f fps=%.0f mode=%s rate=%.0f lost=%lu dups=%lu tx_retries=%lu tx_errors=%lu size=%zu settle_ms=%.0f from=%s to=%s\n",
	       k.sent, k.received, secs, k.received / secs,
	       duration > 0 ? "duration" : "count", rate, k.sent - k.received,
	       k.dups, k.tx_retries, k.tx_errors, size,
	       settle_s < 0 ? -1 : settle_s * 1000, a.name, b.name);
	close(tx);
	close(rx);
	return k.received ? 0 : 1;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * aspect-frames: send a pattern of raw Ethernet frames out of interface SRC
 * to interface DST (both in this guest, on one QEMU hub), for the aspect VM
 * test.  Each pattern character is one frame:
 *
 *   x  an EtherType 0x88b5 frame of SIZE bytes (default 1000) to DST's MAC
 *   a  an ARP request (60 bytes, broadcast) for 10.99.0.1
 *
 *   aspect-frames [-s SIZE] [-g GAP_MS] SRC DST PATTERN
 *
 * Frames are GAP_MS (default 20) apart.  Prints
 *   FGFT-MARK frames sent=N arp=A other=X
 * Exit status: 0 when every frame was sent, 1 otherwise, 2 on usage errors.
 */
#include <arpa/inet.h>
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

static int mac_of(int fd, const char *ifname, uint8_t mac[ETH_ALEN])
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0)
		return -1;
	memcpy(mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	return 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	uint8_t src[ETH_ALEN], dst[ETH_ALEN], frame[2048];
	int size = 1000, gap = 20, opt, fd, sent = 0, arp = 0, other = 0;
	struct sockaddr_ll sll;
	const char *p;

	while ((opt = getopt(argc, argv, "s:g:")) != -1) {
		if (opt == 's')
			size = atoi(optarg);
		else if (opt == 'g')
			gap = atoi(optarg);
		else
			return 2;
	}
	if (argc - optind != 3 || size < 60 || size > (int)sizeof(frame)) {
		fprintf(stderr, "usage: aspect-frames [-s SIZE] [-g GAP_MS] SRC DST PATTERN\n");
		return 2;
	}
	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0 || mac_of(fd, argv[optind], src) || mac_of(fd, argv[optind + 1], dst)) {
		perror("aspect-frames");
		return 1;
	}
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_ifindex = if_nametoindex(argv[optind]);
	sll.sll_halen = ETH_ALEN;
	for (p = argv[optind + 2]; *p; p++) {
		int len;

		memset(frame, 0, sizeof(frame));
		if (*p == 'a') {
			uint8_t *a = frame + ETH_HLEN;

			memset(frame, 0xff, ETH_ALEN);
			memcpy(frame + ETH_ALEN, src, ETH_ALEN);
			frame[12] = 0x08;
			frame[13] = 0x06;
			a[1] = 1;		/* Ethernet */
			a[2] = 0x08;		/* IPv4 */
			a[4] = 6;
			a[5] = 4;
			a[7] = 1;		/* request */
			memcpy(a + 8, src, ETH_ALEN);
			a[14] = 10; a[15] = 99; a[16] = 0; a[17] = 2;
			a[24] = 10; a[25] = 99; a[26] = 0; a[27] = 1;
			len = 60;
			sll.sll_protocol = htons(ETH_P_ARP);
		} else {
			uint32_t seq = htonl((uint32_t)(p - argv[optind + 2]));

			memcpy(frame, dst, ETH_ALEN);
			memcpy(frame + ETH_ALEN, src, ETH_ALEN);
			frame[12] = 0x88;
			frame[13] = 0xb5;
			memcpy(frame + ETH_HLEN, &seq, sizeof(seq));
			len = size;
			sll.sll_protocol = htons(0x88b5);
		}
		memcpy(sll.sll_addr, frame, ETH_ALEN);
		if (sendto(fd, frame, len, 0, (struct sockaddr *)&sll, sizeof(sll)) == len) {
			sent++;
			if (*p == 'a')
				arp++;
			else
				other++;
		}
		sleep_ms(gap);
	}
	printf("FGFT-MARK frames sent=%d arp=%d other=%d\n", sent, arp, other);
	return sent == (int)strlen(argv[optind + 2]) ? 0 : 1;
}

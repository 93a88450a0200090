/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fgft-link.h: bringing an interface up and waiting for its link, shared by
 * the guest programs that send traffic between two NICs (fgft-pkt,
 * fgft-tcp). Header-only: each program includes it once.
 */
#ifndef FGFT_LINK_H
#define FGFT_LINK_H

#include <stdio.h>
#include <string.h>
#include <net/if.h>
#include <sys/ioctl.h>

static int iface_up(int fd, const char *name)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return -1;
	ifr.ifr_flags |= IFF_UP;
	return ioctl(fd, SIOCSIFFLAGS, &ifr);
}

/*
 * Ready to pass frames: carrier on and operstate "up". The second comes
 * from linkwatch, which also swaps the noop qdisc (which drops silently)
 * for the real one, up to a second after the carrier. A driver that never
 * changes its carrier (8139too, tulip, ne2k-pci, pcnet32 on QEMU) leaves
 * operstate "unknown", which the kernel only keeps for a carrier that was on
 * at registration and at open, so the real qdisc is in place: ready too.
 * (The carrier attribute itself is no use here: reading it takes the RTNL,
 * which a driver that died in an ethtool call never gives back.)
 */
static int link_ready(const char *name)
{
	char path[128], buf[16] = "";
	FILE *f;
	int up;

	snprintf(path, sizeof(path), "/sys/class/net/%s/operstate", name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	up = fgets(buf, sizeof(buf), f) &&
	     (!strncmp(buf, "up", 2) || !strncmp(buf, "unknown", 7));
	fclose(f);
	return up;
}

#endif /* FGFT_LINK_H */

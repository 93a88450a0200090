/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the network guest programs (fgft-ethtool here, fgft-netctl in
 * tools/campaign/guest) share: the interface context, an ioctl with its
 * outcome, and the one marker line per operation:
 *
 *   FGFT-MARK <tool> op=<op> ret=<rc> errno=<n> value=<v> dev=<if> ...
 */
#ifndef FGFT_NETDEV_H
#define FGFT_NETDEV_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>

#include "fgft-word.h"

struct ctx {
	int fd;
	const char *ifname;
	int failed;
};

struct result {
	int ret;
	int err;
	const char *step;
};

/* ioctl @req on the interface; the outcome, named @step, goes to @r. */
static inline int do_ioctl(struct ctx *c, unsigned long req,
			   struct ifreq *ifr, struct result *r,
			   const char *step)
{
	int ret;

	snprintf(ifr->ifr_name, IFNAMSIZ, "%s", c->ifname);
	ret = ioctl(c->fd, req, ifr);
	r->ret = ret;
	r->err = ret < 0 ? errno : 0;
	r->step = step;
	return ret;
}

/* One SIOCETHTOOL call with @data as its command block. */
static inline int ethtool_ioctl(struct ctx *c, void *data, struct result *r,
				const char *step)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_data = data;
	return do_ioctl(c, SIOCETHTOOL, &ifr, r, step);
}

/* ETHTOOL_GSSET_INFO for one string set: its count (0 if absent). */
static inline int sset_count(struct ctx *c, int set, struct result *r,
			     uint32_t *count)
{
	struct {
		struct ethtool_sset_info hdr;
		uint32_t buf[1];
	} si;

	memset(&si, 0, sizeof(si));
	si.hdr.cmd = ETHTOOL_GSSET_INFO;
	si.hdr.sset_mask = 1ULL << set;
	if (ethtool_ioctl(c, &si, r, "sset-info") < 0)
		return -1;
	*count = (si.hdr.sset_mask & (1ULL << set)) ? si.buf[0] : 0;
	return 0;
}

/*
 * The marker line of one operation; it failed if r->ret < 0 or @bad is set
 * (value is then "-" and the failing step is named).  @extra (may be "")
 * holds further fields.
 */
static inline void mark_line(struct ctx *c, const char *tool, const char *op,
			     const struct result *r, int bad,
			     const char *value, const char *extra)
{
	const char *sep = extra[0] ? " " : "";

	if (r->ret < 0 || bad) {
		c->failed = 1;
		printf("FGFT-MARK %s op=%s ret=%d errno=%d value=- dev=%s step=%s%s%s\n",
		       tool, op, r->ret, r->err, c->ifname, r->step, sep, extra);
	} else {
		printf("FGFT-MARK %s op=%s ret=%d errno=0 value=%s dev=%s%s%s\n",
		       tool, op, r->ret, value, c->ifname, sep, extra);
	}
	fflush(stdout);
}

/*
 * The main of a network guest tool called @tool: IFACE, then operations,
 * each run by @run_op (< 0: an unknown one).  Exits 2 on a usage error
 * (@usage printed), 1 when an operation failed, else 0.
 */
static inline int netdev_main(int argc, char **argv, const char *tool,
			      void (*usage)(void),
			      int (*run_op)(struct ctx *c, const char *spec))
{
	struct ctx c = { .fd = -1 };
	int i;

	if (argc < 3 || !strcmp(argv[1], "--help")) {
		usage();
		return 2;
	}
	c.ifname = argv[1];
	if (strlen(c.ifname) >= IFNAMSIZ) {
		fprintf(stderr, "%s: interface name too long\n", tool);
		return 2;
	}
	c.fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (c.fd < 0) {
		fprintf(stderr, "%s: socket: %s\n", tool, strerror(errno));
		return 1;
	}
	for (i = 2; i < argc; i++) {
		if (run_op(&c, argv[i]) < 0) {
			fprintf(stderr, "%s: unknown op %s\n", tool, argv[i]);
			usage();
			close(c.fd);
			return 2;
		}
	}
	close(c.fd);
	return c.failed ? 1 : 0;
}

#endif /* FGFT_NETDEV_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the network guest programs (fgft-ethtool here, fgft-netctl in
 * tools/campaign/guest) share: the interface context, an ioctl with its
 * outcome, and the one marker line per operation:
 *
 *   FGFT-MARK <tool> op=<op> ret=<rc> errno=<n> value=<v> dev=<if> ...
 *
 * Options before IFACE repeat the operation list (a load, or a latency
 * measurement); then no per-operation line is printed, only one summary:
 *
 *   -n N      run the list N times;
 *   -d SECS   run it until SECS seconds have passed;
 *   -p USECS  sleep USECS microseconds after each run (a period);
 *
 *   FGFT-MARK <tool>-loop dev=<if> runs=<n> failed=<runs with a failed op>
 *             min_ns=.. p50_ns=.. p99_ns=.. max_ns=..
 *
 * (one line; the times are CLOCK_MONOTONIC per run of the list, without
 * the sleep).
 */
#ifndef FGFT_NETDEV_H
#define FGFT_NETDEV_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
	/* A repeated list prints no per-operation line. */
	int quiet;
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

	if (c->quiet) {
		if (r->ret < 0 || bad)
			c->failed = 1;
		return;
	}
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

static inline long long netdev_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline int netdev_cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

/* Reads a non-negative number option; -1 if it is not one. */
static inline long netdev_num(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0)
		return -1;
	return v;
}

/*
 * The main of a network guest tool called @tool: options (-n, -d, -p, see
 * the top of this file), IFACE, then operations, each run by @run_op (< 0:
 * an unknown one).  Exits 2 on a usage error (@usage printed), 1 when an
 * operation failed, else 0.
 */
static inline int netdev_main(int argc, char **argv, const char *tool,
			      void (*usage)(void),
			      int (*run_op)(struct ctx *c, const char *spec))
{
	struct ctx c = { .fd = -1 };
	long runs = -1, secs = -1, period = 0;
	long long *times = NULL, t_end = 0, t0;
	size_t n = 0, cap = 0;
	int i, o, failed_runs = 0;

	while ((o = getopt(argc, argv, "+n:d:p:")) != -1) {
		long v = netdev_num(optarg ? optarg : "");

		if (v < 0) {
			usage();
			return 2;
		}
		if (o == 'n')
			runs = v;
		else if (o == 'd')
			secs = v;
		else if (o == 'p')
			period = v;
		else {
			usage();
			return 2;
		}
	}
	argc -= optind - 1;
	argv += optind - 1;
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
	c.quiet = runs >= 0 || secs >= 0;
	if (secs >= 0)
		t_end = netdev_now_ns() + secs * 1000000000LL;
	do {
		int was_failed = c.failed;

		c.failed = 0;
		t0 = netdev_now_ns();
		for (i = 2; i < argc; i++) {
			if (run_op(&c, argv[i]) < 0) {
				fprintf(stderr, "%s: unknown op %s\n", tool,
					argv[i]);
				usage();
				close(c.fd);
				free(times);
				return 2;
			}
		}
		if (!c.quiet)
			break;
		if (n == cap) {
			long long *nt;

			cap = cap ? 2 * cap : 1024;
			nt = realloc(times, cap * sizeof(*times));
			if (!nt) {
				fprintf(stderr, "%s: out of memory\n", tool);
				close(c.fd);
				free(times);
				return 1;
			}
			times = nt;
		}
		times[n++] = netdev_now_ns() - t0;
		failed_runs += c.failed;
		c.failed |= was_failed;
		if (period)
			usleep(period);
	} while ((runs < 0 || (long)n < runs) &&
		 (secs < 0 || netdev_now_ns() < t_end));
	close(c.fd);
	if (c.quiet) {
		qsort(times, n, sizeof(*times), netdev_cmp_ll);
		if (!strncmp(tool, "fgft-", 5))
			tool += 5;
		printf("FGFT-MARK %s-loop dev=%s runs=%zu failed=%d min_ns=%lld p50_ns=%lld p99_ns=%lld max_ns=%lld\n",
		       tool, c.ifname, n, failed_runs, n ? times[0] : 0,
		       n ? times[n / 2] : 0, n ? times[n * 99 / 100] : 0,
		       n ? times[n - 1] : 0);
		fflush(stdout);
		free(times);
	}
	return c.failed ? 1 : 0;
}

#endif /* FGFT_NETDEV_H */

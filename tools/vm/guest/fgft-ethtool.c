// SPDX-License-Identifier: GPL-2.0
/*
 * fgft-ethtool: issue ethtool ioctls (SIOCETHTOOL) on one interface and
 * print one line per operation:
 *
 *   FGFT-MARK ethtool op=<op> ret=<rc> errno=<n> value=<v> dev=<if> ...
 *
 * ret is the ioctl's return value and errno its errno (0 on success). An
 * operation that needs several ioctls (regs, eeprom, strings, stats, the
 * setters) reports the first one that fails, named by step=. value is "-"
 * when the operation failed. Extra fields follow dev=.
 *
 * usage: fgft-ethtool [-n N | -d SECS] [-p USECS] IFACE OP...
 * (repeated: one summary line, see fgft-netdev.h)
 *
 * Getters: drvinfo regs msglevel link ringparam pauseparam eeprom coalesce
 * wol gset sset-info strings stats; "all" runs every getter.
 * Actions and setters: nway-reset msglevel-set[=N] ringparam-set[=RX,TX]
 * pauseparam-set[=AUTONEG,RX,TX] coalesce-set[=RX_USECS] wol-set[=OPTS].
 * A setter without "=..." writes back the current value.
 *
 * Exit status: 0 if every operation succeeded, 1 if one failed, 2 on a
 * usage error.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>

#include "fgft-netdev.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))


static void mark(struct ctx *c, const char *op, const struct result *r,
		 const char *value, const char *fmt, ...)
{
	char extra[512] = "";
	va_list ap;

	/* A failed operation reports its step only. */
	if (fmt && r->ret >= 0) {
		va_start(ap, fmt);
		vsnprintf(extra, sizeof(extra), fmt, ap);
		va_end(ap);
	}
	mark_line(c, "ethtool", op, r, 0, value, extra);
}

static uint32_t sum32(const uint8_t *p, size_t len)
{
	uint32_t s = 0;
	size_t i;

	for (i = 0; i < len; i++)
		s = s * 31 + p[i];
	return s;
}

static int get_drvinfo(struct ctx *c, struct ethtool_drvinfo *di,
		       struct result *r)
{
	memset(di, 0, sizeof(*di));
	di->cmd = ETHTOOL_GDRVINFO;
	return ethtool_ioctl(c, di, r, "drvinfo");
}

static void op_drvinfo(struct ctx *c, const char *op)
{
	struct ethtool_drvinfo di;
	char drv[64], ver[64], fw[64], bus[64];
	struct result r;

	get_drvinfo(c, &di, &r);
	mark(c, op, &r, word(drv, sizeof(drv), di.driver),
	     "version=%s fw=%s bus=%s n_stats=%u regdump_len=%u eedump_len=%u testinfo_len=%u n_priv_flags=%u",
	     word(ver, sizeof(ver), di.version),
	     word(fw, sizeof(fw), di.fw_version),
	     word(bus, sizeof(bus), di.bus_info), di.n_stats,
	     di.regdump_len, di.eedump_len, di.testinfo_len,
	     di.n_priv_flags);
}

static void op_regs(struct ctx *c, const char *op)
{
	struct ethtool_drvinfo di;
	struct ethtool_regs *regs;
	struct result r;
	char v[32];

	if (get_drvinfo(c, &di, &r) < 0) {
		mark(c, op, &r, "-", NULL);
		return;
	}
	regs = calloc(1, sizeof(*regs) + di.regdump_len);
	if (!regs) {
		perror("calloc");
		exit(1);
	}
	regs->cmd = ETHTOOL_GREGS;
	regs->len = di.regdump_len;
	ethtool_ioctl(c, regs, &r, "regs");
	snprintf(v, sizeof(v), "%u", regs->len);
	mark(c, op, &r, v, "len=%u version=0x%x sum=0x%08x", regs->len,
	     regs->version, sum32(regs->data, regs->len));
	free(regs);
}

static void op_value(struct ctx *c, const char *op, uint32_t cmd)
{
	struct ethtool_value ev = { .cmd = cmd };
	struct result r;
	char v[32];

	ethtool_ioctl(c, &ev, &r, op);
	snprintf(v, sizeof(v), "%u", ev.data);
	mark(c, op, &r, v, NULL);
}

static void op_msglevel_set(struct ctx *c, const char *op, const char *arg)
{
	struct ethtool_value ev = { .cmd = ETHTOOL_GMSGLVL };
	struct result r;
	char v[32];

	if (arg) {
		ev.data = strtoul(arg, NULL, 0);
	} else if (ethtool_ioctl(c, &ev, &r, "get") < 0) {
		mark(c, op, &r, "-", NULL);
		return;
	}
	ev.cmd = ETHTOOL_SMSGLVL;
	ethtool_ioctl(c, &ev, &r, "set");
	snprintf(v, sizeof(v), "%u", ev.data);
	mark(c, op, &r, v, NULL);
}

static void op_ringparam(struct ctx *c, const char *op, int set,
			 const char *arg)
{
	struct ethtool_ringparam rp = { .cmd = ETHTOOL_GRINGPARAM };
	struct result r;
	char v[32];

	if (ethtool_ioctl(c, &rp, &r, "get") < 0) {
		mark(c, op, &r, "-", NULL);
		return;
	}
	if (set) {
		if (arg && sscanf(arg, "%u,%u", &rp.rx_pending,
				  &rp.tx_pending) != 2) {
			fprintf(stderr, "ringparam-set=RX,TX expected\n");
			exit(2);
		}
		rp.cmd = ETHTOOL_SRINGPARAM;
		ethtool_ioctl(c, &rp, &r, "set");
	}
	snprintf(v, sizeof(v), "%u", rp.rx_pending);
	mark(c, op, &r, v, "rx=%u tx=%u rx_max=%u tx_max=%u", rp.rx_pending,
	     rp.tx_pending, rp.rx_max_pending, rp.tx_max_pending);
}

static void op_pauseparam(struct ctx *c, const char *op, int set,
			  const char *arg)
{
	struct ethtool_pauseparam pp = { .cmd = ETHTOOL_GPAUSEPARAM };
	struct result r;
	char v[32];

	if (ethtool_ioctl(c, &pp, &r, "get") < 0) {
		mark(c, op, &r, "-", NULL);
		return;
	}
	if (set) {
		if (arg && sscanf(arg, "%u,%u,%u", &pp.autoneg, &pp.rx_pause,
				  &pp.tx_pause) != 3) {
			fprintf(stderr, "pauseparam-set=AUTONEG,RX,TX expected\n");
			exit(2);
		}
		pp.cmd = ETHTOOL_SPAUSEPARAM;
		ethtool_ioctl(c, &pp, &r, "set");
	}
	snprintf(v, sizeof(v), "%u", pp.autoneg);
	mark(c, op, &r, v, "autoneg=%u rx=%u tx=%u", pp.autoneg, pp.rx_pause,
	     pp.tx_pause);
}

static void op_eeprom(struct ctx *c, const char *op)
{
	struct ethtool_drvinfo di;
	struct ethtool_eeprom *ee;
	struct result r;
	char v[32];

	if (get_drvinfo(c, &di, &r) < 0) {
		mark(c, op, &r, "-", NULL);
		return;
	}
	ee = calloc(1, sizeof(*ee) + di.eedump_len);
	if (!ee) {
		perror("calloc");
		exit(1);
	}
	ee->cmd = ETHTOOL_GEEPROM;
	ee->len = di.eedump_len;
	ethtool_ioctl(c, ee, &r, "eeprom");
	snprintf(v, sizeof(v), "%u", ee->len);
	mark(c, op, &r, v, "len=%u magic=0x%x sum=0x%08x", ee->len, ee->magic,
	     sum32(ee->data, ee->len));
	free(ee);
}

static void op_coalesce(struct ctx *c, const char *op, int set,
			const char *arg)
{
	struct ethtool_coalesce ec = { .cmd = ETHTOOL_GCOALESCE };
	struct result r;
	char v[32];

	if (ethtool_ioctl(c, &ec, &r, "get") < 0) {
		mark(c, op, &r, "-", NULL);
		return;
	}
	if (set) {
		if (arg)
			ec.rx_coalesce_usecs = strtoul(arg, NULL, 0);
		ec.cmd = ETHTOOL_SCOALESCE;
		ethtool_ioctl(c, &ec, &r, "set");
	}
	snprintf(v, sizeof(v), "%u", ec.rx_coalesce_usecs);
	mark(c, op, &r, v, "rx_usecs=%u tx_usecs=%u rx_frames=%u",
	     ec.rx_coalesce_usecs, ec.tx_coalesce_usecs,
	     ec.rx_max_coalesced_frames);
}

static void op_wol(struct ctx *c, const char *op, int set, const char *arg)
{
	struct ethtool_wolinfo wi = { .cmd = ETHTOOL_GWOL };
	struct result r;
	char v[32];

	if (ethtool_ioctl(c, &wi, &r, "get") < 0) {
		mark(c, op, &r, "-", NULL);
		return;
	}
	if (set) {
		if (arg)
			wi.wolopts = strtoul(arg, NULL, 0);
		wi.cmd = ETHTOOL_SWOL;
		ethtool_ioctl(c, &wi, &r, "set");
	}
	snprintf(v, sizeof(v), "0x%x", wi.wolopts);
	mark(c, op, &r, v, "supported=0x%x", wi.supported);
}

static void op_gset(struct ctx *c, const char *op)
{
	struct ethtool_cmd ecmd = { .cmd = ETHTOOL_GSET };
	struct result r;
	char v[32];

	ethtool_ioctl(c, &ecmd, &r, op);
	snprintf(v, sizeof(v), "%u", ethtool_cmd_speed(&ecmd));
	mark(c, op, &r, v, "duplex=%u autoneg=%u port=%u", ecmd.duplex,
	     ecmd.autoneg, ecmd.port);
}


static void op_sset_info(struct ctx *c, const char *op)
{
	struct result r;
	uint32_t n = 0;
	char v[32];

	sset_count(c, ETH_SS_STATS, &r, &n);
	snprintf(v, sizeof(v), "%u", n);
	mark(c, op, &r, v, NULL);
}

static void op_strings(struct ctx *c, const char *op)
{
	struct ethtool_gstrings *gs;
	char first[ETH_GSTRING_LEN + 1], w[ETH_GSTRING_LEN + 1];
	struct result r;
	uint32_t n = 0;
	char v[32];

	if (sset_count(c, ETH_SS_STATS, &r, &n) < 0) {
		mark(c, op, &r, "-", NULL);
		return;
	}
	gs = calloc(1, sizeof(*gs) + (size_t)n * ETH_GSTRING_LEN);
	if (!gs) {
		perror("calloc");
		exit(1);
	}
	gs->cmd = ETHTOOL_GSTRINGS;
	gs->string_set = ETH_SS_STATS;
	gs->len = n;
	ethtool_ioctl(c, gs, &r, "strings");
	memset(first, 0, sizeof(first));
	if (gs->len)
		memcpy(first, gs->data, ETH_GSTRING_LEN);
	snprintf(v, sizeof(v), "%u", gs->len);
	mark(c, op, &r, v, "first=%s sum=0x%08x",
	     word(w, sizeof(w), first),
	     sum32(gs->data, (size_t)gs->len * ETH_GSTRING_LEN));
	free(gs);
}

static void op_stats(struct ctx *c, const char *op)
{
	struct ethtool_stats *st;
	unsigned long long total = 0;
	struct result r;
	uint32_t n = 0, i;
	char v[32];

	if (sset_count(c, ETH_SS_STATS, &r, &n) < 0) {
		mark(c, op, &r, "-", NULL);
		return;
	}
	st = calloc(1, sizeof(*st) + (size_t)n * sizeof(uint64_t));
	if (!st) {
		perror("calloc");
		exit(1);
	}
	st->cmd = ETHTOOL_GSTATS;
	st->n_stats = n;
	ethtool_ioctl(c, st, &r, "stats");
	for (i = 0; i < st->n_stats && i < n; i++)
		total += st->data[i];
	snprintf(v, sizeof(v), "%u", st->n_stats);
	mark(c, op, &r, v, "total=%llu", total);
	free(st);
}

static void op_nway_reset(struct ctx *c, const char *op)
{
	struct ethtool_value ev = { .cmd = ETHTOOL_NWAY_RST };
	struct result r;

	ethtool_ioctl(c, &ev, &r, op);
	mark(c, op, &r, "0", NULL);
}

static const char *const all_getters[] = {
	"drvinfo", "regs", "msglevel", "link", "ringparam", "pauseparam",
	"eeprom", "coalesce", "wol", "gset", "sset-info", "strings", "stats",
};

static int run_op(struct ctx *c, const char *spec)
{
	char op[64];
	const char *arg = strchr(spec, '=');
	size_t len = arg ? (size_t)(arg - spec) : strlen(spec);
	size_t i;

	if (len >= sizeof(op))
		return -1;
	memcpy(op, spec, len);
	op[len] = '\0';
	if (arg)
		arg++;

	if (!strcmp(op, "all")) {
		for (i = 0; i < ARRAY_SIZE(all_getters); i++)
			run_op(c, all_getters[i]);
	} else if (!strcmp(op, "drvinfo")) {
		op_drvinfo(c, op);
	} else if (!strcmp(op, "regs")) {
		op_regs(c, op);
	} else if (!strcmp(op, "msglevel")) {
		op_value(c, op, ETHTOOL_GMSGLVL);
	} else if (!strcmp(op, "msglevel-set")) {
		op_msglevel_set(c, op, arg);
	} else if (!strcmp(op, "link")) {
		op_value(c, op, ETHTOOL_GLINK);
	} else if (!strcmp(op, "ringparam") || !strcmp(op, "ringparam-set")) {
		op_ringparam(c, op, !strcmp(op, "ringparam-set"), arg);
	} else if (!strcmp(op, "pauseparam") ||
		   !strcmp(op, "pauseparam-set")) {
		op_pauseparam(c, op, !strcmp(op, "pauseparam-set"), arg);
	} else if (!strcmp(op, "eeprom")) {
		op_eeprom(c, op);
	} else if (!strcmp(op, "coalesce") || !strcmp(op, "coalesce-set")) {
		op_coalesce(c, op, !strcmp(op, "coalesce-set"), arg);
	} else if (!strcmp(op, "wol") || !strcmp(op, "wol-set")) {
		op_wol(c, op, !strcmp(op, "wol-set"), arg);
	} else if (!strcmp(op, "gset")) {
		op_gset(c, op);
	} else if (!strcmp(op, "sset-info")) {
		op_sset_info(c, op);
	} else if (!strcmp(op, "strings")) {
		op_strings(c, op);
	} else if (!strcmp(op, "stats")) {
		op_stats(c, op);
	} else if (!strcmp(op, "nway-reset")) {
		op_nway_reset(c, op);
	} else {
		return -1;
	}
	return 0;
}

static void print_usage(void)
{
	fprintf(stderr,
		"usage: fgft-ethtool [-n N | -d SECS] [-p USECS] IFACE OP...\n"
		"  getters: all drvinfo regs msglevel link ringparam pauseparam\n"
		"           eeprom coalesce wol gset sset-info strings stats\n"
		"  actions: nway-reset msglevel-set[=N] ringparam-set[=RX,TX]\n"
		"           pauseparam-set[=AUTONEG,RX,TX] coalesce-set[=USECS]\n"
		"           wol-set[=OPTS]\n");
}

int main(int argc, char **argv)
{
	return netdev_main(argc, argv, "fgft-ethtool", print_usage, run_op);
}

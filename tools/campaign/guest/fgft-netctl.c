// SPDX-License-Identifier: GPL-2.0
/*
 * fgft-netctl: the network management calls fgft-ethtool does not make,
 * each reaching one more driver entry point, with one line per operation:
 *
 *   FGFT-MARK netctl op=<op> ret=<rc> errno=<n> value=<v> dev=<if> ...
 *
 * ret is the last ioctl's return value and errno its errno (0 on success);
 * an operation that needs several ioctls reports the first one that fails,
 * named by step=, and value is then "-".
 *
 * usage: fgft-netctl IFACE OP...
 *
 *   mii                  SIOCGMIIPHY, then SIOCGMIIREG of BMSR (ndo_eth_ioctl)
 *   link-set             ETHTOOL_GLINKSETTINGS, then ETHTOOL_SLINKSETTINGS
 *                        with the same settings (set_link_ksettings)
 *   features-toggle=NAME ETHTOOL_SFEATURES flipping feature NAME (an
 *                        ETH_SS_FEATURES string such as rx-all), then
 *                        flipping it back (ndo_set_features, twice)
 *   test-strings         ETHTOOL_GSSET_INFO, then ETHTOOL_GSTRINGS of the
 *                        self-test names, ETH_SS_TEST (get_sset_count,
 *                        get_strings)
 *   self-test[=offline]  ETHTOOL_TEST, online unless "=offline" (self_test)
 *   phys-id[=SECS]       ETHTOOL_PHYS_ID for SECS seconds, default 1
 *                        (set_phys_id)
 *   eeprom-set           ETHTOOL_GEEPROM of the first two bytes, then
 *                        ETHTOOL_SEEPROM of the same bytes (set_eeprom)
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
#include <linux/mii.h>
#include <linux/sockios.h>

#include "../../vm/guest/fgft-netdev.h"

/* One marker line; the operation failed if r->ret < 0 or bad is set. */
static void mark(struct ctx *c, const char *op, const struct result *r,
		 int bad, const char *value, const char *fmt, ...)
{
	char extra[256] = "";
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(extra, sizeof(extra), fmt, ap);
		va_end(ap);
	}
	mark_line(c, "netctl", op, r, bad, value, extra);
}

static void op_mii(struct ctx *c, const char *op)
{
	struct mii_ioctl_data *mii;
	struct ifreq ifr;
	struct result r;
	unsigned int phy;
	char v[16];

	memset(&ifr, 0, sizeof(ifr));
	mii = (struct mii_ioctl_data *)&ifr.ifr_ifru;
	if (do_ioctl(c, SIOCGMIIPHY, &ifr, &r, "phy") < 0) {
		mark(c, op, &r, 0, "-", NULL);
		return;
	}
	phy = mii->phy_id;
	mii->reg_num = MII_BMSR;
	do_ioctl(c, SIOCGMIIREG, &ifr, &r, "reg");
	snprintf(v, sizeof(v), "0x%04x", mii->val_out);
	mark(c, op, &r, 0, v, "phy=%u", phy);
}

/* ethtool_link_settings with room for the three link mode masks. */
struct link_settings {
	struct ethtool_link_settings req;
	uint32_t masks[3 * 127];
};

static void op_link_set(struct ctx *c, const char *op)
{
	struct link_settings ls;
	struct result r;
	char v[16];

	memset(&ls, 0, sizeof(ls));
	ls.req.cmd = ETHTOOL_GLINKSETTINGS;
	if (ethtool_ioctl(c, &ls, &r, "handshake") < 0) {
		mark(c, op, &r, 0, "-", NULL);
		return;
	}
	if (ls.req.link_mode_masks_nwords >= 0) {
		r.step = "handshake";
		mark(c, op, &r, 1, "-", "nwords=%d",
		     ls.req.link_mode_masks_nwords);
		return;
	}
	ls.req.link_mode_masks_nwords = -ls.req.link_mode_masks_nwords;
	ls.req.cmd = ETHTOOL_GLINKSETTINGS;
	if (ethtool_ioctl(c, &ls, &r, "get") < 0) {
		mark(c, op, &r, 0, "-", NULL);
		return;
	}
	ls.req.cmd = ETHTOOL_SLINKSETTINGS;
	ethtool_ioctl(c, &ls, &r, "set");
	snprintf(v, sizeof(v), "%u", ls.req.speed);
	mark(c, op, &r, 0, v, "duplex=%u autoneg=%u", ls.req.duplex,
	     ls.req.autoneg);
}


/* Index of feature name in ETH_SS_FEATURES, -1 if absent. */
static int feature_index(struct ctx *c, const char *name, uint32_t n,
			 struct result *r)
{
	struct ethtool_gstrings *gs;
	uint32_t i;
	int idx = -1;

	gs = calloc(1, sizeof(*gs) + (size_t)n * ETH_GSTRING_LEN);
	if (!gs) {
		perror("calloc");
		exit(1);
	}
	gs->cmd = ETHTOOL_GSTRINGS;
	gs->string_set = ETH_SS_FEATURES;
	gs->len = n;
	if (ethtool_ioctl(c, gs, r, "strings") == 0) {
		for (i = 0; i < gs->len && i < n; i++) {
			if (!strncmp((char *)gs->data + i * ETH_GSTRING_LEN,
				     name, ETH_GSTRING_LEN)) {
				idx = i;
				break;
			}
		}
	}
	free(gs);
	return idx;
}

static int set_feature(struct ctx *c, uint32_t blocks, int idx, int on,
		       struct result *r, const char *step)
{
	struct ethtool_sfeatures *sf;
	int ret;

	sf = calloc(1, sizeof(*sf) + blocks * sizeof(sf->features[0]));
	if (!sf) {
		perror("calloc");
		exit(1);
	}
	sf->cmd = ETHTOOL_SFEATURES;
	sf->size = blocks;
	sf->features[idx / 32].valid = 1U << (idx % 32);
	sf->features[idx / 32].requested = on ? 1U << (idx % 32) : 0;
	ret = ethtool_ioctl(c, sf, r, step);
	free(sf);
	return ret;
}

static void op_features_toggle(struct ctx *c, const char *op,
			       const char *name)
{
	struct ethtool_gfeatures *gf;
	struct result r;
	uint32_t n = 0, blocks, bit;
	int idx, on;
	char v[8];

	if (sset_count(c, ETH_SS_FEATURES, &r, &n) < 0) {
		mark(c, op, &r, 0, "-", NULL);
		return;
	}
	idx = feature_index(c, name, n, &r);
	if (idx < 0) {
		if (r.ret == 0) {
			r.step = "name";
			r.err = ENOENT;
		}
		mark(c, op, &r, 1, "-", "feature=%s", name);
		return;
	}
	blocks = (n + 31) / 32;
	gf = calloc(1, sizeof(*gf) + blocks * sizeof(gf->features[0]));
	if (!gf) {
		perror("calloc");
		exit(1);
	}
	gf->cmd = ETHTOOL_GFEATURES;
	gf->size = blocks;
	if (ethtool_ioctl(c, gf, &r, "get") < 0) {
		mark(c, op, &r, 0, "-", "feature=%s", name);
		free(gf);
		return;
	}
	bit = 1U << (idx % 32);
	on = !(gf->features[idx / 32].active & bit);
	free(gf);
	/* A flags result (UNSUPPORTED, WISH...) means the driver refused. */
	if (set_feature(c, blocks, idx, on, &r, "set") != 0) {
		mark(c, op, &r, 1, "-", "feature=%s", name);
		return;
	}
	set_feature(c, blocks, idx, !on, &r, "restore");
	snprintf(v, sizeof(v), "%d", on);
	mark(c, op, &r, r.ret != 0, v, "feature=%s", name);
}

static void op_test_strings(struct ctx *c, const char *op)
{
	struct ethtool_gstrings *gs;
	char first[ETH_GSTRING_LEN + 1];
	struct result r;
	uint32_t n = 0;
	char v[16];
	size_t i;

	if (sset_count(c, ETH_SS_TEST, &r, &n) < 0) {
		mark(c, op, &r, 0, "-", NULL);
		return;
	}
	gs = calloc(1, sizeof(*gs) + (size_t)n * ETH_GSTRING_LEN);
	if (!gs) {
		perror("calloc");
		exit(1);
	}
	gs->cmd = ETHTOOL_GSTRINGS;
	gs->string_set = ETH_SS_TEST;
	gs->len = n;
	ethtool_ioctl(c, gs, &r, "strings");
	memset(first, 0, sizeof(first));
	if (gs->len && n)
		memcpy(first, gs->data, ETH_GSTRING_LEN);
	for (i = 0; first[i]; i++)
		if (first[i] <= ' ' || first[i] == '=')
			first[i] = '_';
	snprintf(v, sizeof(v), "%u", gs->len);
	mark(c, op, &r, 0, v, "first=%s", first[0] ? first : "-");
	free(gs);
}

static void op_self_test(struct ctx *c, const char *op, const char *arg)
{
	struct ethtool_test *t;
	unsigned long long sum = 0;
	struct result r;
	uint32_t n = 0, i;
	char v[16];

	if (sset_count(c, ETH_SS_TEST, &r, &n) < 0) {
		mark(c, op, &r, 0, "-", NULL);
		return;
	}
	t = calloc(1, sizeof(*t) + (size_t)n * sizeof(uint64_t));
	if (!t) {
		perror("calloc");
		exit(1);
	}
	t->cmd = ETHTOOL_TEST;
	t->flags = (arg && !strcmp(arg, "offline")) ? ETH_TEST_FL_OFFLINE : 0;
	t->len = n;
	ethtool_ioctl(c, t, &r, "test");
	for (i = 0; i < t->len && i < n; i++)
		sum += t->data[i];
	snprintf(v, sizeof(v), "0x%x", t->flags);
	mark(c, op, &r, 0, v, "tests=%u results_sum=%llu", t->len, sum);
	free(t);
}

static void op_phys_id(struct ctx *c, const char *op, const char *arg)
{
	struct ethtool_value ev = { .cmd = ETHTOOL_PHYS_ID };
	struct result r;
	char v[16];

	ev.data = arg ? (uint32_t)strtoul(arg, NULL, 0) : 1;
	ethtool_ioctl(c, &ev, &r, op);
	snprintf(v, sizeof(v), "%u", ev.data);
	mark(c, op, &r, 0, v, NULL);
}

static void op_eeprom_set(struct ctx *c, const char *op)
{
	struct {
		struct ethtool_eeprom hdr;
		uint8_t data[2];
	} ee;
	struct result r;
	char v[16];

	memset(&ee, 0, sizeof(ee));
	ee.hdr.cmd = ETHTOOL_GEEPROM;
	ee.hdr.len = sizeof(ee.data);
	if (ethtool_ioctl(c, &ee, &r, "get") < 0) {
		mark(c, op, &r, 0, "-", NULL);
		return;
	}
	ee.hdr.cmd = ETHTOOL_SEEPROM;
	ee.hdr.offset = 0;
	ee.hdr.len = sizeof(ee.data);
	ethtool_ioctl(c, &ee, &r, "set");
	snprintf(v, sizeof(v), "0x%02x%02x", ee.data[0], ee.data[1]);
	mark(c, op, &r, 0, v, "magic=0x%x", ee.hdr.magic);
}

static int run_op(struct ctx *c, const char *spec)
{
	char op[64];
	const char *arg = strchr(spec, '=');
	size_t len = arg ? (size_t)(arg - spec) : strlen(spec);

	if (len >= sizeof(op))
		return -1;
	memcpy(op, spec, len);
	op[len] = '\0';
	if (arg)
		arg++;
	if (!strcmp(op, "mii"))
		op_mii(c, op);
	else if (!strcmp(op, "link-set"))
		op_link_set(c, op);
	else if (!strcmp(op, "features-toggle") && arg && *arg)
		op_features_toggle(c, op, arg);
	else if (!strcmp(op, "test-strings"))
		op_test_strings(c, op);
	else if (!strcmp(op, "self-test"))
		op_self_test(c, op, arg);
	else if (!strcmp(op, "phys-id"))
		op_phys_id(c, op, arg);
	else if (!strcmp(op, "eeprom-set"))
		op_eeprom_set(c, op);
	else
		return -1;
	return 0;
}

static void print_usage(void)
{
	fprintf(stderr,
		"usage: fgft-netctl IFACE OP...\n"
		"  ops: mii link-set features-toggle=NAME test-strings\n"
		"       self-test[=offline] phys-id[=SECS] eeprom-set\n");
}

int main(int argc, char **argv)
{
	return netdev_main(argc, argv, "fgft-netctl", print_usage, run_op);
}

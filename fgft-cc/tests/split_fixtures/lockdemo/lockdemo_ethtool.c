// SPDX-License-Identifier: GPL-2.0
/* lockdemo's ethtool_ops: its entry points are defined in lockdemo.c. */
#include "lockdemo.h"

const struct ethtool_ops lockdemo_ethtool_ops = {
	.get_msglevel = lockdemo_get_msglevel,
	.set_msglevel = lockdemo_set_msglevel,
	.nway_reset = lockdemo_nway_reset,
	.get_ringparam = lockdemo_get_ringparam,
	.set_ringparam = lockdemo_set_ringparam,
};


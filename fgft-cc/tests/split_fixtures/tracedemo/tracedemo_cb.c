// SPDX-License-Identifier: GPL-2.0
/* The callback of the tracedemo fixture, in a unit of its own. */
#include <linux/module.h>
#include "tracedemo.h"

int tracedemo_done(struct tracedemo_priv *tp)
{
	return tp ? 0 : -EINVAL;
}

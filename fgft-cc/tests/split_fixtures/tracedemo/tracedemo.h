/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _TRACEDEMO_H
#define _TRACEDEMO_H

#include <linux/netdevice.h>

struct tracedemo_priv;

int tracedemo_setup(struct net_device *dev, unsigned int board);
void tracedemo_teardown(struct net_device *dev);

/* Called back when a submitted level change is done (tracedemo_cb.c). */
int tracedemo_done(struct tracedemo_priv *tp);

/* Submits a level change; the macro names the callback. */
#define TRACEDEMO_SUBMIT(tp, level) tracedemo_submit(tp, level, tracedemo_done)

#endif /* _TRACEDEMO_H */

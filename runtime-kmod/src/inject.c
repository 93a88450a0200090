// SPDX-License-Identifier: GPL-2.0
/*
 * fgft fault-injection switch.
 *
 * Drivers injected by `fgft-cc inject` guard every planted fault with
 * fgft_inject_hit(id).  Under fgft the runtime provides that function, so the
 * main module and the SFI module share one switch; a native build links its
 * own copy (generated fgft_inject.c).  Write a variant id to
 * /sys/module/fgft_rt/parameters/fgft_inject_id to arm that variant, 0 to
 * disarm all.
 *
 * The function lives in the runtime (not in SFI code), so reading the switch
 * is not a range-checked access of the SFI module.
 */
#include <linux/export.h>
#include <linux/moduleparam.h>
#include <linux/compiler.h>
#include <linux/types.h>

#include <fgft/runtime.h>

#include "fgft_internal.h"

static int fgft_inject_id;
module_param(fgft_inject_id, int, 0644);
MODULE_PARM_DESC(fgft_inject_id, "fault-injection variant to switch on (0: none)");

/*
 * A transient fault fires once: with fgft_inject_once set, the first hit
 * disarms the variant (a persistent one fires on every pass).
 */
static bool fgft_inject_once;
module_param(fgft_inject_once, bool, 0644);
MODULE_PARM_DESC(fgft_inject_once, "disarm the variant at its first hit (a transient fault)");

/*
 * A campaign over every function an isolated entry point's call reaches
 * (not only the entry points) sets fgft_inject_txn: a hit counts only
 * inside a transaction's body.  The same function called from code fgft
 * does not isolate (a file system's mkdir calling minix_add_link, or a
 * call deferred to commit reaching minix_write_inode) runs the fault-free
 * path there.
 */
static bool fgft_inject_txn;
module_param(fgft_inject_txn, bool, 0644);
MODULE_PARM_DESC(fgft_inject_txn, "a variant fires only inside an fgft transaction");

/*
 * How many times a variant fired (write 0 to start counting again): a
 * campaign tells a persistent fault that its workload never reached from
 * one that reached it and showed no error.  Hits on several cpus at once
 * may count one; a campaign reads it for a single workload.
 */
static unsigned long fgft_inject_fired;
module_param(fgft_inject_fired, ulong, 0644);
MODULE_PARM_DESC(fgft_inject_fired, "times a variant fired since 0 was written");

bool fgft_inject_hit(int id)
{
	if (likely(READ_ONCE(fgft_inject_id) != id))
		return false;
	if (READ_ONCE(fgft_inject_txn) && !fgft_active())
		return false;
	if (READ_ONCE(fgft_inject_once) &&
	    cmpxchg(&fgft_inject_id, id, 0) != id)
		return false;
	WRITE_ONCE(fgft_inject_fired, READ_ONCE(fgft_inject_fired) + 1);
	return true;
}
EXPORT_SYMBOL_GPL(fgft_inject_hit);

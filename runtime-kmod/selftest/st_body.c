// SPDX-License-Identifier: GPL-2.0
/*
 * fgft self-test: transaction bodies, written like the SFI copy of driver
 * code that fgft-cc emits.  Kbuild compiles this file three times:
 *   st_sfi.o      -fsanitize=kernel-address ... (every load and store,
 *                 including inside inlined kernel helpers, is checked)
 *   st_noreads.o  the same with --param asan-instrument-reads=0
 *   st_plain.o    no instrumentation (faults reach the die notifier)
 * ST_PREFIX names the copy.
 */
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/string.h>
#include <linux/bug.h>
#include <linux/io.h>

#include "st.h"

#define ST_CAT2(a, b)	a##_##b
#define ST_CAT(a, b)	ST_CAT2(a, b)
#define ST_FN(name)	ST_CAT(ST_PREFIX, name)

/* Sections nested, one left, then a trap: the abort leaves the other two. */
static noinline long ST_FN(section)(struct st_args *a)
{
	fgft_rcu_read_lock(a->txn);
	fgft_rcu_read_lock(a->txn);
	fgft_local_bh_disable(a->txn);
	fgft_rcu_read_unlock(a->txn);
	return a->x / READ_ONCE(a->zero);
}

/*
 * A semaphore taken through a kernel lock function, released, taken again
 * (two-phase locking kept it: no second down()), then a trap: the abort
 * releases it once.
 */
static noinline long ST_FN(call_lock)(struct st_args *a)
{
	st_down(a->txn, a->sem);
	st_up(a->txn, a->sem);
	st_down(a->txn, a->sem);
	if (!down_trylock(a->sem)) {
		up(a->sem);
		return 1000;	/* not held */
	}
	return a->x / READ_ONCE(a->zero);
}

/*
 * A wait entry on this frame's stack, queued (as wait_event() does), then a
 * trap: the abort unwinds the frame while the kernel's queue holds the
 * stand-in, and its undo takes the stand-in off.
 */
static noinline long ST_FN(shadow)(struct st_args *a)
{
	struct wait_queue_entry e;

	st_wait_prepare(a->txn, &e);
	return a->x / READ_ONCE(a->zero);
}

static noinline long ST_FN(fault)(struct st_args *a)
{
	switch (a->kind) {
	case ST_NULL:
		return READ_ONCE(*a->null);
	case ST_GPF:
		return READ_ONCE(*(int *)a->noncanon);
	case ST_DIV:
		return a->x / READ_ONCE(a->zero);
	case ST_BUG:
		BUG();
	case ST_WILD:
		WRITE_ONCE(a->victim[3], 0x77);
		return 0;
	case ST_EXPLICIT: {
		/*
		 * Through a pointer the optimizer cannot see through: objtool
		 * cannot tell that a module's function does not return, and
		 * the call may end the function.
		 */
		void (*fail)(struct fgft_txn *txn,
			     enum fgft_cause cause) = fgft_txn_fail;

		OPTIMIZER_HIDE_VAR(fail);
		fail(a->txn, FGFT_CAUSE_EXPLICIT);
		return 0;
	}
	case ST_RELOCK:
		fgft_spin_lock(a->txn, a->lock);
		return 0;
	case ST_CALLBACK:
		/* Called unlocked: a sleep point releases the spin lock only. */
		fgft_sleep_point(a->txn);
		if (!a->mutex || !mutex_is_locked(a->mutex) ||
		    !spin_trylock(a->lock))
			return 1000;
		spin_unlock(a->lock);
		/*
		 * A kernel call that may call back into the driver: the main
		 * module's callback takes both locks itself.
		 */
		fgft_callback_point(a->txn);
		if (!mutex_trylock(a->mutex))
			return 1000;
		spin_lock(a->lock);
		spin_unlock(a->lock);
		mutex_unlock(a->mutex);
		return a->x / READ_ONCE(a->zero);
	case ST_SECTION:
		return ST_FN(section)(a);
	case ST_CALL_LOCK:
		return ST_FN(call_lock)(a);
	case ST_SHADOW:
		return ST_FN(shadow)(a);
	default:
		return 0;
	}
}

/*
 * A typical entry point: allocates, updates its object under a lock, then
 * ends as a->kind says (inside or after the critical section).
 */
long ST_FN(generic)(void *arg)
{
	struct st_args *a = arg;
	long ret = 42;

	a->obj = st_obj_alloc(a->txn);
	if (!a->obj)
		return -ENOMEM;
	if (a->mutex)
		fgft_mutex_lock(a->txn, a->mutex);
	fgft_spin_lock(a->txn, a->lock);
	memset(a->copy, 0x11, a->copy_len);
	a->copy[0] = (u8)a->kind;
	if (a->in_body)
		a->in_body(a);
	if (a->fault_in_lock)
		ret += ST_FN(fault)(a);
	fgft_spin_unlock(a->txn, a->lock);
	if (a->mutex)
		fgft_mutex_unlock(a->txn, a->mutex);
	if (!a->fault_in_lock)
		ret += ST_FN(fault)(a);
	return ret;
}

/* Only the fault (no allocation, no lock). */
long ST_FN(fault_only)(void *arg)
{
	struct st_args *a = arg;

	a->copy[2] = 3;
	return ST_FN(fault)(a);
}

/* A wild write inside an inlined kernel helper. */
long ST_FN(wild_list)(void *arg)
{
	struct st_args *a = arg;

	a->copy[1] = 1;
	list_add(a->node, a->foreign);
	return 0;
}

/* A bitop on a kernel object that was not granted: inline assembly. */
long ST_FN(wild_bitop)(void *arg)
{
	struct st_args *a = arg;

	a->copy[1] = 1;
	__set_bit(0, (unsigned long *)a->victim);
	return 0;
}

/*
 * Accesses at the end of a granted 64-byte buffer (a->out): the last 8
 * bytes, read and written (inside), then per a->kind 8 bytes of which the
 * last 4 lie past the grant: 1 read, 2 written, 0 none.
 */
long ST_FN(edge)(void *arg)
{
	struct st_args *a = arg;
	u8 *p = (u8 *)a->out;
	u64 v;

	v = READ_ONCE(*(u64 *)(p + 56));
	WRITE_ONCE(*(u64 *)(p + 56), v + 1);
	if (a->kind == 1)
		v += READ_ONCE(*(u64 *)(p + 60));
	else if (a->kind == 2)
		WRITE_ONCE(*(u64 *)(p + 60), v);
	return (long)v;
}

/*
 * A register read (a->kind 1) or write (2) at a->io + a->io_off, through
 * the accessors as the SFI module redefines them (compensations.toml
 * [inline] mmio_read, mmio_write), then the same register again: the
 * second access passes inline once the first has passed.  Kind 3: the
 * check a wrapper of an I/O-cookie accessor (iowrite32()) makes.  Kind 4:
 * a string port read (compensations.toml [inline] rep_in) into a buffer.
 */
long ST_FN(mmio)(void *arg)
{
	struct st_args *a = arg;
	void __iomem *r = a->io + a->io_off;
	long v = 0;

	if (a->kind == 1) {
		v = FGFT_MMIO_R(readl, 4, r);
		v += FGFT_MMIO_R(readl, 4, r);
	} else if (a->kind == 2) {
		FGFT_MMIO_W(writel, 4, 0x5a5a5a5a, r);
		FGFT_MMIO_W(writel, 4, 0x5a5a5a5a, r);
	} else if (a->kind == 3) {
		/* What a wrapper of iowrite32() checks before the call. */
		fgft_iomem_check(r);
	} else if (a->kind == 4) {
		/*
		 * Four bytes from port a->io_off (the POST diagnostic port,
		 * which has no side effect on a read) into a->rep_buf, or the
		 * object's copy the transaction granted.
		 */
		u8 *buf = a->rep_buf ? a->rep_buf : a->copy;

		FGFT_REP(insb, 1, FGFT_W, (int)a->io_off, buf, 4);
		v = buf[0] | 0x100;
	}
	return v;
}

/* A read of a kernel object that was not granted. */
long ST_FN(wild_read)(void *arg)
{
	struct st_args *a = arg;

	return READ_ONCE(a->victim[5]);
}

/*
 * Stores into an object used in place, through the memory intrinsics and
 * plainly, then a fault: the abort puts every byte back.
 */
long ST_FN(place_store)(void *arg)
{
	struct st_args *a = arg;
	u8 src[32];

	memset(src, 0x5a, sizeof(src));
	memcpy(a->place, src, sizeof(src));
	memset(a->place + 32, 0x77, 16);
	memmove(a->place + 48, a->place, 8);
	a->place[60] = 9;
	return ST_FN(fault)(a);
}

long ST_FN(sum)(void *arg)
{
	struct st_args *a = arg;
	u64 s = 0;
	size_t i;

	for (i = 0; i < a->n_in; i++)
		s += a->in[i] * (i + 1);
	*a->out = s;
	return 0;
}

/* Benchmark: stores that hit the last-hit window. */
long ST_FN(store_loop)(void *arg)
{
	struct st_args *a = arg;
	u64 *p = a->out;
	long i;

	for (i = 0; i < a->iters; i++)
		WRITE_ONCE(p[i & 7], i);
	return 0;
}

/* Benchmark: stores alternating between two grants (index lookups). */
long ST_FN(store_alt)(void *arg)
{
	struct st_args *a = arg;
	u64 *p = a->out, *q = a->alt;
	long i;

	for (i = 0; i < a->iters; i += 2) {
		WRITE_ONCE(p[i & 7], i);
		WRITE_ONCE(q[i & 7], i);
	}
	return 0;
}

long ST_FN(empty)(void *arg)
{
	return 0;
}

/*
 * Calls of kernel functions that SFI code makes directly (strnlen() behind
 * the fortified string helpers, the printk family, sprintf(), the list
 * checks of CONFIG_DEBUG_LIST, the bit searches): in st_sfi.o sfi-as.sh
 * sends them to the runtime's checked forms (src/direct.c).  a->kind is
 * an enum st_direct; a->in is a granted string, a->out 64 granted bytes
 * of a larger buffer, a->victim a kernel string that is not granted.
 */
long ST_FN(direct)(void *arg)
{
	struct st_args *a = arg;
	struct list_head *l = (struct list_head *)a->out;
	const char *wild = (const char *)a->noncanon;
	const char *in = (const char *)a->in;
	char *buf = (char *)a->out;
	int n = a->x;

	OPTIMIZER_HIDE_VAR(wild);
	OPTIMIZER_HIDE_VAR(in);
	OPTIMIZER_HIDE_VAR(buf);
	switch (a->kind) {
	case ST_D_STRNLEN:
		return strnlen(in, 16);
	case ST_D_STRNLEN_WILD:
		return strnlen(wild, 16);
	case ST_D_PRINTK_KMEM:
		return _printk(KERN_INFO "fgft-st: direct %s\n",
			       (const char *)a->victim);
	case ST_D_PRINTK_WILD:
		return _printk(KERN_INFO "fgft-st: direct %s\n", wild);
	case ST_D_SPRINTF:
		return sprintf(buf, "%s-%d", in, n);
	case ST_D_SNPRINTF_OVER:
		return snprintf(buf, 128, "%0*d", 100, n);
	case ST_D_LIST_OK:
	case ST_D_LIST_CORRUPT:
		INIT_LIST_HEAD(&l[0]);
		list_add(&l[1], &l[0]);
		if (a->kind == ST_D_LIST_CORRUPT)
			l[1].prev = &l[3];
		list_add(&l[2], &l[0]);
		return l[0].next == &l[2];
	case ST_D_BITS_WILD:
		return find_next_bit((const unsigned long *)wild, n * 64, 1);
	case ST_D_SSCANF_OVER:
		return sscanf("123456789012", "%s", buf + 60);
	}
	return -1;
}

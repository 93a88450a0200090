/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fgft self-test: what the test stubs (st_main.c) and the transaction
 * bodies (st_body.c, compiled three times: instrumented like an SFI module,
 * instrumented without read checks, and plain) share.
 */
#ifndef _FGFT_ST_H
#define _FGFT_ST_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/semaphore.h>
#include <linux/wait.h>
#include <fgft/runtime.h>

/* How a body ends. */
enum st_kind {
	ST_OK = 0,
	ST_NULL,	/* NULL dereference */
	ST_GPF,		/* non-canonical address: general protection */
	ST_DIV,		/* divide by zero */
	ST_BUG,		/* BUG() */
	ST_WILD,	/* write through a wild pointer */
	ST_EXPLICIT,	/* fgft_txn_fail() */
	ST_RELOCK,	/* takes a lock it already holds */
	ST_CALLBACK,	/* a kernel call back into the driver, then a trap */
	ST_SECTION,	/* a trap inside RCU and bottom-half sections */
	ST_CALL_LOCK,	/* a trap holding a semaphore taken through down() */
	ST_SHADOW,	/* a trap while a stack wait entry is queued */
	ST_KIND_NR,
};

/*
 * The direct calls of the "direct" scenario (st_body.c): kernel functions
 * SFI code calls without a wrapper, which sfi-as.sh sends to the runtime's
 * checked forms.
 */
enum st_direct {
	ST_D_STRNLEN,		/* of a granted string */
	ST_D_STRNLEN_WILD,	/* of a non-canonical pointer */
	ST_D_PRINTK_KMEM,	/* %s of kernel memory that is not granted */
	ST_D_PRINTK_WILD,	/* %s of a non-canonical pointer */
	ST_D_SPRINTF,		/* into a granted buffer */
	ST_D_SNPRINTF_OVER,	/* 101 bytes into a 64-byte grant */
	ST_D_LIST_OK,		/* list_add() on a sound list */
	ST_D_LIST_CORRUPT,	/* list_add() where next->prev is wrong */
	ST_D_BITS_WILD,		/* a bit search of a non-canonical bitmap */
	ST_D_SSCANF_OVER,	/* a %s of 13 bytes 4 before a grant's end */
	ST_D_NR,
};

struct st_args {
	struct fgft_txn *txn;
	int kind;
	bool fault_in_lock;	/* fault while the lock is held */
	int *null;		/* always NULL */
	unsigned long noncanon;	/* a non-canonical address */
	int zero;		/* always 0 */
	int x;
	u8 *copy;		/* granted RW: the SFI copy of the object */
	size_t copy_len;
	u8 *victim;		/* a kernel object that is not granted */
	struct list_head *foreign;	/* a list head that is not granted */
	struct list_head *node;		/* a list node inside the copy */
	spinlock_t *lock;
	struct mutex *mutex;
	struct semaphore *sem;
	const u64 *in;		/* granted R */
	size_t n_in;
	u64 *out;		/* granted RW */
	u64 *alt;		/* a second granted RW buffer */
	long iters;
	void *obj;		/* allocated in the body */
	unsigned int busy_cpu;	/* ctx test: wait for this flag */
	int *wait_flag;
	void (*in_body)(struct st_args *a);	/* hook run inside the body */
	u8 *place;		/* granted in place, stores logged (64 bytes) */
	void __iomem *io;	/* mmio: the register base */
	unsigned long io_off;	/* mmio: the register's offset (or port) */
	u8 *rep_buf;		/* mmio: a string port read's buffer (NULL: copy) */
};

/* Provided by st_main.c: allocation with its compensation (a wrapper). */
void *st_obj_alloc(struct fgft_txn *txn);
/*
 * Provided by st_main.c: down() and up() as the wrappers fgft-cc generates
 * for `lock = "call"` table entries.
 */
void st_down(struct fgft_txn *txn, struct semaphore *sem);
void st_up(struct fgft_txn *txn, struct semaphore *sem);
/*
 * Provided by st_main.c: prepare_to_wait_event() as the wrapper fgft-cc
 * generates (a stand-in for the stack's entry, finish_wait() on abort) on
 * st_main.c's wait queue.
 */
void st_wait_prepare(struct fgft_txn *txn, struct wait_queue_entry *e);

#define ST_BODY_DECL(p)						\
	long p##_generic(void *arg);					\
	long p##_fault_only(void *arg);				\
	long p##_wild_list(void *arg);					\
	long p##_wild_read(void *arg);					\
	long p##_edge(void *arg);					\
	long p##_place_store(void *arg);				\
	long p##_wild_bitop(void *arg);				\
	long p##_mmio(void *arg);					\
	long p##_sum(void *arg);					\
	long p##_store_loop(void *arg);				\
	long p##_store_alt(void *arg);					\
	long p##_empty(void *arg);					\
	long p##_direct(void *arg)

ST_BODY_DECL(st_sfi);
ST_BODY_DECL(st_noreads);
ST_BODY_DECL(st_call);
ST_BODY_DECL(st_plain);

#endif /* _FGFT_ST_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * Access checks: fgft_check(), the compiler-sanitizer call-backs that SFI
 * modules are built against, and the global ranges (a module's own data).
 *
 * Order of a check, cheapest first: the transaction's last-hit window, the
 * body's stack, the transaction's range table, the global ranges.
 */
#define pr_fmt(fmt) "fgft: " fmt

#include <linux/module.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/list.h>
#include <linux/uaccess.h>
#include <linux/sched.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <asm/pgtable.h>

#include "fgft_internal.h"
#include "fgft_asan.h"

bool fgft_check_reads = true;
module_param_named(check_reads, fgft_check_reads, bool, 0644);
MODULE_PARM_DESC(check_reads, "Check loads as well as stores (default 1)");

static bool log_refusals = true;
module_param(log_refusals, bool, 0644);
MODULE_PARM_DESC(log_refusals, "Log refused accesses (rate limited, default 1)");

/* Offsets the inlined checks of include/fgft/sfi-as.sh use. */
static_assert(offsetof(struct fgft_pcwin, r[0].start) == 0);
static_assert(offsetof(struct fgft_pcwin, r[0].span1) == 8);
static_assert(offsetof(struct fgft_pcwin, r[0].lim8) == 16);
static_assert(offsetof(struct fgft_pcwin, r[3].start) == 72);
static_assert(offsetof(struct fgft_pcwin, w[0].start) == 96);
static_assert(offsetof(struct fgft_pcwin, w[1].lim8) == 136);
static_assert(offsetof(struct fgft_pcwin, stack_hi) == 144);
static_assert(offsetof(struct fgft_pcwin, sites) == 168);
static_assert(sizeof(struct fgft_site) == 16);
/* fgft_mmio_check(): no masked address equals an empty MMIO page. */
static_assert((FGFT_IO_EMPTY & ~(PAGE_MASK | 7)) != 0);

DEFINE_PER_CPU_ALIGNED(struct fgft_pcwin, fgft_win) = FGFT_PCWIN_EMPTY;
EXPORT_PER_CPU_SYMBOL_GPL(fgft_win);
struct fgft_sitetab __percpu *fgft_sitetab;

/* ---- global ranges ---- */

static struct fgft_rtab fgft_global;
static DEFINE_RWLOCK(fgft_global_lock);
static atomic_t fgft_global_n = ATOMIC_INIT(0);

/*
 * Whether a global grant allows the access; @sp is set to the grant that
 * does (empty when several do together).
 */
static bool global_allows(unsigned long addr, size_t len, unsigned int rights,
			  struct fgft_span *sp)
{
	unsigned long flags;
	int id;

	sp->start = ~0UL;
	sp->end = 0;
	if (!atomic_read(&fgft_global_n))
		return false;
	read_lock_irqsave(&fgft_global_lock, flags);
	id = fgft_rtab_check_slow(&fgft_global, addr, len, rights);
	if (id >= 0 && id != FGFT_RTAB_PIECEWISE) {
		sp->start = fgft_global.g[id].start;
		sp->end = fgft_global.g[id].end;
	}
	read_unlock_irqrestore(&fgft_global_lock, flags);
	return id >= 0;
}

int fgft_global_map(const void *addr, size_t len, unsigned int rights)
{
	unsigned long flags;
	int id;

	write_lock_irqsave(&fgft_global_lock, flags);
	id = fgft_rtab_map(&fgft_global, (uintptr_t)addr, len, rights);
	/* Readers under the read lock find it settled. */
	fgft_rtab_settle(&fgft_global);
	if (id >= 0)
		atomic_inc(&fgft_global_n);
	write_unlock_irqrestore(&fgft_global_lock, flags);
	return id < 0 ? id : 0;
}
EXPORT_SYMBOL_GPL(fgft_global_map);

void fgft_global_unmap(const void *addr)
{
	unsigned long flags;
	int n;

	write_lock_irqsave(&fgft_global_lock, flags);
	n = fgft_rtab_unmap(&fgft_global, (uintptr_t)addr, UINT_MAX);
	if (n > 0)
		atomic_sub(n, &fgft_global_n);
	write_unlock_irqrestore(&fgft_global_lock, flags);
}
EXPORT_SYMBOL_GPL(fgft_global_unmap);

/* Modules whose data was granted with fgft_map_module(). */
#define FGFT_MOD_RANGES	3

struct fgft_modmap {
	struct list_head node;
	struct module *mod;
	unsigned long start[FGFT_MOD_RANGES];
};

static LIST_HEAD(fgft_modmaps);
static DEFINE_MUTEX(fgft_modmaps_lock);

static int modmap_add(struct fgft_modmap *m, int i, void *base,
		      unsigned long size, unsigned int rights)
{
	int err;

	if (!base || !size)
		return 0;
	err = fgft_global_map(base, size, rights);
	if (!err)
		m->start[i] = (unsigned long)base;
	return err;
}

static void modmap_drop(struct fgft_modmap *m)
{
	int i;

	for (i = 0; i < FGFT_MOD_RANGES; i++)
		if (m->start[i])
			fgft_global_unmap((void *)m->start[i]);
	list_del(&m->node);
	kfree(m);
}

int fgft_map_module(struct module *mod)
{
	struct fgft_modmap *m;
	int err = 0;

	if (!mod)
		return -EINVAL;
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->mod = mod;
#ifdef for_each_mod_mem_type	/* 6.4 and later: struct module_memory */
	err = modmap_add(m, 0, mod->mem[MOD_DATA].base, mod->mem[MOD_DATA].size,
			 FGFT_RW);
	if (!err)
		err = modmap_add(m, 1, mod->mem[MOD_RODATA].base,
				 mod->mem[MOD_RODATA].size, FGFT_R);
	if (!err)
		err = modmap_add(m, 2, mod->mem[MOD_RO_AFTER_INIT].base,
				 mod->mem[MOD_RO_AFTER_INIT].size, FGFT_R);
#else
	{
		char *base = mod->core_layout.base;
		unsigned long text = mod->core_layout.text_size;
		unsigned long ro = mod->core_layout.ro_size;
		unsigned long roai = mod->core_layout.ro_after_init_size;
		unsigned long size = mod->core_layout.size;

		err = modmap_add(m, 0, base + roai, size - roai, FGFT_RW);
		if (!err)
			err = modmap_add(m, 1, base + text, ro - text, FGFT_R);
		if (!err)
			err = modmap_add(m, 2, base + ro, roai - ro, FGFT_R);
	}
#endif
	mutex_lock(&fgft_modmaps_lock);
	list_add(&m->node, &fgft_modmaps);
	if (err)
		modmap_drop(m);
	mutex_unlock(&fgft_modmaps_lock);
	return err;
}
EXPORT_SYMBOL_GPL(fgft_map_module);

void fgft_unmap_module(struct module *mod)
{
	struct fgft_modmap *m, *n;

	mutex_lock(&fgft_modmaps_lock);
	list_for_each_entry_safe(m, n, &fgft_modmaps, node)
		if (m->mod == mod)
			modmap_drop(m);
	mutex_unlock(&fgft_modmaps_lock);
}
EXPORT_SYMBOL_GPL(fgft_unmap_module);

static int fgft_module_event(struct notifier_block *nb, unsigned long action,
			     void *data)
{
	if (action == MODULE_STATE_GOING)
		fgft_unmap_module(data);
	return NOTIFY_DONE;
}

static struct notifier_block fgft_module_nb = {
	.notifier_call = fgft_module_event,
};

int fgft_check_init(void)
{
	int cpu, err;

	fgft_sitetab = alloc_percpu(struct fgft_sitetab);
	if (!fgft_sitetab)
		return -ENOMEM;
	for_each_possible_cpu(cpu)
		per_cpu(fgft_win, cpu).sites = per_cpu_ptr(fgft_sitetab, cpu)->s;
	fgft_rtab_init(&fgft_global);
	err = register_module_notifier(&fgft_module_nb);
	if (err) {
		fgft_rtab_destroy(&fgft_global);
		free_percpu(fgft_sitetab);
		fgft_sitetab = NULL;
	}
	return err;
}

void fgft_check_exit(void)
{
	struct fgft_modmap *m, *n;

	unregister_module_notifier(&fgft_module_nb);
	mutex_lock(&fgft_modmaps_lock);
	list_for_each_entry_safe(m, n, &fgft_modmaps, node)
		modmap_drop(m);
	mutex_unlock(&fgft_modmaps_lock);
	fgft_rtab_destroy(&fgft_global);
	atomic_set(&fgft_global_n, 0);
	free_percpu(fgft_sitetab);
	fgft_sitetab = NULL;
}

/* ---- checks ---- */

/*
 * fgft_allows() past the windows: @tried says the caller found the access
 * in none of the table's windows and not on the body's stack.
 */
static bool allows(struct fgft_txn *t, unsigned long addr, size_t len,
		   unsigned int rights, bool tried)
{
	struct fgft_span gs;

	if (tried) {
		if (fgft_rtab_check_index(&t->rtab, addr, len, rights))
			return true;
	} else if (fgft_rtab_hit(&t->rtab, addr, len, rights) ||
		   fgft_on_stack(t, addr, len) ||
		   fgft_rtab_check(&t->rtab, addr, len, rights)) {
		return true;
	}
	/*
	 * The kernel's inline helpers read the running task: on PREEMPT_RT
	 * netdev_xmit_more() is current->net_xmit.more.  Reads only.
	 */
	if (!(rights & FGFT_W) && addr >= (unsigned long)current &&
	    addr + len <= (unsigned long)current + sizeof(struct task_struct)) {
		t->ev[FGFT_EV_GLOBAL]++;
		return true;
	}
	if (global_allows(addr, len, rights, &gs)) {
		t->ev[FGFT_EV_GLOBAL]++;
		/*
		 * The next loads there are checked inline: a global grant
		 * holds for every body (a driver's read-only globals, the
		 * kernel variables its code reads).
		 */
		if (!(rights & FGFT_W) && gs.end > gs.start &&
		    t == this_cpu_read(fgft_hit)) {
			fgft_win_begin();
			fgft_win_push(r, FGFT_WIN_R, gs.start, gs.end - gs.start);
			fgft_win_end();
		}
		return true;
	}
	/* An object of the driver's own heap, for a body that works in place. */
	if (t->logging && t->ep && t->ep->heap &&
	    fgft_heap_allows(t, t->ep->heap, addr, len, rights)) {
		t->ev[FGFT_EV_HEAP]++;
		return true;
	}
	return false;
}

bool fgft_allows(struct fgft_txn *t, unsigned long addr, size_t len,
		 unsigned int rights)
{
	return allows(t, addr, len, rights, false);
}

void fgft_note_refusal(struct fgft_txn *t, unsigned long addr, size_t len,
		       unsigned int rights, unsigned long ip)
{
	atomic64_inc(&fgft_gstats.refusals);
	t->fault_addr = addr;
	t->fault_len = len;
	t->fault_rights = rights;
	t->fault_ip = ip;
	if (READ_ONCE(log_refusals))
		pr_info_ratelimited("%s: refused %s of %zu bytes at %p from %pS\n",
				    t->ep && t->ep->name ? t->ep->name : "txn",
				    rights & FGFT_W ? "write" : "read", len,
				    (void *)addr, (void *)ip);
}

bool fgft_check(const void *addr, size_t len, unsigned int rights)
{
	struct fgft_txn *t = fgft_active();

	return !t || fgft_allows(t, (unsigned long)addr, len, rights);
}
EXPORT_SYMBOL_GPL(fgft_check);

/*
 * Appends the old bytes at [addr, addr + len) to @t's write log (a body's
 * checked store, or memory a wrapped kernel call is handed to write), unless
 * they are on the body's stack.  Without memory for the log the store must
 * not happen: the transaction aborts.
 */
notrace void fgft_log_store(struct fgft_txn *t, unsigned long addr, size_t len)
{
	if (fgft_on_stack(t, addr, len))
		return;
	while (len) {
		size_t n = min_t(size_t, len, FGFT_WREC_BYTES);
		struct fgft_wrec *r;

		if (t->wlog.n == t->wlog.cap) {
			u32 ncap = t->wlog.cap ? t->wlog.cap * 2 : 64;

			r = fgft_mem_realloc(t->wlog.r, ncap * sizeof(*r));
			if (!r) {
				fgft_note_refusal(t, addr, len, FGFT_W, _RET_IP_);
				fgft_fail_active(t, FGFT_CAUSE_EXPLICIT);
				return;
			}
			t->wlog.r = r;
			t->wlog.cap = ncap;
		}
		r = &t->wlog.r[t->wlog.n];
		/* Granted: an object of the kernel's, or a copy, both mapped. */
		memcpy(r->old, (const void *)addr, n);
		r->addr = addr;
		r->len = n;
		t->wlog.n++;
		t->ev[FGFT_EV_LOGGED]++;
		addr += n;
		len -= n;
	}
}

void fgft_check_or_fail(const void *addr, size_t len, unsigned int rights)
{
	struct fgft_txn *t = fgft_active();

	if (!t)
		return;
	if (fgft_allows(t, (unsigned long)addr, len, rights)) {
		/* A kernel call about to write memory used in place. */
		if ((rights & FGFT_W) && t->logging &&
		    !(fgft_rtab_hit(&t->rtab, (unsigned long)addr, len, rights) &&
		      (t->rtab.hit.rights & FGFT_NOLOG)))
			fgft_log_store(t, (unsigned long)addr, len);
		/*
		 * The grant that allowed it goes into the inline windows, as
		 * for a check of the body's own: the wrappers test those
		 * first, and the next call with the same object passes there.
		 */
		else if (t == this_cpu_read(fgft_hit) &&
			 fgft_rtab_hit(&t->rtab, (unsigned long)addr, len, rights))
			fgft_win_load(t);
		return;
	}
	fgft_note_refusal(t, (unsigned long)addr, len, rights, _RET_IP_);
	fgft_fail_active(t, FGFT_CAUSE_RANGE);
}
EXPORT_SYMBOL_GPL(fgft_check_or_fail);

/* ---- MMIO accessors of SFI code ---- */

/*
 * Whether @a is mapped in the vmalloc area to a frame that is no RAM: no
 * struct page, or a reserved one (a hole).  page_is_ram() would take the
 * resource lock, which an interrupt's body may find held for writing on
 * its own cpu; this test takes no lock.
 */
static bool fgft_mmio_page_ok(unsigned long a)
{
	unsigned long pfn;
	unsigned int level;
	pte_t *pte;

	if (!is_vmalloc_addr((void *)a))
		return false;
	pte = lookup_address(a, &level);
	if (!pte || !pte_present(*pte))
		return false;
	switch (level) {
	case PG_LEVEL_4K:
		pfn = pte_pfn(*pte);
		break;
	case PG_LEVEL_2M:
		pfn = pmd_pfn(*(pmd_t *)pte) + ((a & ~PMD_MASK) >> PAGE_SHIFT);
		break;
	case PG_LEVEL_1G:
		pfn = pud_pfn(*(pud_t *)pte) + ((a & ~PUD_MASK) >> PAGE_SHIFT);
		break;
	default:
		return false;
	}
	return !pfn_valid(pfn) || PageReserved(pfn_to_page(pfn));
}

bool fgft_mmio_ok(unsigned long addr, unsigned long len)
{
	unsigned long last = addr + len - 1, page = addr & PAGE_MASK;
	bool one_page = (last ^ addr) < PAGE_SIZE;

	if (!len || last < addr)
		return false;
	if (one_page && (page == this_cpu_read(fgft_win.io[0]) ||
			 page == this_cpu_read(fgft_win.io[1])))
		return true;
	if (!fgft_mmio_page_ok(addr) ||
	    (!one_page && !fgft_mmio_page_ok(last)))
		return false;
	/*
	 * An access inside the page passes inline next time (the inline check
	 * takes aligned ones only).  One value per word, so no pair of writes
	 * can be torn by an interrupt or a move to another cpu.
	 */
	if (one_page) {
		this_cpu_write(fgft_win.io[1], this_cpu_read(fgft_win.io[0]));
		this_cpu_write(fgft_win.io[0], page);
	}
	return true;
}

void fgft_mmio_miss(unsigned long addr, unsigned long len,
		    unsigned int rights)
{
	struct fgft_txn *t = fgft_active();

	if (!t || fgft_mmio_ok(addr, len))
		return;
	/* The report names the accessor's caller in SFI code. */
	fgft_note_refusal(t, addr, len, rights, _RET_IP_);
	fgft_fail_active(t, FGFT_CAUSE_RANGE);
}
EXPORT_SYMBOL_GPL(fgft_mmio_miss);

/* ---- sanitizer call-backs ---- */

static noinline void fgft_asan_slow(struct fgft_txn *t, unsigned long addr,
				    size_t size, unsigned int rights,
				    unsigned long ip, bool tried)
{
	t->ev[FGFT_EV_SLOW]++;
	if (allows(t, addr, size, rights, tried))
		return;
	/*
	 * A %gs-relative load of a per-CPU variable (netdev_xmit_more(),
	 * this_cpu_read()) reaches the check as the variable's offset: an
	 * address in the user half.  Loads from there are let through: a
	 * plain load of such an address is no kernel memory, and faults
	 * (recovered as a fault) or reads user memory.  Stores are checked,
	 * and so are loads from the first page: only the stack canary's
	 * fixed_percpu_data lives there, which no driver code reads, and a
	 * member of a NULL pointer does.
	 */
	if (!(rights & FGFT_W) && addr >= PAGE_SIZE &&
	    addr + size <= TASK_SIZE_MAX && addr + size >= addr)
		return;
	fgft_note_refusal(t, addr, size, rights, ip);
	fgft_fail_active(t, FGFT_CAUSE_RANGE);
}

/*
 * The call-backs may be reached with user access enabled (instrumented
 * code between user_access_begin() and user_access_end()): objtool allows
 * them there, so they are notrace, and everything that is not inline runs
 * with user access switched off.  A refused access never comes back.
 */
static __always_inline void fgft_asan_ua(unsigned long addr, size_t size,
					 unsigned int rights, unsigned long ip,
					 bool uaccess, bool log, long site)
{
	struct fgft_txn *t;
	unsigned long ua = 0;
	bool tried = false;

	t = this_cpu_read(fgft_hit);
	if (likely(t && READ_ONCE(t->task) == current &&
		   READ_ONCE(t->active) && t->ctx == fgft_ctx())) {
		t->ev[FGFT_EV_CHECK]++;
		if (likely(fgft_rtab_hit(&t->rtab, addr, size, rights) ||
			   fgft_rtab_hit_victim(&t->rtab, addr, size, rights))) {
			if (unlikely(t->logging) && log && (rights & FGFT_W) &&
			    !(t->rtab.hit.rights & FGFT_NOLOG)) {
				if (uaccess)
					ua = user_access_save();
				fgft_log_store(t, addr, size);
				if (uaccess)
					user_access_restore(ua);
			}
			/* The next accesses there are checked inline. */
			if (uaccess)
				ua = user_access_save();
			fgft_win_load_site(t, site, addr);
			if (uaccess)
				user_access_restore(ua);
			return;
		}
		if (fgft_on_stack(t, addr, size))
			return;
		tried = true;
	} else if (likely(fgft_none_open())) {
		return;
	}
	if (uaccess)
		ua = user_access_save();
	t = fgft_active();
	if (t) {
		if (t != this_cpu_read(fgft_hit))
			t->ev[FGFT_EV_CHECK]++;
		fgft_asan_slow(t, addr, size, rights, ip,
			       tried && t == this_cpu_read(fgft_hit));
		/* The check left the grant that allows it in the window. */
		if (t->logging && log && (rights & FGFT_W) &&
		    !(fgft_rtab_hit(&t->rtab, addr, size, rights) &&
		      (t->rtab.hit.rights & FGFT_NOLOG)))
			fgft_log_store(t, addr, size);
		if (t == this_cpu_read(fgft_hit))
			fgft_win_load_site(t, site, addr);
		else if (site >= 0)
			fgft_site_fill(t, site, addr);
	}
	if (uaccess)
		user_access_restore(ua);
}

/* A sanitizer call-back: possibly with user access on. */
static __always_inline void fgft_asan(unsigned long addr, size_t size,
				      unsigned int rights, unsigned long ip)
{
	fgft_asan_ua(addr, size, rights, ip, true, true, -1);
}

#ifdef FGFT_NO_READ_CHECKS
#define fgft_reads_on()	false
#else
#define fgft_reads_on()	READ_ONCE(fgft_check_reads)
#endif

/*
 * A load check of up to 8 bytes that missed its site cache and the
 * windows (include/fgft/sfi-as.sh): @site is the site's number.  A caller
 * that passes none (the second argument register holds anything) at worst
 * fills some other site's cache, with a range the body may read.
 */
#define FGFT_ASAN_LOAD_SITE(n)						\
notrace void __asan_load##n##_noabort(unsigned long addr,		\
				      unsigned long site)		\
{									\
	if (fgft_reads_on())						\
		fgft_asan_ua(addr, n, FGFT_R, _RET_IP_, true, true,	\
			     site & (FGFT_SITES - 1));			\
}									\
EXPORT_SYMBOL(__asan_load##n##_noabort)

#define FGFT_ASAN_STORE(n)						\
notrace void __asan_store##n##_noabort(unsigned long addr)		\
{									\
	fgft_asan(addr, n, FGFT_W, _RET_IP_);				\
}									\
EXPORT_SYMBOL(__asan_store##n##_noabort)

FGFT_ASAN_LOAD_SITE(1);
FGFT_ASAN_LOAD_SITE(2);
FGFT_ASAN_LOAD_SITE(4);
FGFT_ASAN_LOAD_SITE(8);
FGFT_ASAN_STORE(1);
FGFT_ASAN_STORE(2);
FGFT_ASAN_STORE(4);
FGFT_ASAN_STORE(8);
FGFT_ASAN_STORE(16);

notrace void __asan_load16_noabort(unsigned long addr)
{
	if (fgft_reads_on())
		fgft_asan(addr, 16, FGFT_R, _RET_IP_);
}
EXPORT_SYMBOL(__asan_load16_noabort);

notrace void __asan_loadN_noabort(unsigned long addr, size_t size)
{
	if (fgft_reads_on())
		fgft_asan(addr, size, FGFT_R, _RET_IP_);
}
EXPORT_SYMBOL(__asan_loadN_noabort);

notrace void __asan_storeN_noabort(unsigned long addr, size_t size)
{
	fgft_asan(addr, size, FGFT_W, _RET_IP_);
}
EXPORT_SYMBOL(__asan_storeN_noabort);

/*
 * The accesses of the kernel's inline bitops and atomics in SFI code, as
 * linux/instrumented.h announces them (include/fgft/sfi-bitops.h routes
 * its kcsan_check_access() here): range-checked, never logged.  The
 * bitops whose effect an abort must undo (an allocation bitmap's
 * __test_and_set_bit_le()) are wrapped kernel calls with their own undo in
 * compensations.toml; an atomic word may be changed concurrently by code
 * that is not the body's (a buffer's b_state by I/O completion), so
 * putting its old value back could lose that change.  An ordinary call
 * (objtool names a caller that makes it with user access enabled).
 */
notrace void fgft_kcsan_check(unsigned long addr, size_t size, int type)
{
	if (!(type & KCSAN_ACCESS_WRITE)) {
		if (fgft_reads_on())
			fgft_asan_ua(addr, size, FGFT_R, _RET_IP_, false, false, -1);
		return;
	}
	fgft_asan_ua(addr, size, FGFT_W, _RET_IP_, false, false, -1);
}
EXPORT_SYMBOL_GPL(fgft_kcsan_check);

/* Called before noreturn calls; nothing to unpoison without shadow memory. */
void __asan_handle_no_return(void)
{
}
EXPORT_SYMBOL(__asan_handle_no_return);

/* Stack and global instrumentation is off (asan-stack=0, asan-globals=0). */
void __asan_alloca_poison(unsigned long addr, size_t size)
{
}
EXPORT_SYMBOL(__asan_alloca_poison);

void __asan_allocas_unpoison(void *stack_top, void *stack_bottom)
{
}
EXPORT_SYMBOL(__asan_allocas_unpoison);

void __asan_register_globals(void *globals, size_t n)
{
}
EXPORT_SYMBOL(__asan_register_globals);

void __asan_unregister_globals(void *globals, size_t n)
{
}
EXPORT_SYMBOL(__asan_unregister_globals);

/*
 * Memory intrinsics.  gcc 12 calls __asan_mem*() for the builtins; the 6.12
 * fortify headers rename memcpy/memset/memmove to __hwasan_mem*() in
 * instrumented units of a kernel built without KASAN.  Both check the whole
 * ranges first, as one access each: the windows, the body's stack, the
 * range table; and a store into memory used in place is logged like any
 * other (a directory entry memcpy'd into a buffer an abort puts back).
 */
static __always_inline void fgft_asan_range(const void *p, size_t len,
					    unsigned int rights,
					    unsigned long ip)
{
	if (!len || (rights == FGFT_R && !fgft_reads_on()))
		return;
	/* An ordinary call: user access is off. */
	fgft_asan_ua((unsigned long)p, len, rights, ip, false, true, -1);
}

void *__asan_memcpy(void *dst, const void *src, size_t len)
{
	fgft_asan_range(src, len, FGFT_R, _RET_IP_);
	fgft_asan_range(dst, len, FGFT_W, _RET_IP_);
	return memcpy(dst, src, len);
}
EXPORT_SYMBOL(__asan_memcpy);

void *__asan_memmove(void *dst, const void *src, size_t len)
{
	fgft_asan_range(src, len, FGFT_R, _RET_IP_);
	fgft_asan_range(dst, len, FGFT_W, _RET_IP_);
	return memmove(dst, src, len);
}
EXPORT_SYMBOL(__asan_memmove);

void *__asan_memset(void *dst, int c, size_t len)
{
	fgft_asan_range(dst, len, FGFT_W, _RET_IP_);
	return memset(dst, c, len);
}
EXPORT_SYMBOL(__asan_memset);

void *__hwasan_memcpy(void *dst, const void *src, size_t len)
{
	fgft_asan_range(src, len, FGFT_R, _RET_IP_);
	fgft_asan_range(dst, len, FGFT_W, _RET_IP_);
	return memcpy(dst, src, len);
}
EXPORT_SYMBOL(__hwasan_memcpy);

void *__hwasan_memmove(void *dst, const void *src, size_t len)
{
	fgft_asan_range(src, len, FGFT_R, _RET_IP_);
	fgft_asan_range(dst, len, FGFT_W, _RET_IP_);
	return memmove(dst, src, len);
}
EXPORT_SYMBOL(__hwasan_memmove);

void *__hwasan_memset(void *dst, int c, size_t len)
{
	fgft_asan_range(dst, len, FGFT_W, _RET_IP_);
	return memset(dst, c, len);
}
EXPORT_SYMBOL(__hwasan_memset);

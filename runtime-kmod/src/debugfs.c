// SPDX-License-Identifier: GPL-2.0
/*
 * Entry registration and /sys/kernel/debug/fgft/:
 *   stats            counts of transactions, commits, aborts by cause, ...
 *   recovery_hist    recovery time (fault to end of abort) histogram, ns
 *   reset            write anything: zero the counters
 *   entries/NAME/isolate   1: run NAME as a transaction, 0: call it plainly
 *   entries/NAME/stats     the entry's own counts
 *   entries/NAME/stages    cycles per transaction stage (--stage-times
 *                          stubs), and per call with isolation off
 */
#define pr_fmt(fmt) "fgft: " fmt

#include <linux/module.h>
#include <linux/debugfs.h>
#include <linux/dcache.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <asm/tsc.h>

#include "fgft_internal.h"

static const char *const fgft_cause_names[FGFT_CAUSE_NR] = {
	[FGFT_CAUSE_NONE] = "caller",
	[FGFT_CAUSE_OOPS] = "oops",
	[FGFT_CAUSE_GPF] = "gpf",
	[FGFT_CAUSE_TRAP] = "trap",
	[FGFT_CAUSE_RANGE] = "range",
	[FGFT_CAUSE_EXPLICIT] = "explicit",
	[FGFT_CAUSE_LOCK] = "lock",
	[FGFT_CAUSE_ICALL] = "icall",
	[FGFT_CAUSE_STACK] = "stack",
	[FGFT_CAUSE_RET] = "ret",
	[FGFT_CAUSE_ASSERT] = "assert",
};

static struct dentry *fgft_dir;
static struct dentry *fgft_entries_dir;
static LIST_HEAD(fgft_entries);
static DEFINE_MUTEX(fgft_entries_lock);

static int stats_show(struct seq_file *m, void *v)
{
	struct fgft_stats st;
	u64 aborts = 0;
	int i;

	fgft_stats_read(&st);
	for (i = 0; i < FGFT_CAUSE_NR; i++)
		aborts += st.aborts[i];
	seq_printf(m, "txns %llu\n", st.txns);
	seq_printf(m, "commits %llu\n", st.commits);
	seq_printf(m, "aborts %llu\n", aborts);
	for (i = 0; i < FGFT_CAUSE_NR; i++)
		seq_printf(m, "aborts_%s %llu\n", fgft_cause_names[i],
			   st.aborts[i]);
	seq_printf(m, "recoveries %llu\n", st.recoveries);
	seq_printf(m, "recovery_ns_sum %llu\n", st.recovery_ns_sum);
	seq_printf(m, "recovery_ns_max %llu\n", st.recovery_ns_max);
	seq_printf(m, "refusals %llu\n", st.refusals);
	seq_printf(m, "residue_fixups %llu\n", st.residue_fixups);
	seq_printf(m, "missing_unlocks %llu\n", st.missing_unlocks);
	seq_printf(m, "restores %llu\n", st.restores);
	seq_printf(m, "restores_skipped %llu\n", st.restores_skipped);
	seq_printf(m, "retries %llu\n", st.retries);
	seq_printf(m, "retried %llu\n", st.retried);
	seq_printf(m, "retry_ns_sum %llu\n", st.retry_ns_sum);
	seq_printf(m, "retry_ns_max %llu\n", st.retry_ns_max);
	seq_printf(m, "begin_disabled %llu\n",
		   (u64)atomic64_read(&fgft_gstats.begin_disabled));
	seq_printf(m, "begin_errors %llu\n",
		   (u64)atomic64_read(&fgft_gstats.begin_errors));
	seq_printf(m, "open %d\n", st.open);
	seq_printf(m, "pool %d\n", st.pool);
	seq_printf(m, "mem_live %ld\n", st.mem_live);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(stats);

static int hist_show(struct seq_file *m, void *v)
{
	int i;

	seq_puts(m, "# lo_ns hi_ns count\n");
	for (i = 0; i < FGFT_HIST_BUCKETS; i++) {
		u64 lo = i ? 1ULL << (i + 7) : 0;
		u64 hi = 1ULL << (i + 8);

		seq_printf(m, "%llu %llu %llu\n", lo, hi,
			   (u64)atomic64_read(&fgft_gstats.rec_hist[i]));
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(hist);

static const char *const fgft_stage_names[FGFT_ST_NR] = {
	[FGFT_ST_BEGIN] = "begin",
	[FGFT_ST_GRANT] = "grant",
	[FGFT_ST_COPY_IN] = "copy_in",
	[FGFT_ST_BODY] = "body",
	[FGFT_ST_COPY_OUT] = "copy_out",
	[FGFT_ST_COMMIT] = "commit",
};

static const char *const fgft_event_names[FGFT_EV_NR] = {
	[FGFT_EV_CHECK] = "ev_checks",
	[FGFT_EV_SLOW] = "ev_slow",
	[FGFT_EV_GLOBAL] = "ev_global",
	[FGFT_EV_HEAP] = "ev_heap",
	[FGFT_EV_LOGGED] = "ev_logged",
	[FGFT_EV_GRANTS] = "ev_grants",
	[FGFT_EV_COPIES] = "ev_copies",
};

void fgft_stage_add(struct fgft_entry *ep, const u64 *ts)
{
	struct fgft_stage_sums *s;
	int i;

	if (!ep || !ep->rt || !ep->rt->stages)
		return;
	if (unlikely(!READ_ONCE(ep->rt->stamped)))
		WRITE_ONCE(ep->rt->stamped, true);
	s = get_cpu_ptr(ep->rt->stages);
	s->txns++;
	for (i = 0; i < FGFT_ST_NR; i++)
		s->cycles[i] += ts[i + 1] - ts[i];
	put_cpu_ptr(ep->rt->stages);
}
EXPORT_SYMBOL_GPL(fgft_stage_add);

/* Adds what @t did to its entry point's sums (stage-stamped builds). */
void fgft_stage_events(struct fgft_entry_rt *rt, struct fgft_txn *t)
{
	struct fgft_stage_sums *s = get_cpu_ptr(rt->stages);
	int i;

	t->ev[FGFT_EV_GRANTS] = t->rtab.nlive;
	t->ev[FGFT_EV_COPIES] = t->objs.n;
	for (i = 0; i < FGFT_EV_NR; i++)
		s->ev[i] += t->ev[i];
	put_cpu_ptr(rt->stages);
}

void fgft_stage_plain(struct fgft_entry *ep, u64 t0)
{
	u64 t1 = fgft_stamp();
	struct fgft_stage_sums *s;

	if (!ep || !ep->rt || !ep->rt->stages)
		return;
	s = get_cpu_ptr(ep->rt->stages);
	s->plain++;
	s->plain_cycles += t1 - t0;
	put_cpu_ptr(ep->rt->stages);
}
EXPORT_SYMBOL_GPL(fgft_stage_plain);

/* The sums over every cpu (readers race with writers: benchmarks only). */
static void stage_sum(struct fgft_entry_rt *rt, struct fgft_stage_sums *t)
{
	int cpu, i;

	memset(t, 0, sizeof(*t));
	if (!rt->stages)
		return;
	for_each_possible_cpu(cpu) {
		const struct fgft_stage_sums *s = per_cpu_ptr(rt->stages, cpu);

		t->txns += s->txns;
		for (i = 0; i < FGFT_ST_NR; i++)
			t->cycles[i] += s->cycles[i];
		for (i = 0; i < FGFT_EV_NR; i++)
			t->ev[i] += s->ev[i];
		t->plain += s->plain;
		t->plain_cycles += s->plain_cycles;
	}
}

static int entry_stages_show(struct seq_file *m, void *v)
{
	struct fgft_entry_rt *rt = m->private;
	struct fgft_stage_sums t;
	int i;

	stage_sum(rt, &t);
	seq_printf(m, "tsc_khz %u\n", tsc_khz);
	seq_printf(m, "txns %llu\n", t.txns);
	for (i = 0; i < FGFT_ST_NR; i++)
		seq_printf(m, "%s %llu\n", fgft_stage_names[i], t.cycles[i]);
	for (i = 0; i < FGFT_EV_NR; i++)
		seq_printf(m, "%s %llu\n", fgft_event_names[i], t.ev[i]);
	seq_printf(m, "plain %llu\n", t.plain);
	seq_printf(m, "plain_cycles %llu\n", t.plain_cycles);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(entry_stages);

static void stage_reset(struct fgft_entry_rt *rt)
{
	int cpu;

	if (!rt->stages)
		return;
	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(rt->stages, cpu), 0,
		       sizeof(struct fgft_stage_sums));
}

static ssize_t reset_write(struct file *file, const char __user *buf,
			   size_t count, loff_t *ppos)
{
	struct fgft_entry_rt *rt;
	int i;

	fgft_counts_zero(&fgft_gcounts);
	for (i = 0; i < FGFT_CAUSE_NR; i++)
		atomic64_set(&fgft_gstats.aborts[i], 0);
	atomic64_set(&fgft_gstats.begin_disabled, 0);
	atomic64_set(&fgft_gstats.begin_errors, 0);
	atomic64_set(&fgft_gstats.residue_fixups, 0);
	atomic64_set(&fgft_gstats.missing_unlocks, 0);
	atomic64_set(&fgft_gstats.restores, 0);
	atomic64_set(&fgft_gstats.restores_skipped, 0);
	atomic64_set(&fgft_gstats.refusals, 0);
	atomic64_set(&fgft_gstats.rec_count, 0);
	atomic64_set(&fgft_gstats.rec_sum_ns, 0);
	atomic64_set(&fgft_gstats.rec_max_ns, 0);
	atomic64_set(&fgft_gstats.retried, 0);
	atomic64_set(&fgft_gstats.retry_sum_ns, 0);
	atomic64_set(&fgft_gstats.retry_max_ns, 0);
	for (i = 0; i < FGFT_HIST_BUCKETS; i++)
		atomic64_set(&fgft_gstats.rec_hist[i], 0);
	mutex_lock(&fgft_entries_lock);
	list_for_each_entry(rt, &fgft_entries, node) {
		fgft_counts_zero(rt->counts);
		for (i = 0; i < FGFT_CAUSE_NR; i++)
			atomic64_set(&rt->aborts[i], 0);
		stage_reset(rt);
	}
	mutex_unlock(&fgft_entries_lock);
	return count;
}

static const struct file_operations reset_fops = {
	.owner = THIS_MODULE,
	.write = reset_write,
	.llseek = noop_llseek,
};

static int entry_stats_show(struct seq_file *m, void *v)
{
	struct fgft_entry_rt *rt = m->private;
	int i;

	seq_printf(m, "name %s\n", rt->ep->name ? rt->ep->name : "");
	seq_printf(m, "origin %s\n", rt->ep->origin ? rt->ep->origin : "");
	seq_printf(m, "err %d\n", rt->ep->err);
	seq_printf(m, "isolate %d\n", READ_ONCE(rt->isolate));
	seq_printf(m, "txns %llu\n", fgft_counts_sum(rt->counts, false));
	seq_printf(m, "commits %llu\n", fgft_counts_sum(rt->counts, true));
	for (i = 0; i < FGFT_CAUSE_NR; i++)
		seq_printf(m, "aborts_%s %llu\n", fgft_cause_names[i],
			   (u64)atomic64_read(&rt->aborts[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(entry_stats);

int fgft_entry_register(struct fgft_entry *ep)
{
	struct fgft_entry_rt *rt;
	struct dentry *existing;
	char name[64];
	int i;

	if (!ep || !ep->name)
		return -EINVAL;
	if (ep->rt)
		return -EBUSY;
	rt = kzalloc(sizeof(*rt), GFP_KERNEL);
	if (!rt)
		return -ENOMEM;
	rt->ep = ep;
	rt->isolate = true;
	rt->counts = alloc_percpu(struct fgft_counts);
	if (!rt->counts) {
		kfree(rt);
		return -ENOMEM;
	}
	/* Without it the entry works, and shows no stage times. */
	rt->stages = alloc_percpu(struct fgft_stage_sums);
	mutex_lock(&fgft_entries_lock);
	for (i = 0; i < 100 && fgft_entries_dir; i++) {
		if (i)
			snprintf(name, sizeof(name), "%s.%d", ep->name, i);
		else
			strscpy(name, ep->name, sizeof(name));
		existing = debugfs_lookup(name, fgft_entries_dir);
		if (existing) {
			dput(existing);
			continue;
		}
		rt->dir = debugfs_create_dir(name, fgft_entries_dir);
		if (!IS_ERR_OR_NULL(rt->dir))
			break;
		rt->dir = NULL;
	}
	if (rt->dir) {
		debugfs_create_bool("isolate", 0644, rt->dir, &rt->isolate);
		debugfs_create_file("stats", 0444, rt->dir, rt,
				    &entry_stats_fops);
		debugfs_create_file("stages", 0444, rt->dir, rt,
				    &entry_stages_fops);
	}
	list_add(&rt->node, &fgft_entries);
	ep->rt = rt;
	mutex_unlock(&fgft_entries_lock);
	return 0;
}
EXPORT_SYMBOL_GPL(fgft_entry_register);

void fgft_entry_unregister(struct fgft_entry *ep)
{
	struct fgft_entry_rt *rt;

	if (!ep || !ep->rt)
		return;
	mutex_lock(&fgft_entries_lock);
	rt = ep->rt;
	list_del(&rt->node);
	debugfs_remove(rt->dir);
	ep->rt = NULL;
	mutex_unlock(&fgft_entries_lock);
	free_percpu(rt->stages);
	free_percpu(rt->counts);
	kfree(rt);
}
EXPORT_SYMBOL_GPL(fgft_entry_unregister);

int fgft_debugfs_init(void)
{
	fgft_dir = debugfs_create_dir("fgft", NULL);
	if (IS_ERR_OR_NULL(fgft_dir)) {
		pr_warn("debugfs unavailable, statistics only through the API\n");
		fgft_dir = NULL;
		return 0;
	}
	debugfs_create_file("stats", 0444, fgft_dir, NULL, &stats_fops);
	debugfs_create_file("recovery_hist", 0444, fgft_dir, NULL,
			    &hist_fops);
	debugfs_create_file("reset", 0200, fgft_dir, NULL, &reset_fops);
	fgft_entries_dir = debugfs_create_dir("entries", fgft_dir);
	if (IS_ERR_OR_NULL(fgft_entries_dir))
		fgft_entries_dir = NULL;
	return 0;
}

void fgft_debugfs_exit(void)
{
	struct fgft_entry_rt *rt, *n;

	mutex_lock(&fgft_entries_lock);
	list_for_each_entry_safe(rt, n, &fgft_entries, node) {
		/* The entries' modules depend on us: none can be left. */
		list_del(&rt->node);
		rt->ep->rt = NULL;
		free_percpu(rt->stages);
		free_percpu(rt->counts);
		kfree(rt);
	}
	mutex_unlock(&fgft_entries_lock);
	debugfs_remove_recursive(fgft_dir);
	fgft_dir = NULL;
	fgft_entries_dir = NULL;
}

//! Isolated entry points and their counters: transactions, commits, aborts
//! by cause, a recovery-time histogram (the debugfs files of the C runtime).

use crate::txn::{as_nanos, Cause};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Buckets of the recovery histogram: bucket `i` counts recoveries of
/// `[2^i, 2^(i+1))` ns.
pub const BUCKETS: usize = 40;

/// Counters of one entry point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryStats {
    pub begins: u64,
    pub commits: u64,
    /// Calls made with isolation switched off.
    pub bypassed: u64,
    /// Aborts by [`Cause`] (indexed like [`Cause::ALL`]).
    pub aborts: [u64; 5],
    pub restore_failures: u64,
    pub recovery_hist: [u64; BUCKETS],
    pub recovery_count: u64,
    pub recovery_sum_ns: u64,
    pub recovery_min_ns: u64,
    pub recovery_max_ns: u64,
    pub last_message: Option<String>,
}

impl EntryStats {
    const fn new() -> Self {
        EntryStats {
            begins: 0,
            commits: 0,
            bypassed: 0,
            aborts: [0; 5],
            restore_failures: 0,
            recovery_hist: [0; BUCKETS],
            recovery_count: 0,
            recovery_sum_ns: 0,
            recovery_min_ns: u64::MAX,
            recovery_max_ns: 0,
            last_message: None,
        }
    }

    pub fn aborts_by(&self, cause: Cause) -> u64 {
        self.aborts[cause.index()]
    }

    pub fn total_aborts(&self) -> u64 {
        self.aborts.iter().sum()
    }

    /// Mean recovery time in ns (0 with no recovery).
    pub fn recovery_mean_ns(&self) -> u64 {
        self.recovery_sum_ns
            .checked_div(self.recovery_count)
            .unwrap_or(0)
    }
}

/// One isolated entry point. `#[fgft::isolate]` defines one `static` per
/// method (`struct fgft_entry`).
#[derive(Debug)]
pub struct Entry {
    pub name: &'static str,
    /// `file:line` of the method.
    pub origin: &'static str,
    enabled: AtomicBool,
    registered: AtomicBool,
    /// The hot counters, outside the mutex.
    begins: AtomicU64,
    commits: AtomicU64,
    bypassed: AtomicU64,
    /// Aborts and the recovery histogram.
    stats: Mutex<EntryStats>,
}

static ENTRIES: Mutex<Vec<&'static Entry>> = Mutex::new(Vec::new());
static ISOLATION: AtomicBool = AtomicBool::new(true);

/// Switches isolation for every entry point of the process at once (a
/// driver run "native", e.g. to compare with restart recovery).
pub fn set_isolation_global(on: bool) {
    ISOLATION.store(on, Ordering::Relaxed);
}

impl Entry {
    pub const fn new(name: &'static str, origin: &'static str) -> Self {
        Entry {
            name,
            origin,
            enabled: AtomicBool::new(true),
            registered: AtomicBool::new(false),
            begins: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            bypassed: AtomicU64::new(0),
            stats: Mutex::new(EntryStats::new()),
        }
    }

    /// Whether calls run as transactions (the per-entry debugfs switch).
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed) && ISOLATION.load(Ordering::Relaxed)
    }

    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    pub fn stats(&self) -> EntryStats {
        let mut s = self
            .stats
            .lock()
            .map(|s| s.clone())
            .unwrap_or_else(|e| e.into_inner().clone());
        s.begins = self.begins.load(Ordering::Relaxed);
        s.commits = self.commits.load(Ordering::Relaxed);
        s.bypassed = self.bypassed.load(Ordering::Relaxed);
        s
    }

    fn register(&'static self) {
        if !self.registered.load(Ordering::Relaxed) && !self.registered.swap(true, Ordering::AcqRel)
        {
            let mut all = ENTRIES.lock().unwrap_or_else(|e| e.into_inner());
            all.push(self);
        }
    }

    fn update(&'static self, f: impl FnOnce(&mut EntryStats)) {
        self.register();
        let mut s = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut s);
    }

    pub(crate) fn count_begin(&'static self) {
        self.register();
        self.begins.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_bypass(&'static self) {
        self.register();
        self.bypassed.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_commit(&'static self) {
        self.commits.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_abort(
        &'static self,
        cause: Cause,
        recovery: Duration,
        restored: bool,
        message: Option<&str>,
    ) {
        let ns = as_nanos(recovery);
        self.update(|s| {
            s.aborts[cause.index()] += 1;
            if !restored {
                s.restore_failures += 1;
            }
            let b = (63 - ns.max(1).leading_zeros() as usize).min(BUCKETS - 1);
            s.recovery_hist[b] += 1;
            s.recovery_count += 1;
            s.recovery_sum_ns = s.recovery_sum_ns.saturating_add(ns);
            s.recovery_min_ns = s.recovery_min_ns.min(ns);
            s.recovery_max_ns = s.recovery_max_ns.max(ns);
            s.last_message = message.map(str::to_string);
        });
    }
}

/// Every entry point that ran at least once, in first-use order.
pub fn entries() -> Vec<&'static Entry> {
    ENTRIES
        .lock()
        .map(|e| e.clone())
        .unwrap_or_else(|e| e.into_inner().clone())
}

/// Switches isolation for the entry point named `name` (`Type::method`);
/// returns false when no such entry point has run yet.
pub fn set_isolation(name: &str, on: bool) -> bool {
    let mut found = false;
    for e in entries() {
        if e.name == name {
            e.set_enabled(on);
            found = true;
        }
    }
    found
}

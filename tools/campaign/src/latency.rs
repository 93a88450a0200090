//! Timing isolation (issue 18, the Xen study): does a driver under fgft,
//! its faults and their recovery, disturb a real-time task on another CPU?
//!
//! One boot per kernel (Debian's stock 6.12 and its PREEMPT_RT flavour),
//! 2 vCPUs, two e1000 NICs on one QEMU hub, the NICs' interrupts pinned to
//! CPU 0. rt-tests' own `cyclictest` (the host's binary with its
//! libraries) runs `SCHED_FIFO` priority 95 on CPU 1 and reports its
//! histogram, while CPU 0 does one of [`CONDITIONS`], once with Debian's
//! stock `e1000.ko` and once with the fgft split (ethtool operations and
//! the I/O path isolated), in the same boot, the order alternating per
//! round. The round trip of one ethtool call is timed too: stock, fgft,
//! and fgft with each fault kind firing on every call.
//!
//! [`script`] writes the guest side, [`parse`] reads the console back,
//! [`report`] and [`plot`] write `results/latency.md` and its SVG.
//! Nothing here asserts a target: the benchmark reports.

use crate::config::Config;
use crate::fgft::FgftModules;
use fgft_inject::Variant;
use fgft_vm::Outcome;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// What CPU 0 does while cyclictest measures on CPU 1: (key, description).
pub const CONDITIONS: [(&str, &str); 5] = [
    ("idle", "idle"),
    (
        "mgmt",
        "isolated management calls (ethtool ioctls) in a tight loop",
    ),
    (
        "traffic",
        "traffic through the driver (raw frames eth0 to eth1)",
    ),
    (
        "faults",
        "traffic, and an injected fault recovered every period (stock: the same calls, no fault)",
    ),
    ("hog", "a CPU hog plus traffic (the seed's interference)"),
];

/// The two builds compared in one boot.
pub const BUILDS: [&str; 2] = ["stock", "fgft"];

/// The ethtool operations of the management load (one ioctl each).
pub const MGMT_OPS: &str = "drvinfo msglevel link ringparam pauseparam coalesce wol";

/// Benchmark settings (environment: `FGFT_LAT_SECS`, `FGFT_LAT_ROUNDS`,
/// `FGFT_LAT_INTERVAL_US`, `FGFT_LAT_PERIOD_MS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Seconds of cyclictest per condition and build.
    pub secs: u32,
    /// Rounds; each runs every condition on both builds.
    pub rounds: u32,
    /// cyclictest's interval, µs.
    pub interval_us: u32,
    /// The fault condition's pause after each call, ms. The picked faults
    /// touch no register, so their recovery restores no device; a fault
    /// that did would reset the e1000, whose link QEMU reports up about two
    /// seconds later (a period below that leaves no traffic at all).
    pub period_ms: u32,
    /// cyclictest's histogram size, µs (longer samples are overflows).
    pub hist_us: u32,
    /// Calls per round-trip measurement (faulting calls: a tenth).
    pub calls: u32,
    /// Frames a second the traffic load offers (fgft-pkt -r), the same for
    /// both builds: below what either carries, so that both do the same
    /// work and their latencies compare.
    pub rate: u32,
    /// The conditions run, bit `i` for `CONDITIONS[i]` (all by default).
    pub conds: u8,
    /// QEMU's vCPU threads pinned to host CPUs, the measured vCPU alone on
    /// its own ([`fgft_vm::VmSpec::pin_vcpus`]).
    pub pin: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            secs: 10,
            rounds: 3,
            interval_us: 1000,
            period_ms: 200,
            hist_us: 50_000,
            calls: 500,
            rate: 250,
            conds: (1 << CONDITIONS.len()) - 1,
            pin: true,
        }
    }
}

impl Settings {
    /// Defaults overridden by the `FGFT_LAT_*` environment variables
    /// (`FGFT_LAT_CONDS=idle,faults` runs only those conditions,
    /// `FGFT_LAT_PIN=0` leaves QEMU's threads to the host scheduler).
    pub fn from_env() -> Result<Settings, String> {
        let num = |k: &str, d: u32| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|v| *v > 0)
                .unwrap_or(d)
        };
        let d = Settings::default();
        Ok(Settings {
            secs: num("FGFT_LAT_SECS", d.secs),
            rounds: num("FGFT_LAT_ROUNDS", d.rounds),
            interval_us: num("FGFT_LAT_INTERVAL_US", d.interval_us),
            period_ms: num("FGFT_LAT_PERIOD_MS", d.period_ms),
            hist_us: d.hist_us,
            calls: num("FGFT_LAT_CALLS", d.calls),
            rate: num("FGFT_LAT_RATE", d.rate),
            conds: match std::env::var("FGFT_LAT_CONDS") {
                Ok(v) if !v.trim().is_empty() => parse_conds(&v)?,
                _ => d.conds,
            },
            pin: std::env::var("FGFT_LAT_PIN").map_or(d.pin, |v| v.trim() != "0"),
        })
    }

    /// The conditions run, in [`CONDITIONS`] order.
    pub fn conditions(&self) -> impl Iterator<Item = &'static str> + '_ {
        CONDITIONS
            .iter()
            .enumerate()
            .filter(|(i, _)| self.conds & (1 << i) != 0)
            .map(|(_, (c, _))| *c)
    }

    /// A generous wall-time bound for one boot under TCG.
    pub fn timeout_secs(&self, kinds: usize) -> u64 {
        let conds = self.conditions().count() as u64;
        let per_round = BUILDS.len() as u64 * conds * (self.secs as u64 + 15);
        240 + self.rounds as u64 * per_round + kinds as u64 * 10
    }
}

/// The bit mask of a comma-separated list of condition names.
pub fn parse_conds(list: &str) -> Result<u8, String> {
    let mut m = 0u8;
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let i = CONDITIONS
            .iter()
            .position(|(c, _)| *c == name)
            .ok_or_else(|| {
                let known: Vec<&str> = CONDITIONS.iter().map(|(c, _)| *c).collect();
                format!("unknown condition `{name}` (known: {})", known.join(", "))
            })?;
        m |= 1 << i;
    }
    if m == 0 {
        return Err("no condition named".into());
    }
    Ok(m)
}

/// A fault the fault condition may fire: a variant, its kind and the
/// ethtool operation that reaches its entry point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub id: u32,
    pub kind: String,
    pub op: String,
    pub label: String,
}

/// Up to `per_kind` variants of each kind whose entry point one
/// fgft-ethtool operation reaches, in variant order. The guest keeps, per
/// kind, the first that fires on every call.
pub fn candidates(cfg: &Config, variants: &[Variant], per_kind: usize) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    for v in variants {
        let Some(op) = cfg.trigger.get(&v.entry) else {
            continue;
        };
        if op.starts_with("sh:") || op.contains(char::is_whitespace) {
            continue;
        }
        let kind = v.kind.name().to_string();
        if out.iter().filter(|c| c.kind == kind).count() >= per_kind {
            continue;
        }
        out.push(Candidate {
            id: v.id,
            kind,
            op: op.clone(),
            label: v.label.clone(),
        });
    }
    out
}

/// The guest's helpers and the fault loop (`/fgft/faults.sh SECS`: arms
/// each chosen fault in turn for a second, calling its operation every
/// period, until SECS have passed; the chosen faults are in /tmp/good).
fn prelude(cfg: &Config, mods: &FgftModules, s: &Settings) -> String {
    let name = |i: usize| {
        mods.modules
            .get(i)
            .and_then(|m| m.file_name())
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let m = cfg.sysfs_module();
    format!(
        r#"P=/sys/module/fgft_rt/parameters/fgft_inject_id
S=/sys/kernel/debug/fgft/stats
stat() {{ sed -n "s/^$1 //p" $S; }}
up() {{
	{setup}
	i=0
	while [ $i -lt 100 ] && ! grep -q 1 /sys/class/net/eth1/carrier 2>/dev/null; do
		sleep 0.1; i=$((i + 1))
	done
	for q in $(grep -E 'eth[0-9]' /proc/interrupts | cut -d: -f1); do
		echo 1 > /proc/irq/$q/smp_affinity 2>/dev/null
	done
	sleep 1
}}
load_fgft() {{
	insmod /lib/fgft/{sfi} || exit 4
	insmod /lib/fgft/{main} || exit 4
	up
}}
unload_fgft() {{ rmmod {m}_fgft; rmmod {m}_sfi; }}
load_stock() {{ modprobe {m} || exit 4; up; }}
unload_stock() {{ rmmod {m}; }}
cat > /fgft/hist.awk <<'EOF'
# cyclictest -h output -> markers: column j is thread j, pinned to CPU j.
# cyclictest pads with zeros, and busybox awk reads 000120 as octal: num()
# strips them first.
function num(v) {{ sub(/^0+/, "", v); return v == "" ? 0 : v + 0 }}
/^[0-9]+[[:space:]]+[0-9]/ {{
	for (i = 2; i <= NF; i++) if (num($i) > 0) {{
		j = i - 2
		b[j] = b[j] num($1) ":" num($i) ","
		if (++n[j] == 40) {{
			print "FGFT-MARK cychist " tag " cpu=" j " b=" b[j]
			b[j] = ""; n[j] = 0
		}}
	}}
	if (NF - 1 > T) T = NF - 1
}}
/^# Total:/ {{ for (i = 3; i <= NF; i++) tot[i - 3] = num($i) }}
/^# Max Latencies:/ {{ for (i = 4; i <= NF; i++) mx[i - 4] = num($i) }}
/^# Histogram Overflows:/ {{ for (i = 4; i <= NF; i++) ov[i - 4] = num($i) }}
END {{
	for (j = 0; j < T; j++) {{
		if (n[j] > 0) print "FGFT-MARK cychist " tag " cpu=" j " b=" b[j]
		print "FGFT-MARK cyc " tag " cpu=" j " total=" tot[j] + 0 " max=" mx[j] + 0 " ov=" ov[j] + 0
	}}
}}
EOF
cat > /fgft/irq.awk <<'EOF'
# Two snapshots of /proc/interrupts -> what CPU 1 (the third column) took
# between them, per row: the timer (LOC), IPIs (RES, CAL, TLB, IWI, ...)
# and device interrupts (numbered rows, summed as dev).
FNR == 1 {{ f++; next }}
$1 ~ /:$/ && $3 ~ /^[0-9]+$/ {{
	k = $1; sub(/:$/, "", k)
	if (k ~ /^[0-9]+$/) k = "dev"
	if (f == 1) a[k] += $3; else b[k] += $3
}}
END {{
	s = ""
	for (k in b) if (b[k] - a[k] > 0) s = s k ":" b[k] - a[k] ","
	print "FGFT-MARK lat-irq " tag " cpu1=" s
}}
EOF
cat > /fgft/faults.sh <<'EOF'
end=$(( $(cut -d. -f1 /proc/uptime) + $1 ))
while [ $(cut -d. -f1 /proc/uptime) -lt $end ]; do
	for v in $(cat /tmp/good); do
		[ $(cut -d. -f1 /proc/uptime) -lt $end ] || break
		echo ${{v%%:*}} > /sys/module/fgft_rt/parameters/fgft_inject_id
		fgft-ethtool -d 1 -p {period_us} eth0 ${{v#*:}} > /dev/null
		echo 0 > /sys/module/fgft_rt/parameters/fgft_inject_id
	done
done
EOF
: > /tmp/good
echo 1 > /proc/irq/default_smp_affinity
insmod /lib/fgft/{rt} || exit 3
"#,
        setup = cfg.driver.setup,
        sfi = name(1),
        main = name(2),
        rt = name(0),
        period_us = s.period_ms as u64 * 1000,
    )
}

/// One condition on one build: start CPU 0's load, run cyclictest (one
/// thread on CPU 1, the measured one, and one on CPU 0, which shows what
/// holds the CPU doing the work), stop the load, print the histograms
/// quietly (console level 1, so no kernel line splits them).
fn condition(kernel: &str, build: &str, cond: &str, round: u32, s: &Settings) -> String {
    let d = s.secs;
    let pkt = format!(
        "taskset 1 fgft-pkt -d {d} -r {r} -w 5000 eth0 eth1 & pids=\"$pids $!\"\n",
        r = s.rate
    );
    let load = match cond {
        "idle" => String::new(),
        "mgmt" => format!("taskset 1 fgft-ethtool -d {d} eth0 {MGMT_OPS} & pids=\"$pids $!\"\n"),
        "traffic" => pkt,
        "faults" => format!("{pkt}taskset 1 sh /fgft/faults.sh {d} & pids=\"$pids $!\"\n"),
        _ => format!("taskset 1 sh -c 'while :; do :; done' & hog=$!\n{pkt}"),
    };
    let tag = format!("kernel={kernel} build={build} cond={cond} round={round}");
    format!(
        "pids=\"\"; hog=\"\"\n\
         r0=$(stat recoveries)\n\
         echo \"FGFT-MARK lat-begin {tag}\"\n\
         cp /proc/interrupts /tmp/irq0\n\
         {load}\
         cyclictest -q -m -t 2 -a 0,1 -p 95 -i {i} -D {d} -h {h} > /tmp/cyc.out 2>&1\n\
         cp /proc/interrupts /tmp/irq1\n\
         [ -n \"$hog\" ] && kill $hog\n\
         for p in $pids; do wait $p; done\n\
         r1=$(stat recoveries)\n\
         echo \"FGFT-MARK lat-load {tag} rec=$((r1 - r0))\"\n\
         echo 1 > /proc/sys/kernel/printk\n\
         awk -v tag='{tag}' -f /fgft/hist.awk /tmp/cyc.out\n\
         awk -v tag='{tag}' -f /fgft/irq.awk /tmp/irq0 /tmp/irq1\n\
         echo 7 > /proc/sys/kernel/printk\n",
        i = s.interval_us,
        h = s.hist_us,
    )
}

/// Round trips of one ethtool call: `n` calls of `op` with fault `id`
/// armed (0: none), the runtime's counters reset first.
fn round_trip(kernel: &str, build: &str, label: &str, id: u32, op: &str, n: u32) -> String {
    let tag = format!("kernel={kernel} build={build} label={label}");
    let arm = if id > 0 {
        format!("echo {id} > $P\n")
    } else {
        String::new()
    };
    // The loop's summary is printed quietly after the kernel's lines have
    // drained (on PREEMPT_RT a printk thread prints them late, into the
    // middle of a marker line).
    format!(
        "echo 1 > /sys/kernel/debug/fgft/reset\n\
         echo \"FGFT-MARK rt-begin {tag}\"\n\
         {arm}fgft-ethtool -n {n} eth0 {op} > /tmp/rt.out 2>&1\n\
         echo 0 > $P\n\
         sleep 1\n\
         echo 1 > /proc/sys/kernel/printk\n\
         cat /tmp/rt.out\n\
         echo \"FGFT-MARK rt-end {tag} rec=$(stat recoveries) rec_max_ns=$(stat recovery_ns_max) rec_sum_ns=$(stat recovery_ns_sum) restores=$(stat restores)\"\n\
         echo 7 > /proc/sys/kernel/printk\n"
    )
}

/// The guest script of one boot on kernel `kernel` ("stock" or "rt").
pub fn script(
    cfg: &Config,
    mods: &FgftModules,
    faults: &[Candidate],
    kernel: &str,
    s: &Settings,
) -> String {
    let mut out = prelude(cfg, mods, s);
    // The fgft build first: pick the faults that fire on every call (three
    // calls, three recoveries), one per kind, and time the round trips.
    out.push_str("load_fgft\n");
    out.push_str(&round_trip(kernel, "fgft", "none", 0, "drvinfo", s.calls));
    let mut kinds: Vec<&str> = Vec::new();
    for c in faults {
        if !kinds.contains(&c.kind.as_str()) {
            kinds.push(&c.kind);
        }
    }
    for k in &kinds {
        out.push_str("picked=\"\"\n");
        for c in faults.iter().filter(|c| c.kind == *k) {
            out.push_str(&format!(
                "if [ -z \"$picked\" ]; then\n\
                 \techo 1 > /sys/kernel/debug/fgft/reset; echo {id} > $P\n\
                 \tfgft-ethtool -n 3 eth0 {op} > /dev/null; echo 0 > $P\n\
                 \tif [ \"$(stat recoveries)\" = 3 ]; then picked={id}; echo {id}:{op} >> /tmp/good; echo \"FGFT-MARK lat-pick kernel={kernel} kind={k} id={id}\"; fi\n\
                 fi\n",
                id = c.id,
                op = c.op
            ));
        }
        // The round trip of the picked fault of this kind.
        for c in faults.iter().filter(|c| c.kind == *k) {
            out.push_str(&format!("if [ \"$picked\" = {} ]; then\n", c.id));
            out.push_str(&round_trip(
                kernel,
                "fgft",
                &format!("{}:{}", c.kind, c.id),
                c.id,
                &c.op,
                (s.calls / 10).max(10),
            ));
            out.push_str("fi\n");
        }
    }
    out.push_str(
        "echo \"FGFT-MARK lat-good kernel=$(cat /tmp/good | tr '\\n' ' ' | tr ' ' ',')\"\n",
    );
    // Each condition runs on both builds back to back, so that the host's
    // slow drifts fall on both alike; the order alternates (fgft, stock,
    // then stock, fgft, ...), so a build stays loaded across two runs and
    // the modules are swapped once per condition.
    let mut loaded = "fgft";
    let mut stock_timed = false;
    for (r, c) in (0..s.rounds).flat_map(|r| s.conditions().map(move |c| (r, c))) {
        let order: [&str; 2] = if loaded == "fgft" {
            ["fgft", "stock"]
        } else {
            ["stock", "fgft"]
        };
        for b in order {
            if b != loaded {
                out.push_str(&format!("unload_{loaded}\nload_{b}\n"));
                if b == "stock" && !stock_timed {
                    out.push_str(&round_trip(kernel, "stock", "none", 0, "drvinfo", s.calls));
                    stock_timed = true;
                }
                loaded = b;
            }
            out.push_str(&condition(kernel, b, c, r, s));
        }
    }
    out.push_str("cat $S\necho FGFT-MARK lat-done\n");
    out
}

/// A cyclictest histogram (1 µs buckets) and its summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hist {
    /// µs -> samples.
    pub buckets: BTreeMap<u64, u64>,
    /// Samples beyond the histogram (counted at `max_us`).
    pub overflow: u64,
    pub max_us: u64,
    pub total: u64,
}

impl Hist {
    /// Adds one `b=` field of a `cychist` marker: `us:count,us:count,`.
    pub fn add_part(&mut self, b: &str) -> Result<(), String> {
        for item in b.split(',').filter(|i| !i.is_empty()) {
            let (us, n) = item
                .split_once(':')
                .ok_or_else(|| format!("bad histogram item {item:?}"))?;
            let us: u64 = us.parse().map_err(|_| format!("bad bucket {us:?}"))?;
            let n: u64 = n.parse().map_err(|_| format!("bad count {n:?}"))?;
            *self.buckets.entry(us).or_default() += n;
        }
        Ok(())
    }

    /// Adds another run's samples.
    pub fn merge(&mut self, o: &Hist) {
        for (us, n) in &o.buckets {
            *self.buckets.entry(*us).or_default() += n;
        }
        self.overflow += o.overflow;
        self.max_us = self.max_us.max(o.max_us);
        self.total += o.total;
    }

    /// Samples in the histogram and beyond it.
    pub fn samples(&self) -> u64 {
        self.buckets.values().sum::<u64>() + self.overflow
    }

    /// The `q` quantile (0 < q <= 1) in µs: the smallest latency that at
    /// least a fraction `q` of the samples do not exceed; overflows count
    /// as the maximum.
    pub fn quantile(&self, q: f64) -> u64 {
        let n = self.samples();
        if n == 0 {
            return 0;
        }
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (us, c) in &self.buckets {
            seen += c;
            if seen >= rank {
                return *us;
            }
        }
        self.max_us
    }
}

/// What one boot measured.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// (build, condition) -> CPU 1's histogram over the rounds.
    pub hist: BTreeMap<(String, String), Hist>,
    /// The same for the thread on CPU 0, the CPU doing the work.
    pub hist0: BTreeMap<(String, String), Hist>,
    /// (build, condition, round) -> CPU 1's histogram of that round alone:
    /// the spread of the per-round ratios shows the run's noise.
    pub per_round: BTreeMap<(String, String, u32), Hist>,
    /// (build, condition) -> frames/s of the traffic load, per round.
    pub fps: BTreeMap<(String, String), Vec<f64>>,
    /// (build, condition) -> faults recovered during the condition.
    pub recoveries: BTreeMap<(String, String), u64>,
    /// Round trips: (build, label) -> the loop's summary and counters.
    pub trips: BTreeMap<(String, String), Trip>,
    /// Faults chosen for the fault condition (kind -> variant id).
    pub picked: BTreeMap<String, u32>,
    /// Console lines the kernel printed per faulting call, by kind.
    pub console_lines: BTreeMap<String, f64>,
    /// (build, condition) -> the interrupts CPU 1 took while cyclictest
    /// ran, all rounds: `LOC` (its timer), IPIs (`RES`, `CAL`, `TLB`, ...),
    /// `dev` (device interrupts).
    pub irqs: BTreeMap<(String, String), BTreeMap<String, u64>>,
    /// QEMU's vCPU threads and the host CPUs they were pinned to (empty:
    /// not pinned), from [`fgft_vm::Outcome::pinned`].
    pub pinned: Vec<String>,
}

/// One round-trip measurement.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trip {
    pub calls: u64,
    pub failed: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub recoveries: u64,
    pub rec_max_ns: u64,
    pub rec_sum_ns: u64,
    /// Recoveries that restored the device (the call had touched it).
    pub restores: u64,
}

/// The histograms a `cychist`/`cyc` marker adds to: CPU 0's thread
/// (`cpu=0`) or CPU 1's.
fn cpu_hists<'a>(
    run: &'a mut Run,
    m: &fgft_vm::Marker,
) -> &'a mut BTreeMap<(String, String), Hist> {
    if m.get("cpu") == Some("0") {
        &mut run.hist0
    } else {
        &mut run.hist
    }
}

/// Reads one boot's console. Fails when a condition has no histogram.
pub fn parse(out: &Outcome) -> Result<Run, String> {
    let mut run = Run::default();
    let mut cur: Option<(String, String)> = None;
    let mut trip: Option<(String, String)> = None;
    for m in &out.markers {
        let key = || -> Option<(String, String)> {
            Some((m.get("build")?.to_string(), m.get("cond")?.to_string()))
        };
        match m.name.as_str() {
            "lat-begin" => cur = key(),
            "pkt" => {
                if let (Some(k), Some(f)) = (&cur, m.parse::<f64>("fps")) {
                    run.fps.entry(k.clone()).or_default().push(f);
                }
            }
            "lat-irq" => {
                if let Some(k) = key() {
                    let e = run.irqs.entry(k).or_default();
                    for item in m.get("cpu1").unwrap_or("").split(',') {
                        if let Some((name, n)) = item.split_once(':') {
                            let n: u64 = n
                                .parse()
                                .map_err(|_| format!("bad interrupt count {item:?}"))?;
                            *e.entry(name.to_string()).or_default() += n;
                        }
                    }
                }
            }
            "lat-load" => {
                if let (Some(k), Some(r)) = (key(), m.parse::<u64>("rec")) {
                    *run.recoveries.entry(k).or_default() += r;
                }
            }
            "cychist" => {
                let k = key().ok_or("cychist marker without build/cond")?;
                let b = m.get("b").unwrap_or("");
                if let (Some(r), false) = (m.parse::<u32>("round"), m.get("cpu") == Some("0")) {
                    let rk = (k.0.clone(), k.1.clone(), r);
                    run.per_round.entry(rk).or_default().add_part(b)?;
                }
                let map = cpu_hists(&mut run, m);
                map.entry(k).or_default().add_part(b)?;
            }
            "cyc" => {
                let k = key().ok_or("cyc marker without build/cond")?;
                if let (Some(r), false) = (m.parse::<u32>("round"), m.get("cpu") == Some("0")) {
                    let h = run
                        .per_round
                        .entry((k.0.clone(), k.1.clone(), r))
                        .or_default();
                    h.overflow += m.parse("ov").unwrap_or(0);
                    h.max_us = h.max_us.max(m.parse("max").unwrap_or(0));
                    h.total += m.parse("total").unwrap_or(0);
                }
                let map = cpu_hists(&mut run, m);
                let h = map.entry(k).or_default();
                h.overflow += m.parse("ov").unwrap_or(0);
                h.max_us = h.max_us.max(m.parse("max").unwrap_or(0));
                h.total += m.parse("total").unwrap_or(0);
            }
            "lat-pick" => {
                if let (Some(k), Some(id)) = (m.get("kind"), m.parse("id")) {
                    run.picked.insert(k.to_string(), id);
                }
            }
            "rt-begin" => {
                trip = Some((
                    m.get("build").unwrap_or("").to_string(),
                    m.get("label").unwrap_or("").to_string(),
                ));
            }
            "ethtool-loop" => {
                if let Some(k) = &trip {
                    let t = run.trips.entry(k.clone()).or_default();
                    t.calls = m.parse("runs").unwrap_or(0);
                    t.failed = m.parse("failed").unwrap_or(0);
                    t.p50_ns = m.parse("p50_ns").unwrap_or(0);
                    t.p99_ns = m.parse("p99_ns").unwrap_or(0);
                    t.max_ns = m.parse("max_ns").unwrap_or(0);
                }
            }
            "rt-end" => {
                if let Some(k) = trip.take() {
                    let t = run.trips.entry(k).or_default();
                    t.recoveries = m.parse("rec").unwrap_or(0);
                    t.rec_max_ns = m.parse("rec_max_ns").unwrap_or(0);
                    t.rec_sum_ns = m.parse("rec_sum_ns").unwrap_or(0);
                    t.restores = m.parse("restores").unwrap_or(0);
                }
            }
            _ => {}
        }
    }
    // Console lines between a faulting round trip's markers, per call.
    for ((b, label), t) in &run.trips {
        let Some((kind, _)) = label.split_once(':') else {
            continue;
        };
        let begin = "FGFT-MARK rt-begin kernel=";
        let tag = format!("build={b} label={label}");
        let Some(start) = out.console.match_indices(begin).map(|(i, _)| i).find(|i| {
            out.console[*i..]
                .lines()
                .next()
                .is_some_and(|l| l.contains(&tag))
        }) else {
            continue;
        };
        let rest = &out.console[start..];
        let end = rest.find("FGFT-MARK rt-end").unwrap_or(rest.len());
        let lines = rest[..end]
            .lines()
            .filter(|l| !l.contains("FGFT-MARK"))
            .count();
        if t.calls > 0 {
            run.console_lines
                .insert(kind.to_string(), lines as f64 / t.calls as f64);
        }
    }
    let conds = run.conditions();
    if conds.is_empty() {
        return Err("no cyclictest histogram".into());
    }
    for b in BUILDS {
        for c in &conds {
            let h = run.hist.get(&(b.to_string(), c.to_string()));
            if h.is_none_or(|h| h.samples() == 0) {
                return Err(format!("no cyclictest histogram for {b}/{c}"));
            }
        }
    }
    Ok(run)
}

impl Run {
    /// The conditions measured (on either build), in [`CONDITIONS`] order.
    pub fn conditions(&self) -> Vec<&'static str> {
        CONDITIONS
            .iter()
            .map(|(c, _)| *c)
            .filter(|c| self.hist.keys().any(|(_, k)| k == c))
            .collect()
    }
}

/// p99 of fgft over p99 of stock in condition `cond`.
pub fn p99_ratio(run: &Run, cond: &str) -> f64 {
    let q = |b: &str| {
        run.hist
            .get(&(b.to_string(), cond.to_string()))
            .map_or(f64::NAN, |h| h.quantile(0.99) as f64)
    };
    q("fgft") / q("stock")
}

/// CPU 1's p99 ratio fgft / stock of each round that measured both builds
/// under `cond`, in round order.
pub fn round_ratios(run: &Run, cond: &str) -> Vec<f64> {
    let q = |b: &str, r: u32| {
        run.per_round[&(b.to_string(), cond.to_string(), r)].quantile(0.99) as f64
    };
    paired_rounds(run, cond)
        .into_iter()
        .map(|r| q("fgft", r) / q("stock", r))
        .collect()
}

/// The rounds in which both builds measured samples under `cond`, in order.
fn paired_rounds(run: &Run, cond: &str) -> Vec<u32> {
    let rounds: BTreeSet<u32> = run
        .per_round
        .keys()
        .filter(|k| k.1 == cond)
        .map(|k| k.2)
        .collect();
    rounds
        .into_iter()
        .filter(|r| {
            BUILDS.iter().all(|b| {
                run.per_round
                    .get(&(b.to_string(), cond.to_string(), *r))
                    .is_some_and(|h| h.samples() > 0)
            })
        })
        .collect()
}

/// A 95% interval of the pooled p99 ratio fgft / stock under `cond`, by a
/// bootstrap over rounds: `n` resamples of the rounds with replacement
/// (both builds of a drawn round together: they ran back to back), each
/// pooled and its ratio taken; the 2.5th and 97.5th percentiles. The draws
/// come from a fixed-seed generator, so a report is reproducible. None
/// with fewer than two rounds.
pub fn bootstrap_ratio(run: &Run, cond: &str, n: usize) -> Option<(f64, f64)> {
    let rounds = paired_rounds(run, cond);
    if rounds.len() < 2 || n == 0 {
        return None;
    }
    // xorshift64*: a fixed stream, no dependency.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = |m: usize| {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % m
    };
    let mut ratios: Vec<f64> = Vec::with_capacity(n);
    for _ in 0..n {
        let (mut hs, mut hf) = (Hist::default(), Hist::default());
        for _ in 0..rounds.len() {
            let r = rounds[next(rounds.len())];
            for (b, h) in [("stock", &mut hs), ("fgft", &mut hf)] {
                if let Some(p) = run.per_round.get(&(b.to_string(), cond.to_string(), r)) {
                    h.merge(p);
                }
            }
        }
        let (qs, qf) = (hs.quantile(0.99), hf.quantile(0.99));
        if qs > 0 {
            ratios.push(qf as f64 / qs as f64);
        }
    }
    ratios.sort_by(|a, b| a.total_cmp(b));
    let at =
        |q: f64| ratios[((q * (ratios.len() - 1) as f64).round() as usize).min(ratios.len() - 1)];
    (!ratios.is_empty()).then(|| (at(0.025), at(0.975)))
}

/// The median (upper median of an even count; NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The markdown section of one kernel (`s`: the run's settings, for the
/// number of cyclictest loops each condition should have had).
pub fn report(kernel_title: &str, kver: &str, run: &Run, s: &Settings) -> String {
    let expected = s.rounds as f64 * s.secs as f64 * 1e6 / s.interval_us as f64;
    let mut r = String::new();
    let _ = writeln!(r, "## {kernel_title} (`{kver}`)\n");
    let _ = writeln!(
        r,
        "cyclictest on CPU 1, µs (all rounds pooled); `p99 fgft/stock` compares the two builds under the same condition:\n"
    );
    let _ = writeln!(
        r,
        "(CPU 0's thread shares its CPU with the load: `loops` is the share of its {expected:.0} wake-ups it got at all, a cyclictest period it could not run in is skipped, not counted as a latency)\n"
    );
    r.push_str("| condition on CPU 0 | build | samples | p50 | p99 | p99.9 | max | p99 fgft/stock | CPU 0: loops | CPU 0: p99 | CPU 0: max | load frames/s | faults recovered | CPU 1: interrupts besides its timer |\n");
    r.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for c in run.conditions() {
        for b in BUILDS {
            let k = (b.to_string(), c.to_string());
            let Some(h) = run.hist.get(&k) else { continue };
            let ratio = if b == "fgft" {
                format!("{:.2}", p99_ratio(run, c))
            } else {
                String::new()
            };
            let fps = run
                .fps
                .get(&k)
                .map_or_else(|| "-".to_string(), |v| format!("{:.0}", median(v)));
            let rec = run.recoveries.get(&k).copied().unwrap_or(0);
            let (c0loops, c0p99, c0max) = run.hist0.get(&k).map_or_else(
                || ("-".to_string(), "-".to_string(), "-".to_string()),
                |h0| {
                    (
                        format!("{:.0}%", 100.0 * h0.samples() as f64 / expected),
                        h0.quantile(0.99).to_string(),
                        h0.max_us.to_string(),
                    )
                },
            );
            let irqs = run.irqs.get(&k).map_or_else(
                || "-".to_string(),
                |m| {
                    let v: Vec<String> = m
                        .iter()
                        .filter(|(n, _)| n.as_str() != "LOC")
                        .map(|(n, c)| format!("{n} {c}"))
                        .collect();
                    if v.is_empty() {
                        "none".to_string()
                    } else {
                        v.join(", ")
                    }
                },
            );
            let _ = writeln!(
                r,
                "| {c} | {b} | {} | {} | {} | {} | {} | {ratio} | {c0loops} | {c0p99} | {c0max} | {fps} | {rec} | {irqs} |",
                h.samples(),
                h.quantile(0.5),
                h.quantile(0.99),
                h.quantile(0.999),
                h.max_us
            );
        }
    }
    r.push_str("\nRound trip of one `ETHTOOL_GDRVINFO` call (or of the call that reaches the fault), µs:\n\n");
    r.push_str("| build | fault | calls | p50 | p99 | max | recoveries | device restored | recovery max | console lines per call |\n");
    r.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let us = |ns: u64| format!("{:.1}", ns as f64 / 1000.0);
    let mut keys: Vec<&(String, String)> = run.trips.keys().collect();
    keys.sort_by_key(|(b, l)| (b != "stock", l != "none", l.clone()));
    for k in keys {
        let t = &run.trips[k];
        let kind = k.1.split_once(':').map_or("none", |(kd, _)| kd);
        let lines = run
            .console_lines
            .get(kind)
            .map_or_else(|| "-".to_string(), |l| format!("{l:.1}"));
        let _ = writeln!(
            r,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {lines} |",
            k.0,
            k.1,
            t.calls,
            us(t.p50_ns),
            us(t.p99_ns),
            us(t.max_ns),
            t.recoveries,
            t.restores,
            us(t.rec_max_ns)
        );
    }
    r.push('\n');
    r
}

/// Draws p50, p99, p99.9 and max of every condition and build, one panel
/// per kernel, into an SVG document.
pub fn plot(runs: &[(&str, &Run)]) -> Result<String, String> {
    use plotters::prelude::*;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1200, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let panels = root.split_evenly((1, runs.len().max(1)));
        let quantiles: [(&str, f64, RGBColor); 4] = [
            ("p50", 0.5, RGBColor(31, 119, 180)),
            ("p99", 0.99, RGBColor(255, 127, 14)),
            ("p99.9", 0.999, RGBColor(44, 160, 44)),
            ("max", 1.0, RGBColor(214, 39, 40)),
        ];
        for ((title, run), area) in runs.iter().zip(panels.iter()) {
            let conds = run.conditions();
            let nc = conds.len().max(1);
            let mut hi = 10.0f64;
            for h in run.hist.values() {
                hi = hi.max(h.max_us as f64);
            }
            let mut chart = ChartBuilder::on(area)
                .caption(*title, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(-0.5f64..nc as f64 - 0.5, (1.0f64..hi * 2.0).log_scale())
                .map_err(|e| e.to_string())?;
            chart
                .configure_mesh()
                .x_labels(nc)
                .x_label_formatter(&|x| {
                    let i = x.round() as i64;
                    if (x - i as f64).abs() < 0.01 && (0..nc as i64).contains(&i) {
                        conds[i as usize].to_string()
                    } else {
                        String::new()
                    }
                })
                .y_desc("cyclictest latency, µs (log)")
                .draw()
                .map_err(|e| e.to_string())?;
            for (qname, q, color) in quantiles {
                for (bi, b) in BUILDS.iter().enumerate() {
                    let pts: Vec<(f64, f64)> = conds
                        .iter()
                        .enumerate()
                        .filter_map(|(i, c)| {
                            let h = run.hist.get(&(b.to_string(), c.to_string()))?;
                            let v = if q >= 1.0 { h.max_us } else { h.quantile(q) };
                            Some((
                                i as f64 + if bi == 0 { -0.08 } else { 0.08 },
                                v.max(1) as f64,
                            ))
                        })
                        .collect();
                    let style = if bi == 0 {
                        ShapeStyle::from(&color).stroke_width(2)
                    } else {
                        ShapeStyle::from(&color.mix(0.6)).stroke_width(1)
                    };
                    let series = chart
                        .draw_series(LineSeries::new(pts.clone(), style))
                        .map_err(|e| e.to_string())?;
                    series
                        .label(format!("{qname} {b}"))
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
                    if bi == 0 {
                        chart
                            .draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))
                            .map_err(|e| e.to_string())?;
                    } else {
                        chart
                            .draw_series(
                                pts.iter()
                                    .map(|p| TriangleMarker::new(*p, 4, color.mix(0.6))),
                            )
                            .map_err(|e| e.to_string())?;
                    }
                }
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(items: &str) -> Hist {
        let mut h = Hist::default();
        h.add_part(items).unwrap();
        h
    }

    #[test]
    fn quantiles_walk_the_buckets() {
        let h = hist("3:50,4:40,10:9,100:1,");
        assert_eq!(h.samples(), 100);
        assert_eq!(h.quantile(0.5), 3);
        assert_eq!(h.quantile(0.51), 4);
        assert_eq!(h.quantile(0.99), 10);
        assert_eq!(h.quantile(0.999), 100);
        assert_eq!(Hist::default().quantile(0.5), 0);
    }

    #[test]
    fn overflows_count_as_the_maximum() {
        let mut h = hist("5:98,");
        h.overflow = 2;
        h.max_us = 70_000;
        assert_eq!(h.quantile(0.98), 5);
        assert_eq!(h.quantile(0.99), 70_000);
        let mut m = hist("1:2,");
        m.merge(&h);
        assert_eq!(m.samples(), 102);
        assert_eq!(m.max_us, 70_000);
    }

    #[test]
    fn bad_histograms_are_refused() {
        assert!(Hist::default().add_part("3:x,").is_err());
        assert!(Hist::default().add_part("3,").is_err());
    }

    #[test]
    fn console_is_read_back() {
        let mut console = String::new();
        for b in BUILDS {
            for (c, _) in CONDITIONS {
                let tag = format!("kernel=rt build={b} cond={c} round=0");
                console.push_str(&format!(
                    "FGFT-MARK lat-begin {tag}\nFGFT-MARK pkt sent=10 received=10 fps=123.0\n\
                     FGFT-MARK lat-load {tag} rec=2\nFGFT-MARK cychist {tag} cpu=1 b=3:5,4:5,\n\
                     FGFT-MARK cyc {tag} cpu=1 total=10 max=4 ov=0\n\
                     FGFT-MARK cychist {tag} cpu=0 b=9:10,\nFGFT-MARK cyc {tag} cpu=0 total=10 max=9 ov=0\n"
                ));
            }
        }
        console.push_str(
            "FGFT-MARK rt-begin kernel=rt build=fgft label=bug:7\n\
             kernel BUG at x.c:1!\nfgft: recovered\n\
             FGFT-MARK ethtool-loop dev=eth0 runs=2 failed=2 min_ns=1 p50_ns=2000 p99_ns=3000 max_ns=4000\n\
             FGFT-MARK rt-end kernel=rt build=fgft label=bug:7 rec=2 rec_max_ns=900 rec_sum_ns=1500 restores=1\n",
        );
        let out = fgft_vm::parse_console(&console);
        let run = parse(&out).unwrap();
        let h = &run.hist[&("fgft".to_string(), "faults".to_string())];
        assert_eq!((h.samples(), h.quantile(0.99), h.max_us), (10, 4, 4));
        // Round 0 alone, CPU 1 only: the same histogram, one ratio.
        let r = &run.per_round[&("fgft".to_string(), "faults".to_string(), 0)];
        assert_eq!((r.samples(), r.max_us), (10, 4));
        assert_eq!(round_ratios(&run, "faults"), [1.0]);
        assert_eq!(
            run.recoveries[&("stock".to_string(), "idle".to_string())],
            2
        );
        assert_eq!(run.fps[&("fgft".to_string(), "hog".to_string())], [123.0]);
        let t = &run.trips[&("fgft".to_string(), "bug:7".to_string())];
        assert_eq!(
            (t.calls, t.recoveries, t.restores, t.p50_ns),
            (2, 2, 1, 2000)
        );
        assert_eq!(run.console_lines["bug"], 1.0);
        assert!((p99_ratio(&run, "idle") - 1.0).abs() < 1e-9);
        let s = Settings {
            secs: 1,
            rounds: 1,
            interval_us: 100_000,
            ..Settings::default()
        };
        let md = report("PREEMPT_RT", "6.12-rt", &run, &s);
        assert!(
            md.contains("| faults | fgft | 10 | 3 | 4 | 4 | 4 | 1.00 | 100% | 9 | 9 | 123 | 2 |"),
            "{md}"
        );
        let svg = plot(&[("rt", &run)]).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("p99.9 fgft"),
            "{svg}"
        );

        // A condition measured on one build only is an error; one left
        // out on both is not run.
        let short: String = console
            .lines()
            .filter(|l| !l.contains("build=fgft cond=hog"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(parse(&fgft_vm::parse_console(&short)).is_err());
        let subset: String = console
            .lines()
            .filter(|l| !l.contains("cond=hog") && !l.contains("cond=mgmt"))
            .map(|l| format!("{l}\n"))
            .collect();
        let run = parse(&fgft_vm::parse_console(&subset)).unwrap();
        assert_eq!(run.conditions(), ["idle", "traffic", "faults"]);
        assert!(!report("rt", "6.12-rt", &run, &s).contains("| hog |"));
        assert!(parse(&fgft_vm::parse_console("FGFT-MARK lat-done\n")).is_err());
    }

    #[test]
    fn the_bootstrap_brackets_the_ratio() {
        let mut run = Run::default();
        // Six rounds: fgft's p99 is 1.1x stock's in each.
        for r in 0..6u32 {
            for (b, us) in [
                ("stock", 100 + r as u64),
                ("fgft", 110 + r as u64 * 11 / 10),
            ] {
                let h = hist(&format!("10:98,{us}:2,"));
                run.per_round
                    .insert((b.to_string(), "faults".to_string(), r), h);
            }
        }
        let (lo, hi) = bootstrap_ratio(&run, "faults", 500).unwrap();
        assert!(lo <= hi && lo > 1.05 && hi < 1.15, "{lo} {hi}");
        // The same draws every time.
        assert_eq!(bootstrap_ratio(&run, "faults", 500), Some((lo, hi)));
        assert_eq!(bootstrap_ratio(&run, "idle", 500), None);
        run.per_round.retain(|k, _| k.2 == 0);
        assert_eq!(bootstrap_ratio(&run, "faults", 500), None);
    }

    #[test]
    fn conditions_are_chosen_by_name() {
        assert_eq!(parse_conds("idle,faults"), Ok(0b01001));
        assert_eq!(parse_conds(" hog "), Ok(0b10000));
        assert!(parse_conds("idle,nap").unwrap_err().contains("nap"));
        assert!(parse_conds(",").is_err());
        let s = Settings {
            conds: parse_conds("faults,idle").unwrap(),
            ..Settings::default()
        };
        assert_eq!(s.conditions().collect::<Vec<_>>(), ["idle", "faults"]);
        assert_eq!(Settings::default().conditions().count(), CONDITIONS.len());
    }

    fn e1000_config() -> Config {
        Config::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../corpus/campaign/e1000.toml"),
        )
        .unwrap()
    }

    /// Runs the guest's awk script `name` (its heredoc in the prelude) with
    /// the static busybox setup.sh installs, on `inputs` (file contents, in
    /// order), with `tag=t`; returns what it printed.
    fn guest_awk(name: &str, inputs: &[&str]) -> String {
        let mods = FgftModules {
            modules: Vec::new(),
        };
        let pre = prelude(&e1000_config(), &mods, &Settings::default());
        let start = pre.find(&format!("cat > /fgft/{name} <<'EOF'\n")).unwrap();
        let body = &pre[start..];
        let body = &body[body.find('\n').unwrap() + 1..body.find("\nEOF\n").unwrap()];
        let dir = std::env::temp_dir().join(format!("fgft-awk-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), format!("{body}\n")).unwrap();
        let mut cmd = std::process::Command::new("/bin/busybox");
        cmd.args(["awk", "-v", "tag=t", "-f"]).arg(dir.join(name));
        for (i, text) in inputs.iter().enumerate() {
            let f = dir.join(format!("in{i}"));
            std::fs::write(&f, text).unwrap();
            cmd.arg(f);
        }
        let out = cmd.output().expect("busybox awk");
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The guest's histogram script on cyclictest's zero-padded output:
    /// every bucket keeps its decimal value.
    #[test]
    fn histograms_survive_busybox_awk() {
        let cyc =
            "# Histogram\n000009 000000\t000002\n000118 000003\t000000\n000120 000001\t000004\n\
                   # Total: 000000004 000000006\n# Max Latencies: 00120 00120\n\
                   # Histogram Overflows: 00000 00010\n";
        assert_eq!(
            guest_awk("hist.awk", &[cyc]),
            "FGFT-MARK cychist t cpu=0 b=118:3,120:1,\nFGFT-MARK cyc t cpu=0 total=4 max=120 ov=0\n\
             FGFT-MARK cychist t cpu=1 b=9:2,120:4,\nFGFT-MARK cyc t cpu=1 total=6 max=120 ov=10\n",
        );
    }

    /// The guest's interrupt script on two snapshots of /proc/interrupts:
    /// CPU 1's increments, device rows summed.
    #[test]
    fn interrupts_of_cpu1_are_counted() {
        let snap = |loc: u64, res: u64, dev: u64| {
            format!(
                "           CPU0       CPU1\n\
                 \x20 0:         40          0   IO-APIC   2-edge      timer\n\
                 \x2011:       9000      {dev}   IO-APIC  11-fasteoi   eth0\n\
                 \x2012:          5      {dev}   IO-APIC  12-fasteoi   eth1\n\
                 LOC:      50000      {loc}   Local timer interrupts\n\
                 RES:         10      {res}   Rescheduling interrupts\n\
                 TLB:          3          7   TLB shootdowns\n\
                 ERR:          0\n"
            )
        };
        let text = guest_awk("irq.awk", &[&snap(1000, 2, 0), &snap(6000, 5, 1)]);
        let run = {
            let mut console = String::new();
            for b in BUILDS {
                let tag = format!("kernel=rt build={b} cond=idle round=0");
                console.push_str(&format!(
                    "FGFT-MARK cychist {tag} cpu=1 b=3:5,\nFGFT-MARK cyc {tag} cpu=1 total=5 max=3 ov=0\n{}",
                    text.replace(" t ", &format!(" {tag} "))
                ));
            }
            parse(&fgft_vm::parse_console(&console)).unwrap()
        };
        let m = &run.irqs[&("fgft".to_string(), "idle".to_string())];
        let got: Vec<(&str, u64)> = m.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(got, [("LOC", 5000), ("RES", 3), ("dev", 2)], "{text}");
        let md = report("rt", "6.12-rt", &run, &Settings::default());
        assert!(md.contains("| RES 3, dev 2 |"), "{md}");
    }

    #[test]
    fn the_script_runs_every_condition_on_both_builds() {
        let cfg = e1000_config();
        let mods = FgftModules {
            modules: ["fgft_rt.ko", "e1000_sfi.ko", "e1000_fgft.ko"]
                .iter()
                .map(std::path::PathBuf::from)
                .collect(),
        };
        let c = |id: u32, kind: &str| Candidate {
            id,
            kind: kind.into(),
            op: "regs".into(),
            label: "x".into(),
        };
        let faults = vec![c(4, "bug"), c(5, "div-zero"), c(6, "bug")];
        let s = Settings::default();
        let sc = script(&cfg, &mods, &faults, "rt", &s);
        for b in BUILDS {
            for (c, _) in CONDITIONS {
                for r in 0..s.rounds {
                    let tag = format!("lat-begin kernel=rt build={b} cond={c} round={r}");
                    assert_eq!(sc.matches(&tag).count(), 1, "{tag}\n{sc}");
                }
            }
        }
        assert!(sc.contains("insmod /lib/fgft/e1000_sfi.ko"));
        // Both builds of a condition back to back, one swap per condition.
        let order: Vec<&str> = sc
            .lines()
            .filter_map(|l| l.strip_prefix("echo \"FGFT-MARK lat-begin kernel=rt build="))
            .map(|l| l.split(' ').next().unwrap())
            .collect();
        assert_eq!(
            &order[..6],
            ["fgft", "stock", "stock", "fgft", "fgft", "stock"]
        );
        assert_eq!(
            sc.matches("\nunload_fgft\n").count() + sc.matches("\nunload_stock\n").count(),
            CONDITIONS.len() * s.rounds as usize,
            "{sc}"
        );
        // One pick per kind, its candidates in variant order.
        assert_eq!(sc.matches("picked=\"\"\n").count(), 2, "{sc}");
        assert_eq!(sc.matches("label=bug:").count(), 4, "{sc}");
        assert!(
            sc.contains("echo 4 > $P\nfgft-ethtool -n 50 eth0 regs"),
            "{sc}"
        );
        assert!(sc.contains("cyclictest -q -m -t 2 -a 0,1 -p 95 -i 1000 -D 10"));
        // The loop's summary waits for the kernel's lines, printed quietly.
        assert!(
            sc.contains("fgft-ethtool -n 500 eth0 drvinfo > /tmp/rt.out 2>&1\necho 0 > $P\nsleep 1\necho 1 > /proc/sys/kernel/printk\ncat /tmp/rt.out\n"),
            "{sc}"
        );
        let only = Settings {
            conds: parse_conds("faults").unwrap(),
            ..Settings::default()
        };
        let sc = script(&cfg, &mods, &faults, "rt", &only);
        assert_eq!(sc.matches("lat-begin").count(), 2 * only.rounds as usize);
        assert!(!sc.contains("cond=idle"));
    }
}

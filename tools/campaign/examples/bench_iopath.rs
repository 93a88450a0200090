//! Benchmark of the isolated I/O path (issue 14), not a test: where the time
//! of one isolated transmit, interrupt and NAPI poll goes, stage by stage,
//! against the same entry called with isolation off, in one boot.
//!
//! `cargo run --release -p fgft-campaign --example bench_iopath [CONFIG...]`
//! (default: corpus/campaign/8139too.toml and e1000.toml; the config's
//! `io_path` names the entry points).  `FGFT_BENCH_ROUNDS` (default 5) and
//! `FGFT_BENCH_SECS` (default 5) set the rounds and the seconds of traffic
//! per measurement. `FGFT_BENCH_LOADS` (default `frames`) names the loads,
//! comma-separated: `frames` (fgft-pkt: minimum-size raw frames, one
//! transmit each) and `tcp` (fgft-tcp: one TCP stream, as netperf's
//! TCP_STREAM; with e1000's TSO one transmit carries many frames). Seen
//! with 8139too on QEMU: after a few streams its second interface does not
//! come back from the receiver's network namespace, so `tcp` is for e1000.
//! `FGFT_BENCH_PERF` (a host `perf`) profiles each measurement in the guest.
//! `FGFT_BENCH_INSN=1` counts the guest's instructions per measurement with
//! QEMU's plugin (`fgft_vm::InsnProfile`): instructions per received frame
//! of each build, and the symbols whose count isolation changes most. It
//! sees what `perf` cannot (code with interrupts off) and repeats from run
//! to run; it does not count QEMU's device emulation.
//!
//! Per round, in one boot:
//! - **stock**: the driver built from the same sources, frames/s;
//! - **isolated**: the split with the config's triggered entry points and
//!   its I/O path isolated, built with `--stage-times`: frames/s, and per
//!   I/O-path entry the cycles of each stage of its transactions (begin with
//!   the device checkpoint, the SFI module's grants, copy-in, the body with
//!   its checks and kernel wrappers, copy-out, commit);
//! - **isolation off**: the same modules with the I/O-path entries switched
//!   to plain calls (debugfs `isolate` 0): frames/s and cycles per call;
//! - **no read checks**: the split built with `--no-read-checks` too: the
//!   body's share of the read checks is the body's difference.
//!
//! Reported per entry as ns per call (medians over the rounds); nothing is
//! asserted.  The numbers come from QEMU TCG: see the report's note.

use fgft_campaign::config::Config;
use fgft_campaign::fgft::FgftModules;
use fgft_campaign::{prepare, CampaignError};
use fgft_vm::{Env, InsnProfile, InsnSpan, VmSpec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

const STAGES: [&str; 6] = ["begin", "grant", "copy_in", "body", "copy_out", "commit"];

/// The runtime's per-transaction events (debugfs `stages`) and their titles.
const EVENTS: [(&str, &str); 6] = [
    ("ev_checks", "checks in the body"),
    ("ev_slow", "past the last hit"),
    ("ev_global", "of them kernel variables"),
    ("ev_logged", "write-log records"),
    ("ev_grants", "grants"),
    ("ev_copies", "tracked objects"),
];

/// One build's modules in the guest: `/lib/fgft/<flavor>/<file>`.
fn guest(flavor: &str, m: &Path) -> String {
    format!(
        "/lib/fgft/{flavor}/{}",
        m.file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default()
    )
}

fn module_name(m: &Path) -> String {
    m.file_stem()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Prints each I/O-path entry's stage file as one marker.
fn dump_stages(s: &mut String, io: &[String], kind: &str, round: usize) {
    for e in io {
        s.push_str(&format!(
            "echo \"FGFT-MARK stages kind={kind} round={round} entry={e} $(sed 's/ /=/' /sys/kernel/debug/fgft/entries/{e}/stages | tr '\\n' ' ')\"\n"
        ));
    }
}

/// One kind of traffic: its name, the guest command measuring it, the
/// marker that command prints, and the marker field that is the figure.
struct Load {
    name: &'static str,
    marker: &'static str,
    field: &'static str,
    unit: &'static str,
    /// The marker field counting the frames received.
    frames: &'static str,
}

/// Raw minimum-size frames (fgft-pkt, every frame is one transmit) and one
/// TCP stream (fgft-tcp, as netperf's TCP_STREAM measured the paper's
/// e1000: full-size frames, and with TSO one transmit for many of them).
const LOADS: [Load; 2] = [
    Load {
        name: "frames",
        marker: "pkt",
        field: "fps",
        unit: "frames/s",
        frames: "received",
    },
    Load {
        name: "tcp",
        marker: "tcp",
        field: "mbps",
        unit: "Mbit/s",
        frames: "rx_frames",
    },
];

impl Load {
    fn command(&self, secs: u32) -> String {
        match self.name {
            "frames" => format!("fgft-pkt -d {secs} -w 5000 eth0 eth1"),
            _ => format!("fgft-tcp -d {secs} -W 1 -w 5000 eth0 eth1"),
        }
    }
}

/// Measures every load once as `kind` (stage files reset before and dumped
/// after each).
///
/// With `marks` (an instruction profile), each measurement is a span of its
/// own: a mark before the command and one after it, whose labels go to
/// `marks` (`-` for the span before, `kind@load#round` for the measurement).
fn measure(
    s: &mut String,
    loads: &[&Load],
    io: &[String],
    (kind, round, secs): (&str, usize, u32),
    marks: &mut Option<Vec<String>>,
) {
    let perf = perf_program();
    for l in loads {
        s.push_str("echo 1 > /sys/kernel/debug/fgft/reset 2>/dev/null\n");
        let record = match &perf {
            Some(p) => format!(
                "{} record -q -a -e cpu-clock -F 2000 -o /tmp/perf.data -- ",
                p.display()
            ),
            None => String::new(),
        };
        s.push_str(&format!(
            "echo FGFT-MARK tp-begin kind={kind} load={} round={round}\n",
            l.name
        ));
        if let Some(m) = marks.as_mut() {
            m.push("-".into());
            s.push_str(&InsnProfile::mark(m.len()));
        }
        s.push_str(&format!("{record}{}\n", l.command(secs)));
        if let Some(m) = marks.as_mut() {
            m.push(format!("{kind}@{}#{round}", l.name));
            s.push_str(&InsnProfile::mark(m.len()));
        }
        // Round 0 only: the profile of each build and load, by symbol.
        if let Some(p) = perf.as_ref().filter(|_| round == 0) {
            s.push_str(&format!(
                "{} report -i /tmp/perf.data --stdio -n --sort sym --percent-limit 0.5 \
                 2>/dev/null | grep -v '^#' | grep . | sed 's/^/FGFT-PERF {kind}@{} /'\n",
                p.display(),
                l.name
            ));
        }
        if kind != "stock" {
            dump_stages(s, io, &format!("{kind}@{}", l.name), round);
        }
    }
}

fn script(
    cfg: &Config,
    stock: &Path,
    builds: &[(&str, &FgftModules)],
    loads: &[&Load],
    rounds: usize,
    secs: u32,
    marks: &mut Option<Vec<String>>,
) -> String {
    let d = &cfg.driver;
    let io = &d.io_path;
    let mut s = String::new();
    s.push_str(&format!(
        "insmod {} || exit 3\n",
        guest(builds[0].0, &builds[0].1.modules[0])
    ));
    s.push_str(&cfg.load_deps());
    for r in 0..rounds {
        s.push_str(&format!(
            "insmod {ko} || exit 4\nsleep 1\n{setup}\n",
            ko = guest("stock", stock),
            setup = d.setup
        ));
        measure(&mut s, loads, io, ("stock", r, secs), marks);
        s.push_str(&format!("rmmod {}\n", cfg.sysfs_module()));
        for (flavor, mods) in builds {
            for m in &mods.modules[1..] {
                s.push_str(&format!("insmod {} || exit 5\n", guest(flavor, m)));
            }
            s.push_str(&format!("sleep 1\n{}\n", d.setup));
            measure(&mut s, loads, io, (flavor, r, secs), marks);
            if *flavor == "isolated" {
                for e in io {
                    s.push_str(&format!(
                        "echo 0 > /sys/kernel/debug/fgft/entries/{e}/isolate\n"
                    ));
                }
                measure(&mut s, loads, io, ("off", r, secs), marks);
            }
            for m in mods.modules[1..].iter().rev() {
                s.push_str(&format!("rmmod {}\n", module_name(m)));
            }
        }
    }
    s
}

/// `FGFT_BENCH_PERF`: a host `perf` binary to sample every measurement with
/// in the guest (`cpu-clock`, all CPUs); round 0's profiles are printed on
/// the console as `FGFT-PERF <kind>@<load> <percent> <samples> <symbol>`
/// (see the VM log). Samples cost throughput, so the figures of a profiled
/// run are not the benchmark's.
fn perf_program() -> Option<PathBuf> {
    std::env::var_os("FGFT_BENCH_PERF").map(PathBuf::from)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// ns per call of each stage (and of plain calls) in one stages marker.
fn per_call(m: &fgft_vm::Marker) -> Option<BTreeMap<String, f64>> {
    let khz: f64 = m.parse("tsc_khz")?;
    let ns = |cycles: f64, n: f64| cycles * 1e6 / khz / n;
    let mut out = BTreeMap::new();
    let txns: f64 = m.parse("txns")?;
    if txns > 0.0 {
        let mut total = 0.0;
        for st in STAGES {
            let v = ns(m.parse(st)?, txns);
            total += v;
            out.insert(st.to_string(), v);
        }
        out.insert("total".into(), total);
        out.insert("calls".into(), txns);
        // Events per call (absent from an older runtime's stages file).
        for (ev, _) in EVENTS {
            if let Some(v) = m.parse::<f64>(ev) {
                out.insert(ev.to_string(), v / txns);
            }
        }
    }
    let plain: f64 = m.parse("plain")?;
    if plain > 0.0 {
        out.insert("plain".into(), ns(m.parse("plain_cycles")?, plain));
        out.insert("plain_calls".into(), plain);
    }
    Some(out)
}

fn bench(
    env: &Env,
    path: &Path,
    loads: &[&Load],
    rounds: usize,
    secs: u32,
) -> Result<String, CampaignError> {
    let cfg = Config::load(path)?;
    let d = &cfg.driver;
    if d.io_path.is_empty() {
        return Err(CampaignError::Msg(format!(
            "{}: the config names no io_path",
            path.display()
        )));
    }
    let plain = prepare::plain(env, &cfg)?;
    let stock = prepare::build_native(env, &cfg, &plain)?;
    let entries: Vec<String> = cfg
        .trigger
        .keys()
        .chain(d.io_path.iter())
        .cloned()
        .collect();
    let iso = prepare::build_fgft_with(env, &cfg, &plain, &entries, "iostages", |o| {
        o.stage_times = true;
    })?;
    let noreads = prepare::build_fgft_with(env, &cfg, &plain, &entries, "iostages-nr", |o| {
        o.stage_times = true;
        o.no_read_checks = true;
    })?;
    let builds = [("isolated", &iso), ("noreads", &noreads)];
    let mut spec = VmSpec::new(&format!("bench-iopath-{}", d.name));
    spec.files.push((stock.clone(), guest("stock", &stock)));
    for (flavor, mods) in &builds {
        for m in &mods.modules {
            spec.files.push((m.clone(), guest(flavor, m)));
        }
    }
    spec.qemu_args = d.qemu.clone();
    spec.stock_modules = d.deps.clone();
    spec.timeout =
        Duration::from_secs(180 + rounds as u64 * loads.len() as u64 * (4 * secs as u64 + 90));
    let mut marks = insn_wanted().then(Vec::new);
    spec.script = script(&cfg, &stock, &builds, loads, rounds, secs, &mut marks);
    let insn = match &marks {
        Some(m) => Some(InsnProfile::attach(env, &mut spec, m.len())?),
        None => None,
    };
    spec.add_tool(env, "fgft-pkt")?;
    spec.add_tool(env, "fgft-tcp")?;
    if let Some(p) = perf_program() {
        spec.add_host_program(&p)?;
    }
    let out = fgft_vm::run(env, &spec)?;

    // (load, kind) -> per-round figures, and frames received.
    let mut figures: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    let mut frames: BTreeMap<String, f64> = BTreeMap::new();
    let mut begun: Option<(String, String)> = None;
    // (entry, kind@load) -> stage -> per-round values.
    let mut stages: BTreeMap<(String, String), BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for m in &out.markers {
        if m.name == "tp-begin" {
            begun = m
                .get("load")
                .zip(m.get("kind"))
                .map(|(l, k)| (l.to_string(), k.to_string()));
        } else if m.name == "stages" {
            let (Some(e), Some(k)) = (m.get("entry"), m.get("kind")) else {
                continue;
            };
            if let Some(pc) = per_call(m) {
                let slot = stages.entry((e.to_string(), k.to_string())).or_default();
                for (st, v) in pc {
                    slot.entry(st).or_default().push(v);
                }
            }
        } else if let Some(l) = loads.iter().find(|l| l.marker == m.name) {
            if let (Some((load, k)), Some(v)) = (begun.take(), m.parse::<f64>(l.field)) {
                if load == l.name {
                    let round = figures.get(&(load.clone(), k.clone())).map_or(0, Vec::len);
                    if let Some(n) = m.parse::<f64>(l.frames) {
                        frames.insert(format!("{k}@{load}#{round}"), n);
                    }
                    figures.entry((load, k)).or_default().push(v);
                }
            }
        }
    }
    let want = ["stock", "isolated", "off", "noreads"];
    let missing: Vec<String> = loads
        .iter()
        .flat_map(|l| want.iter().map(move |k| (l.name, *k)))
        .filter(|(l, k)| {
            figures
                .get(&(l.to_string(), k.to_string()))
                .map_or(0, Vec::len)
                != rounds
        })
        .map(|(l, k)| format!("{l}/{k}"))
        .collect();
    if !missing.is_empty() {
        return Err(CampaignError::Msg(format!(
            "{}: not every round measured: {}\n{}",
            d.name,
            missing.join(", "),
            out.summary()
        )));
    }
    let mut r = String::new();
    r.push_str(&format!(
        "### {} ({} rounds of {secs} s)\n\n",
        d.name, rounds
    ));
    r.push_str("| build |");
    for l in loads {
        r.push_str(&format!(
            " {} ({}, median) | against stock |",
            l.name, l.unit
        ));
    }
    r.push_str("\n|---|");
    r.push_str(&"---:|---:|".repeat(loads.len()));
    r.push('\n');
    for k in want {
        let name = match k {
            "stock" => "stock",
            "isolated" => "I/O path isolated (stage stamps)",
            "off" => "same modules, I/O path isolation off",
            _ => "I/O path isolated, no read checks",
        };
        r.push_str(&format!("| {name} |"));
        for l in loads {
            let get = |k: &str| median(&mut figures[&(l.name.to_string(), k.to_string())].clone());
            let v = get(k);
            r.push_str(&format!(" {v:.1} | {:.3} |", v / get("stock")));
        }
        r.push('\n');
    }
    for l in loads {
        stage_tables(&mut r, &d.io_path, &stages, l.name);
    }
    if let (Some(p), Some(m)) = (&insn, &marks) {
        let spans = p.read()?;
        for l in loads {
            insn_tables(&mut r, &spans, m, &frames, l.name);
        }
    }
    Ok(r)
}

/// `FGFT_BENCH_INSN=1`: the guest's instructions counted by QEMU
/// ([`InsnProfile`]) per measurement.
fn insn_wanted() -> bool {
    std::env::var("FGFT_BENCH_INSN").is_ok_and(|v| v == "1")
}

/// Instructions per received frame of each build (all rounds together),
/// and the functions whose instructions per frame isolation changes most.
fn insn_tables(
    r: &mut String,
    spans: &[InsnSpan],
    labels: &[String],
    frames: &BTreeMap<String, f64>,
    load: &str,
) {
    // kind -> (instructions by symbol, frames), summed over the rounds.
    let mut per: BTreeMap<String, (BTreeMap<String, u64>, f64)> = BTreeMap::new();
    for s in spans {
        let Some(label) = (s.mark as usize).checked_sub(1).and_then(|i| labels.get(i)) else {
            continue;
        };
        let Some((kind, rest)) = label.split_once('@') else {
            continue;
        };
        if !rest.starts_with(&format!("{load}#")) {
            continue;
        }
        let Some(n) = frames.get(label) else { continue };
        let slot = per.entry(kind.to_string()).or_default();
        for (sym, c) in &s.by_symbol {
            *slot.0.entry(sym.clone()).or_insert(0) += c;
        }
        slot.1 += n;
    }
    let Some((stock, stock_n)) = per.get("stock") else {
        return;
    };
    let per_frame = |m: &BTreeMap<String, u64>, n: f64| m.values().sum::<u64>() as f64 / n.max(1.0);
    let base = per_frame(stock, *stock_n);
    r.push_str(&format!(
        "\n{load}: guest instructions per received frame (QEMU's count, every round; \
         device emulation and idle cpus count none):\n\n\
         | build | frames | instructions per frame | against stock |\n|---|---:|---:|---:|\n"
    ));
    for (kind, (m, n)) in &per {
        let v = per_frame(m, *n);
        r.push_str(&format!("| {kind} | {n:.0} | {v:.0} | {:.2} |\n", v / base));
    }
    let Some((iso, iso_n)) = per.get("isolated") else {
        return;
    };
    // By function: an SFI copy and the native code it stands for are one
    // row.
    let rows =
        fgft_vm::compare_by_function((stock, 1.0 / stock_n.max(1.0)), (iso, 1.0 / iso_n.max(1.0)));
    r.push_str(&format!(
        "\n{load}: the 30 functions whose instructions per frame change most, isolated against stock:\n\n\
         | function | stock | isolated | change |\n|---|---:|---:|---:|\n"
    ));
    for (k, a, b) in rows.iter().take(30) {
        r.push_str(&format!("| `{k}` | {a:.0} | {b:.0} | {:+.0} |\n", b - a));
    }
}

/// The per-stage and per-event tables of one load.
fn stage_tables(
    r: &mut String,
    io: &[String],
    stages: &BTreeMap<(String, String), BTreeMap<String, Vec<f64>>>,
    load: &str,
) {
    let get = |e: &str, k: &str, st: &str| {
        stages
            .get(&(e.to_string(), format!("{k}@{load}")))
            .and_then(|m| m.get(st))
            .map(|v| median(&mut v.clone()))
            .unwrap_or(f64::NAN)
    };
    r.push_str(&format!(
        "\n{load}: ns per call, medians over the rounds (`off`: the entry called with isolation off):\n\n"
    ));
    r.push_str("| entry | calls | begin | grant | copy-in | body | body, no read checks | copy-out | commit | total | off | total / off |\n");
    r.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for e in io {
        let off = get(e, "off", "plain");
        let total = get(e, "isolated", "total");
        let mut row = format!("| {e} | {:.0} ", get(e, "isolated", "calls"));
        for st in ["begin", "grant", "copy_in", "body"] {
            row.push_str(&format!("| {:.0} ", get(e, "isolated", st)));
        }
        row.push_str(&format!("| {:.0} ", get(e, "noreads", "body")));
        for st in ["copy_out", "commit"] {
            row.push_str(&format!("| {:.0} ", get(e, "isolated", st)));
        }
        row.push_str(&format!("| {total:.0} | {off:.0} | {:.1} |\n", total / off));
        r.push_str(&row);
    }
    r.push_str(&format!(
        "\n{load}: what one isolated call does, on average (medians over the rounds):\n\n| entry |"
    ));
    for (_, title) in EVENTS {
        r.push_str(&format!(" {title} |"));
    }
    r.push_str("\n|---|");
    r.push_str(&"---:|".repeat(EVENTS.len()));
    r.push('\n');
    for e in io {
        r.push_str(&format!("| {e} |"));
        for (ev, _) in EVENTS {
            r.push_str(&format!(" {:.1} |", get(e, "isolated", ev)));
        }
        r.push('\n');
    }
    r.push('\n');
}

fn main() -> ExitCode {
    let env = match Env::load() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("bench_iopath: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut configs: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    if configs.is_empty() {
        configs = ["8139too", "e1000"]
            .iter()
            .map(|d| env.repo_root.join(format!("corpus/campaign/{d}.toml")))
            .collect();
    }
    let num = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let rounds = num("FGFT_BENCH_ROUNDS", 5) as usize;
    let secs = num("FGFT_BENCH_SECS", 5) as u32;
    let names = std::env::var("FGFT_BENCH_LOADS").unwrap_or_else(|_| "frames".into());
    let mut loads: Vec<&Load> = Vec::new();
    for n in names.split(',').filter(|n| !n.is_empty()) {
        match LOADS.iter().find(|l| l.name == n) {
            Some(l) => loads.push(l),
            None => {
                eprintln!("bench_iopath: FGFT_BENCH_LOADS: unknown load `{n}` (frames, tcp)");
                return ExitCode::FAILURE;
            }
        }
    }
    if loads.is_empty() {
        eprintln!("bench_iopath: FGFT_BENCH_LOADS names no load (frames, tcp)");
        return ExitCode::FAILURE;
    }
    println!("## I/O path stage times (QEMU TCG, one boot per driver)\n");
    let mut failed = false;
    for c in &configs {
        match bench(&env, c, &loads, rounds, secs) {
            Ok(r) => print!("{r}"),
            Err(e) => {
                eprintln!("bench_iopath: {}: {e}", c.display());
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

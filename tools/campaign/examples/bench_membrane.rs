//! Benchmark of restartable file systems (issue 17), not a test: for minix
//! and VFAT, the fault campaign on the split file system, the same faults
//! in the native modules, and the workload's overhead against Debian's own
//! modules. See `fgft_campaign::membrane` for the method.
//!
//! `cargo run --release -p fgft-campaign --example bench_membrane -- [--out results/membrane.md] [minix|vfat]...`
//! (`scripts/bench-membrane.sh` runs it as the README's benchmark command).
//! `FGFT_FS_FAULTS_PER_ENTRY` (default 6 for minix, 2 for VFAT, whose
//! operations reach 4 times as many functions) variants per function,
//! `FGFT_FS_NATIVE` (default: all that fired) variants run natively,
//! `FGFT_FS_ROUNDS` (5) rounds and `FGFT_FS_OPS` (2000) operations a round
//! of the overhead benchmark change the run.  `--overhead` runs the
//! overhead benchmark alone and prints its rounds (no report);
//! `--profile` prints where an isolated operation's time goes, per entry
//! point (the runtime's stage sums, `membrane::profile`);
//! `FGFT_FS_READS=0` profiles an SFI module built without load checks;
//! `FGFT_FS_INSN=1` also counts the guest's instructions by symbol (QEMU's
//! plugin, `fgft_vm::InsnProfile`) in both workloads;
//! `FGFT_FS_PERF=/usr/bin/perf` also samples the guest with that `perf`
//! during both workloads and prints the samples by symbol, most added by
//! isolation first.

use fgft_campaign::membrane::{self, Campaign, Fs, Native, Results, Round};
use fgft_campaign::CampaignError;
use fgft_vm::Env;
use std::path::PathBuf;
use std::process::ExitCode;

fn var(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One file system's runs.
struct Run {
    fs: &'static Fs,
    campaign: Campaign,
    per_entry: usize,
    targets: usize,
    entries: usize,
    native: Vec<(u32, Native)>,
    rounds: Vec<Round>,
    overhead_error: Option<String>,
    rounds_nr: Vec<Round>,
    overhead_nr_error: Option<String>,
    sidecar: String,
    fsck: (Option<i32>, String),
}

/// The overhead benchmark of `fs` alone: its rounds and the median ratio.
fn overhead_only(env: &Env, fs: &'static Fs, ops: usize) -> Result<(), CampaignError> {
    let m = fs.name;
    let rounds = var("FGFT_FS_ROUNDS", 5);
    let (rt, built) = membrane::split_fs(
        env,
        fs,
        &env.src612,
        Vec::new(),
        &format!("bench-{m}-clean"),
    )?;
    let r = membrane::overhead(env, fs, (&rt, &built), rounds, ops)?;
    for (i, x) in r.iter().enumerate() {
        println!(
            "{m} round {}: stock {:.3} s, fgft {:.3} s",
            i + 1,
            x.stock,
            x.fgft
        );
    }
    println!(
        "{m}: fgft/stock of the medians {:.3}",
        membrane::overhead_ratio(&r)
    );
    Ok(())
}

/// Per entry point: calls, µs per call of each stage and of a plain call,
/// events per call.
fn profile_only(env: &Env, fs: &'static Fs, ops: usize) -> Result<(), CampaignError> {
    let perf = std::env::var_os("FGFT_FS_PERF").map(std::path::PathBuf::from);
    let insn = var("FGFT_FS_INSN", 0) == 1;
    let (per, (iso, off), perf_rows, spans) = membrane::profile(
        env,
        fs,
        ops,
        (var("FGFT_FS_READS", 1) == 0, perf.as_deref(), insn),
    )?;
    let m = fs.name;
    println!("{m}: {ops} operations: {iso:.3} s isolated, {off:.3} s with isolation off");
    let stages = ["begin", "grant", "copy_in", "body", "copy_out", "commit"];
    let events = [
        "ev_checks",
        "ev_slow",
        "ev_global",
        "ev_heap",
        "ev_logged",
        "ev_grants",
    ];
    let aborts = |s: &membrane::Stages| -> u64 {
        s.iter()
            .filter(|(k, _)| k.starts_with("aborts_"))
            .map(|(_, v)| v)
            .sum()
    };
    println!(
        "{:<16} {:>6} {:>6} {} {:>8} {:>6} | {}",
        "entry",
        "calls",
        "aborts",
        stages.map(|s| format!("{s:>8}")).join(" "),
        "total",
        "plain",
        events.join(" ")
    );
    for (e, (i, p)) in &per {
        let n = *i.get("txns").unwrap_or(&0);
        let khz = *i.get("tsc_khz").unwrap_or(&1).max(&1) as f64;
        let us = |c: u64, n: u64| {
            if n == 0 {
                0.0
            } else {
                c as f64 / khz * 1000.0 / n as f64
            }
        };
        let st: Vec<String> = stages
            .iter()
            .map(|s| format!("{:>8.1}", us(*i.get(*s).unwrap_or(&0), n)))
            .collect();
        let total: u64 = stages.iter().map(|s| *i.get(*s).unwrap_or(&0)).sum();
        let plain = us(
            *p.get("plain_cycles").unwrap_or(&0),
            *p.get("plain").unwrap_or(&0),
        );
        let ev: Vec<String> = events
            .iter()
            .map(|k| {
                let v = *i.get(*k).unwrap_or(&0) as f64 / n.max(1) as f64;
                format!("{v:>w$.1}", w = k.len())
            })
            .collect();
        println!(
            "{e:<16} {n:>6} {:>6} {} {:>8.1} {plain:>6.1} | {}",
            aborts(i),
            st.join(" "),
            us(total, n),
            ev.join(" ")
        );
    }
    if let Some((i, o)) = &spans {
        let (ti, to) = (i.total() as f64, o.total() as f64);
        println!(
            "guest instructions (QEMU's count) per operation: {:.0} isolated, {:.0} isolation off ({:.2}x)",
            ti / ops as f64,
            to / ops as f64,
            ti / to.max(1.0)
        );
        // By function: an SFI copy and the native code it stands for are
        // one row.
        let per = 1.0 / ops.max(1) as f64;
        let rows = fgft_vm::compare_by_function((&i.by_symbol, per), (&o.by_symbol, per));
        println!(
            "  per operation: {:>8} {:>8} {:>8}  function",
            "iso", "off", "added"
        );
        for (k, a, b) in rows.iter().take(50) {
            println!("  {a:>22.0} {b:>8.0} {:>+8.0}  {k}", a - b);
        }
    }
    if !perf_rows.is_empty() {
        println!("guest perf (cpu-clock samples at 4 kHz, both CPUs), by what isolation adds:");
        println!("  {:>6} {:>6} {:>6}  symbol", "iso", "off", "added");
        for r in perf_rows.iter().take(60) {
            let added = r.iso as i64 - r.off as i64;
            println!("  {:>6} {:>6} {added:>6}  {}", r.iso, r.off, r.symbol);
        }
    }
    Ok(())
}

fn run(env: &Env, fs: &'static Fs, ops: usize) -> Result<Run, CampaignError> {
    let default = if fs.name == "vfat" { 2 } else { 6 };
    let per_entry = var("FGFT_FS_FAULTS_PER_ENTRY", default);
    let targets = membrane::fs_targets(env, fs)?.len();
    let m = fs.name;
    eprintln!("bench_membrane: {m}: campaign, {per_entry} per function over {targets} functions");
    let c = membrane::fs_campaign(env, fs, &format!("bench-{m}-camp"), per_entry, 10)?;
    if c.out.panicked || c.out.timed_out {
        return Err(CampaignError::Msg(format!(
            "{m}: the campaign's boot went down: {}\n{}",
            c.out.summary(),
            c.out.tail(40)
        )));
    }
    let fsck = membrane::fsck(fs.fsck.0, fs.fsck.1, &c.img)?;
    let fired: Vec<u32> = c
        .fired()
        .iter()
        .filter_map(|f| f.parse::<u32>("id"))
        .collect();
    let n_native = var("FGFT_FS_NATIVE", fired.len()).min(fired.len());
    let native_dir = membrane::native_fs(env, fs, &c.tree, &format!("bench-{m}"))?;
    let mut native = Vec::new();
    for (i, id) in fired.iter().take(n_native).enumerate() {
        let o = membrane::native_outcome(env, fs, &native_dir, *id, &format!("bench-{m}-native"))?;
        eprintln!(
            "bench_membrane: {m}: native {}/{n_native}: variant {id}: {}",
            i + 1,
            o.name()
        );
        native.push((*id, o));
    }
    let n = var("FGFT_FS_ROUNDS", 5);
    let (rounds, overhead_error) = overhead_of(env, fs, ops, n, false)?;
    let (rounds_nr, overhead_nr_error) = overhead_of(env, fs, ops, n, true)?;
    let sidecar_path = env.repo_root.join(fs.sidecar);
    let sidecar = std::fs::read_to_string(&sidecar_path).map_err(|source| CampaignError::Io {
        path: sidecar_path,
        source,
    })?;
    let entries = sidecar_entries(&sidecar);
    Ok(Run {
        fs,
        campaign: c,
        per_entry,
        targets,
        entries,
        native,
        rounds,
        overhead_error,
        rounds_nr,
        overhead_nr_error,
        sidecar,
        fsck,
    })
}

/// The overhead rounds of `fs` split as it is or without load checks
/// (`no_reads`), or why there are none (a failed workload is reported, not
/// fatal).
fn overhead_of(
    env: &Env,
    fs: &'static Fs,
    ops: usize,
    n: usize,
    no_reads: bool,
) -> Result<(Vec<Round>, Option<String>), CampaignError> {
    let m = fs.name;
    let tag = if no_reads { "clean-nr" } else { "clean" };
    let (rt, built) = membrane::split_fs_with(
        env,
        fs,
        &env.src612,
        Vec::new(),
        &format!("bench-{m}-{tag}"),
        |o| o.no_read_checks = no_reads,
    )?;
    eprintln!("bench_membrane: {m}: overhead ({tag}), {n} rounds of {ops} operations");
    Ok(match membrane::overhead(env, fs, (&rt, &built), n, ops) {
        Ok(r) => (r, None),
        Err(e) => {
            eprintln!("bench_membrane: {m}: overhead ({tag}): {e}");
            let first = e.to_string().lines().next().unwrap_or("").to_string();
            (Vec::new(), Some(first))
        }
    })
}

/// The entry points a sidecar's `[isolate] entry` lists.
fn sidecar_entries(text: &str) -> usize {
    text.parse::<toml::Value>()
        .ok()
        .and_then(|t| t.get("isolate")?.get("entry")?.as_array().map(Vec::len))
        .unwrap_or(0)
}

/// What to run: the whole benchmark and its report, or one part.
#[derive(Clone, Copy, PartialEq)]
enum Part {
    All,
    Overhead,
    Profile,
}

fn bench(out: &PathBuf, which: &[&'static Fs], part: Part) -> Result<(), CampaignError> {
    let env = Env::load()?;
    let ops = var("FGFT_FS_OPS", 2000);
    if part != Part::All {
        for fs in which {
            if part == Part::Overhead {
                overhead_only(&env, fs, ops)?;
            } else {
                profile_only(&env, fs, ops)?;
            }
        }
        return Ok(());
    }
    let mut runs = Vec::new();
    for fs in which {
        runs.push(run(&env, fs, ops)?);
    }
    let results: Vec<Results<'_>> = runs
        .iter()
        .map(|r| Results {
            fs: r.fs,
            campaign: &r.campaign,
            per_entry: r.per_entry,
            targets: r.targets,
            entries: r.entries,
            native: r.native.clone(),
            rounds: r.rounds.clone(),
            overhead_error: r.overhead_error.clone(),
            rounds_nr: r.rounds_nr.clone(),
            overhead_nr_error: r.overhead_nr_error.clone(),
            ops,
            sidecar: r.sidecar.clone(),
            fsck: r.fsck.clone(),
        })
        .collect();
    let names: Vec<&str> = which.iter().map(|f| f.name).collect();
    // The settings this run was given, as the command that repeats it.
    let mut command = String::new();
    for v in [
        "FGFT_FS_FAULTS_PER_ENTRY",
        "FGFT_FS_NATIVE",
        "FGFT_FS_ROUNDS",
        "FGFT_FS_OPS",
    ] {
        if let Ok(x) = std::env::var(v) {
            command.push_str(&format!("{v}={x} "));
        }
    }
    command.push_str(&format!("scripts/bench-membrane.sh {}", names.join(" ")));
    let text = membrane::report(&command, &results);
    std::fs::write(out, text).map_err(|source| CampaignError::Io {
        path: out.clone(),
        source,
    })?;
    eprintln!("bench_membrane: wrote {}", out.display());
    Ok(())
}

fn main() -> ExitCode {
    let mut out = PathBuf::from("results/membrane.md");
    let mut which: Vec<&'static Fs> = Vec::new();
    let mut part = Part::All;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => match args.next() {
                Some(p) => out = PathBuf::from(p),
                None => return usage(),
            },
            "--overhead" => part = Part::Overhead,
            "--profile" => part = Part::Profile,
            "minix" => which.push(&membrane::MINIX),
            "vfat" => which.push(&membrane::VFAT),
            _ => return usage(),
        }
    }
    if which.is_empty() {
        which = vec![&membrane::MINIX, &membrane::VFAT];
    }
    match bench(&out, &which, part) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_membrane: {e}");
            ExitCode::from(1)
        }
    }
}

fn usage() -> ExitCode {
    eprintln!("usage: bench_membrane [--out FILE] [--overhead|--profile] [minix|vfat]...");
    ExitCode::from(2)
}

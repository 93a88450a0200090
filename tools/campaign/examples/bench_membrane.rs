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
//! of the overhead benchmark change the run.

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
    sidecar: String,
    fsck: (Option<i32>, String),
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
    let rounds = var("FGFT_FS_ROUNDS", 5);
    let (rt, built) = membrane::split_fs(
        env,
        fs,
        &env.src612,
        Vec::new(),
        &format!("bench-{m}-clean"),
    )?;
    eprintln!("bench_membrane: {m}: overhead, {rounds} rounds of {ops} operations");
    let (rounds, overhead_error) = match membrane::overhead(env, fs, (&rt, &built), rounds, ops) {
        Ok(r) => (r, None),
        Err(e) => {
            eprintln!("bench_membrane: {m}: overhead: {e}");
            (
                Vec::new(),
                Some(e.to_string().lines().next().unwrap_or("").to_string()),
            )
        }
    };
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
        sidecar,
        fsck,
    })
}

/// The entry points a sidecar's `[isolate] entry` lists.
fn sidecar_entries(text: &str) -> usize {
    text.parse::<toml::Value>()
        .ok()
        .and_then(|t| t.get("isolate")?.get("entry")?.as_array().map(Vec::len))
        .unwrap_or(0)
}

fn bench(out: &PathBuf, which: &[&'static Fs]) -> Result<(), CampaignError> {
    let env = Env::load()?;
    let ops = var("FGFT_FS_OPS", 2000);
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
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => match args.next() {
                Some(p) => out = PathBuf::from(p),
                None => return usage(),
            },
            "minix" => which.push(&membrane::MINIX),
            "vfat" => which.push(&membrane::VFAT),
            _ => return usage(),
        }
    }
    if which.is_empty() {
        which = vec![&membrane::MINIX, &membrane::VFAT];
    }
    match bench(&out, &which) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_membrane: {e}");
            ExitCode::from(1)
        }
    }
}

fn usage() -> ExitCode {
    eprintln!("usage: bench_membrane [--out FILE] [minix|vfat]...");
    ExitCode::from(2)
}

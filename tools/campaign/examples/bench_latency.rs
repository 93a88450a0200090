//! Benchmark of timing isolation (issue 18), not a test: cyclictest on
//! CPU 1 while the e1000 driver, stock and under fgft, works on CPU 0, on
//! Debian's stock 6.12 kernel and on its PREEMPT_RT flavour. See
//! `fgft_campaign::latency` for the method.
//!
//! `cargo run --release -p fgft-campaign --example bench_latency -- [--out results/latency.md] [stock|rt]...`
//! (`scripts/bench-latency.sh` runs it as the README's benchmark command).
//! The SVG plot goes beside the report (`latency.svg`). `FGFT_LAT_SECS`
//! (default 10), `FGFT_LAT_ROUNDS` (3), `FGFT_LAT_INTERVAL_US` (1000),
//! `FGFT_LAT_PERIOD_MS` (3000), `FGFT_LAT_CALLS` (500) and `FGFT_LAT_RATE`
//! (250 frames/s offered by the traffic load) change the run.

use fgft_campaign::config::Config;
use fgft_campaign::latency::{self, Candidate, Run, Settings, CONDITIONS};
use fgft_campaign::{prepare, CampaignError};
use fgft_vm::{Env, VmSpec};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Variants planted per entry point, and candidates kept per kind.
const PER_ENTRY: usize = 6;
const PER_KIND: usize = 3;
const SEED: u64 = 1;

fn measure(env: &Env, kernel: &str, s: &Settings) -> Result<(Run, Vec<Candidate>), CampaignError> {
    let cfg = Config::load(&env.repo_root.join("corpus/campaign/e1000.toml"))?;
    let prep = prepare::inject(env, &cfg, SEED, PER_ENTRY, &[])?;
    let faults = latency::candidates(&cfg, &prep.variants, PER_KIND);
    let entries: Vec<String> = cfg
        .trigger
        .keys()
        .chain(cfg.driver.io_path.iter())
        .cloned()
        .collect();
    let mods = prepare::build_fgft(env, &cfg, &prep, &entries, "latency")?;
    let mut spec = VmSpec::new(&format!("bench-latency-{kernel}"));
    spec.modules = mods.modules.clone();
    let files = fgft_campaign::guest_files(env)?;
    fgft_campaign::add_guest_support(&cfg, &files, &mut spec);
    spec.stock_modules.push(cfg.driver.module.clone());
    spec.add_host_program(Path::new("/usr/bin/cyclictest"))?;
    spec.qemu_args = cfg.driver.qemu.clone();
    spec.qemu_args.extend(["-smp".to_string(), "2".to_string()]);
    spec.timeout = Duration::from_secs(s.timeout_secs(faults.len()));
    spec.script = latency::script(&cfg, &mods, &faults, kernel, s);
    let out = fgft_vm::run(env, &spec)?;
    if out.panicked || out.timed_out || out.exit_status != Some(0) {
        return Err(CampaignError::Msg(format!(
            "{kernel}: the boot did not finish cleanly\n{}",
            out.summary()
        )));
    }
    let run = latency::parse(&out)
        .map_err(|e| CampaignError::Msg(format!("{kernel}: {e}\n{}", out.summary())))?;
    Ok((run, faults))
}

fn main() -> ExitCode {
    let mut out = PathBuf::from("results/latency.md");
    let mut kernels: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => match args.next() {
                Some(p) => out = PathBuf::from(p),
                None => {
                    eprintln!("bench_latency: --out needs a path");
                    return ExitCode::FAILURE;
                }
            },
            "stock" | "rt" => kernels.push(a),
            _ => {
                eprintln!("bench_latency: unknown argument {a} (stock, rt, --out FILE)");
                return ExitCode::FAILURE;
            }
        }
    }
    if kernels.is_empty() {
        kernels = vec!["stock".into(), "rt".into()];
    }
    let env = match Env::load() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("bench_latency: {e}");
            return ExitCode::FAILURE;
        }
    };
    let s = Settings::from_env();
    let mut runs: Vec<(String, String, Run, Vec<Candidate>)> = Vec::new();
    for k in &kernels {
        let (e, title) = if k == "rt" {
            (env.rt(), "Debian 6.12 PREEMPT_RT")
        } else {
            (env.clone(), "Debian 6.12 stock")
        };
        eprintln!("bench_latency: {title} ({})", e.kver);
        match measure(&e, k, &s) {
            Ok((r, f)) => runs.push((title.to_string(), e.kver.clone(), r, f)),
            Err(err) => {
                eprintln!("bench_latency: {k}: {err}");
                return ExitCode::FAILURE;
            }
        }
    }
    let svg_path = out.with_extension("svg");
    let panels: Vec<(&str, &Run)> = runs.iter().map(|(t, _, r, _)| (t.as_str(), r)).collect();
    let svg = match latency::plot(&panels) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bench_latency: plot: {e}");
            return ExitCode::FAILURE;
        }
    };
    let md = document(
        &runs,
        &s,
        &kernels,
        svg_path.file_name().unwrap_or_default(),
    );
    for (p, text) in [(&out, md.as_str()), (&svg_path, svg.as_str())] {
        if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = std::fs::create_dir_all(d);
        }
        if let Err(e) = std::fs::write(p, text) {
            eprintln!("bench_latency: {}: {e}", p.display());
            return ExitCode::FAILURE;
        }
    }
    print!("{md}");
    ExitCode::SUCCESS
}

fn document(
    runs: &[(String, String, Run, Vec<Candidate>)],
    s: &Settings,
    kernels: &[String],
    svg: &std::ffi::OsStr,
) -> String {
    let mut md = String::from(
        "# Timing isolation: cyclictest beside the e1000 driver, stock and under fgft\n\n",
    );
    md.push_str(&format!(
        "Regenerate: `scripts/bench-latency.sh` (here: `FGFT_LAT_SECS={} FGFT_LAT_ROUNDS={} FGFT_LAT_INTERVAL_US={} FGFT_LAT_PERIOD_MS={} FGFT_LAT_RATE={}`, kernels {}).\n\n",
        s.secs,
        s.rounds,
        s.interval_us,
        s.period_ms,
        s.rate,
        kernels.join(", ")
    ));
    md.push_str(&format!(
        "One QEMU boot per kernel: 2 vCPUs (TCG), two e1000 NICs on one hub, their interrupts pinned to CPU 0. \
         rt-tests' `cyclictest -m -p 95 -t 2 -a 0,1 -i {} -D {}` (Debian's binary and its libraries in the initramfs) \
         measures on CPU 1 (and, to show what holds it, on CPU 0) while CPU 0 does each condition, with Debian's `e1000.ko` (stock) and with the fgft split \
         of the same driver (its ethtool operations and its I/O path isolated) in the same boot, the build order \
         alternating per round; histograms of all rounds are pooled. The fault condition arms, one second each in turn, \
         one injected fault per kind that fires on every call (picked in the guest: three calls, three recoveries) \
         and calls its ethtool operation, pausing {} ms after each call; the stock build makes the same calls. \
         The traffic load offers both builds the same {} frames/s (raw frames eth0 to eth1, paced), so that they do the same work; \
         the tables give what each carried.\n\n",
        s.interval_us, s.secs, s.period_ms, s.rate
    ));
    md.push_str("Conditions on CPU 0:\n\n");
    for (c, d) in CONDITIONS {
        md.push_str(&format!("- `{c}`: {d}\n"));
    }
    md.push_str(&format!(
        "\n![p50, p99, p99.9 and max per condition and build]({})\n\n",
        svg.to_string_lossy()
    ));
    md.push_str(
        "**TCG distorts absolute latency**: the guest's CPUs are host threads translating code, a timer \
         interrupt's cost and a vCPU's wake-up are the emulator's, and the host (2 CPUs, shared) preempts them. \
         Only ratios within one run (same boot, same condition, stock against fgft) are compared.\n\n",
    );
    md.push_str("## Summary\n\nCPU 1's p99, µs, over all rounds; `per round` gives the ratio of each round alone (its spread is the run's noise).\n\n| kernel | condition | p99 stock | p99 fgft | fgft / stock | per round |\n|---|---|---:|---:|---:|---|\n");
    for (title, _, run, _) in runs {
        for (c, _) in CONDITIONS {
            let q = |b: &str| {
                run.hist
                    .get(&(b.to_string(), c.to_string()))
                    .map_or(0, |h| h.quantile(0.99))
            };
            let rounds: Vec<String> = latency::round_ratios(run, c)
                .iter()
                .map(|r| format!("{r:.2}"))
                .collect();
            md.push_str(&format!(
                "| {title} | {c} | {} | {} | {:.2} | {} |\n",
                q("stock"),
                q("fgft"),
                latency::p99_ratio(run, c),
                rounds.join(", ")
            ));
        }
    }
    md.push('\n');
    for (title, kver, run, faults) in runs {
        md.push_str(&latency::report(title, kver, run, s));
        md.push_str("Faults of the fault condition (picked in the guest):\n\n| kind | variant | label |\n|---|---:|---|\n");
        for (kind, id) in &run.picked {
            let label = faults
                .iter()
                .find(|c| c.id == *id)
                .map_or("", |c| c.label.as_str());
            md.push_str(&format!("| {kind} | {id} | `{label}` |\n"));
        }
        md.push('\n');
    }
    md
}

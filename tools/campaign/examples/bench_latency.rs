//! Benchmark of timing isolation (issue 18), not a test: cyclictest on
//! CPU 1 while the e1000 driver, stock and under fgft, works on CPU 0, on
//! Debian's stock 6.12 kernel and on its PREEMPT_RT flavour. See
//! `fgft_campaign::latency` for the method.
//!
//! `cargo run --release -p fgft-campaign --example bench_latency -- [--out results/latency.md] [--from-logs] [stock|rt]...`
//! (`--from-logs` writes the report again from the last run's console
//! logs, `<target>/vm-logs/bench-latency-<kernel>.log`, with no boot: the
//! same `FGFT_LAT_*` settings must be given, since the report names them)
//! (`scripts/bench-latency.sh` runs it as the README's benchmark command).
//! The SVG plot goes beside the report (`latency.svg`). `FGFT_LAT_SECS`
//! (default 10), `FGFT_LAT_ROUNDS` (3), `FGFT_LAT_INTERVAL_US` (1000),
//! `FGFT_LAT_PERIOD_MS` (200), `FGFT_LAT_CALLS` (500) and `FGFT_LAT_RATE`
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
/// Bootstrap resamples of the summary's intervals.
const BOOTSTRAP: usize = 2000;

/// The console log of the boot on `kernel` (`fgft_vm::run` keeps it).
fn log_of(env: &Env, kernel: &str) -> PathBuf {
    env.target_dir
        .join("vm-logs")
        .join(format!("bench-latency-{kernel}.log"))
}

/// The e1000 campaign config, its planted variants and the fault
/// condition's candidates (the same for a boot and for `--from-logs`).
fn faults(env: &Env) -> Result<(Config, prepare::Prepared, Vec<Candidate>), CampaignError> {
    let cfg = Config::load(&env.repo_root.join("corpus/campaign/e1000.toml"))?;
    let prep = prepare::inject(env, &cfg, SEED, PER_ENTRY, &[])?;
    let faults = latency::candidates(&cfg, &prep.variants, PER_KIND);
    Ok((cfg, prep, faults))
}

/// Reads the last run's console log back (`--from-logs`): the report again,
/// with no boot.
fn from_log(env: &Env, kernel: &str) -> Result<(Run, Vec<Candidate>), CampaignError> {
    let (_, _, faults) = faults(env)?;
    let path = log_of(env, kernel);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| CampaignError::Msg(format!("{}: {e}", path.display())))?;
    let out = fgft_vm::parse_console(&text);
    let mut run =
        latency::parse(&out).map_err(|e| CampaignError::Msg(format!("{}: {e}", path.display())))?;
    run.pinned = fgft_vm::pinned_in_log(&text);
    Ok((run, faults))
}

fn measure(env: &Env, kernel: &str, s: &Settings) -> Result<(Run, Vec<Candidate>), CampaignError> {
    let (cfg, prep, faults) = faults(env)?;
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
    spec.pin_vcpus = s.pin;
    spec.timeout = Duration::from_secs(s.timeout_secs(faults.len()));
    spec.script = latency::script(&cfg, &mods, &faults, kernel, s);
    let mut out = fgft_vm::run(env, &spec)?;
    // A kernel that dies before the scenario's first marker never ran our
    // modules (under TCG a boot-time text_poke has been seen to trap once
    // in a while): boot once more and say so.
    if out.markers.is_empty() && (out.panicked || out.oopses > 0) {
        eprintln!(
            "bench_latency: {kernel}: the kernel died while booting, before any fgft module was loaded; booting again\n{}",
            out.summary()
        );
        out = fgft_vm::run(env, &spec)?;
    }
    if out.panicked || out.timed_out || out.exit_status != Some(0) {
        return Err(CampaignError::Msg(format!(
            "{kernel}: the boot did not finish cleanly\n{}",
            out.summary()
        )));
    }
    let mut run = latency::parse(&out)
        .map_err(|e| CampaignError::Msg(format!("{kernel}: {e}\n{}", out.summary())))?;
    run.pinned = out.pinned.clone();
    Ok((run, faults))
}

fn main() -> ExitCode {
    let mut out = PathBuf::from("results/latency.md");
    let mut kernels: Vec<String> = Vec::new();
    let mut logs = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--from-logs" => logs = true,
            "--out" => match args.next() {
                Some(p) => out = PathBuf::from(p),
                None => {
                    eprintln!("bench_latency: --out needs a path");
                    return ExitCode::FAILURE;
                }
            },
            "stock" | "rt" => kernels.push(a),
            _ => {
                eprintln!(
                    "bench_latency: unknown argument {a} (stock, rt, --out FILE, --from-logs)"
                );
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
    let s = match Settings::from_env() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bench_latency: FGFT_LAT_CONDS: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut runs: Vec<(String, String, Run, Vec<Candidate>)> = Vec::new();
    for k in &kernels {
        let (e, title) = if k == "rt" {
            (env.rt(), "Debian 6.12 PREEMPT_RT")
        } else {
            (env.clone(), "Debian 6.12 stock")
        };
        eprintln!("bench_latency: {title} ({})", e.kver);
        let got = if logs {
            from_log(&e, k)
        } else {
            measure(&e, k, &s)
        };
        match got {
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
         of the same driver (its ethtool operations and its I/O path isolated) in the same boot. Each round runs every condition \
         on both builds back to back (the order alternating, so the modules are swapped once per condition), so that the host's slow \
         drifts fall on both builds alike; histograms of all rounds are pooled. The fault condition arms, one second each in turn, \
         one injected fault per kind that fires on every call (picked in the guest: three calls, three recoveries) \
         and calls its ethtool operation, pausing {} ms after each call; the stock build makes the same calls. \
         The traffic load offers both builds the same {} frames/s (raw frames eth0 to eth1, paced), so that they do the same work; \
         the tables give what each carried.\n\n",
        s.interval_us, s.secs, s.period_ms, s.rate
    ));
    md.push_str("Conditions on CPU 0:\n\n");
    for (c, d) in CONDITIONS
        .iter()
        .filter(|(c, _)| s.conditions().any(|x| x == *c))
    {
        md.push_str(&format!("- `{c}`: {d}\n"));
    }
    md.push_str(&format!(
        "\n![p50, p99, p99.9 and max per condition and build]({})\n\n",
        svg.to_string_lossy()
    ));
    md.push_str(
        "**TCG distorts absolute latency**: the guest's CPUs are host threads translating code, a timer \
         interrupt's cost and a vCPU's wake-up are the emulator's, and the host (2 CPUs) preempts them. \
         Only ratios within one run (same boot, same condition, stock against fgft) are compared.\n\n",
    );
    md.push_str(
        "**Recoveries keep off the console**: printing to the serial console is what a recovery used to hold a CPU \
         for (a divide error's recovery took up to 0.9 ms on PREEMPT_RT, most of it its one console line). The runtime's \
         die notifier now prints its line only to close a report the kernel printed itself (an oops); a trap the kernel \
         printed nothing for (divide error, general protection, `BUG()` of SFI code, which has no bug-table entry, \
         stack protector) is noted when its transaction ends, at most once a minute, and counted in debugfs. \
         `console lines per call` in the round-trip tables shows what is left: a refused access's rate-limited line.\n\n",
    );
    if s.pin {
        md.push_str(
            "**Pinned vCPUs**: QEMU's thread for vCPU 0 runs alone on host CPU 0, vCPU 1's on host CPU 1 with \
             QEMU's main loop (which fires the guest's timers), so that the load on CPU 0 does not take the host CPU \
             of the measured one: what remains between the two is the guest's (IPIs, locks, shared kernel threads) \
             and the emulator's big lock. Unpinned (`FGFT_LAT_PIN=0`), the host scheduler mixes the threads, and \
             the per-round ratios of identical work spread over 0.66-2.77 (earlier runs of this report).\n\n",
        );
        for (title, _, run, _) in runs {
            md.push_str(&format!("- {title}: {}\n", run.pinned.join("; ")));
        }
        md.push('\n');
    }
    md.push_str(&format!("## Summary\n\nCPU 1's p99, µs, over all rounds; `per round` gives the ratio of each round alone (its spread is the run's noise), `median` their median, `95% interval` a bootstrap over rounds of the pooled ratio ({BOOTSTRAP} resamples of the rounds, both builds of a round drawn together; a fixed seed).\n\n| kernel | condition | p99 stock | p99 fgft | fgft / stock | 95% interval | median | per round |\n|---|---|---:|---:|---:|---|---:|---|\n"));
    for (title, _, run, _) in runs {
        for c in run.conditions() {
            let q = |b: &str| {
                run.hist
                    .get(&(b.to_string(), c.to_string()))
                    .map_or(0, |h| h.quantile(0.99))
            };
            let ratios = latency::round_ratios(run, c);
            let rounds: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
            md.push_str(&format!(
                "| {title} | {c} | {} | {} | {:.2} | {} | {:.2} | {} |\n",
                q("stock"),
                q("fgft"),
                latency::p99_ratio(run, c),
                latency::bootstrap_ratio(run, c, BOOTSTRAP)
                    .map_or_else(|| "-".to_string(), |(lo, hi)| format!("{lo:.2}-{hi:.2}")),
                latency::median(&ratios),
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

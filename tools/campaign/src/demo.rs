//! `fgft-demo`: the README's main job, end to end on the upstream e1000.
//!
//! 1. transform: plant one fault in an ethtool entry point (fgft-cc inject)
//!    and split the driver (fgft-cc split);
//! 2. build the runtime and both modules with Kbuild against 6.12;
//! 3. boot Debian's 6.12 kernel in QEMU on the config's devices (two e1000
//!    NICs on a hub by default);
//! 4. arm the fault and call the entry point from user space;
//! 5. show the error returned, the device passing traffic and the recovery
//!    time, against the same fault without fgft and a driver restart.

use clap::Parser;
use fgft_campaign::config::Config;
use fgft_campaign::{fgft, native, prepare, restart, CampaignError};
use fgft_inject::FaultKind;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "fgft-demo", about = "fgft end to end on one driver")]
struct Args {
    /// Campaign config of the driver.
    #[arg(long, default_value = "corpus/campaign/e1000.toml")]
    config: PathBuf,
    /// Entry point to fault.
    #[arg(long, default_value = "e1000_get_regs_len")]
    entry: String,
    /// Fault kind.
    #[arg(long, default_value = "div-zero")]
    kind: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Skip the comparison runs (native driver, restart).
    #[arg(long)]
    quick: bool,
}

fn step(n: u32, what: &str) {
    println!("\n== {n}. {what}");
}

/// The emulated devices of the config's QEMU arguments, as shown
/// (`i82559er, i82559er on a hub`).
fn devices(cfg: &Config) -> String {
    let q = &cfg.driver.qemu;
    let devs: Vec<&str> = q
        .iter()
        .zip(q.iter().skip(1))
        .filter(|(k, _)| *k == "-device")
        .map(|(_, v)| v.split(',').next().unwrap_or(v))
        .collect();
    let hub = q.iter().any(|a| a.starts_with("hubport"));
    let mut s = if devs.is_empty() {
        "the config's devices".to_string()
    } else {
        devs.join(", ")
    };
    if hub {
        s.push_str(" on a hub");
    }
    s
}

fn run(args: &Args) -> Result<(), CampaignError> {
    let env = fgft_vm::Env::load()?;
    let mut cfg = Config::load(&args.config)?;
    let trig = cfg.trigger.get(&args.entry).cloned().ok_or_else(|| {
        CampaignError::Msg(format!(
            "{}: no trigger for entry point {}",
            args.config.display(),
            args.entry
        ))
    })?;
    cfg.trigger = [(args.entry.clone(), trig)].into_iter().collect();
    let kind = FaultKind::parse(&args.kind)?;

    step(1, "transform (fgft-cc inject, fgft-cc split)");
    let prep = prepare::inject(&env, &cfg, args.seed, 1, &[kind])?;
    let v = &prep.variants[0];
    println!("   fault planted: {} (variant {})", v.label, v.id);

    let m = &cfg.driver.module;
    step(
        2,
        &format!("build (Kbuild, 6.12 headers): fgft_rt.ko, {m}_sfi.ko, {m}_fgft.ko"),
    );
    let mods = prepare::build_fgft(&env, &cfg, &prep, std::slice::from_ref(&v.entry), "fgft")?;
    for m in &mods.modules {
        println!("   {}", m.display());
    }

    step(
        3,
        &format!("boot Debian 6.12 in QEMU (TCG): {}", devices(&cfg)),
    );
    step(
        4,
        &format!(
            "arm the fault, call `{}`",
            cfg.trigger_cmd(&v.entry).unwrap_or_default()
        ),
    );
    let (res, boots) = fgft::run_all(&env, &cfg, &mods, &prep.variants, Duration::from_secs(90))?;
    let r = &res[0];

    step(5, "result");
    let log = env
        .target_dir
        .join("vm-logs")
        .join(format!("campaign-{}-fgft-{boots}.log", cfg.driver.name));
    let console = std::fs::read_to_string(&log).unwrap_or_default();
    for l in console
        .lines()
        .filter(|l| l.contains("FGFT-MARK ethtool") || l.contains("FGFT-MARK pkt "))
    {
        println!("   guest: {}", l.trim());
    }
    println!("   outcome under fgft: {:?}", r.outcome);
    println!(
        "   error returned to the caller: {}",
        match r.trigger_rc {
            Some(0) => "no (the call reported success)".to_string(),
            Some(rc) => format!("yes (exit status {rc})"),
            None => "-".into(),
        }
    );
    println!(
        "   device after recovery: {}",
        match r.device_ok {
            Some(true) => "works (the config's check passed)",
            Some(false) => "BROKEN",
            None => "not checked",
        }
    );
    let rec_us = if r.recoveries > 0 {
        r.recovery_ns as f64 / r.recoveries as f64 / 1e3
    } else {
        0.0
    };
    println!("   fgft recovery time: {rec_us:.1} us (runtime: fault to end of abort: undo log, locks, device restore when registered)");
    if !args.quick {
        let ko = prepare::build_native(&env, &cfg, &prep)?;
        let n = native::run_all(&env, &cfg, &ko, &prep.variants, Duration::from_secs(60))?;
        println!(
            "   same fault without fgft: {:?}{}",
            n[0].outcome,
            n[0].first_oops
                .as_ref()
                .map(|o| format!(" ({})", o.trim()))
                .unwrap_or_default()
        );
        let t = restart::measure(&env, &cfg, &ko, 1)?;
        let ms = t[0] as f64 / 1e6;
        println!("   driver restart instead (rmmod, insmod, link up, first frame): {ms:.1} ms");
        if rec_us > 0.0 {
            println!("   recovery ratio fgft/restart: {:.6}", rec_us / 1e3 / ms);
        }
    }
    if r.outcome != fgft::FgftOutcome::Recovered {
        return Err(CampaignError::Msg(format!(
            "not recovered: {:?}",
            r.outcome
        )));
    }
    println!("\nfgft-demo: recovered.");
    Ok(())
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("fgft-demo: error: {e}");
        std::process::exit(1);
    }
}

//! `fgft-campaign`: run fault-injection campaigns and write the report.

use clap::Parser;
use fgft_campaign::config::Config;
use fgft_campaign::{fgft, native, prepare, report, restart, throughput, CampaignError};
use fgft_inject::FaultKind;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "fgft-campaign", about = "Fault-injection campaigns in QEMU")]
struct Args {
    /// Campaign configs (corpus/campaign/*.toml).
    #[arg(required = true)]
    configs: Vec<PathBuf>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Variants per entry point.
    #[arg(long = "per-entry", default_value_t = 2)]
    per_entry: usize,
    /// At most this many variants per driver (0: all).
    #[arg(long, default_value_t = 0)]
    max: usize,
    /// Fault kinds, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    kinds: Vec<String>,
    /// Seconds a native boot may take.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Timed driver restarts per driver (the recovery baseline).
    #[arg(long, default_value_t = 3)]
    restarts: usize,
    /// Skip the native runs.
    #[arg(long = "no-native")]
    no_native: bool,
    /// Skip the fgft runs.
    #[arg(long = "no-fgft")]
    no_fgft: bool,
    /// Throughput rounds (stock driver against the fgft build isolating the
    /// campaign's entry points, same boot); 0 skips it.
    #[arg(long, default_value_t = 0)]
    throughput: usize,
    /// Seconds of traffic per throughput measurement.
    #[arg(long = "throughput-secs", default_value_t = 3)]
    throughput_secs: u32,
    /// Markdown report to write.
    #[arg(long, default_value = "results/campaign.md")]
    report: PathBuf,
}

fn run(args: &Args) -> Result<(), CampaignError> {
    let env = fgft_vm::Env::load()?;
    let kinds = args
        .kinds
        .iter()
        .map(|k| FaultKind::parse(k))
        .collect::<Result<Vec<_>, _>>()?;
    let mut reports = Vec::new();
    for path in &args.configs {
        let cfg = Config::load(path)?;
        let mut prep = prepare::inject(&env, &cfg, args.seed, args.per_entry, &kinds)?;
        if args.max > 0 {
            prep.variants.truncate(args.max);
        }
        eprintln!("{}: {} variants", cfg.driver.name, prep.variants.len());
        let ko = prepare::build_native(&env, &cfg, &prep)?;
        let native = if args.no_native {
            Vec::new()
        } else {
            native::run_all(
                &env,
                &cfg,
                &ko,
                &prep.variants,
                Duration::from_secs(args.timeout),
            )?
        };
        let (fgft, fgft_boots) = if args.no_fgft {
            (Vec::new(), 0)
        } else {
            let entries: std::collections::BTreeSet<String> =
                prep.variants.iter().map(|v| v.entry.clone()).collect();
            let entries: Vec<String> = entries.into_iter().collect();
            let mods = prepare::build_fgft(&env, &cfg, &prep, &entries)?;
            fgft::run_all(
                &env,
                &cfg,
                &mods,
                &prep.variants,
                Duration::from_secs(args.timeout),
            )?
        };
        let restart_ns = if args.restarts > 0 {
            restart::measure(&env, &cfg, &ko, args.restarts)?
        } else {
            Vec::new()
        };
        let throughput = if args.throughput > 0 {
            let entries: std::collections::BTreeSet<String> =
                prep.variants.iter().map(|v| v.entry.clone()).collect();
            let entries: Vec<String> = entries.into_iter().collect();
            let plain = prepare::plain(&env, &cfg)?;
            let mods = prepare::build_fgft(&env, &cfg, &plain, &entries)?;
            Some(throughput::measure(
                &env,
                &cfg,
                &mods,
                args.throughput,
                args.throughput_secs,
            )?)
        } else {
            None
        };
        reports.push(report::DriverReport {
            driver: cfg.driver.name.clone(),
            seed: args.seed,
            native,
            fgft,
            fgft_boots,
            restart_ns,
            throughput,
        });
    }
    let cmd = std::env::args().collect::<Vec<_>>().join(" ");
    let text = report::render(&reports, &cmd);
    if let Some(d) = args.report.parent() {
        std::fs::create_dir_all(d).map_err(|source| CampaignError::Io {
            path: d.to_path_buf(),
            source,
        })?;
    }
    std::fs::write(&args.report, text).map_err(|source| CampaignError::Io {
        path: args.report.clone(),
        source,
    })?;
    eprintln!("report written to {}", args.report.display());
    Ok(())
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("fgft-campaign: error: {e}");
        std::process::exit(1);
    }
}

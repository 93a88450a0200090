//! `fgft-campaign`: run fault-injection campaigns and write the report.

use clap::Parser;
use fgft_campaign::config::Config;
use fgft_campaign::shard::{self, Shard};
use fgft_campaign::{fgft, native, prepare, report, restart, throughput, CampaignError};
use fgft_inject::FaultKind;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "fgft-campaign", about = "Fault-injection campaigns in QEMU")]
struct Args {
    /// Campaign configs (corpus/campaign/*.toml).
    #[arg(required_unless_present_any = ["render_only", "merge"])]
    configs: Vec<PathBuf>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Variants per entry point.
    #[arg(long = "per-entry", default_value_t = 2)]
    per_entry: usize,
    /// At most this many variants per driver (0: all).
    #[arg(long, default_value_t = 0)]
    max: usize,
    /// Only the variants of these ids (the report's id column), to re-run
    /// one; give it its own --report.
    #[arg(long, value_delimiter = ',')]
    only: Vec<u32>,
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
    /// Build the fgft modules without the sidecars' marshaling hints: what
    /// the kernel's contracts and inference find alone (give it its own
    /// --report).
    #[arg(long = "no-hints")]
    no_hints: bool,
    /// Throughput rounds (stock driver against the fgft build isolating the
    /// campaign's entry points, same boot); 0 skips it.
    #[arg(long, default_value_t = 0)]
    throughput: usize,
    /// Seconds of traffic per throughput measurement.
    #[arg(long = "throughput-secs", default_value_t = 3)]
    throughput_secs: u32,
    /// Markdown report to write; each driver's results are kept as JSON in
    /// the directory of the same name (results/campaign/<driver>.json) and
    /// the report covers every driver found there.
    #[arg(long, default_value = "results/campaign.md")]
    report: PathBuf,
    /// Only re-render the report from the JSON results.
    #[arg(long = "render-only")]
    render_only: bool,
    /// Run shard I of N (`2/3`): the variants at positions I-1, I-1+N, ...
    /// of each driver's list; shard 1 also measures the restart baseline
    /// and throughput.  Give each shard its own --report.
    #[arg(long, value_parser = Shard::parse)]
    shard: Option<Shard>,
    /// Fault the I/O path instead: the targets are each config's `io_path`
    /// entry points (transmit, interrupt, NAPI poll), triggered by the
    /// config's own traffic check, and the fgft build isolates them (give
    /// it its own --report: `results/campaign-io.md`).
    #[arg(long = "io-path")]
    io_path: bool,
    /// Merge the results directories of a campaign's shards (each the JSON
    /// directory beside a shard's report: `results/shard-1`) into --report's
    /// directory, then render the report.  Runs nothing.
    #[arg(long, num_args = 1.., conflicts_with_all = ["configs", "render_only", "shard"])]
    merge: Vec<PathBuf>,
}

/// Where the per-driver results live next to the report:
/// `results/campaign.md` -> `results/campaign/<driver>.json`.
fn data_dir(report: &std::path::Path) -> PathBuf {
    report.with_extension("")
}

fn run_driver(
    args: &Args,
    env: &fgft_vm::Env,
    cfg: &Config,
    kinds: &[FaultKind],
) -> Result<report::DriverReport, CampaignError> {
    let mut prep = prepare::inject(env, cfg, args.seed, args.per_entry, kinds)?;
    if args.max > 0 {
        prep.variants.truncate(args.max);
    }
    if !args.only.is_empty() {
        prep.variants.retain(|v| args.only.contains(&v.id));
    }
    if let Some(s) = args.shard {
        prep.variants = s.select(&prep.variants);
    }
    let per_driver = args.shard.is_none_or(|s| s.measures_driver());
    eprintln!("{}: {} variants", cfg.driver.name, prep.variants.len());
    let entries: Vec<String> = prep
        .variants
        .iter()
        .map(|v| v.entry.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let ko = prepare::build_native(env, cfg, &prep)?;
    let native = if args.no_native {
        Vec::new()
    } else {
        native::run_all(
            env,
            cfg,
            &ko,
            &prep.variants,
            Duration::from_secs(args.timeout),
        )?
    };
    let (fgft, fgft_boots) = if args.no_fgft {
        (Vec::new(), 0)
    } else {
        let mods = prepare::build_fgft(env, cfg, &prep, &entries, "fgft")?;
        fgft::run_all(
            env,
            cfg,
            &mods,
            &prep.variants,
            Duration::from_secs(args.timeout),
        )?
    };
    let restart_ns = if args.restarts > 0 && per_driver {
        restart::measure(env, cfg, &ko, args.restarts)?
    } else {
        Vec::new()
    };
    // Frames per second only mean something for a NIC (two ports on a hub).
    let throughput = if args.throughput > 0 && per_driver && cfg.driver.check_marker == "pkt" {
        let plain = prepare::plain(env, cfg)?;
        // "Stock" is the driver built here from the same sources (with the
        // config's compat edits: Debian's 8139too refuses QEMU's C+ model).
        let stock = prepare::build_native(env, cfg, &plain)?;
        let mods = prepare::build_fgft(env, cfg, &plain, &entries, "fgft")?;
        // The I/O-path build: the same entry points plus transmit,
        // interrupt and poll.
        let io = if cfg.driver.io_path.is_empty() {
            None
        } else {
            let all: Vec<String> = entries
                .iter()
                .chain(cfg.driver.io_path.iter())
                .cloned()
                .collect();
            Some(prepare::build_fgft(env, cfg, &plain, &all, "fgft-io")?)
        };
        Some(throughput::measure(
            env,
            cfg,
            &stock,
            &mods,
            io.as_ref(),
            args.throughput,
            args.throughput_secs,
        )?)
    } else {
        None
    };
    Ok(report::DriverReport {
        driver: cfg.driver.name.clone(),
        seed: args.seed,
        native,
        fgft,
        fgft_boots,
        restart_ns,
        throughput,
        io_path: args.io_path,
    })
}

/// Writes a result or report file by fgft-base's one rule for report files
/// (`outdir::write_file`): never over an input (a campaign config, a shard
/// directory being merged), and only over a file the campaign wrote (a
/// driver's JSON results, or a report it rendered).
fn write(path: &std::path::Path, text: &str, inputs: &[PathBuf]) -> Result<(), CampaignError> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|source| CampaignError::Io {
            path: d.to_path_buf(),
            source,
        })?;
    }
    let ours = |b: &[u8]| {
        serde_json::from_slice::<report::DriverReport>(b).is_ok()
            || b.starts_with(b"# fgft fault-injection campaign")
    };
    fgft_base::outdir::write_file(path, text.as_bytes(), inputs, &ours)
        .map_err(|e| CampaignError::Msg(e.to_string()))
}

/// Runs every config (a driver that fails is reported and skipped: the
/// others go on), keeps each driver's results as JSON and renders the
/// report from every driver's results present.
fn run(args: &Args) -> Result<usize, CampaignError> {
    let data = data_dir(&args.report);
    let mut failed = 0;
    if !args.merge.is_empty() {
        merge_dirs(&args.merge, &data)?;
    } else if !args.render_only {
        let env = fgft_vm::Env::load()?;
        let kinds = args
            .kinds
            .iter()
            .map(|k| FaultKind::parse(k))
            .collect::<Result<Vec<_>, _>>()?;
        for path in &args.configs {
            let mut cfg = Config::load(path)?;
            cfg.driver.no_hints |= args.no_hints;
            if args.io_path {
                cfg.target_io_path()?;
            }
            match run_driver(args, &env, &cfg, &kinds) {
                Ok(mut r) => {
                    let file = data.join(format!("{}.json", r.driver));
                    // A partial run (say throughput only) keeps the parts
                    // it did not redo from the driver's earlier results of
                    // the same seed.
                    if let Some(old) = std::fs::read_to_string(&file)
                        .ok()
                        .and_then(|t| serde_json::from_str::<report::DriverReport>(&t).ok())
                        .filter(|o| o.seed == r.seed)
                    {
                        if args.no_native {
                            r.native = old.native;
                        }
                        if args.no_fgft {
                            r.fgft = old.fgft;
                            r.fgft_boots = old.fgft_boots;
                        }
                        if args.restarts == 0 {
                            r.restart_ns = old.restart_ns;
                        }
                        if args.throughput == 0 {
                            r.throughput = old.throughput;
                        }
                    }
                    let json = serde_json::to_string_pretty(&r)
                        .map_err(|e| CampaignError::Msg(e.to_string()))?;
                    write(&file, &json, &args.configs)?;
                }
                Err(e) => {
                    failed += 1;
                    eprintln!("fgft-campaign: {}: error: {e}", cfg.driver.name);
                }
            }
        }
    }
    let mut reports = Vec::new();
    if data.is_dir() {
        reports = read_reports(&data)?.into_iter().map(|(_, r)| r).collect();
    }
    // scripts/campaign.sh names itself as the command that regenerates it.
    let cmd = std::env::var("FGFT_REPORT_CMD")
        .unwrap_or_else(|_| std::env::args().collect::<Vec<_>>().join(" "));
    write(&args.report, &report::render(&reports, &cmd), &args.configs)?;
    eprintln!(
        "report of {} driver(s) written to {}",
        reports.len(),
        args.report.display()
    );
    Ok(failed)
}

/// The JSON results of a directory, by file.
fn read_reports(
    dir: &std::path::Path,
) -> Result<Vec<(PathBuf, report::DriverReport)>, CampaignError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| CampaignError::Io {
            path: dir.to_path_buf(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|source| CampaignError::Io {
            path: f.clone(),
            source,
        })?;
        let r: report::DriverReport =
            serde_json::from_str(&text).map_err(|e| CampaignError::Config {
                path: f.clone(),
                msg: e.to_string(),
            })?;
        out.push((f, r));
    }
    Ok(out)
}

/// Merges each driver's results over the shards' directories into `data`.
fn merge_dirs(dirs: &[PathBuf], data: &std::path::Path) -> Result<(), CampaignError> {
    let mut by_driver: std::collections::BTreeMap<String, Vec<(PathBuf, report::DriverReport)>> =
        Default::default();
    for d in dirs {
        for (f, r) in read_reports(d)? {
            by_driver.entry(r.driver.clone()).or_default().push((f, r));
        }
    }
    for (driver, parts) in by_driver {
        let n = parts.len();
        let r = shard::merge(parts)?;
        let json =
            serde_json::to_string_pretty(&r).map_err(|e| CampaignError::Msg(e.to_string()))?;
        write(&data.join(format!("{driver}.json")), &json, dirs)?;
        eprintln!(
            "{driver}: {n} shard(s) merged, {} variants",
            r.fgft.len().max(r.native.len())
        );
    }
    Ok(())
}

fn main() {
    let args = Args::parse();
    match run(&args) {
        Ok(0) => {}
        Ok(n) => {
            eprintln!("fgft-campaign: {n} driver(s) failed");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("fgft-campaign: error: {e}");
            std::process::exit(1);
        }
    }
}

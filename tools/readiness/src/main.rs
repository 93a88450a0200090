//! `fgft-readiness`: the readiness benchmark's command line (see the
//! library).  `scripts/bench-readiness.sh` runs it for 6.12 and 6.1.

use clap::Parser;
use fgft_readiness::{build_runtime, candidates, report, run_all, Config, Error};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    about = "Split every drivers/net module the kernel builds with a profile and no sidecar, build it, and report"
)]
struct Args {
    /// The kernel source tree (linux-source).
    #[arg(long)]
    tree: PathBuf,
    /// The kernel build directory (its .config says which modules are built).
    #[arg(long)]
    kdir: PathBuf,
    /// The isolation profile (profiles.toml).
    #[arg(long, default_value = "management")]
    profile: String,
    /// Only this many modules, evenly spaced over the sorted list.
    #[arg(long)]
    sample: Option<usize>,
    /// Modules split and built at once.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// The markdown report to write.
    #[arg(short = 'o', long)]
    out: PathBuf,
    /// Also write every module's result as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// The report's title (the kernel it is for).
    #[arg(long, default_value = "drivers/net")]
    title: String,
    /// The runtime module's sources, built for KDIR first.
    #[arg(long, default_value = "runtime-kmod")]
    runtime_src: PathBuf,
    /// Only these modules (comma-separated names, as `e1000e,8139cp`): for
    /// trying a fix on the modules it concerns.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// How the report says it is regenerated.
    #[arg(long, default_value = "scripts/bench-readiness.sh")]
    command: String,
}

fn run(a: Args) -> Result<(), Error> {
    let io = |path: &PathBuf| {
        let path = path.clone();
        move |source| Error::Io { path, source }
    };
    let kconfig_path = a.kdir.join(".config");
    let kconfig = std::fs::read_to_string(&kconfig_path).map_err(io(&kconfig_path))?;
    let mut cands = candidates(&a.tree, &kconfig, a.sample)?;
    if !a.only.is_empty() {
        cands.retain(|c| a.only.contains(&c.module));
    }
    eprintln!("readiness: {} modules", cands.len());
    let rt = tempfile::tempdir().map_err(io(&std::env::temp_dir()))?;
    let symvers = build_runtime(&a.runtime_src, &a.kdir, rt.path())?;
    let cfg = Config {
        tree: a.tree.clone(),
        kdir: a.kdir.clone(),
        profile: a.profile.clone(),
        sample: a.sample,
        jobs: a.jobs,
        runtime_symvers: symvers,
        tables: Vec::new(),
    };
    let results = run_all(&cands, &cfg)?;
    let md = report(&results, &a.title, &a.command);
    std::fs::write(&a.out, md).map_err(io(&a.out))?;
    if let Some(j) = &a.json {
        let text = serde_json::to_string_pretty(&results).map_err(|e| Error::Msg(e.to_string()))?;
        std::fs::write(j, text + "\n").map_err(io(j))?;
    }
    Ok(())
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("fgft-readiness: error: {e}");
        std::process::exit(1);
    }
}

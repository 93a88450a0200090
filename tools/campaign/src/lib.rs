//! fgft-campaign: fault-injection campaigns in QEMU.
//!
//! A campaign takes one driver (a config in `corpus/campaign/`), plants
//! deterministic faulty variants into its entry points with fgft-inject, and
//! runs every variant twice:
//!
//! - **native**: the injected driver built as is, one boot per variant (a
//!   native fault may take the kernel down), classified as panic, oops, hang,
//!   error returned, or silent;
//! - **fgft**: the same injected tree split (fgft-split, linked), all variants in
//!   as few boots as possible (a new boot only if one goes down), each checked
//!   for: an error returned, no oops, the device still working afterwards.
//!
//! Invariant: the variant set, ids and labels depend only on the config, the
//! seed and the kernel tree; results are written in variant order.

pub mod config;
pub mod fgft;
pub mod latency;
pub mod membrane;
pub mod native;
pub mod prepare;
pub mod report;
pub mod restart;
pub mod shard;
pub mod split;
pub mod throughput;

use std::path::PathBuf;

/// Errors of a campaign.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    #[error("{path}: {msg}")]
    Config { path: PathBuf, msg: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Vm(#[from] fgft_vm::VmError),
    #[error(transparent)]
    Parse(#[from] fgft_parse::ParseError),
    #[error(transparent)]
    Inject(#[from] fgft_inject::InjectError),
    #[error("{0}")]
    Msg(String),
}

/// The guest programs every campaign VM gets, as (host binary, guest path):
/// `fgft-ethtool`, `fgft-pkt`, and every campaign guest program
/// `tools/campaign/guest/*.c` as `/bin/<stem>`. Build them once, before
/// booting VMs from several threads: `fgft_vm::guest_program` is not safe
/// to run for the same program from two threads of one process.
pub fn guest_files(env: &fgft_vm::Env) -> Result<Vec<(PathBuf, String)>, CampaignError> {
    let mut files = Vec::new();
    for tool in ["fgft-ethtool", "fgft-pkt"] {
        files.push((fgft_vm::guest_tool(env, tool)?, format!("/bin/{tool}")));
    }
    let dir = env.repo_root.join("tools/campaign/guest");
    let mut progs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(io(&dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    progs.sort();
    for src in progs {
        let stem = src
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        files.push((fgft_vm::guest_program(env, &src)?, format!("/bin/{stem}")));
    }
    Ok(files)
}

/// What every campaign VM of `cfg` gets besides the driver: the stock
/// modules of `cfg.driver.deps` (the script loads them with
/// [`config::Config::load_deps`]) and the [`guest_files`].
pub fn add_guest_support(
    cfg: &config::Config,
    files: &[(PathBuf, String)],
    spec: &mut fgft_vm::VmSpec,
) {
    spec.stock_modules = cfg.driver.deps.clone();
    spec.files.extend(files.iter().cloned());
}

pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> CampaignError + '_ {
    move |source| CampaignError::Io {
        path: path.to_path_buf(),
        source,
    }
}

//! fgft-campaign: fault-injection campaigns in QEMU.
//!
//! A campaign takes one driver (a config in `corpus/campaign/`), plants
//! deterministic faulty variants into its entry points with fgft-inject, and
//! runs every variant twice:
//!
//! - **native**: the injected driver built as is, one boot per variant (a
//!   native fault may take the kernel down), classified as panic, oops, hang,
//!   error returned, or silent;
//! - **fgft**: the same injected tree through `fgft-cc split`, all variants in
//!   as few boots as possible (a new boot only if one goes down), each checked
//!   for: an error returned, no oops, the device still working afterwards.
//!
//! Invariant: the variant set, ids and labels depend only on the config, the
//! seed and the kernel tree; results are written in variant order.

pub mod config;
pub mod fgft;
pub mod native;
pub mod prepare;
pub mod report;
pub mod restart;
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

pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> CampaignError + '_ {
    move |source| CampaignError::Io {
        path: path.to_path_buf(),
        source,
    }
}

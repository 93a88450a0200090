//! Campaign configs (`corpus/campaign/<driver>.toml`).

use crate::CampaignError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub driver: Driver,
    /// Entry point -> fgft-ethtool operation (or a shell command when it
    /// starts with `sh:`).
    pub trigger: BTreeMap<String, String>,
    #[serde(skip)]
    pub path: PathBuf,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Driver {
    pub name: String,
    /// Directory of the driver in the kernel tree.
    pub dir: String,
    /// Its .c files (relative to `dir`), linked into `module`.
    pub sources: Vec<String>,
    pub module: String,
    pub qemu: Vec<String>,
    pub setup: String,
    pub check: String,
    pub check_marker: String,
    pub check_field: String,
    /// Interface the ethtool triggers address.
    #[serde(default = "default_iface")]
    pub iface: String,
    /// Stock modules the driver needs (`mii`, `8390`, `snd-pcm`, ...): put in
    /// the guest and loaded with `modprobe` before the driver.
    #[serde(default)]
    pub deps: Vec<String>,
    /// The tree `dir` is relative to.
    #[serde(default)]
    pub tree: Tree,
    /// Source edits that let the driver run on QEMU's model, applied to the
    /// copy of the tree before injection (native and fgft builds alike).
    #[serde(default)]
    pub compat: Vec<Compat>,
    /// fgft sidecar (relative to the repository) whose isolation list and
    /// marshaling hints the fgft build uses, on top of the triggered entry
    /// points.
    #[serde(default)]
    pub annotations: Option<String>,
    /// The I/O-path entry points (transmit, interrupt, NAPI poll) a second
    /// fgft build isolates as well, for the throughput comparison.
    #[serde(default)]
    pub io_path: Vec<String>,
    /// Build the fgft module without the sidecar's marshaling hints (only
    /// the kernel's contracts and inference size what the entry points
    /// touch); `fgft-campaign --no-hints` sets it for every config.
    #[serde(default, rename = "no-hints")]
    pub no_hints: bool,
}

/// One compatibility edit: `find` occurs exactly once in `file` (relative
/// to `dir`) and becomes `replace`. Neither may hold a line break, so every
/// line number (and so every variant label) stays that of the original.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compat {
    pub file: String,
    pub find: String,
    pub replace: String,
}

/// Where a driver's sources live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tree {
    /// The unpacked linux-source-6.12 tree (`$SRC612`).
    #[default]
    Linux,
    /// This repository (our corpus drivers); built with
    /// `annotations/include` on the include path.
    Repo,
}

fn default_iface() -> String {
    "eth0".into()
}

impl Config {
    pub fn load(path: &Path) -> Result<Config, CampaignError> {
        let text = std::fs::read_to_string(path).map_err(crate::io(path))?;
        let mut c: Config = toml::from_str(&text).map_err(|e| {
            let loc = e
                .span()
                .map(|s| {
                    let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                    format!(":{line}")
                })
                .unwrap_or_default();
            CampaignError::Config {
                path: PathBuf::from(format!("{}{loc}", path.display())),
                msg: e.message().to_string(),
            }
        })?;
        if c.trigger.is_empty() {
            return Err(CampaignError::Config {
                path: path.to_path_buf(),
                msg: "[trigger] names no entry point".into(),
            });
        }
        c.path = path.to_path_buf();
        Ok(c)
    }

    /// The module's name as the kernel spells it (`/sys/module/<name>`,
    /// `rmmod`): `-` becomes `_`.
    pub fn sysfs_module(&self) -> String {
        self.driver.module.replace('-', "_")
    }

    /// Guest commands that load the stock modules the driver needs.
    pub fn load_deps(&self) -> String {
        self.driver
            .deps
            .iter()
            .map(|d| format!("modprobe {d} || exit 3\n"))
            .collect()
    }

    /// Makes the I/O path the campaign's targets: each `io_path` entry
    /// point is triggered by the traffic check, which sends through
    /// transmit and receives through the interrupt and the poll. The
    /// management triggers go (they stay isolated in the build when the
    /// sidecar's isolation list names them).
    pub fn target_io_path(&mut self) -> Result<(), CampaignError> {
        if self.driver.io_path.is_empty() {
            return Err(CampaignError::Config {
                path: self.path.clone(),
                msg: "--io-path: [driver] io_path names no entry point".into(),
            });
        }
        let check = format!("sh:{}", self.driver.check);
        self.trigger = self
            .driver
            .io_path
            .iter()
            .map(|e| (e.clone(), check.clone()))
            .collect();
        Ok(())
    }

    /// The guest command that reaches `entry`.
    pub fn trigger_cmd(&self, entry: &str) -> Option<String> {
        let t = self.trigger.get(entry)?;
        Some(match t.strip_prefix("sh:") {
            Some(cmd) => cmd.trim().to_string(),
            None => format!("fgft-ethtool {} {t}", self.driver.iface),
        })
    }
}

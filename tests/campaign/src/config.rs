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

    /// The guest command that reaches `entry`.
    pub fn trigger_cmd(&self, entry: &str) -> Option<String> {
        let t = self.trigger.get(entry)?;
        Some(match t.strip_prefix("sh:") {
            Some(cmd) => cmd.trim().to_string(),
            None => format!("fgft-ethtool {} {t}", self.driver.iface),
        })
    }
}

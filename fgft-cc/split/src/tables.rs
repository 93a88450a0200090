//! Every table split reads, loaded once at the edge and passed down.
//!
//! The table directories (`FGFT_TABLES`, then `--tables`) are resolved once
//! here; no stage below reads an option or the environment to find a table.
//! Each table is its built-in copy (`fgft-cc/tables/`) extended by the files
//! of the same name in those directories.

use crate::diag::Error;
use crate::plan::table::Table;
use fgft_facts::slots::SlotTable;
use fgft_parse::modinit::ModuleMacros;
use fgft_parse::tables::{TableDirs, TableSource};
use fgft_parse::HintTable;
use std::path::PathBuf;
use std::sync::Arc;

/// The tables of one split.
pub struct Tables {
    /// The table directories, in the order they extend the built-in copies.
    pub dirs: TableDirs,
    /// `compensations.toml`: kernel API -> wrapper, undo action, grants.
    pub api: Table,
    /// `slots.toml`: ops structs and their function fields.
    pub slots: SlotTable,
    /// `macro-hints.toml`: kernel idioms for parsing.
    pub hints: Arc<HintTable>,
    /// `module-init.toml`: module_*_driver macros by name.
    pub module_macros: ModuleMacros,
    /// `pm-rules.toml`: how device checkpoints are derived from PM code.
    pub pm_rules: fgft_pm::Rules,
    /// `contracts.toml`: how the kernel sizes what it hands to slots.
    pub contracts: crate::derive::contracts::Contracts,
    /// `profiles.toml`: named sets of slots to isolate.
    pub profiles: crate::profiles::Profiles,
}

impl Tables {
    /// Loads every table; `extra` are the `--tables` directories.
    pub fn load(extra: &[PathBuf]) -> Result<Tables, Error> {
        Tables::load_from(&TableDirs::resolve(extra))
    }

    /// Loads every table from directories already resolved.
    pub fn load_from(dirs: &TableDirs) -> Result<Tables, Error> {
        let api = Table::load(dirs)?;
        let bad = crate::emit::wrappers::check_captures(&api);
        if !bad.is_empty() {
            return Err(Error::Msg(bad.join("\n")));
        }
        Ok(Tables {
            api,
            slots: SlotTable::load(dirs)?,
            hints: Arc::new(HintTable::load(dirs)?),
            module_macros: ModuleMacros::load(dirs)?,
            pm_rules: pm_rules(dirs)?,
            contracts: crate::derive::contracts::Contracts::load(dirs)?,
            profiles: crate::profiles::Profiles::load(dirs)?,
            dirs: dirs.clone(),
        })
    }
}

/// The PM rule table (`pm-rules.toml`) and its extensions.
fn pm_rules(dirs: &TableDirs) -> Result<fgft_pm::Rules, Error> {
    let srcs: Vec<TableSource> = dirs.sources(fgft_pm::DEFAULT_RULES, "pm-rules.toml")?;
    let named: Vec<(String, String)> = srcs
        .iter()
        .map(|s| {
            (
                s.display("pm-rules.toml").display().to_string(),
                s.text.clone(),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = named
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    fgft_pm::Rules::parse(&refs).map_err(|e| Error::Msg(e.to_string()))
}

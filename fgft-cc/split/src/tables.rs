//! Every table split reads, loaded once at the edge and passed down.
//!
//! The table directories (`FGFT_TABLES`, then `--tables`) are resolved once
//! here; no stage below reads an option or the environment to find a table.
//! Each table is its built-in copy (`fgft-cc/tables/`) extended by the files
//! of the same name in those directories.

use crate::diag::Error;
use crate::plan::table::Table;
use fgft_facts::slots::SlotTable;
use fgft_parse::tables::{self, TableSource};
use fgft_parse::HintTable;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The tables of one split.
pub struct Tables {
    /// The table directories, in the order they extend the built-in copies.
    pub dirs: Vec<PathBuf>,
    /// `compensations.toml`: kernel API -> wrapper, undo action, grants.
    pub api: Table,
    /// `slots.toml`: ops structs and their function fields.
    pub slots: SlotTable,
    /// `macro-hints.toml`: kernel idioms for parsing.
    pub hints: Arc<HintTable>,
    /// `module-init.toml`: module_*_driver macros by name.
    /// (register, unregister) call templates.
    pub module_macros: BTreeMap<String, (String, String)>,
    /// `pm-rules.toml`: how device checkpoints are derived from PM code.
    pub pm_rules: fgft_pm::Rules,
}

impl Tables {
    /// Loads every table; `extra` are the `--tables` directories.
    pub fn load(extra: &[PathBuf]) -> Result<Tables, Error> {
        let dirs = tables::table_dirs(extra);
        let api = Table::from_sources(&tables::extension_files(
            crate::plan::table::BUILTIN,
            crate::plan::table::TABLE_NAME,
            &dirs,
        )?)?;
        let bad = crate::emit::wrappers::check_captures(&api);
        if !bad.is_empty() {
            return Err(Error::Msg(bad.join("\n")));
        }
        Ok(Tables {
            api,
            slots: SlotTable::load(extra)?,
            hints: Arc::new(HintTable::load(extra)?),
            module_macros: module_macros(&dirs)?,
            pm_rules: pm_rules(&dirs)?,
            dirs,
        })
    }
}

/// The module_*_driver macros table (`module-init.toml`).
fn module_macros(dirs: &[PathBuf]) -> Result<BTreeMap<String, (String, String)>, Error> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct F {
        #[serde(default)]
        macros: BTreeMap<String, M>,
    }
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct M {
        register: String,
        unregister: String,
    }
    const BUILTIN: &str = include_str!("../../tables/module-init.toml");
    let srcs = tables::extension_files(BUILTIN, "module-init.toml", dirs)?;
    let mut out = BTreeMap::new();
    for s in &srcs {
        let f: F = tables::parse_toml(s, "module-init.toml")?;
        for (k, v) in f.macros {
            out.insert(k, (v.register, v.unregister));
        }
    }
    Ok(out)
}

/// The PM rule table (`pm-rules.toml`) and its extensions.
fn pm_rules(dirs: &[PathBuf]) -> Result<fgft_pm::Rules, Error> {
    let srcs: Vec<TableSource> =
        tables::extension_files(fgft_pm::DEFAULT_RULES, "pm-rules.toml", dirs)?;
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

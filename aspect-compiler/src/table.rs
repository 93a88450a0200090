//! The macro-semantics table (`tables/aspect-macros.toml`, embedded, plus user
//! extension files found like every fgft table).

use fgft_parse::tables;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

pub const TABLE_NAME: &str = "aspect-macros.toml";
const BUILTIN: &str = include_str!("../tables/aspect-macros.toml");

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    unevaluated: Vec<String>,
    #[serde(default)]
    evaluated_args: BTreeMap<String, Vec<usize>>,
    #[serde(default)]
    writes: BTreeMap<String, usize>,
    #[serde(default)]
    type_arg_pointer: BTreeMap<String, usize>,
    #[serde(default)]
    same_type_arg: BTreeMap<String, usize>,
    #[serde(default)]
    returns: BTreeMap<String, String>,
    #[serde(default)]
    module_driver: BTreeMap<String, [String; 2]>,
}

/// The compiled table.
#[derive(Debug, Default, Clone)]
pub struct Table {
    pub unevaluated: HashSet<String>,
    pub evaluated_args: HashMap<String, Vec<usize>>,
    pub writes: HashMap<String, usize>,
    pub type_arg_pointer: HashMap<String, usize>,
    pub same_type_arg: HashMap<String, usize>,
    pub returns: HashMap<String, String>,
    pub module_driver: HashMap<String, [String; 2]>,
}

impl Table {
    /// The built-in table plus extension files from `FGFT_TABLES` and `extra`.
    pub fn load(extra: &[PathBuf]) -> Result<Table, fgft_parse::ParseError> {
        let dirs = tables::table_dirs(extra);
        let mut t = Table::default();
        for src in tables::extension_files(BUILTIN, TABLE_NAME, &dirs)? {
            let f: File = tables::parse_toml(&src, TABLE_NAME)?;
            t.unevaluated.extend(f.unevaluated);
            t.evaluated_args.extend(f.evaluated_args);
            t.writes.extend(f.writes);
            t.type_arg_pointer.extend(f.type_arg_pointer);
            t.same_type_arg.extend(f.same_type_arg);
            t.returns.extend(f.returns);
            t.module_driver.extend(f.module_driver);
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn builtin_parses() {
        let t = super::Table::load(&[]).unwrap();
        assert!(t.unevaluated.contains("sizeof"));
        assert_eq!(t.writes.get("WRITE_ONCE"), Some(&0));
        assert_eq!(t.type_arg_pointer.get("container_of"), Some(&1));
        assert!(t.module_driver.contains_key("module_pci_driver"));
    }
}

//! The macro-semantics table (`tables/aspect-macros.toml`, embedded, plus user
//! extension files found like every fgft table).

use fgft_parse::modinit::ModuleMacros;
use fgft_parse::tables::{self, TableDirs};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};

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
    /// The `module_*_driver` helpers (`module-init.toml`, shared with split).
    pub module_macros: ModuleMacros,
}

impl Table {
    /// The built-in table plus the extension files in `dirs`, and the
    /// module-init table.
    pub fn load(dirs: &TableDirs) -> Result<Table, fgft_parse::ParseError> {
        let mut t = Table {
            module_macros: ModuleMacros::load(dirs)?,
            ..Table::default()
        };
        for src in dirs.sources(BUILTIN, TABLE_NAME)? {
            let f: File = tables::parse_toml(&src, TABLE_NAME)?;
            t.unevaluated.extend(f.unevaluated);
            t.evaluated_args.extend(f.evaluated_args);
            t.writes.extend(f.writes);
            t.type_arg_pointer.extend(f.type_arg_pointer);
            t.same_type_arg.extend(f.same_type_arg);
            t.returns.extend(f.returns);
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn builtin_parses() {
        let t = super::Table::load(&super::TableDirs::none()).unwrap();
        assert!(t.unevaluated.contains("sizeof"));
        assert_eq!(t.writes.get("WRITE_ONCE"), Some(&0));
        assert_eq!(t.type_arg_pointer.get("container_of"), Some(&1));
        assert!(t.module_macros.contains("module_pci_driver"));
    }
}

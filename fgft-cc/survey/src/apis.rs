//! Which kernel functions the compensation table knows
//! (`fgft-cc/tables/compensations.toml`, built in, plus `compensations.toml`
//! extension files in `FGFT_TABLES` directories or `--tables`).
//!
//! The survey needs names only: an `[api.NAME]` entry (a wrapper with its
//! compensation, or an inline helper) or a name in `[inline] names`.  The
//! full table is read by `fgft-cc split`; here unknown keys are tolerated so
//! the survey keeps working while the table grows.

use fgft_parse::tables::{self, TableDirs, TableSource};
use fgft_parse::ParseError;
use std::collections::BTreeSet;
use std::path::Path;

pub const TABLE_NAME: &str = "compensations.toml";
const BUILTIN: &str = include_str!("../../tables/compensations.toml");

/// Kernel functions with a compensation-table entry.
#[derive(Debug, Clone, Default)]
pub struct KnownApis {
    names: BTreeSet<String>,
}

impl KnownApis {
    /// The built-in table extended by the files in `dirs`.
    pub fn load(dirs: &TableDirs) -> Result<KnownApis, ParseError> {
        Self::from_sources(&dirs.sources(BUILTIN, TABLE_NAME)?)
    }

    /// `file` instead of the built-in table, extended by the files in `dirs`.
    pub fn load_replacing(file: &Path, dirs: &TableDirs) -> Result<KnownApis, ParseError> {
        let text = std::fs::read_to_string(file).map_err(|source| ParseError::Io {
            path: file.to_path_buf(),
            source,
        })?;
        let mut sources = dirs.sources("", TABLE_NAME)?;
        sources[0] = TableSource {
            path: Some(file.to_path_buf()),
            text,
        };
        Self::from_sources(&sources)
    }

    pub fn from_sources(sources: &[TableSource]) -> Result<KnownApis, ParseError> {
        let mut k = KnownApis::default();
        for src in sources {
            let v: toml::Table = tables::parse_toml(src, TABLE_NAME)?;
            if let Some(api) = v.get("api") {
                let Some(t) = api.as_table() else {
                    return Err(tables::table_error(
                        src,
                        TABLE_NAME,
                        "api",
                        "`api` must be a table of [api.NAME] entries".into(),
                    ));
                };
                k.names.extend(t.keys().cloned());
            }
            if let Some(names) = v
                .get("inline")
                .and_then(|i| i.get("names"))
                .and_then(|n| n.as_array())
            {
                k.names
                    .extend(names.iter().filter_map(|n| n.as_str()).map(String::from));
            }
        }
        Ok(k)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_and_extension() {
        let k = KnownApis::load(&TableDirs::none()).unwrap();
        assert!(k.contains("kmalloc"));
        assert!(k.contains("ARRAY_SIZE"));
        assert!(!k.contains("surely_not_a_kernel_api"));
        let ext = KnownApis::from_sources(&[
            TableSource {
                path: None,
                text: BUILTIN.into(),
            },
            TableSource {
                path: Some("x/compensations.toml".into()),
                text: "[api.my_fn]\neffect = \"pure\"\n[inline]\nnames = [\"MY_M\"]\n".into(),
            },
        ])
        .unwrap();
        assert!(ext.contains("my_fn") && ext.contains("MY_M") && ext.contains("kfree"));
        let bad = KnownApis::from_sources(&[TableSource {
            path: Some("y/compensations.toml".into()),
            text: "api = 3\n".into(),
        }]);
        assert!(matches!(bad, Err(ParseError::Table { .. })));
    }
}

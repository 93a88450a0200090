//! Data tables: a built-in copy embedded in the binary plus user extension files.
//!
//! Users extend a table by putting a file of the same name (e.g. `slots.toml`,
//! `macro-hints.toml`) in a directory named by `FGFT_TABLES=dir[:dir...]` or by a
//! command-line flag (`--tables DIR`).  Every crate that reads a table finds its
//! extension files through [`extension_files`].

use crate::ParseError;
use std::ops::Range;
use std::path::PathBuf;

/// Environment variable naming extra table directories (`:`-separated).
pub const TABLES_ENV: &str = "FGFT_TABLES";

/// A table file's text, with where it came from (for diagnostics).
#[derive(Debug, Clone)]
pub struct TableSource {
    /// `None` for the built-in table.
    pub path: Option<PathBuf>,
    pub text: String,
}

impl TableSource {
    /// Name to show in diagnostics.
    pub fn display(&self, builtin_name: &str) -> PathBuf {
        self.path
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("<built-in {builtin_name}>")))
    }
}

/// The table directories of one run: those of `FGFT_TABLES` first, then
/// the command line's (`--tables`).  Resolved once, at the edge (the CLI or
/// a library's entry point), and passed to every loader; no loader reads
/// the environment or an option itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableDirs(Vec<PathBuf>);

impl TableDirs {
    /// `FGFT_TABLES`, then `extra`.
    pub fn resolve(extra: &[PathBuf]) -> TableDirs {
        let mut dirs: Vec<PathBuf> = std::env::var_os(TABLES_ENV)
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        dirs.extend(extra.iter().cloned());
        TableDirs(dirs)
    }

    /// Exactly these directories (no environment).
    pub fn of(dirs: Vec<PathBuf>) -> TableDirs {
        TableDirs(dirs)
    }

    /// No directory: the built-in tables only.
    pub fn none() -> TableDirs {
        TableDirs(Vec::new())
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.0
    }

    /// The built-in text of table `name`, then its extension files.
    pub fn sources(&self, builtin: &str, name: &str) -> Result<Vec<TableSource>, ParseError> {
        extension_files(builtin, name, &self.0)
    }
}

/// Reads the built-in table text followed by every extension file called `name`
/// found in `dirs`.  A directory that does not exist is an error (a mistyped
/// `--tables` must not be ignored); a directory without the file is skipped.
pub fn extension_files(
    builtin: &str,
    name: &str,
    dirs: &[PathBuf],
) -> Result<Vec<TableSource>, ParseError> {
    let mut out = vec![TableSource {
        path: None,
        text: builtin.to_string(),
    }];
    for d in dirs {
        if !d.is_dir() {
            return Err(ParseError::Table {
                path: d.clone(),
                text: String::new(),
                range: None,
                message: "table directory does not exist (from FGFT_TABLES or --tables)".into(),
            });
        }
        let p = d.join(name);
        if p.is_file() {
            let text = std::fs::read_to_string(&p).map_err(|source| ParseError::Io {
                path: p.clone(),
                source,
            })?;
            out.push(TableSource {
                path: Some(p),
                text,
            });
        }
    }
    Ok(out)
}

/// Deserializes one table file, turning a TOML error into a located
/// [`ParseError::Table`].
pub fn parse_toml<T: serde::de::DeserializeOwned>(
    src: &TableSource,
    builtin_name: &str,
) -> Result<T, ParseError> {
    toml::from_str(&src.text).map_err(|e| ParseError::Table {
        path: src.display(builtin_name),
        text: src.text.clone(),
        range: e.span(),
        message: e.message().to_string(),
    })
}

/// A located table problem found after deserializing (e.g. an unknown kind).
pub fn table_error(
    src: &TableSource,
    builtin_name: &str,
    needle: &str,
    message: String,
) -> ParseError {
    let range: Option<Range<usize>> = src.text.find(needle).map(|s| s..s + needle.len());
    ParseError::Table {
        path: src.display(builtin_name),
        text: src.text.clone(),
        range,
        message,
    }
}

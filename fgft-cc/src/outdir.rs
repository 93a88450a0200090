//! Output-directory safety shared by every command that writes a tree.
//!
//! Invariant: nothing the user had is overwritten. OUT must not exist, or be an
//! empty directory, or `--force` must be given; and OUT may never contain or be
//! contained in any input path.

use crate::diag::CliError;
use std::path::{Path, PathBuf};

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Canonical form of a path that may not exist yet: its nearest existing
/// ancestor canonicalized, with the rest appended.
fn canon_lenient(p: &Path) -> PathBuf {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    let mut base = abs.clone();
    let mut rest = Vec::new();
    while !base.exists() {
        match (base.file_name().map(|f| f.to_os_string()), base.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                base = parent.to_path_buf();
            }
            _ => return abs,
        }
    }
    let mut c = canon(&base);
    for r in rest.into_iter().rev() {
        c.push(r);
    }
    c
}

pub fn prepare(out: &Path, inputs: &[PathBuf], force: bool) -> Result<(), CliError> {
    let o = canon_lenient(out);
    for i in inputs {
        let i = canon(i);
        if i.starts_with(&o) || o.starts_with(&i) && i.is_dir() {
            return Err(CliError::Msg(format!(
                "output {} overlaps input {}: refusing to write there",
                out.display(),
                i.display()
            )));
        }
    }
    if out.exists() {
        if !out.is_dir() {
            return Err(CliError::Msg(format!(
                "{} exists and is not a directory",
                out.display()
            )));
        }
        let non_empty = std::fs::read_dir(out)
            .map_err(|source| CliError::Io {
                path: out.to_path_buf(),
                source,
            })?
            .next()
            .is_some();
        if non_empty && !force {
            return Err(CliError::Msg(format!(
                "{} is not empty (use --force to replace it)",
                out.display()
            )));
        }
        if non_empty {
            std::fs::remove_dir_all(out).map_err(|source| CliError::Io {
                path: out.to_path_buf(),
                source,
            })?;
        }
    }
    std::fs::create_dir_all(out).map_err(|source| CliError::Io {
        path: out.to_path_buf(),
        source,
    })
}

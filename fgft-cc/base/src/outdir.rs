//! Output-directory safety shared by everything that writes a tree (the
//! CLI's split, inject and aspect, the campaign).
//!
//! Job: make OUT an empty directory to write into, or refuse.
//!
//! Invariant: nothing the user had is overwritten. OUT must not exist, or be an
//! empty directory, or `force` must be given; and OUT may never contain or be
//! contained in any input path.

use crate::Error;
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

/// Makes `out` ready: created, or emptied when `force` (a non-empty OUT is
/// refused otherwise); refused when it overlaps one of `inputs`.
pub fn prepare<P: AsRef<Path>>(out: &Path, inputs: &[P], force: bool) -> Result<(), Error> {
    let o = canon_lenient(out);
    for i in inputs {
        let i = canon(i.as_ref());
        if i.starts_with(&o) || o.starts_with(&i) && i.is_dir() {
            return Err(Error::Refused(format!(
                "output {} overlaps input {}: refusing to write there",
                out.display(),
                i.display()
            )));
        }
    }
    if out.exists() {
        if !out.is_dir() {
            return Err(Error::Refused(format!(
                "{} exists and is not a directory",
                out.display()
            )));
        }
        let non_empty = std::fs::read_dir(out)
            .map_err(|source| Error::Io {
                path: out.to_path_buf(),
                source,
            })?
            .next()
            .is_some();
        if non_empty && !force {
            return Err(Error::Refused(format!(
                "{} is not empty (use --force to replace it)",
                out.display()
            )));
        }
        if non_empty {
            std::fs::remove_dir_all(out).map_err(|source| Error::Io {
                path: out.to_path_buf(),
                source,
            })?;
        }
    }
    std::fs::create_dir_all(out).map_err(|source| Error::Io {
        path: out.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_overlaps_and_non_empty_dirs() {
        let t = std::env::temp_dir().join(format!("fgft-outdir-{}", std::process::id()));
        let input = t.join("drv");
        std::fs::create_dir_all(&input).unwrap();
        std::fs::write(input.join("a.c"), "int x;\n").unwrap();
        // Inside an input, or holding one.
        assert!(matches!(
            prepare(&input.join("out"), &[&input], true),
            Err(Error::Refused(_))
        ));
        assert!(matches!(
            prepare(&t, &[&input], true),
            Err(Error::Refused(_))
        ));
        // A fresh directory, then a non-empty one without and with force.
        let out = t.join("out");
        prepare(&out, &[&input], false).unwrap();
        std::fs::write(out.join("old"), "x").unwrap();
        assert!(matches!(
            prepare(&out, &[&input], false),
            Err(Error::Refused(_))
        ));
        prepare(&out, &[&input], true).unwrap();
        assert!(std::fs::read_dir(&out).unwrap().next().is_none());
        assert!(input.join("a.c").is_file());
        let _ = std::fs::remove_dir_all(&t);
    }
}

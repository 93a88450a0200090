//! Walking the directories a user names, bounded on any tree.
//!
//! Job: the regular files under some roots, in a stable order, with what
//! was skipped and why.
//!
//! Invariants:
//! - Every directory is read at most once, by its canonical path: a
//!   symbolic link is followed once, and a link back up the tree (a loop)
//!   is skipped and listed, never walked again.  A link up to a directory
//!   that holds a root (`sub/up -> ../..`) is a loop too: walking it would
//!   read everything beside the tree, up to the whole file system.
//! - A directory below a root that holds fgft's manifest is fgft's own
//!   output: skipped and listed, never read back as input.
//! - Only regular files are returned: FIFOs, sockets and devices are
//!   skipped and listed (reading a FIFO named `x.c` would block forever).
//! - An unreadable directory or entry is skipped and listed, like an
//!   unreadable file; the walk goes on.
//! - A file reached twice (through a link) is returned once.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Something the walk did not return, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub why: String,
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walk {
    /// Regular files, sorted.
    pub files: Vec<PathBuf>,
    pub skipped: Vec<Skipped>,
}

/// Describes a file type the walk does not read.
pub fn special_kind(ft: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_fifo() {
        Some("a FIFO")
    } else if ft.is_socket() {
        Some("a socket")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_char_device() {
        Some("a character device")
    } else {
        None
    }
}

/// The regular files under `roots` (a root that is a file is taken as it
/// is, if regular) for which `keep` holds.
pub fn files(roots: &[PathBuf], keep: &dyn Fn(&Path) -> bool) -> Walk {
    let mut w = Walk::default();
    let mut seen_dirs: HashSet<PathBuf> = HashSet::new();
    let mut seen_files: HashSet<PathBuf> = HashSet::new();
    for root in roots {
        let meta = match std::fs::metadata(root) {
            Ok(m) => m,
            Err(e) => {
                w.skipped.push(Skipped {
                    path: root.clone(),
                    why: format!("cannot read it: {e}"),
                });
                continue;
            }
        };
        if !meta.is_dir() {
            add_file(&mut w, &mut seen_files, root, &meta.file_type(), true);
            continue;
        }
        // Depth-first, each directory's entries sorted.
        let top = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
        let mut stack = vec![root.clone()];
        while let Some(d) = stack.pop() {
            let c = std::fs::canonicalize(&d).unwrap_or_else(|_| d.clone());
            if c != top && top.starts_with(&c) {
                w.skipped.push(Skipped {
                    path: d.clone(),
                    why: format!(
                        "a symbolic link up to {}, which holds the tree being walked",
                        c.display()
                    ),
                });
                continue;
            }
            if !seen_dirs.insert(c.clone()) {
                w.skipped.push(Skipped {
                    path: d.clone(),
                    why: format!(
                        "a directory already walked as {} (a symbolic link back into the tree)",
                        c.display()
                    ),
                });
                continue;
            }
            let rd = match std::fs::read_dir(&d) {
                Ok(rd) => rd,
                Err(e) => {
                    w.skipped.push(Skipped {
                        path: d.clone(),
                        why: format!("cannot read this directory: {e}"),
                    });
                    continue;
                }
            };
            let mut entries: Vec<PathBuf> = Vec::new();
            for e in rd {
                match e {
                    Ok(e) => entries.push(e.path()),
                    Err(e) => w.skipped.push(Skipped {
                        path: d.clone(),
                        why: format!("cannot read an entry: {e}"),
                    }),
                }
            }
            entries.sort();
            let mut subdirs = Vec::new();
            for p in entries {
                // Through a link: what it points to.
                let meta = match std::fs::metadata(&p) {
                    Ok(m) => m,
                    Err(e) => {
                        w.skipped.push(Skipped {
                            path: p.clone(),
                            why: format!("cannot follow it: {e}"),
                        });
                        continue;
                    }
                };
                if meta.is_dir() && p.join(crate::outdir::MANIFEST).is_file() {
                    w.skipped.push(Skipped {
                        path: p.clone(),
                        why: format!(
                            "an fgft output directory (it holds {}), never read as input",
                            crate::outdir::MANIFEST
                        ),
                    });
                } else if meta.is_dir() {
                    subdirs.push(p);
                } else if keep(&p) {
                    add_file(&mut w, &mut seen_files, &p, &meta.file_type(), false);
                }
            }
            stack.extend(subdirs.into_iter().rev());
        }
    }
    w.files.sort();
    w
}

fn add_file(
    w: &mut Walk,
    seen: &mut HashSet<PathBuf>,
    p: &Path,
    ft: &std::fs::FileType,
    given: bool,
) {
    if let Some(kind) = special_kind(ft) {
        w.skipped.push(Skipped {
            path: p.to_path_buf(),
            why: format!("{kind}, not a regular file: not read"),
        });
        return;
    }
    let c = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if seen.insert(c) || given {
        w.files.push(p.to_path_buf());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_walked_once_and_fifos_skipped() {
        let t = std::env::temp_dir().join(format!("fgft-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        std::fs::create_dir_all(t.join("a/b")).unwrap();
        std::fs::write(t.join("a/x.c"), "").unwrap();
        std::fs::write(t.join("a/b/y.c"), "").unwrap();
        std::os::unix::fs::symlink(&t, t.join("a/b/up")).unwrap();
        std::os::unix::fs::symlink(t.join("a"), t.join("a/b/up2")).unwrap();
        let fifo = t.join("a/f.c");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let w = files(std::slice::from_ref(&t), &|p| {
            p.extension().is_some_and(|e| e == "c")
        });
        assert_eq!(w.files, vec![t.join("a/b/y.c"), t.join("a/x.c")]);
        assert_eq!(w.skipped.len(), 3, "{:?}", w.skipped);
        // A link above the root is not walked.
        let w = files(&[t.join("a")], &|p| p.extension().is_some_and(|e| e == "c"));
        assert_eq!(w.files, vec![t.join("a/b/y.c"), t.join("a/x.c")]);
        assert!(w.skipped.iter().any(|s| s.why.contains("holds the tree")));
        assert!(w.skipped.iter().any(|s| s.why.contains("FIFO")));
        let _ = std::fs::remove_dir_all(&t);
    }
}

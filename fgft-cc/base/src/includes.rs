//! `#include` directives of a C text, without a parse.
//!
//! Job: find the quoted include directives of a file and the files they name
//! that exist; and the names of its `<x>` includes.
//!
//! Invariants: only a `#` that starts a line (after blanks) is looked at, so
//! an include inside a string or after code is not one; `directives` never
//! reports `<x>` includes, `system` only those; results are in text order; a
//! quoted directive whose quote is not closed is reported with
//! `closed: false` and the rest of its line (trimmed) as the name.

use std::path::{Path, PathBuf};

/// One `#include "name"` directive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Include<'a> {
    pub name: &'a str,
    /// The closing quote is there.
    pub closed: bool,
}

/// What follows `#include` on each directive line of `text`, in order.
fn include_args(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    memchr::memchr_iter(b'#', b).filter_map(move |at| {
        let line = memchr::memrchr(b'\n', &b[..at]).map_or(0, |p| p + 1);
        if !text[line..at].trim_start().is_empty() {
            return None;
        }
        let end = memchr::memchr(b'\n', &b[at..]).map_or(b.len(), |p| at + p);
        text[at + 1..end]
            .trim_start()
            .strip_prefix("include")
            .map(str::trim_start)
    })
}

/// The quoted include directives of `text`, in order.
pub fn directives(text: &str) -> Vec<Include<'_>> {
    include_args(text)
        .filter_map(|rest| {
            let q = rest.strip_prefix('"')?;
            Some(match q.find('"') {
                Some(close) => Include {
                    name: &q[..close],
                    closed: true,
                },
                None => Include {
                    name: q.trim_end(),
                    closed: false,
                },
            })
        })
        .collect()
}

/// The names of the `#include <name>` directives of `text`, in order.
pub fn system(text: &str) -> Vec<&str> {
    include_args(text)
        .filter_map(|rest| {
            let a = rest.strip_prefix('<')?;
            Some(&a[..a.find('>')?])
        })
        .collect()
}

/// The file `name` included from the file at `path`: next to it, else in the
/// first of `dirs` that has it.
pub fn resolve(path: &Path, name: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    let here = path.parent().unwrap_or(Path::new("."));
    std::iter::once(here)
        .chain(dirs.iter().map(PathBuf::as_path))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The files named by the closed `#include "x"` directives of `text` (the
/// file at `path`) that exist next to it or in `dirs`.
pub fn local_includes(path: &Path, text: &str, dirs: &[PathBuf]) -> Vec<PathBuf> {
    directives(text)
        .into_iter()
        .filter(|i| i.closed)
        .filter_map(|i| resolve(path, i.name, dirs))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_directives_that_start_a_line() {
        let t = "#include \"a.h\"\n  # include \"b.h\"\nx = 1; #include \"c.h\"\n\
                 #include <d.h>\n\"#include \\\"e.h\\\"\"\n#include \"f.h\r\n#define X";
        let names: Vec<(&str, bool)> = directives(t).iter().map(|i| (i.name, i.closed)).collect();
        assert_eq!(names, [("a.h", true), ("b.h", true), ("f.h", false)]);
        let t2 = "#include <linux/x.h>\n  #  include <y.h>\nz; #include <w.h>\n#include <open\n";
        assert_eq!(system(t2), ["linux/x.h", "y.h"]);
        assert_eq!(system(t), ["d.h"]);
    }

    #[test]
    fn existing_files_next_to_the_source_or_in_dirs() {
        let d = std::env::temp_dir().join(format!("fgft-base-inc-{}", std::process::id()));
        let inc = d.join("inc");
        std::fs::create_dir_all(&inc).unwrap();
        std::fs::write(d.join("a.h"), "").unwrap();
        std::fs::write(inc.join("b.h"), "").unwrap();
        let src = d.join("x.c");
        let t = "#include \"a.h\"\n#include \"b.h\"\n#include \"none.h\"\n";
        assert_eq!(local_includes(&src, t, &[]), [d.join("a.h")]);
        assert_eq!(
            local_includes(&src, t, std::slice::from_ref(&inc)),
            [d.join("a.h"), inc.join("b.h")]
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}

//! fgft-base: the one home of the small primitives every fgft crate needs.
//!
//! Each module does one job and states its invariants; none depends on a
//! parser, so every crate of the workspace can use them:
//! - [`edit`]: byte-range edits over one text, checked and applied;
//! - [`ident`]: C identifier bytes, whole-word search, identifier spelling;
//! - [`lex`]: skipping C comments and literals, identifier tokens;
//! - [`includes`]: local `#include "x"` directives of a C text;
//! - [`kbuild`]: running `make -C KDIR M=DIR <targets>`;
//! - [`makefile`]: reading Kbuild makefiles without running make;
//! - [`outdir`]: writing an output directory (or report file) whole or
//!   not at all, without overwriting what the user had;
//! - [`rust_depth`]: how deep a Rust text nests, checked before syn's
//!   recursive parse, and a stack for that parse;
//! - [`walk`]: the regular files under user-named directories, each
//!   directory once (symbolic-link loops and special files listed).
//!
//! All failures are one [`Error`].

pub mod edit;
pub mod ident;
pub mod includes;
pub mod kbuild;
pub mod lex;
pub mod makefile;
pub mod outdir;
pub mod rust_depth;
pub mod walk;

use std::ops::Range;

/// Bytes as text of the same length: each byte of an invalid UTF-8
/// sequence becomes `?`, so byte offsets still match the file.  The flag
/// says whether any byte was replaced.
pub fn text_same_len(bytes: Vec<u8>) -> (String, bool) {
    match String::from_utf8(bytes) {
        Ok(s) => (s, false),
        Err(e) => {
            let mut b = e.into_bytes();
            let mut i = 0;
            while i < b.len() {
                match std::str::from_utf8(&b[i..]) {
                    Ok(_) => break,
                    Err(err) => {
                        let bad = i + err.valid_up_to();
                        let len = err.error_len().unwrap_or(b.len() - bad);
                        b[bad..bad + len].fill(b'?');
                        i = bad + len;
                    }
                }
            }
            // Every invalid byte is now ASCII: the rest was valid already.
            let s = String::from_utf8(b)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            (s, true)
        }
    }
}

/// The start of every line of a text, found once: the 1-based line of any
/// byte is then a binary search (counting newlines from the start at each
/// call makes a whole-file pass quadratic).
#[derive(Debug, Clone, Default)]
pub struct LineIndex {
    starts: Vec<usize>,
    len: usize,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        LineIndex {
            starts: std::iter::once(0)
                .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1))
                .collect(),
            len: text.len(),
        }
    }

    /// 1-based line of byte `b` (the last line for a byte past the end).
    pub fn line(&self, b: usize) -> usize {
        let b = b.min(self.len);
        self.starts.partition_point(|&s| s <= b)
    }
}

/// Edits over the same bytes.  `a` is the earlier (or enclosing) edit, `b`
/// the later one that conflicts with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("edits {a:?} and {b:?} overlap")]
pub struct Overlap {
    pub a: Range<usize>,
    pub b: Range<usize>,
}

/// The errors of fgft-base.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Two edits of one text conflict, or an edit lies outside the text.
    #[error(transparent)]
    Overlap(#[from] Overlap),
    /// An output directory that may not be written to.
    #[error("{0}")]
    Refused(String),
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `make` could not be started.
    #[error("cannot run `{cmd}`: {source}")]
    Spawn {
        cmd: String,
        #[source]
        source: std::io::Error,
    },
}

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
//! - [`outdir`]: making an output directory ready without overwriting
//!   what the user had.
//!
//! All failures are one [`Error`].

pub mod edit;
pub mod ident;
pub mod includes;
pub mod kbuild;
pub mod lex;
pub mod makefile;
pub mod outdir;

use std::ops::Range;

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

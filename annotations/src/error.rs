//! The crate's one error type.

use std::path::PathBuf;

use crate::Loc;

/// Any problem with annotations. Every variant but `Io` carries the
/// `file:line:col` where it was found; its `Display` starts with it.
#[derive(Debug, thiserror::Error)]
pub enum AnnotError {
    /// The file could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Not TOML, or a value of the wrong TOML type.
    #[error("{loc}: {msg}")]
    Toml { loc: Loc, msg: String },
    /// A key or table the format does not have.
    #[error("{loc}: unknown key `{key}`{}", expected_list(.expected))]
    UnknownKey {
        loc: Loc,
        key: String,
        expected: Vec<String>,
    },
    /// A required key is absent.
    #[error("{loc}: missing key `{key}` in {table}")]
    MissingKey {
        loc: Loc,
        key: String,
        table: String,
    },
    /// A value that is well-typed but wrong (bad identifier, key that does
    /// not apply to the hint kind, unknown kind, bad path, ...).
    #[error("{loc}: {msg}")]
    Invalid { loc: Loc, msg: String },
    /// An isolate or exclude pattern that is not a name or a glob.
    #[error("{loc}: bad function pattern `{pattern}`: {msg}")]
    BadPattern {
        loc: Loc,
        pattern: String,
        msg: String,
    },
    /// Two annotations that say different things about the same thing.
    #[error("{loc}: {msg} (first given at {previous})")]
    Conflict {
        loc: Loc,
        msg: String,
        previous: Box<Loc>,
    },
    /// A misplaced or malformed inline `FGFT_*` macro.
    #[error("{loc}: {msg}")]
    Inline { loc: Loc, msg: String },
    /// A file named by `[driver]` does not exist.
    #[error("{loc}: no such file or directory: {}", path.display())]
    Missing { loc: Loc, path: PathBuf },
}

fn expected_list(expected: &[String]) -> String {
    if expected.is_empty() {
        String::new()
    } else {
        format!("; expected one of: {}", expected.join(", "))
    }
}

impl AnnotError {
    /// Where the problem is (None only for `Io`).
    pub fn loc(&self) -> Option<&Loc> {
        match self {
            AnnotError::Io { .. } => None,
            AnnotError::Toml { loc, .. }
            | AnnotError::UnknownKey { loc, .. }
            | AnnotError::MissingKey { loc, .. }
            | AnnotError::Invalid { loc, .. }
            | AnnotError::BadPattern { loc, .. }
            | AnnotError::Conflict { loc, .. }
            | AnnotError::Inline { loc, .. }
            | AnnotError::Missing { loc, .. } => Some(loc),
        }
    }
}

//! The split library's error type and its located diagnostics.
//!
//! Located problems are data (file, byte range, message, notes); rendering
//! them is the CLI's job (codespan-reporting at the `fgft-cc` edge).

use std::ops::Range;
use std::path::PathBuf;

/// One diagnostic anchored in a source file.
#[derive(Debug, Clone)]
pub struct Located {
    pub path: PathBuf,
    /// The file's text (needed for the snippet); empty when unreadable.
    pub text: String,
    pub range: Range<usize>,
    pub message: String,
    pub label: String,
    pub notes: Vec<String>,
    /// Warnings are reported but do not fail the command.
    pub warning: bool,
}

/// Everything that can stop a split.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Msg(String),
    #[error("{} error(s)", .0.iter().filter(|d| !d.warning).count())]
    Located(Vec<Located>),
    #[error(transparent)]
    Parse(#[from] fgft_parse::ParseError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl From<fgft_annotations::AnnotError> for Error {
    fn from(e: fgft_annotations::AnnotError) -> Error {
        match e.loc() {
            Some(loc) => Error::Located(vec![Located {
                path: loc.file.clone(),
                text: std::fs::read_to_string(&loc.file).unwrap_or_default(),
                range: loc.start..loc.end,
                message: e.to_string(),
                label: "here".into(),
                notes: vec![],
                warning: false,
            }]),
            None => Error::Msg(e.to_string()),
        }
    }
}

//! fgft-aspect: KLAS aspects woven into C driver sources.
//!
//! An aspect file (XML, the form of the KLAS seed) names advice: C code that runs
//! at join points picked by a pointcut.  This crate
//!
//! - reads the aspect ([`xml`], [`pointcut`]), with located diagnostics;
//! - finds the join points in the driver's C source ([`scan`]): function
//!   entries and exits, call sites and every read and write of a struct member,
//!   with the member's struct type resolved through declarations, parameters,
//!   field types, casts and typedefs ([`ctypes`]);
//! - weaves the driver as a byte-range source transformation ([`weave`]): each
//!   join point gets a hook guarded by one static key per advice; untouched
//!   text stays byte-identical and line numbers do not move;
//! - generates the trampolines that hold the advice bodies, the static keys,
//!   and a debugfs switch per advice ([`codegen`]);
//! - optionally compiles the generated C against a kernel tree and maps gcc's
//!   messages back to the advice's lines in the aspect file ([`kbuild`]).

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

pub mod bench;
pub mod codegen;
pub mod ctypes;
pub mod kbuild;
pub mod pointcut;
pub mod scan;
pub mod table;
pub mod textmap;
pub mod weave;
pub mod xml;
pub mod xmlcheck;

pub use weave::{weave, Options, Woven};
pub use xml::Aspect;

/// One problem anchored in a file (the aspect file or a driver source).
#[derive(Debug, Clone)]
pub struct Diag {
    pub path: PathBuf,
    /// The file's text, for the snippet.
    pub text: Arc<str>,
    pub range: Range<usize>,
    pub message: String,
    pub label: String,
    pub notes: Vec<String>,
    /// Warnings are reported but do not fail the command.
    pub warning: bool,
}

impl Diag {
    pub fn error(
        path: &std::path::Path,
        text: &Arc<str>,
        range: Range<usize>,
        message: impl Into<String>,
        label: impl Into<String>,
    ) -> Diag {
        Diag {
            path: path.to_path_buf(),
            text: text.clone(),
            range,
            message: message.into(),
            label: label.into(),
            notes: Vec::new(),
            warning: false,
        }
    }

    pub fn warning(
        path: &std::path::Path,
        text: &Arc<str>,
        range: Range<usize>,
        message: impl Into<String>,
        label: impl Into<String>,
    ) -> Diag {
        Diag {
            warning: true,
            ..Diag::error(path, text, range, message, label)
        }
    }

    pub fn note(mut self, n: impl Into<String>) -> Diag {
        self.notes.push(n.into());
        self
    }

    /// `file:line: message`, for plain-text output and tests.
    pub fn short(&self) -> String {
        format!(
            "{}:{}: {}: {}",
            self.path.display(),
            textmap::line_of(&self.text, self.range.start),
            if self.warning { "warning" } else { "error" },
            self.message
        )
    }
}

/// Errors of the aspect compiler.
#[derive(Debug, thiserror::Error)]
pub enum AspectError {
    /// Located problems (at least one is an error); warnings may be mixed in.
    #[error("{} error(s)", .0.iter().filter(|d| !d.warning).count())]
    Diagnostics(Vec<Diag>),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Parse(#[from] fgft_parse::ParseError),
    /// Running Kbuild (preprocessing or the compile check) failed outright.
    #[error("kbuild: {0}")]
    Kbuild(String),
    #[error("{0}")]
    Msg(String),
}

impl AspectError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> AspectError {
        AspectError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The closest candidate to `name`, when close enough to suggest.
pub(crate) use fgft_base::ident::suggest;

//! Source locations (`file:line:col`) for diagnostics.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// A place in a sidecar or C file: 1-based line and column (in characters)
/// plus the byte range, for codespan-style reports.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Loc {
    pub file: PathBuf,
    pub line: usize,
    pub col: usize,
    pub start: usize,
    pub end: usize,
}

impl Loc {
    /// The location of byte range `start..end` of `text` (clamped to the
    /// text, so any range is accepted).
    pub fn from_span(file: &Path, text: &str, start: usize, end: usize) -> Loc {
        let mut start = start.min(text.len());
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        let before = &text[..start];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = text[line_start..start].chars().count() + 1;
        Loc {
            file: file.to_path_buf(),
            line,
            col,
            start,
            end: end.clamp(start, text.len()),
        }
    }

    /// A location for a whole file (line 1, column 1) or a command line.
    pub fn file_start(file: &Path) -> Loc {
        Loc {
            file: file.to_path_buf(),
            line: 1,
            col: 1,
            start: 0,
            end: 0,
        }
    }
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.col)
    }
}

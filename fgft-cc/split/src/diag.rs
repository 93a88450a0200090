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

/// An error about one command-line argument (a source path, an option's
/// value): located at `<command line>`, the argument shown and underlined.
pub fn arg_error(flag: Option<&str>, value: &str, message: String, fix: &str) -> Error {
    let lead = flag.map_or(String::new(), |f| format!("{f} "));
    let text = format!("{lead}{value}\n");
    Error::Located(vec![Located {
        path: PathBuf::from("<command line>"),
        range: lead.len()..lead.len() + value.len().max(1),
        text,
        message,
        label: "here".into(),
        notes: if fix.is_empty() {
            vec![]
        } else {
            vec![fix.to_string()]
        },
        warning: false,
    }])
}

/// An error about the sources as given (positional arguments), shown at
/// them.
pub fn sources_error(sources: &[PathBuf], message: String, fix: &str) -> Error {
    let shown: Vec<String> = sources.iter().map(|p| p.display().to_string()).collect();
    arg_error(None, &shown.join(" "), message, fix)
}

/// The file, text and range a diagnostic at `loc` shows.  A pattern given
/// on the command line or by a profile has no file: its snippet is the
/// option that gave it (`--isolate PATTERN`, `--profile NAME: PATTERN`),
/// the pattern underlined.
pub(crate) fn at_loc(
    loc: &fgft_annotations::Loc,
    pattern: Option<&str>,
) -> (PathBuf, String, Range<usize>) {
    let f = loc.file.to_string_lossy();
    let flag = if f == "<command line>" {
        Some("--isolate".to_string())
    } else {
        f.strip_prefix("<profile ")
            .and_then(|r| r.strip_suffix('>'))
            .map(|name| format!("--profile {name}:"))
    };
    match flag {
        Some(flag) => {
            let v = pattern.unwrap_or("");
            let start = flag.len() + 1;
            (
                loc.file.clone(),
                format!("{flag} {v}\n"),
                start..start + v.len().max(1),
            )
        }
        None => (
            loc.file.clone(),
            std::fs::read_to_string(&loc.file).unwrap_or_default(),
            loc.start..loc.end,
        ),
    }
}

impl From<fgft_annotations::AnnotError> for Error {
    fn from(e: fgft_annotations::AnnotError) -> Error {
        let pattern = match &e {
            fgft_annotations::AnnotError::BadPattern { pattern, .. } => Some(pattern.clone()),
            _ => None,
        };
        match e.loc() {
            Some(loc) => Error::Located(vec![{
                let (path, text, range) = at_loc(loc, pattern.as_deref());
                // The location is the snippet's; the message need not repeat it.
                let full = e.to_string();
                let message = full
                    .strip_prefix(&format!("{loc}: "))
                    .map_or(full.clone(), str::to_string);
                Located {
                    path,
                    text,
                    range,
                    message,
                    label: "here".into(),
                    notes: vec![],
                    warning: false,
                }
            }]),
            None => Error::Msg(e.to_string()),
        }
    }
}

//! User-facing error reports.
//!
//! `CliError` gathers the error types of the pipeline crates. Located problems are
//! carried as `Located` diagnostics (file, byte range, message, notes) and rendered
//! rustc-style with the source snippet through codespan-reporting.

use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, termcolor::ColorChoice, termcolor::StandardStream};
use std::io::IsTerminal;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::OnceLock;

pub use fgft_split::Located;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
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

impl From<fgft_base::Error> for CliError {
    fn from(e: fgft_base::Error) -> CliError {
        match e {
            fgft_base::Error::Io { path, source } => CliError::Io { path, source },
            other => CliError::Msg(other.to_string()),
        }
    }
}

impl From<fgft_split::Error> for CliError {
    fn from(e: fgft_split::Error) -> CliError {
        match e {
            fgft_split::Error::Msg(m) => CliError::Msg(m),
            fgft_split::Error::Located(d) => CliError::Located(d),
            fgft_split::Error::Parse(p) => CliError::Parse(p),
            fgft_split::Error::Io { path, source } => CliError::Io { path, source },
        }
    }
}

/// `--color`: when diagnostics are coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// When stderr is a terminal and `NO_COLOR` is unset (or empty).
    Auto,
    Always,
    Never,
}

static COLOR: OnceLock<ColorChoice> = OnceLock::new();

/// Decides, once, whether diagnostics are coloured.
pub fn set_color(when: ColorWhen) {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let choice = match when {
        ColorWhen::Always => ColorChoice::Always,
        ColorWhen::Never => ColorChoice::Never,
        ColorWhen::Auto if no_color || !std::io::stderr().is_terminal() => ColorChoice::Never,
        ColorWhen::Auto => ColorChoice::Auto,
    };
    let _ = COLOR.set(choice);
}

fn color() -> ColorChoice {
    *COLOR.get().unwrap_or(&ColorChoice::Never)
}

/// Renders located diagnostics (errors and warnings) to stderr.
pub fn emit(diags: &[Located]) {
    let mut files = SimpleFiles::new();
    let writer = StandardStream::stderr(color());
    let config = term::Config::default();
    for d in diags {
        let id = files.add(d.path.display().to_string(), d.text.clone());
        let range = clamp(&d.text, d.range.clone());
        let base = if d.warning {
            Diagnostic::warning()
        } else {
            Diagnostic::error()
        };
        let diag = base
            .with_message(&d.message)
            .with_labels(vec![Label::primary(id, range).with_message(&d.label)])
            .with_notes(d.notes.clone());
        let _ = term::emit_to_write_style(&mut writer.lock(), &config, &files, &diag);
    }
}

fn clamp(text: &str, r: Range<usize>) -> Range<usize> {
    let mut s = r.start.min(text.len());
    let mut e = r.end.min(text.len()).max(s);
    while s > 0 && !text.is_char_boundary(s) {
        s -= 1;
    }
    while e < text.len() && !text.is_char_boundary(e) {
        e += 1;
    }
    s..e
}

/// Prints an error for the user.
pub fn report(e: &CliError) {
    match e {
        CliError::Located(d) => {
            emit(d);
            eprintln!("fgft-cc: {e}");
        }
        // A malformed table with a known place: shown at its line, like
        // any located diagnostic.
        CliError::Parse(fgft_parse::ParseError::Table {
            path,
            text,
            range: Some(range),
            message,
        }) => {
            emit(&[Located {
                path: path.clone(),
                text: text.clone(),
                range: range.clone(),
                message: format!("bad table: {message}"),
                label: "here".into(),
                notes: vec![],
                warning: false,
            }]);
            eprintln!("fgft-cc: 1 error(s)");
        }
        other => eprintln!("fgft-cc: error: {other}"),
    }
}

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

/// An error in a command-line argument, shown at the argument: `flag` and
/// `value` are the snippet (`<command line>`; an empty flag for a
/// positional argument), the value is underlined, and `fix` says what to
/// give instead ([`fgft_split::diag::arg_error`]).
pub fn arg_error(flag: &str, value: &str, message: String, fix: &str) -> CliError {
    let flag = (!flag.is_empty()).then_some(flag);
    fgft_split::diag::arg_error(flag, value, message, fix).into()
}

/// An error about the sources as given, shown at them.
pub fn sources_error(sources: &[PathBuf], message: String, fix: &str) -> CliError {
    fgft_split::diag::sources_error(sources, message, fix).into()
}

/// An output path refused by `fgft_base::outdir`, shown at `-o OUT`.
pub fn out_error(flag: &str, out: &std::path::Path, e: fgft_base::Error) -> CliError {
    match e {
        fgft_base::Error::Refused(m) => arg_error(flag, &out.display().to_string(), m, ""),
        other => other.into(),
    }
}

/// Environment variables fgft reads, checked before any work: a value
/// that does not parse is an error, never silently ignored.
pub fn check_env() -> Result<(), CliError> {
    let name = fgft_parse::BUDGET_ENV;
    if let Some(v) = std::env::var_os(name) {
        let v = v.to_string_lossy().into_owned();
        if !v.trim().parse::<u64>().is_ok_and(|n| n > 0) {
            let text = format!("{name}={v}\n");
            let start = name.len() + 1;
            return Err(CliError::Located(vec![Located {
                path: PathBuf::from("<environment>"),
                range: start..start + v.len().max(1),
                text,
                message: format!("{name} must be a positive number of milliseconds, not `{v}`"),
                label: "not a number of milliseconds".into(),
                notes: vec![format!("e.g. {name}=10000, or unset it for the default")],
                warning: false,
            }]));
        }
    }
    Ok(())
}

/// A front-end error that knows its byte offset, as a located diagnostic.
fn parse_located(e: &fgft_parse::ParseError) -> Option<Located> {
    use fgft_parse::ParseError as P;
    let (path, text, range, message, label) = match e {
        P::Budget {
            path,
            text,
            offset,
            what,
        } => (
            path,
            text.clone(),
            *offset..*offset + 1,
            format!("cannot read this file: {what}"),
            "here",
        ),
        P::NotC {
            path,
            reason,
            offset,
        } => {
            let text: String = std::fs::read(path)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
                .chars()
                .map(|c| if c == '\0' { '?' } else { c })
                .collect();
            (
                path,
                text,
                *offset..*offset + 1,
                format!("not a C source file: {reason}"),
                "this byte",
            )
        }
        P::Table {
            path,
            text,
            range: Some(range),
            message,
        } => (
            path,
            text.clone(),
            range.clone(),
            format!("bad table: {message}"),
            "here",
        ),
        // A table directory that is not there: the option that named it.
        P::Table {
            path,
            range: None,
            message,
            ..
        } => {
            let shown = path.display().to_string();
            return Some(Located {
                path: PathBuf::from("<command line>"),
                text: format!("--tables {shown}\n"),
                range: 9..9 + shown.len().max(1),
                message: format!("{shown}: {message}"),
                label: "here".into(),
                notes: vec!["give an existing directory of tables (or fix FGFT_TABLES)".into()],
                warning: false,
            });
        }
        // The file itself could not be read: shown at its start.
        P::Io { path, source } => (
            path,
            String::new(),
            0..0,
            format!("cannot read {}: {source}", path.display()),
            "",
        ),
        _ => return None,
    };
    Some(Located {
        path: path.clone(),
        text,
        range,
        message,
        label: label.into(),
        notes: vec![],
        warning: false,
    })
}

/// Prints an error for the user.
pub fn report(e: &CliError) {
    match e {
        CliError::Located(d) => {
            emit(d);
            eprintln!("fgft-cc: {e}");
        }
        // A front-end error with a known place (a malformed table, a file
        // too deep or not C): shown at its line, like any located one.
        CliError::Parse(p) => match parse_located(p) {
            Some(l) => {
                emit(&[l]);
                eprintln!("fgft-cc: 1 error(s)");
            }
            None => eprintln!("fgft-cc: error: {p}"),
        },
        other => eprintln!("fgft-cc: error: {other}"),
    }
}

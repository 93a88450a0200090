//! `fgft-cc survey TREE [--json FILE]`: which drivers under a kernel tree are
//! ready for `fgft-cc split`, and what annotations each needs.
//!
//! The table goes to stdout, the JSON report to FILE (`-` for stdout, then
//! no table).  Files that could not be surveyed (parse budget exhausted,
//! binary, unreadable, Rust syntax errors) are warnings with their location;
//! they are listed in the report and do not change the exit code.

use crate::diag::{CliError, Located};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// Kernel tree (or any directory) to survey.
    pub tree: PathBuf,
    /// Write the JSON report here (`-`: stdout, instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the findings as a SARIF 2.1.0 log (kernel functions
    /// without a table entry and members needing a hint, each at its first
    /// use; files that could not be read), for code-scanning tools.
    #[arg(long, value_name = "FILE")]
    pub sarif: Option<PathBuf>,
    /// Parse budget per file, in milliseconds (default: FGFT_PARSE_BUDGET_MS
    /// or 10000).
    #[arg(long, value_name = "MS")]
    pub budget_ms: Option<u64>,
    /// Worker threads (default: one per core).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Extra table directory (macro-hints.toml, slots.toml,
    /// compensations.toml); repeatable. FGFT_TABLES=dir[:dir] is read too.
    #[arg(long = "tables", value_name = "DIR")]
    pub tables: Vec<PathBuf>,
    /// Check kernel calls against this compensation table instead of the
    /// built-in one (extension files from --tables/FGFT_TABLES still apply).
    #[arg(long, value_name = "FILE")]
    pub api_table: Option<PathBuf>,
    /// No progress bar (it is only shown on a terminal anyway).
    #[arg(long)]
    pub no_progress: bool,
    /// Also give each module's verdict for this isolation profile
    /// (profiles.toml): ready exactly when `fgft-cc split --profile NAME`
    /// with no sidecar accepts it (split's own analysis is run).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Kernel build directory for --profile (the kernel's headers tell
    /// macros and static inlines from exported functions, as split --kdir).
    #[arg(long, value_name = "KDIR")]
    pub kdir: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let opts = fgft_survey::SurveyOptions {
        budget: args.budget_ms.map(Duration::from_millis),
        tables: args.tables.clone(),
        jobs: args.jobs,
        progress: !args.no_progress,
        api_table: args.api_table.clone(),
    };
    let mut outcome = fgft_survey::survey(&args.tree, &opts).map_err(|e| match e {
        fgft_survey::SurveyError::Parse(p) => CliError::Parse(p),
        other => CliError::Msg(other.to_string()),
    })?;
    if let Some(profile) = &args.profile {
        let tables = fgft_split::Tables::load(&args.tables)?;
        tables.profiles.get(profile)?;
        let po = fgft_survey::profile::ProfileOptions {
            profile,
            kdir: args.kdir.clone(),
            tables: &tables,
        };
        fgft_survey::profile::add_verdicts(&args.tree, &mut outcome.survey, &po);
    }
    // Per-file problems: warnings with the source line.
    let warnings: Vec<Located> = outcome
        .diagnostics
        .iter()
        .map(|d| {
            // Control bytes (a binary file) are shown as `?`, one for one,
            // so offsets still match.
            let text: String = std::fs::read(&d.path)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
                .chars()
                .map(|c| {
                    if c.is_control() && c != '\n' && c != '\t' {
                        '?'
                    } else {
                        c
                    }
                })
                .collect();
            Located {
                path: d.path.clone(),
                range: d.offset..d.offset + 1,
                text,
                message: d.message.clone(),
                label: "the survey stopped reading this file here".into(),
                notes: vec!["the file is listed under `failed_files` of its module".into()],
                warning: true,
            }
        })
        .collect();
    crate::diag::emit(&warnings);
    if let Some(p) = &args.sarif {
        let tree = std::fs::canonicalize(&args.tree).unwrap_or_else(|_| args.tree.clone());
        let log = crate::sarif::survey_log(&outcome.survey, &tree, &warnings);
        let text = serde_json::to_string_pretty(&log)
            .map_err(|e| CliError::Msg(format!("cannot write the SARIF log: {e}")))?;
        std::fs::write(p, format!("{text}\n")).map_err(|source| CliError::Io {
            path: p.clone(),
            source,
        })?;
    }

    let json = serde_json::to_string_pretty(&outcome.survey)
        .map_err(|e| CliError::Msg(format!("cannot write the JSON report: {e}")))?;
    let to_stdout = args.json.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if let Some(p) = args.json.as_ref().filter(|_| !to_stdout) {
        std::fs::write(p, format!("{json}\n")).map_err(|source| CliError::Io {
            path: p.clone(),
            source,
        })?;
    }
    let text = if to_stdout {
        format!("{json}\n")
    } else {
        fgft_survey::report::render_table(&outcome.survey)
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    // A closed pipe (`| head`) is not an error of ours.
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    Ok(())
}

//! `fgft-cc survey TREE [--json FILE]`: which drivers under a kernel tree are
//! ready for `fgft-cc split`, and what annotations each needs.
//!
//! The table goes to stdout, the JSON report to FILE (`-` for stdout, then
//! no table).  Files that could not be surveyed (parse budget exhausted,
//! binary, unreadable, Rust syntax errors) are warnings with their location;
//! they are listed in the report and do not change the exit code.

use crate::diag::{self, CliError, Located};
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
    /// macros and static inlines from exported functions, as split --kdir);
    /// by default, as for split, the running kernel's headers or the newest
    /// installed ones.
    #[arg(long, value_name = "KDIR")]
    pub kdir: Option<PathBuf>,
    /// --profile verdicts without any kernel headers (as split --no-kdir).
    #[arg(long, conflicts_with = "kdir")]
    pub no_kdir: bool,
}

/// `-j`: at least one, at most the CPU count (a note says when it was
/// capped).
fn jobs(j: Option<usize>) -> Result<Option<usize>, CliError> {
    let Some(j) = j else { return Ok(None) };
    if j == 0 {
        return Err(diag::arg_error(
            "-j",
            "0",
            "-j 0: the survey needs at least one worker thread".into(),
            "leave -j out for one per CPU",
        ));
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if j > cpus {
        eprintln!("note: -j {j} capped at {cpus}, the number of CPUs");
        return Ok(Some(cpus));
    }
    Ok(Some(j))
}

/// Whether `b` is a survey JSON report fgft wrote (its `schema`).
fn is_survey_json(b: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(b).is_ok_and(|v| {
        v.get("schema")
            .and_then(|s| s.as_str())
            .is_some_and(|s| s.starts_with("fgft-survey/"))
            && v.get("modules").is_some_and(|m| m.is_array())
    })
}

/// Whether `b` is a SARIF log fgft-cc wrote (its tool driver's name).
fn is_fgft_sarif(b: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(b).is_ok_and(|v| {
        v.get("runs")
            .and_then(|r| r.as_array())
            .is_some_and(|runs| {
                !runs.is_empty()
                    && runs
                        .iter()
                        .all(|r| r.pointer("/tool/driver/name") == Some(&"fgft-cc".into()))
            })
    })
}

/// Writes a report file without overwriting an input or a file that is
/// not such a report ([`fgft_base::outdir::write_file`]).
fn write_report(
    flag: &str,
    path: &std::path::Path,
    bytes: &[u8],
    inputs: &[PathBuf],
    ours: &dyn Fn(&[u8]) -> bool,
) -> Result<(), CliError> {
    fgft_base::outdir::write_file(path, bytes, inputs, ours)
        .map_err(|e| diag::out_error(flag, path, e))
}

/// Checks the report paths before anything is read.
fn check_reports(args: &Args) -> Result<(), CliError> {
    if let (Some(j), Some(s)) = (&args.json, &args.sarif) {
        let same = j.as_os_str() != "-"
            && fgft_base::outdir::canon_lenient(j) == fgft_base::outdir::canon_lenient(s);
        if same {
            return Err(diag::arg_error(
                "--sarif",
                &s.display().to_string(),
                "--json and --sarif name the same file: one would overwrite the other".into(),
                "give them different paths",
            ));
        }
    }
    Ok(())
}

pub fn run(args: Args) -> Result<(), CliError> {
    if !args.tree.is_dir() {
        let shown = args.tree.display().to_string();
        return Err(diag::arg_error(
            "",
            &shown,
            format!("{shown} is not a directory"),
            "survey takes a source tree: a directory such as drivers/net",
        ));
    }
    let jobs = jobs(args.jobs)?;
    check_reports(&args)?;
    let mut inputs: Vec<PathBuf> = vec![args.tree.clone()];
    inputs.extend(args.api_table.iter().cloned());
    inputs.extend(args.tables.iter().cloned());
    let kdir = match &args.profile {
        Some(_) => crate::split::resolve_kdir(args.kdir.as_deref(), args.no_kdir)?,
        None => None,
    };
    inputs.extend(kdir.iter().cloned());
    let opts = fgft_survey::SurveyOptions {
        budget: args.budget_ms.map(Duration::from_millis),
        tables: args.tables.clone(),
        jobs,
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
            kdir,
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
            // so offsets still match.  Only a regular file is read (a FIFO
            // would block).
            let regular = std::fs::metadata(&d.path).is_ok_and(|m| m.is_file());
            let text: String = regular
                .then(|| std::fs::read(&d.path).ok())
                .flatten()
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
                label: if d.listed {
                    "the survey stopped reading this file here".into()
                } else {
                    "skipped".into()
                },
                notes: if d.listed {
                    vec!["the file is listed under `failed_files` of its module".into()]
                } else {
                    vec![]
                },
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
        let bytes = format!("{text}\n");
        write_report("--sarif", p, bytes.as_bytes(), &inputs, &is_fgft_sarif)?;
    }

    let json = serde_json::to_string_pretty(&outcome.survey)
        .map_err(|e| CliError::Msg(format!("cannot write the JSON report: {e}")))?;
    let to_stdout = args.json.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if let Some(p) = args.json.as_ref().filter(|_| !to_stdout) {
        let bytes = format!("{json}\n");
        write_report("--json", p, bytes.as_bytes(), &inputs, &is_survey_json)?;
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

//! `fgft-cc tables`: commands on the tables themselves.  `tables audit`
//! checks every wrapped entry of compensations.toml against its definition
//! in a kernel source tree (crate `fgft-audit`).

use crate::diag::{arg_error, CliError};
use clap::{Args as ClapArgs, Subcommand};
use std::path::PathBuf;

#[derive(ClapArgs)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check what each wrapped kernel function writes, as its definition in
    /// a kernel source tree shows, against what its entry declares.
    Audit(AuditArgs),
}

#[derive(ClapArgs)]
struct AuditArgs {
    /// The kernel source tree (an unpacked linux-source).
    #[arg(long, value_name = "TREE")]
    tree: PathBuf,
    /// Further table directories, as for `split` (an entry of the same name
    /// replaces the built-in one).
    #[arg(long = "tables", value_name = "DIR")]
    tables: Vec<PathBuf>,
    /// How many calls deep a parameter handed on is followed.
    #[arg(long, default_value_t = fgft_audit::DEFAULT_DEPTH)]
    depth: usize,
    /// Audit only this entry (repeatable); an entry not in the table is an
    /// error.
    #[arg(long, value_name = "NAME")]
    entry: Vec<String>,
}

pub fn run(args: Args) -> Result<(), CliError> {
    match args.command {
        Command::Audit(a) => audit(a),
    }
}

fn audit(a: AuditArgs) -> Result<(), CliError> {
    if a.depth > 16 {
        return Err(arg_error(
            "--depth",
            &a.depth.to_string(),
            "the call depth is too large".into(),
            "give at most 16 (the default is 3)",
        ));
    }
    if !a.tree.is_dir() {
        return Err(arg_error(
            "--tree",
            &a.tree.display().to_string(),
            "not a directory".into(),
            "give an unpacked kernel source tree (linux-source)",
        ));
    }
    let tables = fgft_split::Tables::load(&a.tables)?;
    if let Some(n) = a.entry.iter().find(|n| !tables.api.apis.contains_key(*n)) {
        return Err(arg_error(
            "--entry",
            n,
            "no such entry in the compensation table".into(),
            "give the name of an [api.NAME] entry",
        ));
    }
    let opts = fgft_audit::Options {
        tree: a.tree.clone(),
        depth: a.depth,
        dirs: Vec::new(),
        entries: a.entry.clone(),
    };
    let report = fgft_audit::run(&opts, &tables.api).map_err(|e| match e {
        fgft_audit::Error::NotATree { .. } => arg_error(
            "--tree",
            &a.tree.display().to_string(),
            e.to_string(),
            "give an unpacked kernel source tree (linux-source)",
        ),
        other => CliError::Msg(other.to_string()),
    })?;
    print!("{}", fgft_audit::render(&report));
    if report.findings.is_empty() {
        Ok(())
    } else {
        Err(CliError::Msg(format!(
            "tables audit: {} finding(s) in the table against {}",
            report.findings.len(),
            a.tree.display()
        )))
    }
}

//! `fgft-cc roots SOURCES...|DIR`: every function stored in a kernel slot, as
//! `function struct.field file:line`, one per line, sorted.
//!
//! Directories are walked for `.c` and `.rs` files (sorted, deterministic);
//! files are parsed in parallel (rayon), each one dropped once its roots are
//! found, so memory stays bounded on a whole tree.  Rust files are read with
//! syn (fgft-survey's reader): the methods of `#[vtable] impl` blocks
//! (`PhyA::read_status Driver.read_status`) and the types the `module_*!`
//! macros name, in the same format.  Paths are printed as the user gave
//! them (`fgft-cc roots drivers/net` prints `drivers/net/amt.c:369`), so
//! they open from where the user stands, as grep's and gcc's do.

use crate::diag::{CliError, Located};
use fgft_facts::headers::HeaderCache;
use fgft_facts::slots::{self, Root, SlotTable};
use fgft_parse::{Options, ParseError};
use rayon::prelude::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(clap::Args)]
pub struct Args {
    /// Driver source files or directories.
    #[arg(required = true)]
    pub sources: Vec<PathBuf>,
    /// Extra table directory (macro-hints.toml, slots.toml); repeatable.
    /// FGFT_TABLES=dir[:dir] is read too.
    #[arg(long = "tables", value_name = "DIR")]
    pub tables: Vec<PathBuf>,
}

/// One input file, its path as the user gave it (a directory's files
/// joined to the directory as given).
struct Input {
    path: PathBuf,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let dirs = fgft_parse::tables::TableDirs::resolve(&args.tables);
    let opts = Options {
        hints: Some(Arc::new(
            fgft_parse::HintTable::load(&dirs)
                .map_err(|e| CliError::Located(vec![located(e, false)]))?,
        )),
        budget: fgft_parse::Budget::default(),
    };
    let table = SlotTable::load(&dirs).map_err(|e| CliError::Located(vec![located(e, false)]))?;
    let mut diags = Vec::new();
    let inputs = collect_inputs(&args.sources, &mut diags);
    let (roots, mut errs) = find_roots(&inputs, &opts, &table);
    diags.append(&mut errs);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for line in roots {
        // A closed pipe (`| head`) is not an error of ours.
        if writeln!(out, "{line}").is_err() {
            break;
        }
    }
    let _ = out.flush();
    if diags.iter().any(|d| !d.warning) {
        return Err(CliError::Located(diags));
    }
    crate::diag::emit(&diags);
    Ok(())
}

/// Roots of all inputs, formatted and sorted; and per-file diagnostics.
fn find_roots(inputs: &[Input], opts: &Options, table: &SlotTable) -> (Vec<String>, Vec<Located>) {
    let cache = HeaderCache::new(opts);
    type Keyed = (PathBuf, usize, String);
    let results: Vec<Result<Vec<Keyed>, Box<Located>>> = inputs
        .par_iter()
        .map(|inp| {
            if inp.path.extension().is_some_and(|e| e == "rs") {
                return rust_roots(&inp.path);
            }
            let pf = fgft_parse::parse_file_with(&inp.path, opts)
                .map_err(|e| Box::new(located(e, false)))?;
            // One walk gives the file's facts and its slot candidates.
            let (own, candidates) = slots::scan(&pf, table);
            let facts = cache.layer_headers(own, &pf);
            let mut rs: Vec<Root> = slots::roots_of(&pf, &facts, table, &candidates);
            drop(candidates);
            // A unit that includes another .c file (ens1371.c includes
            // ens1370.c) has that file's roots too.
            let included: Vec<PathBuf> =
                fgft_base::includes::local_includes(&pf.path, &pf.text, &[])
                    .into_iter()
                    .filter(|p| p.extension().is_some_and(|e| e == "c"))
                    .collect();
            drop(pf);
            for inc in included {
                let ipf = fgft_parse::parse_file_with(&inc, opts)
                    .map_err(|e| Box::new(located(e, false)))?;
                let (own, candidates) = slots::scan(&ipf, table);
                let ifacts = cache.layer_headers(own, &ipf);
                rs.extend(slots::roots_of(&ipf, &ifacts, table, &candidates));
            }
            Ok(rs
                .into_iter()
                .map(|r| (r.file.clone(), r.line, r.display_line(None)))
                .collect())
        })
        .collect();
    let mut lines = Vec::new();
    let mut diags = Vec::new();
    for r in results {
        match r {
            Ok(v) => lines.extend(v),
            Err(d) => diags.push(*d),
        }
    }
    lines.sort();
    lines.dedup();
    (lines.into_iter().map(|(_, _, l)| l).collect(), diags)
}

/// The entry points of a Rust file, or its syntax error at its line.
fn rust_roots(path: &Path) -> Result<Vec<(PathBuf, usize, String)>, Box<Located>> {
    let s = fgft_survey::rust::summarize_file(path, path);
    if let Some(f) = s.failure {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let at = f.offset.min(text.len());
        return Err(Box::new(Located {
            path: path.to_path_buf(),
            range: at..(at + 1).min(text.len()),
            text,
            message: f.message,
            label: "here".into(),
            notes: Vec::new(),
            warning: false,
        }));
    }
    Ok(s.roots
        .into_iter()
        .map(|r| {
            let line = format!(
                "{} {}.{} {}:{}",
                r.function,
                r.struct_name,
                r.field,
                path.display(),
                r.line
            );
            (path.to_path_buf(), r.line, line)
        })
        .collect())
}

fn collect_inputs(sources: &[PathBuf], diags: &mut Vec<Located>) -> Vec<Input> {
    let mut inputs = Vec::new();
    for s in sources {
        let meta = match std::fs::metadata(s) {
            Ok(m) => m,
            Err(e) => {
                diags.push(plain(s, format!("cannot read {}: {e}", s.display())));
                continue;
            }
        };
        if meta.is_dir() {
            // Each directory once (link loops listed); special files listed.
            let w = fgft_base::walk::files(std::slice::from_ref(s), &|p| {
                p.extension().is_some_and(|x| x == "c" || x == "rs")
            });
            for sk in &w.skipped {
                let mut d = plain(
                    &sk.path,
                    format!("skipped {}: {}", sk.path.display(), sk.why),
                );
                d.warning = true;
                diags.push(d);
            }
            if w.files.is_empty() {
                diags.push(plain(
                    s,
                    format!("no .c or .rs files under {}", s.display()),
                ));
            }
            inputs.extend(w.files.into_iter().map(|path| Input { path }));
        } else if let Some(kind) = fgft_base::walk::special_kind(&meta.file_type()) {
            diags.push(plain(
                s,
                format!("{}: {kind}, not a regular file: not read", s.display()),
            ));
        } else if s
            .extension()
            .is_some_and(|e| e == "c" || e == "h" || e == "rs")
        {
            inputs.push(Input { path: s.clone() });
        } else {
            diags.push(plain(
                s,
                format!(
                    "{} is not a C or Rust source file (expected .c, .h or .rs, or a directory)",
                    s.display()
                ),
            ));
        }
    }
    inputs
}

fn plain(path: &Path, message: String) -> Located {
    Located {
        path: path.to_path_buf(),
        text: String::new(),
        range: 0..0,
        message,
        label: String::new(),
        notes: Vec::new(),
        warning: false,
    }
}

/// A front-end error as a located diagnostic.
pub fn located(e: ParseError, warning: bool) -> Located {
    let message = e.to_string();
    let mut d = match e {
        ParseError::Io { path, .. }
        | ParseError::TreeSitter { path }
        | ParseError::Kbuild { path, .. } => plain(&path, message),
        ParseError::NotC { path, offset, .. } => {
            let mut d = plain(&path, message);
            d.notes.push(format!("at byte {offset}"));
            d
        }
        ParseError::Budget {
            path, text, offset, ..
        } => Located {
            path,
            range: offset..offset + 1,
            text,
            message,
            label: "the parse stopped here".into(),
            notes: vec![format!(
                "raise the budget with {}=MILLISECONDS",
                fgft_parse::BUDGET_ENV
            )],
            warning: false,
        },
        ParseError::Table {
            path, text, range, ..
        } => Located {
            path,
            range: range.unwrap_or(0..0),
            text,
            message,
            label: String::new(),
            notes: Vec::new(),
            warning: false,
        },
    };
    d.warning = warning;
    d
}

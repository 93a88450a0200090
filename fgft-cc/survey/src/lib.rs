//! fgft-survey: `fgft-cc survey TREE`.
//!
//! Every `.c` and `.rs` file under a kernel tree, grouped into driver modules
//! by the `obj-` lines of each `Makefile`/`Kbuild` ([`fgft_base::makefile`]); per module,
//! entry points by slot kind, PM callbacks (can a device checkpoint be
//! derived?), kernel APIs reached from the entry points that have no
//! compensation-table entry, the marshaling hints needed, parse health and a
//! readiness verdict ([`report`]).
//!
//! Files are summarized in parallel (rayon) and each tree is dropped as soon
//! as its summary ([`model::FileSummary`]) is taken, so memory stays bounded
//! by the summaries plus one tree per worker.  Each parse has a budget; a
//! file whose budget runs out is reported (a diagnostic and a failed file),
//! never a hang.

pub mod apis;
pub mod csum;
pub mod model;
pub mod profile;
pub mod report;
pub mod rust;

use crate::model::{FailKind, Failure, FileSummary, Lang};
use crate::report::{Survey, Unit, UnitKind};
use fgft_base::makefile;
use fgft_facts::slots::SlotTable;
use fgft_parse::{Budget, Options, ParseError};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Errors of the survey (per-file problems are not errors: they are
/// reported in the survey).
#[derive(Debug, thiserror::Error)]
pub enum SurveyError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}: not a directory")]
    NotDir(PathBuf),
    #[error("cannot start the worker threads: {0}")]
    Pool(String),
}

/// How to survey.
#[derive(Debug, Clone, Default)]
pub struct SurveyOptions {
    /// Time budget per file (default: the front end's, `FGFT_PARSE_BUDGET_MS`
    /// or 10 s).
    pub budget: Option<Duration>,
    /// Extra table directories (`--tables`).
    pub tables: Vec<PathBuf>,
    /// Worker threads (default: one per core; the CLI caps it there).
    pub jobs: Option<usize>,
    /// Show a progress bar when stderr is a terminal.
    pub progress: bool,
    /// A compensation table to use instead of the built-in one.
    pub api_table: Option<PathBuf>,
}

/// A per-file problem worth a diagnostic (budget exhausted, unreadable,
/// not source, syntax error).
#[derive(Debug, Clone)]
pub struct FileDiag {
    /// The file on disk.
    pub path: PathBuf,
    pub offset: usize,
    pub line: usize,
    pub message: String,
    /// The file is listed under `failed_files` of its module (a directory
    /// walked once, through a link, is a warning only).
    pub listed: bool,
}

/// The survey and its diagnostics.
#[derive(Debug)]
pub struct Outcome {
    pub survey: Survey,
    pub diagnostics: Vec<FileDiag>,
}

/// Source files and makefiles under a tree (paths relative to it, sorted).
#[derive(Debug, Default)]
pub struct Discovered {
    pub sources: Vec<PathBuf>,
    /// Directory (relative) -> makefile path (relative); `Kbuild` wins over
    /// `Makefile`.
    pub makefiles: BTreeMap<PathBuf, PathBuf>,
    /// Entries of `sources` that were not read (an unreadable directory, a
    /// FIFO named `x.c`): each is a failed file of the report.
    pub failed: BTreeMap<PathBuf, Failure>,
    /// What the walk skipped without a failure (a directory reached again
    /// through a symbolic link): warnings only.
    pub skipped: Vec<fgft_base::walk::Skipped>,
}

fn is_source(p: &Path) -> bool {
    p.extension().is_some_and(|x| x == "c" || x == "rs")
}

fn is_makefile(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n == "Kbuild" || n == "Makefile")
}

/// Walks `tree` ([`fgft_base::walk`]): each directory once (a symbolic
/// link back into the tree is listed, not walked again); an unreadable
/// directory or entry, and a special file (FIFO, socket, device), is
/// skipped and listed as a failed file; the walk goes on.
pub fn discover(tree: &Path) -> Result<Discovered, SurveyError> {
    if !tree.is_dir() {
        return Err(SurveyError::NotDir(tree.to_path_buf()));
    }
    let w = fgft_base::walk::files(&[tree.to_path_buf()], &|p| is_source(p) || is_makefile(p));
    let rel = |p: &Path| -> PathBuf {
        match p.strip_prefix(tree) {
            Ok(r) if r.as_os_str().is_empty() => PathBuf::from("."),
            Ok(r) => r.to_path_buf(),
            Err(_) => p.to_path_buf(),
        }
    };
    let mut d = Discovered::default();
    for f in &w.files {
        let r = rel(f);
        if is_makefile(&r) {
            let dir = r.parent().unwrap_or(Path::new("")).to_path_buf();
            if r.file_name().is_some_and(|n| n == "Kbuild") || !d.makefiles.contains_key(&dir) {
                d.makefiles.insert(dir, r);
            }
        } else {
            d.sources.push(r);
        }
    }
    for sk in w.skipped {
        let again = sk.why.contains("already walked") || sk.why.contains("fgft output");
        if again {
            d.skipped.push(sk);
            continue;
        }
        let r = rel(&sk.path);
        let special = sk.why.contains("not a regular file");
        d.failed.insert(
            r.clone(),
            Failure {
                kind: if special {
                    FailKind::NotRegular
                } else {
                    FailKind::Unreadable
                },
                offset: 0,
                line: 1,
                message: sk.why,
            },
        );
        if !d.sources.contains(&r) {
            d.sources.push(r);
        }
    }
    d.sources.sort();
    Ok(d)
}

fn slash(p: &Path) -> String {
    p.to_string_lossy().replace('\\', "/")
}

/// Groups source files into units by the makefiles.
pub fn group(tree: &Path, d: &Discovered) -> Vec<Unit> {
    let index: BTreeMap<String, usize> = d
        .sources
        .iter()
        .enumerate()
        .map(|(i, p)| (slash(p), i))
        .collect();
    let mut units: BTreeMap<String, Unit> = BTreeMap::new();
    let mut assigned = BTreeSet::new();
    for (dir, mk) in &d.makefiles {
        let Ok(text) = std::fs::read(tree.join(mk)) else {
            continue;
        };
        let text = String::from_utf8_lossy(&text);
        let dir_s = slash(dir);
        for m in makefile::parse(&text).modules() {
            let name = makefile::normalize(&format!("{dir_s}/{}", m.name));
            let mut files = BTreeSet::new();
            for o in &m.objects {
                let stem = makefile::normalize(&format!("{dir_s}/{}", o.trim_end_matches(".o")));
                for ext in ["c", "rs"] {
                    if let Some(&i) = index.get(&format!("{stem}.{ext}")) {
                        files.insert(i);
                    }
                }
            }
            if files.is_empty() {
                continue; // assembler or generated sources only
            }
            assigned.extend(files.iter().copied());
            let u = units.entry(name.clone()).or_insert_with(|| Unit {
                name,
                kind: if m.builtin {
                    UnitKind::Builtin
                } else {
                    UnitKind::Module
                },
                configs: Vec::new(),
                makefile: Some(format!("{}:{}", slash(mk), m.line)),
                files: Vec::new(),
            });
            if !m.builtin {
                u.kind = UnitKind::Module;
            }
            for c in m.configs {
                if !u.configs.contains(&c) {
                    u.configs.push(c);
                }
            }
            u.configs.sort();
            let mut all: BTreeSet<usize> = u.files.iter().copied().collect();
            all.extend(files);
            u.files = all.into_iter().collect();
        }
    }
    for (i, p) in d.sources.iter().enumerate() {
        if !assigned.contains(&i) {
            let name = slash(p);
            units.insert(
                name.clone(),
                Unit {
                    name,
                    kind: UnitKind::Unassigned,
                    configs: Vec::new(),
                    makefile: None,
                    files: vec![i],
                },
            );
        }
    }
    units.into_values().collect()
}

/// Shared per-survey state.
pub struct Context {
    pub c: csum::CContext,
    pub apis: apis::KnownApis,
}

impl Context {
    pub fn new(opts: &SurveyOptions) -> Result<Context, SurveyError> {
        let mut budget = Budget::default();
        if let Some(t) = opts.budget {
            budget.time = t;
        }
        let dirs = fgft_parse::tables::TableDirs::resolve(&opts.tables);
        let hints = fgft_parse::hints::HintTable::load(&dirs)?;
        let popts = Options {
            hints: Some(std::sync::Arc::new(hints)),
            budget,
        };
        Ok(Context {
            c: csum::CContext::new(popts, SlotTable::load(&dirs)?),
            apis: match &opts.api_table {
                Some(f) => apis::KnownApis::load_replacing(f, &dirs)?,
                None => apis::KnownApis::load(&dirs)?,
            },
        })
    }

    /// Summarizes one file (`rel` names it in the report).
    pub fn summarize(&self, path: &Path, rel: &Path) -> FileSummary {
        if path.extension().is_some_and(|x| x == "rs") {
            rust::summarize_file(path, rel)
        } else {
            csum::summarize_file(&self.c, path, rel)
        }
    }
}

/// Surveys `tree`.
pub fn survey(tree: &Path, opts: &SurveyOptions) -> Result<Outcome, SurveyError> {
    let ctx = Context::new(opts)?;
    let d = discover(tree)?;
    let units = group(tree, &d);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.unwrap_or(0))
        .build()
        .map_err(|e| SurveyError::Pool(e.to_string()))?;
    let bar = if opts.progress && std::io::stderr().is_terminal() {
        // A file in two modules is surveyed (and counted) twice.
        let work: usize = units.iter().map(|u| u.files.len()).sum();
        let b = indicatif::ProgressBar::new(work as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} surveying [{bar:40}] {pos}/{len} files {elapsed_precise} {wide_msg}",
        ) {
            b.set_style(style.progress_chars("=> "));
        }
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let index: BTreeMap<String, usize> = d
        .sources
        .iter()
        .enumerate()
        .map(|(i, p)| (makefile::normalize(&slash(p)), i))
        .collect();
    // Units are processed in parallel, and the files of each unit too; a
    // unit's summaries live until its report is made, then only the report
    // and a few numbers per file are kept.
    type UnitOut = (
        report::ModuleReport,
        Vec<(usize, report::FileStat)>,
        Vec<FileDiag>,
    );
    let outs: Vec<UnitOut> = pool.install(|| {
        units
            .par_iter()
            .map(|u| {
                let summarize = |i: usize| {
                    let rel = &d.sources[i];
                    let s = match d.failed.get(rel) {
                        Some(f) => {
                            let lang = lang_of(rel).unwrap_or(Lang::C);
                            let mut s = FileSummary::empty(rel.clone(), lang);
                            s.failure = Some(f.clone());
                            s
                        }
                        None => ctx.summarize(&tree.join(rel), rel),
                    };
                    bar.inc(1);
                    (i, s)
                };
                let mut sums: Vec<(usize, FileSummary)> =
                    u.files.par_iter().map(|&i| summarize(i)).collect();
                // A `.c` file included by another belongs to this module too.
                let mut have: BTreeSet<usize> = u.files.iter().copied().collect();
                let mut k = 0;
                while k < sums.len() {
                    let inc: Vec<usize> = sums[k]
                        .1
                        .included
                        .iter()
                        .filter_map(|p| index.get(&makefile::normalize(&slash(p))).copied())
                        .filter(|i| have.insert(*i))
                        .collect();
                    for i in inc {
                        bar.inc_length(1);
                        sums.push(summarize(i));
                    }
                    k += 1;
                }
                sums.sort_by_key(|(i, _)| *i);
                let refs: Vec<&FileSummary> = sums.iter().map(|(_, s)| s).collect();
                let rep = report::module_report(tree, u, &refs, &ctx.apis);
                let stats = sums
                    .iter()
                    .map(|(i, s)| (*i, report::FileStat::of(s)))
                    .collect();
                let diags = sums
                    .iter()
                    .filter_map(|(_, s)| {
                        s.failure.as_ref().map(|f| FileDiag {
                            path: tree.join(&s.path),
                            offset: f.offset,
                            line: f.line,
                            message: f.message.clone(),
                            listed: true,
                        })
                    })
                    .collect();
                (rep, stats, diags)
            })
            .collect()
    });
    bar.finish_and_clear();
    let mut modules = Vec::with_capacity(outs.len());
    let mut stats: BTreeMap<usize, report::FileStat> = BTreeMap::new();
    let mut diagnostics: Vec<FileDiag> = Vec::new();
    let mut seen_diag = BTreeSet::new();
    for (m, st, dg) in outs {
        modules.push(m);
        stats.extend(st);
        for x in dg {
            if seen_diag.insert(x.path.clone()) {
                diagnostics.push(x);
            }
        }
    }
    for sk in &d.skipped {
        diagnostics.push(FileDiag {
            path: sk.path.clone(),
            offset: 0,
            line: 1,
            message: sk.why.clone(),
            listed: false,
        });
    }
    diagnostics.sort_by(|a, b| a.path.cmp(&b.path));
    let stats: Vec<report::FileStat> = stats.into_values().collect();
    let totals = report::totals(&stats, &modules);
    Ok(Outcome {
        survey: Survey {
            schema: report::SCHEMA,
            tree: slash(tree),
            totals,
            modules,
        },
        diagnostics,
    })
}

/// Languages present, for callers that only want one kind.
pub fn lang_of(path: &Path) -> Option<Lang> {
    match path.extension()?.to_str()? {
        "c" => Some(Lang::C),
        "rs" => Some(Lang::Rust),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouping_over_a_small_tree() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path();
        let w = |p: &str, s: &str| {
            let p = t.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, s).unwrap();
        };
        w(
            "Makefile",
            "obj-$(CONFIG_A) += a.o sub/\nobj-y += core.o\ncore-y := c1.o c2.o\n",
        );
        w("a.c", "");
        w("c1.c", "");
        w("c2.c", "");
        w("lost.c", "");
        w("sub/Makefile", "obj-m += s.o\n");
        w("sub/Kbuild", "obj-m += k.o\nk-objs := k1.o ../c1.o\n");
        w("sub/k1.c", "");
        w("sub/s.c", "");
        w("sub/r.rs", "");
        let d = discover(t).unwrap();
        assert_eq!(d.makefiles[Path::new("sub")], Path::new("sub/Kbuild"));
        let units = group(t, &d);
        let got: Vec<(String, UnitKind, Vec<String>)> = units
            .iter()
            .map(|u| {
                (
                    u.name.clone(),
                    u.kind,
                    u.files.iter().map(|&i| slash(&d.sources[i])).collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a".into(), UnitKind::Module, vec!["a.c".into()]),
                (
                    "core".into(),
                    UnitKind::Builtin,
                    vec!["c1.c".into(), "c2.c".into()]
                ),
                ("lost.c".into(), UnitKind::Unassigned, vec!["lost.c".into()]),
                (
                    "sub/k".into(),
                    UnitKind::Module,
                    vec!["c1.c".into(), "sub/k1.c".into()]
                ),
                (
                    "sub/r.rs".into(),
                    UnitKind::Unassigned,
                    vec!["sub/r.rs".into()]
                ),
                (
                    "sub/s.c".into(),
                    UnitKind::Unassigned,
                    vec!["sub/s.c".into()]
                ),
            ]
        );
        assert_eq!(units[0].configs, ["CONFIG_A"]);
        assert_eq!(units[0].makefile.as_deref(), Some("Makefile:1"));
    }
}

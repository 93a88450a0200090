//! The readiness benchmark: how far fgft gets on drivers nobody annotated.
//!
//! Every module of a tree's `drivers/net` that the kernel's configuration
//! builds as a module (`=m`) and that has ethtool entry points is split
//! with an isolation profile (`management` by default) and no sidecar, and
//! the output is built against the kernel's headers.  Each module ends in
//! one outcome: built (with no compiler warning), built with warnings,
//! refused (split's located errors), accepted but failing to build, or
//! crashed (a panic in split).  The report counts them, lists the kernel
//! APIs and hints that refusals ask for most, and compares each outcome
//! with the survey's verdict for the module.
//!
//! Invariants: the module list and the report depend only on the tree, the
//! configuration, the tables and the sample size (no timing, no machine
//! path in the report); a module that fails is recorded and the others go
//! on.

use fgft_base::kbuild::Make;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Msg(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Split(#[from] fgft_split::Error),
    #[error(transparent)]
    Base(#[from] fgft_base::Error),
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The kernel source tree (linux-source).
    pub tree: PathBuf,
    /// The kernel build directory (headers package) whose `.config` says
    /// which modules are built.
    pub kdir: PathBuf,
    /// The isolation profile of `profiles.toml`.
    pub profile: String,
    /// Only this many modules, evenly spaced over the sorted list.
    pub sample: Option<usize>,
    /// Modules split and built at once.
    pub jobs: usize,
    /// The runtime module's Module.symvers for this kernel.
    pub runtime_symvers: PathBuf,
    /// Extra table directories.
    pub tables: Vec<PathBuf>,
}

/// One module to try.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    /// As the survey names it (`ethernet/intel/e1000e/e1000e`).
    pub name: String,
    /// The module name (`e1000e`).
    pub module: String,
    /// Its sources, relative to `drivers/net`.
    pub files: Vec<String>,
    /// Whether the survey calls it ready for the profile (`fgft-cc survey
    /// --profile`).
    pub survey_ready: bool,
    pub survey_verdict: String,
}

/// How one module ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Outcome {
    Built,
    BuiltWithWarnings,
    Refused,
    AcceptedButFailing,
    Crashed,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Built => "built",
            Outcome::BuiltWithWarnings => "built with warnings",
            Outcome::Refused => "refused",
            Outcome::AcceptedButFailing => "accepted but failing to build",
            Outcome::Crashed => "crashed",
        }
    }
}

/// What a refusal asks for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Need {
    /// A compensation-table entry for this kernel function.
    Api(String),
    /// A hint or contract on this struct member (`struct t.m`).
    Member(String),
    /// A hint or contract on this parameter (`f(p)`).
    Param(String),
    /// Anything else, by its message.
    Other(String),
}

/// One module's result.
#[derive(Debug, Clone, Serialize)]
pub struct Result1 {
    pub candidate: Candidate,
    pub outcome: Outcome,
    pub errors: usize,
    /// Errors whose diagnostic carries a note saying how to fix it.
    pub errors_with_fix: usize,
    pub warnings: usize,
    pub needs: Vec<Need>,
    /// The first build messages (warnings or errors), if any.
    pub build: Vec<String>,
}

/// The modules of `tree/drivers/net` built as modules by `kconfig` (the
/// `.config` text) that have ethtool entry points, sorted by name, sampled
/// when asked.
pub fn candidates(
    tree: &Path,
    kconfig: &str,
    sample: Option<usize>,
) -> Result<Vec<Candidate>, Error> {
    let m: BTreeSet<&str> = kconfig
        .lines()
        .filter_map(|l| l.strip_suffix("=m"))
        .collect();
    let opts = fgft_survey::SurveyOptions {
        budget: None,
        tables: Vec::new(),
        jobs: None,
        progress: false,
        api_table: None,
    };
    let net = tree.join("drivers/net");
    let outcome = fgft_survey::survey(&net, &opts).map_err(|e| Error::Msg(e.to_string()))?;
    let mut out: Vec<Candidate> = outcome
        .survey
        .modules
        .iter()
        .filter(|r| matches!(r.kind, fgft_survey::report::UnitKind::Module))
        .filter(|r| !r.rust && r.entry_points.contains_key("ethtool"))
        .filter(|r| r.configs.iter().any(|c| m.contains(c.as_str())))
        .map(|r| Candidate {
            name: r.name.clone(),
            module: r.name.rsplit('/').next().unwrap_or(&r.name).to_string(),
            files: r.files.clone(),
            survey_ready: false,
            survey_verdict: format!("{:?}", r.verdict),
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(n) = sample {
        if n > 0 && n < out.len() {
            let step = out.len() as f64 / n as f64;
            out = (0..n)
                .map(|i| out[(i as f64 * step) as usize].clone())
                .collect();
        }
    }
    Ok(out)
}

/// What a located split error asks for: the table entry its fix names,
/// else what its message names.
fn need_of(message: &str, notes: &[String]) -> Need {
    let tick = |s: &str, n: usize| s.split('`').nth(n).unwrap_or("").to_string();
    if let Some(api) = notes.iter().find_map(|n| {
        let i = n.find("add [api.")?;
        let rest = &n[i + "add [api.".len()..];
        rest.find(']').map(|j| rest[..j].to_string())
    }) {
        return Need::Api(api);
    }
    if message.starts_with("kernel function `") {
        Need::Api(tick(message, 1))
    } else if message.starts_with("member `") && message.contains("used as an array") {
        Need::Member(format!("{}.{}", tick(message, 3), tick(message, 1)))
    } else if message.starts_with("parameter `") {
        Need::Param(format!("{}({})", tick(message, 3), tick(message, 1)))
    } else {
        let mut m: String = message.chars().take(140).collect();
        if m.len() < message.len() {
            m.push('…');
        }
        Need::Other(m)
    }
}

/// Splits and builds one module in `work`.
pub fn run_one(c: &Candidate, cfg: &Config, tables: &fgft_split::Tables, work: &Path) -> Result1 {
    let mut r = Result1 {
        candidate: c.clone(),
        outcome: Outcome::Refused,
        errors: 0,
        errors_with_fix: 0,
        warnings: 0,
        needs: Vec::new(),
        build: Vec::new(),
    };
    let net = cfg.tree.join("drivers/net");
    // The survey's verdict for the profile, from its own pass.
    let po = fgft_survey::profile::ProfileOptions {
        profile: &cfg.profile,
        kdir: Some(cfg.kdir.clone()),
        tables,
    };
    let pv = fgft_survey::profile::verdict(&net, &c.name, &c.files, &po);
    r.candidate.survey_ready = pv.ready;
    r.candidate.survey_verdict = format!(
        "{}; {}: {}",
        c.survey_verdict,
        cfg.profile,
        if pv.ready { "ready" } else { "refused" }
    );
    let opts = fgft_split::Options {
        sources: c.files.iter().map(|f| net.join(f)).collect(),
        profile: Some(cfg.profile.clone()),
        module: Some(c.module.clone()),
        runtime_symvers: Some(cfg.runtime_symvers.clone()),
        kdir: Some(cfg.kdir.clone()),
        ..Default::default()
    };
    let out = work.join(&c.module);
    let split = std::panic::catch_unwind(|| fgft_split::compute_with(&opts, tables));
    let s = match split {
        Err(_) => {
            r.outcome = Outcome::Crashed;
            return r;
        }
        Ok(Err(e)) => {
            if let fgft_split::Error::Located(diags) = &e {
                for d in diags.iter().filter(|d| !d.warning) {
                    r.errors += 1;
                    if !d.notes.is_empty() {
                        r.errors_with_fix += 1;
                    }
                    let n = need_of(&d.message, &d.notes);
                    if !r.needs.contains(&n) {
                        r.needs.push(n);
                    }
                }
                r.warnings = diags.iter().filter(|d| d.warning).count();
            } else {
                r.errors = 1;
                r.needs.push(Need::Other(e.to_string()));
            }
            r.needs.sort();
            return r;
        }
        Ok(Ok(s)) => s,
    };
    r.warnings = s.warnings.len();
    if let Err(e) = fgft_split::write(&out, &s.out) {
        r.outcome = Outcome::AcceptedButFailing;
        r.build.push(e.to_string());
        return r;
    }
    // Built as `fgft-cc split --check` builds it: compiler and modpost
    // messages, and SFI calls of the kernel without a wrapper.
    let co = fgft_split::check::CheckOpts {
        kdir: &cfg.kdir,
        table: &tables.api,
        pure: &s.direct_symbols,
    };
    match fgft_split::check::check(&out, &co) {
        Ok(diags) if diags.is_empty() => r.outcome = Outcome::Built,
        Ok(diags) => {
            let only_warnings = diags.iter().all(|d| d.message.starts_with("gcc warning"));
            r.outcome = if only_warnings {
                Outcome::BuiltWithWarnings
            } else {
                Outcome::AcceptedButFailing
            };
            r.build = diags
                .iter()
                .take(5)
                .map(|d| d.message.replace(&out.display().to_string(), "OUT"))
                .collect();
        }
        Err(e) => {
            r.outcome = Outcome::AcceptedButFailing;
            r.build.push(e.to_string());
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    r
}

/// Every candidate, `cfg.jobs` at a time; results in candidate order.
pub fn run_all(cands: &[Candidate], cfg: &Config) -> Result<Vec<Result1>, Error> {
    let tables = Arc::new(fgft_split::Tables::load(&cfg.tables)?);
    let work = tempfile::tempdir().map_err(|source| Error::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    let queue: Arc<Mutex<Vec<usize>>> = Arc::new(Mutex::new((0..cands.len()).rev().collect()));
    let results: Arc<Mutex<BTreeMap<usize, Result1>>> = Arc::new(Mutex::new(BTreeMap::new()));
    std::thread::scope(|sc| {
        for _ in 0..cfg.jobs.max(1) {
            let (queue, results, tables) = (queue.clone(), results.clone(), tables.clone());
            let work = work.path();
            sc.spawn(move || {
                while let Some(i) = queue.lock().ok().and_then(|mut q| q.pop()) {
                    let r = run_one(&cands[i], cfg, &tables, work);
                    eprintln!("readiness: {} {}", cands[i].name, r.outcome.label());
                    if let Ok(mut m) = results.lock() {
                        m.insert(i, r);
                    }
                }
            });
        }
    });
    let m = std::mem::take(
        &mut *results
            .lock()
            .map_err(|_| Error::Msg("a worker panicked".into()))?,
    );
    Ok(m.into_values().collect())
}

/// The markdown report.
pub fn report(results: &[Result1], title: &str, command: &str) -> String {
    let mut s = String::new();
    let n = results.len();
    let pct = |k: usize| {
        if n == 0 {
            0.0
        } else {
            100.0 * k as f64 / n as f64
        }
    };
    let _ = writeln!(s, "# Readiness: {title}\n");
    let _ = writeln!(
        s,
        "Regenerate with `{command}`. Each module is split with no sidecar and built against the kernel's headers; \"built\" means no compiler or modpost warning.\n"
    );
    let mut counts: BTreeMap<Outcome, usize> = BTreeMap::new();
    for r in results {
        *counts.entry(r.outcome).or_default() += 1;
    }
    let _ = writeln!(s, "| outcome | modules | share |");
    let _ = writeln!(s, "|---|---:|---:|");
    for o in [
        Outcome::Built,
        Outcome::BuiltWithWarnings,
        Outcome::Refused,
        Outcome::AcceptedButFailing,
        Outcome::Crashed,
    ] {
        let k = counts.get(&o).copied().unwrap_or(0);
        let _ = writeln!(s, "| {} | {k} | {:.1}% |", o.label(), pct(k));
    }
    let _ = writeln!(s, "| **all** | {n} | |\n");
    let refused: Vec<&Result1> = results
        .iter()
        .filter(|r| r.outcome == Outcome::Refused)
        .collect();
    let errs: usize = refused.iter().map(|r| r.errors).sum();
    let fixed: usize = refused.iter().map(|r| r.errors_with_fix).sum();
    let _ = writeln!(
        s,
        "Refusals: {} modules, {errs} errors; {fixed} of them name the hint, contract or table entry that fixes them.\n",
        refused.len()
    );
    let agree = results
        .iter()
        .filter(|r| r.candidate.survey_ready == (r.outcome == Outcome::Built))
        .count();
    let _ = writeln!(
        s,
        "The survey's verdict for the profile (`fgft-cc survey --profile`: \"ready\") agrees with the outcome (\"built\") for {agree} of {n} modules ({:.1}%).\n",
        pct(agree)
    );
    // What refusals ask for, by the number of modules asking.
    let mut by: BTreeMap<&Need, usize> = BTreeMap::new();
    for r in &refused {
        for nd in &r.needs {
            *by.entry(nd).or_default() += 1;
        }
    }
    for (title, pick) in [
        ("Kernel APIs without a compensation-table entry", 0),
        (
            "Members needing a hint (no allocation site to infer from)",
            1,
        ),
        ("Parameters needing a hint or a contract", 2),
        ("Other refusals", 3),
    ] {
        let mut v: Vec<(&Need, usize)> = by
            .iter()
            .filter(|(k, _)| {
                matches!(
                    (k, pick),
                    (Need::Api(_), 0)
                        | (Need::Member(_), 1)
                        | (Need::Param(_), 2)
                        | (Need::Other(_), 3)
                )
            })
            .map(|(k, v)| (*k, *v))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let total = v.len();
        let _ = writeln!(s, "## {title} ({total} distinct)\n");
        if v.is_empty() {
            let _ = writeln!(s, "None.\n");
            continue;
        }
        let _ = writeln!(s, "| what | modules |");
        let _ = writeln!(s, "|---|---:|");
        for (k, c) in v.iter().take(25) {
            let name = match k {
                Need::Api(x) | Need::Member(x) | Need::Param(x) | Need::Other(x) => x,
            };
            let _ = writeln!(
                s,
                "| `{}` | {c} |",
                name.replace('|', "\\|").replace('`', "'")
            );
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "## Modules\n");
    let _ = writeln!(
        s,
        "| module | outcome | errors | survey | first need or build message |"
    );
    let _ = writeln!(s, "|---|---|---:|---|---|");
    for r in results {
        let first = match (r.needs.first(), r.build.first()) {
            (Some(Need::Api(x)), _) => format!("API {x}"),
            (Some(Need::Member(x)), _) => format!("hint {x}"),
            (Some(Need::Param(x)), _) => format!("hint {x}"),
            (Some(Need::Other(x)), _) => x.clone(),
            (None, Some(b)) => b.clone(),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            r.candidate.name,
            r.outcome.label(),
            r.errors,
            r.candidate.survey_verdict,
            first.replace('|', "\\|")
        );
    }
    s
}

/// Builds the runtime module (sources in `src`) for `kdir` in a copy
/// under `dir` and returns its Module.symvers.
pub fn build_runtime(src: &Path, kdir: &Path, dir: &Path) -> Result<PathBuf, Error> {
    let rt = dir.join("runtime-kmod");
    copy_dir(src, &rt)?;
    let out = Make::new(kdir, &rt)
        .var("FGFT_NO_SELFTEST", "y")
        .target("modules")
        .run()?;
    if !out.success() {
        return Err(Error::Msg(format!(
            "building the runtime for {}: {}",
            kdir.display(),
            out.combined()
        )));
    }
    Ok(rt.join("Module.symvers"))
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), Error> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    std::fs::create_dir_all(to).map_err(io(to))?;
    for e in std::fs::read_dir(from).map_err(io(from))? {
        let e = e.map_err(io(from))?;
        let p = e.path();
        let q = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &q)?;
        } else {
            std::fs::copy(&p, &q).map_err(io(&p))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_are_read_from_messages() {
        assert_eq!(
            need_of("kernel function `ether_crc_le` is called from the closure of isolated `x` but has no entry", &[]),
            Need::Api("ether_crc_le".into())
        );
        assert_eq!(
            need_of(
                "`queue_work`, called from the closure of isolated `f`: `queue_work` (static inline ...) calls exported `queue_work_on`",
                &["add [api.queue_work] (or [api.queue_work_on] if ...)".into()]
            ),
            Need::Api("queue_work".into())
        );
        assert_eq!(
            need_of("member `tx_buffer` of `struct atl1e_tx_ring` is a pointer used as an array in the closure of isolated `f`, and fgft cannot tell", &[]),
            Need::Member("struct atl1e_tx_ring.tx_buffer".into())
        );
        assert_eq!(
            need_of(
                "parameter `p` of isolated `atl2_get_regs` is used as a buffer here",
                &[]
            ),
            Need::Param("atl2_get_regs(p)".into())
        );
    }
}

//! fgft split as a library: turns a driver into a main module and an SFI
//! module.
//!
//! Pipeline: annotations (sidecar, inline `FGFT_*` macros, `--isolate`) ->
//! the driver's files (sidecar `[driver]` against the tree, or the sources
//! given, plus the local files they `#include`) -> tree-sitter parse with the
//! macro hints -> facts (call graph, field accesses, kernel calls) -> plan
//! (closures, marshaling, wrappers, diagnostics) -> byte-range edits and
//! generated files (`Output`).
//!
//! Nothing is written when there is an error: every problem is reported as a
//! located diagnostic first.  The CLI (`fgft-cc split`) and the campaign
//! runner both call [`compute`] and [`write`].

pub mod check;
pub mod derive;
pub mod diag;
mod driver;
pub mod emit;
pub mod icall;
pub mod kernel;
pub mod plan;
pub mod profiles;
mod runtime_src;
pub mod rust_crate;
pub mod tables;

pub use diag::{Error, Located};
use emit::EmitOpts;
use fgft_annotations::{Annotations, Pattern};
use fgft_facts::{access, callgraph::CallGraph, model::KernelGlobals, program::Program};
use plan::{FileRole, Inputs};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
pub use tables::Tables;

/// The runtime API the generated code is built against.
const RUNTIME_H: &str = include_str!("../../../runtime-kmod/include/fgft/runtime.h");
/// The annotation header drivers may include (`#include "fgft.h"`).
const FGFT_H: &str = include_str!("../../../annotations/include/fgft.h");

/// What a split is asked to do (the CLI's options, as data).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Driver source files, or one directory holding the driver.
    pub sources: Vec<PathBuf>,
    /// Kernel source tree the sidecar's file names are relative to.
    pub tree: Option<PathBuf>,
    /// Sidecar annotation files; later files add to the first.
    pub annotations: Vec<PathBuf>,
    /// Entry points to isolate: function names or globs.
    pub isolate: Vec<String>,
    /// An isolation profile of `profiles.toml`: its slot patterns are
    /// isolated as if given with `isolate`.
    pub profile: Option<String>,
    /// Kernel build directory recorded in OUT's Makefile as the default KDIR.
    pub kdir: Option<PathBuf>,
    /// Extra table directories (FGFT_TABLES is read too).
    pub tables: Vec<PathBuf>,
    /// Module.symvers of the built runtime module (for modpost).
    pub runtime_symvers: Option<PathBuf>,
    /// Build the SFI module without read checks (stores are still checked).
    pub no_read_checks: bool,
    /// Stubs stamp the cycle counter between their transaction's stages
    /// (debugfs entries/NAME/stages; for benchmarks).
    pub stage_times: bool,
    /// Module name (default: from the sidecar, the Makefile, or the sources).
    pub module: Option<String>,
    /// No device checkpoint, and no warning that the driver has none.
    pub no_checkpoint: bool,
    /// Drop the annotations' marshaling hints (sidecar and inline): only
    /// contracts and inference size what the entry points touch.
    pub no_hints: bool,
    /// With no `kdir`: copy a kernel record's member whose type is not
    /// known by assignment, as a guess, instead of refusing the split (the
    /// output may then not compile: an array member).  For the golden
    /// tests of the plan, which read no kernel headers; the CLI never sets
    /// it.
    pub guess_kernel_types: bool,
    /// Kernel version for the sidecar's per-version file lists.
    pub kernel_version: Option<String>,
}

/// Everything `split` computes before writing (used by tests too).
pub struct Split {
    pub out: emit::Output,
    pub warnings: Vec<Located>,
    pub summary: String,
    /// Kernel symbols this split's SFI code may name without a wrapper
    /// (for `check`): the APIs the annotations declare side-effect free and
    /// what their kernel definitions reach, and kernel functions the SFI
    /// code uses as values only.
    pub direct_symbols: Vec<String>,
    /// Every file and directory the split read: the driver's files and the
    /// local headers they include, the sidecars, the tree, the table
    /// directories, the kernel build directory and the runtime's symvers
    /// (OUT may overlap none of them).
    pub inputs: Vec<PathBuf>,
}

/// Runs the pipeline without writing OUT: loads the tables, then
/// [`compute_with`].
pub fn compute(opts: &Options) -> Result<Split, Error> {
    let tables = Tables::load(&opts.tables)?;
    compute_with(opts, &tables)
}

/// With `FGFT_TIMINGS` set, the time each stage of the pipeline took, on
/// stderr (the scaling bench reads them; nothing else does).
struct Phases {
    last: Option<std::time::Instant>,
}

impl Phases {
    fn from_env() -> Phases {
        Phases {
            last: std::env::var_os("FGFT_TIMINGS").map(|_| std::time::Instant::now()),
        }
    }

    fn mark(&mut self, stage: &str) {
        if let Some(t) = self.last {
            let now = std::time::Instant::now();
            eprintln!("fgft-cc: timing: {stage}: {:.3} s", (now - t).as_secs_f64());
            self.last = Some(now);
        }
    }
}

/// Runs the pipeline with tables already loaded (a caller that splits many
/// drivers loads them once).
pub fn compute_with(opts: &Options, tables: &Tables) -> Result<Split, Error> {
    let mut phase = Phases::from_env();
    let ann = annotations(opts, tables)?;
    let fl = driver::gather(opts, &ann)?;
    let mut ann = with_inline_annotations(ann, &fl)?;
    if opts.no_hints {
        ann.hints.clear();
    }
    let popts = fgft_parse::Options {
        hints: Some(tables.hints.clone()),
        budget: Default::default(),
    };
    let mut parsed = Vec::new();
    for p in &fl.paths {
        parsed.push(fgft_parse::parse_file_with(p, &popts)?);
    }
    phase.mark("parse");
    let mut prog = Program::with_expansions(parsed, &tables.hints.expand);
    let mut models = tables.api.models(&ann.pure_apis);
    // With a kernel build directory: what the kernel's headers define.
    let kernel = opts.kdir.as_ref().map(|kdir| {
        let units: Vec<PathBuf> = fl
            .paths
            .iter()
            .zip(&fl.files)
            .filter(|(_, f)| f.role == FileRole::Tu)
            .map(|(p, _)| p.clone())
            .collect();
        kernel::Kernel::load(kdir, &units)
    });
    let mut dropped: Vec<Vec<std::ops::Range<usize>>> = Vec::new();
    if let Some(k) = &kernel {
        k.add_models(&mut models);
        k.active_macros(&mut prog);
        dropped = prog
            .files
            .iter()
            .map(|pf| k.dropped_branches(&pf.path, &pf.text).unwrap_or_default())
            .collect();
        drop_compiled_out_fns(&mut prog, &dropped);
    }
    let prog = prog;
    phase.mark("program");
    let kglobals: KernelGlobals = tables.api.globals.keys().cloned().collect();
    let mut facts = access::analyze(&prog, &models, &kglobals);
    drop_compiled_out(&dropped, &mut facts);
    phase.mark("facts");
    // The local headers' facts, read once for both runs of the slot finder.
    let headers = fgft_facts::headers::HeaderCache::new(&popts);
    let roots = slot_roots(&prog, &fl, &headers, &tables.slots);
    phase.mark("slots");
    // Calls through pointers: their targets become call-graph edges.
    let compiled_out = |n: &str| kernel.as_ref().is_some_and(|k| k.compiled_out(n));
    let icalls = icall::resolve(
        &prog,
        &fl.files,
        &mut facts,
        |t| slot_roots(&prog, &fl, &headers, t),
        &tables.slots,
        &compiled_out,
    );
    let mut graph = CallGraph::new(&facts);
    phase.mark("icalls");
    graph.add_const_table_edges(&facts, &prog, &tables.slots);
    let (ann, hint_warnings) = derive::extend(
        ann,
        &prog,
        &facts,
        &roots,
        &fl.files,
        (&tables.contracts, &tables.api, &icalls),
    );
    phase.mark("graph+derive");
    let inputs = Inputs {
        prog: &prog,
        files: &fl.files,
        facts: &facts,
        graph: &graph,
        table: &tables.api,
        slots: &tables.slots,
        ann: &ann,
        module: fl.module.clone(),
        roots: &roots,
        pm_rules: &tables.pm_rules,
        no_checkpoint: opts.no_checkpoint,
        kernel: kernel.as_ref(),
        guess_kernel_types: opts.guess_kernel_types,
        icalls: &icalls,
    };
    let mut plan = plan::build(&inputs);
    plan.diags.extend(hint_warnings);
    phase.mark("plan");
    plan.diags.extend(syntax_errors(
        &plan::Sources {
            prog: &prog,
            files: &fl.files,
        },
        &plan.sfi_fns,
    ));
    for sk in &fl.skipped {
        plan.diags.push(Located {
            path: sk.path.clone(),
            text: String::new(),
            range: 0..0,
            message: format!("{}: skipped: {}", sk.path.display(), sk.why),
            label: String::new(),
            notes: vec![],
            warning: true,
        });
    }
    for e in &mut plan.entries {
        e.spec.stage_times = opts.stage_times;
    }
    // A unit Kbuild could not preprocess: what the kernel defines is not
    // known there, and its macros and inlines read as unknown calls.
    if let Some(k) = &kernel {
        for (unit, why) in &k.unavailable {
            plan.diags.insert(
                0,
                Located {
                    path: unit.clone(),
                    text: String::new(),
                    range: 0..0,
                    message: format!(
                        "{}: the kernel's view of this unit is not known (macros and static inlines of its headers read as kernel calls): {why}",
                        unit.display()
                    ),
                    label: String::new(),
                    notes: vec![],
                    warning: true,
                },
            );
        }
    }
    if plan.has_errors() {
        return Err(Error::Located(plan.diags));
    }
    let eopts = EmitOpts {
        runtime_header: RUNTIME_H.to_string(),
        fgft_header: FGFT_H.to_string(),
        runtime_symvers: match &opts.runtime_symvers {
            Some(p) => Some(std::fs::read_to_string(p).map_err(|source| Error::Io {
                path: p.clone(),
                source,
            })?),
            None => None,
        },
        no_read_checks: opts.no_read_checks,
        origin: origin(opts, &fl.files),
        module_macros: tables.module_macros.clone(),
        kdir: opts.kdir.clone(),
        runtime_files: runtime_src::FILES
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect(),
    };
    let sources = plan::Sources {
        prog: &prog,
        files: &fl.files,
    };
    let out = match emit::emit(&plan, &sources, &tables.api, &eopts) {
        Ok(o) => o,
        Err(mut d) => {
            let mut all = plan.diags.clone();
            all.append(&mut d);
            return Err(Error::Located(all));
        }
    };
    phase.mark("emit");
    let summary = format!(
        "fgft-cc split {}: {} entry point(s), {} SFI function(s), {} kernel wrapper(s)",
        plan.module,
        plan.entries.len(),
        plan.sfi_fns.len(),
        plan.wrapped.len()
    );
    let mut inputs = fl.paths.clone();
    inputs.extend(opts.sources.iter().cloned());
    inputs.extend(opts.annotations.iter().cloned());
    inputs.extend(opts.tree.iter().cloned());
    inputs.extend(tables.dirs.dirs().iter().cloned());
    inputs.extend(opts.kdir.iter().cloned());
    inputs.extend(opts.runtime_symvers.iter().cloned());
    let direct_symbols = {
        // What a pure macro or inline expands to is called as directly.
        let mut v = ann.pure_apis.clone();
        v.extend(plan.kernel_values.iter().cloned());
        if let Some(k) = &kernel {
            for p in &ann.pure_apis {
                v.extend(k.reach(p));
            }
        }
        v.sort();
        v.dedup();
        v
    };
    // The syntax trees and the facts are the bulk of the memory; freeing
    // them is a tenth of a large run, and nothing waits for it.
    drop_aside((prog, facts, headers));
    Ok(Split {
        out,
        warnings: plan.diags,
        summary,
        inputs,
        direct_symbols,
    })
}

/// Drops `t` on a thread of its own, so that the caller does not wait for
/// the memory to be freed (a process that exits first does not free it at
/// all).  Where no thread can be made, `t` is dropped here.
fn drop_aside<T: Send + 'static>(t: T) {
    let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(t)));
    let theirs = std::sync::Arc::clone(&slot);
    let spawned = std::thread::Builder::new()
        .name("fgft-drop".into())
        // As deep as the structures may nest (reserved, not committed).
        .stack_size(256 << 20)
        .spawn(move || drop(theirs.lock().map(|mut g| g.take())));
    if spawned.is_err() {
        drop(slot.lock().map(|mut g| g.take()));
    }
}

/// Code that does not parse (a tree-sitter ERROR or MISSING node): an
/// error in a function split isolates or copies into the SFI module (its
/// rewrite would rest on a guess), a warning elsewhere, one per file.
fn syntax_errors(src: &plan::Sources<'_>, sfi_fns: &BTreeSet<String>) -> Vec<Located> {
    let mut out = Vec::new();
    for (fid, pf) in src.prog.files.iter().enumerate() {
        let h = pf.health();
        let mut elsewhere: Vec<(usize, String)> = Vec::new();
        // tree-sitter reads on after an unterminated `/*`; the compiler
        // does not: what follows is a comment, not code to isolate.
        if let Some(at) = unterminated_comment(&pf.text) {
            if let Some(f) = src
                .prog
                .fns
                .iter()
                .find(|f| f.file == fid && f.range.start > at && sfi_fns.contains(&f.name))
            {
                out.push(src.located(
                    fid,
                    at..at + 2,
                    format!(
                        "this comment never ends, so `{}` after it is not code the compiler sees, and split would isolate it",
                        f.name
                    ),
                    "unterminated comment",
                    vec!["close the comment with `*/`".into()],
                    false,
                ));
            }
        }
        for r in &h.stray {
            // An ERROR around a function (an unterminated comment before
            // it) is that function's error.
            let inside = src.prog.fns.iter().find(|f| {
                f.file == fid
                    && sfi_fns.contains(&f.name)
                    && f.range.start < r.end
                    && r.start < f.range.end
            });
            match inside {
                Some(f) => out.push(src.located(
                    fid,
                    r.start..r.start + 1,
                    format!(
                        "code around `{}` does not parse from here, and split would isolate or copy it into the SFI module",
                        f.name
                    ),
                    "syntax error",
                    vec!["fix the syntax (an unterminated comment or string, a stray token)".into()],
                    false,
                )),
                None => elsewhere.push((r.start, "outside any function".to_string())),
            }
        }
        for f in h.broken() {
            let at = f.first_problem.unwrap_or(f.range.start);
            if sfi_fns.contains(&f.name) {
                out.push(src.located(
                    fid,
                    at..at + 1,
                    format!(
                        "`{}` does not parse here, and split would isolate or copy it into the SFI module",
                        f.name
                    ),
                    "syntax error",
                    vec![
                        "fix the syntax; for a kernel macro tree-sitter cannot read, add it to a macro-hints.toml in --tables".into(),
                    ],
                    false,
                ));
            } else {
                elsewhere.push((at, format!("in `{}`", f.name)));
            }
        }
        elsewhere.sort();
        if let Some((at, _)) = elsewhere.first() {
            let mut what: Vec<&str> = elsewhere.iter().map(|(_, w)| w.as_str()).collect();
            let n = what.len();
            what.sort_unstable();
            what.dedup();
            out.push(src.located(
                fid,
                *at..*at + 1,
                format!(
                    "{n} place(s) of this file do not parse ({}); split leaves them as they are",
                    what.join(", ")
                ),
                "first syntax error",
                vec![],
                true,
            ));
        }
    }
    out
}

/// The start of a block comment that runs to the end of `text`.
fn unterminated_comment(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => i = fgft_base::lex::skip_literal(b, i),
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = fgft_base::lex::skip_block_comment(b, i);
                if end == b.len() && !text.ends_with("*/") {
                    return Some(i);
                }
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => i = fgft_base::lex::skip_line_comment(b, i),
            _ => i += 1,
        }
    }
    None
}

/// The sidecars, merged in order, and the `--isolate` patterns.
fn annotations(opts: &Options, tables: &Tables) -> Result<Annotations, Error> {
    let mut ann = Annotations::default();
    for p in &opts.annotations {
        let a = Annotations::from_sidecar(p)?;
        ann = ann.merge(a)?;
    }
    let mut cli = Annotations::default();
    for i in &opts.isolate {
        cli.isolate.push(Pattern::from_cli(i)?);
    }
    if let Some(p) = &opts.profile {
        for i in tables.profiles.get(p)? {
            cli.isolate.push(Pattern::from_profile(i, p)?);
        }
    }
    Ok(ann.merge(cli)?)
}

/// Adds the inline `FGFT_*` annotations of the driver's sources and
/// headers.
fn with_inline_annotations(mut ann: Annotations, fl: &driver::Files) -> Result<Annotations, Error> {
    for (p, f) in fl.paths.iter().zip(&fl.files) {
        if f.role != FileRole::Header || p.extension().is_some_and(|e| e == "h") {
            let inl = fgft_annotations::inline::scan_file(p)?;
            ann = ann.merge(inl)?;
        }
    }
    Ok(ann)
}

/// The slots (fgft-facts' roots) of every driver file that is not a header.
fn slot_roots(
    prog: &Program,
    fl: &driver::Files,
    cache: &fgft_facts::headers::HeaderCache,
    table: &fgft_facts::slots::SlotTable,
) -> Vec<(fgft_facts::program::FileId, fgft_facts::slots::Root)> {
    let mut roots = Vec::new();
    for (fid, pf) in prog.files.iter().enumerate() {
        if fl.files[fid].role == FileRole::Header {
            continue;
        }
        let sf = cache.facts_with_headers(pf);
        for r in fgft_facts::slots::roots(pf, &sf, table) {
            roots.push((fid, r));
        }
    }
    roots
}

/// How the sources were given, for the Kbuild comment.
fn origin(opts: &Options, files: &[plan::DriverFile]) -> String {
    let tus = files
        .iter()
        .filter(|f| f.role == FileRole::Tu)
        .map(|f| f.shown.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    match (opts.annotations.first(), opts.sources.is_empty()) {
        (Some(a), true) => format!(
            "{tus} (sidecar {})",
            a.file_name().unwrap_or_default().to_string_lossy()
        ),
        _ => tus,
    }
}

/// Writes `out` under `dir` (which the caller made ready: OUT never
/// overlaps an input, and a non-empty OUT is replaced only on request).
pub fn write(dir: &Path, out: &emit::Output) -> Result<(), Error> {
    for (rel, text) in out {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|source| Error::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        std::fs::write(&p, text).map_err(|source| Error::Io { path: p, source })?;
    }
    Ok(())
}

/// Forgets what the driver's code does inside the `#if` branches this
/// configuration drops (sunhme's `CONFIG_SBUS` code reads a `struct
/// platform_device` that x86 never defines): field accesses, pointer uses,
/// global uses, calls and function references there are no code.
fn drop_compiled_out(
    dropped: &[Vec<std::ops::Range<usize>>],
    facts: &mut fgft_facts::model::DriverFacts,
) {
    if dropped.iter().all(Vec::is_empty) {
        return;
    }
    let out = |s: &fgft_facts::model::Site| in_dropped(dropped, s.file, &s.range);
    for ff in facts.per_fn.values_mut() {
        ff.accesses.retain(|a| !out(&a.at));
        ff.ptr_uses.retain(|u| !out(&u.at));
        ff.globals.retain(|g| !out(&g.at));
        ff.calls.retain(|c| !out(&c.at));
        ff.fn_refs.retain(|(_, s)| !out(s));
    }
}

/// A driver function defined only in `#if` branches this configuration
/// drops (niu's own `readq()` under `#ifndef readq`, which x86-64 defines)
/// is no driver function: a call of that name is the kernel's.
fn drop_compiled_out_fns(prog: &mut Program, dropped: &[Vec<std::ops::Range<usize>>]) {
    let fns = &prog.fns;
    for ids in prog.fn_index.values_mut() {
        ids.retain(|&i| !in_dropped(dropped, fns[i].file, &fns[i].range));
    }
    prog.fn_index.retain(|_, ids| !ids.is_empty());
}

/// Whether the text `r` of file `file` lies inside one of its dropped
/// `#if` branches.
fn in_dropped(
    dropped: &[Vec<std::ops::Range<usize>>],
    file: usize,
    r: &std::ops::Range<usize>,
) -> bool {
    dropped
        .get(file)
        .is_some_and(|rs| rs.iter().any(|b| b.start <= r.start && r.end <= b.end))
}

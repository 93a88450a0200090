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

pub mod diag;
mod driver;
pub mod emit;
pub mod plan;

pub use diag::{Error, Located};
use emit::EmitOpts;
use fgft_annotations::{Annotations, Pattern};
use fgft_facts::{access, callgraph::CallGraph, program::Program};
use plan::table::Table;
use plan::{FileRole, Inputs};
use std::path::{Path, PathBuf};

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
    /// Kernel build directory recorded in OUT's Makefile as the default KDIR.
    pub kdir: Option<PathBuf>,
    /// Extra table directories (FGFT_TABLES is read too).
    pub tables: Vec<PathBuf>,
    /// Module.symvers of the built runtime module (for modpost).
    pub runtime_symvers: Option<PathBuf>,
    /// Build the SFI module without read checks (stores are still checked).
    pub no_read_checks: bool,
    /// Module name (default: from the sidecar, the Makefile, or the sources).
    pub module: Option<String>,
    /// No device checkpoint, and no warning that the driver has none.
    pub no_checkpoint: bool,
    /// Kernel version for the sidecar's per-version file lists.
    pub kernel_version: Option<String>,
}

/// Everything `split` computes before writing (used by tests too).
pub struct Split {
    pub out: emit::Output,
    pub warnings: Vec<Located>,
    pub summary: String,
}

/// Runs the pipeline without writing OUT.
pub fn compute(args: &Options) -> Result<Split, Error> {
    // Annotations.
    let mut ann = Annotations::default();
    for p in &args.annotations {
        let a = Annotations::from_sidecar(p)?;
        ann = ann.merge(a)?;
    }
    let mut cli = Annotations::default();
    for i in &args.isolate {
        cli.isolate.push(Pattern::from_cli(i)?);
    }
    ann = ann.merge(cli)?;
    let fl = driver::gather(args, &ann)?;
    for (p, f) in fl.paths.iter().zip(&fl.files) {
        if f.role != FileRole::Header || p.extension().is_some_and(|e| e == "h") {
            let inl = fgft_annotations::inline::scan_file(p)?;
            ann = ann.merge(inl)?;
        }
    }
    // Parse.
    let opts = fgft_parse::Options {
        hints: Some(std::sync::Arc::new(fgft_parse::HintTable::load(
            &args.tables,
        )?)),
        budget: Default::default(),
    };
    let mut parsed = Vec::new();
    for p in &fl.paths {
        parsed.push(fgft_parse::parse_file_with(p, &opts)?);
    }
    let prog = Program::new(parsed);
    // Tables.
    let table = Table::load(&args.tables)?;
    let bad = emit::wrappers::check_captures(&table);
    if !bad.is_empty() {
        return Err(Error::Msg(bad.join("\n")));
    }
    let module_macros = emit::module_macros(&args.tables)?;
    let private = emit::private_accessors(&args.tables)?;
    let models = table.models(&ann.pure_apis);
    let kglobals: access::KernelGlobals = table.globals.keys().cloned().collect();
    let facts = access::analyze(&prog, &models, &kglobals);
    // Slots of every driver file (fgft-facts' roots).
    let slot_table = fgft_facts::slots::SlotTable::load(&args.tables)?;
    let cache = fgft_facts::headers::HeaderCache::new(&opts);
    let mut roots = Vec::new();
    for (fid, pf) in prog.files.iter().enumerate() {
        if fl.files[fid].role == FileRole::Header {
            continue;
        }
        let sf = cache.facts_with_headers(pf);
        for r in fgft_facts::slots::roots(pf, &sf, &slot_table) {
            roots.push((fid, r));
        }
    }
    // Device checkpoints: the PM rule table and its extensions.
    let pm_rules = {
        let dirs = fgft_parse::tables::table_dirs(&args.tables);
        let srcs =
            fgft_parse::tables::extension_files(fgft_pm::DEFAULT_RULES, "pm-rules.toml", &dirs)?;
        let named: Vec<(String, String)> = srcs
            .iter()
            .map(|s| {
                (
                    s.display("pm-rules.toml").display().to_string(),
                    s.text.clone(),
                )
            })
            .collect();
        let refs: Vec<(&str, &str)> = named
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        fgft_pm::Rules::parse(&refs).map_err(|e| Error::Msg(e.to_string()))?
    };
    let mut graph = CallGraph::new(&facts);
    graph.add_const_table_edges(&facts, &prog);
    let inputs = Inputs {
        prog: &prog,
        files: &fl.files,
        facts: &facts,
        graph: &graph,
        table: &table,
        ann: &ann,
        module: fl.module.clone(),
        roots: &roots,
        reported: Default::default(),
        pm_rules: &pm_rules,
        no_checkpoint: args.no_checkpoint,
    };
    let plan = plan::build(&inputs);
    if plan.has_errors() {
        return Err(Error::Located(plan.diags));
    }
    let origin = match (args.annotations.first(), args.sources.is_empty()) {
        (Some(a), true) => format!(
            "{} (sidecar {})",
            fl.files
                .iter()
                .filter(|f| f.role == FileRole::Tu)
                .map(|f| f.shown.display().to_string())
                .collect::<Vec<_>>()
                .join(" "),
            a.file_name().unwrap_or_default().to_string_lossy()
        ),
        _ => fl
            .files
            .iter()
            .filter(|f| f.role == FileRole::Tu)
            .map(|f| f.shown.display().to_string())
            .collect::<Vec<_>>()
            .join(" "),
    };
    let eopts = EmitOpts {
        runtime_header: RUNTIME_H.to_string(),
        fgft_header: FGFT_H.to_string(),
        runtime_symvers: match &args.runtime_symvers {
            Some(p) => Some(
                std::fs::read_to_string(p)
                    .map_err(|e| Error::Msg(format!("--runtime-symvers {}: {e}", p.display())))?,
            ),
            None => None,
        },
        no_read_checks: args.no_read_checks,
        origin,
        module_macros,
        kdir: args.kdir.clone(),
        private,
    };
    let out = match emit::emit(&inputs, &plan, &table, &eopts) {
        Ok(o) => o,
        Err(mut d) => {
            let mut all = plan.diags.clone();
            all.append(&mut d);
            return Err(Error::Located(all));
        }
    };
    let summary = format!(
        "fgft-cc split {}: {} entry point(s), {} SFI function(s), {} kernel wrapper(s)",
        plan.module,
        plan.entries.len(),
        plan.sfi_fns.len(),
        plan.wrapped.len()
    );
    Ok(Split {
        out,
        warnings: plan.diags,
        summary,
    })
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

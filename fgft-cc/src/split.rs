//! `fgft-cc split`: turns a driver into a main module and an SFI module.
//!
//! Pipeline: annotations (sidecar, inline `FGFT_*` macros, `--isolate`) ->
//! the driver's files (sidecar `[driver]` against `--tree`, or the SOURCES
//! given, plus the local files they `#include`) -> tree-sitter parse with the
//! macro hints -> facts (call graph, field accesses, kernel calls) -> plan
//! (closures, marshaling, wrappers, diagnostics) -> byte-range edits and
//! generated files -> OUT.
//!
//! Nothing is written when there is an error: every problem is reported as a
//! located diagnostic first.  OUT must not exist, be empty, or `--force` must
//! be given; OUT may not overlap the inputs or the tree.

use crate::diag::{CliError, Located};
use crate::emit::{self, EmitOpts};
use crate::plan::table::Table;
use crate::plan::{self, DriverFile, FileRole, Inputs};
use fgft_annotations::{AnnotError, Annotations, Pattern};
use fgft_facts::{access, callgraph::CallGraph, program::Program};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The runtime API the generated code is built against.
const RUNTIME_H: &str = include_str!("../../runtime-kmod/include/fgft/runtime.h");
/// The annotation header drivers may include (`#include "fgft.h"`).
const FGFT_H: &str = include_str!("../../annotations/include/fgft.h");

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Driver source files, or one directory holding the driver (optional
    /// when --annotations names the driver's files).
    pub sources: Vec<PathBuf>,
    /// Output directory (created; must be empty unless --force).
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// Kernel source tree the sidecar's file names are relative to.
    #[arg(long)]
    pub tree: Option<PathBuf>,
    /// Sidecar annotation file (TOML); repeatable: later files add hints,
    /// entry points and pure APIs to the first.
    #[arg(long)]
    pub annotations: Vec<PathBuf>,
    /// Entry point to isolate: a function name or a glob (repeatable).
    #[arg(long = "isolate")]
    pub isolate: Vec<String>,
    /// Kernel build directory the output is meant for (recorded in OUT's
    /// Makefile as the default KDIR).
    #[arg(long)]
    pub kdir: Option<PathBuf>,
    /// Replace a non-empty OUT.
    #[arg(long)]
    pub force: bool,
    /// Extra table directories (compensations.toml, module-init.toml,
    /// macro-hints.toml); FGFT_TABLES is read too.
    #[arg(long = "tables")]
    pub tables: Vec<PathBuf>,
    /// Module.symvers of the built runtime module (for modpost).
    #[arg(long = "runtime-symvers")]
    pub runtime_symvers: Option<PathBuf>,
    /// Build the SFI module without read checks (stores are still checked).
    #[arg(long = "no-read-checks")]
    pub no_read_checks: bool,
    /// Module name (default: from the sidecar, the Makefile, or the sources).
    #[arg(long)]
    pub module: Option<String>,
    /// No device checkpoint: do not derive one from the PM code, and do not
    /// warn that the driver has none.
    #[arg(long = "no-checkpoint")]
    pub no_checkpoint: bool,
    /// Kernel version for the sidecar's per-version file lists (default:
    /// read from the tree's Makefile).
    #[arg(long = "kernel-version")]
    pub kernel_version: Option<String>,
}

fn annot_err(e: AnnotError) -> CliError {
    match e.loc() {
        Some(loc) => CliError::Located(vec![Located {
            path: loc.file.clone(),
            text: std::fs::read_to_string(&loc.file).unwrap_or_default(),
            range: loc.start..loc.end,
            message: e.to_string(),
            label: "here".into(),
            notes: vec![],
            warning: false,
        }]),
        None => CliError::Msg(e.to_string()),
    }
}

/// Local `#include "x"` targets of a C file that exist.
fn local_includes(path: &Path, text: &str, dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim_start();
        let Some(rest) = l.strip_prefix('#') else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(rest) = rest.strip_prefix("include") else {
            continue;
        };
        let rest = rest.trim();
        let Some(inner) = rest.strip_prefix('"').and_then(|r| r.split('"').next()) else {
            continue;
        };
        let mut cands = Vec::new();
        if let Some(d) = path.parent() {
            cands.push(d.join(inner));
        }
        for d in dirs {
            cands.push(d.join(inner));
        }
        if let Some(p) = cands.into_iter().find(|p| p.is_file()) {
            out.push(p);
        }
    }
    out
}

fn read(p: &Path) -> Result<String, CliError> {
    std::fs::read(p)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|source| CliError::Io {
            path: p.to_path_buf(),
            source,
        })
}

/// The Makefile (or Kbuild) next to a source, if any.
fn makefile_of(dir: &Path) -> Option<String> {
    for n in ["Kbuild", "Makefile"] {
        if let Ok(t) = std::fs::read_to_string(dir.join(n)) {
            return Some(t.replace("\\\n", " "));
        }
    }
    None
}

/// (module, condition) of an object in a Kbuild file: `mod-y += o.o`,
/// `mod-objs := o.o`, `mod-$(CONFIG_X) += o.o`.
fn kbuild_membership(mk: &str, obj: &str) -> Option<(String, Option<String>)> {
    for line in mk.lines() {
        let line = line.split('#').next().unwrap_or("");
        let Some((lhs, rhs)) = line.split_once('=') else {
            continue;
        };
        let lhs = lhs.trim_end_matches([':', '+', '?']).trim();
        if !rhs.split_whitespace().any(|w| w == obj) {
            continue;
        }
        if lhs.starts_with("obj-") {
            return Some((obj.trim_end_matches(".o").to_string(), None));
        }
        for suf in ["-objs", "-y"] {
            if let Some(m) = lhs.strip_suffix(suf) {
                return Some((m.to_string(), None));
            }
        }
        if let Some(i) = lhs.find("-$(") {
            let m = &lhs[..i];
            let c = lhs[i + 3..].trim_end_matches(')');
            return Some((m.to_string(), Some(c.to_string())));
        }
    }
    None
}

struct Files {
    files: Vec<DriverFile>,
    paths: Vec<PathBuf>,
    module: String,
}

fn gather(args: &Args, ann: &Annotations) -> Result<Files, CliError> {
    let tree = args.tree.as_deref();
    let (sources, mut headers, inc_dirs): (Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>);
    let mut module = args.module.clone();
    if !args.sources.is_empty() {
        headers = Vec::new();
        inc_dirs = Vec::new();
        if args.sources.len() == 1 && args.sources[0].is_dir() {
            let dir = &args.sources[0];
            let mut cs = Vec::new();
            let mut hs = Vec::new();
            let rd = std::fs::read_dir(dir).map_err(|source| CliError::Io {
                path: dir.clone(),
                source,
            })?;
            for e in rd.flatten() {
                let p = e.path();
                match p.extension().and_then(|e| e.to_str()) {
                    Some("c") => cs.push(p),
                    Some("h") => hs.push(p),
                    _ => {}
                }
            }
            cs.sort();
            hs.sort();
            sources = cs;
            headers = hs;
            if module.is_none() {
                module = dir
                    .canonicalize()
                    .ok()
                    .and_then(|d| d.file_name().map(|n| n.to_string_lossy().to_string()));
            }
        } else {
            for s in &args.sources {
                if !s.is_file() {
                    return Err(CliError::Msg(format!(
                        "{}: not a file (give source files, or one directory)",
                        s.display()
                    )));
                }
            }
            sources = args.sources.clone();
        }
    } else if let Some(drv) = &ann.driver {
        let r = drv
            .resolve(tree, args.kernel_version.as_deref())
            .map_err(annot_err)?;
        sources = r.sources;
        headers = r.headers;
        inc_dirs = r.include_dirs;
        if module.is_none() {
            module = Some(drv.module.clone());
        }
    } else {
        return Err(CliError::Msg(
            "no sources: give SOURCES...|DIR, or --annotations with a [driver] section (and --tree)"
                .into(),
        ));
    }
    // Local includes, transitively.
    let mut all: Vec<PathBuf> = Vec::new();
    let mut included_by: Vec<Vec<usize>> = Vec::new();
    let mut queue: Vec<PathBuf> = sources.iter().chain(headers.iter()).cloned().collect();
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let mut seen: Vec<PathBuf> = Vec::new();
    while let Some(p) = queue.pop() {
        let c = canon(&p);
        if seen.contains(&c) {
            continue;
        }
        seen.push(c);
        all.push(p);
        included_by.push(Vec::new());
    }
    let mut k = 0;
    while k < all.len() {
        let text = read(&all[k])?;
        for inc in local_includes(&all[k], &text, &inc_dirs) {
            let c = canon(&inc);
            match seen.iter().position(|s| *s == c) {
                Some(j) => {
                    if !included_by[j].contains(&k) {
                        included_by[j].push(k);
                    }
                }
                None => {
                    seen.push(c);
                    all.push(inc);
                    included_by.push(vec![k]);
                }
            }
        }
        k += 1;
    }
    let src_set: BTreeSet<PathBuf> = sources.iter().map(|p| canon(p)).collect();
    let base_dir = sources
        .first()
        .and_then(|p| p.parent())
        .map(|p| p.to_path_buf())
        .unwrap_or_default();
    let mk = makefile_of(&base_dir);
    let mut files: Vec<DriverFile> = Vec::new();
    for (i, p) in all.iter().enumerate() {
        let is_c = p.extension().and_then(|e| e.to_str()) == Some("c");
        let c = canon(p);
        let role = if is_c && src_set.contains(&c) && included_by[i].is_empty() {
            FileRole::Tu
        } else if is_c {
            FileRole::IncludedC
        } else {
            FileRole::Header
        };
        let rel = p
            .strip_prefix(&base_dir)
            .map(|r| r.to_path_buf())
            .unwrap_or_else(|_| PathBuf::from(p.file_name().unwrap_or_default()));
        let obj = format!("{}", rel.with_extension("o").display());
        let member = mk.as_deref().and_then(|m| kbuild_membership(m, &obj));
        if role == FileRole::Tu && module.is_none() {
            if let Some((m, _)) = &member {
                module = Some(m.clone());
            }
        }
        // Shown relative to the tree, else from the driver's directory.
        let shown = match tree.filter(|t| p.starts_with(t)) {
            Some(_) => plan::shown_path(p, tree),
            None => plan::shown_path(p, base_dir.parent()),
        };
        files.push(DriverFile {
            role,
            rel,
            shown,
            config: member.and_then(|m| m.1),
            included_by: included_by[i].clone(),
        });
    }
    let module = module.unwrap_or_else(|| {
        sources
            .first()
            .and_then(|p| p.file_stem())
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| "driver".into())
    });
    // Order: headers first (their records win), then sources as given,
    // then included .c files.
    let mut order: Vec<usize> = (0..all.len()).collect();
    let rank = |f: &DriverFile| match f.role {
        FileRole::Header => 0,
        FileRole::Tu => 1,
        FileRole::IncludedC => 2,
    };
    let src_pos = |i: usize| {
        sources
            .iter()
            .position(|s| canon(s) == canon(&all[i]))
            .unwrap_or(usize::MAX)
    };
    order.sort_by_key(|&i| (rank(&files[i]), src_pos(i), files[i].rel.clone()));
    let remap: Vec<usize> = {
        let mut r = vec![0; order.len()];
        for (new, &old) in order.iter().enumerate() {
            r[old] = new;
        }
        r
    };
    let mut out_files = Vec::new();
    let mut out_paths = Vec::new();
    for &old in &order {
        let mut f = files[old].clone();
        f.included_by = f.included_by.iter().map(|&j| remap[j]).collect();
        out_files.push(f);
        out_paths.push(all[old].clone());
    }
    if !out_files.iter().any(|f| f.role == FileRole::Tu) {
        return Err(CliError::Msg("no C source among the inputs".into()));
    }
    Ok(Files {
        files: out_files,
        paths: out_paths,
        module,
    })
}

/// Everything `split` computes before writing (used by tests too).
pub struct Split {
    pub out: emit::Output,
    pub warnings: Vec<Located>,
    pub summary: String,
}

/// Runs the pipeline without writing OUT.
pub fn compute(args: &Args) -> Result<Split, CliError> {
    // Annotations.
    let mut ann = Annotations::default();
    for p in &args.annotations {
        let a = Annotations::from_sidecar(p).map_err(annot_err)?;
        ann = ann.merge(a).map_err(annot_err)?;
    }
    let mut cli = Annotations::default();
    for i in &args.isolate {
        cli.isolate.push(Pattern::from_cli(i).map_err(annot_err)?);
    }
    ann = ann.merge(cli).map_err(annot_err)?;
    let fl = gather(args, &ann)?;
    for (p, f) in fl.paths.iter().zip(&fl.files) {
        if f.role != FileRole::Header || p.extension().is_some_and(|e| e == "h") {
            let inl = fgft_annotations::inline::scan_file(p).map_err(annot_err)?;
            ann = ann.merge(inl).map_err(annot_err)?;
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
        return Err(CliError::Msg(bad.join("\n")));
    }
    let module_macros = emit::module_macros(&args.tables)?;
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
        fgft_pm::Rules::parse(&refs).map_err(|e| CliError::Msg(e.to_string()))?
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
        return Err(CliError::Located(plan.diags));
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
        runtime_symvers: args.runtime_symvers.clone(),
        no_read_checks: args.no_read_checks,
        origin,
        module_macros,
    };
    let out = match emit::emit(&inputs, &plan, &table, &eopts) {
        Ok(o) => o,
        Err(mut d) => {
            let mut all = plan.diags.clone();
            all.append(&mut d);
            return Err(CliError::Located(all));
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

/// Writes `out` under `dir` (which `outdir::prepare` made ready).
pub fn write(dir: &Path, out: &emit::Output) -> Result<(), CliError> {
    for (rel, text) in out {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|source| CliError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        std::fs::write(&p, text).map_err(|source| CliError::Io { path: p, source })?;
    }
    Ok(())
}

pub fn run(args: Args) -> Result<(), CliError> {
    let split = compute(&args)?;
    if !split.warnings.is_empty() {
        crate::diag::emit(&split.warnings);
    }
    let mut inputs: Vec<PathBuf> = args.sources.clone();
    if let Some(t) = &args.tree {
        inputs.push(t.clone());
    }
    inputs.extend(args.annotations.iter().cloned());
    crate::outdir::prepare(&args.out, &inputs, args.force)?;
    write(&args.out, &split.out)?;
    if let Some(k) = &args.kdir {
        let mk = args.out.join("Makefile");
        if let Ok(t) = std::fs::read_to_string(&mk) {
            let t = t.replacen(
                "KDIR ?= /lib/modules/$(shell uname -r)/build",
                &format!("KDIR ?= {}", k.display()),
                1,
            );
            std::fs::write(&mk, t).map_err(|source| CliError::Io { path: mk, source })?;
        }
    }
    println!("{} -> {}", split.summary, args.out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kbuild_lines() {
        let mk = "obj-$(CONFIG_MOUSE_PS2) += psmouse.o\npsmouse-objs := psmouse-base.o synaptics.o\npsmouse-$(CONFIG_MOUSE_PS2_ALPS) += alps.o\n";
        assert_eq!(
            kbuild_membership(mk, "psmouse-base.o"),
            Some(("psmouse".into(), None))
        );
        assert_eq!(
            kbuild_membership(mk, "alps.o"),
            Some(("psmouse".into(), Some("CONFIG_MOUSE_PS2_ALPS".into())))
        );
        assert_eq!(kbuild_membership(mk, "nope.o"), None);
    }
}

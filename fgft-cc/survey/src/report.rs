//! Per-module reports: entry points by slot kind, PM callbacks, kernel APIs
//! with no compensation-table entry, marshaling hints, parse health and a
//! readiness verdict; rendered as a table for people and JSON for machines.
//!
//! The JSON schema is versioned by [`SCHEMA`]; a change to its shape bumps it
//! (the `survey_json_schema` test holds the shape).

use crate::apis::KnownApis;
use crate::csum::HeaderInfo;
use crate::model::{FailKind, FieldDecl, FieldKind, FileSummary, FnSum, Lang, UseKind};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

/// Version of the JSON report's shape.
pub const SCHEMA: &str = "fgft-survey/1";

/// How a group of files was formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitKind {
    /// A loadable module (`obj-m` or `obj-$(CONFIG_X)`).
    Module,
    /// Named only on `obj-y` lines.
    Builtin,
    /// A file no makefile names.
    Unassigned,
}

/// A group of files that is surveyed together (a driver module).
#[derive(Debug, Clone)]
pub struct Unit {
    /// `dir/stem` relative to the tree (a path for unassigned files).
    pub name: String,
    pub kind: UnitKind,
    pub configs: Vec<String>,
    /// `Makefile:line` of its first `obj-` line.
    pub makefile: Option<String>,
    /// Indices into the survey's file list.
    pub files: Vec<usize>,
}

/// Readiness of a module for `fgft-cc split`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Entry points, a checkpoint from PM code, every API known, no hint
    /// needed, clean parse.
    Ready,
    /// Needs compensation-table entries or marshaling hints.
    NeedsAnnotations,
    /// No PM callbacks: checkpoint/restore must be written by hand.
    NoCheckpoint,
    /// A file failed or an entry point's closure has parse errors.
    ParseBlocked,
    /// Nothing stored in a kernel slot.
    NoEntryPoints,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ready => "ready",
            Verdict::NeedsAnnotations => "needs-annotations",
            Verdict::NoCheckpoint => "no-checkpoint",
            Verdict::ParseBlocked => "parse-blocked",
            Verdict::NoEntryPoints => "no-entry-points",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct EntryPoint {
    pub function: String,
    /// `struct.field`
    pub slot: String,
    pub file: String,
    pub line: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Pm {
    pub callbacks: Vec<EntryPoint>,
    /// A save side (suspend/freeze/poweroff) and a restore side
    /// (resume/thaw/restore) exist.
    pub checkpoint: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ApiNeed {
    pub name: String,
    /// How many entry points reach a call to it.
    pub entry_points: usize,
    /// `file:line` of its first call.
    pub at: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct HintNeed {
    /// `struct.field`
    pub field: String,
    /// `blob(LEN)` or `nullterm`
    pub hint: String,
    /// Uses that need it: `index`, `arith`, `str`.
    pub uses: Vec<UseKind>,
    /// `file:line` of the first such use.
    pub at: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct BrokenFn {
    pub function: String,
    pub file: String,
    pub line: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileFailure {
    pub file: String,
    pub line: usize,
    pub kind: FailKind,
    pub message: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ParseHealth {
    /// Top-level C functions (and Rust vtable methods).
    pub functions: usize,
    /// Functions holding ERROR or MISSING nodes.
    pub broken: Vec<BrokenFn>,
    /// ERROR/MISSING nodes outside every function.
    pub stray_errors: usize,
    pub failed_files: Vec<FileFailure>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModuleReport {
    pub name: String,
    pub kind: UnitKind,
    pub configs: Vec<String>,
    pub makefile: Option<String>,
    pub files: Vec<String>,
    pub rust: bool,
    /// Driver functions stored in slots, by slot kind.
    pub entry_points: BTreeMap<String, Vec<EntryPoint>>,
    /// Kernel (library) functions stored in the driver's slots: not entry
    /// points of this driver.
    pub library_slots: usize,
    pub pm: Pm,
    pub unknown_apis: Vec<ApiNeed>,
    pub hints: Vec<HintNeed>,
    pub parse: ParseHealth,
    pub verdict: Verdict,
    pub reasons: Vec<String>,
    /// Per isolation profile (`--profile`): whether split with that
    /// profile and no sidecar accepts the module (profile.rs).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub profiles: BTreeMap<String, crate::profile::ProfileVerdict>,
}

impl ModuleReport {
    pub fn entry_count(&self) -> usize {
        self.entry_points.values().map(Vec::len).sum()
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    pub files: usize,
    pub c_files: usize,
    pub rust_files: usize,
    pub bytes: usize,
    pub modules: usize,
    pub builtin: usize,
    pub unassigned_files: usize,
    pub functions: usize,
    pub broken_functions: usize,
    /// Share of functions with no ERROR/MISSING node, in percent (two
    /// decimals).
    pub clean_percent: f64,
    pub failed_files: BTreeMap<String, usize>,
    pub entry_points: usize,
    pub verdicts: BTreeMap<String, usize>,
}

/// The whole survey.
#[derive(Debug, Clone, Serialize)]
pub struct Survey {
    pub schema: &'static str,
    pub tree: String,
    pub totals: Totals,
    pub modules: Vec<ModuleReport>,
}

fn rel(s: &FileSummary) -> String {
    s.path.to_string_lossy().replace('\\', "/")
}

/// A header's name in the report: relative to the tree when under it.
fn header_name(tree: &Path, p: &Path) -> String {
    let shown = p.strip_prefix(tree).unwrap_or(p);
    fgft_base::makefile::normalize(&shown.to_string_lossy().replace('\\', "/"))
}

fn is_save(field: &str) -> bool {
    ["suspend", "freeze", "poweroff"]
        .iter()
        .any(|w| field.contains(w))
}

fn is_restore(field: &str) -> bool {
    ["resume", "thaw", "restore"]
        .iter()
        .any(|w| field.contains(w))
}

/// Adds `name`'s definitions to `fns` (once): those of the module's files,
/// then its headers' (in order).
fn define_fn<'a>(
    fns: &mut HashMap<&'a str, Vec<(String, &'a FnSum)>>,
    file_fns: &BTreeMap<&'a str, Vec<(String, &'a FnSum)>>,
    headers: &[(String, &'a Arc<HeaderInfo>)],
    name: &'a str,
) {
    fns.entry(name).or_insert_with(|| {
        let mut v = file_fns.get(name).cloned().unwrap_or_default();
        for (hn, h) in headers {
            for f in h.functions_named(name) {
                v.push((hn.clone(), f));
            }
        }
        v
    });
}

/// Adds the declarations of members named `field` to `decls` (once): those
/// of the module's files, then its headers' (in order, no duplicates).
fn declare_field<'a>(
    decls: &mut HashMap<&'a str, Vec<FieldDecl>>,
    file_decls: &BTreeMap<&'a str, Vec<FieldDecl>>,
    headers: &[(String, &'a Arc<HeaderInfo>)],
    field: &'a str,
) {
    decls.entry(field).or_insert_with(|| {
        let mut v = file_decls.get(field).cloned().unwrap_or_default();
        for (_, h) in headers {
            for d in h.fields_named(field) {
                if !v.contains(d) {
                    v.push(d.clone());
                }
            }
        }
        v
    });
}

/// Builds the report of one unit from the summaries of its files.
pub fn module_report(
    tree: &Path,
    unit: &Unit,
    sums: &[&FileSummary],
    apis: &KnownApis,
) -> ModuleReport {
    // Local headers of the module's files, with what they define.
    let mut header_set: BTreeMap<&Path, &Arc<HeaderInfo>> = BTreeMap::new();
    for s in sums {
        for (p, h) in &s.headers {
            header_set.entry(p.as_path()).or_insert(h);
        }
    }
    let headers: Vec<(String, &Arc<HeaderInfo>)> = header_set
        .into_iter()
        .map(|(p, h)| (header_name(tree, p), h))
        .collect();
    // Functions (and macros) of the module's files by name, with where they
    // are defined; its headers' inline functions and macros are added to a
    // name when it is looked up (a header is parsed only when it may define
    // the name).
    let mut file_fns: BTreeMap<&str, Vec<(String, &FnSum)>> = BTreeMap::new();
    for s in sums {
        for f in &s.functions {
            file_fns
                .entry(f.name.as_str())
                .or_default()
                .push((rel(s), f));
        }
    }
    let mut fns: HashMap<&str, Vec<(String, &FnSum)>> = HashMap::new();
    // Entry points.
    let mut entry_points: BTreeMap<String, Vec<EntryPoint>> = BTreeMap::new();
    let mut library_slots = 0;
    let mut seen = BTreeSet::new();
    for s in sums {
        for r in &s.roots {
            let driver_fn = s.lang == Lang::Rust
                || sums.iter().any(|x| {
                    x.functions
                        .iter()
                        .any(|f| !f.is_macro && f.name == r.function)
                });
            if !driver_fn {
                library_slots += 1;
                continue;
            }
            let slot = format!("{}.{}", r.struct_name, r.field);
            if !seen.insert((r.function.clone(), slot.clone())) {
                continue;
            }
            entry_points
                .entry(r.kind.clone())
                .or_default()
                .push(EntryPoint {
                    function: r.function.clone(),
                    slot,
                    file: rel(s),
                    line: r.line,
                });
        }
    }
    for v in entry_points.values_mut() {
        v.sort();
    }
    // PM callbacks.
    let mut callbacks: Vec<EntryPoint> = Vec::new();
    for (kind, eps) in &entry_points {
        for e in eps {
            let field = e.slot.rsplit('.').next().unwrap_or("");
            let pm_field = is_save(field) || is_restore(field);
            if kind == "pm" || ((kind == "bus" || kind == crate::rust::KIND) && pm_field) {
                callbacks.push(e.clone());
            }
        }
    }
    callbacks.sort();
    let field_of = |e: &EntryPoint| e.slot.rsplit('.').next().unwrap_or("").to_string();
    let checkpoint = callbacks.iter().any(|e| is_save(&field_of(e)))
        && callbacks.iter().any(|e| is_restore(&field_of(e)));

    // Closures of the entry points: unknown APIs and member uses.
    let entry_fns: BTreeSet<&str> = entry_points
        .values()
        .flatten()
        .map(|e| e.function.as_str())
        .collect();
    let mut api_reach: BTreeMap<String, (BTreeSet<&str>, String)> = BTreeMap::new();
    let mut closure_all: BTreeSet<&str> = BTreeSet::new();
    for &ep in &entry_fns {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut stack = vec![ep];
        while let Some(f) = stack.pop() {
            if !seen.insert(f) {
                continue;
            }
            define_fn(&mut fns, &file_fns, &headers, f);
            let callees: Vec<&str> = fns[f]
                .iter()
                .flat_map(|(_, d)| d.calls.iter().map(|(c, _)| c.as_str()))
                .collect();
            for c in callees {
                define_fn(&mut fns, &file_fns, &headers, c);
            }
            for (s, d) in &fns[f] {
                for (callee, line) in &d.calls {
                    if !fns[callee.as_str()].is_empty() {
                        if !seen.contains(callee.as_str()) {
                            stack.push(callee.as_str());
                        }
                    } else if !apis.contains(callee) {
                        let e = api_reach
                            .entry(callee.clone())
                            .or_insert_with(|| (BTreeSet::new(), format!("{s}:{line}")));
                        e.0.insert(ep);
                        let here = format!("{s}:{line}");
                        if here < e.1 {
                            e.1 = here;
                        }
                    }
                }
            }
        }
        closure_all.extend(seen);
    }
    let unknown_apis: Vec<ApiNeed> = api_reach
        .into_iter()
        .map(|(name, (eps, at))| ApiNeed {
            name,
            entry_points: eps.len(),
            at,
        })
        .collect();

    // Member declarations the module sees: its files and (added to a member
    // name when it is looked up) their headers.
    let mut file_decls: BTreeMap<&str, Vec<FieldDecl>> = BTreeMap::new();
    for d in sums.iter().flat_map(|s| s.fields.iter()) {
        let v = file_decls.entry(d.field.as_str()).or_default();
        if !v.contains(d) {
            v.push(d.clone());
        }
    }
    let mut decls: HashMap<&str, Vec<FieldDecl>> = HashMap::new();
    // Hints: pointer members indexed, moved or read as strings in a closure.
    let mut hints: BTreeMap<String, (BTreeSet<UseKind>, String, bool)> = BTreeMap::new();
    for f in &closure_all {
        for (_, d) in fns.get(f).map(Vec::as_slice).unwrap_or(&[]) {
            for u in &d.field_uses {
                declare_field(&mut decls, &file_decls, &headers, u.field.as_str());
            }
        }
    }
    for f in &closure_all {
        for (s, d) in fns.get(f).map(Vec::as_slice).unwrap_or(&[]) {
            for u in &d.field_uses {
                for decl in decls
                    .get(u.field.as_str())
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
                {
                    let FieldKind::Ptr { pointee } = &decl.kind else {
                        continue;
                    };
                    let key = format!("{}.{}", decl.record, decl.field);
                    let at = format!("{s}:{}", u.line);
                    let charish = pointee.contains("char");
                    let e = hints
                        .entry(key)
                        .or_insert_with(|| (BTreeSet::new(), at.clone(), charish));
                    e.0.insert(u.kind);
                    if at < e.1 {
                        e.1 = at;
                    }
                }
            }
        }
    }
    let hints: Vec<HintNeed> = hints
        .into_iter()
        .map(|(field, (uses, at, charish))| {
            let string =
                uses.contains(&UseKind::Str) || (charish && !uses.contains(&UseKind::Index));
            HintNeed {
                field,
                hint: if string {
                    "nullterm".into()
                } else {
                    "blob(LEN)".into()
                },
                uses: uses.into_iter().collect(),
                at,
            }
        })
        .collect();

    // Parse health.
    let mut functions = 0;
    let mut broken = Vec::new();
    let mut stray_errors = 0;
    let mut failed_files = Vec::new();
    for s in sums {
        stray_errors += s.stray_errors;
        for f in s.functions.iter().filter(|f| !f.is_macro) {
            functions += 1;
            if f.broken {
                broken.push(BrokenFn {
                    function: f.name.clone(),
                    file: rel(s),
                    line: f.line,
                });
            }
        }
        if let Some(fl) = &s.failure {
            failed_files.push(FileFailure {
                file: rel(s),
                line: fl.line,
                kind: fl.kind.clone(),
                message: fl.message.clone(),
            });
        }
    }
    let broken_in_closure: Vec<&BrokenFn> = broken
        .iter()
        .filter(|b| closure_all.contains(b.function.as_str()))
        .collect();

    // Verdict.
    let n_entry: usize = entry_points.values().map(Vec::len).sum();
    let mut reasons = Vec::new();
    if !failed_files.is_empty() {
        reasons.push(format!("{} file(s) not surveyed", failed_files.len()));
    }
    if !broken_in_closure.is_empty() {
        reasons.push(format!(
            "{} function(s) reached from entry points have parse errors",
            broken_in_closure.len()
        ));
    }
    if n_entry > 0 && !checkpoint {
        reasons.push(if callbacks.is_empty() {
            "no PM callbacks: checkpoint/restore must be annotated".into()
        } else {
            "PM callbacks lack a save or a restore side".into()
        });
    }
    if !unknown_apis.is_empty() {
        reasons.push(format!(
            "{} kernel API(s) without a compensation-table entry",
            unknown_apis.len()
        ));
    }
    if !hints.is_empty() {
        reasons.push(format!("{} marshaling hint(s) needed", hints.len()));
    }
    if sums.iter().any(|s| s.lang == Lang::Rust) {
        reasons.push(
            "Rust: kernel calls and marshaling are not analyzed (split adds #[fgft::isolate])"
                .into(),
        );
    }
    let verdict = if n_entry == 0 {
        reasons.insert(0, "no function stored in a kernel slot".into());
        Verdict::NoEntryPoints
    } else if !failed_files.is_empty() || !broken_in_closure.is_empty() {
        Verdict::ParseBlocked
    } else if !checkpoint {
        Verdict::NoCheckpoint
    } else if !unknown_apis.is_empty() || !hints.is_empty() {
        Verdict::NeedsAnnotations
    } else {
        Verdict::Ready
    };

    ModuleReport {
        name: unit.name.clone(),
        kind: unit.kind,
        configs: unit.configs.clone(),
        makefile: unit.makefile.clone(),
        files: sums.iter().map(|s| rel(s)).collect(),
        rust: sums.iter().any(|s| s.lang == Lang::Rust),
        entry_points,
        library_slots,
        pm: Pm {
            callbacks,
            checkpoint,
        },
        unknown_apis,
        hints,
        parse: ParseHealth {
            functions,
            broken,
            stray_errors,
            failed_files,
        },
        verdict,
        reasons,
        profiles: BTreeMap::new(),
    }
}

/// The numbers the totals need of one file.
#[derive(Debug, Clone)]
pub struct FileStat {
    pub lang: Lang,
    pub bytes: usize,
    pub functions: usize,
    pub broken: usize,
    pub failure: Option<FailKind>,
}

impl FileStat {
    pub fn of(s: &FileSummary) -> FileStat {
        let fns = s.functions.iter().filter(|f| !f.is_macro);
        FileStat {
            lang: s.lang,
            bytes: s.bytes,
            functions: fns.clone().count(),
            broken: fns.filter(|f| f.broken).count(),
            failure: s.failure.as_ref().map(|f| f.kind.clone()),
        }
    }
}

/// Totals over all modules and files (each file once).
pub fn totals(files: &[FileStat], modules: &[ModuleReport]) -> Totals {
    let mut t = Totals {
        files: files.len(),
        ..Totals::default()
    };
    for s in files {
        match s.lang {
            Lang::C => t.c_files += 1,
            Lang::Rust => t.rust_files += 1,
        }
        t.bytes += s.bytes;
        t.functions += s.functions;
        t.broken_functions += s.broken;
        if let Some(k) = &s.failure {
            let k = serde_json::to_value(k)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            *t.failed_files.entry(k).or_default() += 1;
        }
    }
    t.clean_percent = if t.functions == 0 {
        100.0
    } else {
        let p = 100.0 * (t.functions - t.broken_functions) as f64 / t.functions as f64;
        (p * 100.0).round() / 100.0
    };
    for m in modules {
        match m.kind {
            UnitKind::Module => t.modules += 1,
            UnitKind::Builtin => t.builtin += 1,
            UnitKind::Unassigned => t.unassigned_files += 1,
        }
        t.entry_points += m.entry_count();
        *t.verdicts.entry(m.verdict.as_str().into()).or_default() += 1;
    }
    t
}

/// The table for people: one row per module, then totals.
/// The verdict, then each profile's (`needs annotations; management: ready`).
fn verdict_cell(m: &ModuleReport) -> String {
    let mut v = m.verdict.as_str().to_string();
    for (p, pv) in &m.profiles {
        if pv.ready {
            v.push_str(&format!("; {p}: ready"));
        } else {
            v.push_str(&format!("; {p}: refused ({})", pv.errors));
        }
    }
    v
}

pub fn render_table(s: &Survey) -> String {
    let headers = [
        "MODULE", "FILES", "ENTRY", "BY KIND", "PM", "APIS", "HINTS", "BROKEN", "VERDICT",
    ];
    let rows: Vec<[String; 9]> = s
        .modules
        .iter()
        .map(|m| {
            let by_kind = m
                .entry_points
                .iter()
                .map(|(k, v)| format!("{k}:{}", v.len()))
                .collect::<Vec<_>>()
                .join(" ");
            let name = match m.kind {
                UnitKind::Module => m.name.clone(),
                UnitKind::Builtin => format!("{} (built-in)", m.name),
                UnitKind::Unassigned => format!("{} (no makefile)", m.name),
            };
            let pm = if m.pm.checkpoint {
                "yes".to_string()
            } else if m.pm.callbacks.is_empty() {
                "-".to_string()
            } else {
                "partial".to_string()
            };
            let broken = m.parse.broken.len() + m.parse.failed_files.len();
            [
                name,
                m.files.len().to_string(),
                m.entry_count().to_string(),
                if by_kind.is_empty() {
                    "-".into()
                } else {
                    by_kind
                },
                pm,
                m.unknown_apis.len().to_string(),
                m.hints.len().to_string(),
                broken.to_string(),
                verdict_cell(m),
            ]
        })
        .collect();
    let mut w = headers.map(str::len);
    for r in &rows {
        for (k, c) in r.iter().enumerate() {
            w[k] = w[k].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut out = String::new();
        for (k, c) in cells.iter().enumerate() {
            let pad = w[k].saturating_sub(c.chars().count());
            let numeric = matches!(k, 1 | 2 | 5 | 6 | 7);
            if k > 0 {
                out.push_str("  ");
            }
            if numeric {
                out.push_str(&" ".repeat(pad));
                out.push_str(c);
            } else {
                out.push_str(c);
                if k + 1 < cells.len() {
                    out.push_str(&" ".repeat(pad));
                }
            }
        }
        out.push('\n');
        out
    };
    let mut out = line(&headers.map(String::from));
    for r in &rows {
        out.push_str(&line(r));
    }
    let t = &s.totals;
    out.push('\n');
    out.push_str(&format!(
        "{} files ({} C, {} Rust, {:.1} MB): {} modules, {} built-in, {} files in no module\n",
        t.files,
        t.c_files,
        t.rust_files,
        t.bytes as f64 / 1e6,
        t.modules,
        t.builtin,
        t.unassigned_files
    ));
    out.push_str(&format!(
        "functions: {} ({} with parse errors, {:.2}% clean); entry points: {}\n",
        t.functions, t.broken_functions, t.clean_percent, t.entry_points
    ));
    if !t.failed_files.is_empty() {
        let f: Vec<String> = t
            .failed_files
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        out.push_str(&format!("files not surveyed: {}\n", f.join(", ")));
    }
    let v: Vec<String> = t
        .verdicts
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    out.push_str(&format!("verdicts: {}\n", v.join(", ")));
    out
}

//! The split plan: which functions are isolated entry points, what each
//! one's closure is, how every parameter, object and global crosses into the
//! SFI copy, which kernel calls go through which wrappers, and every problem
//! found on the way (as located diagnostics).
//!
//! Marshaling is by type, as in FGFT: an object of record type `T` that
//! reaches the SFI copy gets the members of `T` that some function of the
//! closure reads or writes (members of embedded structs under their path,
//! the private area of a `net_device` as part of the same copy); members the
//! closure writes are copied back at commit.  Members that are both copied
//! in and out are exactly the written ones: a written member is also copied
//! in so a path that does not write it leaves the original value.

pub mod device;
pub mod table;

use crate::diag::Located;
use fgft_annotations::{Access, Annotations, HintKind, HintTarget};
use fgft_facts::access::{AccessKind, CallTarget, DriverFacts, PtrUseKind, Relation, Site};
use fgft_facts::apicalls;
use fgft_facts::callgraph::{CallGraph, Closure, Root};
use fgft_facts::ctype::CType;
use fgft_facts::program::{FileId, FnId, Program, TopKind};
use fgft_stubs::{
    AbortReturn, EntrySpec, FieldHow, FieldSpec, GlobalSpec, ParamHow, ParamSpec, Rights, TypeSpec,
};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use table::Table;

/// The role of a file of the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileRole {
    /// A compiled translation unit (its object goes into the module).
    Tu,
    /// A `.c` file #included by another.
    IncludedC,
    Header,
}

/// One file of the driver.
#[derive(Debug, Clone)]
pub struct DriverFile {
    pub role: FileRole,
    /// Path relative to the driver's directory (how OUT names it).
    pub rel: PathBuf,
    /// Path as given / under the tree (for messages).
    pub shown: PathBuf,
    /// `CONFIG_` symbol guarding this object in the upstream Makefile.
    pub config: Option<String>,
    /// For included files: the files that include it.
    pub included_by: Vec<FileId>,
}

/// One isolated entry point.
#[derive(Debug, Clone)]
pub struct EntryPlan {
    pub spec: EntrySpec,
    pub def: FnId,
    pub closure: Closure,
    /// Kernel functions the closure calls (names), sorted.
    pub apis: Vec<String>,
}

/// A slot of the SFI module's table of main-module addresses.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct GtabEntry {
    pub name: String,
    pub is_fn: bool,
    /// File that defines it (its main-module copy fills the slot).
    pub file: FileId,
}

/// The whole plan.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Module name as given (may contain `-`).
    pub module: String,
    /// C identifier derived from the module name.
    pub driver: String,
    pub entries: Vec<EntryPlan>,
    /// Driver functions compiled into the SFI module (union of closures).
    pub sfi_fns: BTreeSet<String>,
    /// Wrapped kernel functions the SFI code calls.
    pub wrapped: BTreeSet<String>,
    /// Main-module functions and globals SFI code refers to by address.
    pub gtab: Vec<GtabEntry>,
    /// Const globals the SFI module keeps its own copy of.
    pub dup_globals: BTreeSet<String>,
    /// Globals marshaled through the object tracker: name -> written.
    pub marshaled_globals: BTreeMap<String, bool>,
    pub kernel_globals: BTreeSet<String>,
    /// Device checkpoint and restore.
    pub device: device::DevicePlan,
    pub diags: Vec<Located>,
}

impl Plan {
    pub fn has_errors(&self) -> bool {
        self.diags.iter().any(|d| !d.warning)
    }
}

/// Everything the planner reads.
pub struct Inputs<'a> {
    pub prog: &'a Program,
    pub files: &'a [DriverFile],
    pub facts: &'a DriverFacts,
    pub graph: &'a CallGraph,
    pub table: &'a Table,
    pub ann: &'a Annotations,
    pub module: String,
    /// Slots (fgft-facts' roots) of every driver file.
    pub roots: &'a [(FileId, fgft_facts::slots::Root)],
    /// Sites already warned about (one warning per site).
    pub reported: std::cell::RefCell<BTreeSet<(FileId, usize)>>,
    /// How device checkpoints are derived from PM code (pm-rules.toml).
    pub pm_rules: &'a fgft_pm::Rules,
    /// `--no-checkpoint`: no device checkpoint, no diagnostic about it.
    pub no_checkpoint: bool,
}

/// `file:line` as messages show it.
pub(crate) fn shown_origin(inp: &Inputs<'_>, file: FileId, line: usize) -> String {
    format!("{}:{line}", inp.files[file].shown.display())
}

fn c_ident(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

impl Inputs<'_> {
    fn diag(
        &self,
        site: &Site,
        warning: bool,
        message: String,
        label: &str,
        notes: Vec<String>,
    ) -> Located {
        let pf = &self.prog.files[site.file];
        Located {
            path: self.files[site.file].shown.clone(),
            text: pf.text.clone(),
            range: site.range.clone(),
            message,
            label: label.to_string(),
            notes,
            warning,
        }
    }

    fn diag_at(
        &self,
        file: FileId,
        range: Range<usize>,
        warning: bool,
        message: String,
        label: &str,
        notes: Vec<String>,
    ) -> Located {
        Located {
            path: self.files[file].shown.clone(),
            text: self.prog.files[file].text.clone(),
            range,
            message,
            label: label.to_string(),
            notes,
            warning,
        }
    }

    fn origin(&self, f: FnId) -> String {
        let d = &self.prog.fns[f];
        format!("{}:{}", self.files[d.file].shown.display(), d.line)
    }
}

/// Record tag without the `struct `/`union ` keyword (as hints name it).
fn bare_tag(t: &CType) -> Option<String> {
    t.record().map(|s| {
        s.trim_start_matches("struct ")
            .trim_start_matches("union ")
            .to_string()
    })
}

/// What the closure does with members of each type.
#[derive(Debug, Default, Clone)]
struct Use {
    read: bool,
    write: bool,
    /// Indexed, sized or used as a string through the member's value.
    array_use: Option<(Site, PtrUseKind)>,
}

#[derive(Default)]
struct Uses {
    /// (base type, member) -> use
    fields: BTreeMap<(CType, String), Use>,
    /// Record types some object of which a kernel call reads or writes as
    /// a whole (`memset(p, 0, sizeof(*p))`, a struct the kernel fills): copied
    /// whole, in and out.
    whole: BTreeSet<CType>,
    /// Embedded members known to be of another type: `FieldOf(struct
    /// pci_dev, "dev")` is a `struct device` (container_of, container hints).
    aliases: BTreeMap<CType, CType>,
    priv_of: BTreeMap<CType, CType>,
    conv: BTreeMap<(CType, String), CType>,
}

impl Uses {
    fn mark(&mut self, base: &CType, field: &str, k: AccessKind) {
        let e = self
            .fields
            .entry((base.clone(), field.to_string()))
            .or_default();
        if k.reads() {
            e.read = true;
        }
        if k.writes() {
            e.write = true;
        }
    }

    /// Members of `base` with a use (read or written), sorted.
    fn members(&self, base: &CType) -> Vec<(String, Use)> {
        self.fields
            .iter()
            .filter(|((b, _), _)| b == base)
            .map(|((_, f), u)| (f.clone(), u.clone()))
            .collect()
    }

    /// Whether anything of `ty` (members, embedded members, private area)
    /// is used.
    fn touches(&self, prog: &Program, ty: &CType, depth: usize) -> bool {
        if depth > 8 {
            return false;
        }
        if self.fields.keys().any(|(b, _)| b == ty) || self.whole.contains(ty) {
            return true;
        }
        if self.priv_of.contains_key(ty) {
            return true;
        }
        // Embedded members of known records.
        if let Some(tag) = ty.record() {
            if let Some(r) = prog.records.get(tag) {
                return r.fields.iter().any(|f| {
                    matches!(f.ty, CType::Record(_)) && self.touches(prog, &f.ty, depth + 1)
                });
            }
        }
        // Members known to be of another type.
        for (a, inner) in &self.aliases {
            if (is_field_of(a, ty) || a == ty) && self.touches(prog, inner, depth + 1) {
                return true;
            }
        }
        // Symbolic members of unknown records.
        self.fields.keys().any(|(b, _)| is_field_of(b, ty))
    }
}

fn is_field_of(b: &CType, ty: &CType) -> bool {
    match b {
        CType::FieldOf(inner, _) => &**inner == ty || is_field_of(inner, ty),
        _ => false,
    }
}

/// Builds the plan.
pub fn build(inp: &Inputs<'_>) -> Plan {
    let prog = inp.prog;
    let mut plan = Plan {
        module: inp.module.clone(),
        driver: c_ident(&inp.module),
        ..Default::default()
    };

    // ---- entry points
    let defined: Vec<&str> = prog
        .fns
        .iter()
        .filter(|f| inp.files[f.file].role != FileRole::Header)
        .map(|f| f.name.as_str())
        .collect();
    let mut seen = BTreeSet::new();
    let mut entry_names: Vec<String> = Vec::new();
    for n in inp.ann.isolated_among(&defined) {
        if seen.insert(n.to_string()) {
            entry_names.push(n.to_string());
        }
    }
    for p in inp.ann.unmatched_patterns(&defined) {
        plan.diags.push(Located {
            path: p.loc.file.clone(),
            text: std::fs::read_to_string(&p.loc.file).unwrap_or_default(),
            range: p.loc.start..p.loc.end,
            message: format!(
                "isolate pattern `{}` matches no function the driver's sources define",
                p.text()
            ),
            label: "matches nothing".into(),
            notes: vec![],
            warning: false,
        });
    }
    check_hint_targets(inp, &mut plan.diags);
    if entry_names.is_empty() && plan.diags.is_empty() {
        plan.diags.push(Located {
            path: PathBuf::from("<command line>"),
            text: String::new(),
            range: 0..0,
            message:
                "nothing to isolate: give --isolate NAME|GLOB or an annotation file with [isolate]"
                    .into(),
            label: String::new(),
            notes: vec![],
            warning: false,
        });
        return plan;
    }

    // Value references of driver functions (slots): from file scope and
    // from function bodies.
    let file_refs = file_scope_fn_refs(prog);

    for name in &entry_names {
        let Some(&def) = prog.defs(name).first() else {
            continue;
        };
        let closure = Closure::of(inp.facts, inp.graph, name);
        let e = plan_entry(inp, &mut plan, def, closure, &file_refs);
        if let Some(e) = e {
            plan.entries.push(e);
        }
    }

    // ---- SFI-wide facts
    for e in &plan.entries {
        plan.sfi_fns.extend(e.closure.fns.iter().cloned());
    }
    // Closure functions defined in headers are compiled where they are; the
    // others are renamed into the SFI module.
    let mut gtab: BTreeSet<GtabEntry> = BTreeSet::new();
    let mut kapis: BTreeSet<String> = BTreeSet::new();
    for f in plan.sfi_fns.clone() {
        let Some(ff) = inp.facts.per_fn.get(&f) else {
            continue;
        };
        for (r, _site) in &ff.fn_refs {
            if let Some(d) = prog.def(r) {
                gtab.insert(GtabEntry {
                    name: r.clone(),
                    is_fn: true,
                    file: d.file,
                });
            }
        }
        for c in &ff.calls {
            if let CallTarget::Kernel(k) = &c.target {
                kapis.insert(k.clone());
            }
        }
        for g in &ff.globals {
            if plan.dup_globals.contains(&g.name) {
                continue;
            }
            if let Some(gd) = prog.global_def(&g.name) {
                if sfi_dup_ok(prog, &g.name, &plan.sfi_fns) {
                    plan.dup_globals.insert(g.name.clone());
                    continue;
                }
                gtab.insert(GtabEntry {
                    name: g.name.clone(),
                    is_fn: false,
                    file: gd.file,
                });
            }
        }
    }
    // Dependencies of duplicated const globals (other const globals).
    let mut more: Vec<String> = plan.dup_globals.iter().cloned().collect();
    while let Some(g) = more.pop() {
        for dep in global_init_refs(prog, &g) {
            if prog.global_def(&dep).is_some() && plan.dup_globals.insert(dep.clone()) {
                more.push(dep);
            }
        }
    }
    plan.gtab = gtab.into_iter().collect();
    for k in kapis {
        if let Some(a) = inp.table.apis.get(&k) {
            if !a.inline {
                plan.wrapped.insert(k);
            }
        }
    }
    for e in &plan.entries {
        for g in &e.spec.globals {
            let w = plan
                .marshaled_globals
                .entry(g.name.clone())
                .or_insert(false);
            *w |= g.copy_out;
        }
        plan.kernel_globals
            .extend(e.spec.kernel_globals.iter().cloned());
    }
    device::plan(inp, &mut plan);
    plan
}

/// Whether a const global can be duplicated into the SFI module: const, with
/// an initializer that names only functions compiled into the SFI module and
/// const globals that can be duplicated too.
fn sfi_dup_ok(prog: &Program, name: &str, sfi: &BTreeSet<String>) -> bool {
    fn go(prog: &Program, name: &str, sfi: &BTreeSet<String>, seen: &mut BTreeSet<String>) -> bool {
        if !seen.insert(name.to_string()) {
            return true;
        }
        let Some(g) = prog.global_def(name) else {
            return false;
        };
        if !g.is_const {
            return false;
        }
        prog.init_refs(name).iter().all(|r| {
            if prog.is_fn(r) {
                sfi.contains(r)
            } else {
                go(prog, r, sfi, seen)
            }
        })
    }
    go(prog, name, sfi, &mut BTreeSet::new())
}

/// Identifiers a global's initializer names that are driver functions or
/// globals.
pub fn global_init_refs(prog: &Program, name: &str) -> Vec<String> {
    prog.init_refs(name)
}

/// Every use of a driver function's name as a value at file scope
/// (initializers, macro statements): name -> (file, range).
pub fn file_scope_fn_refs(prog: &Program) -> BTreeMap<String, Vec<(FileId, Range<usize>)>> {
    let mut out: BTreeMap<String, Vec<(FileId, Range<usize>)>> = BTreeMap::new();
    for (fid, items) in prog.top.iter().enumerate() {
        let pf = &prog.files[fid];
        for it in items {
            match &it.kind {
                TopKind::Variables(_) | TopKind::MacroStmt(_) | TopKind::Other => {}
                _ => continue,
            }
            let root = pf.tree.root_node();
            let Some(node) = root.descendant_for_byte_range(it.range.start, it.range.end) else {
                continue;
            };
            let mut stack = vec![node];
            while let Some(n) = stack.pop() {
                if n.kind() == "identifier" {
                    let t = pf.node_text(n);
                    if prog.is_fn(t) {
                        // Skip the declared name of a declarator.
                        let is_decl = n.parent().is_some_and(|p| {
                            p.kind().ends_with("declarator") && p.kind() != "init_declarator"
                        });
                        if !is_decl {
                            out.entry(t.to_string())
                                .or_default()
                                .push((fid, n.byte_range()));
                        }
                    }
                }
                let mut c = n.walk();
                stack.extend(n.named_children(&mut c));
            }
        }
    }
    out
}

/// Uses of `name` inside the bodies of the driver's `#define`s (ops-table
/// macros such as `AK4531_SINGLE(...)` name the functions they store).
pub fn macro_body_refs(prog: &Program, name: &str) -> Vec<(FileId, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    for (fid, pf) in prog.files.iter().enumerate() {
        if !pf.text.contains(name) {
            continue;
        }
        let mut stack = vec![pf.tree.root_node()];
        while let Some(n) = stack.pop() {
            match n.kind() {
                "preproc_def" | "preproc_function_def" => {
                    if let Some(v) = n.child_by_field_name("value") {
                        let body = &pf.text[v.byte_range()];
                        let mut k = 0;
                        while let Some(i) = body[k..].find(name) {
                            let a = k + i;
                            let b = a + name.len();
                            let ok_before = a == 0 || {
                                let c = body.as_bytes()[a - 1];
                                !(c == b'_' || c.is_ascii_alphanumeric())
                            };
                            let ok_after = b >= body.len() || {
                                let c = body.as_bytes()[b];
                                !(c == b'_' || c.is_ascii_alphanumeric() || c == b'(')
                            };
                            if ok_before && ok_after {
                                out.push((fid, v.start_byte() + a..v.start_byte() + b));
                            }
                            k = b;
                        }
                    }
                }
                "function_definition" => {}
                _ => {
                    let mut c = n.walk();
                    stack.extend(n.named_children(&mut c));
                }
            }
        }
    }
    out
}

/// Value references to a driver function from inside function bodies.
fn body_fn_refs(inp: &Inputs<'_>, name: &str) -> Vec<Site> {
    let mut out = Vec::new();
    for ff in inp.facts.per_fn.values() {
        for (r, s) in &ff.fn_refs {
            if r == name {
                out.push(s.clone());
            }
        }
    }
    out
}

/// Slots whose callers read the return value as something other than an
/// error code, and what an aborted call returns there: `$N` is the entry's
/// parameter N (1-based).
const SLOT_ABORTS: &[(&str, &str, &str)] = &[
    // A NAPI poll returns the work it did.  An aborted poll did not
    // complete (napi_complete_done is deferred to commit), so it still owns
    // the context: "the whole budget" makes NAPI poll it again, where 0
    // would leave it scheduled and never polled, and a negative value is
    // taken as work done.
    ("napi_struct.poll", "$2", "the budget: NAPI polls again"),
    // dev_get_stats() dereferences what ndo_get_stats returns; without the
    // callback it reads the net_device's own counters, so an aborted call
    // returns those rather than NULL.
    (
        "net_device_ops.ndo_get_stats",
        "&$1->stats",
        "the net_device's own counters",
    ),
];

/// The abort value the slots of an entry call for, if any.
fn slot_abort(slots: &[String], d: &fgft_facts::program::FnDef) -> Option<AbortReturn> {
    for (slot, value, _why) in SLOT_ABORTS {
        if !slots.iter().any(|s| s == slot) {
            continue;
        }
        // `$N` (one digit) anywhere in the value is parameter N's name.
        let mut v = String::new();
        let mut chars = value.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, chars.peek().and_then(|n| n.to_digit(10))) {
                ('$', Some(k)) => {
                    chars.next();
                    v.push_str(&d.params.get((k as usize).checked_sub(1)?)?.name);
                }
                _ => v.push(c),
            }
        }
        return Some(AbortReturn::Value(v));
    }
    None
}

fn abort_for(ret: &CType, ret_text: &str) -> AbortReturn {
    let t = ret_text.trim();
    if t == "void" {
        return AbortReturn::Void;
    }
    if matches!(ret, CType::Ptr(_)) || t.ends_with('*') {
        return AbortReturn::Value("NULL".into());
    }
    const SIGNED: &[&str] = &[
        "int",
        "long",
        "long int",
        "signed int",
        "signed long",
        "s32",
        "s64",
        "ssize_t",
        "s16",
        "s8",
        "short",
        "long long",
    ];
    let core = t
        .trim_start_matches("static ")
        .trim_start_matches("const ")
        .trim();
    if SIGNED.contains(&core) {
        return AbortReturn::Error;
    }
    match core {
        "irqreturn_t" => AbortReturn::Value("IRQ_NONE".into()),
        "netdev_tx_t" => AbortReturn::Value("NETDEV_TX_BUSY".into()),
        "pci_ers_result_t" => AbortReturn::Value("PCI_ERS_RESULT_DISCONNECT".into()),
        "bool" => AbortReturn::Value("false".into()),
        _ => AbortReturn::Value("0".into()),
    }
}

fn plan_entry(
    inp: &Inputs<'_>,
    plan: &mut Plan,
    def: FnId,
    closure: Closure,
    file_refs: &BTreeMap<String, Vec<(FileId, Range<usize>)>>,
) -> Option<EntryPlan> {
    let prog = inp.prog;
    let d = &prog.fns[def];
    let name = d.name.clone();
    let mut diags = Vec::new();

    // The entry must sit in a slot, or its stub is unreachable.
    let nrefs = file_refs.get(&name).map(Vec::len).unwrap_or(0)
        + body_fn_refs(inp, &name).len()
        + macro_body_refs(prog, &name).len()
        + inp.roots.iter().filter(|(_, r)| r.function == name).count();
    if nrefs == 0 {
        diags.push(inp.diag_at(
            d.file,
            d.name_range.clone(),
            true,
            format!("`{name}` is isolated but never stored in a slot: its stub will not be called"),
            "not used as a value anywhere",
            vec![],
        ));
    }
    if d.conditional {
        diags.push(inp.diag_at(
            d.file,
            d.name_range.clone(),
            true,
            format!(
                "`{name}` is defined inside #if/#ifdef: its stub is not, so a configuration without the definition does not build"
            ),
            "conditional definition",
            vec![],
        ));
    }
    if d.variadic {
        diags.push(inp.diag_at(
            d.file,
            d.name_range.clone(),
            false,
            format!("`{name}` is variadic: fgft cannot isolate variadic entry points"),
            "variadic",
            vec![],
        ));
    }

    // ---- closure checks
    for f in &closure.fns {
        let Some(&fd) = prog.defs(f).first() else {
            continue;
        };
        let fdef = &prog.fns[fd];
        if inp.files[fdef.file].role == FileRole::Header
            && f != &name
            && inp
                .reported
                .borrow_mut()
                .insert((fdef.file, fdef.range.start))
        {
            diags.push(inp.diag_at(
                fdef.file,
                fdef.name_range.clone(),
                true,
                format!(
                    "`{f}` (reached from `{name}`) is defined in a header: it is compiled into the SFI module as written, so its kernel calls do not go through wrappers"
                ),
                "defined in a header",
                vec![],
            ));
        }
        if let Some(ff) = inp.facts.per_fn.get(f) {
            for s in &ff.local_statics {
                if !inp.reported.borrow_mut().insert((s.file, s.range.start)) {
                    continue;
                }
                diags.push(inp.diag(
                    s,
                    true,
                    format!("`{f}` (reached from `{name}`) has a static local: the SFI copy has its own, which is not transactional"),
                    "static local",
                    vec![],
                ));
            }
        }
    }
    for c in &closure.indirect {
        let CallTarget::Indirect(expr) = &c.target else {
            continue;
        };
        // One warning per call site, whatever the entries that reach it.
        let key = (c.at.file, c.at.range.start);
        if !inp.reported.borrow_mut().insert(key) {
            continue;
        }
        diags.push(inp.diag(
            &c.at,
            true,
            format!(
                "call through a pointer (`{expr}`) in `{}`, which isolated entry points reach (first: `{name}`): the target runs outside isolation, unchecked",
                c.at.func
            ),
            "indirect call",
            vec!["if the target is a driver function, call it directly or isolate it separately".into()],
        ));
    }

    // ---- kernel calls
    let uses = apicalls::kernel_calls(inp.facts, &closure);
    let mut apis = Vec::new();
    for u in &uses {
        apis.push(u.name.clone());
        if inp.table.knows(&u.name) || inp.ann.is_pure(&u.name) {
            if let Some(e) = inp.table.apis.get(&u.name) {
                if !e.inline && !e.variadic {
                    // Arity check at every site.
                    for s in &u.sites {
                        if let Some(ff) = inp.facts.per_fn.get(&s.func) {
                            if let Some(c) = ff.calls.iter().find(|c| {
                                c.at == *s && c.target == CallTarget::Kernel(u.name.clone())
                            }) {
                                if c.args.len() != e.params.len() && c.via_macro.is_none() {
                                    diags.push(inp.diag(
                                        s,
                                        false,
                                        format!(
                                            "`{}` called with {} arguments; the compensation table's prototype has {}",
                                            u.name,
                                            c.args.len(),
                                            e.params.len()
                                        ),
                                        "arity differs from the table",
                                        vec![format!("table prototype from {}", e.source.display())],
                                    ));
                                }
                            }
                        }
                    }
                }
            }
            continue;
        }
        let site = &u.sites[0];
        let via = if u.via_macro.is_empty() {
            String::new()
        } else {
            format!(" (inside macro `{}`)", u.via_macro.join("`, `"))
        };
        diags.push(inp.diag(
            site,
            false,
            format!(
                "kernel function `{}` is called from the closure of isolated `{name}`{via} but has no entry in the compensation table",
                u.name
            ),
            "unknown kernel function",
            vec![
                format!(
                    "add [api.{}] to a compensations.toml in FGFT_TABLES or --tables, or declare it side-effect free: [kernel-api] pure = [\"{}\"] (or FGFT_PURE({});)",
                    u.name, u.name, u.name
                ),
                format!("called {} time(s) in this closure", u.sites.len()),
            ],
        ));
    }

    // ---- field accesses over the closure
    let mut uses_t = Uses::default();
    for f in &closure.fns {
        let Some(ff) = inp.facts.per_fn.get(f) else {
            continue;
        };
        for a in &ff.accesses {
            match a.kind {
                AccessKind::Read | AccessKind::Write | AccessKind::ReadWrite => {
                    uses_t.mark(&a.base, &a.field, a.kind)
                }
                AccessKind::Addr | AccessKind::Embed => {
                    uses_t
                        .fields
                        .entry((a.base.clone(), a.field.clone()))
                        .or_default();
                }
            }
        }
        for r in &ff.relations {
            match r {
                Relation::Priv { of, ty } => {
                    uses_t.priv_of.insert(of.clone(), ty.clone());
                }
                Relation::Conv { base, field, to } => {
                    uses_t
                        .conv
                        .insert((base.clone(), field.clone()), to.clone());
                }
                Relation::Container {
                    inner,
                    outer,
                    member,
                } if inner.is_recordish() => {
                    uses_t.aliases.insert(
                        CType::FieldOf(Box::new(prog.resolve(outer)), member.clone()),
                        inner.clone(),
                    );
                }
                _ => {}
            }
        }
    }
    // Pointer uses resolved to the entry: through member addresses they are
    // member accesses; through member values they are uses of the target.
    let mut param_uses: BTreeMap<usize, Vec<(Site, PtrUseKind, AccessKind, CType)>> =
        BTreeMap::new();
    let mut global_writes: BTreeSet<String> = BTreeSet::new();
    for (roots, u) in closure.ptr_uses(inp.facts) {
        for r in roots {
            match r {
                Root::FieldAddr(b, f) => {
                    let k = match u.access {
                        AccessKind::Addr | AccessKind::Embed => AccessKind::ReadWrite,
                        k => k,
                    };
                    uses_t.mark(&b, &f, k);
                }
                Root::FieldVal(b, f) => {
                    if let (PtrUseKind::Sized(_), CType::Ptr(t)) =
                        (&u.kind, prog.field_type(&b, &f))
                    {
                        let t = prog.resolve(&t);
                        if t.is_recordish() {
                            uses_t.whole.insert(t);
                            uses_t.mark(&b, &f, AccessKind::Read);
                            continue;
                        }
                    }
                    let known_array = matches!(prog.field_type(&b, &f), CType::Array(..));
                    let unknown =
                        matches!(prog.field_type(&b, &f), CType::FieldOf(..) | CType::Unknown);
                    match &u.kind {
                        PtrUseKind::Sized(_) | PtrUseKind::Str | PtrUseKind::Subscript0
                            if known_array || unknown =>
                        {
                            uses_t.mark(&b, &f, u.access);
                            if unknown {
                                let e = uses_t.fields.entry((b.clone(), f.clone())).or_default();
                                if e.array_use.is_none() {
                                    e.array_use = Some((u.at.clone(), u.kind.clone()));
                                }
                            }
                        }
                        PtrUseKind::Index
                        | PtrUseKind::Arith
                        | PtrUseKind::Sized(_)
                        | PtrUseKind::Str => {
                            if known_array {
                                uses_t.mark(&b, &f, u.access);
                            } else if unknown {
                                uses_t.mark(&b, &f, u.access);
                                let e = uses_t.fields.entry((b.clone(), f.clone())).or_default();
                                if e.array_use.is_none() {
                                    e.array_use = Some((u.at.clone(), u.kind.clone()));
                                }
                            } else {
                                let e = uses_t.fields.entry((b.clone(), f.clone())).or_default();
                                e.read = true;
                                if e.array_use.is_none() {
                                    e.array_use = Some((u.at.clone(), u.kind.clone()));
                                }
                            }
                        }
                        PtrUseKind::Deref | PtrUseKind::Subscript0 => {
                            if known_array {
                                uses_t.mark(&b, &f, u.access);
                            }
                        }
                    }
                }
                Root::EntryParam(k) => {
                    if let (PtrUseKind::Sized(_), Some(CType::Ptr(t))) = (
                        &u.kind,
                        prog.fns[def].params.get(k).map(|p| prog.resolve(&p.ty)),
                    ) {
                        if t.is_recordish() {
                            uses_t.whole.insert((*t).clone());
                            continue;
                        }
                    }
                    param_uses.entry(k).or_default().push((
                        u.at.clone(),
                        u.kind.clone(),
                        u.access,
                        u.ty.clone(),
                    ));
                }
                Root::Global(g) | Root::GlobalAddr(g) => {
                    if u.access.writes() {
                        global_writes.insert(g);
                    }
                }
                Root::Fresh | Root::Stack => {}
            }
        }
    }

    // Container hints on parameters: the member is of the parameter's type.
    for p in &d.params {
        for h in inp.ann.param_hints(&name, &p.name) {
            if let (HintKind::Container { outer, member }, CType::Ptr(inner)) = (&h.kind, &p.ty) {
                let o = if outer.starts_with("struct ") || outer.starts_with("union ") {
                    outer.clone()
                } else {
                    format!("struct {outer}")
                };
                uses_t.aliases.insert(
                    CType::FieldOf(Box::new(CType::Record(o)), member.clone()),
                    (**inner).clone(),
                );
            }
        }
    }

    // ---- types and parameters
    let mut b = TypeBuilder {
        inp,
        uses: &uses_t,
        types: Vec::new(),
        index: BTreeMap::new(),
        diags: Vec::new(),
        entry: name.clone(),
    };
    let mut params = Vec::new();
    for (k, p) in d.params.iter().enumerate() {
        let hints: Vec<&fgft_annotations::Hint> = inp.ann.param_hints(&name, &p.name).collect();
        let pu = param_uses.get(&k).cloned().unwrap_or_default();
        let how = b.param(d, k, &hints, &pu);
        params.push(ParamSpec {
            name: p.name.clone(),
            decl: p.text.clone(),
            how,
        });
    }
    diags.append(&mut b.diags);
    let types = b.types;

    // ---- globals
    let mut globals = Vec::new();
    let mut kglobals = BTreeSet::new();
    let mut gnames: BTreeMap<String, (bool, bool)> = BTreeMap::new(); // name -> (copy, written)
    for f in &closure.fns {
        let Some(ff) = inp.facts.per_fn.get(f) else {
            continue;
        };
        kglobals.extend(ff.kernel_globals.iter().cloned());
        for g in &ff.globals {
            if sfi_dup_ok(prog, &g.name, &closure.fns) || prog.global_def(&g.name).is_none() {
                continue;
            }
            let e = gnames.entry(g.name.clone()).or_insert((false, false));
            match g.kind {
                AccessKind::Addr if g.kobj_only => {}
                AccessKind::Write | AccessKind::ReadWrite => {
                    e.0 = true;
                    e.1 = true;
                }
                _ => e.0 = true,
            }
        }
    }
    for (g, (copy, written)) in gnames {
        if copy {
            globals.push(GlobalSpec {
                copy_out: written || global_writes.contains(&g),
                name: g,
            });
        }
    }

    let dev_key = d
        .params
        .iter()
        .find(|p| p.ty.is_pointer())
        .map(|p| p.name.clone())
        .unwrap_or_else(|| "NULL".into());
    let mut slots: Vec<String> = Vec::new();
    for (_, r) in inp.roots.iter().filter(|(_, r)| r.function == name) {
        let sl = format!("{}.{}", r.struct_name, r.field);
        if !slots.contains(&sl) {
            slots.push(sl);
        }
    }
    if let Some(refs) = file_refs.get(&name) {
        for (fid, r) in refs {
            if let Some(s) = slot_name(prog, *fid, r) {
                if !slots.contains(&s) {
                    slots.push(s);
                }
            }
        }
    }
    let abort = slot_abort(&slots, d).unwrap_or_else(|| abort_for(&d.ret, &d.ret_text));
    let spec = EntrySpec {
        driver: plan.driver.clone(),
        name: name.clone(),
        origin: inp.origin(def),
        slots,
        ret: d.ret_text.trim().to_string(),
        abort,
        err: "-EIO".into(),
        params,
        dev_key,
        dev_ops: None,
        types,
        globals,
        kernel_globals: kglobals.into_iter().collect(),
    };
    plan.diags.extend(diags);
    Some(EntryPlan {
        spec,
        def,
        closure,
        apis,
    })
}

/// Every hint names a member of a struct the driver defines (or at least
/// names: kernel structs, whose members fgft does not read) or a parameter
/// of a function it defines; anything else is a located error at the hint.
fn check_hint_targets(inp: &Inputs<'_>, diags: &mut Vec<Located>) {
    let prog = inp.prog;
    for h in &inp.ann.hints {
        let problem = match &h.target {
            HintTarget::Field { strukt, field } => {
                let rec = ["struct", "union"]
                    .iter()
                    .find_map(|k| prog.records.get(&format!("{k} {strukt}")));
                match rec {
                    Some(r) if r.fields.iter().any(|f| f.name == *field) => None,
                    Some(r) => Some((
                        format!("struct {strukt} has no member `{field}`"),
                        format!(
                            "struct {strukt} is defined at {}; its members: {}",
                            shown_origin(inp, r.file, r.line),
                            r.fields
                                .iter()
                                .map(|f| f.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )),
                    None if names_struct(prog, strukt) => None,
                    None => Some((
                        format!("struct {strukt} is neither defined nor used by the driver's sources"),
                        "a hint names a struct (without the `struct` keyword) that the driver's files define or use".into(),
                    )),
                }
            }
            HintTarget::Param { function, param } => match prog.defs(function).first() {
                Some(&d) if prog.fns[d].params.iter().any(|p| p.name == *param) => None,
                Some(&d) => Some((
                    format!("function `{function}` has no parameter `{param}`"),
                    format!(
                        "`{function}` ({}) takes: {}",
                        inp.origin(d),
                        prog.fns[d]
                            .params
                            .iter()
                            .map(|p| p.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )),
                None => Some((
                    format!("function `{function}` is not defined in the driver's sources"),
                    "a parameter hint names a function the driver defines".into(),
                )),
            },
        };
        if let Some((message, note)) = problem {
            diags.push(Located {
                path: h.loc.file.clone(),
                text: std::fs::read_to_string(&h.loc.file).unwrap_or_default(),
                range: h.loc.start..h.loc.end,
                message: format!("{} hint: {message}", h.kind.name()),
                label: "unknown hint target".into(),
                notes: vec![note],
                warning: false,
            });
        }
    }
}

/// True when some driver file spells `struct NAME` or `union NAME`.
fn names_struct(prog: &Program, name: &str) -> bool {
    prog.files.iter().any(|f| {
        ["struct", "union"].iter().any(|k| {
            let needle = format!("{k} {name}");
            f.text.match_indices(&needle).any(|(i, _)| {
                let after = f.text[i + needle.len()..].chars().next();
                let before = f.text[..i].chars().next_back();
                !after.is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
                    && !before.is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
            })
        })
    })
}

/// `struct.field` of the initializer a file-scope reference sits in, when it
/// is a designated initializer.
fn slot_name(prog: &Program, fid: FileId, r: &Range<usize>) -> Option<String> {
    let pf = &prog.files[fid];
    let n = pf
        .tree
        .root_node()
        .descendant_for_byte_range(r.start, r.end)?;
    let pair = n.parent().filter(|p| p.kind() == "initializer_pair")?;
    let field = pair
        .child_by_field_name("designator")
        .map(|d| pf.node_text(d).trim_start_matches('.').to_string())?;
    // Find the declaration's struct type.
    let mut up = pair.parent();
    while let Some(p) = up {
        if p.kind() == "declaration" {
            let ty = p.child_by_field_name("type")?;
            let t = pf.node_text(ty).trim_start_matches("struct ").to_string();
            return Some(format!("{t}.{field}"));
        }
        up = p.parent();
    }
    None
}

struct TypeBuilder<'a, 'b> {
    inp: &'a Inputs<'b>,
    uses: &'a Uses,
    types: Vec<TypeSpec>,
    index: BTreeMap<CType, usize>,
    diags: Vec<Located>,
    entry: String,
}

impl TypeBuilder<'_, '_> {
    fn param(
        &mut self,
        d: &fgft_facts::program::FnDef,
        k: usize,
        hints: &[&fgft_annotations::Hint],
        pu: &[(Site, PtrUseKind, AccessKind, CType)],
    ) -> ParamHow {
        let p = &d.params[k];
        let name = &p.name;
        if let Some(h) = hints.first() {
            return match &h.kind {
                HintKind::NullTerm => ParamHow::Str,
                HintKind::Blob { len } => ParamHow::Blob {
                    len: len.clone(),
                    copy_out: pu.iter().any(|u| u.2.writes()) || !is_const_ptr(&p.text),
                    rights: if pu.iter().any(|u| u.2.writes()) || !is_const_ptr(&p.text) {
                        Rights::RW
                    } else {
                        Rights::R
                    },
                },
                HintKind::Opaque { ty } => ParamHow::Blob {
                    len: format!("sizeof({ty})"),
                    copy_out: !is_const_ptr(&p.text),
                    rights: if is_const_ptr(&p.text) {
                        Rights::R
                    } else {
                        Rights::RW
                    },
                },
                HintKind::NoDeref | HintKind::Recursive => {
                    if let CType::Ptr(t) = &p.ty {
                        if matches!(h.kind, HintKind::Recursive)
                            && self.uses.touches(self.inp.prog, t, 0)
                        {
                            let ty = self.ty(t, format!("parameter `{name}`"));
                            return ParamHow::Obj { ty };
                        }
                    }
                    ParamHow::Value
                }
                HintKind::Shared { len, rights } => ParamHow::Shared {
                    len: len.clone(),
                    rights: shared_rights(*rights),
                },
                HintKind::Container { outer, member } => {
                    let o = if outer.starts_with("struct ") || outer.starts_with("union ") {
                        outer.clone()
                    } else {
                        format!("struct {outer}")
                    };
                    let ot = CType::Record(o);
                    let ty = self.ty(&ot, format!("container of parameter `{name}`"));
                    ParamHow::Container {
                        outer: ty,
                        member: member.clone(),
                    }
                }
            };
        }
        let CType::Ptr(pointee) = &p.ty else {
            return ParamHow::Value;
        };
        // Used as an array or a string: needs a hint.
        let array_use = pu.iter().find(|u| {
            matches!(
                u.1,
                PtrUseKind::Index | PtrUseKind::Arith | PtrUseKind::Sized(_)
            )
        });
        let str_use = pu.iter().find(|u| matches!(u.1, PtrUseKind::Str));
        if let Some((site, kind, _, _)) = array_use.or(str_use) {
            let (hint, what) = if matches!(kind, PtrUseKind::Str) {
                ("kind = \"nullterm\"".to_string(), "read as a string")
            } else {
                (
                    "kind = \"blob\", len = \"<bytes, over the other parameters>\"".to_string(),
                    "used as a buffer",
                )
            };
            let fgft_macro = if matches!(kind, PtrUseKind::Str) {
                "FGFT_NULLTERM".to_string()
            } else {
                "FGFT_BLOB(len)".to_string()
            };
            self.diags.push(self.inp.diag(
                site,
                false,
                format!(
                    "parameter `{name}` of isolated `{}` is {what} here, and fgft cannot tell its size",
                    self.entry
                ),
                "needs a marshaling hint",
                vec![
                    format!(
                        "add to the sidecar: [[hint]] function = \"{}\", param = \"{name}\", {hint}",
                        self.entry
                    ),
                    format!("or inline: `{} {}` in the parameter's declaration", p.text.trim(), fgft_macro),
                ],
            ));
            return ParamHow::Value;
        }
        // A pointer to a member of a bigger object that the function itself
        // converts with container_of (`napi` in a NAPI poll): marshal the
        // container, as a container hint would.
        if let Some((outer, member)) = self.param_container(d, k) {
            let ty = self.ty(&outer, format!("container of parameter `{name}`"));
            return ParamHow::Container { outer: ty, member };
        }
        let mut target = (**pointee).clone();
        if target == CType::Void {
            // A void * converted to a record by the closure.
            let conv = self.inp.facts.per_fn.get(&d.name).and_then(|ff| {
                ff.relations.iter().find_map(|r| match r {
                    Relation::ParamConv { index, to } if *index == k => Some(to.clone()),
                    _ => None,
                })
            });
            match conv {
                Some(t) if t.is_recordish() => target = t,
                _ => {
                    if let Some((site, ..)) = pu.first() {
                        self.diags.push(self.inp.diag(
                            site,
                            false,
                            format!(
                                "parameter `{name}` (void *) of isolated `{}` is dereferenced and fgft cannot tell what it points to",
                                self.entry
                            ),
                            "needs a marshaling hint",
                            vec![format!(
                                "add to the sidecar: [[hint]] function = \"{}\", param = \"{name}\", kind = \"opaque\", type = \"<C type>\" (or kind = \"blob\")",
                                self.entry
                            )],
                        ));
                    }
                    return ParamHow::Value;
                }
            }
        }
        if target.is_recordish() && self.uses.touches(self.inp.prog, &target, 0) {
            let ty = self.ty(&target, format!("parameter `{name}`"));
            return ParamHow::Obj { ty };
        }
        if !pu.is_empty() && !target.is_recordish() {
            // A single scalar through a pointer.
            let ty = self.scalar_obj(&target, &p.text, pu);
            if let Some(ty) = ty {
                return ParamHow::Obj { ty };
            }
        }
        ParamHow::Value
    }

    /// The container (`struct outer`, member) that function `d` converts
    /// its parameter `k` to with container_of, when that is the only
    /// parameter of its type and every such conversion agrees.
    fn param_container(&self, d: &fgft_facts::program::FnDef, k: usize) -> Option<(CType, String)> {
        let prog = self.inp.prog;
        let CType::Ptr(pointee) = &d.params[k].ty else {
            return None;
        };
        let pointee = prog.resolve(pointee);
        if !pointee.is_recordish() {
            return None;
        }
        let same_type = d
            .params
            .iter()
            .filter(|p| matches!(&p.ty, CType::Ptr(t) if prog.resolve(t) == pointee))
            .count();
        if same_type != 1 {
            return None;
        }
        let ff = self.inp.facts.per_fn.get(&d.name)?;
        let mut found: Option<(CType, String)> = None;
        for r in &ff.relations {
            if let Relation::Container {
                inner,
                outer,
                member,
            } = r
            {
                if prog.resolve(inner) != pointee {
                    continue;
                }
                let outer = prog.resolve(outer);
                if !outer.is_recordish() {
                    return None;
                }
                match &found {
                    Some((o, m)) if *o != outer || m != member => return None,
                    _ => found = Some((outer, member.clone())),
                }
            }
        }
        found
    }

    /// A pointer to one scalar (`u32 *data`): copied whole.
    fn scalar_obj(
        &mut self,
        target: &CType,
        _decl: &str,
        pu: &[(Site, PtrUseKind, AccessKind, CType)],
    ) -> Option<usize> {
        if *target == CType::Unknown {
            return None;
        }
        let key = CType::ptr(target.clone());
        if let Some(&i) = self.index.get(&key) {
            return Some(i);
        }
        let writes = pu.iter().any(|u| u.2.writes());
        let i = self.types.len();
        self.index.insert(key, i);
        self.types.push(TypeSpec {
            ident: format!("scalar_{}", target.ident()),
            c_type: target.c_spelling(),
            fields: Vec::new(),
            priv_area: None,
            rights: if writes { Rights::RW } else { Rights::R },
            priv_only: false,
            why: "a value behind a pointer parameter".into(),
        });
        // Whole-value copy: a pseudo member covering the object.
        self.types[i].fields.push(FieldSpec {
            path: String::new(),
            copy_in: true,
            copy_out: writes,
            how: FieldHow::Bytes,
        });
        Some(i)
    }

    /// Index of the marshaled type for `t`, building it on first use.
    fn ty(&mut self, t: &CType, why: String) -> usize {
        if let Some(&i) = self.index.get(t) {
            return i;
        }
        let i = self.types.len();
        self.index.insert(t.clone(), i);
        self.types.push(TypeSpec {
            ident: t.ident(),
            c_type: t.c_spelling(),
            fields: Vec::new(),
            priv_area: None,
            rights: Rights::R,
            priv_only: false,
            why,
        });
        let mut fields = Vec::new();
        let mut writes = false;
        if self.uses.whole.contains(t) {
            fields.push(FieldSpec {
                path: String::new(),
                copy_in: true,
                copy_out: true,
                how: FieldHow::Bytes,
            });
            writes = true;
        }
        self.collect_fields(t, t, "", 0, &mut fields, &mut writes);
        fields.sort_by(|a, b| a.path.cmp(&b.path));
        fields.dedup_by(|a, b| a.path == b.path);
        // Private area.
        if let Some(pt) = self.uses.priv_of.get(t).cloned() {
            let p = self.ty(&pt, format!("private area of {}", t.c_spelling()));
            self.types[p].priv_only = !self.index_is_reached_elsewhere(&pt);
            if self.types[p].rights == Rights::RW {
                writes = true;
            }
            self.types[i].priv_area = Some(p);
        }
        self.types[i].fields = fields;
        if writes {
            self.types[i].rights = Rights::RW;
        }
        i
    }

    fn index_is_reached_elsewhere(&self, _t: &CType) -> bool {
        // A private area is reached through its owner; a pointer to it found
        // elsewhere resolves to the same copy through the object tracker.
        false
    }

    /// Members of `t` used by the closure, with `prefix`; recurses into
    /// embedded records.  `root` is the type of the object being copied.
    fn collect_fields(
        &mut self,
        root: &CType,
        t: &CType,
        prefix: &str,
        depth: usize,
        out: &mut Vec<FieldSpec>,
        writes: &mut bool,
    ) {
        if depth > 8 {
            return;
        }
        let prog = self.inp.prog;
        let members = self.uses.members(t);
        let known = t.record().and_then(|tag| prog.records.get(tag)).cloned();
        // Embedded records of known structs that have used members.
        if let Some(r) = &known {
            for f in &r.fields {
                if let CType::Record(_) = &f.ty {
                    if self.uses.touches(prog, &f.ty, 0)
                        && !members
                            .iter()
                            .any(|(m, u)| m == &f.name && (u.read || u.write))
                    {
                        let pfx = format!("{prefix}{}.", f.name);
                        self.collect_fields(root, &f.ty.clone(), &pfx, depth + 1, out, writes);
                    }
                }
            }
        }
        // Members known (by alias) to be of another type, used or not.
        for (a, inner) in self.uses.aliases.clone() {
            if let CType::FieldOf(b, m) = &a {
                if **b == *t && !m.contains('.') {
                    let pfx = format!("{prefix}{m}.");
                    self.collect_fields(root, &inner, &pfx, depth + 1, out, writes);
                }
            }
        }
        for (m, u) in &members {
            let path = format!("{prefix}{m}");
            let fty = prog.resolve(&prog.field_type(t, m));
            // Embedded symbolic members (`netdev->dev.parent`).
            let sub = CType::FieldOf(Box::new(t.clone()), m.clone());
            let sym_sub = if let CType::FieldOf(..) = fty {
                fty.clone()
            } else {
                sub.clone()
            };
            if !u.read && !u.write {
                // Address taken or embedded only: descend into embedded
                // records; nothing to copy for the member itself.
                if let CType::Record(_) = &fty {
                    if self.uses.touches(prog, &fty, 0) {
                        let pfx = format!("{path}.");
                        self.collect_fields(root, &fty, &pfx, depth + 1, out, writes);
                    }
                } else if known.is_none() || matches!(fty, CType::FieldOf(..)) {
                    let pfx = format!("{path}.");
                    self.collect_fields(root, &sym_sub, &pfx, depth + 1, out, writes);
                }
                continue;
            }
            if u.write {
                *writes = true;
            }
            // Hints on this member.
            let hint =
                bare_tag(t).and_then(|tag| self.inp.ann.field_hints(&tag, m).next().cloned());
            let how = if let Some(h) = &hint {
                match &h.kind {
                    HintKind::NullTerm => FieldHow::Str,
                    HintKind::Blob { len } => {
                        let elem = match &fty {
                            CType::Ptr(target) => {
                                let target = prog.resolve(target);
                                if target.is_recordish() && self.uses.touches(prog, &target, 0) {
                                    Some(self.ty(
                                        &target,
                                        format!("elements of member {m} of {}", t.c_spelling()),
                                    ))
                                } else {
                                    None
                                }
                            }
                            _ => None,
                        };
                        FieldHow::Blob {
                            len: field_len_expr(prog, t, len, prefix),
                            elem,
                        }
                    }
                    HintKind::Opaque { ty } => FieldHow::Blob {
                        len: format!("sizeof({ty})"),
                        elem: None,
                    },
                    HintKind::NoDeref => FieldHow::Assign,
                    HintKind::Shared { len, rights } => FieldHow::Shared {
                        len: field_len_expr(prog, t, len, prefix),
                        rights: shared_rights(*rights),
                    },
                    HintKind::Container { outer, member } => {
                        let o = if outer.starts_with("struct ") || outer.starts_with("union ") {
                            outer.clone()
                        } else {
                            format!("struct {outer}")
                        };
                        let ot = CType::Record(o);
                        let i = self.ty(
                            &ot,
                            format!("container of member {m} of {}", t.c_spelling()),
                        );
                        FieldHow::Container {
                            outer: i,
                            member: member.clone(),
                        }
                    }
                    HintKind::Recursive => self.ptr_how(&fty, t, m, u),
                }
            } else if prog.field(t, m).is_some_and(|f| f.iomem) {
                // An MMIO cookie (`void __iomem *`): C code never dereferences
                // it, the accessor wrappers (ioread32, writel, ...) take it as
                // is, so the pointer value is all the copy needs.
                FieldHow::Assign
            } else if let Some((site, kind)) = &u.array_use {
                if !matches!(fty, CType::Ptr(_)) {
                    // A member of unknown type used as an array: an array.
                    out.push(FieldSpec {
                        path,
                        copy_in: true,
                        copy_out: u.write,
                        how: FieldHow::Bytes,
                    });
                    continue;
                }
                if matches!(fty, CType::Ptr(_)) {
                    let tag = bare_tag(t).unwrap_or_else(|| t.c_spelling());
                    let (what, hint) = if matches!(kind, PtrUseKind::Str) {
                        ("read as a string", "kind = \"nullterm\"".to_string())
                    } else {
                        (
                            "used as an array",
                            "kind = \"blob\", len = \"<bytes, over the struct's members>\""
                                .to_string(),
                        )
                    };
                    self.diags.push(self.inp.diag(
                        site,
                        false,
                        format!(
                            "member `{m}` of `{}` is a pointer {what} in the closure of isolated `{}`, and fgft cannot tell the size of its target",
                            t.c_spelling(),
                            self.entry
                        ),
                        "needs a marshaling hint",
                        vec![format!(
                            "add to the sidecar: [[hint]] struct = \"{tag}\", field = \"{m}\", {hint}"
                        )],
                    ));
                }
                FieldHow::Assign
            } else {
                self.ptr_how(&fty, t, m, u)
            };
            let _ = root;
            out.push(FieldSpec {
                path,
                copy_in: true,
                copy_out: u.write,
                how,
            });
        }
        // Shared memory is granted with every object of the struct that
        // crosses, even when the closure reaches it only through other
        // pointers (bounce buffers pointing into a DMA region).
        if let Some(tag) = bare_tag(t) {
            let shared: Vec<(String, String, Access)> = self
                .inp
                .ann
                .hints
                .iter()
                .filter_map(|h| match (&h.target, &h.kind) {
                    (HintTarget::Field { strukt, field }, HintKind::Shared { len, rights })
                        if *strukt == tag =>
                    {
                        Some((field.clone(), len.clone(), *rights))
                    }
                    _ => None,
                })
                .collect();
            for (field, len, rights) in shared {
                let path = format!("{prefix}{field}");
                if out.iter().any(|f| f.path == path) {
                    continue;
                }
                out.push(FieldSpec {
                    path,
                    copy_in: true,
                    copy_out: false,
                    how: FieldHow::Shared {
                        len: field_len_expr(prog, t, &len, prefix),
                        rights: shared_rights(rights),
                    },
                });
            }
        }
    }

    /// How a read or written member of type `fty` is copied.
    fn ptr_how(&mut self, fty: &CType, base: &CType, m: &str, _u: &Use) -> FieldHow {
        let prog = self.inp.prog;
        match fty {
            CType::Ptr(target) => {
                let mut target = (**target).clone();
                if target == CType::Void || target == CType::Unknown {
                    if let Some(to) = self.uses.conv.get(&(base.clone(), m.to_string())) {
                        target = to.clone();
                    }
                }
                let target = prog.resolve(&target);
                if target.is_recordish() && self.uses.touches(prog, &target, 0) {
                    let i = self.ty(&target, format!("member {m} of {}", base.c_spelling()));
                    FieldHow::Ptr { target: i }
                } else {
                    FieldHow::Assign
                }
            }
            CType::Array(..) => FieldHow::Bytes,
            CType::FieldOf(..)
            | CType::Unknown
            | CType::Named(_)
            | CType::Record(_)
            | CType::PointeeOf(_) => {
                // A member of a kernel struct whose type is not known here
                // (`kcontrol->private_data`) that the closure converts to a
                // typed pointer (`struct chip *c = snd_kcontrol_chip(k)`).
                if let Some(to) = self.uses.conv.get(&(base.clone(), m.to_string())) {
                    let target = prog.resolve(to);
                    if target.is_recordish() && self.uses.touches(prog, &target, 0) {
                        let i = self.ty(&target, format!("member {m} of {}", base.c_spelling()));
                        return FieldHow::Ptr { target: i };
                    }
                }
                // Unknown member type: a pointer whose target is used, or bytes.
                let pointee = CType::PointeeOf(Box::new(if let CType::FieldOf(..) = fty {
                    fty.clone()
                } else {
                    CType::FieldOf(Box::new(base.clone()), m.to_string())
                }));
                if self.uses.touches(prog, &pointee, 0) {
                    let i = self.ty(
                        &pointee,
                        format!("target of member {m} of {}", base.c_spelling()),
                    );
                    FieldHow::Ptr { target: i }
                } else {
                    // Unknown type with no sign of an array: plain assignment
                    // (right for scalars, bit-fields, structs and pointers).
                    FieldHow::Assign
                }
            }
            CType::Scalar(_) | CType::Void | CType::Func => FieldHow::Assign,
        }
    }
}

/// Range-table rights of a shared hint.
fn shared_rights(a: Access) -> Rights {
    match a {
        Access::Read => Rights::R,
        Access::ReadWrite => Rights::RW,
    }
}

fn is_const_ptr(decl: &str) -> bool {
    decl.trim_start().starts_with("const ")
}

/// A field hint's length over `o` (the original object): bare member names
/// and `x->member` spellings become `o->member`.
fn field_len_expr(prog: &Program, t: &CType, len: &str, prefix: &str) -> String {
    let members: BTreeSet<String> = t
        .record()
        .and_then(|tag| prog.records.get(tag))
        .map(|r| r.fields.iter().map(|f| f.name.clone()).collect())
        .unwrap_or_default();
    let mut out = String::new();
    let b = len.as_bytes();
    let mut i = 0;
    let mut prev_sig = String::new();
    while i < b.len() {
        let c = b[i];
        if c == b'_' || c.is_ascii_alphabetic() {
            let st = i;
            while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            let id = &len[st..i];
            let rest = len[i..].trim_start();
            let after_arrow = prev_sig.ends_with("->") || prev_sig.ends_with('.');
            if rest.starts_with("->") && !members.contains(id) {
                let r2 = rest[2..].trim_start();
                let next: String = r2
                    .chars()
                    .take_while(|c| *c == '_' || c.is_ascii_alphanumeric())
                    .collect();
                if members.contains(&next) || members.is_empty() {
                    // `x->member`: the member of the object being copied.
                    out.push_str("o->");
                    out.push_str(prefix);
                    // Skip the `->` (and blanks) that follow.
                    while i < b.len() && b[i] != b'>' {
                        i += 1;
                    }
                    i += 1;
                    while i < b.len() && b[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    prev_sig = "->".into();
                    continue;
                }
            }
            if members.contains(id) && !after_arrow {
                out.push_str("o->");
                out.push_str(prefix);
            }
            out.push_str(id);
            prev_sig = id.to_string();
        } else {
            out.push(c as char);
            if !c.is_ascii_whitespace() {
                prev_sig.push(c as char);
            }
            i += 1;
        }
    }
    out
}

/// Resolves where a path is shown from: relative to the tree when under it.
pub fn shown_path(p: &Path, tree: Option<&Path>) -> PathBuf {
    if let Some(t) = tree {
        if let Ok(r) = p.strip_prefix(t) {
            return r.to_path_buf();
        }
    }
    p.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn len_expr_prefixes_members() {
        let src = "struct a { int n; int *buf; };\n";
        let pf = fgft_parse::parse_text(Path::new("a.h"), src.into()).unwrap();
        let prog = Program::new(vec![pf]);
        let t = CType::Record("struct a".into());
        assert_eq!(field_len_expr(&prog, &t, "n * 4", ""), "o->n * 4");
        assert_eq!(field_len_expr(&prog, &t, "adapter->n", ""), "o->n");
        assert_eq!(
            field_len_expr(&prog, &t, "sizeof(int) * n", ""),
            "sizeof(int) * o->n"
        );
        assert_eq!(field_len_expr(&prog, &t, "n * 4", "in."), "o->in.n * 4");
        assert_eq!(field_len_expr(&prog, &t, "a->n", "in."), "o->in.n");
    }

    #[test]
    fn abort_values() {
        assert_eq!(abort_for(&CType::Void, "void"), AbortReturn::Void);
        assert_eq!(
            abort_for(&CType::Scalar("int".into()), "int"),
            AbortReturn::Error
        );
        assert_eq!(
            abort_for(&CType::Scalar("u32".into()), "u32"),
            AbortReturn::Value("0".into())
        );
        assert_eq!(
            abort_for(&CType::Named("irqreturn_t".into()), "irqreturn_t"),
            AbortReturn::Value("IRQ_NONE".into())
        );
    }
}

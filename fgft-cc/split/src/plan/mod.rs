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

mod abort;
pub mod device;
mod entry;
mod hints;
pub mod icall;
pub mod refs;
pub mod table;
mod types;
mod uses;

use abort::{abort_for, slot_abort, type_restored};
use entry::plan_entry;
use hints::check_hint_targets;
use refs::slot_name;

pub use refs::{Refs, ValueRefs};
use types::TypeBuilder;
use uses::{Use, Uses};

use crate::diag::Located;
use fgft_annotations::Annotations;
use fgft_facts::callgraph::{CallGraph, Closure};
use fgft_facts::ctype::CType;
use fgft_facts::model::{CallTarget, DriverFacts, Site};
use fgft_facts::program::{FileId, FnId, Program};
use fgft_stubs::EntrySpec;
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
    /// Where the entry's name is used as a value (the sites emit re-points
    /// at the stub).
    pub refs: ValueRefs,
    /// Top-level items holding a slot that a macro fills with a name it
    /// pastes together (`DEVICE_ATTR_RO(x)` stores `x_show`): emit brackets
    /// each with a `#define` of the name to the stub.
    pub pasted: Vec<(FileId, Range<usize>)>,
    /// The hints this entry's marshaling applied, each with its source and
    /// where it is stated (`plan.txt` lists them).
    pub hints: std::collections::BTreeSet<String>,
    /// The unit the stub is compiled in when it is not the entry's own: one
    /// that sees every driver record the stub copies.
    pub home: Option<FileId>,
    /// The type of `spec.dev_key` (a pointer; Unknown for none), and the
    /// parameter the key comes from (empty for none).
    pub dev_key_ty: CType,
    pub dev_key_param: String,
    /// Kernel headers the stub's unit must include for the kernel records
    /// its marshaling walks, which the unit's own includes do not define
    /// (minix's namei.c and `struct buffer_head`).
    pub includes: BTreeSet<String>,
}

/// A slot of the SFI module's table of main-module addresses.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct GtabEntry {
    pub name: String,
    pub is_fn: bool,
    /// File that defines it (its main-module copy fills the slot).
    pub file: FileId,
}

/// A use, in SFI code, of a main-module function or global that the SFI
/// module reaches through its address table.
#[derive(Debug, Clone)]
pub struct GtabRef {
    /// The SFI function the use is in.
    pub func: String,
    /// The function or global used.
    pub name: String,
    pub site: Site,
    pub is_fn: bool,
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
    /// Closure functions whose loads are not range-checked (`[isolate]
    /// unchecked-reads`); each makes no store outside its frame.
    pub unchecked_reads: BTreeSet<String>,
    /// Wrapped kernel functions the SFI code calls.
    pub wrapped: BTreeSet<String>,
    /// Wrapped kernel functions that may call back into the driver: they
    /// take a kernel record whose function members the driver stores its
    /// own functions into.  Name -> why (`struct mii_if_info: mdio_read`).
    pub callbacks: BTreeMap<String, String>,
    /// Closure functions the kernel's Module.symvers exports (with --kdir):
    /// their prototypes are in a kernel header the unit includes.
    pub exported_fns: BTreeSet<String>,
    /// Wrapped exports the kernel's inline helpers in SFI code call: the
    /// SFI units declare them with their wrapper's symbol.
    pub relabel: BTreeSet<String>,
    /// Main-module functions and globals SFI code refers to by address.
    pub gtab: Vec<GtabEntry>,
    /// Every use of a `gtab` name in SFI code, by SFI function (sorted),
    /// globals before functions.
    pub gtab_refs: Vec<GtabRef>,
    /// The dispatch sets of the calls through pointers in SFI code.
    pub icall_sets: Vec<icall::IcallSet>,
    /// Every call through a pointer in SFI code, with its set, by file and
    /// position.
    pub icall_uses: Vec<icall::IcallUse>,
    /// Const globals the SFI module keeps its own copy of.
    pub dup_globals: BTreeSet<String>,
    /// Globals marshaled through the object tracker: name -> written.
    pub marshaled_globals: BTreeMap<String, bool>,
    pub kernel_globals: BTreeSet<String>,
    /// Calls the table does not know that the kernel's headers define as
    /// macros or static inlines (compiled into SFI code): name -> what and
    /// where (`static inline of the kernel headers, include/...:N`).
    pub header_calls: BTreeMap<String, String>,
    /// Exported kernel functions SFI code uses as values, not calls
    /// (`jme->jme_rx = netif_receive_skb`): the SFI module references
    /// their address, which is the kernel's own (with --kdir).
    pub kernel_values: BTreeSet<String>,
    /// The driver's own tracepoints SFI code fires (or tests): the call
    /// (`trace_wil6210_log_dbg`) -> the main-module file whose generated
    /// code holds the function that fires it (`fgft_<m>_<call>`, reached
    /// through the address table).
    pub tracepoints: BTreeMap<String, FileId>,
    /// Device checkpoint and restore.
    pub device: device::DevicePlan,
    /// Kernel objects the driver embeds in its own (`container_of`) that
    /// a wrapped allocation returns: its wrapper grants the container too.
    pub containers: Vec<ContainerGrant>,
    /// Some entry point works in place and the driver allocates through
    /// the table's `heap` allocators: the SFI module defines the driver's
    /// heap (runtime.h `struct fgft_heap`) and its in-place entries point
    /// at it.
    pub heap: bool,
    /// The table's allocators and frees with `heap` that the driver's code
    /// calls (when `heap`): the main module's calls go through the heap,
    /// and so do the SFI wrappers'.
    pub heap_apis: BTreeSet<String>,
    pub diags: Vec<Located>,
}

/// `container_of(p, outer, member)` with `p` a `inner *` that wrapped
/// kernel calls return granted (`new_inode()`'s inode, in a
/// `struct minix_inode_info`): every such object of the driver's is
/// embedded, so the wrappers grant the container as well.  Its size and
/// offset come from a SFI unit that sees `outer` (`file`), as data.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ContainerGrant {
    /// `struct inode`.
    pub inner: String,
    /// `struct minix_inode_info`.
    pub outer: String,
    pub member: String,
    /// The driver file of a function that makes the relation.
    pub file: FileId,
    /// The wrapped calls whose grants it extends.
    pub apis: BTreeSet<String>,
}

impl ContainerGrant {
    /// The SFI module's datum: `{ sizeof(outer), offsetof(outer, member) }`.
    pub fn symbol(&self, driver: &str) -> String {
        let inner = self
            .inner
            .trim_start_matches("struct ")
            .trim_start_matches("union ");
        format!(
            "fgft_sfi_{driver}_ctr_{}",
            fgft_base::ident::underscored(inner)
        )
    }
}

impl Plan {
    pub fn has_errors(&self) -> bool {
        self.diags.iter().any(|d| !d.warning)
    }
}

/// What emit reads besides the plan: the driver's parsed files (their
/// text and trees, for the byte edits) and how each is shown and placed.
#[derive(Clone, Copy)]
pub struct Sources<'a> {
    pub prog: &'a Program,
    pub files: &'a [DriverFile],
}

impl Sources<'_> {
    /// A diagnostic at `range` of driver file `file`, shown by its path.
    pub fn located(
        &self,
        file: FileId,
        range: Range<usize>,
        message: String,
        label: &str,
        notes: Vec<String>,
        warning: bool,
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
}

/// Everything the planner reads.
pub struct Inputs<'a> {
    pub prog: &'a Program,
    pub files: &'a [DriverFile],
    pub facts: &'a DriverFacts,
    pub graph: &'a CallGraph,
    pub table: &'a Table,
    /// The slot table (what aborted calls return, by slot and by type).
    pub slots: &'a fgft_facts::slots::SlotTable,
    pub ann: &'a Annotations,
    pub module: String,
    /// Slots (fgft-facts' roots) of every driver file.
    pub roots: &'a [(FileId, fgft_facts::slots::Root)],
    /// How device checkpoints are derived from PM code (pm-rules.toml).
    pub pm_rules: &'a fgft_pm::Rules,
    /// `--no-checkpoint`: no device checkpoint, no diagnostic about it.
    pub no_checkpoint: bool,
    /// What the kernel says the names the driver calls are (with --kdir).
    pub kernel: Option<&'a crate::kernel::Kernel>,
    /// With no kernel: copy kernel members of unknown type by assignment
    /// instead of refusing them ([`crate::Options::guess_kernel_types`]).
    pub guess_kernel_types: bool,
    /// The calls through pointers, resolved (`crate::icall`).
    pub icalls: &'a crate::icall::Icalls,
}

/// `file:line` as messages show it.
pub(crate) fn shown_origin(inp: &Inputs<'_>, file: FileId, line: usize) -> String {
    format!("{}:{line}", inp.files[file].shown.display())
}

impl Inputs<'_> {
    /// A name of the driver that this configuration compiles out (with
    /// --kdir): nothing may refer to it.
    pub(crate) fn compiled_out(&self, name: &str) -> bool {
        self.kernel.is_some_and(|k| k.compiled_out(name))
    }

    pub(crate) fn diag(
        &self,
        site: &Site,
        warning: bool,
        message: String,
        label: &str,
        notes: Vec<String>,
    ) -> Located {
        self.diag_at(
            site.file,
            site.range.clone(),
            warning,
            message,
            label,
            notes,
        )
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
        self.sources()
            .located(file, range, message, label, notes, warning)
    }

    /// The driver's files as emit sees them.
    pub fn sources(&self) -> Sources<'_> {
        Sources {
            prog: self.prog,
            files: self.files,
        }
    }

    fn origin(&self, f: FnId) -> String {
        let d = &self.prog.fns[f];
        format!("{}:{}", self.files[d.file].shown.display(), d.line)
    }
}

/// Record tag without the `struct `/`union ` keyword (as hints name it).
pub(crate) fn bare_tag(t: &CType) -> Option<String> {
    t.record().map(|s| {
        s.trim_start_matches("struct ")
            .trim_start_matches("union ")
            .to_string()
    })
}

/// The record type a container hint names (`outer` as written, with
/// `struct ` added when it has no keyword): the inverse of [`bare_tag`].
fn hint_record(outer: &str) -> CType {
    if outer.starts_with("struct ") || outer.starts_with("union ") {
        CType::Record(outer.to_string())
    } else {
        CType::Record(format!("struct {outer}"))
    }
}

/// Builds the plan.
pub fn build(inp: &Inputs<'_>) -> Plan {
    let prog = inp.prog;
    let mut plan = Plan {
        module: inp.module.clone(),
        driver: fgft_base::ident::underscored(&inp.module),
        ..Default::default()
    };

    let entry_names = entry_names(inp, &mut plan.diags);
    check_hint_targets(inp, &mut plan.diags);
    // Nothing to isolate is an error, also when every pattern only warned
    // (a profile's slots the driver does not fill).
    if entry_names.is_empty() && !plan.diags.iter().any(|d| !d.warning) {
        let text = "--isolate NAME|GLOB\n".to_string();
        plan.diags.push(Located {
            path: PathBuf::from("<command line>"),
            range: 10..19,
            text,
            message:
                "nothing to isolate: no pattern given, or none matches a function of the driver: give --isolate NAME|GLOB|struct.field or an annotation file with [isolate]"
                    .into(),
            label: String::new(),
            notes: vec![],
            warning: false,
        });
        return plan;
    }

    // Value references of driver functions (slots): from file scope and
    // from function bodies.
    let refs = Refs::new(prog);
    let mut reported = entry::Reported::new();

    for name in &entry_names {
        let Some(&def) = prog.defs(name).first() else {
            continue;
        };
        let closure = Closure::of(inp.facts, inp.graph, name);
        let mut diags = Vec::new();
        let e = plan_entry(
            inp,
            &plan.driver,
            &mut reported,
            def,
            closure,
            &refs,
            &mut diags,
        );
        plan.diags.append(&mut diags);
        plan.entries.push(e);
    }

    header_calls(inp, &mut plan);
    sfi_wide(inp, &mut plan);
    plan.kernel_values = kernel_values(inp, &plan.sfi_fns);
    plan.unchecked_reads = unchecked_reads(inp, &plan.sfi_fns, &mut plan.diags);
    plan.containers = container_grants(inp, &plan);
    device::plan(inp, &mut plan);
    plan
}

/// The containers of kernel objects that wrapped calls return granted
/// (see [`ContainerGrant`]); an inner type the driver puts in two
/// different containers gets none.
/// One `container_of(p, outer, member)` of a driver function, `p` a
/// pointer to record `inner` and `outer` a record (typedefs resolved).
pub(super) struct ContainerOf<'a> {
    pub func: &'a str,
    pub inner: &'a str,
    pub outer: CType,
    pub outer_tag: String,
    pub member: &'a str,
}

/// The `container_of` relations the functions `fns` make between records,
/// through a plain member.
pub(super) fn containers_of<'a>(
    inp: &'a Inputs<'_>,
    fns: impl IntoIterator<Item = &'a String>,
) -> Vec<ContainerOf<'a>> {
    let mut out = Vec::new();
    for f in fns {
        let Some(ff) = inp.facts.per_fn.get(f) else {
            continue;
        };
        for r in &ff.relations {
            let fgft_facts::model::Relation::Container {
                inner,
                outer,
                member,
            } = r
            else {
                continue;
            };
            let outer = inp.prog.resolve(outer);
            let (Some(i), Some(o)) = (inner.record(), outer.record()) else {
                continue;
            };
            if !fgft_base::ident::is_ident(member) {
                continue;
            }
            out.push(ContainerOf {
                func: f,
                inner: i,
                outer_tag: o.to_string(),
                outer,
                member,
            });
        }
    }
    out
}

fn container_grants(inp: &Inputs<'_>, plan: &Plan) -> Vec<ContainerGrant> {
    let mut by: BTreeMap<String, Vec<ContainerGrant>> = BTreeMap::new();
    for c in containers_of(inp, &plan.sfi_fns) {
        let (i, o, member) = (c.inner, c.outer_tag, c.member);
        let Some(file) = inp.prog.def(c.func).map(|d| d.file) else {
            continue;
        };
        let apis: BTreeSet<String> = plan
            .wrapped
            .iter()
            .filter(|w| {
                inp.table.apis.get(*w).is_some_and(|e| {
                    e.grant.is_some() && e.ret.replace(' ', "") == format!("{i}*").replace(' ', "")
                })
            })
            .cloned()
            .collect();
        if apis.is_empty() {
            continue;
        }
        by.entry(i.to_string()).or_default().push(ContainerGrant {
            inner: i.to_string(),
            outer: o,
            member: member.to_string(),
            file,
            apis,
        });
    }
    by.into_values()
        .filter_map(|mut v| {
            v.sort();
            let first = v[0].clone();
            v.iter()
                .all(|c| c.outer == first.outer && c.member == first.member)
                .then_some(first)
        })
        .collect()
}

/// Exported kernel functions the SFI functions name but do not call
/// (their address is stored: a call through it runs outside isolation, an
/// indirect call the planner warns about where it is made).
fn kernel_values(inp: &Inputs<'_>, sfi_fns: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Some(k) = inp.kernel else { return out };
    let prog = inp.prog;
    for f in sfi_fns {
        let Some(def) = prog.def(f) else { continue };
        let pf = &prog.files[def.file];
        let Some(body) = pf
            .tree
            .root_node()
            .descendant_for_byte_range(def.body.start, def.body.end)
        else {
            continue;
        };
        let mut stack = vec![body];
        while let Some(n) = stack.pop() {
            let mut c = n.walk();
            for ch in n.named_children(&mut c) {
                stack.push(ch);
            }
            if n.kind() != "identifier" {
                continue;
            }
            let id = pf.node_text(n);
            if !k.is_exported(id) || prog.is_fn(id) || prog.global(id).is_some() {
                continue;
            }
            let called = n.parent().is_some_and(|p| {
                p.kind() == "call_expression"
                    && p.child_by_field_name("function")
                        .is_some_and(|x| x.id() == n.id())
            });
            if !called {
                out.insert(id.to_string());
            }
        }
    }
    out
}

/// What the kernel's headers make of the calls the table does not know
/// (for `plan.txt`).
fn header_calls(inp: &Inputs<'_>, plan: &mut Plan) {
    let Some(k) = inp.kernel else { return };
    for e in &plan.entries {
        for a in &e.apis {
            if inp.table.knows(a) || inp.ann.is_pure(a) || plan.header_calls.contains_key(a) {
                continue;
            }
            let d = match k.classify(a, inp.table, &inp.ann.pure_apis) {
                crate::kernel::Class::Header(d) => d,
                _ => "inside a kernel macro or static inline, checked with it".into(),
            };
            plan.header_calls.insert(a.clone(), d);
        }
    }
}

/// The closure functions `[isolate] unchecked-reads` names.  A pattern
/// that names none, or a function that stores outside its own frame (its
/// stores would go unchecked too), is an error.
fn unchecked_reads(
    inp: &Inputs<'_>,
    sfi_fns: &BTreeSet<String>,
    diags: &mut Vec<Located>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for p in &inp.ann.unchecked_reads {
        let (path, text, range) = crate::diag::at_loc(&p.loc, Some(p.text()));
        let err = |message: String, label: &str| Located {
            path: path.clone(),
            text: text.clone(),
            range: range.clone(),
            message,
            label: label.into(),
            notes: vec![],
            warning: false,
        };
        let named: Vec<&String> = sfi_fns.iter().filter(|f| p.matches(f)).collect();
        if named.is_empty() {
            diags.push(err(
                format!(
                    "unchecked-reads pattern `{}` matches no function an isolated entry point reaches",
                    p.text()
                ),
                "matches nothing",
            ));
        }
        for f in named {
            let Some(ff) = inp.facts.per_fn.get(f) else {
                continue;
            };
            let stores = ff.accesses.iter().any(|a| a.kind.writes())
                || ff.ptr_uses.iter().any(|u| u.access.writes());
            if stores {
                diags.push(err(
                    format!(
                        "`{f}` stores through a pointer: its stores would go unchecked with its loads (unchecked-reads is for functions that only read)"
                    ),
                    "stores",
                ));
            } else {
                out.insert(f.clone());
            }
        }
    }
    out
}

/// The functions to isolate, in the order the annotations give them; an
/// error for every isolate pattern that matches nothing (a warning for a
/// slot pattern that names slots of the table the driver does not fill).
fn entry_names(inp: &Inputs<'_>, diags: &mut Vec<Located>) -> Vec<String> {
    let prog = inp.prog;
    // Every function the driver's sources define, with the slots
    // (`struct.field`) it is stored in: patterns select by name or by slot.
    let mut slots: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (_, r) in inp.roots {
        let v = slots.entry(r.function.as_str()).or_default();
        let sl = format!("{}.{}", r.struct_name, r.field);
        if !v.contains(&sl) {
            v.push(sl);
        }
    }
    let defined: Vec<(&str, Vec<String>)> = prog
        .fns
        .iter()
        .filter(|f| inp.files[f.file].role != FileRole::Header)
        .map(|f| {
            let s = slots.get(f.name.as_str()).cloned().unwrap_or_default();
            (f.name.as_str(), s)
        })
        .collect();
    let mut seen = BTreeSet::new();
    let mut entry_names: Vec<String> = Vec::new();
    for n in inp.ann.isolated_entries(&defined) {
        if seen.insert(n.to_string()) {
            entry_names.push(n.to_string());
        }
    }
    // Every slot of the slot table: a slot pattern that names one is a
    // profile (the driver may not fill it: a warning); one that names none
    // is a mistake.
    let known: Vec<(&str, Vec<String>)> = vec![(
        "",
        inp.slots
            .structs
            .iter()
            .flat_map(|(st, d)| d.functions.iter().map(move |f| format!("{st}.{f}")))
            .collect(),
    )];
    for p in inp.ann.unmatched_entries(&defined) {
        let profile = p.is_slot() && p.matches_entry("", &known[0].1);
        if profile && p.is_profile() {
            // A profile names slots many drivers do not fill.
            continue;
        }
        let (what, notes) = match (p.is_slot(), profile) {
            (true, true) => (
                "no slot a function of the driver's sources is stored in",
                vec![],
            ),
            (true, false) => (
                "no slot of the slot table",
                vec![
                    "slots are `struct.field` of tables/slots.toml (extend it with --tables)"
                        .into(),
                ],
            ),
            _ => ("no function the driver's sources define", vec![]),
        };
        let (path, text, range) = crate::diag::at_loc(&p.loc, Some(p.text()));
        diags.push(Located {
            path,
            text,
            range,
            message: format!("isolate pattern `{}` matches {what}", p.text()),
            label: "matches nothing".into(),
            notes,
            warning: profile,
        });
    }
    entry_names
}

/// The main-module function that fires (or tests) the driver's tracepoint
/// call `call` for SFI code.
pub fn tracepoint_fn(driver: &str, call: &str) -> String {
    format!("fgft_{driver}_{call}")
}

/// The address-table slots of the functions that fire the driver's
/// tracepoints for SFI code, and an error for each tracepoint only driver
/// headers fire (no unit of the closure includes its trace header).
fn tracepoint_slots(
    inp: &Inputs<'_>,
    plan: &mut Plan,
    header_traces: BTreeMap<String, Site>,
    gtab: &mut BTreeSet<GtabEntry>,
) {
    for (call, at) in header_traces {
        if plan.tracepoints.contains_key(&call) {
            continue;
        }
        plan.diags.push(inp.diag(
            &at,
            false,
            format!(
                "the driver's tracepoint `{call}` is fired only from SFI code of driver headers: fgft fires it from the main module's copy of a .c file that includes the trace header, and none calls it"
            ),
            "tracepoint fired from a header",
            vec![format!("fire `{call}` from a function of a .c file of the closure")],
        ));
    }
    for (call, file) in &plan.tracepoints {
        gtab.insert(GtabEntry {
            name: tracepoint_fn(&plan.driver, call),
            is_fn: true,
            file: *file,
        });
    }
}

/// What every entry's SFI code shares: the SFI functions, the address
/// table and its uses, the duplicated const globals, the wrapped kernel
/// functions and the marshaled globals.
fn sfi_wide(inp: &Inputs<'_>, plan: &mut Plan) {
    let prog = inp.prog;
    for e in &plan.entries {
        plan.sfi_fns.extend(e.closure.fns.iter().cloned());
    }
    // Closure functions defined in headers are compiled where they are; the
    // others are renamed into the SFI module.
    let mut gtab: BTreeSet<GtabEntry> = BTreeSet::new();
    let mut kapis: BTreeSet<String> = BTreeSet::new();
    let mut header_traces: BTreeMap<String, Site> = BTreeMap::new();
    for f in plan.sfi_fns.clone() {
        let Some(ff) = inp.facts.per_fn.get(&f) else {
            continue;
        };
        for (r, _site) in &ff.fn_refs {
            if inp.compiled_out(r) {
                continue;
            }
            if let Some(d) = prog.def(r) {
                gtab.insert(GtabEntry {
                    name: r.clone(),
                    is_fn: true,
                    file: d.file,
                });
            }
        }
        // A closure function of a driver header is compiled before the SFI
        // header redirects kernel calls (be2net's be.h inline calls
        // `netif_carrier_off()`): its wrapped calls are relabelled too.
        let in_header = prog
            .def(&f)
            .is_some_and(|d| inp.files[d.file].role == FileRole::Header);
        for c in &ff.calls {
            if let CallTarget::Kernel(k) = &c.target {
                // The driver's own tracepoint fires in the main module, from
                // a unit that includes its trace header (the caller's).
                if !inp.table.knows(k) && prog.tracepoint_call(k).is_some() {
                    let caller = Some(c.at.file);
                    match caller.filter(|&c| inp.files[c].role != FileRole::Header) {
                        Some(file) => {
                            plan.tracepoints.entry(k.clone()).or_insert(file);
                        }
                        None => {
                            header_traces.entry(k.clone()).or_insert(c.at.clone());
                        }
                    }
                    continue;
                }
                if in_header && inp.kernel.is_some_and(|kern| kern.relabels(k, inp.table)) {
                    plan.relabel.insert(k.clone());
                }
                kapis.insert(k.clone());
                // `usb_put_urb` is `#define usb_put_urb usb_free_urb`: the
                // function it names is the one wrapped.
                if let Some(kern) = inp.kernel {
                    kapis.insert(kern.resolve(k).to_string());
                }
            }
        }
        for g in &ff.globals {
            if plan.dup_globals.contains(&g.name) || inp.compiled_out(&g.name) {
                continue;
            }
            if let Some(gd) = prog.global_def(&g.name) {
                // A kernel ops table whose address SFI code takes is handed
                // to the kernel (`inode->i_fop = &minix_dir_operations`):
                // the kernel must get the main module's, not a copy.
                let handed = g.kind == fgft_facts::model::AccessKind::Addr
                    && inp.slots.is_slot_struct(&gd.ty);
                if !handed && sfi_dup_ok(prog, &g.name, &plan.sfi_fns) {
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
        for dep in prog.init_refs(&g) {
            if prog.global_def(&dep).is_some() && plan.dup_globals.insert(dep.clone()) {
                more.push(dep);
            }
        }
    }
    tracepoint_slots(inp, plan, header_traces, &mut gtab);
    icall::dispatches(inp, plan, &mut gtab);
    plan.gtab = gtab.into_iter().collect();
    plan.gtab_refs = gtab_refs(inp, &plan.sfi_fns, &plan.gtab);
    // What the kernel's macros and inline helpers SFI code uses call in
    // their bodies, when it is wrapped.
    if let Some(kern) = inp.kernel {
        for k in kapis.clone() {
            if kern.def(&k).is_none() {
                continue;
            }
            for c in kern.reach(&k) {
                if kern.relabels(&c, inp.table) {
                    plan.relabel.insert(c.clone());
                    kapis.insert(c);
                }
            }
        }
    }
    for k in kapis {
        if let Some(a) = inp.table.apis.get(&k) {
            if !a.inline {
                plan.wrapped.insert(k);
            }
        }
    }
    plan.callbacks = callbacks(inp, &plan.wrapped);
    heap_apis(inp, plan);
    if let Some(k) = inp.kernel {
        plan.exported_fns = plan
            .sfi_fns
            .iter()
            .filter(|f| k.is_exported(f))
            .cloned()
            .collect();
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
    // A global no entry writes, used in place: granted once, read only.
    let in_place: BTreeSet<String> = plan
        .entries
        .iter()
        .filter(|e| e.spec.in_place)
        .flat_map(|e| e.spec.globals.iter().map(|g| g.name.clone()))
        .collect();
    for e in &mut plan.entries {
        for g in &mut e.spec.globals {
            g.mapped = in_place.contains(&g.name) && !plan.marshaled_globals[&g.name];
        }
    }
}

/// The driver's heap: whether there is one (an entry point works in
/// place) and which of the table's `heap` allocators and frees any driver
/// function calls (the macro a call is written as counts as the function
/// it stands for: `kzalloc` is `kzalloc_noprof`'s).
fn heap_apis(inp: &Inputs<'_>, plan: &mut Plan) {
    if !plan.entries.iter().any(|e| e.spec.in_place) {
        return;
    }
    for ff in inp.facts.per_fn.values() {
        for c in &ff.calls {
            let CallTarget::Kernel(k) = &c.target else {
                continue;
            };
            if inp.table.apis.get(k).is_some_and(|a| a.heap.is_some()) {
                plan.heap_apis.insert(k.clone());
            }
        }
    }
    plan.heap = !plan.heap_apis.is_empty();
    let var = format!("fgft_{}_heap", plan.driver);
    for e in plan.entries.iter_mut().filter(|e| e.spec.in_place) {
        e.spec.heap = plan.heap.then(|| var.clone());
    }
}

/// The wrapped kernel functions that may call back into the driver: a
/// parameter points to a kernel record with function members the driver
/// stores its functions into (`mii_ethtool_set_link_ksettings` calls the
/// driver's `mdio_read` through `struct mii_if_info`; needs the kernel's
/// headers, --kdir), or the table says which driver callbacks it calls
/// (`callbacks = ["ndo_stop"]` of `dev_close`) and the driver stores one.
fn callbacks(inp: &Inputs<'_>, wrapped: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for w in wrapped {
        let Some(e) = inp.table.apis.get(w) else {
            continue;
        };
        let mut why = Vec::new();
        for p in e.params.iter().filter(|_| inp.kernel.is_some()) {
            let Some(k) = inp.kernel else { break };
            let t = fgft_facts::ctype::from_text(&p.ty);
            if !t.is_pointer() {
                continue;
            }
            let Some(tag) = bare_tag(&t.pointee()) else {
                continue;
            };
            let fns: Vec<&str> = k
                .fn_members(&tag)
                .filter(|m| inp.icalls.stored_fns.contains_key(*m))
                .collect();
            if !fns.is_empty() {
                why.push(format!("struct {tag}: {}", fns.join(", ")));
            }
        }
        let named: Vec<&str> = e
            .callbacks
            .iter()
            .filter(|m| inp.icalls.stored_fns.contains_key(*m))
            .map(String::as_str)
            .collect();
        if !named.is_empty() {
            why.push(format!("compensations.toml: {}", named.join(", ")));
        }
        if !why.is_empty() {
            out.insert(w.clone(), why.join("; "));
        }
    }
    out
}

/// The uses of address-table names in SFI code (what emit rewrites to
/// table lookups).
fn gtab_refs(inp: &Inputs<'_>, sfi_fns: &BTreeSet<String>, gtab: &[GtabEntry]) -> Vec<GtabRef> {
    let names: BTreeSet<&str> = gtab.iter().map(|g| g.name.as_str()).collect();
    let mut out = Vec::new();
    for f in sfi_fns {
        let Some(ff) = inp.facts.per_fn.get(f) else {
            continue;
        };
        let globals = ff.globals.iter().map(|g| (&g.name, &g.at, false));
        let fns = ff.fn_refs.iter().map(|(r, s)| (r, s, true));
        for (name, site, is_fn) in globals.chain(fns) {
            if names.contains(name.as_str()) {
                out.push(GtabRef {
                    func: f.clone(),
                    name: name.clone(),
                    site: site.clone(),
                    is_fn,
                });
            }
        }
    }
    out
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

/// Resolves where a path is shown from: relative to the tree when under it.
pub fn shown_path(p: &Path, tree: Option<&Path>) -> PathBuf {
    if let Some(t) = tree {
        if let Ok(r) = p.strip_prefix(t) {
            return r.to_path_buf();
        }
    }
    p.to_path_buf()
}

//! Calls through function pointers, resolved at split time.
//!
//! Job: for every call through a pointer in the driver (`ops->f(x)`,
//! `cb(x)` with `cb` a parameter, a local or a global), find every
//! function the pointer can hold: the driver functions stored into that
//! member anywhere in the driver (the slot finder of fgft-facts, run over
//! a table of the driver's own function-pointer members: designated and
//! positional initializers, assignments), the functions passed for that
//! parameter at every call of its function, the functions assigned to that
//! local or global; and the kernel functions stored the same ways.  The
//! driver targets become call-graph edges (`CallSite::targets`), so the
//! closures take them in like direct callees; the whole result goes to the
//! plan, which makes each call site a dispatch (emit).
//!
//! Invariants: a target is only ever a function the driver stores into
//! what the call reads (an over-approximation by member, never by name
//! alone); a site whose pointer comes from somewhere fgft cannot follow
//! (an allocation, the stack) is marked incomplete, and its dispatch
//! aborts on any address it was not told about.

use crate::plan::{DriverFile, FileRole};
use fgft_facts::ctype::CType;
use fgft_facts::model::{CallTarget, DriverFacts, Origin, Site};
use fgft_facts::program::{FileId, Program};
use fgft_facts::slots::{Root, SlotTable, StructDef};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

/// One call through a pointer and what it may call.
#[derive(Debug, Clone)]
pub struct IcallSite {
    /// The call (its function is the one that makes it).
    pub at: Site,
    /// The callee expression's range (what the dispatch wraps).
    pub callee: Range<usize>,
    /// The callee as written.
    pub expr: String,
    /// The call sits in the expansion of a driver macro or of a kernel
    /// helper (its text is the expansion's, which fgft does not rewrite
    /// per use).
    pub in_macro: bool,
    /// That macro or helper.
    pub expansion: Option<String>,
    /// Where the pointer is read from, for plan.txt
    /// (`member pcnet32_access.read_csr`, `parameter 3 of e100_exec_cb`).
    pub from: Vec<String>,
    /// Driver functions it may call in some closure, sorted (what callers
    /// pass for a parameter included; a closure takes those of the callers
    /// it holds).
    pub targets: Vec<String>,
    /// Kernel functions stored where it reads (called through their
    /// wrappers), sorted.
    pub kernel: Vec<String>,
    /// Every place the pointer may come from was followed.
    pub complete: bool,
}

/// Every call through a pointer of the driver, by (file, start).
#[derive(Debug, Clone, Default)]
pub struct Icalls {
    pub sites: BTreeMap<(FileId, usize), IcallSite>,
    /// Member name -> the driver functions the driver stores into a member
    /// of that name (`nic->mii.mdio_read = mdio_read`): what a kernel
    /// function handed the object may call back.
    pub stored_fns: BTreeMap<String, BTreeSet<String>>,
}

impl Icalls {
    /// The resolution of the call at `at`.
    pub fn get(&self, at: &Site) -> Option<&IcallSite> {
        self.sites.get(&(at.file, at.range.start))
    }
}

/// Where a function pointer may come from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    /// A named function (a driver function, or a name that is no variable:
    /// a kernel function).
    Named(String),
    /// A function some caller passes for a parameter (the closure follows
    /// the callers it holds: `Closure::of`).
    Passed(String),
    /// Member `field` of record `tag` (the tag without its keyword).
    Member(String, String),
    /// A driver global.
    Global(String),
    /// Something fgft does not follow.
    Unknown,
}

/// What the driver stores, by name: functions assigned to variables and to
/// members (the kernel candidates; driver functions in members come from
/// the slot finder, which knows the member's record).
#[derive(Default)]
struct Stores {
    /// (function, variable) -> names assigned to it (`fp = f;`,
    /// `T *fp = f;`).
    vars: BTreeMap<(String, String), BTreeSet<String>>,
    /// Member name -> names stored into a member of that name
    /// (`x->f = n`, `.f = n`).
    fields: BTreeMap<String, BTreeSet<String>>,
    /// Member name -> members whose value is copied into a member of that
    /// name (`etd->saved = psmouse->set_rate`: a pointer saved to be
    /// called later), as (record tag, member).
    copies: BTreeMap<String, BTreeSet<(String, String)>>,
}

/// Resolves every call through a pointer in `facts` and records the driver
/// targets in the call sites.  `roots_of` runs the slot finder over the
/// driver's files with a table.
pub fn resolve(
    prog: &Program,
    files: &[DriverFile],
    facts: &mut DriverFacts,
    roots_of: impl Fn(&SlotTable) -> Vec<(FileId, Root)>,
    slots: &SlotTable,
    compiled_out: &dyn Fn(&str) -> bool,
) -> Icalls {
    let stores = stores(prog, facts);
    // The sources of every indirect call.
    let mut per_site: Vec<((FileId, usize), BTreeSet<Source>)> = Vec::new();
    for (f, ff) in &facts.per_fn {
        for c in &ff.calls {
            let Some(callee) = &c.callee else { continue };
            let mut src = BTreeSet::new();
            let mut seen = BTreeSet::new();
            sources(prog, facts, f, &callee.origins, &mut seen, &mut src);
            if let Some(l) = &callee.local {
                for n in stores
                    .vars
                    .get(&(f.clone(), l.clone()))
                    .into_iter()
                    .flatten()
                {
                    src.insert(Source::Named(n.clone()));
                }
            }
            if src.is_empty() {
                src.insert(Source::Unknown);
            }
            // A member the driver copies another member's value into can
            // hold what that one holds.
            let mut work: Vec<String> = src
                .iter()
                .filter_map(|s| match s {
                    Source::Member(_, f) => Some(f.clone()),
                    _ => None,
                })
                .collect();
            let mut done = BTreeSet::new();
            while let Some(f) = work.pop() {
                if !done.insert(f.clone()) {
                    continue;
                }
                for (t, n) in stores.copies.get(&f).into_iter().flatten() {
                    if src.insert(Source::Member(t.clone(), n.clone())) {
                        work.push(n.clone());
                    }
                }
            }
            per_site.push(((c.at.file, c.at.range.start), src));
        }
    }
    // The members read, found with one run of the slot finder.
    let mut members: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, src) in &per_site {
        for s in src {
            if let Source::Member(t, f) = s {
                members.entry(t.clone()).or_default().insert(f.clone());
            }
        }
    }
    let table = member_table(prog, &members, slots);
    let mut in_member: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    if !members.is_empty() {
        for (_, r) in roots_of(&table) {
            in_member
                .entry((r.struct_name.clone(), r.field.clone()))
                .or_default()
                .insert(r.function.clone());
        }
    }
    // Each site's targets.
    let mut out = Icalls::default();
    let by_key: BTreeMap<(FileId, usize), BTreeSet<Source>> = per_site.into_iter().collect();
    for ff in facts.per_fn.values_mut() {
        for c in ff.calls.iter_mut() {
            let Some(src) = by_key.get(&(c.at.file, c.at.range.start)) else {
                continue;
            };
            let CallTarget::Indirect(expr) = &c.target else {
                continue;
            };
            let mut names: BTreeSet<String> = BTreeSet::new();
            let mut passed: BTreeSet<String> = BTreeSet::new();
            let mut from = Vec::new();
            let mut complete = true;
            for s in src {
                match s {
                    Source::Named(n) => {
                        names.insert(n.clone());
                    }
                    Source::Passed(n) => {
                        passed.insert(n.clone());
                    }
                    Source::Member(t, f) => {
                        from.push(format!("member {t}.{f}"));
                        if let Some(v) = in_member.get(&(t.clone(), f.clone())) {
                            names.extend(v.iter().cloned());
                        }
                        // Kernel functions stored into a member of that name.
                        for n in stores.fields.get(f).into_iter().flatten() {
                            if !prog.is_fn(n) {
                                names.insert(n.clone());
                            }
                        }
                    }
                    Source::Global(g) => {
                        from.push(format!("global {g}"));
                        names.extend(prog.init_refs(g));
                        for ((_, v), ns) in &stores.vars {
                            if v == g {
                                names.extend(ns.iter().cloned());
                            }
                        }
                    }
                    Source::Unknown => complete = false,
                }
            }
            if let Some(l) = c.callee.as_ref().and_then(|x| x.local.clone()) {
                from.push(format!("local {l}"));
            }
            if src.iter().any(|s| matches!(s, Source::Passed(_))) {
                from.push("the callers' arguments".into());
            }
            let (mut own, mut kernel) = (Vec::new(), Vec::new());
            let mut all = Vec::new();
            let both = names
                .iter()
                .map(|n| (n, true))
                .chain(passed.iter().map(|n| (n, false)));
            for (n, context_free) in both {
                if compiled_out(n) {
                    continue;
                }
                if prog.is_fn(n) {
                    // Functions of a header are compiled where they are.
                    let in_header = prog
                        .def(n)
                        .is_some_and(|d| files[d.file].role == FileRole::Header);
                    if !in_header {
                        if context_free {
                            own.push(n.clone());
                        }
                        all.push(n.clone());
                    }
                } else if prog.global(n).is_none() && !prog.enumerators.contains(n) {
                    kernel.push(n.clone());
                }
            }
            all.sort();
            all.dedup();
            kernel.sort();
            kernel.dedup();
            // What callers pass is followed per closure, through the callers
            // it holds; the other targets are the call's in every closure.
            c.targets = own;
            let targets = all;
            let pf = &prog.files[c.at.file];
            let callee = pf
                .tree
                .root_node()
                .descendant_for_byte_range(c.at.range.start, c.at.range.end)
                .filter(|n| n.kind() == "call_expression" && n.byte_range() == c.at.range)
                .and_then(|n| n.child_by_field_name("function"))
                .map(|n| n.byte_range());
            let expansion = c.callee.as_ref().and_then(|x| x.expansion.clone());
            let in_macro = expansion.is_some() || c.via_macro.is_some() || callee.is_none();
            from.sort();
            from.dedup();
            out.sites.insert(
                (c.at.file, c.at.range.start),
                IcallSite {
                    at: c.at.clone(),
                    callee: callee.unwrap_or(c.at.range.clone()),
                    expr: expr.clone(),
                    in_macro,
                    expansion: expansion.or_else(|| c.via_macro.clone()),
                    from,
                    targets,
                    kernel,
                    complete,
                },
            );
        }
    }
    for (field, names) in &stores.fields {
        let fns: BTreeSet<String> = names.iter().filter(|n| prog.is_fn(n)).cloned().collect();
        if !fns.is_empty() {
            out.stored_fns.insert(field.clone(), fns);
        }
    }
    out
}

/// The sources of a pointer with `origins` inside function `f`: members,
/// globals, and for a parameter the arguments every direct caller passes
/// (followed back through the callers' own parameters).
fn sources(
    prog: &Program,
    facts: &DriverFacts,
    f: &str,
    origins: &[Origin],
    seen: &mut BTreeSet<(String, usize)>,
    out: &mut BTreeSet<Source>,
) {
    for o in origins {
        match o {
            Origin::FieldVal(t, m) => match record_tag(prog, t) {
                Some(tag) => {
                    out.insert(Source::Member(tag, m.clone()));
                }
                None => {
                    out.insert(Source::Unknown);
                }
            },
            Origin::Global(g) => {
                out.insert(Source::Global(g.clone()));
            }
            Origin::Param(i) => {
                if !seen.insert((f.to_string(), *i)) {
                    continue;
                }
                let mut callers = 0;
                for (h, ff) in &facts.per_fn {
                    for c in &ff.calls {
                        if c.target != CallTarget::Driver(f.to_string()) {
                            continue;
                        }
                        callers += 1;
                        if let Some(Some(n)) = c.arg_names.get(*i) {
                            out.insert(Source::Passed(n.clone()));
                        } else if let Some(a) = c.args.get(*i) {
                            if a.is_empty() {
                                out.insert(Source::Unknown);
                            }
                            sources(prog, facts, h, a, seen, out);
                        } else {
                            out.insert(Source::Unknown);
                        }
                    }
                }
                // A function the kernel calls (stored in a slot, or used as
                // a value) gets pointers fgft cannot see.
                let as_value = facts
                    .per_fn
                    .values()
                    .any(|ff| ff.fn_refs.iter().any(|(r, _)| r == f));
                if callers == 0 || as_value || !prog.fns.iter().any(|d| d.name == f && d.is_static)
                {
                    out.insert(Source::Unknown);
                }
            }
            _ => {
                out.insert(Source::Unknown);
            }
        }
    }
}

/// The tag of a record type (`struct x` -> `x`), typedefs resolved.
fn record_tag(prog: &Program, t: &CType) -> Option<String> {
    crate::plan::bare_tag(&prog.resolve(t))
}

/// A slot table of the members the driver calls through: each record with
/// those function members (positional when the driver defines the record,
/// so `{ f, g }` initializers map by member order).
fn member_table(
    prog: &Program,
    members: &BTreeMap<String, BTreeSet<String>>,
    like: &SlotTable,
) -> SlotTable {
    let mut structs = Vec::new();
    for (tag, fields) in members {
        let rec = ["struct", "union"]
            .iter()
            .find_map(|k| prog.records.get(&format!("{k} {tag}")));
        let def = StructDef {
            kind: "driver".into(),
            positional: rec.is_some(),
            fields: rec
                .map(|r| r.fields.iter().map(|f| f.name.clone()).collect())
                .unwrap_or_default(),
            functions: fields
                .iter()
                .filter(|f| rec.is_none_or(|r| r.fields.iter().any(|x| &x.name == *f)))
                .cloned()
                .collect(),
            ..Default::default()
        };
        structs.push((tag.clone(), def));
    }
    SlotTable::of_structs(structs, like)
}

/// The names the driver assigns to variables and stores into members, and
/// the members it copies into members.
fn stores(prog: &Program, facts: &DriverFacts) -> Stores {
    let mut st = Stores::default();
    for (fid, pf) in prog.files.iter().enumerate() {
        let mut stack = vec![(pf.tree.root_node(), None::<String>)];
        while let Some((n, func)) = stack.pop() {
            let func = if n.kind() == "function_definition" {
                fgft_parse::function_name(pf, n)
                    .map(str::to_string)
                    .or(func)
            } else {
                func
            };
            let mut c = n.walk();
            for ch in n.named_children(&mut c) {
                stack.push((ch, func.clone()));
            }
            let (target, value) = match n.kind() {
                "assignment_expression" => (
                    n.child_by_field_name("left"),
                    n.child_by_field_name("right"),
                ),
                "init_declarator" => (
                    n.child_by_field_name("declarator"),
                    n.child_by_field_name("value"),
                ),
                "initializer_pair" => (
                    n.child_by_field_name("designator"),
                    n.child_by_field_name("value"),
                ),
                _ => continue,
            };
            let (Some(mut t), Some(v)) = (target, value) else {
                continue;
            };
            if t.kind() == "field_expression" && v.kind() == "field_expression" {
                // `x->m = y->n`: the record of `y` from the read's facts.
                let read = func
                    .as_ref()
                    .and_then(|f| facts.per_fn.get(f))
                    .and_then(|ff| {
                        ff.accesses
                            .iter()
                            .find(|a| a.at.file == fid && a.at.range == v.byte_range())
                    });
                let (Some(a), Some(m)) = (read, t.child_by_field_name("field")) else {
                    continue;
                };
                if let Some(tag) = record_tag(prog, &a.base) {
                    st.copies
                        .entry(pf.node_text(m).to_string())
                        .or_default()
                        .insert((tag, a.field.clone()));
                }
                continue;
            }
            let Some(name) = named(pf, v) else { continue };
            if prog.global(&name).is_some() || prog.enumerators.contains(&name) {
                continue;
            }
            match t.kind() {
                "field_expression" => {
                    if let Some(f) = t.child_by_field_name("field") {
                        st.fields
                            .entry(pf.node_text(f).to_string())
                            .or_default()
                            .insert(name);
                    }
                }
                "field_designator" => {
                    let f = pf.node_text(t).trim_start_matches('.').trim().to_string();
                    st.fields.entry(f).or_default().insert(name);
                }
                _ => {
                    // Through the declarator to the variable's name.
                    while matches!(
                        t.kind(),
                        "pointer_declarator"
                            | "function_declarator"
                            | "parenthesized_declarator"
                            | "array_declarator"
                    ) {
                        match t
                            .child_by_field_name("declarator")
                            .or_else(|| t.named_child(0))
                        {
                            Some(x) => t = x,
                            None => break,
                        }
                    }
                    if t.kind() == "identifier" {
                        st.vars
                            .entry((
                                func.clone().unwrap_or_default(),
                                pf.node_text(t).to_string(),
                            ))
                            .or_default()
                            .insert(name);
                    }
                }
            }
        }
    }
    st
}

/// The identifier an initializer or right-hand side names, through casts,
/// parentheses and `&`.
fn named(pf: &fgft_parse::ParsedFile, v: tree_sitter::Node<'_>) -> Option<String> {
    let v = fgft_parse::walk::under_casts(&pf.text, v);
    (v.kind() == "identifier").then(|| pf.node_text(v).to_string())
}

//! The driver's call graph and the closure of an entry point: every driver
//! function it can reach through direct calls (including calls hidden in the
//! driver's macros) and through calls via pointers whose targets are
//! resolved (`CallSite::targets`), with the calls it makes through
//! pointers, and where the
//! pointers handed to each reached function come from, followed back to the
//! entry point's parameters.

use crate::ctype::CType;
use crate::model::{CallSite, CallTarget, DriverFacts, Origin, PtrUse};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Driver functions each function calls directly.
#[derive(Debug, Default, Clone, Serialize)]
pub struct CallGraph {
    pub edges: BTreeMap<String, BTreeSet<String>>,
}

impl CallGraph {
    pub fn new(facts: &DriverFacts) -> CallGraph {
        let mut g = CallGraph::default();
        for (f, ff) in &facts.per_fn {
            let e = g.edges.entry(f.clone()).or_default();
            for c in &ff.calls {
                e.extend(c.driver_callees().cloned());
            }
        }
        g
    }

    /// Adds, for every const driver global a function names, edges to the
    /// functions the global's initializer names (through nested const
    /// globals too): SFI code that uses an ops table of its own calls them.
    /// A kernel ops table (a slot structure of `slots`) whose address
    /// is all the function takes is handed to the kernel (`inode->i_op =
    /// &minix_dir_inode_operations`): the kernel calls its slots, and a
    /// call of the driver's own through it is a call through a pointer,
    /// whose targets are edges of their own.
    pub fn add_const_table_edges(
        &mut self,
        facts: &DriverFacts,
        prog: &crate::program::Program,
        slots: &crate::slots::SlotTable,
    ) {
        for (f, ff) in &facts.per_fn {
            let mut seen = BTreeSet::new();
            let mut stack: Vec<String> = ff
                .globals
                .iter()
                .filter(|g| {
                    g.kind != crate::model::AccessKind::Addr
                        || !prog
                            .global_def(&g.name)
                            .is_some_and(|d| slots.is_slot_struct(&d.ty))
                })
                .map(|g| g.name.clone())
                .collect();
            let mut targets = BTreeSet::new();
            while let Some(g) = stack.pop() {
                if !seen.insert(g.clone()) {
                    continue;
                }
                let Some(gd) = prog.global_def(&g) else {
                    continue;
                };
                if !gd.is_const {
                    continue;
                }
                for r in prog.init_refs(&g) {
                    if prog.is_fn(&r) {
                        targets.insert(r);
                    } else {
                        stack.push(r);
                    }
                }
            }
            if !targets.is_empty() {
                self.edges.entry(f.clone()).or_default().extend(targets);
            }
        }
    }

    /// Functions reachable from `roots` (roots included), sorted.
    pub fn reach(&self, roots: &[String]) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<String> = roots.to_vec();
        while let Some(f) = stack.pop() {
            if !seen.insert(f.clone()) {
                continue;
            }
            if let Some(cs) = self.edges.get(&f) {
                stack.extend(cs.iter().filter(|c| !seen.contains(*c)).cloned());
            }
        }
        seen
    }
}

/// Where a pointer reaching code in a closure comes from, seen from the
/// entry point.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Root {
    /// Parameter of the entry point.
    EntryParam(usize),
    FieldVal(CType, String),
    FieldAddr(CType, String),
    Global(String),
    GlobalAddr(String),
    Fresh,
    Stack,
}

/// The closure of one entry point.
#[derive(Debug, Clone, Serialize)]
pub struct Closure {
    pub entry: String,
    /// Driver functions reached (the entry included).
    pub fns: BTreeSet<String>,
    /// Calls through pointers made inside the closure.
    pub indirect: Vec<CallSite>,
    /// For each call through a pointer that the caller passes (a
    /// parameter): the driver functions the closure's callers pass for it,
    /// by the call's (file, start).
    pub passed: BTreeMap<(usize, usize), BTreeSet<String>>,
    /// Roots of each parameter of each function in the closure.
    pub param_roots: BTreeMap<String, Vec<BTreeSet<Root>>>,
}

impl Closure {
    /// Computes the closure of `entry`.
    pub fn of(facts: &DriverFacts, graph: &CallGraph, entry: &str) -> Closure {
        let mut fns = graph.reach(&[entry.to_string()]);
        // Functions passed for a parameter that is called through: the
        // closure's callers' arguments, until nothing new is reached.
        let passed = loop {
            let passed = passed_targets(facts, &fns);
            let mut roots: Vec<String> = fns.iter().cloned().collect();
            let before = roots.len();
            for t in passed.values().flatten() {
                if !fns.contains(t) {
                    roots.push(t.clone());
                }
            }
            if roots.len() == before {
                break passed;
            }
            fns = graph.reach(&roots);
        };
        let mut indirect = Vec::new();
        for f in &fns {
            if let Some(ff) = facts.per_fn.get(f) {
                for c in &ff.calls {
                    if matches!(c.target, CallTarget::Indirect(_)) {
                        indirect.push(c.clone());
                    }
                }
            }
        }
        let param_roots = param_roots(facts, &fns, entry, &passed);
        Closure {
            entry: entry.to_string(),
            fns,
            indirect,
            passed,
            param_roots,
        }
    }

    /// The roots of a set of local origins inside function `f`.
    pub fn resolve(&self, f: &str, origins: &[Origin]) -> BTreeSet<Root> {
        let mut out = BTreeSet::new();
        for o in origins {
            match o {
                Origin::Param(i) => {
                    if let Some(r) = self.param_roots.get(f).and_then(|v| v.get(*i)) {
                        out.extend(r.iter().cloned());
                    }
                }
                other => {
                    out.insert(simple_root(other));
                }
            }
        }
        out
    }

    /// What the closure accesses memory through: the roots of every
    /// dereferenced pointer, and the types pointed to by a dereferenced
    /// pointer of unknown root (a call's result, a parameter of a function
    /// no caller in the closure reaches).
    pub fn deref_roots(&self, facts: &DriverFacts) -> (BTreeSet<Root>, BTreeSet<CType>) {
        let mut roots = BTreeSet::new();
        let mut unknown = BTreeSet::new();
        for f in &self.fns {
            let Some(ff) = facts.per_fn.get(f) else {
                continue;
            };
            for d in &ff.derefs {
                let r = self.resolve(f, &d.origins);
                if r.is_empty() {
                    unknown.insert(d.pointee.clone());
                }
                roots.extend(r);
            }
        }
        (roots, unknown)
    }

    /// Every pointer use in the closure, with resolved roots.
    pub fn ptr_uses<'a>(
        &'a self,
        facts: &'a DriverFacts,
    ) -> impl Iterator<Item = (BTreeSet<Root>, &'a PtrUse)> + 'a {
        self.fns.iter().flat_map(move |f| {
            facts
                .per_fn
                .get(f)
                .map(|ff| ff.ptr_uses.iter())
                .into_iter()
                .flatten()
                .map(move |u| (self.resolve(f, &u.origins), u))
        })
    }
}

fn simple_root(o: &Origin) -> Root {
    match o {
        Origin::Param(i) => Root::EntryParam(*i),
        Origin::FieldVal(b, f) => Root::FieldVal(b.clone(), f.clone()),
        Origin::FieldAddr(b, f) => Root::FieldAddr(b.clone(), f.clone()),
        Origin::Global(g) => Root::Global(g.clone()),
        Origin::GlobalAddr(g) => Root::GlobalAddr(g.clone()),
        Origin::Fresh => Root::Fresh,
        Origin::Stack => Root::Stack,
    }
}

/// For every call through a pointer in `fns` whose pointer is a parameter:
/// the driver functions that callers in `fns` pass for it (through their
/// own parameters too).
fn passed_targets(
    facts: &DriverFacts,
    fns: &BTreeSet<String>,
) -> BTreeMap<(usize, usize), BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for f in fns {
        let Some(ff) = facts.per_fn.get(f) else {
            continue;
        };
        for c in &ff.calls {
            let Some(callee) = &c.callee else { continue };
            let mut got = BTreeSet::new();
            for o in &callee.origins {
                if let Origin::Param(i) = o {
                    passed_for(facts, fns, f, *i, &mut BTreeSet::new(), &mut got);
                }
            }
            if !got.is_empty() {
                out.insert((c.at.file, c.at.range.start), got);
            }
        }
    }
    out
}

/// The driver functions callers in `fns` pass for parameter `i` of `f`.
fn passed_for(
    facts: &DriverFacts,
    fns: &BTreeSet<String>,
    f: &str,
    i: usize,
    seen: &mut BTreeSet<(String, usize)>,
    out: &mut BTreeSet<String>,
) {
    if !seen.insert((f.to_string(), i)) {
        return;
    }
    for h in fns {
        let Some(hf) = facts.per_fn.get(h) else {
            continue;
        };
        for d in &hf.calls {
            if !d.driver_callees().any(|x| x == f) {
                continue;
            }
            match d.arg_names.get(i) {
                Some(Some(n)) if facts.per_fn.contains_key(n) => {
                    out.insert(n.clone());
                }
                _ => {
                    for o in d.args.get(i).into_iter().flatten() {
                        if let Origin::Param(j) = o {
                            passed_for(facts, fns, h, *j, seen, out);
                        }
                    }
                }
            }
        }
    }
}

/// Fixpoint over the closure: the roots of every function parameter.
fn param_roots(
    facts: &DriverFacts,
    fns: &BTreeSet<String>,
    entry: &str,
    passed: &BTreeMap<(usize, usize), BTreeSet<String>>,
) -> BTreeMap<String, Vec<BTreeSet<Root>>> {
    let mut roots: BTreeMap<String, Vec<BTreeSet<Root>>> = BTreeMap::new();
    for f in fns {
        let n = facts
            .per_fn
            .get(f)
            .map(|ff| ff.param_origins.len())
            .unwrap_or(0);
        let mut v = vec![BTreeSet::new(); n];
        if let Some(ff) = facts.per_fn.get(f) {
            for (i, os) in ff.param_origins.iter().enumerate() {
                for o in os {
                    match o {
                        Origin::Param(j) if *j == i => {
                            if f == entry {
                                v[i].insert(Root::EntryParam(i));
                            }
                        }
                        Origin::Param(_) => {}
                        other => {
                            v[i].insert(simple_root(other));
                        }
                    }
                }
            }
        }
        roots.insert(f.clone(), v);
    }
    // Propagate along call sites until nothing changes.
    loop {
        let mut changed = false;
        for g in fns {
            let Some(ff) = facts.per_fn.get(g) else {
                continue;
            };
            let none = BTreeSet::new();
            for (c, callee) in ff.calls.iter().flat_map(|c| {
                let more = passed.get(&(c.at.file, c.at.range.start)).unwrap_or(&none);
                c.driver_callees().chain(more.iter()).map(move |t| (c, t))
            }) {
                if !fns.contains(callee) {
                    continue;
                }
                for (k, arg) in c.args.iter().enumerate() {
                    let mut add = BTreeSet::new();
                    for o in arg {
                        match o {
                            Origin::Param(j) => {
                                if let Some(r) = roots.get(g).and_then(|v| v.get(*j)) {
                                    add.extend(r.iter().cloned());
                                }
                            }
                            other => {
                                add.insert(simple_root(other));
                            }
                        }
                    }
                    if let Some(slot) = roots.get_mut(callee).and_then(|v| v.get_mut(k)) {
                        for r in add {
                            if slot.insert(r) {
                                changed = true;
                            }
                        }
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    roots
}

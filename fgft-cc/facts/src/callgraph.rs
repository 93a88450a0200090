//! The driver's call graph and the closure of an entry point: every driver
//! function it can reach through direct calls (including calls hidden in the
//! driver's macros), with the calls it makes through pointers, and where the
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
                if let CallTarget::Driver(callee) = &c.target {
                    e.insert(callee.clone());
                }
            }
        }
        g
    }

    /// Adds, for every const driver global a function names, edges to the
    /// functions the global's initializer names (through nested const
    /// globals too): SFI code that uses an ops table of its own calls them.
    pub fn add_const_table_edges(&mut self, facts: &DriverFacts, prog: &crate::program::Program) {
        for (f, ff) in &facts.per_fn {
            let mut seen = BTreeSet::new();
            let mut stack: Vec<String> = ff.globals.iter().map(|g| g.name.clone()).collect();
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
    /// Roots of each parameter of each function in the closure.
    pub param_roots: BTreeMap<String, Vec<BTreeSet<Root>>>,
}

impl Closure {
    /// Computes the closure of `entry`.
    pub fn of(facts: &DriverFacts, graph: &CallGraph, entry: &str) -> Closure {
        let fns = graph.reach(&[entry.to_string()]);
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
        let param_roots = param_roots(facts, &fns, entry);
        Closure {
            entry: entry.to_string(),
            fns,
            indirect,
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

/// Fixpoint over the closure: the roots of every function parameter.
fn param_roots(
    facts: &DriverFacts,
    fns: &BTreeSet<String>,
    entry: &str,
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
            for c in &ff.calls {
                let CallTarget::Driver(callee) = &c.target else {
                    continue;
                };
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

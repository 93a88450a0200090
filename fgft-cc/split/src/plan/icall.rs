//! Calls through pointers in SFI code: each becomes a dispatch.
//!
//! The targets were resolved before the plan (`crate::icall`), and the
//! closures already hold the driver targets.  Here every call site in an
//! SFI function gets a dispatch set: the driver functions it may call
//! (each reached through the address table's slot of its main-module
//! copy, and called as its SFI copy) and the kernel functions stored where
//! it reads (called through their wrappers).  Sites with the same set
//! share one.  Emit wraps the callee of each site in `FGFT_ICALL(set, f)`;
//! the resolver in `sfi_rt.c` aborts the transaction on any other address
//! (cause `icall`).
//!
//! Diagnostics (one per site, whatever the entries that reach it): a site
//! inside a driver macro or a kernel helper is not rewritten, nor is one
//! where fgft finds nothing the driver stores (a dispatch would abort
//! every call): their targets run outside isolation; a site where some of
//! the pointer's sources are not followed aborts on what it does not know.

use super::{GtabEntry, Inputs, Plan};
use crate::diag::Located;
use crate::plan::table::ArgSpec;
use fgft_facts::callgraph::Closure;
use fgft_facts::model::CallTarget;
use fgft_facts::program::FileId;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

/// What one dispatch may call.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct IcallSet {
    /// Driver functions (their SFI copies), sorted.
    pub targets: Vec<String>,
    /// Kernel functions (their wrappers), sorted.
    pub kernel: Vec<String>,
}

/// A call through a pointer in SFI code, made a dispatch.
#[derive(Debug, Clone)]
pub struct IcallUse {
    /// The SFI function making the call.
    pub func: String,
    pub file: FileId,
    /// The callee expression (what emit wraps).
    pub callee: Range<usize>,
    /// Where the call starts (its site in the facts).
    pub call_start: usize,
    pub line: usize,
    /// Index into `Plan::icall_sets`.
    pub set: usize,
    /// Where the pointer is read from (plan.txt).
    pub from: Vec<String>,
}

/// The kernel functions of a resolved site that a dispatch can call: known
/// to the table, with a wrapper of the function's own signature.
fn callable_kernel(inp: &Inputs<'_>, names: &[String]) -> (Vec<String>, Vec<String>) {
    let (mut ok, mut unknown) = (Vec::new(), Vec::new());
    for n in names {
        match inp.table.apis.get(n) {
            Some(e)
                if !e.inline
                    && !e.variadic
                    && !e.params.iter().any(|p| p.kind == ArgSpec::Lvalue) =>
            {
                ok.push(n.clone())
            }
            Some(_) => unknown.push(n.clone()),
            None if inp.kernel.is_some_and(|k| k.is_exported(n)) => unknown.push(n.clone()),
            None => {}
        }
    }
    (ok, unknown)
}

/// The warnings about the calls through pointers of one entry's closure.
pub(super) fn warnings(
    inp: &Inputs<'_>,
    reported: &mut BTreeSet<(FileId, usize)>,
    name: &str,
    closure: &Closure,
) -> Vec<Located> {
    let mut diags = Vec::new();
    for c in &closure.indirect {
        let CallTarget::Indirect(expr) = &c.target else {
            continue;
        };
        if !reported.insert((c.at.file, c.at.range.start)) {
            continue;
        }
        let func = &c.at.func;
        let Some(site) = inp.icalls.get(&c.at) else {
            continue;
        };
        if site.in_macro {
            let m = site.expansion.clone().unwrap_or_default();
            let (what, notes) = if inp.prog.macros.contains_key(&m) {
                (
                    format!("driver macro `{m}`"),
                    vec!["call the function directly, or make the macro a function".into()],
                )
            } else {
                (format!("kernel helper `{m}`"), vec![])
            };
            diags.push(inp.diag(
                &c.at,
                true,
                format!(
                    "call through a pointer (`{expr}`) inside {what} in `{func}`, which isolated entry points reach (first: `{name}`): fgft does not rewrite an expansion's calls per use, so the target runs outside isolation, unchecked"
                ),
                "indirect call in an expansion",
                notes,
            ));
            continue;
        }
        let (kernel, unknown) = callable_kernel(inp, &site.kernel);
        let from = if site.from.is_empty() {
            String::new()
        } else {
            format!(" (read from {})", site.from.join(", "))
        };
        let mut notes = Vec::new();
        for u in &unknown {
            notes.push(format!(
                "the driver stores kernel function `{u}` there, which has no wrapper: add [api.{u}] to a compensations.toml (a function of its own signature, not inline or variadic)"
            ));
        }
        if site.targets.is_empty() && kernel.is_empty() {
            diags.push(inp.diag(
                &c.at,
                true,
                format!(
                    "call through a pointer (`{expr}`) in `{func}`, which isolated entry points reach (first: `{name}`): fgft finds no function the driver stores where the call reads it{from}, so the call is left as written and its target runs outside isolation, unchecked"
                ),
                "no known target",
                notes,
            ));
        } else if !site.complete || !unknown.is_empty() {
            let known: Vec<String> = site
                .targets
                .iter()
                .chain(&kernel)
                .map(|t| format!("`{t}`"))
                .collect();
            diags.push(inp.diag(
                &c.at,
                true,
                format!(
                    "call through a pointer (`{expr}`) in `{func}`{from}: fgft does not follow every place the pointer may come from, so in SFI code a call to anything but {} aborts the transaction (bad indirect call)",
                    known.join(", ")
                ),
                "targets may be incomplete",
                notes,
            ));
        }
    }
    diags
}

/// The dispatch of every call through a pointer in the SFI functions: the
/// sets, the uses, the address-table slots of the driver targets and the
/// wrappers of the kernel ones.
pub(super) fn dispatches(inp: &Inputs<'_>, plan: &mut Plan, gtab: &mut BTreeSet<GtabEntry>) {
    let prog = inp.prog;
    let mut sets: BTreeMap<IcallSet, usize> = BTreeMap::new();
    let mut uses = Vec::new();
    for f in &plan.sfi_fns {
        let Some(ff) = inp.facts.per_fn.get(f) else {
            continue;
        };
        if prog.def(f).is_none() {
            continue;
        }
        for c in &ff.calls {
            let Some(site) = inp.icalls.get(&c.at) else {
                continue;
            };
            if site.in_macro {
                continue;
            }
            let targets: Vec<String> = site
                .targets
                .iter()
                .filter(|t| plan.sfi_fns.contains(*t) && !inp.compiled_out(t))
                .cloned()
                .collect();
            let (kernel, _) = callable_kernel(inp, &site.kernel);
            // Nothing known: a dispatch would abort every call, which
            // leaves the entry point nothing to do; the call stays as
            // written (and is warned about).
            if targets.is_empty() && kernel.is_empty() {
                continue;
            }
            let set = IcallSet { targets, kernel };
            let n = sets.len();
            let k = *sets.entry(set).or_insert(n);
            uses.push(IcallUse {
                func: f.clone(),
                file: site.at.file,
                callee: site.callee.clone(),
                call_start: site.at.range.start,
                line: site.at.line,
                set: k,
                from: site.from.clone(),
            });
        }
    }
    let mut ordered: Vec<(IcallSet, usize)> = sets.into_iter().collect();
    ordered.sort_by_key(|(_, k)| *k);
    for (s, _) in &ordered {
        for t in &s.targets {
            let Some(d) = prog.def(t) else { continue };
            gtab.insert(GtabEntry {
                name: t.clone(),
                is_fn: true,
                file: d.file,
            });
            // An isolated entry point's slots hold its stub.
            if let Some(e) = plan.entries.iter().find(|e| &e.spec.name == t) {
                gtab.insert(GtabEntry {
                    name: e.spec.stub_name(),
                    is_fn: true,
                    file: d.file,
                });
            }
        }
        plan.wrapped.extend(s.kernel.iter().cloned());
    }
    uses.sort_by_key(|u| (u.file, u.callee.start));
    plan.icall_sets = ordered.into_iter().map(|(s, _)| s).collect();
    plan.icall_uses = uses;
}

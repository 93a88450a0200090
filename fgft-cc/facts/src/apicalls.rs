//! Kernel API calls: what the analysis knows about kernel functions (given by
//! the caller, from the compensation table) and the calls a closure makes.

use crate::callgraph::Closure;
use crate::model::{CallTarget, DriverFacts, Site};
use serde::Serialize;
use std::collections::BTreeMap;

/// One kernel function called from a closure, with every site.
#[derive(Debug, Clone, Serialize)]
pub struct ApiUse {
    pub name: String,
    pub sites: Vec<Site>,
    /// The driver macros the call was found in, if any (for messages).
    pub via_macro: Vec<String>,
    /// Some site is in the driver's own text, not inside a macro's or
    /// helper's expansion.
    pub direct: bool,
}

/// Every kernel function the closure calls, sorted by name.
pub fn kernel_calls(facts: &DriverFacts, closure: &Closure) -> Vec<ApiUse> {
    let mut by: BTreeMap<String, ApiUse> = BTreeMap::new();
    for f in &closure.fns {
        let Some(ff) = facts.per_fn.get(f) else {
            continue;
        };
        for c in &ff.calls {
            if let CallTarget::Kernel(name) = &c.target {
                // A compiler builtin (`__builtin_constant_p`, `__builtin_expect`)
                // is compiled in place: no call into the kernel.
                if name.starts_with("__builtin_") {
                    continue;
                }
                let e = by.entry(name.clone()).or_insert_with(|| ApiUse {
                    name: name.clone(),
                    sites: Vec::new(),
                    via_macro: Vec::new(),
                    direct: false,
                });
                e.sites.push(c.at.clone());
                e.direct |= c.via_macro.is_none();
                if let Some(m) = &c.via_macro {
                    if !e.via_macro.contains(m) {
                        e.via_macro.push(m.clone());
                    }
                }
            }
        }
    }
    by.into_values().collect()
}

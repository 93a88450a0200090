//! Kernel API calls: what the analysis knows about kernel functions (given by
//! the caller, from the compensation table) and the calls a closure makes.

use crate::access::{CallTarget, DriverFacts, Site};
use crate::callgraph::Closure;
use serde::Serialize;
use std::collections::BTreeMap;

/// How a kernel function uses one of its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ArgKind {
    /// A plain value.
    Val,
    /// A kernel object used for its identity (a lock, a timer, a device):
    /// the wrapper passes the original object, never an SFI copy.
    Kobj,
    /// Memory the function writes, `len` bytes (a C expression over the
    /// parameter names).
    Out(String),
    /// Memory the function reads, `len` bytes.
    In(String),
    /// Memory the function reads and writes.
    InOut(String),
    /// A NUL-terminated string the function reads.
    InStr,
    /// A function pointer handed to the kernel.
    Func,
}

/// What a call returns, beyond its type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Returns {
    Plain,
    /// Fresh memory owned by the caller (allocators).
    Fresh,
    /// The private area that trails the object of the first argument
    /// (`netdev_priv`).
    Priv,
    /// The object that contains the first argument at member (third
    /// argument) (`container_of`).
    Container,
}

/// The analysis' view of one kernel function.
#[derive(Debug, Clone, Serialize)]
pub struct ApiModel {
    pub name: String,
    /// Parameter names and kinds, in order (empty when unknown).
    pub params: Vec<(String, ArgKind)>,
    /// A C expression over the parameter names that reads and writes what
    /// the function does (e.g. `(dev)->state` for `netif_running`); used
    /// for field-access facts only.
    pub model: Option<String>,
    pub returns: Returns,
    /// Runs inside the SFI module (an inline helper or macro compiled with
    /// the sanitizer) rather than through a wrapper.
    pub inline: bool,
}

/// Models of kernel functions, by name.
#[derive(Debug, Clone, Default)]
pub struct ApiModels {
    pub map: BTreeMap<String, ApiModel>,
}

impl ApiModels {
    pub fn get(&self, name: &str) -> Option<&ApiModel> {
        self.map.get(name)
    }
}

/// One kernel function called from a closure, with every site.
#[derive(Debug, Clone, Serialize)]
pub struct ApiUse {
    pub name: String,
    pub sites: Vec<Site>,
    /// The driver macros the call was found in, if any (for messages).
    pub via_macro: Vec<String>,
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
                let e = by.entry(name.clone()).or_insert_with(|| ApiUse {
                    name: name.clone(),
                    sites: Vec::new(),
                    via_macro: Vec::new(),
                });
                e.sites.push(c.at.clone());
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

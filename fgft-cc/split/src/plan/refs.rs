//! Where driver functions are used as values (slots): at file scope, in
//! function bodies and in the driver's macros.  Computed once by the plan;
//! emit re-points exactly these sites at the stubs.

use fgft_base::ident;
use fgft_facts::model::{DriverFacts, Site};
use fgft_facts::program::{FileId, Program, TopKind};
use std::collections::BTreeMap;
use std::ops::Range;

/// Every use of a driver function's name as a value at file scope
/// (initializers, macro statements): name -> (file, range).
fn file_scope_fn_refs(prog: &Program) -> BTreeMap<String, Vec<(FileId, Range<usize>)>> {
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
fn macro_body_refs(prog: &Program, name: &str) -> Vec<(FileId, std::ops::Range<usize>)> {
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
                                !ident::is_byte(c)
                            };
                            let ok_after = b >= body.len() || {
                                let c = body.as_bytes()[b];
                                !(ident::is_byte(c) || c == b'(')
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
fn body_fn_refs(facts: &DriverFacts, name: &str) -> Vec<Site> {
    let mut out = Vec::new();
    for ff in facts.per_fn.values() {
        for (r, s) in &ff.fn_refs {
            if r == name {
                out.push(s.clone());
            }
        }
    }
    out
}

/// Every value use of driver functions' names, computed once per split.
pub struct Refs {
    /// At file scope (initializers, macro statements): name -> sites.
    pub file_scope: BTreeMap<String, Vec<(FileId, Range<usize>)>>,
}

/// Where one driver function's name is used as a value.
#[derive(Debug, Clone, Default)]
pub struct ValueRefs {
    /// Every site (file scope, function bodies, macro bodies), sorted by
    /// file and position, without repeats.
    pub sites: Vec<(FileId, Range<usize>)>,
    /// The sites inside the bodies of the driver's macros.
    pub in_macros: Vec<(FileId, Range<usize>)>,
}

impl Refs {
    pub fn new(prog: &Program) -> Refs {
        Refs {
            file_scope: file_scope_fn_refs(prog),
        }
    }

    /// Every value use of `name`.
    pub fn of(&self, prog: &Program, facts: &DriverFacts, name: &str) -> ValueRefs {
        let mut sites = self.file_scope.get(name).cloned().unwrap_or_default();
        sites.extend(
            body_fn_refs(facts, name)
                .into_iter()
                .map(|s| (s.file, s.range)),
        );
        let in_macros = macro_body_refs(prog, name);
        sites.extend(in_macros.iter().cloned());
        sites.sort_by_key(|(f, r)| (*f, r.start));
        sites.dedup();
        ValueRefs { sites, in_macros }
    }
}

/// `struct.field` of the initializer a file-scope reference sits in, when it
/// is a designated initializer.
pub(super) fn slot_name(prog: &Program, fid: FileId, r: &Range<usize>) -> Option<String> {
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

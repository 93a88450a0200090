//! The one walk of a file for the slot finder (`Scan`): the file's type
//! facts and its slot candidates, in document order.
//!
//! Invariant: the walk takes every candidate a full walk would; the byte
//! pre-filter ([`super::prefilter`]) only lets it step over subtrees that
//! hold none.

use super::*;
use fgft_parse::{walk, ParsedFile};
use std::collections::HashMap;
use tree_sitter::Node;

/// One walk of a file for the slot finder: the file's type facts, and the
/// nodes that may store a function in a slot (declarations, assignments to
/// a member, calls of a table macro or registering call), in document order.
///
/// Drive it with [`Scan::visit`] from any pre-order walk of the whole tree
/// (the survey walks once for everything), or use [`scan`].
pub struct Scan<'t, 'a> {
    pf: &'a ParsedFile,
    table: Option<&'a SlotTable>,
    facts: Facts,
    spans: [HashMap<String, (usize, usize)>; 3],
    pub(super) nodes: Vec<Node<'t>>,
    /// Depth of the function definition the walk is in.
    in_fn: Option<u32>,
    /// Depth of the outermost block (outside functions) the walk is in.
    in_block: Option<u32>,
    /// Byte ranges every slot candidate overlaps ([`candidate_marks`]);
    /// `None`: any node may hold one.
    pub(super) marks: Option<Vec<(usize, usize)>>,
    /// Index of the first range ending after the start of the last node
    /// looked up.
    next_mark: usize,
}

impl<'t, 'a> Scan<'t, 'a> {
    /// A scan of `pf` collecting facts, and slot candidates when `table` is
    /// given.
    pub fn new(pf: &'a ParsedFile, table: Option<&'a SlotTable>) -> Scan<'t, 'a> {
        Scan {
            pf,
            table,
            facts: Facts::default(),
            spans: Default::default(),
            nodes: Vec::new(),
            in_fn: None,
            in_block: None,
            marks: table.and_then(|t| candidate_marks(pf, t)),
            next_mark: 0,
        }
    }

    /// The first mark range ending after byte `s` (`Some(None)`: none is
    /// left), `None` when there are no marks.  Pre-order walks ask with
    /// increasing `s`: the search moves forward (and starts again should a
    /// walk ever go back).
    fn first_mark_after(&mut self, s: usize) -> Option<Option<(usize, usize)>> {
        let m = self.marks.as_ref()?;
        if self.next_mark > 0 && m[self.next_mark - 1].1 > s {
            self.next_mark = m.partition_point(|r| r.1 <= s);
        }
        while self.next_mark < m.len() && m[self.next_mark].1 <= s {
            self.next_mark += 1;
        }
        Some(m.get(self.next_mark).copied())
    }

    /// Whether the subtree of `n` may hold a slot candidate (see
    /// [`candidate_marks`]).
    fn may_hold_candidate(&mut self, n: Node<'_>) -> bool {
        if self.table.is_none() {
            return false;
        }
        match self.first_mark_after(n.start_byte()) {
            None => true,
            Some(next) => next.is_some_and(|(a, _)| a < n.end_byte()) || n.has_error(),
        }
    }

    /// Whether the walk may step over the children of `n` that overlap no
    /// mark (`visit` turns them down and keeps no trace of them): inside a
    /// function, with marks, and no syntax error in `n`.
    fn jumps_in(&self, n: Node<'_>) -> bool {
        self.in_fn.is_some() && self.table.is_some() && self.marks.is_some() && !n.has_error()
    }

    /// For a node whose children may be stepped over ([`Self::jumps_in`]):
    /// the byte the next child worth visiting, after byte `from`, ends past
    /// (the start of the first mark ending after `from`, at least `from`);
    /// `None` when no mark is left.
    fn child_goal(&mut self, from: usize) -> Option<usize> {
        self.first_mark_after(from)
            .flatten()
            .map(|(a, _)| a.max(from))
    }

    /// Whether the walk may stop at `n` (outside functions, after its own
    /// facts and candidacy are taken): a kind of [`leaf_kind_outside`] with
    /// no syntax error, no block or structure body
    /// ([`may_open_block_or_body`]) and no slot candidate in its subtree.
    fn done_outside(&mut self, n: Node<'_>, id: u16) -> bool {
        if !leaf_kind_outside(id) || n.child_count() == 0 {
            return false;
        }
        !may_open_block_or_body(self.pf.hinted.as_bytes(), n.start_byte(), n.end_byte())
            && !self.may_hold_candidate(n)
            && !n.has_error()
    }

    /// Looks at node `n` of a pre-order walk (`depth` from the root);
    /// returns whether the walk needs to enter its children (a plain data
    /// table outside functions holds nothing for the slot finder, and inside
    /// a function body only what may hold a slot candidate matters).  A walk
    /// may still enter nodes the scan said it need not: it finds nothing
    /// more in them.
    pub fn visit(&mut self, n: Node<'t>, depth: u32) -> bool {
        let k = walk::kinds();
        if self.in_fn.is_some_and(|d| depth <= d) {
            self.in_fn = None;
        }
        if self.in_block.is_some_and(|d| depth <= d) {
            self.in_block = None;
        }
        let id = n.kind_id();
        if self.in_fn.is_some() {
            // No type fact is taken inside a function: only candidates.
            let Some(table) = self.table else {
                return false;
            };
            if !self.may_hold_candidate(n) {
                return false;
            }
            self.candidate(table, n, id);
            return id != k.preproc_function_def
                && !walk::skippable(self.pf.hinted.as_bytes(), n, k, true);
        }
        if let Some(table) = self.table {
            self.candidate(table, n, id);
        }
        if id == k.preproc_function_def {
            return false; // a name, parameters and unparsed text
        }
        self.fact(n, id, self.in_block.is_none());
        if id == k.function_definition {
            self.in_fn = Some(depth);
            // Inside, only slot candidates are taken.
            if !self.may_hold_candidate(n) {
                return false;
            }
        } else if id == k.compound_statement && self.in_block.is_none() {
            self.in_block = Some(depth);
        }
        !walk::skippable(self.pf.hinted.as_bytes(), n, k, false) && !self.done_outside(n, id)
    }

    fn candidate(&mut self, table: &SlotTable, n: Node<'t>, id: u16) {
        let k = walk::kinds();
        if id == k.declaration {
            // Only `T x = { ... }` declarations can fill a slot structure.
            let init = children_by_field(n, k.f_declarator).any(|d| {
                d.kind_id() == k.init_declarator
                    && k.child(d, k.f_value)
                        .is_some_and(|v| v.kind_id() == k.initializer_list)
            });
            if init {
                self.nodes.push(n);
            }
        } else if id == k.assignment_expression {
            // A member store fills a slot only through a field some slot
            // structure has (the finder looks at no other).
            if k.child(n, k.f_left).is_some_and(|l| {
                l.kind_id() == k.field_expression
                    && k.child(l, k.f_field)
                        .is_some_and(|f| table.is_slot_field(self.pf.node_text(f)))
            }) {
                self.nodes.push(n);
            }
        } else if id == k.call_expression {
            if let Some(f) = k.child(n, k.f_function) {
                let name = self.pf.node_text(f);
                if table.calls.contains_key(name) || table.macros.contains_key(name) {
                    self.nodes.push(n);
                }
            }
        }
    }

    /// The type facts `n` gives (`top`: not inside a block).
    fn fact(&mut self, n: Node<'_>, id: u16, top: bool) {
        let k = walk::kinds();
        let pf = self.pf;
        let r = (n.start_byte(), n.end_byte());
        let [s_structs, s_typedefs, s_globals] = &mut self.spans;
        let f = &mut self.facts;
        if id == k.struct_specifier || id == k.union_specifier {
            if let (Some(name), Some(body)) = (k.child(n, k.f_name), k.child(n, k.f_body)) {
                let fields = struct_body_fields(pf, body);
                put(
                    &mut f.struct_fields,
                    s_structs,
                    pf.node_text(name),
                    fields,
                    r,
                );
            }
        } else if id == k.type_definition {
            if let Some(t) = k.child(n, k.f_type) {
                let target = type_name(pf, t);
                for d in children_by_field(n, k.f_declarator) {
                    if let Some((alias, _, _)) = declarator_name(pf, d) {
                        match (&target, k.child(t, k.f_body)) {
                            (Some(tn), _) => {
                                put(&mut f.typedefs, s_typedefs, alias, tn.to_string(), r);
                            }
                            (None, Some(body)) => {
                                // typedef struct { ... } alias;
                                let fields = struct_body_fields(pf, body);
                                put(&mut f.struct_fields, s_structs, alias, fields, r);
                            }
                            _ => {}
                        }
                    }
                }
            }
        } else if id == k.function_definition {
            if let Some(name) = fgft_parse::function_name(pf, n) {
                f.functions.insert(name.to_string());
            }
        } else if id == k.declaration && top {
            let t = k.child(n, k.f_type).and_then(|t| type_name(pf, t));
            for d in children_by_field(n, k.f_declarator) {
                if let Some((name, _, is_fn)) = declarator_name(pf, d) {
                    if is_fn {
                        f.functions.insert(name.to_string());
                    } else if let Some(t) = t {
                        put(&mut f.globals, s_globals, name, t.to_string(), r);
                    }
                }
            }
        }
    }

    /// The facts and the slot candidates.
    pub fn finish(self) -> (Facts, Candidates<'t>) {
        (self.facts, Candidates { nodes: self.nodes })
    }
}

/// Nodes of one file that may store a function in a slot ([`Scan`]).
pub struct Candidates<'t> {
    pub(super) nodes: Vec<Node<'t>>,
}

/// Facts and slot candidates of `pf` in one walk.
pub fn scan<'t>(pf: &'t ParsedFile, table: &SlotTable) -> (Facts, Candidates<'t>) {
    let mut s = Scan::new(pf, Some(table));
    scan_walk(&mut s, pf.tree.root_node());
    s.finish()
}

/// Collects the type facts of one parsed file.
pub fn facts_of(pf: &ParsedFile) -> Facts {
    let mut s = Scan::new(pf, None);
    scan_walk(&mut s, pf.tree.root_node());
    s.finish().0
}

/// The pre-order walk of [`scan`]: [`Scan::visit`] for the nodes of `root`
/// it asks for, in order.  Inside a function body with no syntax error, the
/// children that overlap no mark (which `visit` would turn down, keeping no
/// trace) are stepped over with the cursor's byte search (one descent
/// through the hidden nodes of a long statement list) instead of one by
/// one.
pub(super) fn scan_walk<'t>(s: &mut Scan<'t, '_>, root: Node<'t>) {
    let mut c = root.walk();
    // Per node above the cursor: whether its children may be stepped over,
    // and its end.
    let mut levels: Vec<(bool, usize)> = Vec::new();
    loop {
        let n = c.node();
        if s.visit(n, levels.len() as u32) {
            let jump = s.jumps_in(n);
            let moved = if jump {
                match s.child_goal(n.start_byte()) {
                    // The byte search may give up under a hidden node
                    // with no visible child: then visit them all.
                    Some(g) => c.goto_first_child_for_byte(g).is_some() || c.goto_first_child(),
                    None => false,
                }
            } else {
                c.goto_first_child()
            };
            if moved {
                levels.push((jump, n.end_byte()));
                continue;
            }
        }
        // On to the next sibling, or up.
        loop {
            let Some(&(jump, parent_end)) = levels.last() else {
                return;
            };
            if !jump {
                if c.goto_next_sibling() {
                    break;
                }
            } else {
                let end = c.node().end_byte();
                if let Some(g) = s.child_goal(end).filter(|&g| g < parent_end) {
                    c.goto_parent();
                    if c.goto_first_child_for_byte(g).is_some() {
                        break;
                    }
                    // The byte search gave up: back to the child after
                    // `end`, one by one.
                    c.goto_first_child();
                    while c.node().start_byte() < end && c.goto_next_sibling() {}
                    if c.node().start_byte() >= end {
                        break;
                    }
                }
            }
            c.goto_parent();
            levels.pop();
        }
    }
}

pub(super) fn struct_body_fields(pf: &ParsedFile, body: Node<'_>) -> HashMap<String, String> {
    let k = walk::kinds();
    let mut out = HashMap::new();
    let mut stack = vec![body];
    // One cursor for the items of a body, one for the children of an item
    // (a cursor per node costs an allocation).
    let mut items = body.walk();
    let mut children = body.walk();
    let mut decls = Vec::new();
    while let Some(b) = stack.pop() {
        items.reset(b);
        let mut more = items.goto_first_child();
        while more {
            let fd = items.node();
            more = items.goto_next_sibling();
            if !fd.is_named() {
                continue;
            }
            let id = fd.kind_id();
            if id == k.field_declaration {
                let ty = k.child(fd, k.f_type);
                decls.clear();
                children.reset(fd);
                let mut c = children.goto_first_child();
                while c {
                    if k.f_declarator.is_some() && children.field_id() == k.f_declarator {
                        decls.push(children.node());
                    }
                    c = children.goto_next_sibling();
                }
                if decls.is_empty() {
                    // Anonymous struct/union: its fields belong to us.
                    if let Some(b2) = ty.and_then(|t| k.child(t, k.f_body)) {
                        stack.push(b2);
                    }
                    continue;
                }
                let tn = ty.and_then(|t| type_name(pf, t)).unwrap_or("");
                for &d in &decls {
                    if let Some((name, _, _)) = declarator_name(pf, d) {
                        out.insert(name.to_string(), tn.to_string());
                    }
                }
            } else if k.is_preproc(id) {
                stack.push(fd);
            }
        }
    }
    out
}

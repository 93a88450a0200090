//! Roots: the functions stored in slots, found among the candidates of a
//! `Scan` by the `Finder` (initializers, assignments, table macros and
//! registering calls).
//!
//! Invariant: roots come out sorted and deduplicated; the same file, facts
//! and table give the same roots.

use super::*;
use fgft_base::ident;
use fgft_parse::{walk, ParsedFile};
use std::collections::HashMap;
use tree_sitter::Node;

/// Finds every root in one parsed file.  `facts` should hold the file's facts
/// and those of its headers
/// ([`crate::headers::HeaderCache::facts_with_headers`]).
pub fn roots(pf: &ParsedFile, facts: &FactSet, table: &SlotTable) -> Vec<Root> {
    let (_, candidates) = scan(pf, table);
    roots_of(pf, facts, table, &candidates)
}

/// Finds every root among the candidates of a [`Scan`] of `pf` (`facts`:
/// the scan's facts layered over those of the file's headers).
pub fn roots_of<'t>(
    pf: &'t ParsedFile,
    facts: &FactSet,
    table: &SlotTable,
    candidates: &Candidates<'t>,
) -> Vec<Root> {
    let mut f = Finder {
        pf,
        facts,
        table,
        out: Vec::new(),
        inferred: HashMap::new(),
        locals: HashMap::new(),
        resolved: HashMap::new(),
        fields: HashMap::new(),
    };
    f.run(&candidates.nodes);
    let mut out = f.out;
    out.sort();
    out.dedup();
    out
}

pub(super) struct Finder<'a> {
    pf: &'a ParsedFile,
    facts: &'a FactSet,
    table: &'a SlotTable,
    out: Vec<Root>,
    /// Variables whose slot type is known from `p->netdev_ops = &var`.
    inferred: HashMap<&'a str, &'a str>,
    /// (Function node id, name) -> the type of the parameter or local of
    /// that name, if any ([`local_type`]).
    locals: HashMap<(usize, &'a str), Option<&'a str>>,
    /// Type name -> [`FactSet::resolve`] of it (a lookup in every layer).
    resolved: HashMap<&'a str, &'a str>,
    /// Struct name -> [`FactSet::struct_fields`] of it.
    fields: HashMap<&'a str, Option<&'a HashMap<String, String>>>,
}

impl<'a> Finder<'a> {
    fn text(&self, n: Node<'_>) -> &'a str {
        self.pf.node_text(n)
    }

    fn line(&self, n: Node<'_>) -> usize {
        n.start_position().row + 1
    }

    fn emit(&mut self, function: &str, st: &str, field: &str, at: Node<'_>, var: &str) {
        self.out.push(Root {
            function: function.to_string(),
            struct_name: st.to_string(),
            field: field.to_string(),
            file: self.pf.path.clone(),
            line: self.line(at),
            var: var.to_string(),
            kind: self.table.kind_of(st),
        });
    }

    /// [`FactSet::resolve`], remembered.
    fn resolve(&mut self, t: &'a str) -> &'a str {
        if let Some(r) = self.resolved.get(t) {
            return r;
        }
        let r = self.facts.resolve(t);
        self.resolved.insert(t, r);
        r
    }

    /// [`FactSet::struct_fields`], remembered.
    fn struct_fields(&mut self, st: &'a str) -> Option<&'a HashMap<String, String>> {
        if let Some(f) = self.fields.get(st) {
            return *f;
        }
        let f = self.facts.struct_fields(st);
        self.fields.insert(st, f);
        f
    }

    /// `nodes`: declarations, member assignments and table calls of the
    /// file, in document order.
    fn run(&mut self, nodes: &[Node<'a>]) {
        let k = walk::kinds();
        // Pass 1: pointer stores that tell a variable's slot type.
        for &n in nodes {
            if n.kind_id() == k.assignment_expression {
                self.pointer_store(n);
            }
        }
        for &n in nodes {
            let id = n.kind_id();
            if id == k.declaration {
                self.declaration(n);
            } else if id == k.assignment_expression {
                self.assignment(n);
            } else if id == k.call_expression {
                self.call(n);
            }
        }
    }

    /// Unwraps casts, parentheses, `&`, and table wrappers to the identifier
    /// of a stored function; both arms of `c ? f : NULL`.
    fn stored_functions(&self, v: Node<'a>) -> Vec<Node<'a>> {
        let mut out = Vec::new();
        self.stored_functions_into(v, &mut out);
        out
    }

    fn stored_functions_into(&self, v: Node<'a>, out: &mut Vec<Node<'a>>) {
        let k = walk::kinds();
        let id = v.kind_id();
        if id == k.identifier {
            let t = self.text(v);
            if t != "NULL" && t != "nullptr" {
                out.push(v);
            }
        } else if id == k.parenthesized_expression {
            if let Some(c) = v.named_child(0) {
                self.stored_functions_into(c, out);
            }
        } else if id == k.cast_expression {
            if let Some(c) = k.child(v, k.f_value) {
                self.stored_functions_into(c, out);
            }
        } else if id == k.pointer_expression {
            let amp = v.child(0).is_some_and(|o| self.text(o) == "&");
            if let (true, Some(a)) = (amp, k.child(v, k.f_argument)) {
                if a.kind_id() == k.identifier {
                    out.push(a);
                }
            }
        } else if id == k.conditional_expression {
            for f in [k.f_consequence, k.f_alternative] {
                if let Some(c) = k.child(v, f) {
                    self.stored_functions_into(c, out);
                }
            }
        } else if id == k.call_expression {
            let func = k.child(v, k.f_function);
            let args = k.child(v, k.f_arguments);
            if let (Some(f), Some(a)) = (func, args) {
                if self.table.wrappers.contains(self.text(f)) {
                    if let Some(c) = a.named_child(0) {
                        self.stored_functions_into(c, out);
                    }
                }
            }
        }
    }

    /// The variable named by `&var` (or `var`).
    fn address_of(&self, v: Node<'_>) -> Option<&'a str> {
        let k = walk::kinds();
        let id = v.kind_id();
        if id == k.pointer_expression {
            k.child(v, k.f_argument)
                .filter(|a| a.kind_id() == k.identifier)
                .map(|a| self.text(a))
        } else if id == k.identifier {
            Some(self.text(v))
        } else if id == k.parenthesized_expression || id == k.cast_expression {
            let c = k.child(v, k.f_value).or_else(|| v.named_child(0))?;
            self.address_of(c)
        } else if id == k.call_expression {
            let f = k.child(v, k.f_function)?;
            if self.table.wrappers.contains(self.text(f)) {
                self.address_of(k.child(v, k.f_arguments)?.named_child(0)?)
            } else {
                None
            }
        } else {
            None
        }
    }

    fn slot_struct(&mut self, type_name: &'a str) -> Option<&'a str> {
        let r = self.resolve(type_name);
        self.table.structs.get_key_value(r).map(|(k, _)| k.as_str())
    }

    fn declaration(&mut self, n: Node<'a>) {
        let k = walk::kinds();
        let declared = k.child(n, k.f_type).and_then(|t| type_name(self.pf, t));
        for d in children_by_field(n, k.f_declarator) {
            if d.kind_id() != k.init_declarator {
                continue;
            }
            let (Some(dd), Some(value)) = (k.child(d, k.f_declarator), k.child(d, k.f_value))
            else {
                continue;
            };
            if value.kind_id() != k.initializer_list {
                continue;
            }
            let Some((var, array, _)) = declarator_name(self.pf, dd) else {
                continue;
            };
            let table = self.table;
            let st = match declared.and_then(|t| self.slot_struct(t)) {
                Some(st) => Some(st),
                None => self
                    .inferred
                    .get(var)
                    .and_then(|t| table.structs.get_key_value(*t))
                    .map(|(k, _)| k.as_str()),
            };
            let Some(st) = st else {
                continue;
            };
            if array {
                for elem in walk::named_children(value) {
                    let list = if elem.kind_id() == k.initializer_pair {
                        k.child(elem, k.f_value)
                    } else {
                        Some(elem)
                    };
                    if let Some(l) = list.filter(|l| l.kind_id() == k.initializer_list) {
                        self.initializer(st, st, l, var, "", 0);
                    }
                }
            } else {
                self.initializer(st, st, value, var, "", 0);
            }
        }
    }

    /// Walks an initializer list of slot structure `st` (embedded, at field
    /// path `prefix`, in the variable's structure `outer`).
    fn initializer(
        &mut self,
        st: &str,
        outer: &str,
        list: Node<'a>,
        var: &str,
        prefix: &str,
        depth: usize,
    ) {
        if depth > 8 {
            return;
        }
        let table = self.table;
        let Some(def) = table.structs.get(st) else {
            return;
        };
        let k = walk::kinds();
        let mut pos = 0usize;
        let mut path: Vec<&'a str> = Vec::new();
        for item in walk::named_children(list) {
            let id = item.kind_id();
            if id == k.initializer_pair {
                let Some(value) = k.child(item, k.f_value) else {
                    continue;
                };
                path.clear();
                let mut designators = 0usize;
                for d in children_by_field(item, k.f_designator) {
                    designators += 1;
                    if d.kind_id() == k.field_designator {
                        if let Some(i) = d.named_child(0) {
                            path.push(self.text(i));
                        }
                    }
                }
                if path.len() != designators || path.is_empty() {
                    continue;
                }
                if let Some(i) = def.fields.iter().position(|f| f == path[0]) {
                    pos = i + 1;
                }
                self.store(st, outer, &path, value, var, prefix, depth);
            } else if id == k.call_expression {
                self.fragment(outer, item, var, prefix);
            } else if id != k.comment {
                if def.positional {
                    if let Some(field) = def.fields.get(pos) {
                        self.store(st, outer, &[field.as_str()], item, var, prefix, depth);
                    }
                }
                pos += 1;
            }
        }
    }

    /// `value` stored at designator path `path` of structure `st`.
    #[allow(clippy::too_many_arguments)]
    fn store(
        &mut self,
        st: &str,
        outer: &str,
        path: &[&str],
        value: Node<'a>,
        var: &str,
        prefix: &str,
        depth: usize,
    ) {
        let table = self.table;
        let Some(def) = table.structs.get(st) else {
            return;
        };
        let field = path[0];
        if let Some(inner) = def.nested.get(field) {
            let p = format!("{prefix}{field}.");
            if path.len() > 1 {
                self.store(inner, outer, &path[1..], value, var, &p, depth + 1);
            } else if value.kind_id() == walk::kinds().initializer_list {
                self.initializer(inner, outer, value, var, &p, depth + 1);
            }
            return;
        }
        if path.len() > 1 {
            return;
        }
        if let Some(target) = def.pointers.get(field) {
            if let Some(v) = self.address_of(value) {
                self.inferred.insert(v, target);
            }
            return;
        }
        let is_fn_field = def.functions.iter().any(|f| f == field);
        let known_field = def.fields.iter().any(|f| f == field);
        if !is_fn_field && known_field {
            return;
        }
        let functions = self.stored_functions(value);
        if functions.is_empty() {
            return;
        }
        let full = format!("{prefix}{field}");
        for f in functions {
            let name = self.text(f);
            // A field the table does not know holds a root only when the value
            // is a function of this driver.
            if is_fn_field || self.facts.is_function(name) {
                self.emit(name, outer, &full, f, var);
            }
        }
    }

    /// A table macro used inside an initializer (`SET_SYSTEM_SLEEP_PM_OPS`):
    /// it fills the structure it stands in (dev_pm_ops, also when
    /// embedded); roots name the variable's structure, `outer`.
    fn fragment(&mut self, outer: &str, call: Node<'a>, var: &str, prefix: &str) {
        let k = walk::kinds();
        let Some(fname) = k.child(call, k.f_function) else {
            return;
        };
        let table = self.table;
        let Some(m) = table.macros.get(self.text(fname)) else {
            return;
        };
        if m.var.is_some() {
            return;
        }
        let args = call_args(call);
        for (i, fields) in m.args.iter().enumerate() {
            let Some(&a) = args.get(i) else { continue };
            for f in self.stored_functions(a) {
                let name = self.text(f);
                for field in fields {
                    self.emit(name, outer, &format!("{prefix}{field}"), f, var);
                }
            }
        }
    }

    /// Top-level uses of table macros and registering calls.
    fn call(&mut self, n: Node<'a>) {
        let k = walk::kinds();
        let Some(fname) = k.child(n, k.f_function) else {
            return;
        };
        let name = self.text(fname);
        let table = self.table;
        if let Some(slots) = table.calls.get(name) {
            let args = call_args(n);
            for (pos, st, field) in slots {
                let Some(&a) = args.get(*pos) else { continue };
                for f in self.functions_through_locals(n, a) {
                    let fname = self.text(f);
                    self.emit(fname, st, field, f, "");
                }
            }
            return;
        }
        let Some(m) = table.macros.get(name) else {
            return;
        };
        if inside_initializer(n) {
            return; // handled as a fragment
        }
        if m.var.is_none() && !at_file_scope(n) {
            return;
        }
        let args = call_args(n);
        let var = m
            .var
            .and_then(|i| args.get(i))
            .map(|a| self.text(*a))
            .unwrap_or_default();
        for (i, fields) in m.args.iter().enumerate() {
            let Some(&a) = args.get(i) else { continue };
            for f in self.stored_functions(a) {
                let fname = self.text(f);
                for field in fields {
                    self.emit(fname, &m.struct_name, field, f, var);
                }
            }
        }
        let pf = self.pf;
        for (field, tmpl) in &m.derived {
            if let Some(fname) = derive_name(tmpl, &args, |a| pf.node_text(a)) {
                self.emit(&fname, &m.struct_name, field, n, var);
            }
        }
    }

    /// The member a slot may be stored in: `n` is `x.f = v` / `p->f = v`
    /// (any assignment operator); its left side, field name and value.
    fn member_store(&self, n: Node<'a>) -> Option<(Node<'a>, &'a str, Node<'a>)> {
        let k = walk::kinds();
        let left = k.child(n, k.f_left)?;
        let right = k.child(n, k.f_right)?;
        if left.kind_id() != k.field_expression {
            return None;
        }
        let field = self.text(k.child(left, k.f_field)?);
        Some((left, field, right))
    }

    /// `p->netdev_ops = &ops`: `ops` is a net_device_ops.
    fn pointer_store(&mut self, n: Node<'a>) {
        let Some((left, field, right)) = self.member_store(n) else {
            return;
        };
        // Cheap filter first: only fields some slot structure points with.
        let table = self.table;
        let Some(targets) = table.ptr_field_targets.get(field) else {
            return;
        };
        let Some(var) = self.address_of(right) else {
            return;
        };
        let target = match self.lhs_type(left) {
            Ok(Some(st)) => table.structs[st].pointers.get(field).map(String::as_str),
            Ok(None) => None,
            Err(()) => match targets.as_slice() {
                [t] => Some(t.as_str()),
                _ => None,
            },
        };
        if let Some(t) = target {
            self.inferred.insert(var, t);
        }
    }

    /// `x.f = fn` / `p->f = fn`.
    fn assignment(&mut self, n: Node<'a>) {
        let Some((left, field, right)) = self.member_store(n) else {
            return;
        };
        if n.child(1).is_some_and(|o| self.text(o) != "=") {
            return;
        }
        // Cheap filter first: a slot is a function field of a slot structure
        // (type resolution below is what costs).
        let table = self.table;
        let Some(owners) = table.fn_field_owners.get(field) else {
            return;
        };
        let st: Option<&'a str> = match self.lhs_type(left) {
            Ok(Some(st)) => table.structs[st]
                .functions
                .iter()
                .any(|f| f == field)
                .then_some(st),
            Ok(None) => None,
            // Unknown type: a field that only one slot structure has.
            Err(()) => match owners.as_slice() {
                [o] => Some(o.as_str()),
                _ => None,
            },
        };
        let Some(st) = st else {
            return;
        };
        let k = walk::kinds();
        let var = k
            .child(left, k.f_argument)
            .map(|a| compact(self.text(a)))
            .unwrap_or_default();
        for f in self.functions_through_locals(n, right) {
            let name = self.text(f);
            // The stored value must be a function: one this file knows, or a
            // name that is not a variable.
            if self.facts.is_function(name) || self.facts.global(name).is_none() {
                self.emit(name, st, field, f, &var);
            }
        }
    }

    /// Whether `name` is a parameter or local of the function around `at`.
    fn is_local(&mut self, at: Node<'a>, name: &'a str) -> bool {
        self.local_of(at, name).is_some()
    }

    /// The type name (empty when not a struct or typedef name) of the
    /// parameter or local `name` of the function around `n`.
    fn local_of(&mut self, n: Node<'a>, name: &'a str) -> Option<&'a str> {
        let f = enclosing_function(n)?;
        let key = (f.id(), name);
        if let Some(t) = self.locals.get(&key) {
            return *t;
        }
        let t = local_type(self.pf, f, name);
        self.locals.insert(key, t);
        t
    }

    /// The functions stored by `value` at `at`; a local variable or parameter
    /// is followed to the functions assigned to it in the same function
    /// (`irq_handler_t h = foo_intr; request_irq(irq, h, ...)`), and dropped
    /// when none is.
    fn functions_through_locals(&mut self, at: Node<'a>, value: Node<'a>) -> Vec<Node<'a>> {
        let k = walk::kinds();
        let direct = self.stored_functions(value);
        let mut out = Vec::new();
        for f in direct {
            let name = self.text(f);
            if !self.is_local(at, name) {
                out.push(f);
                continue;
            }
            let Some(func) = enclosing_function(at) else {
                continue;
            };
            // Every value the function stores in `name` (the order does
            // not matter: roots are sorted); only subtrees holding the
            // name's text may name it.
            let mut stored = Vec::new();
            let occ = if name.is_empty() {
                Vec::new()
            } else {
                occurrences(self.pf, func, name)
            };
            let enter = |x: Node<'_>| name.is_empty() || overlaps_any(&occ, name.len(), x);
            post_order(func, enter, |x| {
                let id = x.kind_id();
                let v = if id == k.init_declarator {
                    k.child(x, k.f_declarator)
                        .filter(|d| d.kind_id() == k.identifier && self.text(*d) == name)
                        .and_then(|_| k.child(x, k.f_value))
                } else if id == k.assignment_expression {
                    k.child(x, k.f_left)
                        .filter(|l| l.kind_id() == k.identifier && self.text(*l) == name)
                        .and_then(|_| k.child(x, k.f_right))
                } else {
                    None
                };
                stored.extend(v);
                false
            });
            for v in stored {
                for g in self.stored_functions(v) {
                    if !self.is_local(at, self.text(g)) {
                        out.push(g);
                    }
                }
            }
        }
        out
    }

    /// The slot structure of the object a field expression reads from:
    /// `Ok(Some(st))`, `Ok(None)` when its type is known and is no slot
    /// structure, `Err(())` when its type is unknown.
    fn lhs_type(&mut self, left: Node<'a>) -> Result<Option<&'a str>, ()> {
        let k = walk::kinds();
        let arg = k.child(left, k.f_argument).ok_or(())?;
        match self.type_of(arg, 0) {
            Some(t) if !t.is_empty() => Ok(self.slot_struct(t)),
            _ => Err(()),
        }
    }

    /// The type name of an expression, as far as the file's facts tell.
    fn type_of(&mut self, e: Node<'a>, depth: usize) -> Option<&'a str> {
        if depth > 8 {
            return None;
        }
        let k = walk::kinds();
        let id = e.kind_id();
        if id == k.identifier {
            let name = self.text(e);
            if let Some(t) = self.local_of(e, name) {
                return Some(t);
            }
            if let Some(t) = self.inferred.get(name) {
                return Some(t);
            }
            self.facts.global(name).map(String::as_str)
        } else if id == k.field_expression {
            let base = self.type_of(k.child(e, k.f_argument)?, depth + 1)?;
            let field = self.text(k.child(e, k.f_field)?);
            let resolved = self.resolve(base);
            if let Some(t) = self.struct_fields(resolved).and_then(|m| m.get(field)) {
                return Some(t);
            }
            // Slot structures embed others (`ndev->watchdog_timer`).
            let def = self.table.structs.get(resolved)?;
            def.nested
                .get(field)
                .or_else(|| def.pointers.get(field))
                .map(String::as_str)
        } else if id == k.parenthesized_expression {
            self.type_of(e.named_child(0)?, depth + 1)
        } else if id == k.pointer_expression || id == k.subscript_expression {
            self.type_of(k.child(e, k.f_argument)?, depth + 1)
        } else if id == k.cast_expression {
            let td = k.child(e, k.f_type)?;
            type_name(self.pf, k.child(td, k.f_type)?)
        } else {
            None
        }
    }
}

/// The parameters and locals declared anywhere in function `f` (name ->
/// type name, empty when not a struct or typedef name).  Of several
/// declarations of one name the first in post-order (children before their
/// parent, left to right) wins (a function-pointer local counts too: a
/// prototype inside a body is rare enough to shadow nothing).
pub(super) fn scope_map<'a>(pf: &'a ParsedFile, f: Node<'_>) -> HashMap<&'a str, &'a str> {
    let mut m = HashMap::new();
    post_order_declarations(
        f,
        |_| true,
        |x| {
            let t = declared_type(pf, x);
            for name in declared_names(pf, x) {
                m.entry(name).or_insert(t);
            }
            false
        },
    );
    m
}

/// [`scope_map`]`(pf, f).get(name)`, looking only at the subtrees that
/// overlap an occurrence of `name` in the text (the name a declarator
/// declares is the text of a node inside it).
pub(super) fn local_type<'a>(pf: &'a ParsedFile, f: Node<'_>, name: &str) -> Option<&'a str> {
    if name.is_empty() {
        return scope_map(pf, f).get(name).copied();
    }
    let at = occurrences(pf, f, name);
    if at.is_empty() {
        return None;
    }
    let overlaps = |n: Node<'_>| overlaps_any(&at, name.len(), n);
    let mut found = None;
    post_order_declarations(f, overlaps, |x| {
        if declared_names(pf, x).any(|n| n == name) {
            found = Some(declared_type(pf, x));
            return true;
        }
        false
    });
    found
}

/// The start of every occurrence of `name` (not empty) in the text of `n`,
/// overlapping ones too, in order.
pub(super) fn occurrences(pf: &ParsedFile, n: Node<'_>, name: &str) -> Vec<usize> {
    let text = pf.text.as_bytes();
    let (start, end) = (n.start_byte(), n.end_byte().min(text.len()));
    let finder = memchr::memmem::Finder::new(name);
    let mut at = Vec::new();
    let mut pos = start;
    while pos < end {
        match finder.find(&text[pos..end]) {
            Some(i) => {
                at.push(pos + i);
                pos += i + 1;
            }
            None => break,
        }
    }
    at
}

/// Whether node `n` overlaps one of the ranges `at[i]..at[i] + len`
/// (`at` in order).
pub(super) fn overlaps_any(at: &[usize], len: usize, n: Node<'_>) -> bool {
    let (s, e) = (n.start_byte(), n.end_byte());
    let i = at.partition_point(|&p| p + len <= s);
    at.get(i).is_some_and(|&p| p < e)
}

/// The type name a declaration or parameter declaration `x` gives its
/// names (empty when not a struct or typedef name).
pub(super) fn declared_type<'a>(pf: &'a ParsedFile, x: Node<'_>) -> &'a str {
    let k = walk::kinds();
    k.child(x, k.f_type)
        .and_then(|t| type_name(pf, t))
        .unwrap_or("")
}

/// The names the declarators of `x` declare.
pub(super) fn declared_names<'a, 't>(
    pf: &'a ParsedFile,
    x: Node<'t>,
) -> impl Iterator<Item = &'a str> + 't
where
    'a: 't,
{
    let k = walk::kinds();
    children_by_field(x, k.f_declarator)
        .filter_map(move |d| declarator_name(pf, d).map(|(name, _, _)| name))
}

/// Calls `f` on the declarations and parameter declarations of the subtree
/// of `root` in post-order (children before their parent, left to right),
/// entering only nodes `enter` accepts (`root` is), until `f` says stop.
pub(super) fn post_order_declarations<'t>(
    root: Node<'t>,
    enter: impl Fn(Node<'t>) -> bool,
    mut f: impl FnMut(Node<'t>) -> bool,
) {
    let k = walk::kinds();
    post_order(root, enter, |x| {
        let id = x.kind_id();
        (id == k.parameter_declaration || id == k.declaration) && f(x)
    });
}

/// Calls `f` on the nodes of the subtree of `root` in post-order (children
/// before their parent, left to right), entering only nodes `enter` accepts
/// (`root` is), until `f` says stop.
pub(super) fn post_order<'t>(
    root: Node<'t>,
    enter: impl Fn(Node<'t>) -> bool,
    mut f: impl FnMut(Node<'t>) -> bool,
) {
    let mut c = root.walk();
    // To the first child `enter` accepts (`false`: none, the cursor stays).
    let first_child = |c: &mut tree_sitter::TreeCursor<'t>| {
        if !c.goto_first_child() {
            return false;
        }
        loop {
            if enter(c.node()) {
                return true;
            }
            if !c.goto_next_sibling() {
                c.goto_parent();
                return false;
            }
        }
    };
    'walk: loop {
        while first_child(&mut c) {}
        loop {
            if f(c.node()) {
                return;
            }
            // The next sibling `enter` accepts.
            loop {
                if !c.goto_next_sibling() {
                    break;
                }
                if enter(c.node()) {
                    continue 'walk;
                }
            }
            if !c.goto_parent() {
                return;
            }
        }
    }
}

pub(super) fn enclosing_function(n: Node<'_>) -> Option<Node<'_>> {
    let k = walk::kinds();
    let mut f = n;
    while f.kind_id() != k.function_definition {
        f = f.parent()?;
    }
    Some(f)
}

pub(super) fn compact(s: &str) -> String {
    s.split_whitespace().collect()
}

pub(super) fn call_args(call: Node<'_>) -> Vec<Node<'_>> {
    let k = walk::kinds();
    k.child(call, k.f_arguments)
        .map(|a| {
            walk::named_children(a)
                .filter(|c| c.kind_id() != k.comment)
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn inside_initializer(n: Node<'_>) -> bool {
    let k = walk::kinds();
    let mut p = n.parent();
    while let Some(x) = p {
        let id = x.kind_id();
        if id == k.initializer_list {
            return true;
        }
        if id == k.function_definition || id == k.translation_unit || id == k.compound_statement {
            return false;
        }
        p = x.parent();
    }
    false
}

pub(super) fn at_file_scope(n: Node<'_>) -> bool {
    let k = walk::kinds();
    let mut p = n.parent();
    while let Some(x) = p {
        let id = x.kind_id();
        if id == k.function_definition {
            return false;
        }
        if id == k.translation_unit {
            return true;
        }
        p = x.parent();
    }
    true
}

/// Fills `{k}` in `tmpl` with argument `k`'s text.
pub(super) fn derive_name<'n>(
    tmpl: &str,
    args: &[Node<'n>],
    text: impl Fn(Node<'n>) -> &'n str,
) -> Option<String> {
    let mut out = String::new();
    let mut rest = tmpl;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}')? + open;
        let k: usize = rest[open + 1..close].parse().ok()?;
        let a = text(*args.get(k)?);
        if !ident::is_word(a) {
            return None;
        }
        out.push_str(a);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Some(out)
}

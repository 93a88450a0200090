//! Values in a driver function's body, as allocation-site inference reads
//! them: the allocator call an expression is (through casts, a local's one
//! value, a driver function or an ops pointer that returns the call), and
//! the value a local has at a point of the function.

use super::{atom, lex_subst};
use fgft_facts::program::{FnDef, Program};
use tree_sitter::Node;

/// The body of `d`, a node of its file's tree.
pub(super) fn body_of<'t>(pf: &'t fgft_parse::ParsedFile, d: &FnDef) -> Option<Node<'t>> {
    pf.tree
        .root_node()
        .descendant_for_byte_range(d.body.start, d.body.end)
}

/// What driver function `f` returns when it returns one allocator call
/// (`return ALLOC(...)`, or a local whose one value is that call; `return
/// NULL` and error pointers aside): the allocator and its arguments with
/// `f`'s parameters replaced by `args`, the caller's.
pub(super) fn wrapped_alloc(
    prog: &Program,
    f: &str,
    args: &[String],
) -> Option<(String, Vec<String>)> {
    let d = prog.def(f)?;
    if d.params.len() != args.len() {
        return None;
    }
    let pf = &prog.files[d.file];
    let text = pf.text.as_str();
    let body = body_of(pf, d)?;
    let mut found: Option<(String, Vec<String>)> = None;
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        let mut c = n.walk();
        for ch in n.named_children(&mut c) {
            stack.push(ch);
        }
        if n.kind() != "return_statement" {
            continue;
        }
        let v = n.named_child(0)?;
        let bare = strip_casts(v)?;
        let vt = text[bare.byte_range()].trim();
        if vt == "NULL" || vt == "0" || vt.starts_with("ERR_PTR") {
            continue;
        }
        let call = alloc_call(v, text).or_else(|| {
            (bare.kind() == "identifier")
                .then(|| local_alloc(body, text, vt))
                .flatten()
        })?;
        match &found {
            Some(prev) if *prev != call => return None,
            _ => found = Some(call),
        }
    }
    let (api, inner) = found?;
    let names: Vec<&str> = d.params.iter().map(|p| p.name.as_str()).collect();
    let mapped = inner
        .iter()
        .map(|a| {
            lex_subst(a, |id| {
                names.iter().position(|n| *n == id).map(|i| atom(&args[i]))
            })
        })
        .collect();
    Some((api, mapped))
}

/// A call through a pointer (niu's `np->ops->alloc_coherent(...)`) whose
/// every target, all of them known, is a driver function that returns the
/// same allocator call over this call's arguments: that call.
pub(super) fn ops_alloc(
    prog: &Program,
    icalls: &crate::icall::Icalls,
    file: usize,
    call: Node<'_>,
    text: &str,
) -> Option<(String, Vec<String>)> {
    if call.kind() != "call_expression" {
        return None;
    }
    let site = icalls.sites.get(&(file, call.start_byte()))?;
    if !site.complete || site.targets.is_empty() || !site.kernel.is_empty() {
        return None;
    }
    let args = call_args(call, text)?;
    let mut found = None;
    for t in &site.targets {
        let got = wrapped_alloc(prog, t, &args)?;
        match &found {
            Some(prev) if *prev != got => return None,
            _ => found = Some(got),
        }
    }
    found
}

/// `ALLOC(args)`, through casts and parentheses: the callee and the
/// argument texts.
pub(super) fn alloc_call(n: Node<'_>, text: &str) -> Option<(String, Vec<String>)> {
    let n = strip_casts(n)?;
    if n.kind() != "call_expression" {
        return None;
    }
    let f = n.child_by_field_name("function")?;
    if f.kind() != "identifier" {
        return None;
    }
    Some((text[f.byte_range()].to_string(), call_args(n, text)?))
}

/// The argument texts of the call expression `call` (comments aside).
fn call_args(call: Node<'_>, text: &str) -> Option<Vec<String>> {
    let a = call.child_by_field_name("arguments")?;
    let mut c = a.walk();
    let args = a
        .named_children(&mut c)
        .filter(|x| x.kind() != "comment")
        .map(|x| text[x.byte_range()].to_string())
        .collect();
    Some(args)
}

/// `n` through casts and parentheses.
pub(super) fn strip_casts(mut n: Node<'_>) -> Option<Node<'_>> {
    loop {
        match n.kind() {
            "cast_expression" => n = n.child_by_field_name("value")?,
            "parenthesized_expression" => n = n.named_child(0)?,
            _ => return Some(n),
        }
    }
}

/// Every value local `name` is given in the function `body` (`T *name =
/// v;`, `name = v;`); None when one is a compound assignment (`+=`).
pub(super) fn local_values<'t>(body: Node<'t>, text: &str, name: &str) -> Option<Vec<Node<'t>>> {
    let mut vals: Vec<Node<'t>> = Vec::new();
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        let mut c = n.walk();
        for ch in n.named_children(&mut c) {
            stack.push(ch);
        }
        let (target, value) = match n.kind() {
            "init_declarator" => (
                n.child_by_field_name("declarator"),
                n.child_by_field_name("value"),
            ),
            "assignment_expression" => (
                n.child_by_field_name("left"),
                n.child_by_field_name("right"),
            ),
            _ => continue,
        };
        let (Some(mut t), Some(v)) = (target, value) else {
            continue;
        };
        while t.kind() == "pointer_declarator" {
            match t.child_by_field_name("declarator") {
                Some(x) => t = x,
                None => break,
            }
        }
        if t.kind() != "identifier" || &text[t.byte_range()] != name {
            continue;
        }
        let op = n
            .child_by_field_name("operator")
            .map(|o| &text[o.byte_range()]);
        if n.kind() == "assignment_expression" && op != Some("=") {
            return None;
        }
        vals.push(v);
    }
    Some(vals)
}

/// `size = A; size += B;` before `at`, in straight-line code of `body`
/// (vmxnet3 sizes its queue descriptors so): `(A) + (B)`.  None when an
/// assignment is another compound one, stands after `at`, or sits in a
/// branch or loop.
pub(super) fn accumulated_value(
    body: Node<'_>,
    text: &str,
    name: &str,
    at: usize,
) -> Option<String> {
    let mut parts: Vec<(usize, bool, String)> = Vec::new();
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
        let (target, value, op) = match n.kind() {
            "init_declarator" => (
                n.child_by_field_name("declarator"),
                n.child_by_field_name("value"),
                "=",
            ),
            "assignment_expression" => (
                n.child_by_field_name("left"),
                n.child_by_field_name("right"),
                n.child_by_field_name("operator")
                    .map_or("", |o| &text[o.byte_range()]),
            ),
            _ => continue,
        };
        let (Some(t), Some(v)) = (target, value) else {
            continue;
        };
        if t.kind() != "identifier" || &text[t.byte_range()] != name {
            continue;
        }
        if !matches!(op, "=" | "+=") || n.end_byte() > at {
            return None;
        }
        let mut up = n.parent();
        while let Some(p) = up.filter(|p| p.id() != body.id()) {
            if matches!(
                p.kind(),
                "if_statement"
                    | "for_statement"
                    | "while_statement"
                    | "do_statement"
                    | "switch_statement"
            ) {
                return None;
            }
            up = p.parent();
        }
        let spelled = text[v.byte_range()]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        parts.push((n.start_byte(), op == "=", spelled));
    }
    parts.sort_by_key(|p| p.0);
    match parts.as_slice() {
        [(_, true, _), rest @ ..] if !rest.is_empty() && rest.iter().all(|p| !p.1) => Some(
            parts
                .iter()
                .map(|p| format!("({})", p.2))
                .collect::<Vec<_>>()
                .join(" + "),
        ),
        _ => None,
    }
}

/// The one allocation call local `name` is given in the function `body`.
pub(super) fn local_alloc(body: Node<'_>, text: &str, name: &str) -> Option<(String, Vec<String>)> {
    match local_values(body, text, name)?.as_slice() {
        [one] => alloc_call(*one, text),
        _ => None,
    }
}

/// The one value local `name` is given in `d` (`size_t size = expr;` or
/// `size = expr;`), when every assignment gives the same text.
/// The value local `name` has at byte `at` of `d`: its one value, or, when
/// it is given several, the last one given before `at` on the way there
/// (not in a branch or loop `at` is outside of: `size = A; alloc(size);
/// size = B; alloc(size);`).
pub(super) fn local_value(
    pf: &fgft_parse::ParsedFile,
    d: &FnDef,
    name: &str,
    at: usize,
) -> Option<String> {
    let text = pf.text.as_str();
    let body = body_of(pf, d)?;
    let spelled = |v: &Node<'_>| {
        text[v.byte_range()]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let Some(nodes) = local_values(body, text, name) else {
        return accumulated_value(body, text, name, at);
    };
    let mut vals: Vec<String> = nodes.iter().map(spelled).collect();
    vals.sort();
    vals.dedup();
    if let [one] = vals.as_slice() {
        return Some(one.clone());
    }
    let last = nodes
        .iter()
        .filter(|v| v.end_byte() <= at)
        .max_by_key(|v| v.start_byte())?;
    let mut up = last.parent();
    while let Some(n) = up {
        if n.id() == body.id() {
            break;
        }
        let branch = matches!(
            n.kind(),
            "if_statement"
                | "for_statement"
                | "while_statement"
                | "do_statement"
                | "switch_statement"
                | "case_statement"
                | "conditional_expression"
        );
        if branch && !(n.start_byte() <= at && at < n.end_byte()) {
            return None;
        }
        up = n.parent();
    }
    Some(spelled(last))
}

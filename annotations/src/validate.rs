//! Checks shared by the sidecar reader and the inline scanner.

use crate::{AnnotError, Hint, HintKind, Loc};
use fgft_base::ident::{self, is_ident};

fn invalid(loc: &Loc, msg: String) -> AnnotError {
    AnnotError::Invalid {
        loc: loc.clone(),
        msg,
    }
}

/// A C identifier naming `what`.
pub(crate) fn ident(s: &str, loc: &Loc, what: &str) -> Result<String, AnnotError> {
    let t = s.trim();
    if is_ident(t) {
        Ok(t.to_string())
    } else {
        Err(invalid(loc, format!("{what} `{s}` is not a C identifier")))
    }
}

/// A struct or union name; a leading `struct ` or `union ` is accepted and
/// dropped.
pub(crate) fn struct_name(s: &str, loc: &Loc) -> Result<String, AnnotError> {
    let t = s.trim();
    let t = t
        .strip_prefix("struct ")
        .or_else(|| t.strip_prefix("union "))
        .unwrap_or(t);
    ident(t, loc, "struct name")
}

/// A member designator: `a` or `a.b.c` (as in `offsetof`).
pub(crate) fn member_path(s: &str, loc: &Loc) -> Result<String, AnnotError> {
    let t = s.trim();
    if !t.is_empty() && t.split('.').all(is_ident) {
        Ok(t.to_string())
    } else {
        Err(invalid(
            loc,
            format!("member `{s}` is not a member name such as `dev` or `a.b`"),
        ))
    }
}

/// Parses `wrapped` (a small C function holding `piece`) and reports
/// whether tree-sitter found it well-formed.
fn parses_cleanly(wrapped: &str) -> bool {
    thread_local! {
        static PARSER: std::cell::RefCell<Option<tree_sitter::Parser>> = const { std::cell::RefCell::new(None) };
    }
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut p = tree_sitter::Parser::new();
            if p.set_language(&tree_sitter_c::LANGUAGE.into()).is_err() {
                return false;
            }
            *slot = Some(p);
        }
        match slot.as_mut().and_then(|p| p.parse(wrapped, None)) {
            Some(tree) => !tree.root_node().has_error(),
            None => false,
        }
    })
}

fn balanced(s: &str) -> bool {
    let mut depth: i64 = 0;
    for c in s.chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            ';' | '{' | '}' => return false,
            _ => {}
        }
    }
    depth == 0
}

/// A C expression (the length of a blob).
pub(crate) fn c_expr(s: &str, loc: &Loc) -> Result<String, AnnotError> {
    len_expr(s, loc, "blob")
}

/// A C expression: the length of a `what` (blob, shared) hint.
pub(crate) fn len_expr(s: &str, loc: &Loc, what: &str) -> Result<String, AnnotError> {
    let t = s.trim();
    if t.is_empty() || !balanced(t) || !parses_cleanly(&format!("void f(void) {{ (void)({t}); }}"))
    {
        return Err(invalid(
            loc,
            format!("{what} length `{s}` is not a C expression"),
        ));
    }
    Ok(t.to_string())
}

/// A C expression over `key` (a `void *`, the transaction's device key)
/// that yields what the checkpoint and restore functions take.
pub(crate) fn key_expr(s: &str, loc: &Loc) -> Result<String, AnnotError> {
    let t = s.trim();
    let names_key = t.split(|c: char| !ident::is_char(c)).any(|w| w == "key");
    if t.is_empty()
        || !balanced(t)
        || !parses_cleanly(&format!("void f(void *key) {{ (void)({t}); }}"))
    {
        return Err(invalid(
            loc,
            format!("key-to-dev `{s}` is not a C expression"),
        ));
    }
    if !names_key {
        return Err(invalid(
            loc,
            format!("key-to-dev `{s}` does not use `key` (the transaction's device key, a void *)"),
        ));
    }
    Ok(t.to_string())
}

/// A C type name (the target of an opaque hint).
pub(crate) fn c_type(s: &str, loc: &Loc) -> Result<String, AnnotError> {
    let t = s.trim();
    if t.is_empty()
        || !balanced(t)
        || !parses_cleanly(&format!("void f(void) {{ (void)sizeof({t}); }}"))
    {
        return Err(invalid(
            loc,
            format!("opaque type `{s}` is not a C type name"),
        ));
    }
    Ok(t.to_string())
}

/// The hint kinds, as spelt in `kind = "..."`.
pub(crate) const KINDS: &[&str] = &[
    "nullterm",
    "blob",
    "opaque",
    "noderef",
    "recursive",
    "container",
    "shared",
];

/// Adds `h` to `hints` unless an equal hint is there; a different hint on
/// the same target is a conflict.
pub(crate) fn add_hint(hints: &mut Vec<Hint>, h: Hint) -> Result<(), AnnotError> {
    if let Some(prev) = hints.iter().find(|p| p.target == h.target) {
        if prev.kind == h.kind {
            return Ok(());
        }
        return Err(AnnotError::Conflict {
            loc: h.loc.clone(),
            msg: format!(
                "hint `{}` on {} contradicts hint `{}` on it",
                describe(&h.kind),
                h.target,
                describe(&prev.kind)
            ),
            previous: Box::new(prev.loc.clone()),
        });
    }
    hints.push(h);
    Ok(())
}

fn describe(k: &HintKind) -> String {
    match k {
        HintKind::Blob { len } => format!("blob({len})"),
        HintKind::Opaque { ty } => format!("opaque({ty})"),
        HintKind::Container { outer, member } => format!("container({outer}, {member})"),
        HintKind::Shared { len, rights } => format!("shared({len}, {})", rights.name()),
        k => k.name().to_string(),
    }
}

//! Parse health: which top-level functions hold ERROR or MISSING nodes.
//!
//! A "top-level function" is a `function_definition` not nested in another one
//! (it may sit inside `#if` blocks).  Errors outside every function (for
//! example a function that tree-sitter folded into an ERROR node) are listed
//! separately, so a file never looks healthier than it is.

use crate::ParsedFile;
use std::ops::Range;
use tree_sitter::Node;

/// Health of one top-level function.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FunctionHealth {
    /// The function's name (`?` when tree-sitter could not find one).
    pub name: String,
    pub range: Range<usize>,
    /// 1-based line of the definition's start.
    pub line: usize,
    /// Holds an ERROR node.
    pub error: bool,
    /// Holds a MISSING node.
    pub missing: bool,
    /// Byte offset of the first ERROR or MISSING node.
    pub first_problem: Option<usize>,
}

impl FunctionHealth {
    /// Whether the function parsed cleanly.
    pub fn ok(&self) -> bool {
        !self.error && !self.missing
    }
}

/// Health of one file.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Health {
    pub functions: Vec<FunctionHealth>,
    /// ERROR or MISSING nodes outside every function definition.
    pub stray: Vec<Range<usize>>,
}

impl Health {
    /// Functions with an ERROR or MISSING node.
    pub fn broken(&self) -> impl Iterator<Item = &FunctionHealth> {
        self.functions.iter().filter(|f| !f.ok())
    }
}

/// Computes the health of a parsed file.
pub fn of(pf: &ParsedFile) -> Health {
    let mut h = Health::default();
    walk(&pf.tree, pf.hinted.as_bytes(), false, |n, stray| {
        if stray {
            h.stray.push(n.byte_range());
            return;
        }
        let (error, missing, first) = problems(n);
        h.functions.push(FunctionHealth {
            name: crate::function_name(pf, n).unwrap_or("?").to_string(),
            range: n.byte_range(),
            line: n.start_position().row + 1,
            error,
            missing,
            first_problem: first,
        });
    });
    h.functions.sort_by_key(|f| f.range.start);
    h.stray.sort_by_key(|r| r.start);
    h
}

/// Byte ranges that do not parse: broken top-level functions and stray
/// ERROR/MISSING nodes, in file order.  `text` is the text the tree was
/// parsed from.
pub fn problem_regions(tree: &tree_sitter::Tree, text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    walk(tree, text.as_bytes(), true, |n, stray| {
        if stray || n.has_error() {
            out.push(n.byte_range());
        }
    });
    out.sort_by_key(|r| r.start);
    out
}

/// ERROR and MISSING nodes outside every function definition ([`Health`]'s
/// `stray`), in file order, without looking into the functions.
pub fn stray(tree: &tree_sitter::Tree, text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    walk(tree, text.as_bytes(), true, |n, stray| {
        if stray {
            out.push(n.byte_range());
        }
    });
    out.sort_by_key(|r| r.start);
    out
}

/// Whether top-level function `n` holds an ERROR or MISSING node (is not
/// [`FunctionHealth::ok`]).
pub fn is_broken(n: Node<'_>) -> bool {
    let (error, missing, _) = problems(n);
    error || missing
}

/// Calls `f(node, false)` for every top-level function definition and
/// `f(node, true)` for every ERROR/MISSING node outside them.  A clean data
/// table holds neither and is skipped (`text`: the parsed text).
///
/// With `problems_only`, a subtree whose root neither is nor holds an ERROR
/// or MISSING node is not entered (so only functions among such subtrees
/// are seen).  An ERROR node may itself cost nothing, so `has_error` is
/// false on it: it is reported before the check.  Its ancestors hold other
/// errors: over drivers/net, drivers/usb, drivers/scsi and sound/ no ERROR
/// or MISSING node sits below a node without `has_error`.
fn walk<'t>(
    tree: &'t tree_sitter::Tree,
    text: &[u8],
    problems_only: bool,
    mut f: impl FnMut(Node<'t>, bool),
) {
    let k = crate::walk::kinds();
    crate::walk::preorder(tree.root_node(), |n, _| {
        if n.kind_id() == k.function_definition {
            f(n, false);
            return false;
        }
        if n.is_error() || n.is_missing() {
            f(n, true);
        }
        (!problems_only || n.has_error()) && !crate::walk::skippable(text, n, k, false)
    });
}

/// (has ERROR, has MISSING, first problem offset) of a subtree.
fn problems(n: Node<'_>) -> (bool, bool, Option<usize>) {
    if !n.has_error() {
        return (false, false, None);
    }
    let (mut error, mut missing, mut first) = (false, false, None::<usize>);
    let mut stack = vec![n];
    while let Some(x) = stack.pop() {
        if x.is_error() {
            error = true;
        }
        if x.is_missing() {
            missing = true;
        }
        if x.is_error() || x.is_missing() {
            first = Some(first.map_or(x.start_byte(), |f| f.min(x.start_byte())));
            continue;
        }
        if x.has_error() {
            let mut c = x.walk();
            stack.extend(x.children(&mut c));
        }
    }
    (error, missing, first)
}

#[cfg(test)]
mod tests {
    use crate::{parse_text_with, Options};
    use std::path::Path;

    #[test]
    fn finds_broken_functions() {
        let src = "int good(void) { return 1; }\n\
                   int bad(void) { x = ; return 2; }\n\
                   int miss(void) { return 3 }\n\
                   #ifdef X\nint inner(void) { return 4; }\n#endif\n";
        let pf = parse_text_with(Path::new("t.c"), src.into(), &Options::raw()).unwrap();
        let h = pf.health();
        let names: Vec<_> = h
            .functions
            .iter()
            .map(|f| (f.name.as_str(), f.ok()))
            .collect();
        assert_eq!(
            names,
            [
                ("good", true),
                ("bad", false),
                ("miss", false),
                ("inner", true)
            ]
        );
        assert!(h.functions[1].error);
        assert!(h.functions[2].missing);
        assert_eq!(h.functions[1].line, 2);
        assert_eq!(h.broken().count(), 2);
    }

    #[test]
    fn hints_fix_kernel_idioms() {
        let src = "static int __init f(void __iomem *p)\n{\n\tlist_for_each_entry(x, &h, l)\n\t\tg(x);\n\treturn 0;\n}\n";
        let raw = parse_text_with(Path::new("t.c"), src.into(), &Options::raw()).unwrap();
        let rh = raw.health();
        assert!(rh.broken().count() + rh.stray.len() > 0);
        let hinted = crate::parse_text(Path::new("t.c"), src.into()).unwrap();
        let h = hinted.health();
        assert_eq!(h.functions.len(), 1);
        assert_eq!(h.broken().count(), 0);
        assert_eq!(h.functions[0].name, "f");
    }
}

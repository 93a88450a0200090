//! Fast whole-file walks.
//!
//! Every pass over a tree (health, slot facts, roots, the survey) visits
//! nodes in pre-order with a [`tree_sitter::TreeCursor`] and compares kinds
//! and fields as numbers looked up once ([`kinds`]): `Node::kind()` converts
//! a C string on every call and `child_by_field_name` compares field names
//! one by one.
//!
//! [`plain_initializer`] is the one pruning rule the walks share: a file-scope
//! data table (`static const u32 tbl[] = { 0x1, 0x2, ... }`) holds nothing
//! any pass looks for, and skipping it saves most of the walk of table files.

use std::num::NonZeroU16;
use std::sync::OnceLock;
use tree_sitter::Node;

/// Node kind ids and field ids of tree-sitter-c used by the walks.
#[derive(Debug)]
pub struct Kinds {
    pub translation_unit: u16,
    pub function_definition: u16,
    pub declaration: u16,
    pub init_declarator: u16,
    pub initializer_list: u16,
    pub initializer_pair: u16,
    pub enumerator_list: u16,
    pub assignment_expression: u16,
    pub call_expression: u16,
    pub struct_specifier: u16,
    pub union_specifier: u16,
    pub type_definition: u16,
    pub compound_statement: u16,
    pub field_declaration: u16,
    pub parameter_declaration: u16,
    pub identifier: u16,
    pub field_identifier: u16,
    pub type_identifier: u16,
    pub field_expression: u16,
    pub parenthesized_expression: u16,
    pub cast_expression: u16,
    pub pointer_expression: u16,
    pub subscript_expression: u16,
    pub conditional_expression: u16,
    pub binary_expression: u16,
    pub preproc_function_def: u16,
    pub comment: u16,
    pub function_declarator: u16,
    pub pointer_declarator: u16,
    pub parenthesized_declarator: u16,
    pub attributed_declarator: u16,
    pub array_declarator: u16,
    pub field_designator: u16,
    /// Kinds whose name starts with `preproc_`.
    preproc: Vec<bool>,
    /// Kinds whose children are tokens and names only (literals, strings,
    /// object-like macro definitions, includes): no walk needs to enter them.
    opaque: Vec<bool>,
    pub f_declarator: Option<NonZeroU16>,
    pub f_type: Option<NonZeroU16>,
    pub f_body: Option<NonZeroU16>,
    pub f_name: Option<NonZeroU16>,
    pub f_value: Option<NonZeroU16>,
    pub f_left: Option<NonZeroU16>,
    pub f_right: Option<NonZeroU16>,
    pub f_function: Option<NonZeroU16>,
    pub f_arguments: Option<NonZeroU16>,
    pub f_argument: Option<NonZeroU16>,
    pub f_field: Option<NonZeroU16>,
    pub f_operator: Option<NonZeroU16>,
    pub f_designator: Option<NonZeroU16>,
    pub f_consequence: Option<NonZeroU16>,
    pub f_alternative: Option<NonZeroU16>,
}

impl Kinds {
    /// The child of `n` in field `f` (a field the grammar lacks gives `None`).
    #[inline]
    pub fn child<'t>(&self, n: Node<'t>, f: Option<NonZeroU16>) -> Option<Node<'t>> {
        n.child_by_field_id(f?.get())
    }

    /// Whether kind `id` is a `preproc_*` kind.
    #[inline]
    pub fn is_preproc(&self, id: u16) -> bool {
        self.preproc.get(id as usize).copied().unwrap_or(false)
    }

    /// Whether nodes of kind `id` hold only tokens, literals and names
    /// (`string_literal`, `concatenated_string`, `char_literal`,
    /// `preproc_def`, `preproc_include`, `preproc_call`): walks need not
    /// enter them (an ERROR node inside would make them `has_error`).
    #[inline]
    pub fn is_opaque(&self, id: u16) -> bool {
        self.opaque.get(id as usize).copied().unwrap_or(false)
    }
}

/// The kind and field ids of tree-sitter-c, looked up once.
pub fn kinds() -> &'static Kinds {
    static K: OnceLock<Kinds> = OnceLock::new();
    K.get_or_init(|| {
        let lang: tree_sitter::Language = tree_sitter_c::LANGUAGE.into();
        let id = |k: &str| lang.id_for_node_kind(k, true);
        let f = |k: &str| lang.field_id_for_name(k);
        let preproc = (0..lang.node_kind_count())
            .map(|i| {
                lang.node_kind_for_id(i as u16)
                    .is_some_and(|n| n.starts_with("preproc_"))
                    && lang.node_kind_is_named(i as u16)
            })
            .collect();
        let mut opaque = vec![false; lang.node_kind_count()];
        for name in [
            "string_literal",
            "concatenated_string",
            "char_literal",
            "preproc_def",
            "preproc_include",
            "preproc_call",
        ] {
            let i = id(name) as usize;
            if i != 0 && i < opaque.len() {
                opaque[i] = true;
            }
        }
        Kinds {
            translation_unit: id("translation_unit"),
            function_definition: id("function_definition"),
            declaration: id("declaration"),
            init_declarator: id("init_declarator"),
            initializer_list: id("initializer_list"),
            initializer_pair: id("initializer_pair"),
            enumerator_list: id("enumerator_list"),
            assignment_expression: id("assignment_expression"),
            call_expression: id("call_expression"),
            struct_specifier: id("struct_specifier"),
            union_specifier: id("union_specifier"),
            type_definition: id("type_definition"),
            compound_statement: id("compound_statement"),
            field_declaration: id("field_declaration"),
            parameter_declaration: id("parameter_declaration"),
            identifier: id("identifier"),
            field_identifier: id("field_identifier"),
            type_identifier: id("type_identifier"),
            field_expression: id("field_expression"),
            parenthesized_expression: id("parenthesized_expression"),
            cast_expression: id("cast_expression"),
            pointer_expression: id("pointer_expression"),
            subscript_expression: id("subscript_expression"),
            conditional_expression: id("conditional_expression"),
            binary_expression: id("binary_expression"),
            preproc_function_def: id("preproc_function_def"),
            comment: id("comment"),
            function_declarator: id("function_declarator"),
            pointer_declarator: id("pointer_declarator"),
            parenthesized_declarator: id("parenthesized_declarator"),
            attributed_declarator: id("attributed_declarator"),
            array_declarator: id("array_declarator"),
            field_designator: id("field_designator"),
            preproc,
            opaque,
            f_declarator: f("declarator"),
            f_type: f("type"),
            f_body: f("body"),
            f_name: f("name"),
            f_value: f("value"),
            f_left: f("left"),
            f_right: f("right"),
            f_function: f("function"),
            f_arguments: f("arguments"),
            f_argument: f("argument"),
            f_field: f("field"),
            f_operator: f("operator"),
            f_designator: f("designator"),
            f_consequence: f("consequence"),
            f_alternative: f("alternative"),
        }
    })
}

/// Pre-order walk of the subtree of `root` (in document order):
/// `f(node, depth)` is called for every node (`depth` counts from `root`,
/// which is 0) and returns whether to descend into its children.
pub fn preorder<'t>(root: Node<'t>, mut f: impl FnMut(Node<'t>, u32) -> bool) {
    // `TreeCursor::depth` walks the cursor's stack: count here instead.
    let mut c = root.walk();
    let mut depth = 0u32;
    loop {
        let n = c.node();
        if f(n, depth) && c.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if c.goto_next_sibling() {
                break;
            }
            if !c.goto_parent() {
                return;
            }
            depth -= 1;
        }
    }
}

/// The children of `n` with their field ids, in order, without collecting
/// them (one cursor; `Node::child(k)` is O(k)).
pub fn children_with_fields<'t>(
    n: Node<'t>,
) -> impl Iterator<Item = (Node<'t>, Option<NonZeroU16>)> {
    let mut c = n.walk();
    let mut started = false;
    std::iter::from_fn(move || {
        let moved = if started {
            c.goto_next_sibling()
        } else {
            started = true;
            c.goto_first_child()
        };
        moved.then(|| (c.node(), c.field_id()))
    })
}

/// The named children of `n`, in order, without collecting them.
pub fn named_children<'t>(n: Node<'t>) -> impl Iterator<Item = Node<'t>> {
    children_with_fields(n)
        .map(|(x, _)| x)
        .filter(|x| x.is_named())
}

/// Whether `n` holds nothing any walk looks for: an opaque node
/// ([`Kinds::is_opaque`]) with no syntax error in it, or, outside function
/// bodies (`in_function` false), a [`plain_initializer`].
#[inline]
pub fn skippable(text: &[u8], n: Node<'_>, k: &Kinds, in_function: bool) -> bool {
    (k.is_opaque(n.kind_id()) && !n.has_error()) || (!in_function && plain_initializer(text, n, k))
}

/// Whether `n` is a data table no walk needs to enter: an initializer list
/// or enumerator list with no syntax error and, past its opening brace, no
/// `{` or `(` in the text tree-sitter saw (`text`).  Such a list holds only
/// literals, names, operators, designators and brackets, so no function
/// definition, compound statement, struct body, declaration, call or cast.
/// Walks outside function bodies use it; inside them the survey still wants
/// the expressions.
#[inline]
pub fn plain_initializer(text: &[u8], n: Node<'_>, k: &Kinds) -> bool {
    let id = n.kind_id();
    if id != k.initializer_list && id != k.enumerator_list {
        return false;
    }
    if n.has_error() {
        return false;
    }
    let r = n.byte_range();
    match text.get(r.start + 1..r.end) {
        Some(b) => !b.iter().any(|&c| c == b'{' || c == b'('),
        None => false,
    }
}

/// Whether a node of `kind` is a conditional block (`#if`, `#ifdef`,
/// `#else`, `#elif`, `#elifdef`): its children are items of the block that
/// holds it.
pub fn is_conditional_block(kind: &str) -> bool {
    matches!(
        kind,
        "preproc_if" | "preproc_ifdef" | "preproc_else" | "preproc_elif" | "preproc_elifdef"
    )
}

/// Whether a node of `kind` holds top-level items: a conditional block,
/// `extern "C" { ... }`, or its declaration list.
pub fn holds_top_level(kind: &str) -> bool {
    is_conditional_block(kind) || matches!(kind, "linkage_specification" | "declaration_list")
}

/// The expression under casts, parentheses and a leading `&` (`(void *)f`,
/// `&f`, `(f)`): what an initializer or argument names, when it is an
/// identifier.  `text` is the file's text.
pub fn under_casts<'t>(text: &str, mut n: Node<'t>) -> Node<'t> {
    loop {
        let next = match n.kind() {
            "cast_expression" => n.child_by_field_name("value"),
            "parenthesized_expression" => n.named_child(0),
            "pointer_expression" if text[n.byte_range()].trim_start().starts_with('&') => {
                n.child_by_field_name("argument")
            }
            _ => None,
        };
        match next {
            Some(x) => n = x,
            None => return n,
        }
    }
}

/// `left = right` (a plain assignment, not `+=` and the like): its two
/// sides.
pub fn plain_assignment<'t>(text: &str, n: Node<'t>) -> Option<(Node<'t>, Node<'t>)> {
    if n.kind() != "assignment_expression" {
        return None;
    }
    let op = n.child_by_field_name("operator")?;
    if &text[op.byte_range()] != "=" {
        return None;
    }
    Some((
        n.child_by_field_name("left")?,
        n.child_by_field_name("right")?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_text_with, Options};
    use std::path::Path;

    #[test]
    fn preorder_matches_a_recursive_walk() {
        let src = "static const int t[] = { 1, 2, (3), { 4 } };\n\
                   enum e { A = 1, B };\n\
                   int f(int a) { return g(a) + t[1]; }\n";
        let pf = parse_text_with(Path::new("t.c"), src.into(), &Options::raw()).unwrap();
        fn rec<'t>(n: Node<'t>, d: u32, out: &mut Vec<(u16, usize, u32)>) {
            out.push((n.kind_id(), n.start_byte(), d));
            for i in 0..n.child_count() {
                rec(n.child(i).unwrap(), d + 1, out);
            }
        }
        let mut want = Vec::new();
        rec(pf.tree.root_node(), 0, &mut want);
        let mut got = Vec::new();
        preorder(pf.tree.root_node(), |n, d| {
            got.push((n.kind_id(), n.start_byte(), d));
            true
        });
        assert_eq!(got, want);
        let k = kinds();
        let mut plain = Vec::new();
        preorder(pf.tree.root_node(), |n, _| {
            if plain_initializer(src.as_bytes(), n, k) {
                plain.push(pf.node_text(n).to_string());
                return false;
            }
            true
        });
        assert_eq!(plain, ["{ 4 }", "{ A = 1, B }"]);
        let root = pf.tree.root_node();
        let names: Vec<u16> = named_children(root).map(|n| n.kind_id()).collect();
        let enum_specifier = pf.tree.language().id_for_node_kind("enum_specifier", true);
        assert_eq!(
            names,
            [k.declaration, enum_specifier, k.function_definition]
        );
    }
}

//! The byte pre-filter of the slot scan: byte ranges of the text that
//! every slot candidate overlaps, and byte-level tests of what a subtree may
//! hold, so the walk can step over subtrees without looking at their nodes.
//!
//! Invariant: a subtree with no syntax error that overlaps no mark of
//! `candidate_marks` holds no candidate; every test here may answer yes
//! wrongly, never no.

use super::*;
use fgft_base::ident;
use fgft_parse::ParsedFile;
use std::sync::OnceLock;

/// Byte ranges, in order and disjoint, that every slot candidate
/// ([`Scan::candidate`]) overlaps:
/// - each `=` of `pf.hinted` (the text tree-sitter saw) that may end the
///   `=` of an initializer list or an assignment operator storing to a
///   member some slot structure has ([`may_open_initializer`],
///   [`may_store_slot_field`]);
/// - each match of a registering call or table macro name in `pf.text` (the
///   text node names are read from; leftmost-first matches, so every
///   occurrence of a name overlaps one).
///
/// A subtree with no syntax error (so no zero-width missing token) that
/// overlaps no range holds no candidate.  `None` when the table's names are
/// not indexed.
pub(super) fn candidate_marks(pf: &ParsedFile, table: &SlotTable) -> Option<Vec<(usize, usize)>> {
    let names = table.call_names.as_ref()?;
    let h = pf.hinted.as_bytes();
    let mut marks: Vec<(usize, usize)> = memchr::memchr_iter(b'=', h)
        .filter(|&i| {
            !is_comparison(h, i)
                && (may_open_initializer(h, i) || may_store_slot_field(pf, table, i))
        })
        .map(|i| (i, i + 1))
        .collect();
    let eqs = marks.len();
    marks.extend(
        names
            .find_iter(pf.text.as_str())
            .map(|m| (m.start(), m.end())),
    );
    if marks.len() > eqs {
        // Names hold no `=`: the ranges stay disjoint.
        marks.sort_unstable();
    }
    Some(marks)
}

/// Whether a node of kind `id` outside functions holds nothing the scan
/// takes below it, unless [`may_open_block_or_body`] or it holds a slot
/// candidate.  The kinds are those of declarations, declarators, types,
/// initializers and expressions: under them, a declaration, a type
/// definition or a function definition sits in a block (a statement
/// expression, `({ ... })`), and a structure whose fields are taken has a
/// body.  (Statements, preprocessor conditionals and the translation unit
/// hold declarations directly: they are not listed.)
pub(super) fn leaf_kind_outside(id: u16) -> bool {
    static TABLE: OnceLock<Vec<bool>> = OnceLock::new();
    let t = TABLE.get_or_init(|| {
        let lang: tree_sitter::Language = tree_sitter_c::LANGUAGE.into();
        let mut t = vec![false; lang.node_kind_count()];
        for name in [
            "declaration",
            "type_definition",
            "field_declaration",
            "parameter_declaration",
            "parameter_list",
            "init_declarator",
            "initializer_pair",
            "call_expression",
            "argument_list",
            "function_declarator",
            "pointer_declarator",
            "array_declarator",
            "struct_specifier",
            "union_specifier",
            "binary_expression",
            "unary_expression",
            "cast_expression",
            "parenthesized_expression",
            "field_expression",
            "pointer_expression",
            "subscript_expression",
            "conditional_expression",
            "sizeof_expression",
            "initializer_list",
            "enumerator_list",
            "enum_specifier",
            "enumerator",
            "compound_literal_expression",
            "type_descriptor",
            "attribute_specifier",
        ] {
            let i = lang.id_for_node_kind(name, true) as usize;
            if i != 0 && i < t.len() {
                t[i] = true;
            }
        }
        t
    });
    t.get(id as usize).copied().unwrap_or(false)
}

/// Whether `h[s..e]` may hold a structure or union body or a block: it
/// has a `{` and `struct` or `union` (a body follows the keyword), or a `{`
/// that may open a block: one after `(` (a statement expression or an
/// argument), after `,` inside parentheses (an argument), or after what
/// may be a comment.  (Otherwise a `{` opens an initializer or enumerator
/// list, or follows a cast as a compound literal.)
pub(super) fn may_open_block_or_body(h: &[u8], s: usize, e: usize) -> bool {
    let Some(t) = h.get(s..e) else {
        return true;
    };
    let Some(first) = memchr::memchr(b'{', t) else {
        return false;
    };
    if memchr::memmem::find(t, b"struct").is_some() || memchr::memmem::find(t, b"union").is_some() {
        return true;
    }
    if memchr::memchr(b'(', t).is_none() {
        // No parenthesis, so no statement expression or argument list; a
        // `{` after a comment still counts.
        return memchr::memchr_iter(b'{', &t[first..])
            .any(|i| skip_space_back(h, s + first + i).is_none());
    }
    // Follow the brackets (skipping literals and comments) to tell the
    // commas of argument lists from those of initializer lists; anything
    // unclear counts as a block.
    let mut open: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < t.len() {
        match t[i] {
            q @ (b'"' | b'\'') => {
                i += 1;
                while i < t.len() && t[i] != q {
                    if t[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if i >= t.len() {
                    return true;
                }
            }
            b'/' if t.get(i + 1) == Some(&b'*') => match memchr::memmem::find(&t[i + 2..], b"*/") {
                Some(j) => i += j + 3,
                None => return true,
            },
            b'/' if t.get(i + 1) == Some(&b'/') => return true,
            c @ (b'(' | b'[') => open.push(c),
            c @ (b')' | b']' | b'}') => {
                let want = match c {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                if open.pop() != Some(want) {
                    return true;
                }
            }
            b'{' => {
                let Some(j) = skip_space_back(h, s + i) else {
                    return true;
                };
                match j.checked_sub(1).map(|x| h[x]) {
                    Some(b'(') => return true,
                    Some(b',') if open.last() != Some(&b'{') => return true,
                    _ => {}
                }
                open.push(b'{');
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// Whether the `=` at `h[i]` belongs to `==`, `!=`, `<=` or `>=` (not to
/// `<<=` or `>>=`).  The `=` of an initializer or an assignment operator
/// follows a declarator, a name, a space or comment, or the first
/// characters of its operator, and precedes a value: never one of these.
pub(super) fn is_comparison(h: &[u8], i: usize) -> bool {
    let before = |d: usize| i.checked_sub(d).map_or(0, |j| h[j]);
    h.get(i + 1) == Some(&b'=')
        || match before(1) {
            b'=' | b'!' => true,
            b'<' => before(2) != b'<',
            b'>' => before(2) != b'>',
            _ => false,
        }
}

/// Whether `c` is whitespace to tree-sitter-c.
pub(super) fn space_byte(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Whether the `=` at `h[i]` may be followed by an initializer list that
/// stores something: the next byte that is no whitespace is `{`, or may
/// start a comment or a line continuation.  A list of numbers (`{}`,
/// `{ 0 }`) stores no function and names no variable: the finder takes
/// nothing from it.
pub(super) fn may_open_initializer(h: &[u8], i: usize) -> bool {
    let Some(j) = h[i + 1..].iter().position(|&c| !space_byte(c)) else {
        return false;
    };
    let j = i + 1 + j;
    match h[j] {
        b'{' => !h[j + 1..]
            .iter()
            .take_while(|&&c| c != b'}')
            .all(|&c| space_byte(c) || c.is_ascii_digit() || c == b','),
        c => c == b'/' || c == b'\\',
    }
}

/// `j` moved back over the whitespace before it; `None` when a comment or
/// a line continuation may be in the way (a `/` or `\\`, or a line crossed
/// that holds `//` or continues the line before it).
pub(super) fn skip_space_back(h: &[u8], mut j: usize) -> Option<usize> {
    while j > 0 {
        match h[j - 1] {
            b'\n' => {
                j -= 1;
                let line = memchr::memrchr(b'\n', &h[..j]).map_or(0, |x| x + 1);
                let continued = line >= 2 && h[..line - 1].ends_with(b"\\")
                    || line >= 3 && h[..line - 1].ends_with(b"\\\r");
                let slash_slash = memchr::memchr_iter(b'/', &h[line..j])
                    .any(|i| h.get(line + i + 1) == Some(&b'/'));
                if continued || slash_slash {
                    return None;
                }
            }
            b'/' | b'\\' => return None,
            c if space_byte(c) => j -= 1,
            _ => break,
        }
    }
    Some(j)
}

/// Whether the `=` at `h[i]` may end an assignment operator whose left
/// side is a member access (`x.f`, `p->f`) of a field some slot structure
/// stores a function or a slot structure pointer in.  Reading backwards:
/// the first characters of a compound operator, whitespace, the field
/// name, whitespace and `.` or `->`; a comment or line continuation on the
/// way answers yes.
pub(super) fn may_store_slot_field(pf: &ParsedFile, table: &SlotTable, i: usize) -> bool {
    let h = pf.hinted.as_bytes();
    let before = |j: usize| j.checked_sub(1).map(|x| h[x]);
    let mut j = i;
    match before(j) {
        Some(b'*' | b'%' | b'+' | b'-' | b'&' | b'^' | b'|') => j -= 1,
        // `<<=` / `>>=` (`<=` and `>=` are comparisons).
        Some(b'<' | b'>') if j >= 2 => j -= 2,
        _ => {}
    }
    let Some(end) = skip_space_back(h, j) else {
        return true;
    };
    let mut start = end;
    while before(start).is_some_and(ident::is_byte_ext) {
        start -= 1;
    }
    if start == end {
        return false; // `)`, `]`, ...: no member access
    }
    let Some(op) = skip_space_back(h, start) else {
        return true;
    };
    match before(op) {
        Some(b'.' | b'>') => pf
            .text
            .get(start..end)
            .is_none_or(|f| table.is_slot_field(f)),
        _ => false,
    }
}

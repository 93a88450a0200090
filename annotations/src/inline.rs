//! Inline `FGFT_*` annotations (`include/fgft.h`), read from C source text.
//!
//! The macros compile away, so they are read from the text, not from the
//! preprocessor: a small lexer finds every `FGFT_*` token outside comments,
//! string literals and preprocessor lines, together with its argument list;
//! the annotations are blanked (byte-length preserving) and the result is
//! parsed with tree-sitter to find what each annotation is attached to.
//!
//! Placement rules (see README.md):
//! * `FGFT_ISOLATE`, `FGFT_CHECKPOINT`, `FGFT_RESTORE`: right before a
//!   function definition or prototype, or in its header before the name;
//! * `FGFT_NULLTERM`, `FGFT_NODEREF`, `FGFT_RECURSIVE`, `FGFT_BLOB(len)`,
//!   `FGFT_OPAQUE(type)`, `FGFT_CONTAINER(outer, member)`,
//!   `FGFT_SHARED(len)`, `FGFT_SHARED_RO(len)`: inside (or right
//!   before, or right after the declarator of) a struct field declaration
//!   or a function parameter declaration;
//! * `FGFT_PURE(kernel_fn);`, `FGFT_KEY_TO_DEV(expr);`: anywhere a
//!   declaration may stand.

use fgft_base::ident;
use fgft_base::lex::skip_block_comment;
use std::path::Path;

use tree_sitter::Node;

use crate::validate;
use crate::{
    Access, AnnotError, Annotations, FnRef, Hint, HintKind, HintSource, HintTarget, KeyToDev, Loc,
    Pattern,
};

/// Byte classes found by the lexer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Code,
    Comment,
    Literal,
    Directive,
}

/// Where an annotation attaches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Function,
    Slot,
    Anywhere,
}

/// The annotation macros: name, number of arguments, placement.
const MACROS: &[(&str, usize, Place)] = &[
    ("FGFT_ISOLATE", 0, Place::Function),
    ("FGFT_CHECKPOINT", 0, Place::Function),
    ("FGFT_RESTORE", 0, Place::Function),
    ("FGFT_NULLTERM", 0, Place::Slot),
    ("FGFT_NODEREF", 0, Place::Slot),
    ("FGFT_RECURSIVE", 0, Place::Slot),
    ("FGFT_BLOB", 1, Place::Slot),
    ("FGFT_OPAQUE", 1, Place::Slot),
    ("FGFT_CONTAINER", 2, Place::Slot),
    ("FGFT_SHARED", 1, Place::Slot),
    ("FGFT_SHARED_RO", 1, Place::Slot),
    ("FGFT_PURE", 1, Place::Anywhere),
    ("FGFT_KEY_TO_DEV", 1, Place::Anywhere),
];

/// One annotation found by the lexer.
struct Found {
    name: &'static str,
    place: Place,
    /// Byte range of the macro name.
    start: usize,
    /// End of the whole use, argument list included.
    end: usize,
    /// Arguments with their byte ranges.
    args: Vec<(String, usize, usize)>,
}

/// Reads a C file and extracts its inline annotations.
pub fn scan_file(path: &Path) -> Result<Annotations, AnnotError> {
    // Bytes that are not UTF-8 become `?` one for one (as the parse reads
    // them): a Latin-1 comment is no reason to refuse the file.
    let bytes = std::fs::read(path).map_err(|source| AnnotError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    scan(path, &fgft_base::text_same_len(bytes).0)
}

/// Extracts the inline `FGFT_*` annotations of C source `text`, read from
/// the file `path` (used in locations).
pub fn scan(path: &Path, text: &str) -> Result<Annotations, AnnotError> {
    let classes = classify(text.as_bytes());
    let found = find_macros(path, text, &classes)?;
    let mut out = Annotations::default();
    if found.is_empty() {
        return Ok(out);
    }
    // Blank every annotation, keeping byte offsets and newlines.
    let mut blanked = text.as_bytes().to_vec();
    for f in &found {
        for b in &mut blanked[f.start..f.end] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    }
    // Only whole characters were replaced (ranges start and end on ASCII),
    // so this cannot fail; report rather than panic all the same.
    let blanked = String::from_utf8(blanked).map_err(|_| AnnotError::Inline {
        loc: Loc::file_start(path),
        msg: "internal: blanking broke UTF-8".into(),
    })?;
    let parsed = fgft_parse::parse_text(path, blanked).map_err(|e| AnnotError::Inline {
        loc: Loc::file_start(path),
        msg: e.to_string(),
    })?;
    let cx = Cx {
        path,
        text,
        bytes: text.as_bytes(),
        classes: &classes,
        root: parsed.tree.root_node(),
        ranges: found.iter().map(|f| (f.start, f.end)).collect(),
    };
    for f in &found {
        let loc = Loc::from_span(path, text, f.start, f.end);
        match f.place {
            Place::Anywhere if f.name == "FGFT_KEY_TO_DEV" => {
                let (a, s, e) = &f.args[0];
                let kloc = Loc::from_span(path, text, *s, *e);
                let add = Annotations {
                    key_to_dev: Some(KeyToDev {
                        entries: Vec::new(),
                        expr: validate::key_expr(a, &kloc)?,
                        loc: kloc,
                    }),
                    ..Default::default()
                };
                out = out.merge(add)?;
            }
            Place::Anywhere => {
                let (a, s, e) = &f.args[0];
                let name =
                    validate::ident(a, &Loc::from_span(path, text, *s, *e), "kernel function")?;
                if !out.pure_apis.contains(&name) {
                    out.pure_apis.push(name);
                }
            }
            Place::Function => {
                let name = cx.function_for(f, &loc)?;
                let fnref = FnRef {
                    name: name.clone(),
                    loc: loc.clone(),
                };
                let mut add = Annotations::default();
                match f.name {
                    "FGFT_ISOLATE" => add.isolate.push(Pattern::new(&name, loc)?),
                    "FGFT_CHECKPOINT" => add.checkpoint = Some(fnref),
                    _ => add.restore = Some(fnref),
                }
                out = out.merge(add)?;
            }
            Place::Slot => {
                let kind = cx.kind_of(f)?;
                for target in cx.slots_for(f, &loc)? {
                    validate::add_hint(
                        &mut out.hints,
                        Hint {
                            target,
                            kind: kind.clone(),
                            loc: loc.clone(),
                            source: HintSource::Annotation,
                        },
                    )?;
                }
            }
        }
    }
    Ok(out)
}

/// Marks every byte as code, comment, literal or preprocessor line.
fn classify(b: &[u8]) -> Vec<Class> {
    let n = b.len();
    let mut cls = vec![Class::Code; n];
    let mut i = 0;
    let mut line_start = true;
    while i < n {
        let c = b[i];
        if c == b'\n' {
            line_start = true;
            i += 1;
            continue;
        }
        if line_start && c == b'#' {
            // A directive runs to a newline not escaped by a backslash.
            let s = i;
            while i < n {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    i = skip_block_comment(b, i);
                    continue;
                }
                if b[i] == b'\n' {
                    let mut j = i;
                    while j > s && (b[j - 1] == b'\r' || b[j - 1] == b' ' || b[j - 1] == b'\t') {
                        j -= 1;
                    }
                    if j > s && b[j - 1] == b'\\' {
                        i += 1;
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            cls[s..i].fill(Class::Directive);
            continue;
        }
        if !c.is_ascii_whitespace() {
            line_start = false;
        }
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let s = i;
                while i < n && b[i] != b'\n' {
                    i += 1;
                }
                cls[s..i].fill(Class::Comment);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let s = i;
                i = skip_block_comment(b, i);
                cls[s..i].fill(Class::Comment);
            }
            b'"' | b'\'' => {
                let s = i;
                i += 1;
                while i < n && b[i] != c && b[i] != b'\n' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i = (i + 1).min(n);
                cls[s..i].fill(Class::Literal);
            }
            _ => i += 1,
        }
    }
    cls
}

/// Finds every annotation use in code bytes.
fn find_macros(path: &Path, text: &str, cls: &[Class]) -> Result<Vec<Found>, AnnotError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if cls[i] != Class::Code || !(b[i].is_ascii_alphabetic() || b[i] == b'_') {
            i += 1;
            continue;
        }
        let s = i;
        while i < b.len() && ident::is_byte(b[i]) {
            i += 1;
        }
        let word = &text[s..i];
        if s > 0 && ident::is_byte(b[s - 1]) || !word.starts_with("FGFT_") {
            continue;
        }
        let loc = || Loc::from_span(path, text, s, i);
        let Some(&(name, arity, place)) = MACROS.iter().find(|m| m.0 == word) else {
            // Other FGFT_ names (the runtime's constants) are not ours,
            // but a near miss of an annotation is a typo.
            if let Some(m) = MACROS
                .iter()
                .find(|m| fgft_base::ident::distance(&m.0[5..], &word[5..]) <= 2)
            {
                return Err(AnnotError::Inline {
                    loc: loc(),
                    msg: format!("unknown annotation `{word}`; did you mean `{}`?", m.0),
                });
            }
            continue;
        };
        // Optional argument list.
        let mut j = i;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        let mut found = Found {
            name,
            place,
            start: s,
            end: i,
            args: Vec::new(),
        };
        if j < b.len() && b[j] == b'(' && cls[j] == Class::Code {
            if arity == 0 {
                return Err(AnnotError::Inline {
                    loc: loc(),
                    msg: format!("`{name}` takes no arguments"),
                });
            }
            let (args, end) = split_args(b, cls, j).ok_or_else(|| AnnotError::Inline {
                loc: loc(),
                msg: format!("`{name}(` has no closing parenthesis"),
            })?;
            found.args = args
                .into_iter()
                .map(|(a, e)| (text[a..e].trim().to_string(), a, e))
                .collect();
            found.end = end;
        }
        if found.args.len() != arity || found.args.iter().any(|a| a.0.is_empty()) {
            let want = match name {
                "FGFT_BLOB" => "FGFT_BLOB(len_expr)",
                "FGFT_OPAQUE" => "FGFT_OPAQUE(type)",
                "FGFT_CONTAINER" => "FGFT_CONTAINER(outer_type, member)",
                "FGFT_SHARED" => "FGFT_SHARED(len_expr)",
                "FGFT_SHARED_RO" => "FGFT_SHARED_RO(len_expr)",
                "FGFT_PURE" => "FGFT_PURE(kernel_function)",
                _ => name,
            };
            return Err(AnnotError::Inline {
                loc: Loc::from_span(path, text, s, found.end),
                msg: format!(
                    "`{name}` takes {arity} argument{}: write `{want}`",
                    if arity == 1 { "" } else { "s" }
                ),
            });
        }
        i = found.end;
        out.push(found);
    }
    Ok(out)
}

/// Splits the parenthesized list opening at `open` into top-level
/// arguments (byte ranges); returns them and the index past `)`.
fn split_args(b: &[u8], cls: &[Class], open: usize) -> Option<(Vec<(usize, usize)>, usize)> {
    let mut depth = 0usize;
    let mut args = Vec::new();
    let mut arg_start = open + 1;
    for k in open..b.len() {
        if cls[k] != Class::Code {
            continue;
        }
        match b[k] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    if k > arg_start || !args.is_empty() {
                        args.push((arg_start, k));
                    }
                    return Some((args, k + 1));
                }
            }
            b';' | b'{' | b'}' if depth == 1 => return None,
            b',' if depth == 1 => {
                args.push((arg_start, k));
                arg_start = k + 1;
            }
            _ => {}
        }
    }
    None
}

struct Cx<'a> {
    path: &'a Path,
    text: &'a str,
    bytes: &'a [u8],
    classes: &'a [Class],
    root: Node<'a>,
    /// Byte ranges of the annotation uses, in order.
    ranges: Vec<(usize, usize)>,
}

impl<'a> Cx<'a> {
    fn err(&self, loc: &Loc, msg: String) -> AnnotError {
        AnnotError::Inline {
            loc: loc.clone(),
            msg,
        }
    }

    fn arg_loc(&self, f: &Found, k: usize) -> Loc {
        let (_, s, e) = &f.args[k];
        Loc::from_span(self.path, self.text, *s, *e)
    }

    /// First significant byte at or after `from`.
    fn next_sig(&self, from: usize) -> Option<usize> {
        (from..self.bytes.len()).find(|&k| {
            !(self.bytes[k].is_ascii_whitespace()
                || self.classes[k] == Class::Comment
                || self.in_annotation(k))
        })
    }

    /// Last significant byte before `to`.
    fn prev_sig(&self, to: usize) -> Option<usize> {
        (0..to).rev().find(|&k| {
            !(self.bytes[k].is_ascii_whitespace()
                || self.classes[k] == Class::Comment
                || self.in_annotation(k))
        })
    }

    /// Byte `k` lies in some annotation use (blanked in the tree).
    fn in_annotation(&self, k: usize) -> bool {
        let i = self.ranges.partition_point(|&(s, _)| s <= k);
        i > 0 && k < self.ranges[i - 1].1
    }

    fn kind_of(&self, f: &Found) -> Result<HintKind, AnnotError> {
        Ok(match f.name {
            "FGFT_NULLTERM" => HintKind::NullTerm,
            "FGFT_NODEREF" => HintKind::NoDeref,
            "FGFT_RECURSIVE" => HintKind::Recursive,
            "FGFT_BLOB" => HintKind::Blob {
                len: validate::c_expr(&f.args[0].0, &self.arg_loc(f, 0))?,
            },
            "FGFT_OPAQUE" => HintKind::Opaque {
                ty: validate::c_type(&f.args[0].0, &self.arg_loc(f, 0))?,
            },
            "FGFT_SHARED" | "FGFT_SHARED_RO" => HintKind::Shared {
                len: validate::len_expr(&f.args[0].0, &self.arg_loc(f, 0), "shared")?,
                rights: if f.name == "FGFT_SHARED" {
                    Access::ReadWrite
                } else {
                    Access::Read
                },
            },
            _ => HintKind::Container {
                outer: validate::struct_name(&f.args[0].0, &self.arg_loc(f, 0))?,
                member: validate::member_path(&f.args[1].0, &self.arg_loc(f, 1))?,
            },
        })
    }

    /// The function an `FGFT_ISOLATE`-like annotation is attached to.
    fn function_for(&self, f: &Found, loc: &Loc) -> Result<String, AnnotError> {
        // In the header of a definition or prototype.
        if let Some(n) = self.root.descendant_for_byte_range(f.start, f.end) {
            let mut cur = Some(n);
            while let Some(c) = cur {
                match c.kind() {
                    "function_definition" => {
                        let body = c
                            .child_by_field_name("body")
                            .map_or(c.end_byte(), |b| b.start_byte());
                        if f.start < body {
                            return self.function_name(c, loc, f.name);
                        }
                        break;
                    }
                    "declaration" if has_function_declarator(c) => {
                        return self.function_name(c, loc, f.name);
                    }
                    "compound_statement" | "translation_unit" => break,
                    _ => {}
                }
                cur = c.parent();
            }
        }
        // Right before one.
        if let Some(p) = self.next_sig(f.end) {
            if let Some(n) = self.root.descendant_for_byte_range(p, p + 1) {
                let mut cur = Some(n);
                while let Some(c) = cur {
                    if c.start_byte() != p {
                        break;
                    }
                    if c.kind() == "function_definition"
                        || (c.kind() == "declaration" && has_function_declarator(c))
                    {
                        return self.function_name(c, loc, f.name);
                    }
                    cur = c.parent();
                }
            }
        }
        Err(self.err(
            loc,
            format!(
                "`{}` must stand right before a function definition or prototype",
                f.name
            ),
        ))
    }

    fn function_name(&self, def: Node<'_>, loc: &Loc, what: &str) -> Result<String, AnnotError> {
        let mut cursor = def.walk();
        let decls: Vec<Node<'_>> = if def.kind() == "function_definition" {
            def.child_by_field_name("declarator").into_iter().collect()
        } else {
            def.children_by_field_name("declarator", &mut cursor)
                .collect()
        };
        for d in decls {
            if let Some(fd) = find_function_declarator(d) {
                if let Some(id) = fd.child_by_field_name("declarator") {
                    if id.kind() == "identifier" {
                        return Ok(self.text[id.byte_range()].to_string());
                    }
                }
            }
        }
        Err(self.err(
            loc,
            format!("`{what}`: cannot find the name of the function it marks (tree-sitter could not parse its header)"),
        ))
    }

    /// The fields or parameters a slot hint is attached to.
    fn slots_for(&self, f: &Found, loc: &Loc) -> Result<Vec<HintTarget>, AnnotError> {
        let slot_kinds = ["field_declaration", "parameter_declaration"];
        let mut decl = None;
        // Inside a declaration.
        if let Some(n) = self.root.descendant_for_byte_range(f.start, f.end) {
            let mut cur = Some(n);
            while let Some(c) = cur {
                if slot_kinds.contains(&c.kind()) {
                    decl = Some(c);
                    break;
                }
                if matches!(
                    c.kind(),
                    "compound_statement"
                        | "field_declaration_list"
                        | "parameter_list"
                        | "translation_unit"
                ) {
                    break;
                }
                cur = c.parent();
            }
        }
        // Right before one.
        if decl.is_none() {
            if let Some(p) = self.next_sig(f.end) {
                decl = self.ancestor_at(p, true, &slot_kinds);
            }
        }
        // Right after one.
        if decl.is_none() {
            if let Some(q) = self.prev_sig(f.start) {
                decl = self.ancestor_at(q, false, &slot_kinds);
            }
        }
        let Some(decl) = decl else {
            return Err(self.err(
                loc,
                format!(
                    "`{}` must be on a struct field or a function parameter",
                    f.name
                ),
            ));
        };
        if decl.kind() == "parameter_declaration" {
            return Ok(vec![self.param_target(decl, loc, f.name)?]);
        }
        let strukt = self.struct_of(decl, loc, f.name)?;
        let mut cursor = decl.walk();
        let decls: Vec<Node<'_>> = decl
            .children_by_field_name("declarator", &mut cursor)
            .collect();
        if decls.is_empty() {
            return Err(self.err(loc, format!("`{}`: the field has no name", f.name)));
        }
        let chosen: Vec<Node<'_>> = if f.start < decls[0].start_byte() {
            decls
        } else {
            decls
                .iter()
                .copied()
                .rfind(|d| d.start_byte() < f.start)
                .into_iter()
                .collect()
        };
        chosen
            .into_iter()
            .map(|d| {
                let field = self.declared_name(d).ok_or_else(|| {
                    self.err(loc, format!("`{}`: cannot find the field's name", f.name))
                })?;
                Ok(HintTarget::Field {
                    strukt: strukt.clone(),
                    field,
                })
            })
            .collect()
    }

    /// The innermost node of one of `kinds` that starts (`starts`) or ends
    /// at byte `k`.
    fn ancestor_at(&self, k: usize, starts: bool, kinds: &[&str]) -> Option<Node<'a>> {
        let mut cur = self.root.descendant_for_byte_range(k, k + 1);
        while let Some(c) = cur {
            let edge = if starts {
                c.start_byte() == k
            } else {
                c.end_byte() == k + 1
            };
            if !edge {
                return None;
            }
            if kinds.contains(&c.kind()) {
                return Some(c);
            }
            cur = c.parent();
        }
        None
    }

    fn param_target(
        &self,
        decl: Node<'_>,
        loc: &Loc,
        what: &str,
    ) -> Result<HintTarget, AnnotError> {
        let param = decl
            .child_by_field_name("declarator")
            .and_then(|d| self.declared_name(d))
            .ok_or_else(|| self.err(loc, format!("`{what}`: the parameter has no name")))?;
        let fd = decl
            .parent()
            .and_then(|l| l.parent())
            .filter(|f| f.kind() == "function_declarator");
        let function = fd
            .and_then(|fd| fd.child_by_field_name("declarator"))
            .filter(|id| id.kind() == "identifier")
            .map(|id| self.text[id.byte_range()].to_string())
            .ok_or_else(|| {
                self.err(
                    loc,
                    format!("`{what}`: only parameters of named functions can carry hints"),
                )
            })?;
        Ok(HintTarget::Param { function, param })
    }

    fn struct_of(&self, field: Node<'_>, loc: &Loc, what: &str) -> Result<String, AnnotError> {
        let mut cur = field.parent();
        while let Some(list) = cur {
            let Some(spec) = list.parent() else { break };
            if !matches!(spec.kind(), "struct_specifier" | "union_specifier") {
                break;
            }
            if let Some(name) = spec.child_by_field_name("name") {
                return Ok(self.text[name.byte_range()].to_string());
            }
            // Anonymous: a typedef name, or an anonymous member of an
            // enclosing struct.
            let parent = spec.parent();
            match parent.map(|p| p.kind()) {
                Some("type_definition") => {
                    if let Some(n) = parent
                        .and_then(|p| p.child_by_field_name("declarator"))
                        .filter(|n| n.kind() == "type_identifier")
                    {
                        return Ok(self.text[n.byte_range()].to_string());
                    }
                    break;
                }
                Some("field_declaration")
                    if parent
                        .and_then(|p| p.child_by_field_name("declarator"))
                        .is_none() =>
                {
                    cur = parent.and_then(|p| p.parent());
                }
                _ => break,
            }
        }
        Err(self.err(
            loc,
            format!(
                "`{what}` is on a field of an unnamed struct: name the struct or give the hint in a sidecar"
            ),
        ))
    }

    /// The identifier a declarator declares.
    fn declared_name(&self, mut d: Node<'_>) -> Option<String> {
        loop {
            match d.kind() {
                "identifier" | "field_identifier" => {
                    return Some(self.text[d.byte_range()].to_string())
                }
                "pointer_declarator"
                | "array_declarator"
                | "function_declarator"
                | "parenthesized_declarator"
                | "attributed_declarator"
                | "init_declarator"
                | "bitfield_clause" => {
                    d = d
                        .child_by_field_name("declarator")
                        .or_else(|| d.named_child(0))?;
                }
                _ => return None,
            }
        }
    }
}

fn find_function_declarator(mut d: Node<'_>) -> Option<Node<'_>> {
    loop {
        match d.kind() {
            "function_declarator" => return Some(d),
            "pointer_declarator" | "parenthesized_declarator" | "attributed_declarator" => {
                d = d
                    .child_by_field_name("declarator")
                    .or_else(|| d.named_child(0))?;
            }
            _ => return None,
        }
    }
}

fn has_function_declarator(decl: Node<'_>) -> bool {
    let mut cursor = decl.walk();
    let found = decl
        .children_by_field_name("declarator", &mut cursor)
        .any(|d| find_function_declarator(d).is_some());
    found
}

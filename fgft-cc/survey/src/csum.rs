//! The summary of one C file: parsed with the front end (macro hints, parse
//! budget), its slot roots found with the slot facts, then reduced to names,
//! lines and member uses; the tree is dropped before the next file.

use crate::model::{
    FailKind, Failure, FieldDecl, FieldKind, FieldUse, FileSummary, FnSum, Lang, RootSum, UseKind,
};
use fgft_base::{ident, lex};
use fgft_facts::hdr;
use fgft_facts::headers::{self, Cache, HeaderText};
use fgft_facts::slots::{self, FactKey, FactSet, Facts, LazyFacts, SlotTable};
use fgft_parse::{Options, ParseError, ParsedFile};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use tree_sitter::Node;

/// String functions: a member handed to one of them is read as a
/// NUL-terminated string.
const STRING_FUNCS: &[&str] = &[
    "strcpy",
    "strncpy",
    "strscpy",
    "strlcpy",
    "strcat",
    "strncat",
    "strlcat",
    "strlen",
    "strnlen",
    "strcmp",
    "strncmp",
    "strcasecmp",
    "strncasecmp",
    "strchr",
    "strrchr",
    "strstr",
    "sprintf",
    "snprintf",
    "scnprintf",
    "sscanf",
    "kstrdup",
    "kstrndup",
    "kstrtoul",
    "kstrtoint",
    "kstrtouint",
    "kstrtol",
    "kstrtou8",
    "kstrtou16",
    "kstrtou32",
    "kstrtobool",
    "sysfs_emit",
    "sysfs_streq",
    "strsep",
    "strim",
    "skip_spaces",
];

/// What a parsed local header contributes.
#[derive(Debug, Default)]
pub struct HeaderParsed {
    /// Type facts for the slot finder.
    pub facts: Facts,
    /// Struct members it declares.
    pub fields: Vec<FieldDecl>,
    /// Its static inline functions and function-like macros: driver code.
    pub functions: Vec<FnSum>,
}

/// What a parse of one item of a header gave.
#[derive(Debug, Default)]
struct HeaderPart {
    /// The item parsed with no ERROR or MISSING node: a lookup may use it
    /// instead of the whole parse.
    clean: bool,
    functions: Vec<FnSum>,
    fields: Vec<FieldDecl>,
}

/// What a lookup in a header's items looks for.
#[derive(Debug, Clone, Copy)]
enum Lookup {
    Function,
    Member,
}

/// A header's text, cut into its top-level items ([`hdr::items`]), for
/// lookups that parse only the items holding the name they look for.
#[derive(Debug)]
struct Items {
    text: String,
    hinted: String,
    items: Vec<hdr::Item>,
    /// Where each identifier is: its offsets by [`hdr::hash`].
    names: HashMap<u64, Vec<u32>>,
    /// Where each line starts.
    lines: Vec<u32>,
    /// Item `k` parsed alone (on the first lookup that needs it).
    parts: Vec<OnceLock<Box<HeaderPart>>>,
}

impl Items {
    fn read(path: &Path, opts: &Options) -> Option<Items> {
        let (text, hinted) = headers::read_hinted(path, opts)?;
        let items = hdr::items(hinted.as_bytes())?;
        // Where each identifier of the original text is (by a hash of it).
        let mut names: HashMap<u64, Vec<u32>> = HashMap::new();
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'_' || b[i].is_ascii_alphabetic() {
                let s = i;
                while i < b.len() && ident::is_byte(b[i]) {
                    i += 1;
                }
                names
                    .entry(hdr::hash(&text[s..i]))
                    .or_default()
                    .push(s as u32);
            } else if b[i].is_ascii_digit() {
                while i < b.len() && ident::is_byte(b[i]) {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        let lines = std::iter::once(0)
            .chain(
                b.iter()
                    .enumerate()
                    .filter(|(_, &c)| c == b'\n')
                    .map(|(i, _)| i as u32 + 1),
            )
            .collect();
        Some(Items {
            parts: items.iter().map(|_| OnceLock::new()).collect(),
            text,
            hinted,
            items,
            names,
            lines,
        })
    }

    /// The items holding identifier `name` (in the original text, where
    /// the parse reads names) where a lookup of `what` may find it.
    fn holding(&self, name: &str, what: Lookup) -> Vec<usize> {
        let b = self.text.as_bytes();
        let Some(at) = self.names.get(&hdr::hash(name)) else {
            return Vec::new();
        };
        let mut out: Vec<usize> = Vec::new();
        for &at in at {
            let at = at as usize;
            if b.get(at..at + name.len()) != Some(name.as_bytes()) {
                continue; // another name with the same hash
            }
            let k = self.items.partition_point(|it| it.range.start <= at);
            let Some(it) = k.checked_sub(1).map(|k| &self.items[k]) else {
                continue;
            };
            let fits = match what {
                // A function's name comes before its body; a macro's is
                // in its directive (which may be inside a body).
                Lookup::Function => {
                    it.open.is_some_and(|o| at < o) || {
                        let line = b[..at]
                            .iter()
                            .rposition(|&c| c == b'\n')
                            .map_or(0, |p| p + 1);
                        b[line..at].trim_ascii_start().starts_with(b"#")
                    }
                }
                // Members are declared inside braces: in records, not in
                // function bodies (unless a body defines a record).
                Lookup::Member => it.open.is_some_and(|o| at > o) && (!it.body || it.records),
            };
            if at < it.range.end && fits && out.last() != Some(&(k - 1)) {
                out.push(k - 1);
            }
        }
        out
    }

    /// Item `k` parsed alone: from the start of its first line to the end
    /// of its last (a directive keeps its newline), so the parse depends on
    /// nothing but the item, and lines are shifted back to the header's.
    fn part(&self, path: &Path, opts: &Options, k: usize) -> &HeaderPart {
        self.parts[k].get_or_init(|| {
            let r = &self.items[k].range;
            let row = self.lines.partition_point(|&l| l as usize <= r.start) - 1;
            let from = self.lines[row] as usize;
            let to = self
                .lines
                .get(self.lines.partition_point(|&l| (l as usize) <= r.end))
                .map_or(self.text.len(), |&l| l as usize);
            let parsed = fgft_parse::parse_ranges_with(
                path,
                self.text[from..to].to_string(),
                self.hinted[from..to].to_string(),
                std::slice::from_ref(&(r.start - from..r.end - from)),
                opts,
            );
            let Ok(pf) = parsed else {
                return Box::default();
            };
            let (mut functions, fields) = walk_with(&pf, false, None);
            for f in &mut functions {
                f.line += row;
                for c in &mut f.calls {
                    c.1 += row;
                }
                for u in &mut f.field_uses {
                    u.line += row;
                }
            }
            Box::new(HeaderPart {
                clean: !pf.tree.root_node().has_error(),
                functions,
                fields,
            })
        })
    }
}

/// One local header: its includes and an index of the names it may define
/// are read from its text ([`HeaderText`]).  A lookup that passes the index
/// parses only the items holding the name ([`Items`]); the type facts, and
/// lookups in a header whose items do not parse cleanly on their own, take
/// the whole parse ([`HeaderInfo::parsed`]).
#[derive(Debug)]
pub struct HeaderInfo {
    pub text: HeaderText,
    opts: Options,
    parsed: OnceLock<HeaderParsed>,
    items: OnceLock<Option<Items>>,
}

impl HeaderInfo {
    fn read(path: &Path, opts: &Options) -> HeaderInfo {
        HeaderInfo {
            text: HeaderText::read(path, opts),
            opts: opts.clone(),
            parsed: OnceLock::new(),
            items: OnceLock::new(),
        }
    }

    /// The header parsed (on the first call; a header that does not parse
    /// contributes nothing).
    pub fn parsed(&self) -> &HeaderParsed {
        self.parsed.get_or_init(|| {
            let Ok(pf) = fgft_parse::parse_file_with(&self.text.path, &self.opts) else {
                return HeaderParsed::default();
            };
            // Whether a header function is broken is never reported: no
            // health check.  One walk for the survey and the type facts.
            let mut scan = slots::Scan::new(&pf, None);
            let (functions, fields) = walk_with(&pf, false, Some(&mut scan));
            HeaderParsed {
                facts: scan.finish().0,
                fields,
                functions,
            }
        })
    }

    /// The parts of the items where a lookup of `what` may find `name`, or
    /// `None` when one of them does not parse cleanly alone (the lookup
    /// then takes the whole parse).
    fn parts_for(&self, name: &str, what: Lookup) -> Option<Vec<&HeaderPart>> {
        let it = self
            .items
            .get_or_init(|| Items::read(&self.text.path, &self.opts))
            .as_ref()?;
        it.holding(name, what)
            .into_iter()
            .map(|k| Some(it.part(&self.text.path, &self.opts, k)).filter(|p| p.clean))
            .collect()
    }

    /// Its functions and function-like macros named `name` (parsing only
    /// what may define one), by line.
    pub fn functions_named(&self, name: &str) -> Vec<&FnSum> {
        if !self.text.index.may_define_function(name) {
            return Vec::new();
        }
        let mut v: Vec<&FnSum> = match self.parts_for(name, Lookup::Function) {
            Some(parts) => parts
                .into_iter()
                .flat_map(|p| p.functions.iter())
                .filter(|f| f.name == name)
                .collect(),
            None => {
                let p = self.parsed();
                p.functions.iter().filter(|f| f.name == name).collect()
            }
        };
        v.sort_by(|a, b| (a.line, &a.name).cmp(&(b.line, &b.name)));
        v
    }

    /// The members named `field` it declares (parsing only what may declare
    /// one), sorted, each once.
    pub fn fields_named(&self, field: &str) -> Vec<&FieldDecl> {
        if !self.text.index.may_declare_member(field) {
            return Vec::new();
        }
        let mut v: Vec<&FieldDecl> = match self.parts_for(field, Lookup::Member) {
            Some(parts) => parts
                .into_iter()
                .flat_map(|p| p.fields.iter())
                .filter(|d| d.field == field)
                .collect(),
            None => {
                let p = self.parsed();
                p.fields.iter().filter(|d| d.field == field).collect()
            }
        };
        v.sort();
        v.dedup();
        v
    }

    /// Whether it has been parsed whole.
    pub fn is_parsed(&self) -> bool {
        self.parsed.get().is_some()
    }
}

impl LazyFacts for HeaderInfo {
    fn may_have(&self, key: FactKey, name: &str) -> bool {
        self.text.index.may_have(key, name)
    }

    fn facts(&self) -> &Facts {
        &self.parsed().facts
    }
}

/// Shared, read-mostly state of a C survey: options, the slot table and the
/// local headers (each read once, parsed at most once).
pub struct CContext {
    pub opts: Options,
    pub table: SlotTable,
    headers: Cache<HeaderInfo>,
}

impl CContext {
    pub fn new(opts: Options, table: SlotTable) -> CContext {
        CContext {
            opts,
            table,
            headers: Cache::default(),
        }
    }

    fn header(&self, path: &Path) -> Arc<HeaderInfo> {
        self.headers
            .get(path, || HeaderInfo::read(path, &self.opts))
    }

    /// Headers read and headers parsed so far.
    pub fn header_counts(&self) -> (usize, usize) {
        let v = self.headers.values();
        (v.len(), v.iter().filter(|h| h.is_parsed()).count())
    }
}

/// Summarizes the C file at `path` (`rel` is its name in the report).
pub fn summarize_file(ctx: &CContext, path: &Path, rel: &Path) -> FileSummary {
    let mut out = FileSummary::empty(rel.to_path_buf(), Lang::C);
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            out.failure = Some(Failure {
                kind: FailKind::Unreadable,
                offset: 0,
                line: 1,
                message: format!("cannot read: {e}"),
            });
            return out;
        }
    };
    out.bytes = bytes.len();
    let text = match fgft_parse::decode(path, bytes) {
        Ok((t, _)) => t,
        Err(e) => {
            out.failure = Some(failure_of(&e, None));
            return out;
        }
    };
    summarize_text(ctx, path, text, out)
}

/// Summarizes C text (used by [`summarize_file`] and the fuzzer).
pub fn summarize_text(
    ctx: &CContext,
    path: &Path,
    text: String,
    mut out: FileSummary,
) -> FileSummary {
    out.bytes = text.len();
    let pf = match fgft_parse::parse_text_with(path, text, &ctx.opts) {
        Ok(pf) => pf,
        Err(e) => {
            out.failure = Some(failure_of(&e, None));
            return out;
        }
    };
    // One walk gives the survey's summary, the file's type facts and its
    // slot candidates.
    out.stray_errors = fgft_parse::health::stray(&pf.tree, &pf.hinted).len();
    let mut scan = slots::Scan::new(&pf, Some(&ctx.table));
    let (functions, fields) = walk_with(&pf, true, Some(&mut scan));
    out.functions = functions;
    out.fields = fields;
    let (own, candidates) = scan.finish();
    // Type facts of the file and its local headers, for the slot finder.
    let mut facts = FactSet::from(own);
    let dir = path.parent().unwrap_or(Path::new(""));
    let rel_dir = out.path.parent().unwrap_or(Path::new("")).to_path_buf();
    let includes = fgft_base::includes::local_includes(&pf.path, &pf.text, &[]);
    out.included = includes
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .filter_map(|p| p.strip_prefix(dir).ok().map(|r| rel_dir.join(r)))
        .collect();
    let mut headers = headers::closure(&includes, |p| ctx.header(p), |h| &h.text.includes);
    for (_, h) in &headers {
        facts.push_lazy(h.clone());
    }
    headers.sort_by(|a, b| a.0.cmp(&b.0));
    out.headers = headers;
    out.roots = slots::roots_of(&pf, &facts, &ctx.table, &candidates)
        .into_iter()
        .map(|r| RootSum {
            function: r.function,
            struct_name: r.struct_name,
            field: r.field,
            kind: r.kind,
            line: r.line,
        })
        .collect();
    out.roots.sort();
    out.roots.dedup();
    out
}

/// A front-end error as a survey failure (with a line when the error has an
/// offset into `text`).
pub fn failure_of(e: &ParseError, text: Option<&str>) -> Failure {
    let line_of = |t: &str, off: usize| {
        let end = off.min(t.len());
        t.as_bytes()[..end].iter().filter(|&&c| c == b'\n').count() + 1
    };
    match e {
        ParseError::Budget {
            text: t, offset, ..
        } => Failure {
            kind: FailKind::Budget,
            offset: *offset,
            line: line_of(t, *offset),
            message: e.to_string(),
        },
        ParseError::NotC { offset, .. } => Failure {
            kind: FailKind::NotSource,
            offset: *offset,
            line: text.map_or(1, |t| line_of(t, *offset)),
            message: e.to_string(),
        },
        ParseError::Io { .. } => Failure {
            kind: FailKind::Unreadable,
            offset: 0,
            line: 1,
            message: e.to_string(),
        },
        _ => Failure {
            kind: FailKind::Parser,
            offset: 0,
            line: 1,
            message: e.to_string(),
        },
    }
}

/// Node kinds the walk looks at, as tree-sitter ids (comparing numbers is
/// much cheaper than comparing kind names on every node).
struct Kinds {
    function_definition: u16,
    preproc_function_def: u16,
    call_expression: u16,
    subscript_expression: u16,
    binary_expression: u16,
    struct_specifier: u16,
    union_specifier: u16,
    identifier: u16,
    field_expression: u16,
    parenthesized_expression: u16,
    cast_expression: u16,
    f_function: Option<std::num::NonZeroU16>,
    f_arguments: Option<std::num::NonZeroU16>,
    f_argument: Option<std::num::NonZeroU16>,
    f_field: Option<std::num::NonZeroU16>,
    f_value: Option<std::num::NonZeroU16>,
    f_operator: Option<std::num::NonZeroU16>,
    f_left: Option<std::num::NonZeroU16>,
    f_right: Option<std::num::NonZeroU16>,
}

impl Kinds {
    /// A child by field id (a field the grammar lacks gives `None`).
    fn child<'t>(&self, n: Node<'t>, f: Option<std::num::NonZeroU16>) -> Option<Node<'t>> {
        n.child_by_field_id(f?.get())
    }
}

fn kinds(lang: &tree_sitter::Language) -> Kinds {
    let id = |k: &str| lang.id_for_node_kind(k, true);
    let f = |k: &str| lang.field_id_for_name(k);
    Kinds {
        identifier: id("identifier"),
        field_expression: id("field_expression"),
        parenthesized_expression: id("parenthesized_expression"),
        cast_expression: id("cast_expression"),
        f_function: f("function"),
        f_arguments: f("arguments"),
        f_argument: f("argument"),
        f_field: f("field"),
        f_value: f("value"),
        f_operator: f("operator"),
        f_left: f("left"),
        f_right: f("right"),
        function_definition: id("function_definition"),
        preproc_function_def: id("preproc_function_def"),
        call_expression: id("call_expression"),
        subscript_expression: id("subscript_expression"),
        binary_expression: id("binary_expression"),
        struct_specifier: id("struct_specifier"),
        union_specifier: id("union_specifier"),
    }
}

/// Functions and function-like macros of the file with their calls and
/// sized member uses, and the struct members it declares: one walk.  With
/// `health`, a top-level function holding an ERROR or MISSING node is marked
/// broken (as [`fgft_parse::health::of`] finds it); without, none is.
pub fn walk(pf: &ParsedFile, health: bool) -> (Vec<FnSum>, Vec<FieldDecl>) {
    walk_with(pf, health, None)
}

/// [`walk`], feeding every node to the slot finder's `scan` on the way.
pub fn walk_with<'t>(
    pf: &'t ParsedFile,
    health: bool,
    mut scan: Option<&mut slots::Scan<'t, '_>>,
) -> (Vec<FnSum>, Vec<FieldDecl>) {
    struct Cur {
        sum: FnSum,
        /// The function's depth in the walk: it ends when the walk leaves it.
        depth: u32,
        calls: BTreeMap<String, usize>,
    }
    let finish = |c: Cur, out: &mut Vec<FnSum>| {
        let mut s = c.sum;
        s.calls = c.calls.into_iter().collect();
        s.field_uses.sort();
        s.field_uses.dedup();
        out.push(s);
    };
    let k = kinds(&pf.tree.language());
    let wk = fgft_parse::walk::kinds();
    let text = pf.hinted.as_bytes();
    let mut out: Vec<FnSum> = Vec::new();
    let mut fields: Vec<FieldDecl> = Vec::new();
    let mut cur: Option<Cur> = None;
    let root = pf.tree.root_node();
    let mut cursor = root.walk();
    let mut depth = 0u32;
    'walk: loop {
        let n = cursor.node();
        let id = n.kind_id();
        let mut descend = true;
        if id == k.function_definition {
            if cur.is_none() {
                if let Some(name) = fgft_parse::function_name(pf, n) {
                    cur = Some(Cur {
                        sum: FnSum {
                            name: name.to_string(),
                            line: n.start_position().row + 1,
                            broken: health && fgft_parse::health::is_broken(n),
                            is_macro: false,
                            calls: Vec::new(),
                            field_uses: Vec::new(),
                        },
                        depth,
                        calls: BTreeMap::new(),
                    });
                }
            }
        } else if id == k.preproc_function_def {
            if let Some(m) = macro_sum(pf, n) {
                out.push(m);
            }
            descend = false;
        } else if id == k.call_expression {
            if let Some(c) = cur.as_mut() {
                call(pf, &k, n, &mut c.calls, &mut c.sum.field_uses);
            }
        } else if id == k.subscript_expression {
            if let Some(c) = cur.as_mut() {
                if let Some(f) = k
                    .child(n, k.f_argument)
                    .and_then(|a| member_name(pf, &k, a))
                {
                    c.sum.field_uses.push(FieldUse {
                        field: f.to_string(),
                        kind: UseKind::Index,
                        line: n.start_position().row + 1,
                    });
                }
            }
        } else if id == k.binary_expression {
            if let Some(c) = cur.as_mut() {
                let op = k
                    .child(n, k.f_operator)
                    .map(|o| pf.node_text(o))
                    .unwrap_or("");
                if op == "+" || op == "-" {
                    // Either side may be the pointer of `p + n` / `n + p`.
                    for side in [k.f_left, k.f_right] {
                        if let Some(f) = k.child(n, side).and_then(|a| member_name(pf, &k, a)) {
                            c.sum.field_uses.push(FieldUse {
                                field: f.to_string(),
                                kind: UseKind::Arith,
                                line: n.start_position().row + 1,
                            });
                        }
                    }
                }
            }
        } else if id == k.struct_specifier || id == k.union_specifier {
            struct_members(pf, n, &mut fields);
        }
        if descend && fgft_parse::walk::skippable(text, n, wk, cur.is_some()) {
            // Strings, object-like macros, data tables outside functions:
            // nothing the summary wants.
            descend = false;
        }
        if let Some(s) = scan.as_deref_mut() {
            // The slot finder may need what the summary skips.
            descend |= s.visit(n, depth);
        }
        if descend && cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            // Leaving the node at `depth`.
            if cur.as_ref().is_some_and(|c| c.depth == depth) {
                if let Some(c) = cur.take() {
                    finish(c, &mut out);
                }
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
            depth -= 1;
        }
    }
    if let Some(c) = cur.take() {
        finish(c, &mut out);
    }
    out.sort_by(|a, b| (a.line, &a.name).cmp(&(b.line, &b.name)));
    fields.sort();
    fields.dedup();
    (out, fields)
}

/// Records a direct call and member arguments of string functions.
fn call(
    pf: &ParsedFile,
    k: &Kinds,
    n: Node<'_>,
    calls: &mut BTreeMap<String, usize>,
    uses: &mut Vec<FieldUse>,
) {
    let Some(f) = k.child(n, k.f_function) else {
        return;
    };
    if f.kind_id() != k.identifier {
        return; // through a pointer: not a named API
    }
    let name = pf.node_text(f);
    if name.is_empty() {
        return;
    }
    let line = || n.start_position().row + 1;
    if !calls.contains_key(name) {
        calls.insert(name.to_string(), line());
    }
    if STRING_FUNCS.contains(&name) {
        if let Some(args) = k.child(n, k.f_arguments) {
            let line = line();
            let mut c = args.walk();
            let list: Vec<Node<'_>> = args.named_children(&mut c).collect();
            for a in list {
                if let Some(field) = member_name(pf, k, a) {
                    uses.push(FieldUse {
                        field: field.to_string(),
                        kind: UseKind::Str,
                        line,
                    });
                }
            }
        }
    }
}

/// The member name of `x->f` / `x.f` (through parentheses and casts).
fn member_name<'a>(pf: &'a ParsedFile, k: &Kinds, mut n: Node<'_>) -> Option<&'a str> {
    for _ in 0..8 {
        let id = n.kind_id();
        if id == k.field_expression {
            return k.child(n, k.f_field).map(|f| pf.node_text(f));
        } else if id == k.parenthesized_expression {
            n = n.named_child(0)?;
        } else if id == k.cast_expression {
            n = k.child(n, k.f_value)?;
        } else {
            return None;
        }
    }
    None
}

/// A function-like macro as a pseudo-function: the names its body calls.
fn macro_sum(pf: &ParsedFile, n: Node<'_>) -> Option<FnSum> {
    let name = pf.node_text(n.child_by_field_name("name")?).to_string();
    let line = n.start_position().row + 1;
    let mut calls = BTreeMap::new();
    if let Some(v) = n.child_by_field_name("value") {
        let body = pf.node_text(v);
        let b = body.as_bytes();
        for t in lex::ident_tokens(body) {
            let (s, i) = (t.start, t.end);
            let mut j = i;
            while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                j += 1;
            }
            let prev_is_member = s > 0 && (b[s - 1] == b'.' || (s > 1 && &b[s - 2..s] == b"->"));
            if j < b.len() && b[j] == b'(' && !prev_is_member {
                let id = &body[s..i];
                if id != name
                    && !matches!(
                        id,
                        "sizeof"
                            | "typeof"
                            | "__typeof__"
                            | "if"
                            | "while"
                            | "for"
                            | "switch"
                            | "return"
                            | "defined"
                    )
                {
                    calls.entry(id.to_string()).or_insert(line);
                }
            }
        }
    }
    Some(FnSum {
        name,
        line,
        broken: false,
        is_macro: true,
        calls: calls.into_iter().collect(),
        field_uses: Vec::new(),
    })
}

/// Struct and union members declared in the file, with how they are
/// declared.
pub fn field_decls(pf: &ParsedFile) -> Vec<FieldDecl> {
    walk(pf, false).1
}

/// Members of a struct/union specifier with a body (named, or named by the
/// typedef around it).
fn struct_members(pf: &ParsedFile, n: Node<'_>, out: &mut Vec<FieldDecl>) {
    let Some(body) = n.child_by_field_name("body") else {
        return;
    };
    if let Some(name) = n.child_by_field_name("name") {
        let rec = pf.node_text(name).to_string();
        record_fields(pf, &rec, body, out);
    } else if let Some(td) = n.parent().filter(|p| p.kind() == "type_definition") {
        // typedef struct { ... } name;
        if let Some(d) = td.child_by_field_name("declarator") {
            let rec = pf.node_text(d).to_string();
            if ident::is_ident(&rec) {
                record_fields(pf, &rec, body, out);
            }
        }
    }
}

fn record_fields(pf: &ParsedFile, rec: &str, body: Node<'_>, out: &mut Vec<FieldDecl>) {
    let mut stack = vec![body];
    let mut guard = 0;
    let mut cursor = body.walk();
    while let Some(b) = stack.pop() {
        guard += 1;
        if guard > 4096 {
            break;
        }
        let children: Vec<Node<'_>> = b.named_children(&mut cursor).collect();
        for fd in children {
            match fd.kind() {
                "field_declaration" => {
                    let ty = fd.child_by_field_name("type");
                    let mut c = fd.walk();
                    let decls: Vec<Node<'_>> =
                        fd.children_by_field_name("declarator", &mut c).collect();
                    if decls.is_empty() {
                        // Anonymous member struct/union: its members are ours.
                        if let Some(b2) = ty.and_then(|t| t.child_by_field_name("body")) {
                            stack.push(b2);
                        }
                        continue;
                    }
                    let base = ty
                        .map(|t| pf.node_text(t).trim().to_string())
                        .unwrap_or_default();
                    let iomem = pf.node_text(fd).contains("__iomem");
                    for d in decls {
                        if let Some((name, kind)) = declarator_kind(pf, d, &base) {
                            let kind = match kind {
                                FieldKind::Ptr { .. } if iomem => FieldKind::IoMem,
                                k => k,
                            };
                            out.push(FieldDecl {
                                record: rec.to_string(),
                                field: name,
                                kind,
                            });
                        }
                    }
                }
                k if k.starts_with("preproc_") => stack.push(fd),
                _ => {}
            }
        }
    }
}

/// The member a declarator declares and how.
fn declarator_kind(pf: &ParsedFile, mut d: Node<'_>, base: &str) -> Option<(String, FieldKind)> {
    let mut pointers = 0;
    let mut array = false;
    let mut function = false;
    for _ in 0..32 {
        match d.kind() {
            "field_identifier" | "identifier" => {
                let name = pf.node_text(d).to_string();
                let kind = if function {
                    FieldKind::FnPtr
                } else if array {
                    FieldKind::Array
                } else if pointers > 0 {
                    FieldKind::Ptr {
                        pointee: base.to_string(),
                    }
                } else {
                    FieldKind::Value
                };
                return Some((name, kind));
            }
            "pointer_declarator" if !array && !function => pointers += 1,
            // `T *a[N]` is an array; `T (*p)[N]` a pointer to one.
            "array_declarator" if pointers == 0 => array = true,
            "function_declarator" => function = true,
            _ => {}
        }
        d = match d.child_by_field_name("declarator") {
            Some(x) => x,
            None => d.named_child(0)?,
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> CContext {
        CContext::new(
            Options::with_default_hints().unwrap(),
            SlotTable::builtin().unwrap(),
        )
    }

    /// Lookups through a header's items give what the whole parse gives.
    #[test]
    fn header_items_match_the_whole_parse() {
        let dir = tempfile::tempdir().unwrap();
        let h = dir.path().join("h.h");
        std::fs::write(
            &h,
            "#ifndef H\n#define H\n/* helpers */\n\
             #define RD(p, r) readl((p)->base + (r))\n\
             struct ring { u8 *buf; int len;\n#ifdef X\n\tchar *name;\n#endif\n};\n\
             int proto(struct ring *r);\n\
             static inline int ring_len(struct ring *r)\n{\n\tstrcpy(r->name, \"x\");\n\
             \treturn r->len + helper(r->buf + 1);\n}\n\
             #ifdef CONFIG_A\nstatic inline void wr(int v) { hw_wr(v); }\n\
             #else\n#define wr(v) sw_wr(v)\n#endif\n#endif\n",
        )
        .unwrap();
        let opts = Options::with_default_hints().unwrap();
        let items = HeaderInfo::read(&h, &opts);
        let whole = HeaderInfo::read(&h, &opts);
        let p = whole.parsed();
        for name in ["RD", "ring_len", "wr", "proto", "helper"] {
            let w: Vec<&FnSum> = p.functions.iter().filter(|f| f.name == name).collect();
            assert_eq!(items.functions_named(name), w, "{name}");
        }
        for field in ["buf", "len", "name", "base"] {
            let w: Vec<&FieldDecl> = p.fields.iter().filter(|d| d.field == field).collect();
            assert_eq!(items.fields_named(field), w, "{field}");
        }
        let wr: Vec<usize> = items.functions_named("wr").iter().map(|f| f.line).collect();
        assert_eq!(wr, [17, 19]);
        assert_eq!(items.fields_named("name").len(), 1);
        // Only the items holding the names were parsed, never the whole.
        assert!(!items.is_parsed());
        assert!(whole.is_parsed());
    }

    #[test]
    fn functions_calls_fields_and_roots() {
        let src = "struct priv { u8 *buf; char *name; u8 mac[6]; void __iomem *mmio;\n\
                   int (*hook)(int); struct { u32 *regs; }; };\n\
                   #define RD(p, r) readl((p)->base + (r))\n\
                   static int foo_open(struct net_device *dev)\n{\n\
                   \tstruct priv *p = netdev_priv(dev);\n\
                   \tp->buf[3] = RD(p, 4);\n\tstrcpy(p->name, \"x\");\n\
                   \treturn helper(p->regs + 2);\n}\n\
                   static const struct net_device_ops ops = { .ndo_open = foo_open };\n";
        let s = summarize_text(
            &ctx(),
            Path::new("t.c"),
            src.to_string(),
            FileSummary::empty("t.c".into(), Lang::C),
        );
        assert!(s.failure.is_none());
        let names: Vec<_> = s.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["RD", "foo_open"]);
        let rd = &s.functions[0];
        assert!(rd.is_macro);
        assert_eq!(rd.calls, [("readl".to_string(), 3)]);
        let f = &s.functions[1];
        let calls: Vec<_> = f.calls.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(calls, ["RD", "helper", "netdev_priv", "strcpy"]);
        let uses: Vec<_> = f
            .field_uses
            .iter()
            .map(|u| (u.field.as_str(), u.kind))
            .collect();
        assert_eq!(
            uses,
            [
                ("buf", UseKind::Index),
                ("name", UseKind::Str),
                ("regs", UseKind::Arith)
            ]
        );
        let kinds: Vec<_> = s
            .fields
            .iter()
            .map(|d| (d.field.as_str(), d.kind.clone()))
            .collect();
        assert!(kinds.contains(&(
            "buf",
            FieldKind::Ptr {
                pointee: "u8".into()
            }
        )));
        assert!(kinds.contains(&("mac", FieldKind::Array)));
        assert!(kinds.contains(&("hook", FieldKind::FnPtr)));
        assert!(kinds.contains(&("mmio", FieldKind::IoMem)));
        assert!(kinds.contains(&(
            "regs",
            FieldKind::Ptr {
                pointee: "u32".into()
            }
        )));
        assert_eq!(s.roots.len(), 1);
        assert_eq!(s.roots[0].function, "foo_open");
        assert_eq!(s.roots[0].kind, "net");
    }

    #[test]
    fn budget_and_binary_are_failures() {
        let mut c = ctx();
        c.opts.budget.max_bytes = 8;
        let s = summarize_text(
            &c,
            Path::new("big.c"),
            "int main(void) { return 0; }\n".into(),
            FileSummary::empty("big.c".into(), Lang::C),
        );
        assert_eq!(s.failure.as_ref().map(|f| &f.kind), Some(&FailKind::Budget));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bin.c");
        std::fs::write(&p, b"int a;\n\0\x01").unwrap();
        let s = summarize_file(&ctx(), &p, Path::new("bin.c"));
        let f = s.failure.unwrap();
        assert_eq!(f.kind, FailKind::NotSource);
    }
}

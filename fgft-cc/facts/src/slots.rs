//! Slots: every driver function the kernel calls through a function pointer.
//!
//! The slot kinds are data (`fgft-cc/tables/slots.toml`, embedded, plus user
//! extension files found through `FGFT_TABLES` or `--tables`).  A function is a
//! root when it is stored in a slot by:
//! - a designated or positional initializer of a slot structure (also nested:
//!   `.driver = { .shutdown = f }`, and arrays of them);
//! - an assignment `x.f = fn` / `p->f = fn` whose left side resolves to a slot
//!   structure (through parameters, locals, globals, struct fields of the file
//!   and its local headers, typedefs), or whose field belongs to one slot
//!   structure only;
//! - a table macro (`SIMPLE_DEV_PM_OPS`, `SET_SYSTEM_SLEEP_PM_OPS`,
//!   `DEVICE_ATTR_RW`, `module_init`, ...);
//! - a registering call (`timer_setup`, `INIT_WORK`, `netif_napi_add`,
//!   `request_irq`, ...).

use fgft_base::ident;
use fgft_parse::tables::{self, TableSource};
use fgft_parse::{walk, ParseError, ParsedFile};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use tree_sitter::Node;

/// File name of the table (built-in and extension files).
pub const TABLE_NAME: &str = "slots.toml";
const BUILTIN: &str = include_str!("../../tables/slots.toml");

/// One function stored in a kernel slot.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Root {
    pub function: String,
    /// The slot structure (`net_device_ops`, `dev_pm_ops`, ...).
    pub struct_name: String,
    /// The field, dotted for embedded structures (`driver.shutdown`).
    pub field: String,
    pub file: PathBuf,
    /// 1-based line where the function is stored.
    pub line: usize,
    /// The variable (or left-hand side) holding the slot structure; empty when
    /// there is none (`module_init`, registering calls).
    pub var: String,
    /// Slot category from the table (`net`, `ethtool`, `pm`, ...).
    pub kind: String,
}

impl Ord for Root {
    /// File, line, function, structure, field, variable: the output order.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (
            &self.file,
            self.line,
            &self.function,
            &self.struct_name,
            &self.field,
            &self.var,
        )
            .cmp(&(
                &o.file,
                o.line,
                &o.function,
                &o.struct_name,
                &o.field,
                &o.var,
            ))
    }
}

impl PartialOrd for Root {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Root {
    /// `function struct.field file:line`, with `file` shown relative to `base`.
    pub fn display_line(&self, base: Option<&Path>) -> String {
        let f = base
            .and_then(|b| self.file.strip_prefix(b).ok())
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(&self.file);
        format!(
            "{} {}.{} {}:{}",
            self.function,
            self.struct_name,
            self.field,
            f.display(),
            self.line
        )
    }
}

// ---------------------------------------------------------------- table ---

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SlotFile {
    #[serde(default)]
    wrappers: Vec<String>,
    #[serde(default, rename = "struct")]
    structs: BTreeMap<String, StructDef>,
    #[serde(default, rename = "macro")]
    macros: BTreeMap<String, MacroDef>,
    #[serde(default, rename = "call")]
    calls: BTreeMap<String, Vec<(usize, String)>>,
}

/// One slot structure.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StructDef {
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub header: String,
    /// Positional initializers may be mapped by `fields` order.
    #[serde(default)]
    pub positional: bool,
    #[serde(default)]
    pub fields: Vec<String>,
    #[serde(default)]
    pub functions: Vec<String>,
    #[serde(default)]
    pub nested: BTreeMap<String, String>,
    #[serde(default)]
    pub pointers: BTreeMap<String, String>,
}

/// A macro that fills a slot structure.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MacroDef {
    #[serde(rename = "struct")]
    pub struct_name: String,
    pub var: Option<usize>,
    #[serde(default)]
    pub args: Vec<Vec<String>>,
    #[serde(default)]
    pub derived: BTreeMap<String, String>,
}

/// The compiled slot table.
#[derive(Debug, Clone, Default)]
pub struct SlotTable {
    pub structs: HashMap<String, StructDef>,
    pub macros: HashMap<String, MacroDef>,
    /// Registering call -> (argument, struct, field).
    pub calls: HashMap<String, Vec<(usize, String, String)>>,
    pub wrappers: HashSet<String>,
    /// Function field name -> structures that have it.
    fn_field_owners: HashMap<String, Vec<String>>,
    /// Pointer field name -> pointed slot structures.
    ptr_field_targets: HashMap<String, Vec<String>>,
    /// The keys of `fn_field_owners` and `ptr_field_targets`.
    slot_fields: HashSet<String, fgft_parse::hints::FxBuild>,
    /// Finds the names of `calls` and `macros` in a text (leftmost first:
    /// every occurrence overlaps a match); `None` when not built or when a
    /// name is empty (the scan then enters every node).
    call_names: Option<aho_corasick::AhoCorasick>,
}

impl SlotTable {
    /// The built-in table only.
    pub fn builtin() -> Result<SlotTable, ParseError> {
        Self::from_sources(&[TableSource {
            path: None,
            text: BUILTIN.to_string(),
        }])
    }

    /// The built-in table extended by `slots.toml` files in `FGFT_TABLES`
    /// directories and `extra_dirs`.
    pub fn load(extra_dirs: &[PathBuf]) -> Result<SlotTable, ParseError> {
        let dirs = tables::table_dirs(extra_dirs);
        Self::from_sources(&tables::extension_files(BUILTIN, TABLE_NAME, &dirs)?)
    }

    /// Builds a table; later sources add or replace structures and macros.
    pub fn from_sources(sources: &[TableSource]) -> Result<SlotTable, ParseError> {
        let mut t = SlotTable::default();
        for src in sources {
            let f: SlotFile = tables::parse_toml(src, TABLE_NAME)?;
            t.wrappers.extend(f.wrappers);
            for (name, def) in f.structs {
                for fun in &def.functions {
                    if def.positional && !def.fields.contains(fun) {
                        return Err(tables::table_error(
                            src,
                            TABLE_NAME,
                            fun,
                            format!("struct {name}: function `{fun}` is not in its `fields` list"),
                        ));
                    }
                }
                t.structs.insert(name, def);
            }
            for (name, m) in f.macros {
                for tmpl in m.derived.values() {
                    if !tmpl.contains('{') {
                        return Err(tables::table_error(
                            src,
                            TABLE_NAME,
                            tmpl,
                            format!(
                                "macro {name}: derived name `{tmpl}` uses no argument (`{{0}}`)"
                            ),
                        ));
                    }
                }
                t.macros.insert(name, m);
            }
            for (name, slots) in f.calls {
                let mut v = Vec::new();
                for (pos, slot) in slots {
                    let Some((s, fld)) = slot.split_once('.') else {
                        return Err(tables::table_error(
                            src,
                            TABLE_NAME,
                            &slot,
                            format!("call {name}: slot `{slot}` must be `struct.field`"),
                        ));
                    };
                    v.push((pos, s.to_string(), fld.to_string()));
                }
                t.calls.insert(name, v);
            }
        }
        t.index();
        Ok(t)
    }

    fn index(&mut self) {
        self.fn_field_owners.clear();
        self.ptr_field_targets.clear();
        let mut names: Vec<&String> = self.structs.keys().collect();
        names.sort();
        for name in names {
            let def = &self.structs[name];
            for f in &def.functions {
                self.fn_field_owners
                    .entry(f.clone())
                    .or_default()
                    .push(name.clone());
            }
            for (f, target) in &def.pointers {
                self.ptr_field_targets
                    .entry(f.clone())
                    .or_default()
                    .push(target.clone());
            }
        }
        self.slot_fields = self
            .fn_field_owners
            .keys()
            .chain(self.ptr_field_targets.keys())
            .cloned()
            .collect();
        let mut names: Vec<&str> = self
            .calls
            .keys()
            .chain(self.macros.keys())
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        names.dedup();
        self.call_names = if names.iter().any(|n| n.is_empty()) {
            None
        } else {
            aho_corasick::AhoCorasick::builder()
                .match_kind(aho_corasick::MatchKind::LeftmostFirst)
                .build(names)
                .ok()
        };
    }

    /// Whether some slot structure has a function or slot-pointer field
    /// named `f` (a member store elsewhere fills no slot).
    fn is_slot_field(&self, f: &str) -> bool {
        self.slot_fields.contains(f)
    }

    fn kind_of(&self, s: &str) -> String {
        self.structs
            .get(s)
            .map(|d| d.kind.clone())
            .filter(|k| !k.is_empty())
            .unwrap_or_else(|| match s {
                "module" => "module".into(),
                "irqaction" => "irq".into(),
                _ => "other".into(),
            })
    }
}

// ---------------------------------------------------------------- facts ---

/// Type facts of one file, read with tree-sitter (no preprocessing): enough to
/// resolve the structure on the left of `x->f = fn`.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// struct name -> field -> type name (`struct X` gives `X`; typedef names
    /// are kept and resolved through `typedefs`).
    pub struct_fields: HashMap<String, HashMap<String, String>>,
    /// typedef name -> the type it names (struct name or another typedef).
    pub typedefs: HashMap<String, String>,
    /// Global variables -> type name.
    pub globals: HashMap<String, String>,
    /// Functions defined or declared.
    pub functions: HashSet<String>,
}

impl Facts {
    /// Adds `other`'s facts (ours win on conflicts).
    pub fn merge(&mut self, other: &Facts) {
        for (k, v) in &other.struct_fields {
            self.struct_fields
                .entry(k.clone())
                .or_insert_with(|| v.clone());
        }
        for (k, v) in &other.typedefs {
            self.typedefs.entry(k.clone()).or_insert_with(|| v.clone());
        }
        for (k, v) in &other.globals {
            self.globals.entry(k.clone()).or_insert_with(|| v.clone());
        }
        self.functions.extend(other.functions.iter().cloned());
    }

    /// Resolves a type name through typedefs to a struct name.
    pub fn resolve<'a>(&'a self, mut t: &'a str) -> &'a str {
        for _ in 0..8 {
            match self.typedefs.get(t) {
                Some(n) if n != t => t = n,
                _ => break,
            }
        }
        t
    }
}

/// Which table of [`Facts`] a lookup reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactKey {
    /// [`Facts::functions`]
    Function,
    /// [`Facts::globals`]
    Global,
    /// [`Facts::struct_fields`]
    Struct,
    /// [`Facts::typedefs`]
    Typedef,
}

/// Facts made only when a lookup may find something in them (a header is
/// parsed only when one of its names is asked for).
pub trait LazyFacts: Send + Sync + std::fmt::Debug {
    /// `false` only when the facts certainly hold no `name` in table `key`.
    fn may_have(&self, key: FactKey, name: &str) -> bool;
    /// The facts (made on the first call).
    fn facts(&self) -> &Facts;
}

#[derive(Debug, Clone)]
enum Layer {
    Eager(Arc<Facts>),
    Lazy(Arc<dyn LazyFacts>),
}

impl Layer {
    /// The layer's facts when they may hold `name` in table `key`.
    fn get(&self, key: FactKey, name: &str) -> Option<&Facts> {
        match self {
            Layer::Eager(f) => Some(f),
            Layer::Lazy(l) => l.may_have(key, name).then(|| l.facts()),
        }
    }
}

/// The facts of a file and of its headers, looked up layer by layer (the
/// file first), so headers shared by many files are never copied.
#[derive(Debug, Clone, Default)]
pub struct FactSet {
    layers: Vec<Layer>,
}

impl From<Facts> for FactSet {
    fn from(f: Facts) -> FactSet {
        FactSet {
            layers: vec![Layer::Eager(Arc::new(f))],
        }
    }
}

impl FactSet {
    /// Adds a lower-priority layer.
    pub fn push(&mut self, f: Arc<Facts>) {
        self.layers.push(Layer::Eager(f));
    }

    /// Adds a lower-priority layer made on demand: lookups give what they
    /// would give with its facts pushed, as long as `may_have` never says
    /// `false` for a name the facts hold.
    pub fn push_lazy(&mut self, f: Arc<dyn LazyFacts>) {
        self.layers.push(Layer::Lazy(f));
    }

    /// Whether any layer defines or declares function `n`.
    pub fn is_function(&self, n: &str) -> bool {
        self.layers.iter().any(|l| {
            l.get(FactKey::Function, n)
                .is_some_and(|f| f.functions.contains(n))
        })
    }

    /// The type of global variable `n`.
    pub fn global(&self, n: &str) -> Option<&String> {
        self.layers
            .iter()
            .find_map(|l| l.get(FactKey::Global, n)?.globals.get(n))
    }

    /// The field types of struct `st`.
    pub fn struct_fields(&self, st: &str) -> Option<&HashMap<String, String>> {
        self.layers
            .iter()
            .find_map(|l| l.get(FactKey::Struct, st)?.struct_fields.get(st))
    }

    /// Resolves a type name through typedefs to a struct name.
    pub fn resolve<'a>(&'a self, mut t: &'a str) -> &'a str {
        for _ in 0..8 {
            match self
                .layers
                .iter()
                .find_map(|l| l.get(FactKey::Typedef, t)?.typedefs.get(t))
            {
                Some(n) if n != t => t = n,
                _ => break,
            }
        }
        t
    }
}

/// The type name a type node names: `struct X` -> `X`, `foo_t` -> `foo_t`.
fn type_name<'a>(pf: &'a ParsedFile, t: Node<'_>) -> Option<&'a str> {
    let k = walk::kinds();
    let id = t.kind_id();
    if id == k.struct_specifier || id == k.union_specifier {
        k.child(t, k.f_name).map(|n| pf.node_text(n))
    } else if id == k.type_identifier {
        Some(pf.node_text(t))
    } else {
        None
    }
}

/// The name a declarator declares, and whether it declares an array.
fn declarator_name<'a>(pf: &'a ParsedFile, mut d: Node<'_>) -> Option<(&'a str, bool, bool)> {
    let k = walk::kinds();
    let mut array = false;
    let mut function = false;
    for _ in 0..32 {
        let id = d.kind_id();
        if id == k.identifier || id == k.field_identifier || id == k.type_identifier {
            return Some((pf.node_text(d), array, function));
        } else if id == k.array_declarator {
            array = true;
        } else if id == k.function_declarator {
            function = true;
        }
        d = match k.child(d, k.f_declarator) {
            Some(x) => x,
            None => d.named_child(0)?,
        };
    }
    None
}

/// The children of `n` in field `f`, in order.
fn children_by_field<'t>(
    n: Node<'t>,
    f: Option<std::num::NonZeroU16>,
) -> impl Iterator<Item = Node<'t>> {
    fgft_parse::walk::children_with_fields(n)
        .filter(move |(_, id)| f.is_some() && *id == f)
        .map(|(x, _)| x)
}

/// Inserts `k -> v` written by the node spanning `r`.  Facts used to be
/// collected walking the tree backwards (later items first, a node before
/// its children), where the last write won; in a forward walk that is: keep
/// the first writer, unless the new one lies inside it.
fn put<V>(
    map: &mut HashMap<String, V>,
    spans: &mut HashMap<String, (usize, usize)>,
    k: &str,
    v: V,
    r: (usize, usize),
) {
    match spans.get(k) {
        Some(&(s, e)) if !(s <= r.0 && r.1 <= e) => {}
        _ => {
            spans.insert(k.to_string(), r);
            map.insert(k.to_string(), v);
        }
    }
}

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
    nodes: Vec<Node<'t>>,
    /// Depth of the function definition the walk is in.
    in_fn: Option<u32>,
    /// Depth of the outermost block (outside functions) the walk is in.
    in_block: Option<u32>,
    /// Byte ranges every slot candidate overlaps ([`candidate_marks`]);
    /// `None`: any node may hold one.
    marks: Option<Vec<(usize, usize)>>,
    /// Index of the first range ending after the start of the last node
    /// looked up.
    next_mark: usize,
}

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
fn candidate_marks(pf: &ParsedFile, table: &SlotTable) -> Option<Vec<(usize, usize)>> {
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
fn leaf_kind_outside(id: u16) -> bool {
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
fn may_open_block_or_body(h: &[u8], s: usize, e: usize) -> bool {
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
fn is_comparison(h: &[u8], i: usize) -> bool {
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
fn space_byte(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Whether the `=` at `h[i]` may be followed by an initializer list that
/// stores something: the next byte that is no whitespace is `{`, or may
/// start a comment or a line continuation.  A list of numbers (`{}`,
/// `{ 0 }`) stores no function and names no variable: the finder takes
/// nothing from it.
fn may_open_initializer(h: &[u8], i: usize) -> bool {
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
fn skip_space_back(h: &[u8], mut j: usize) -> Option<usize> {
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
fn may_store_slot_field(pf: &ParsedFile, table: &SlotTable, i: usize) -> bool {
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
    nodes: Vec<Node<'t>>,
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
fn scan_walk<'t>(s: &mut Scan<'t, '_>, root: Node<'t>) {
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

fn struct_body_fields(pf: &ParsedFile, body: Node<'_>) -> HashMap<String, String> {
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

// ---------------------------------------------------------------- roots ---

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

struct Finder<'a> {
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
fn scope_map<'a>(pf: &'a ParsedFile, f: Node<'_>) -> HashMap<&'a str, &'a str> {
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
fn local_type<'a>(pf: &'a ParsedFile, f: Node<'_>, name: &str) -> Option<&'a str> {
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
fn occurrences(pf: &ParsedFile, n: Node<'_>, name: &str) -> Vec<usize> {
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
fn overlaps_any(at: &[usize], len: usize, n: Node<'_>) -> bool {
    let (s, e) = (n.start_byte(), n.end_byte());
    let i = at.partition_point(|&p| p + len <= s);
    at.get(i).is_some_and(|&p| p < e)
}

/// The type name a declaration or parameter declaration `x` gives its
/// names (empty when not a struct or typedef name).
fn declared_type<'a>(pf: &'a ParsedFile, x: Node<'_>) -> &'a str {
    let k = walk::kinds();
    k.child(x, k.f_type)
        .and_then(|t| type_name(pf, t))
        .unwrap_or("")
}

/// The names the declarators of `x` declare.
fn declared_names<'a, 't>(pf: &'a ParsedFile, x: Node<'t>) -> impl Iterator<Item = &'a str> + 't
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
fn post_order_declarations<'t>(
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
fn post_order<'t>(
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

fn enclosing_function(n: Node<'_>) -> Option<Node<'_>> {
    let k = walk::kinds();
    let mut f = n;
    while f.kind_id() != k.function_definition {
        f = f.parent()?;
    }
    Some(f)
}

fn compact(s: &str) -> String {
    s.split_whitespace().collect()
}

fn call_args(call: Node<'_>) -> Vec<Node<'_>> {
    let k = walk::kinds();
    k.child(call, k.f_arguments)
        .map(|a| {
            walk::named_children(a)
                .filter(|c| c.kind_id() != k.comment)
                .collect()
        })
        .unwrap_or_default()
}

fn inside_initializer(n: Node<'_>) -> bool {
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

fn at_file_scope(n: Node<'_>) -> bool {
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
fn derive_name<'n>(
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

#[cfg(test)]
mod tests {
    use super::*;

    fn roots_of(src: &str) -> Vec<String> {
        let pf = fgft_parse::parse_text(Path::new("t.c"), src.to_string()).unwrap();
        let t = SlotTable::builtin().unwrap();
        roots(&pf, &FactSet::from(facts_of(&pf)), &t)
            .iter()
            .map(|r| {
                format!(
                    "{} {}.{} {} {}",
                    r.function, r.struct_name, r.field, r.line, r.var
                )
            })
            .collect()
    }

    #[test]
    fn builtin_table_loads() {
        let t = SlotTable::builtin().unwrap();
        assert!(t.structs["net_device_ops"]
            .functions
            .contains(&"ndo_open".to_string()));
        assert_eq!(t.fn_field_owners["ndo_open"], ["net_device_ops"]);
        assert!(t.macros.contains_key("SIMPLE_DEV_PM_OPS"));
    }

    #[test]
    fn designated_nested_positional_and_arrays() {
        let r = roots_of(
            "static const struct net_device_ops ops = {\n\t.ndo_open = a_open,\n\t.ndo_stop = NULL,\n};\n\
             static struct pci_driver drv = {\n\t.name = \"x\",\n\t.probe = a_probe,\n\t.driver = { .shutdown = a_shut, .pm = &a_pm },\n\t.remove = __exit_p(a_remove),\n};\n\
             static struct header_ops h = { a_create, a_parse };\n\
             static const struct snd_kcontrol_new ctl[] = {\n\t{ .info = c_info, .get = c_get },\n\t{ .put = c_put },\n};\n",
        );
        assert_eq!(
            r,
            [
                "a_open net_device_ops.ndo_open 2 ops",
                "a_probe pci_driver.probe 7 drv",
                "a_shut pci_driver.driver.shutdown 8 drv",
                "a_remove pci_driver.remove 9 drv",
                "a_create header_ops.create 11 h",
                "a_parse header_ops.parse 11 h",
                "c_get snd_kcontrol_new.get 13 ctl",
                "c_info snd_kcontrol_new.info 13 ctl",
                "c_put snd_kcontrol_new.put 14 ctl",
            ]
        );
    }

    #[test]
    fn assignments_macros_and_calls() {
        let r = roots_of(
            "struct priv { struct timer_list t; struct input_dev *in; };\n\
             static struct ethtool_ops eops;\n\
             static int probe(struct psmouse *psmouse, struct priv *p)\n{\n\
             \tint (*local)(void) = 0;\n\
             \tpsmouse->protocol_handler = m_process;\n\
             \tp->in->open = m_open;\n\
             \teops.get_link = m_link;\n\
             \tp->t.function = m_timer;\n\
             \tpsmouse->disconnect = local;\n\
             \ttimer_setup(&p->t, m_tick, 0);\n\
             \tirq_handler_t h = m_intr;\n\
             \trequest_irq(1, h, 0, \"x\", p);\n\
             \treturn 0;\n}\n\
             static SIMPLE_DEV_PM_OPS(m_pm, m_suspend, m_resume);\n\
             static DEVICE_ATTR_RW(speed);\n\
             module_init(m_init);\n",
        );
        assert_eq!(
            r,
            [
                "m_process psmouse.protocol_handler 6 psmouse",
                "m_open input_dev.open 7 p->in",
                "m_link ethtool_ops.get_link 8 eops",
                "m_timer timer_list.function 9 p->t",
                "m_tick timer_list.function 11 ",
                "m_intr irqaction.handler 12 ",
                "m_resume dev_pm_ops.restore 16 m_pm",
                "m_resume dev_pm_ops.resume 16 m_pm",
                "m_resume dev_pm_ops.thaw 16 m_pm",
                "m_suspend dev_pm_ops.freeze 16 m_pm",
                "m_suspend dev_pm_ops.poweroff 16 m_pm",
                "m_suspend dev_pm_ops.suspend 16 m_pm",
                "speed_show device_attribute.show 17 speed",
                "speed_store device_attribute.store 17 speed",
                "m_init module.init 18 ",
            ]
        );
    }

    #[test]
    fn pm_fragments_and_pointer_inference() {
        let r = roots_of(
            "static const struct dev_pm_ops pm = {\n\
             \tSET_SYSTEM_SLEEP_PM_OPS(s_susp, s_res)\n\
             \t.runtime_idle = s_idle,\n};\n\
             static my_ops_t o = { .ndo_open = o_open };\n\
             void f(struct net_device *nd) { nd->netdev_ops = &o; }\n",
        );
        assert!(
            r.contains(&"s_susp dev_pm_ops.suspend 2 pm".to_string()),
            "{r:?}"
        );
        assert!(
            r.contains(&"s_res dev_pm_ops.restore 2 pm".to_string()),
            "{r:?}"
        );
        assert!(
            r.contains(&"s_idle dev_pm_ops.runtime_idle 3 pm".to_string()),
            "{r:?}"
        );
        assert!(
            r.contains(&"o_open net_device_ops.ndo_open 5 o".to_string()),
            "{r:?}"
        );
    }

    #[test]
    fn table_errors_are_located() {
        let bad = SlotTable::from_sources(&[TableSource {
            path: Some("x/slots.toml".into()),
            text: "[call]\nfoo = [[1, \"nodot\"]]\n".into(),
        }]);
        match bad {
            Err(ParseError::Table {
                range: Some(r),
                text,
                ..
            }) => assert_eq!(&text[r], "nodot"),
            other => panic!("{other:?}"),
        }
    }

    /// The walk before pruning: every node, no marks (so `visit` enters
    /// everything `walk::skippable` lets it).
    fn full_scan<'t>(pf: &'t ParsedFile, table: &'t SlotTable) -> (Facts, Candidates<'t>) {
        let mut s = Scan::new(pf, Some(table));
        s.marks = None;
        walk::preorder(pf.tree.root_node(), |n, d| s.visit(n, d));
        s.finish()
    }

    fn sorted<K: Ord + Clone, V: Clone>(m: &HashMap<K, V>) -> Vec<(K, V)> {
        let mut v: Vec<(K, V)> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Checks the pruned scan against the full one on `src`: the same facts,
    /// candidates among the full walk's (only declarations of number lists
    /// may be missing), the same roots.
    fn same_as_full_walk(src: &str) -> Vec<String> {
        let pf = fgft_parse::parse_text(Path::new("t.c"), src.to_string()).unwrap();
        let t = SlotTable::builtin().unwrap();
        let (facts, cands) = scan(&pf, &t);
        let (full_facts, full_cands) = full_scan(&pf, &t);
        let mut fields: Vec<(String, Vec<(String, String)>)> = facts
            .struct_fields
            .iter()
            .map(|(k, v)| (k.clone(), sorted(v)))
            .collect();
        let mut full_fields: Vec<(String, Vec<(String, String)>)> = full_facts
            .struct_fields
            .iter()
            .map(|(k, v)| (k.clone(), sorted(v)))
            .collect();
        fields.sort();
        full_fields.sort();
        assert_eq!(fields, full_fields, "struct fields of {src}");
        assert_eq!(sorted(&facts.typedefs), sorted(&full_facts.typedefs));
        assert_eq!(sorted(&facts.globals), sorted(&full_facts.globals));
        assert_eq!(facts.functions, full_facts.functions);
        let k = walk::kinds();
        for n in &full_cands.nodes {
            if !cands.nodes.contains(n) {
                // Only declarations whose lists hold numbers only.
                let numbers = |v: Node<'_>| {
                    pf.node_text(v).bytes().all(|c| {
                        c.is_ascii_whitespace() || c.is_ascii_digit() || b"{},".contains(&c)
                    })
                };
                let trivial = n.kind_id() == k.declaration
                    && children_by_field(*n, k.f_declarator)
                        .filter_map(|d| k.child(d, k.f_value))
                        .filter(|v| v.kind_id() == k.initializer_list)
                        .all(numbers);
                assert!(trivial, "candidate `{}` missed in {src}", pf.node_text(*n));
            }
        }
        assert!(cands.nodes.iter().all(|n| full_cands.nodes.contains(n)));
        let fs = FactSet::from(facts);
        let show = |rs: Vec<Root>| -> Vec<String> {
            rs.iter()
                .map(|r| format!("{} {}.{} {}", r.function, r.struct_name, r.field, r.line))
                .collect()
        };
        let got = show(roots_of_candidates(&pf, &fs, &t, &cands));
        let want = show(roots_of_candidates(&pf, &fs, &t, &full_cands));
        assert_eq!(got, want, "roots of {src}");
        got
    }

    fn roots_of_candidates<'t>(
        pf: &'t ParsedFile,
        fs: &FactSet,
        t: &SlotTable,
        c: &Candidates<'t>,
    ) -> Vec<Root> {
        super::roots_of(pf, fs, t, c)
    }

    #[test]
    fn pruned_scan_finds_what_the_full_walk_finds() {
        // Stores split by newlines, comments and line continuations; local
        // initializers behind comments; compound operators; number lists.
        let r = same_as_full_walk(
            "struct priv { struct net_device *nd; struct timer_list t; };\n\
             static void a(struct net_device *dev, struct priv *p)\n{\n\
             \tint x = 0, y[2] = { 0, 1 };\n\
             \tif (x == 1 && y[0] <= 2)\n\t\tx <<= 1;\n\
             \tdev->\n\t\tnetdev_ops = &a_ops;\n\
             \tdev->ethtool_ops /* c */ = &a_eops;\n\
             \tp->t.function // c\n\t\t= a_timer;\n\tp->t.function = a_timer2;\n\
             \tp->nd->netdev_ops // from q.x\n\t\t= &a_ops2;\n\
             \tp->nd->header_ops \\\n\t= &a_hops;\n\
             \tstruct net_device_ops o = /* c */ { .ndo_open = a_open };\n\
             \tstruct net_device_ops q = {};\n\
             \tif (x) {\n\t\tINIT_WORK(&p->w, a_work);\n\t}\n\
             \tp->nd->watchdog_timeo = 5;\n\
             }\n\
             static const struct net_device_ops a_ops = { .ndo_stop = a_stop, };\n",
        );
        assert_eq!(
            r,
            [
                "a_timer2 timer_list.function 12",
                "a_open net_device_ops.ndo_open 17",
                "a_work work_struct.func 20",
                "a_stop net_device_ops.ndo_stop 24"
            ]
        );
        // Facts behind statement expressions and in data tables outside
        // functions; typedefs and globals around them.
        same_as_full_walk(
            "static int v = ({ struct inner { int (*f)(void); } i = { 0 }; 0; });\n\
             static int w[] = { ({ typedef struct { int a; } t2; 1; }), 2 };\n\
             static int w2[] = { 1, ({ typedef foo_t bar_t; int nested(void) { return 0; } 2; }) };\n\
             static int w3[] = { 1, FOO(2, { typedef foo_t qux_t; int nested2(void) { return 0; } }) };\n\
             DEFINE_THING(x, { typedef foo_t baz_t; });\n\
             static const struct pci_device_id ids[] = {\n\
             \t{ PCI_DEVICE(1, 2), .driver_data = 3 },\n\
             \t{ (struct s3 { int b; } *)0 },\n};\n\
             typedef struct outer { struct inner2 { int c; } in; } outer_t;\n\
             struct outer *g1, g2;\n\
             int proto(int (*cb)(struct outer *o), long n);\n\
             static void f(void)\n{\n\tstruct local { int d; } l = { 1 };\n}\n",
        );
        // Registering calls and table macros with locals and casts.
        same_as_full_walk(
            "static int p(struct pci_dev *pdev)\n{\n\
             \tirq_handler_t h = b_intr;\n\
             \tint (*cb)(int h) = 0;\n\
             \ttimer_setup(&t, (void (*)(struct timer_list *))b_tick, 0);\n\
             \treturn request_irq(1, h, 0, \"b\", pdev);\n}\n\
             static SIMPLE_DEV_PM_OPS(b_pm, b_suspend, b_resume);\n\
             module_init(b_init);\n",
        );
        // A syntax error inside a function: entered whatever the marks say.
        same_as_full_walk(
            "static void e(struct net_device *dev)\n{\n\
             \tdev->netdev_ops = &e_ops;\n\tfoo(;\n\tdev->ethtool_ops = &e_eops\n}\n",
        );
    }

    /// The local scope as the finder first built it: a stack walk of the
    /// named nodes, the last declaration met winning.
    fn scope_by_stack<'a>(pf: &'a ParsedFile, f: Node<'_>) -> HashMap<&'a str, &'a str> {
        let k = walk::kinds();
        let mut m = HashMap::new();
        let mut stack = vec![f];
        while let Some(x) = stack.pop() {
            let xid = x.kind_id();
            if xid == k.parameter_declaration || xid == k.declaration {
                let t = k
                    .child(x, k.f_type)
                    .and_then(|t| type_name(pf, t))
                    .unwrap_or("");
                for d in children_by_field(x, k.f_declarator) {
                    if let Some((name, _, _)) = declarator_name(pf, d) {
                        m.insert(name, t);
                    }
                }
            }
            stack.extend(walk::named_children(x));
        }
        m
    }

    #[test]
    fn local_types_match_the_stack_walk() {
        let src = "static int f(struct a *p, b_t q)\n{\n\
                   \tstruct c *x, *p2;\n\
                   \tint (*cb)(struct d *p, e_t x) = 0;\n\
                   \tif (p) {\n\t\tstruct e *x = 0;\n\t\tfor (f_t i = 0; i < 2; i++)\n\t\t\t;\n\t}\n\
                   \t{ struct g q; }\n\
                   \tx = (void *)sizeof(int (*)(struct h *hh));\n\
                   \treturn ({ struct i *x2 = 0; 0; });\n}\n";
        let pf = fgft_parse::parse_text(Path::new("t.c"), src.to_string()).unwrap();
        let k = walk::kinds();
        let f = walk::named_children(pf.tree.root_node())
            .find(|n| n.kind_id() == k.function_definition)
            .unwrap();
        let want = scope_by_stack(&pf, f);
        assert_eq!(scope_map(&pf, f), want);
        assert_eq!(want.get("x"), Some(&"c"), "{want:?}");
        let mut names: Vec<&str> = Vec::new();
        walk::preorder(f, |n, _| {
            if n.kind_id() == k.identifier {
                names.push(pf.node_text(n));
            }
            true
        });
        names.extend(["hh", "nope", "", "i"]);
        for name in names {
            assert_eq!(local_type(&pf, f, name), want.get(name).copied(), "{name}");
        }
    }

    #[test]
    fn lexical_marks() {
        let h = b"a == b; c != d; e <= f; g >= h; i <<= 1; j >>= 2; k = 3;";
        let eqs: Vec<usize> = memchr::memchr_iter(b'=', h)
            .filter(|&i| !is_comparison(h, i))
            .collect();
        assert_eq!(eqs.len(), 3);
        assert!(may_open_initializer(b"x = /* c */ {", 2));
        assert!(may_open_initializer(b"x =\n\t{ .a = b }", 2));
        assert!(!may_open_initializer(b"x = { 0, 1 }", 2));
        assert!(!may_open_initializer(b"x = {}", 2));
        assert!(!may_open_initializer(b"x = y", 2));
        let t = SlotTable::builtin().unwrap();
        let check = |src: &str| {
            let pf = fgft_parse::parse_text(Path::new("t.c"), src.to_string()).unwrap();
            let i = src.rfind('=').unwrap();
            may_store_slot_field(&pf, &t, i)
        };
        assert!(check("void f(void) { p->ndo_open = g; }"));
        assert!(check("void f(void) { p . ndo_open |= g; }"));
        assert!(check("void f(void) { p->\n ndo_open = g; }"));
        assert!(check("void f(void) { p->ndo_open // c\n = g; }"));
        assert!(check("void f(void) { p->ndo_open // from q.x\n = g; }"));
        assert!(!check("void f(void) { p->count = g; }"));
        assert!(!check("void f(void) {\n\tret = g; }"));
        assert!(!check("void f(void) { a[ndo_open] = g; }"));
    }
}

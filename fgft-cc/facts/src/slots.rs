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

use fgft_parse::tables::{self, TableSource};
use fgft_parse::{walk, ParseError, ParsedFile};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
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
fn type_name(pf: &ParsedFile, t: Node<'_>) -> Option<String> {
    let k = walk::kinds();
    let id = t.kind_id();
    if id == k.struct_specifier || id == k.union_specifier {
        k.child(t, k.f_name).map(|n| pf.node_text(n).to_string())
    } else if id == k.type_identifier {
        Some(pf.node_text(t).to_string())
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
        }
    }

    /// Looks at node `n` of a pre-order walk (`depth` from the root);
    /// returns whether the walk needs to enter its children (a plain data
    /// table outside functions holds nothing for the slot finder).
    pub fn visit(&mut self, n: Node<'t>, depth: u32) -> bool {
        let k = walk::kinds();
        if self.in_fn.is_some_and(|d| depth <= d) {
            self.in_fn = None;
        }
        if self.in_block.is_some_and(|d| depth <= d) {
            self.in_block = None;
        }
        let id = n.kind_id();
        if let Some(table) = self.table {
            self.candidate(table, n, id);
        }
        if id == k.preproc_function_def {
            return false; // a name, parameters and unparsed text
        }
        if self.in_fn.is_some() {
            return !walk::skippable(self.pf.hinted.as_bytes(), n, k, true);
        }
        self.fact(n, id, self.in_block.is_none());
        if id == k.function_definition {
            self.in_fn = Some(depth);
        } else if id == k.compound_statement && self.in_block.is_none() {
            self.in_block = Some(depth);
        }
        !walk::skippable(self.pf.hinted.as_bytes(), n, k, false)
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
            if k.child(n, k.f_left)
                .is_some_and(|l| l.kind_id() == k.field_expression)
            {
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
                                put(&mut f.typedefs, s_typedefs, alias, tn.clone(), r);
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
                    } else if let Some(t) = &t {
                        put(&mut f.globals, s_globals, name, t.clone(), r);
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
    walk::preorder(pf.tree.root_node(), |n, d| s.visit(n, d));
    s.finish()
}

/// Collects the type facts of one parsed file.
pub fn facts_of(pf: &ParsedFile) -> Facts {
    let mut s = Scan::new(pf, None);
    walk::preorder(pf.tree.root_node(), |n, d| s.visit(n, d));
    s.finish().0
}

fn struct_body_fields(pf: &ParsedFile, body: Node<'_>) -> HashMap<String, String> {
    let k = walk::kinds();
    let mut out = HashMap::new();
    let mut stack = vec![body];
    while let Some(b) = stack.pop() {
        for fd in walk::named_children(b) {
            let id = fd.kind_id();
            if id == k.field_declaration {
                let ty = k.child(fd, k.f_type);
                let mut decls = children_by_field(fd, k.f_declarator).peekable();
                if decls.peek().is_none() {
                    // Anonymous struct/union: its fields belong to us.
                    if let Some(b2) = ty.and_then(|t| k.child(t, k.f_body)) {
                        stack.push(b2);
                    }
                    continue;
                }
                let tn = ty.and_then(|t| type_name(pf, t)).unwrap_or_default();
                for d in decls {
                    if let Some((name, _, _)) = declarator_name(pf, d) {
                        out.insert(name.to_string(), tn.clone());
                    }
                }
            } else if k.is_preproc(id) {
                stack.push(fd);
            }
        }
    }
    out
}

/// `#include "x.h"` files of `pf` that exist next to it.
pub fn local_includes(pf: &ParsedFile) -> Vec<PathBuf> {
    local_includes_in(&pf.path, &pf.text)
}

/// `#include "x.h"` files of the file at `path` holding `text` that exist
/// next to it (no parse needed).
pub fn local_includes_in(path: &Path, text: &str) -> Vec<PathBuf> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim_start();
        let Some(rest) = l.strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("include") else {
            continue;
        };
        let rest = rest.trim_start();
        if let Some(q) = rest.strip_prefix('"') {
            if let Some(end) = q.find('"') {
                let p = dir.join(&q[..end]);
                if p.is_file() {
                    out.push(p);
                }
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
        scopes: HashMap::new(),
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
    inferred: HashMap<String, String>,
    /// Function node id -> local names -> type name.
    scopes: HashMap<usize, HashMap<String, String>>,
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
        match v.kind() {
            "identifier" => {
                let t = self.text(v);
                if t == "NULL" || t == "nullptr" {
                    Vec::new()
                } else {
                    vec![v]
                }
            }
            "parenthesized_expression" => v
                .named_child(0)
                .map(|c| self.stored_functions(c))
                .unwrap_or_default(),
            "cast_expression" => v
                .child_by_field_name("value")
                .map(|c| self.stored_functions(c))
                .unwrap_or_default(),
            "pointer_expression" => {
                let amp = v.child(0).is_some_and(|o| self.text(o) == "&");
                match (amp, v.child_by_field_name("argument")) {
                    (true, Some(a)) if a.kind() == "identifier" => vec![a],
                    _ => Vec::new(),
                }
            }
            "conditional_expression" => {
                let mut r = Vec::new();
                for f in ["consequence", "alternative"] {
                    if let Some(c) = v.child_by_field_name(f) {
                        r.extend(self.stored_functions(c));
                    }
                }
                r
            }
            "call_expression" => {
                let func = v.child_by_field_name("function");
                let args = v.child_by_field_name("arguments");
                match (func, args) {
                    (Some(f), Some(a)) if self.table.wrappers.contains(self.text(f)) => a
                        .named_child(0)
                        .map(|c| self.stored_functions(c))
                        .unwrap_or_default(),
                    _ => Vec::new(),
                }
            }
            _ => Vec::new(),
        }
    }

    /// The variable named by `&var` (or `var`).
    fn address_of(&self, v: Node<'_>) -> Option<&'a str> {
        match v.kind() {
            "pointer_expression" => v
                .child_by_field_name("argument")
                .filter(|a| a.kind() == "identifier")
                .map(|a| self.text(a)),
            "identifier" => Some(self.text(v)),
            "parenthesized_expression" | "cast_expression" => {
                let c = v
                    .child_by_field_name("value")
                    .or_else(|| v.named_child(0))?;
                self.address_of(c)
            }
            "call_expression" => {
                let f = v.child_by_field_name("function")?;
                if self.table.wrappers.contains(self.text(f)) {
                    self.address_of(v.child_by_field_name("arguments")?.named_child(0)?)
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    fn slot_struct(&self, type_name: &str) -> Option<&'a str> {
        let r = self.facts.resolve(type_name);
        self.table.structs.get_key_value(r).map(|(k, _)| k.as_str())
    }

    fn declaration(&mut self, n: Node<'a>) {
        let declared = n
            .child_by_field_name("type")
            .and_then(|t| type_name(self.pf, t));
        let k = walk::kinds();
        for d in children_by_field(n, k.f_declarator) {
            if d.kind_id() != k.init_declarator {
                continue;
            }
            let (Some(dd), Some(value)) = (
                d.child_by_field_name("declarator"),
                d.child_by_field_name("value"),
            ) else {
                continue;
            };
            if value.kind() != "initializer_list" {
                continue;
            }
            let Some((var, array, _)) = declarator_name(self.pf, dd) else {
                continue;
            };
            let st = declared
                .as_deref()
                .and_then(|t| self.slot_struct(t))
                .or_else(|| {
                    self.inferred
                        .get(var)
                        .and_then(|t| self.table.structs.get_key_value(t.as_str()))
                        .map(|(k, _)| k.as_str())
                });
            let Some(st) = st else {
                continue;
            };
            let var = var.to_string();
            if array {
                for elem in walk::named_children(value) {
                    let list = if elem.kind() == "initializer_pair" {
                        elem.child_by_field_name("value")
                    } else {
                        Some(elem)
                    };
                    if let Some(l) = list.filter(|l| l.kind() == "initializer_list") {
                        self.initializer(st, st, l, &var, "", 0);
                    }
                }
            } else {
                self.initializer(st, st, value, &var, "", 0);
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
        let Some(def) = self.table.structs.get(st) else {
            return;
        };
        let mut pos = 0usize;
        for item in walk::named_children(list) {
            match item.kind() {
                "initializer_pair" => {
                    let designators: Vec<Node<'_>> =
                        children_by_field(item, walk::kinds().f_designator).collect();
                    let Some(value) = item.child_by_field_name("value") else {
                        continue;
                    };
                    let path: Vec<&str> = designators
                        .iter()
                        .filter(|d| d.kind() == "field_designator")
                        .filter_map(|d| d.named_child(0))
                        .map(|i| self.text(i))
                        .collect();
                    if path.len() != designators.len() || path.is_empty() {
                        continue;
                    }
                    if let Some(i) = def.fields.iter().position(|f| f == path[0]) {
                        pos = i + 1;
                    }
                    self.store(st, outer, &path, value, var, prefix, depth);
                }
                "call_expression" => self.fragment(st, outer, item, var, prefix),
                "comment" => {}
                _ => {
                    if def.positional {
                        if let Some(field) = def.fields.get(pos) {
                            let field = field.clone();
                            self.store(st, outer, &[field.as_str()], item, var, prefix, depth);
                        }
                    }
                    pos += 1;
                }
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
        let Some(def) = self.table.structs.get(st) else {
            return;
        };
        let field = path[0];
        if let Some(inner) = def.nested.get(field) {
            let inner = inner.clone();
            let p = format!("{prefix}{field}.");
            if path.len() > 1 {
                self.store(&inner, outer, &path[1..], value, var, &p, depth + 1);
            } else if value.kind() == "initializer_list" {
                self.initializer(&inner, outer, value, var, &p, depth + 1);
            }
            return;
        }
        if path.len() > 1 {
            return;
        }
        if let Some(target) = def.pointers.get(field) {
            if let Some(v) = self.address_of(value) {
                self.inferred.insert(v.to_string(), target.clone());
            }
            return;
        }
        let is_fn_field = def.functions.iter().any(|f| f == field);
        let known_field = def.fields.iter().any(|f| f == field);
        if !is_fn_field && known_field {
            return;
        }
        let full = format!("{prefix}{field}");
        for f in self.stored_functions(value) {
            let name = self.text(f);
            // A field the table does not know holds a root only when the value
            // is a function of this driver.
            if is_fn_field || self.facts.is_function(name) {
                self.emit(name, outer, &full, f, var);
            }
        }
    }

    /// A table macro used inside an initializer (`SET_SYSTEM_SLEEP_PM_OPS`).
    fn fragment(&mut self, st: &str, outer: &str, call: Node<'a>, var: &str, prefix: &str) {
        let Some(fname) = call.child_by_field_name("function") else {
            return;
        };
        let Some(m) = self.table.macros.get(self.text(fname)).cloned() else {
            return;
        };
        if m.var.is_some() {
            return;
        }
        // Fragments fill the structure they stand in (dev_pm_ops, also when
        // embedded); roots name the variable's structure.
        let _ = st;
        let target = outer.to_string();
        let args = call_args(call);
        for (k, fields) in m.args.iter().enumerate() {
            let Some(&a) = args.get(k) else { continue };
            for f in self.stored_functions(a) {
                let name = self.text(f).to_string();
                for field in fields {
                    self.emit(&name, &target, &format!("{prefix}{field}"), f, var);
                }
            }
        }
    }

    /// Top-level uses of table macros and registering calls.
    fn call(&mut self, n: Node<'a>) {
        let Some(fname) = n.child_by_field_name("function") else {
            return;
        };
        let name = self.text(fname);
        if let Some(slots) = self.table.calls.get(name).cloned() {
            let args = call_args(n);
            for (pos, st, field) in slots {
                let Some(&a) = args.get(pos) else { continue };
                for f in self.functions_through_locals(n, a) {
                    let fname = self.text(f).to_string();
                    self.emit(&fname, &st, &field, f, "");
                }
            }
            return;
        }
        let Some(m) = self.table.macros.get(name).cloned() else {
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
            .and_then(|k| args.get(k))
            .map(|a| self.text(*a).to_string())
            .unwrap_or_default();
        for (k, fields) in m.args.iter().enumerate() {
            let Some(&a) = args.get(k) else { continue };
            for f in self.stored_functions(a) {
                let fname = self.text(f).to_string();
                for field in fields {
                    self.emit(&fname, &m.struct_name, field, f, &var);
                }
            }
        }
        for (field, tmpl) in &m.derived {
            if let Some(fname) = derive_name(tmpl, &args, |a| self.text(a)) {
                self.emit(&fname, &m.struct_name, field, n, &var);
            }
        }
    }

    /// `p->netdev_ops = &ops`: `ops` is a net_device_ops.
    fn pointer_store(&mut self, n: Node<'a>) {
        let (Some(left), Some(right)) = (
            n.child_by_field_name("left"),
            n.child_by_field_name("right"),
        ) else {
            return;
        };
        if left.kind() != "field_expression" {
            return;
        }
        let Some(field) = left.child_by_field_name("field").map(|f| self.text(f)) else {
            return;
        };
        // Cheap filter first: only fields some slot structure points with.
        if !self.table.ptr_field_targets.contains_key(field) {
            return;
        }
        let Some(var) = self.address_of(right) else {
            return;
        };
        let target = match self.lhs_type(left) {
            Ok(Some(st)) => self.table.structs[st].pointers.get(field).cloned(),
            Ok(None) => None,
            Err(()) => match self.table.ptr_field_targets.get(field) {
                Some(v) if v.len() == 1 => Some(v[0].clone()),
                _ => None,
            },
        };
        if let Some(t) = target {
            self.inferred.insert(var.to_string(), t);
        }
    }

    /// `x.f = fn` / `p->f = fn`.
    fn assignment(&mut self, n: Node<'a>) {
        let (Some(left), Some(right)) = (
            n.child_by_field_name("left"),
            n.child_by_field_name("right"),
        ) else {
            return;
        };
        if left.kind() != "field_expression" || n.child(1).is_some_and(|o| self.text(o) != "=") {
            return;
        }
        let Some(field) = left.child_by_field_name("field").map(|f| self.text(f)) else {
            return;
        };
        // Cheap filter first: a slot is a function field of a slot structure
        // (type resolution below is what costs).
        if !self.table.fn_field_owners.contains_key(field) {
            return;
        }
        let var = left
            .child_by_field_name("argument")
            .map(|a| compact(self.text(a)))
            .unwrap_or_default();
        let st: Option<String> = match self.lhs_type(left) {
            Ok(Some(st)) => {
                let def = &self.table.structs[st];
                if def.functions.iter().any(|f| f == field) {
                    Some(st.to_string())
                } else {
                    None
                }
            }
            Ok(None) => None,
            // Unknown type: a field that only one slot structure has.
            Err(()) => match self.table.fn_field_owners.get(field) {
                Some(v) if v.len() == 1 => Some(v[0].clone()),
                _ => None,
            },
        };
        let Some(st) = st else {
            return;
        };
        for f in self.functions_through_locals(n, right) {
            let name = self.text(f);
            // The stored value must be a function: one this file knows, or a
            // name that is not a variable.
            if self.facts.is_function(name) || self.facts.global(name).is_none() {
                self.emit(name, &st, field, f, &var);
            }
        }
    }

    /// The functions stored by `value` at `at`; a local variable or parameter
    /// is followed to the functions assigned to it in the same function
    /// (`irq_handler_t h = foo_intr; request_irq(irq, h, ...)`), and dropped
    /// when none is.
    fn functions_through_locals(&mut self, at: Node<'a>, value: Node<'a>) -> Vec<Node<'a>> {
        let direct = self.stored_functions(value);
        let mut out = Vec::new();
        for f in direct {
            let name = self.text(f);
            let is_local = self.scope_of(at).is_some_and(|l| l.contains_key(name));
            if !is_local {
                out.push(f);
                continue;
            }
            let Some(func) = enclosing_function(at) else {
                continue;
            };
            let mut stack = vec![func];
            while let Some(x) = stack.pop() {
                let stored = match x.kind() {
                    "init_declarator" => x
                        .child_by_field_name("declarator")
                        .filter(|d| d.kind() == "identifier" && self.text(*d) == name)
                        .and_then(|_| x.child_by_field_name("value")),
                    "assignment_expression" => x
                        .child_by_field_name("left")
                        .filter(|l| l.kind() == "identifier" && self.text(*l) == name)
                        .and_then(|_| x.child_by_field_name("right")),
                    _ => None,
                };
                if let Some(v) = stored {
                    for g in self.stored_functions(v) {
                        let gname = self.text(g);
                        let local = self.scope_of(at).is_some_and(|l| l.contains_key(gname));
                        if !local {
                            out.push(g);
                        }
                    }
                }
                stack.extend(walk::named_children(x));
            }
        }
        out
    }

    /// The slot structure of the object a field expression reads from:
    /// `Ok(Some(st))`, `Ok(None)` when its type is known and is no slot
    /// structure, `Err(())` when its type is unknown.
    fn lhs_type(&mut self, left: Node<'a>) -> Result<Option<&'a str>, ()> {
        let arg = left.child_by_field_name("argument").ok_or(())?;
        match self.type_of(arg, 0) {
            Some(t) if !t.is_empty() => Ok(self.slot_struct(&t)),
            _ => Err(()),
        }
    }

    /// The type name of an expression, as far as the file's facts tell.
    fn type_of(&mut self, e: Node<'a>, depth: usize) -> Option<String> {
        if depth > 8 {
            return None;
        }
        match e.kind() {
            "identifier" => {
                let name = self.text(e);
                if let Some(t) = self.scope_of(e).and_then(|s| s.get(name)) {
                    return Some(t.clone());
                }
                if let Some(t) = self.inferred.get(name) {
                    return Some(t.clone());
                }
                self.facts.global(name).cloned()
            }
            "field_expression" => {
                let base = self.type_of(e.child_by_field_name("argument")?, depth + 1)?;
                let field = self.text(e.child_by_field_name("field")?);
                let resolved = self.facts.resolve(&base).to_string();
                if let Some(t) = self
                    .facts
                    .struct_fields(&resolved)
                    .and_then(|m| m.get(field))
                {
                    return Some(t.clone());
                }
                // Slot structures embed others (`ndev->watchdog_timer`).
                let def = self.table.structs.get(&resolved)?;
                def.nested
                    .get(field)
                    .or_else(|| def.pointers.get(field))
                    .cloned()
            }
            "parenthesized_expression" => self.type_of(e.named_child(0)?, depth + 1),
            "pointer_expression" | "subscript_expression" => {
                self.type_of(e.child_by_field_name("argument")?, depth + 1)
            }
            "cast_expression" => {
                let td = e.child_by_field_name("type")?;
                type_name(self.pf, td.child_by_field_name("type")?)
            }
            _ => None,
        }
    }

    /// Parameters and locals of the function around `n` (name -> type name).
    fn scope_of(&mut self, n: Node<'a>) -> Option<&HashMap<String, String>> {
        let f = enclosing_function(n)?;
        let id = f.id();
        if !self.scopes.contains_key(&id) {
            let k = walk::kinds();
            let mut m = HashMap::new();
            let mut stack = vec![f];
            while let Some(x) = stack.pop() {
                let xid = x.kind_id();
                if xid == k.parameter_declaration || xid == k.declaration {
                    let t = k.child(x, k.f_type).and_then(|t| type_name(self.pf, t));
                    for d in children_by_field(x, k.f_declarator) {
                        // Function-pointer locals count too (a prototype
                        // inside a body is rare enough to shadow nothing).
                        if let Some((name, _, _)) = declarator_name(self.pf, d) {
                            m.insert(name.to_string(), t.clone().unwrap_or_default());
                        }
                    }
                }
                stack.extend(walk::named_children(x));
            }
            self.scopes.insert(id, m);
        }
        self.scopes.get(&id)
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
    let mut p = n.parent();
    while let Some(x) = p {
        match x.kind() {
            "initializer_list" => return true,
            "function_definition" | "translation_unit" | "compound_statement" => return false,
            _ => p = x.parent(),
        }
    }
    false
}

fn at_file_scope(n: Node<'_>) -> bool {
    let mut p = n.parent();
    while let Some(x) = p {
        match x.kind() {
            "function_definition" => return false,
            "translation_unit" => return true,
            _ => p = x.parent(),
        }
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
        if !a.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') || a.is_empty() {
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
}

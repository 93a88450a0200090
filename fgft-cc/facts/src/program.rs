//! The driver as a whole: its parsed files and indexes of what they define
//! (functions, prototypes, global variables, structs, typedefs, macros, and
//! the top-level items of each file with their byte ranges).
//!
//! Top-level items inside `#if`/`#ifdef` blocks are indexed too (both
//! branches), so a function defined twice under different conditions has two
//! definitions.

use crate::ctype::{self, CType};
use fgft_parse::ParsedFile;
use serde::Serialize;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use tree_sitter::Node;

/// Index of a file in [`Program::files`].
pub type FileId = usize;
/// Index of a function definition in [`Program::fns`].
pub type FnId = usize;

/// One function parameter.
#[derive(Debug, Clone, Serialize)]
pub struct Param {
    pub name: String,
    pub ty: CType,
    /// The parameter declaration as written.
    pub text: String,
}

/// One function definition.
#[derive(Debug, Clone, Serialize)]
pub struct FnDef {
    pub name: String,
    pub file: FileId,
    /// The whole definition.
    pub range: Range<usize>,
    /// The name in the declarator.
    pub name_range: Range<usize>,
    /// The body (compound statement).
    pub body: Range<usize>,
    pub params: Vec<Param>,
    /// `(void)` or `()` parameter lists have no params; variadic ones are
    /// marked here.
    pub variadic: bool,
    pub ret: CType,
    /// The return type as written (text before the declarator, without
    /// storage class and attributes).
    pub ret_text: String,
    pub is_static: bool,
    pub is_inline: bool,
    /// 1-based line of the name.
    pub line: usize,
    /// Whether the definition is inside a preprocessor conditional.
    pub conditional: bool,
}

/// A function prototype (declaration without body) at file scope.
#[derive(Debug, Clone, Serialize)]
pub struct Proto {
    pub name: String,
    pub file: FileId,
    /// The whole declaration statement.
    pub range: Range<usize>,
    pub is_static: bool,
    /// Whether the declaration declares only this function.
    pub alone: bool,
}

/// A variable declared at file scope.
#[derive(Debug, Clone, Serialize)]
pub struct Global {
    pub name: String,
    pub file: FileId,
    /// The whole declaration statement.
    pub range: Range<usize>,
    pub name_range: Range<usize>,
    pub ty: CType,
    pub is_static: bool,
    pub is_const: bool,
    pub is_extern: bool,
    /// Whether it has an initializer.
    pub init: Option<Range<usize>>,
    /// The initializer's text when it does not stand in the file as such
    /// (a global declared by a driver macro).
    pub init_text: Option<String>,
    /// For a global a macro statement declares: its declaration as the
    /// expansion spells it, without storage class or initializer
    /// (`const struct attribute_group *tg3_groups[]`).
    pub decl_text: Option<String>,
    pub line: usize,
    /// Whether the declaration declares only this variable.
    pub alone: bool,
}

/// One member of a struct or union.
#[derive(Debug, Clone, Serialize)]
pub struct Field {
    pub name: String,
    pub ty: CType,
    /// Declared with `__iomem` (never dereferenced by C code).
    pub iomem: bool,
    pub bitfield: bool,
    /// Declared in an anonymous union (flattened into the record): it may
    /// share its bytes with another member, so its value is not known to
    /// be of its type.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub overlaid: bool,
}

/// A struct or union definition from the driver's files.
#[derive(Debug, Clone, Serialize)]
pub struct RecordDef {
    pub tag: String,
    pub file: FileId,
    pub line: usize,
    /// Members, with anonymous struct/union members flattened in.
    pub fields: Vec<Field>,
}

/// A `#define` of the driver.
#[derive(Debug, Clone, Serialize)]
pub struct MacroDef {
    pub name: String,
    pub file: FileId,
    /// `None` for object-like macros.
    pub params: Option<Vec<String>>,
    /// The parameter list as written (for GNU `arg...`).
    pub params_raw: String,
    pub body: String,
    pub line: usize,
}

/// What a top-level item is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum TopKind {
    Function(String),
    /// Function prototypes (names).
    Prototype(Vec<String>),
    /// Variable declarations (names).
    Variables(Vec<String>),
    /// struct/union/enum/typedef definitions.
    Type,
    /// `#include`, `#define` and other directives.
    Directive,
    /// A macro invocation statement at file scope (`module_init(x);`), with
    /// the macro name.
    MacroStmt(String),
    Other,
}

/// One item at file scope (possibly nested in `#if` blocks).
#[derive(Debug, Clone, Serialize)]
pub struct TopItem {
    pub kind: TopKind,
    pub range: Range<usize>,
    /// Depth of preprocessor-conditional nesting (0 = unconditional).
    pub cond_depth: usize,
}

/// The driver: parsed files and indexes.
pub struct Program {
    pub files: Vec<ParsedFile>,
    pub fns: Vec<FnDef>,
    pub fn_index: BTreeMap<String, Vec<FnId>>,
    pub protos: Vec<Proto>,
    pub globals: Vec<Global>,
    pub global_index: BTreeMap<String, Vec<usize>>,
    pub records: BTreeMap<String, RecordDef>,
    pub typedefs: BTreeMap<String, CType>,
    pub macros: BTreeMap<String, MacroDef>,
    /// Enumerator names (they look like identifiers but are constants).
    pub enumerators: std::collections::BTreeSet<String>,
    pub top: Vec<Vec<TopItem>>,
    /// The driver's own tracepoints (`TRACE_EVENT()` and the like), by
    /// name (`crate::tracepoints`).
    pub tracepoints: BTreeMap<String, crate::tracepoints::Tracepoint>,
    /// The members of records declared inline without a tag (`struct {
    /// ... } start_trace;`), by (outer record tag, member).
    pub inline_members: BTreeMap<(String, String), Vec<Field>>,
}

impl Program {
    /// Indexes the given parsed files, with the kernel macros of the
    /// macro-hint table's `[expand]` that define file-scope objects
    /// (`ATTRIBUTE_GROUPS(tg3);` defines `tg3_groups`): what such a
    /// statement of the driver declares is known as the driver's own
    /// macros' is.
    pub fn with_expansions(
        files: Vec<ParsedFile>,
        expand: &BTreeMap<String, fgft_parse::hints::Expansion>,
    ) -> Program {
        let mut p = Program::new(files);
        for fid in 0..p.files.len() {
            for k in 0..p.top[fid].len() {
                let TopKind::MacroStmt(m) = &p.top[fid][k].kind else {
                    continue;
                };
                let Some(x) = expand.get(m).filter(|_| !p.macros.contains_key(m)) else {
                    continue;
                };
                let def = MacroDef {
                    name: m.clone(),
                    file: fid,
                    params_raw: x.params.join(", "),
                    params: Some(x.params.clone()),
                    body: x.body.clone(),
                    line: 0,
                };
                let range = p.top[fid][k].range.clone();
                let gs = macro_stmt_globals_of(&p, fid, &def, range);
                p.add_new_globals(gs);
            }
        }
        let tds = p.typedefs.clone();
        for g in &mut p.globals {
            g.ty = resolve_typedefs(&tds, &g.ty);
        }
        p
    }

    /// Indexes the given parsed files (C files and driver headers).
    pub fn new(files: Vec<ParsedFile>) -> Program {
        let mut p = Program {
            files,
            fns: Vec::new(),
            fn_index: BTreeMap::new(),
            protos: Vec::new(),
            globals: Vec::new(),
            global_index: BTreeMap::new(),
            records: BTreeMap::new(),
            typedefs: BTreeMap::new(),
            macros: BTreeMap::new(),
            enumerators: Default::default(),
            top: Vec::new(),
            tracepoints: BTreeMap::new(),
            inline_members: BTreeMap::new(),
        };
        for fid in 0..p.files.len() {
            let mut items = Vec::new();
            let root = p.files[fid].tree.root_node();
            let mut out = Collected::default();
            collect(&p.files[fid], fid, root, 0, &mut items, &mut out);
            nested_macros(&p.files[fid], fid, root, &mut out);
            p.top.push(items);
            for f in out.fns {
                p.fn_index
                    .entry(f.name.clone())
                    .or_default()
                    .push(p.fns.len());
                p.fns.push(f);
            }
            p.protos.extend(out.protos);
            for g in out.globals {
                p.global_index
                    .entry(g.name.clone())
                    .or_default()
                    .push(p.globals.len());
                p.globals.push(g);
            }
            for r in out.records {
                // First definition wins (headers are given before C files).
                p.records.entry(r.tag.clone()).or_insert(r);
            }
            for (k, fs) in out.inline_members {
                p.inline_members.entry(k).or_insert(fs);
            }
            for (n, t) in out.typedefs {
                p.typedefs.entry(n).or_insert(t);
            }
            for m in out.macros {
                // First definition wins, except that a function-like one
                // wins over an object-like one (`#ifdef DEBUG #define ASD
                // hme_debug #else #define ASD(...) #endif`): the uses that
                // matter are calls.
                match p.macros.get(&m.name) {
                    Some(o) if o.params.is_some() || m.params.is_none() => {}
                    _ => {
                        p.macros.insert(m.name.clone(), m);
                    }
                }
            }
            p.enumerators.extend(out.enumerators);
        }
        // Functions (and the globals beside them) defined through the
        // driver's own macros: `DECLARE_RTL_COND(name) { body }`.
        for fid in 0..p.files.len() {
            for k in 0..p.top[fid].len() {
                if p.top[fid][k].kind != TopKind::Other {
                    continue;
                }
                let range = p.top[fid][k].range.clone();
                if let Some((f, globals)) = macro_defined_fn(&p, fid, range) {
                    p.top[fid][k].kind = TopKind::Function(f.name.clone());
                    p.fn_index
                        .entry(f.name.clone())
                        .or_default()
                        .push(p.fns.len());
                    p.fns.push(f);
                    for g in globals {
                        p.global_index
                            .entry(g.name.clone())
                            .or_default()
                            .push(p.globals.len());
                        p.globals.push(g);
                    }
                }
            }
        }
        // Globals a statement of the driver's own macro declares at file
        // scope: `INT_MODULE_PARM(if_port, 0);` is `static int if_port = 0;
        // module_param(...)`.
        for fid in 0..p.files.len() {
            for k in 0..p.top[fid].len() {
                let TopKind::MacroStmt(m) = &p.top[fid][k].kind else {
                    continue;
                };
                let range = p.top[fid][k].range.clone();
                let gs = macro_stmt_globals(&p, fid, m, range);
                p.add_new_globals(gs);
            }
        }
        p.tracepoints = crate::tracepoints::collect(&p);
        // Resolve typedef'd records in field types and globals.
        let tds = p.typedefs.clone();
        for r in p.records.values_mut() {
            for f in &mut r.fields {
                f.ty = resolve_typedefs(&tds, &f.ty);
            }
        }
        for g in &mut p.globals {
            g.ty = resolve_typedefs(&tds, &g.ty);
        }
        for f in &mut p.fns {
            f.ret = resolve_typedefs(&tds, &f.ret);
            for prm in &mut f.params {
                prm.ty = resolve_typedefs(&tds, &prm.ty);
            }
        }
        p
    }

    /// Indexes the globals of `gs` whose names are not known yet.
    fn add_new_globals(&mut self, gs: Vec<Global>) {
        for g in gs {
            if self.global_index.contains_key(&g.name) {
                continue;
            }
            self.global_index
                .entry(g.name.clone())
                .or_default()
                .push(self.globals.len());
            self.globals.push(g);
        }
    }

    /// Definitions of a function by name.
    pub fn defs(&self, name: &str) -> &[FnId] {
        self.fn_index.get(name).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The first definition of a function.
    pub fn def(&self, name: &str) -> Option<&FnDef> {
        self.defs(name).first().map(|&i| &self.fns[i])
    }

    pub fn is_fn(&self, name: &str) -> bool {
        self.fn_index.contains_key(name)
    }

    /// The function-like driver macro a call of `name` expands: `name`'s
    /// own, or the one an object-like macro names (sunhme's `#define ASD
    /// hme_debug`), through at most a few such macros.
    pub fn call_macro(&self, name: &str) -> Option<&MacroDef> {
        let mut cur = name;
        for _ in 0..4 {
            let m = self.macros.get(cur)?;
            if m.params.is_some() {
                return Some(m);
            }
            let body = m.body.trim();
            if !fgft_base::ident::is_ident(body) || body == cur {
                return None;
            }
            cur = self.macros.get_key_value(body)?.0.as_str();
        }
        None
    }

    /// The name an object-like driver macro stands for when that name is
    /// no driver macro or function (minix's `#define minix_set_bit
    /// __set_bit_le`: a kernel function), through at most a few macros.
    pub fn kernel_alias<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        let mut cur = name;
        for _ in 0..4 {
            let Some(m) = self.macros.get(cur) else {
                return (cur != name && !self.is_fn(cur)).then_some(cur);
            };
            let body = m.body.trim();
            if m.params.is_some() || !fgft_base::ident::is_ident(body) || body == cur {
                return None;
            }
            cur = body;
        }
        None
    }

    /// The driver function an object-like driver macro names
    /// (atl1.h: `#define atlx_hash_set atl1_hash_set`, for the shared
    /// atlx.c), through at most a few such macros.
    pub fn fn_alias(&self, name: &str) -> Option<&str> {
        let mut cur = name;
        for _ in 0..4 {
            let m = self.macros.get(cur)?;
            if m.params.is_some() {
                return None;
            }
            let body = m.body.trim();
            if !fgft_base::ident::is_ident(body) {
                return None;
            }
            if self.is_fn(body) {
                return Some(self.fn_index.get_key_value(body)?.0.as_str());
            }
            cur = self.macros.get_key_value(body)?.0.as_str();
        }
        None
    }

    /// The defining (non-extern) declaration of a global, else any.
    pub fn global(&self, name: &str) -> Option<&Global> {
        let ids = self.global_index.get(name)?;
        ids.iter()
            .map(|&i| &self.globals[i])
            .find(|g| !g.is_extern)
            .or_else(|| ids.first().map(|&i| &self.globals[i]))
    }

    /// The definition of a global (not an `extern` declaration).
    pub fn global_def(&self, name: &str) -> Option<&Global> {
        let ids = self.global_index.get(name)?;
        ids.iter().map(|&i| &self.globals[i]).find(|g| !g.is_extern)
    }

    /// Driver functions and globals a global's initializer names, sorted.
    pub fn init_refs(&self, name: &str) -> Vec<String> {
        let Some(g) = self.global_def(name) else {
            return vec![];
        };
        let text: &str = match (&g.init, &g.init_text) {
            (_, Some(t)) => t,
            (Some(init), None) => &self.files[g.file].text[init.clone()],
            (None, None) => return vec![],
        };
        let mut out: Vec<String> = crate::macros::identifiers(text)
            .into_iter()
            .filter(|i| self.is_fn(i) || (self.global_def(i).is_some() && *i != name))
            .map(str::to_string)
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Member `field` of record type `ty`, if the record is known.
    pub fn field(&self, ty: &CType, field: &str) -> Option<&Field> {
        let tag = ty.record()?;
        self.records
            .get(tag)?
            .fields
            .iter()
            .find(|f| f.name == field)
    }

    /// The type of `base.field`: from the record definition when known,
    /// else symbolic.
    pub fn field_type(&self, base: &CType, field: &str) -> CType {
        match base {
            CType::Record(tag) => match self.records.get(tag) {
                Some(r) => r
                    .fields
                    .iter()
                    .find(|f| f.name == field)
                    .map(|f| f.ty.clone())
                    .unwrap_or(CType::Unknown),
                None => CType::FieldOf(Box::new(base.clone()), field.to_string()),
            },
            CType::FieldOf(b, p) => {
                // A flexible array of a record declared inline (fjes'
                // `struct { ...; __le64 buffer[]; } start_trace;`) is
                // known as one: it has no size to copy.
                let inline = b
                    .record()
                    .and_then(|tag| self.inline_members.get(&(tag.to_string(), p.clone())))
                    .and_then(|fs| fs.iter().find(|f| f.name == field));
                match inline {
                    Some(f) if matches!(&f.ty, CType::Array(_, n) if n.as_deref().is_none_or(|n| n.trim().is_empty() || n.trim() == "0")) => {
                        f.ty.clone()
                    }
                    _ => CType::FieldOf(b.clone(), format!("{p}.{field}")),
                }
            }
            CType::Named(_) | CType::PointeeOf(_) => {
                CType::FieldOf(Box::new(base.clone()), field.to_string())
            }
            _ => CType::Unknown,
        }
    }

    /// Resolves typedefs of the driver in `ty`.
    pub fn resolve(&self, ty: &CType) -> CType {
        resolve_typedefs(&self.typedefs, ty)
    }

    pub fn file_of(&self, f: FnId) -> &ParsedFile {
        &self.files[self.fns[f].file]
    }

    /// The definition node of a function.
    pub fn fn_node(&self, f: FnId) -> Option<Node<'_>> {
        let d = &self.fns[f];
        let root = self.files[d.file].tree.root_node();
        let mut n = root.descendant_for_byte_range(d.range.start, d.range.end)?;
        while n.kind() != "function_definition" {
            n = n.parent()?;
        }
        Some(n)
    }

    /// 1-based line of a byte offset in a file.
    pub fn line(&self, file: FileId, byte: usize) -> usize {
        self.files[file].line_of(byte)
    }
}

/// The globals a file-scope statement `m(args);` of the driver's macro `m`
/// declares (none for a kernel macro or one that declares nothing).
fn macro_stmt_globals(p: &Program, fid: FileId, m: &str, range: Range<usize>) -> Vec<Global> {
    let Some(def) = p.macros.get(m) else {
        return Vec::new();
    };
    macro_stmt_globals_of(p, fid, def, range)
}

/// Each variable declaration `decl` declares, by name, spelled with the
/// declaration's type words (storage class and initializer left out).
fn declarator_texts(pf: &ParsedFile, decl: Node<'_>) -> Vec<(String, String)> {
    let mut words = Vec::new();
    let mut out = Vec::new();
    let mut c = decl.walk();
    for ch in decl.named_children(&mut c) {
        match ch.kind() {
            "storage_class_specifier" | "comment" => {}
            "init_declarator" | "identifier" | "pointer_declarator" | "array_declarator" => {
                let d = if ch.kind() == "init_declarator" {
                    ch.child_by_field_name("declarator").unwrap_or(ch)
                } else {
                    ch
                };
                let text = pf.node_text(d).to_string();
                let name = fgft_base::lex::ident_tokens(&text)
                    .into_iter()
                    .map(|r| text[r.start..r.end].to_string())
                    .find(|t| t != "const" && t != "volatile");
                if let Some(name) = name {
                    out.push((name, format!("{} {text}", words.join(" "))));
                }
            }
            _ => words.push(pf.node_text(ch).to_string()),
        }
    }
    out
}

/// The globals statement `range` of file `fid`, a use of macro `def`,
/// declares.
fn macro_stmt_globals_of(
    p: &Program,
    fid: FileId,
    def: &MacroDef,
    range: Range<usize>,
) -> Vec<Global> {
    let Some(list) = def.params.as_ref() else {
        return Vec::new();
    };
    let pf = &p.files[fid];
    let Some(call) = pf
        .tree
        .root_node()
        .descendant_for_byte_range(range.start, range.end)
        .and_then(|n| n.named_child(0))
        .filter(|n| n.kind() == "call_expression")
    else {
        return Vec::new();
    };
    let Some(args) = call.child_by_field_name("arguments") else {
        return Vec::new();
    };
    let mut c = args.walk();
    let args: Vec<String> = args
        .named_children(&mut c)
        .map(|a| pf.node_text(a).to_string())
        .collect();
    let params = crate::macros::MacroParams::from_list(list, &def.params_raw);
    let exp = crate::macros::expand(&params, &def.body, &args);
    let Ok(sp) = fgft_parse::parse_text(std::path::Path::new("<macro>"), format!("{exp}\n")) else {
        return Vec::new();
    };
    let root = sp.tree.root_node();
    let mut out = Vec::new();
    let mut w = root.walk();
    for ch in root.named_children(&mut w) {
        if ch.kind() != "declaration" {
            continue;
        }
        let mut col = Collected::default();
        declaration(&sp, fid, ch, &mut col);
        let decls = declarator_texts(&sp, ch);
        for mut g in col.globals {
            g.decl_text = decls
                .iter()
                .find(|(n, _)| *n == g.name)
                .map(|(_, t)| t.clone());
            g.init_text = g.init.as_ref().map(|r| sp.text[r.clone()].to_string());
            g.init = None;
            let at = pf.text[range.clone()]
                .find(g.name.as_str())
                .map(|i| range.start + i..range.start + i + g.name.len())
                .unwrap_or_else(|| range.clone());
            g.range = range.clone();
            g.name_range = at;
            g.line = pf.line_of(range.start);
            g.alone = false;
            out.push(g);
        }
    }
    out
}

/// A function whose head is a use of one of the driver's function-like
/// macros: the macro is expanded to find the function's name and parameters
/// (and the globals it declares); the body stays the one in the file.
fn macro_defined_fn(p: &Program, fid: FileId, range: Range<usize>) -> Option<(FnDef, Vec<Global>)> {
    let pf = &p.files[fid];
    let node = pf
        .tree
        .root_node()
        .descendant_for_byte_range(range.start, range.end)?;
    if node.kind() != "function_definition" || node.byte_range() != range {
        return None;
    }
    let ty = node.child_by_field_name("type")?;
    let decl = node.child_by_field_name("declarator")?;
    let body = node.child_by_field_name("body")?;
    let mname = pf.node_text(ty);
    let m = p.macros.get(mname)?;
    let list = m.params.as_ref()?;
    let params = crate::macros::MacroParams::from_list(list, &m.params_raw);
    let arg = pf
        .node_text(decl)
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')');
    let exp = crate::macros::expand(&params, &m.body, &[arg.to_string()]);
    let snippet = format!("{exp}\n{{\n}}\n");
    let sp = fgft_parse::parse_text(std::path::Path::new("<macro>"), snippet).ok()?;
    let mut found: Option<FnDef> = None;
    let mut globals = Vec::new();
    let root = sp.tree.root_node();
    let mut c = root.walk();
    for ch in root.named_children(&mut c) {
        match ch.kind() {
            "function_definition" => {
                if let Some(mut f) = fn_def(&sp, fid, ch, false) {
                    f.file = fid;
                    f.range = range.clone();
                    f.name_range = decl.byte_range();
                    f.body = body.byte_range();
                    f.line = decl.start_position().row + 1;
                    found = Some(f);
                }
            }
            "declaration" => {
                let mut col = Collected::default();
                declaration(&sp, fid, ch, &mut col);
                for mut g in col.globals {
                    g.init_text = g.init.as_ref().map(|r| sp.text[r.clone()].to_string());
                    g.init = None;
                    g.range = range.clone();
                    g.name_range = decl.byte_range();
                    g.line = decl.start_position().row + 1;
                    g.alone = false;
                    globals.push(g);
                }
            }
            _ => {}
        }
    }
    found.map(|f| (f, globals))
}

fn resolve_typedefs(tds: &BTreeMap<String, CType>, ty: &CType) -> CType {
    fn go(tds: &BTreeMap<String, CType>, ty: &CType, depth: usize) -> CType {
        if depth > 16 {
            return ty.clone();
        }
        match ty {
            CType::Named(n) => match tds.get(n) {
                Some(t) => go(tds, t, depth + 1),
                None => ty.clone(),
            },
            CType::Ptr(t) => CType::ptr(go(tds, t, depth + 1)),
            CType::Array(t, n) => CType::Array(Box::new(go(tds, t, depth + 1)), n.clone()),
            other => other.clone(),
        }
    }
    go(tds, ty, 0)
}

#[derive(Default)]
struct Collected {
    fns: Vec<FnDef>,
    protos: Vec<Proto>,
    globals: Vec<Global>,
    records: Vec<RecordDef>,
    typedefs: Vec<(String, CType)>,
    macros: Vec<MacroDef>,
    enumerators: Vec<String>,
    inline_members: Vec<((String, String), Vec<Field>)>,
}

fn has_storage(pf: &ParsedFile, n: Node<'_>, what: &str) -> bool {
    let mut c = n.walk();
    let r = n
        .children(&mut c)
        .any(|ch| ch.kind() == "storage_class_specifier" && pf.node_text(ch).trim() == what);
    r
}

fn has_qualifier(pf: &ParsedFile, n: Node<'_>, what: &str) -> bool {
    let mut c = n.walk();
    let r = n
        .children(&mut c)
        .any(|ch| ch.kind() == "type_qualifier" && pf.node_text(ch).trim() == what);
    r
}

/// `#define`s below the top level: inside a function body or an
/// initializer (`#define HW_STAT(r, s) { r, offsetof(..) }` written just
/// before the table that uses it). The parse's hint rewrite blanks them
/// (tree-sitter takes directives only between declarations), so they are
/// read from the original text of each top-level item and parsed alone.
/// They are the driver's macros like the others; a top-level definition of
/// the same name wins.
fn nested_macros(pf: &ParsedFile, fid: FileId, root: Node<'_>, out: &mut Collected) {
    let text = pf.text.as_bytes();
    let hinted = pf.hinted.as_bytes();
    let mut c = root.walk();
    for item in root.named_children(&mut c) {
        if matches!(item.kind(), "preproc_def" | "preproc_function_def") {
            continue;
        }
        let r = item.byte_range();
        let mut at = r.start;
        while let Some(off) = memchr::memchr(b'#', &text[at..r.end]) {
            let hash = at + off;
            at = hash + 1;
            let line = memchr::memrchr(b'\n', &text[..hash]).map_or(0, |p| p + 1);
            // `#` starts the line in the original, and either the rewrite
            // blanked it (a blank stands there in what tree-sitter saw) or
            // tree-sitter swallowed it into an error node (a `#if 0` inside
            // an initializer list takes the rest of the file with it).
            if !text[line..hash].iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let in_error = || {
                let mut n = root.descendant_for_byte_range(hash, hash + 1);
                while let Some(x) = n {
                    if x.kind() == "comment" {
                        return false;
                    }
                    if x.is_error() {
                        return true;
                    }
                    n = x.parent();
                }
                false
            };
            if hinted[hash] != b' ' && !in_error() {
                continue;
            }
            let mut end = hash;
            while end < text.len() && text[end] != b'\n' {
                end += if text[end] == b'\\' && text.get(end + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
            }
            // A directive may run past the item (an item cut short by a
            // syntax error): the scan stays inside the item.
            at = end.min(r.end);
            let Some(dir) = pf.text.get(hash..end) else {
                continue;
            };
            let rest = dir[1..].trim_start();
            if !rest.starts_with("define") {
                continue;
            }
            let Ok(sp) = fgft_parse::parse_text(Path::new("<define>"), format!("{dir}\n")) else {
                continue;
            };
            let sroot = sp.tree.root_node();
            let Some(n) = sroot
                .named_child(0)
                .filter(|n| matches!(n.kind(), "preproc_def" | "preproc_function_def"))
            else {
                continue;
            };
            if let Some(mut m) = macro_def(&sp, fid, n) {
                m.line = pf.line_of(hash);
                if !out.macros.iter().any(|o| o.name == m.name) {
                    out.macros.push(m);
                }
            }
        }
    }
}

fn collect(
    pf: &ParsedFile,
    fid: FileId,
    node: Node<'_>,
    depth: usize,
    items: &mut Vec<TopItem>,
    out: &mut Collected,
) {
    let mut c = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut c).collect();
    for ch in children {
        let kind = match ch.kind() {
            "function_definition" => {
                if let Some(f) = fn_def(pf, fid, ch, depth > 0) {
                    let name = f.name.clone();
                    out.fns.push(f);
                    TopKind::Function(name)
                } else {
                    TopKind::Other
                }
            }
            "declaration" => declaration(pf, fid, ch, out),
            "type_definition" => {
                type_definition(pf, fid, ch, out);
                TopKind::Type
            }
            "struct_specifier" | "union_specifier" | "enum_specifier" => {
                record_specifier(pf, fid, ch, out);
                TopKind::Type
            }
            "preproc_function_def" | "preproc_def" => {
                if let Some(m) = macro_def(pf, fid, ch) {
                    out.macros.push(m);
                }
                TopKind::Directive
            }
            "preproc_include" | "preproc_call" | "comment" => TopKind::Directive,
            k if fgft_parse::walk::is_conditional_block(k) => {
                collect(pf, fid, ch, depth + 1, items, out);
                continue;
            }
            "expression_statement" => {
                let name = ch
                    .named_child(0)
                    .filter(|e| e.kind() == "call_expression")
                    .and_then(|e| e.child_by_field_name("function"))
                    .filter(|f| f.kind() == "identifier")
                    .map(|f| pf.node_text(f).to_string());
                match name {
                    Some(n) => TopKind::MacroStmt(n),
                    None => TopKind::Other,
                }
            }
            k if k.starts_with('#') || !ch.is_named() => continue,
            _ => TopKind::Other,
        };
        items.push(TopItem {
            kind,
            range: ch.byte_range(),
            cond_depth: depth,
        });
    }
}

/// Finds the function_declarator inside a definition's declarator, with the
/// number of pointer levels wrapped around it (for the return type).
fn function_declarator(d: Node<'_>) -> Option<(Node<'_>, usize)> {
    let mut d = d;
    let mut ptrs = 0;
    loop {
        match d.kind() {
            "function_declarator" => {
                // `int (*f(void))(int)` style: a function returning a function
                // pointer has a function_declarator whose declarator is
                // parenthesized; the innermost one holds the name.
                if let Some(inner) = d.child_by_field_name("declarator") {
                    if inner.kind() != "identifier" {
                        if let Some((x, p)) = function_declarator(inner) {
                            return Some((x, p + ptrs));
                        }
                    }
                }
                return Some((d, ptrs));
            }
            "pointer_declarator" => {
                ptrs += 1;
                d = d.child_by_field_name("declarator")?;
            }
            "parenthesized_declarator" | "attributed_declarator" => {
                d = d.named_child(0)?;
            }
            _ => return None,
        }
    }
}

fn fn_def(pf: &ParsedFile, fid: FileId, n: Node<'_>, conditional: bool) -> Option<FnDef> {
    let ty = n.child_by_field_name("type")?;
    let decl = n.child_by_field_name("declarator")?;
    let body = n.child_by_field_name("body")?;
    let (fd, ptrs) = function_declarator(decl)?;
    // The name through any declarator nesting (the shared front-end helper);
    // it must be the identifier of the innermost function declarator.
    let name_node = fgft_parse::function_name_node(n)?;
    if name_node.kind() != "identifier"
        || fd.child_by_field_name("declarator").map(|d| d.id()) != Some(name_node.id())
    {
        return None;
    }
    let mut ret = ctype::base_type(pf, ty);
    for _ in 0..ptrs {
        ret = CType::ptr(ret);
    }
    let (params, variadic) = params(pf, fd);
    let mut ret_text = pf.node_text(ty).to_string();
    // Qualifiers written before the type (`const char *f(...)`).
    let mut c = n.walk();
    for ch in n.children(&mut c) {
        if ch.kind() == "type_qualifier" && ch.start_byte() < ty.start_byte() {
            ret_text = format!("{} {}", pf.node_text(ch), ret_text);
        }
    }
    for _ in 0..ptrs {
        ret_text.push_str(" *");
    }
    Some(FnDef {
        name: pf.node_text(name_node).to_string(),
        file: fid,
        range: n.byte_range(),
        name_range: name_node.byte_range(),
        body: body.byte_range(),
        params,
        variadic,
        ret,
        ret_text: ret_text.replace("* ", "*"),
        is_static: has_storage(pf, n, "static"),
        is_inline: has_storage(pf, n, "inline")
            || pf.node_text(n).starts_with("static inline")
            || pf.node_text(n).contains("__always_inline"),
        line: name_node.start_position().row + 1,
        conditional,
    })
}

/// Parameters of a function declarator.
pub fn params(pf: &ParsedFile, fd: Node<'_>) -> (Vec<Param>, bool) {
    let mut out = Vec::new();
    let mut variadic = false;
    let Some(list) = fd.child_by_field_name("parameters") else {
        return (out, false);
    };
    let mut c = list.walk();
    for p in list.children(&mut c) {
        match p.kind() {
            "parameter_declaration" => {
                let base = match p.child_by_field_name("type") {
                    Some(t) => ctype::base_type(pf, t),
                    None => CType::Unknown,
                };
                let (name, ty) = match p.child_by_field_name("declarator") {
                    Some(d) => ctype::apply_declarator(pf, base, d),
                    None => (None, base),
                };
                if let Some(name) = name {
                    out.push(Param {
                        name,
                        ty,
                        text: pf.node_text(p).to_string(),
                    });
                }
            }
            "variadic_parameter" | "..." => variadic = true,
            _ => {}
        }
    }
    (out, variadic)
}

fn declaration(pf: &ParsedFile, fid: FileId, n: Node<'_>, out: &mut Collected) -> TopKind {
    let Some(ty) = n.child_by_field_name("type") else {
        return TopKind::Other;
    };
    if matches!(
        ty.kind(),
        "struct_specifier" | "union_specifier" | "enum_specifier"
    ) {
        record_specifier(pf, fid, ty, out);
    }
    let base = ctype::base_type(pf, ty);
    let is_static = has_storage(pf, n, "static");
    let is_extern = has_storage(pf, n, "extern");
    let is_const = has_qualifier(pf, n, "const");
    let mut c = n.walk();
    let decls: Vec<Node<'_>> = n.children_by_field_name("declarator", &mut c).collect();
    let alone = decls.len() == 1;
    let mut fnames = Vec::new();
    let mut vnames = Vec::new();
    for d in decls {
        let is_fn = function_declarator(if d.kind() == "init_declarator" {
            match d.child_by_field_name("declarator") {
                Some(x) => x,
                None => continue,
            }
        } else {
            d
        })
        .is_some_and(|(fd, _)| {
            fd.child_by_field_name("declarator")
                .is_some_and(|x| x.kind() == "identifier")
        });
        let (name, t) = ctype::apply_declarator(pf, base.clone(), d);
        let Some(name) = name else { continue };
        if is_fn {
            out.protos.push(Proto {
                name: name.clone(),
                file: fid,
                range: n.byte_range(),
                is_static,
                alone,
            });
            fnames.push(name);
        } else {
            let name_range = find_ident(pf, d, &name).unwrap_or(d.byte_range());
            let init = if d.kind() == "init_declarator" {
                d.child_by_field_name("value").map(|v| v.byte_range())
            } else {
                None
            };
            // `const char *p` is a pointer to const, not a const variable.
            let really_const = is_const && !matches!(t, CType::Ptr(_));
            out.globals.push(Global {
                name: name.clone(),
                file: fid,
                range: n.byte_range(),
                name_range: name_range.clone(),
                ty: t,
                is_static,
                is_const: really_const,
                is_extern,
                init,
                init_text: None,
                decl_text: None,
                line: pf.line_of(name_range.start),
                alone,
            });
            vnames.push(name);
        }
    }
    if !fnames.is_empty() && vnames.is_empty() {
        TopKind::Prototype(fnames)
    } else if !vnames.is_empty() && fnames.is_empty() {
        TopKind::Variables(vnames)
    } else if fnames.is_empty() && vnames.is_empty() {
        TopKind::Type
    } else {
        TopKind::Other
    }
}

fn find_ident(pf: &ParsedFile, d: Node<'_>, name: &str) -> Option<Range<usize>> {
    let mut stack = vec![d];
    while let Some(n) = stack.pop() {
        if (n.kind() == "identifier" || n.kind() == "field_identifier") && pf.node_text(n) == name {
            return Some(n.byte_range());
        }
        if n.kind() == "init_declarator" {
            if let Some(x) = n.child_by_field_name("declarator") {
                stack.push(x);
            }
            continue;
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    None
}

fn type_definition(pf: &ParsedFile, fid: FileId, n: Node<'_>, out: &mut Collected) {
    let Some(ty) = n.child_by_field_name("type") else {
        return;
    };
    if matches!(
        ty.kind(),
        "struct_specifier" | "union_specifier" | "enum_specifier"
    ) {
        record_specifier(pf, fid, ty, out);
    }
    let mut base = ctype::base_type(pf, ty);
    // `typedef struct { ... } foo_t;`: an anonymous record named by its typedef.
    let anon = matches!(ty.kind(), "struct_specifier" | "union_specifier")
        && ty.child_by_field_name("name").is_none()
        && ty.child_by_field_name("body").is_some();
    let mut c = n.walk();
    for d in n.children_by_field_name("declarator", &mut c) {
        let (name, t) = ctype::apply_declarator(pf, base.clone(), d);
        let Some(name) = name else { continue };
        if anon && t == CType::Unknown {
            // Register the anonymous body under the typedef name.
            let tag = name.clone();
            if let Some(body) = ty.child_by_field_name("body") {
                let fl = fields(pf, fid, body, &tag, out);
                out.records.push(RecordDef {
                    tag: tag.clone(),
                    file: fid,
                    line: ty.start_position().row + 1,
                    fields: fl,
                });
            }
            base = CType::Record(tag);
            out.typedefs.push((name, base.clone()));
        } else {
            out.typedefs.push((name, t));
        }
    }
}

fn record_specifier(pf: &ParsedFile, fid: FileId, n: Node<'_>, out: &mut Collected) {
    if n.kind() == "enum_specifier" {
        if let Some(body) = n.child_by_field_name("body") {
            let mut c = body.walk();
            for e in body.named_children(&mut c) {
                if e.kind() == "enumerator" {
                    if let Some(nm) = e.child_by_field_name("name") {
                        out.enumerators.push(pf.node_text(nm).to_string());
                    }
                }
            }
        }
        return;
    }
    let (Some(name), Some(body)) = (n.child_by_field_name("name"), n.child_by_field_name("body"))
    else {
        return;
    };
    let kw = if n.kind() == "struct_specifier" {
        "struct"
    } else {
        "union"
    };
    let tag = format!("{kw} {}", pf.node_text(name));
    let f = fields(pf, fid, body, &tag, out);
    out.records.push(RecordDef {
        tag,
        file: fid,
        line: n.start_position().row + 1,
        fields: f,
    });
}

fn fields(
    pf: &ParsedFile,
    fid: FileId,
    body: Node<'_>,
    outer: &str,
    out: &mut Collected,
) -> Vec<Field> {
    let mut res = Vec::new();
    let mut c = body.walk();
    for fd in body.named_children(&mut c) {
        match fd.kind() {
            "field_declaration" => {}
            "preproc_if" | "preproc_ifdef" | "preproc_else" | "preproc_elif" => {
                res.extend(fields(pf, fid, fd, outer, out));
                continue;
            }
            _ => continue,
        }
        let Some(ty) = fd.child_by_field_name("type") else {
            continue;
        };
        if matches!(
            ty.kind(),
            "struct_specifier" | "union_specifier" | "enum_specifier"
        ) {
            record_specifier(pf, fid, ty, out);
        }
        let base = ctype::base_type(pf, ty);
        let iomem = pf.node_text(fd).contains("__iomem");
        let bitfield = {
            let mut c2 = fd.walk();
            let r = fd.children(&mut c2).any(|x| x.kind() == "bitfield_clause");
            r
        };
        let mut c2 = fd.walk();
        let decls: Vec<Node<'_>> = fd.children_by_field_name("declarator", &mut c2).collect();
        if decls.is_empty() {
            // Anonymous struct/union member: its fields are reachable directly.
            if let Some(b) = ty.child_by_field_name("body") {
                let union = ty.kind() == "union_specifier";
                res.extend(fields(pf, fid, b, outer, out).into_iter().map(|mut f| {
                    f.overlaid |= union;
                    f
                }));
            }
            continue;
        }
        for d in decls {
            let (name, t) = ctype::apply_declarator(pf, base.clone(), d);
            if let Some(name) = name {
                // Anonymous-tag members declared inline (`struct { } x;`)
                // have no name C can spell: their type is the member's type,
                // `typeof(((struct outer *)0)->x)`.
                let inline_body = ty.child_by_field_name("body");
                if let (CType::Unknown, Some(b)) = (&base, inline_body) {
                    let fs = fields(pf, fid, b, outer, out);
                    out.inline_members
                        .push(((outer.to_string(), name.clone()), fs));
                }
                let t = if base == CType::Unknown && ty.child_by_field_name("body").is_some() {
                    rewrap(
                        &t,
                        CType::FieldOf(Box::new(CType::Record(outer.to_string())), name.clone()),
                    )
                } else {
                    t
                };
                res.push(Field {
                    name,
                    ty: t,
                    iomem,
                    bitfield,
                    overlaid: false,
                });
            }
        }
    }
    res
}

/// Replaces the innermost base of `t` with `base`.
fn rewrap(t: &CType, base: CType) -> CType {
    match t {
        CType::Ptr(x) => CType::ptr(rewrap(x, base)),
        CType::Array(x, n) => CType::Array(Box::new(rewrap(x, base)), n.clone()),
        CType::Unknown => base,
        other => other.clone(),
    }
}

fn macro_def(pf: &ParsedFile, fid: FileId, n: Node<'_>) -> Option<MacroDef> {
    let name = pf.node_text(n.child_by_field_name("name")?).to_string();
    let body = n
        .child_by_field_name("value")
        .map(|v| pf.node_text(v).to_string())
        .unwrap_or_default();
    let mut params_raw = String::new();
    let params = if n.kind() == "preproc_function_def" {
        let p = n.child_by_field_name("parameters")?;
        params_raw = pf.node_text(p).to_string();
        let mut c = p.walk();
        let v: Vec<String> = p
            .children(&mut c)
            .filter(|x| x.kind() == "identifier" || x.kind() == "...")
            .map(|x| pf.node_text(x).to_string())
            .collect();
        // GNU named variadic `arg...` parses as identifier followed by `...`.
        Some(v)
    } else {
        None
    };
    Some(MacroDef {
        name,
        file: fid,
        params,
        params_raw,
        body: body.replace("\\\n", " "),
        line: n.start_position().row + 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(text: &str) -> Program {
        let pf = fgft_parse::parse_text_with(
            Path::new("d.h"),
            text.to_string(),
            &fgft_parse::Options::default(),
        )
        .unwrap();
        Program::new(vec![pf])
    }

    #[test]
    fn macro_aliases_name_functions_and_macros() {
        let p = program(
            "#define atlx_hash_set atl1_hash_set\n#define ALIAS2 atlx_hash_set\n\
             #define hme_debug(fmt, ...) pr_debug(fmt, ##__VA_ARGS__)\n#define ASD hme_debug\n\
             #define NUM 3\nstatic void atl1_hash_set(int v) { (void)v; }\n",
        );
        assert_eq!(p.fn_alias("atlx_hash_set"), Some("atl1_hash_set"));
        assert_eq!(p.fn_alias("ALIAS2"), Some("atl1_hash_set"));
        assert_eq!(p.fn_alias("NUM"), None);
        assert_eq!(p.fn_alias("ASD"), None);
        assert_eq!(
            p.call_macro("ASD").map(|m| m.name.as_str()),
            Some("hme_debug")
        );
        assert!(p.call_macro("NUM").is_none());
    }

    #[test]
    fn table_expansions_declare_the_globals_a_statement_defines() {
        let pf = fgft_parse::parse_text_with(
            Path::new("d.c"),
            "static struct attribute *tg3_attrs[] = { NULL };\nATTRIBUTE_GROUPS(tg3);\n"
                .to_string(),
            &fgft_parse::Options::default(),
        )
        .unwrap();
        let mut expand = BTreeMap::new();
        expand.insert(
            "ATTRIBUTE_GROUPS".to_string(),
            fgft_parse::hints::Expansion {
                params: vec!["_name".into()],
                body: "static const struct attribute_group _name##_group = { .attrs = _name##_attrs, }; \
                       static const struct attribute_group *_name##_groups[] = { &_name##_group, NULL, };"
                    .into(),
            },
        );
        let p = Program::with_expansions(vec![pf], &expand);
        let g = p.global("tg3_groups").expect("tg3_groups");
        assert_eq!(
            g.decl_text.as_deref(),
            Some("const struct attribute_group *tg3_groups[]")
        );
        assert!(p.global("tg3_group").is_some());
    }

    #[test]
    fn defines_inside_a_parse_error_are_read() {
        // `#if 0` inside an initializer list: tree-sitter takes the rest of
        // the header into one error node.
        let p = program(
            "#ifndef D_H\n#define D_H\n#define PRE(x) \\\n{ \"a\", 1, /* c */ \\\n  2}\n\
             #ifdef USE_T\nstatic struct t tab[] = {\n\tPRE(1),\n#if 0\n//@@@ old\n#endif\n\
             \t{ \"b\", 3, 4},\n};\n#endif\n#define LATE(x, y) (((y) << (x ## _SHIFT)))\n\
             /* #define NOT_ONE(x) x */\n#endif\n",
        );
        let root = p.files[0].tree.root_node();
        assert!(root.has_error(), "the case this test is for");
        assert!(p.macros.contains_key("LATE"), "{:?}", p.macros.keys());
        assert!(
            !p.macros.contains_key("NOT_ONE"),
            "a define in a comment is none"
        );
    }

    #[test]
    fn a_function_like_definition_wins_over_an_object_like_one() {
        let p = program("#ifdef DBG\n#define ASD hme_debug\n#else\n#define ASD(...)\n#endif\n");
        assert!(p.macros["ASD"].params.is_some());
        let p = program("#ifdef DBG\n#define ASD(...)\n#else\n#define ASD hme_debug\n#endif\n");
        assert!(p.macros["ASD"].params.is_some());
    }
}

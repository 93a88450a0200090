//! Join-point shadows in the driver's C source.
//!
//! The scanner walks every function body with a scope stack, types the
//! expressions it needs to ([`Scanner::type_of`]) and hands each shadow to a
//! [`Visitor`]:
//!
//! - `Entry`: the function's first statement; `Exit`: every `return`;
//!   `FallOff`: the end of a `void` function's body when it can be reached;
//! - `Call`: a call through a function name;
//! - `Access`: a `.` or `->` member expression, with the struct type of its
//!   object and whether it reads, writes, does both or takes the address.
//!
//! Nothing inside `sizeof`, `typeof`, `offsetof` and the other unevaluated or
//! constant contexts of the table is a join point.

use crate::ctypes::{CDecl, FnSig, Param, Reader, RecordKey, Ty, TypeEnv, Var};
use crate::table::Table;
use fgft_base::ident;
use fgft_parse::ParsedFile;
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tree_sitter::Node;

/// Access kinds (bit set), as in the generated `FGFT_ASPECT_*` constants.
pub const READ: u8 = 1;
pub const WRITE: u8 = 2;
pub const ADDR: u8 = 4;

pub fn access_name(a: u8) -> &'static str {
    match a {
        READ => "read",
        WRITE => "write",
        x if x == READ | WRITE => "read-write",
        ADDR => "address",
        _ => "access",
    }
}

/// One source file of the driver.
pub struct SrcFile {
    /// Path relative to the driver root, with `/`.
    pub rel: String,
    pub pf: ParsedFile,
    pub text: Arc<str>,
}

/// The driver: its C files (parsed) and every other file (copied as is).
pub struct Driver {
    pub root: PathBuf,
    pub files: Vec<SrcFile>,
    pub others: Vec<(String, PathBuf)>,
    /// What reading the driver skipped (special files, symbolic link
    /// loops, unreadable entries).
    pub warnings: Vec<crate::Diag>,
}

fn is_artifact(name: &str) -> bool {
    name.starts_with('.')
        || [
            ".o", ".ko", ".mod", ".mod.c", ".cmd", ".i", ".s", ".order", ".symvers", ".a", ".d",
        ]
        .iter()
        .any(|s| name.ends_with(s))
        || name == "Module.symvers"
        || name == "modules.order"
}

/// A source named on the command line: a regular file (a FIFO would block
/// the read forever).
fn check_given(p: &Path) -> Result<(), crate::AspectError> {
    if p.is_dir() {
        return Err(crate::AspectError::Msg(format!(
            "{}: give either one directory or source files",
            p.display()
        )));
    }
    let meta = std::fs::metadata(p).map_err(|e| crate::AspectError::io(p, e))?;
    if let Some(kind) = fgft_base::walk::special_kind(&meta.file_type()) {
        return Err(crate::AspectError::Msg(format!(
            "{}: {kind}, not a regular file: name the driver's source files",
            p.display()
        )));
    }
    Ok(())
}

/// What a walk skipped, as warnings at the top of each file.
fn skipped_warnings(skipped: &[fgft_base::walk::Skipped]) -> Vec<crate::Diag> {
    let empty: Arc<str> = Arc::from("");
    skipped
        .iter()
        .map(|s| {
            crate::Diag::warning(
                &s.path,
                &empty,
                0..0,
                format!("skipped {}: {}", s.path.display(), s.why),
                "not read",
            )
        })
        .collect()
}

/// Whether a path under the driver root is a build artifact or hidden (in
/// any of its components).
fn skipped_rel(rel: &Path) -> bool {
    rel.components()
        .any(|c| is_artifact(&c.as_os_str().to_string_lossy()))
}

impl Driver {
    /// Loads `inputs`: one directory (every file under it, each directory
    /// once: symbolic link loops and special files are skipped, with a
    /// warning), or regular files.
    pub fn load(inputs: &[PathBuf]) -> Result<Driver, crate::AspectError> {
        let mut paths: Vec<(String, PathBuf)> = Vec::new();
        let root;
        let mut warnings = Vec::new();
        if inputs.len() == 1 && inputs[0].is_dir() {
            root = inputs[0].clone();
            let r = root.clone();
            let keep = move |p: &Path| !skipped_rel(p.strip_prefix(&r).unwrap_or(p));
            let w = fgft_base::walk::files(std::slice::from_ref(&root), &keep);
            warnings = skipped_warnings(&w.skipped);
            for p in w.files {
                let rel = p
                    .strip_prefix(&root)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .replace('\\', "/");
                paths.push((rel, p));
            }
        } else {
            root = inputs
                .first()
                .and_then(|p| p.parent())
                .map(Path::to_path_buf)
                .unwrap_or_default();
            for p in inputs {
                check_given(p)?;
                let rel = p
                    .strip_prefix(&root)
                    .ok()
                    .map(|r| r.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_else(|| {
                        p.file_name()
                            .map(|f| f.to_string_lossy().to_string())
                            .unwrap_or_default()
                    });
                paths.push((rel, p.clone()));
            }
        }
        paths.sort();
        paths.dedup_by(|a, b| a.0 == b.0);
        let mut files = Vec::new();
        let mut others = Vec::new();
        for (rel, p) in paths {
            if rel.ends_with(".c") || rel.ends_with(".h") {
                let pf = fgft_parse::parse_file(&p)?;
                let text: Arc<str> = Arc::from(pf.text.as_str());
                files.push(SrcFile { rel, pf, text });
            } else {
                others.push((rel, p));
            }
        }
        if files.is_empty() {
            return Err(crate::AspectError::Msg(
                "no C source (.c or .h) among the inputs".into(),
            ));
        }
        Ok(Driver {
            root,
            files,
            others,
            warnings,
        })
    }

    /// Every file and directory the driver was read from.
    pub fn inputs(&self) -> Vec<PathBuf> {
        let mut v = vec![self.root.clone()];
        v.extend(self.files.iter().map(|f| f.pf.path.clone()));
        v.extend(self.others.iter().map(|o| o.1.clone()));
        v
    }

    /// The type facts of the driver's own files.
    pub fn type_env(&self) -> TypeEnv {
        let mut env = TypeEnv::default();
        // Headers first: definitions there are the shared ones.
        for f in self.files.iter().filter(|f| f.rel.ends_with(".h")) {
            env.add_file(&f.pf, false);
        }
        for f in self.files.iter().filter(|f| f.rel.ends_with(".c")) {
            env.add_file(&f.pf, false);
        }
        env
    }
}

/// The function a shadow is in.
#[derive(Debug, Clone)]
pub struct FuncInfo {
    pub name: String,
    pub params: Vec<Param>,
    pub ret: Ty,
    pub ret_decl: Option<CDecl>,
    /// The function definition.
    pub def: Range<usize>,
    /// The body `{ ... }`.
    pub body: Range<usize>,
    /// Whether the body holds ERROR or MISSING nodes.
    pub broken: bool,
}

impl FuncInfo {
    pub fn returns_void(&self) -> bool {
        self.ret == Ty::Void
    }
}

/// A join-point shadow.
#[derive(Debug, Clone)]
pub enum Shadow {
    Entry {
        body: Range<usize>,
    },
    Exit {
        stmt: Range<usize>,
        value: Option<Range<usize>>,
    },
    FallOff {
        at: usize,
    },
    Call {
        call: Range<usize>,
        callee: String,
        callee_range: Range<usize>,
        args: Vec<Range<usize>>,
        used: bool,
        sig: Option<FnSig>,
        is_function: bool,
    },
    Access {
        obj: Range<usize>,
        arrow: bool,
        record: RecordKey,
        names: Vec<String>,
        member: String,
        access: u8,
        /// Whether `&obj` is allowed (needed for `.` accesses).
        addressable: bool,
        expr: Range<usize>,
    },
}

/// Scope at a shadow: locals (innermost last) and the function's parameters.
pub struct Scope<'a> {
    frames: &'a [HashMap<String, Var>],
}

impl Scope<'_> {
    pub fn lookup(&self, name: &str) -> Option<&Var> {
        self.frames.iter().rev().find_map(|f| f.get(name))
    }

    /// Whether `name` resolves to the function's parameter (not shadowed).
    pub fn is_param(&self, name: &str) -> bool {
        self.frames
            .iter()
            .rposition(|f| f.contains_key(name))
            .is_some_and(|i| i == 0)
    }
}

/// A shadow with its context.
pub struct Site<'a> {
    pub file: &'a SrcFile,
    pub func: &'a FuncInfo,
    pub shadow: Shadow,
    pub line: usize,
    pub scope: Scope<'a>,
}

/// An access the scanner could not type or weave.
#[derive(Debug, Clone)]
pub struct Unresolved {
    pub file: usize,
    pub range: Range<usize>,
    pub member: String,
    pub func: String,
    pub reason: &'static str,
    /// The struct, when known.
    pub record: Option<Vec<String>>,
}

/// Receives shadows.
pub trait Visitor {
    fn site(&mut self, site: &Site<'_>);
}

/// Walks one file.
pub struct Scanner<'a> {
    env: &'a TypeEnv,
    table: &'a Table,
    file: &'a SrcFile,
    file_index: usize,
    frames: Vec<HashMap<String, Var>>,
    scratch: TypeEnv,
    pub unresolved: Vec<Unresolved>,
    /// Functions with ERROR nodes: (name, range of the definition).
    pub broken: Vec<(String, Range<usize>)>,
    /// Top-level function definitions seen: (name, def range).
    pub functions: Vec<(String, Range<usize>)>,
}

impl<'a> Scanner<'a> {
    pub fn new(
        env: &'a TypeEnv,
        table: &'a Table,
        file: &'a SrcFile,
        file_index: usize,
    ) -> Scanner<'a> {
        Scanner {
            env,
            table,
            file,
            file_index,
            frames: Vec::new(),
            scratch: TypeEnv::default(),
            unresolved: Vec::new(),
            broken: Vec::new(),
            functions: Vec::new(),
        }
    }

    fn reader(&self) -> Reader<'a> {
        Reader {
            text: &self.file.pf.text,
            file: &self.file.pf.path,
        }
    }

    fn t(&self, n: Node<'_>) -> &'a str {
        let text: &'a str = &self.file.pf.text;
        text.get(n.byte_range()).unwrap_or("")
    }

    /// Scans the whole file.
    pub fn run(&mut self, v: &mut dyn Visitor) {
        let tree = &self.file.pf.tree;
        let root = tree.root_node();
        self.top(root, v);
    }

    fn top(&mut self, n: Node<'_>, v: &mut dyn Visitor) {
        for k in 0..n.named_child_count() {
            let Some(c) = n.named_child(k as u32) else {
                continue;
            };
            match c.kind() {
                "function_definition" => self.function(c, v),
                k if fgft_parse::walk::holds_top_level(k) => self.top(c, v),
                _ => {}
            }
        }
    }

    fn function(&mut self, def: Node<'_>, v: &mut dyn Visitor) {
        let Some(decl) = def.child_by_field_name("declarator") else {
            return;
        };
        let Some(body) = def.child_by_field_name("body") else {
            return;
        };
        let r = self.reader();
        let Some((name, sig)) = r.fn_sig(def, decl, &mut self.scratch, false) else {
            return;
        };
        self.functions.push((name.clone(), def.byte_range()));
        let broken = body.has_error();
        if broken {
            self.broken.push((name.clone(), def.byte_range()));
        }
        let info = FuncInfo {
            name,
            params: sig.params.clone(),
            ret: sig.ret.clone(),
            ret_decl: sig.ret_decl.clone(),
            def: def.byte_range(),
            body: body.byte_range(),
            broken,
        };
        let mut params = HashMap::new();
        for p in &sig.params {
            if let Some(n) = &p.name {
                params.insert(
                    n.clone(),
                    Var {
                        ty: p.ty.clone(),
                        decl: p.decl.clone(),
                    },
                );
            }
        }
        self.frames = vec![params];
        if !broken {
            self.emit(
                v,
                &info,
                Shadow::Entry {
                    body: body.byte_range(),
                },
                body.start_byte(),
            );
        }
        self.stmt(body, &info, v);
        if !broken && info.returns_void() {
            let last = (0..body.named_child_count())
                .rev()
                .filter_map(|k| body.named_child(k as u32))
                .find(|c| c.kind() != "comment");
            let ends_in_return = last.is_some_and(|c| c.kind() == "return_statement");
            if !ends_in_return {
                let at = body.end_byte().saturating_sub(1);
                self.emit(v, &info, Shadow::FallOff { at }, at);
            }
        }
        self.frames.clear();
    }

    fn emit(&self, v: &mut dyn Visitor, func: &FuncInfo, shadow: Shadow, at: usize) {
        let site = Site {
            file: self.file,
            func,
            shadow,
            line: self.file.pf.line_of(at),
            scope: Scope {
                frames: &self.frames,
            },
        };
        v.site(&site);
    }

    fn declare(&mut self, decl: Node<'_>, func: &FuncInfo, v: &mut dyn Visitor) {
        let r = self.reader();
        let is_static = (0..decl.child_count())
            .filter_map(|k| decl.child(k))
            .any(|c| c.kind() == "storage_class_specifier" && self.t(c) == "static");
        let Some(tn) = decl.child_by_field_name("type") else {
            return;
        };
        let base = r.base(tn, &mut self.scratch, false);
        let mut cursor = decl.walk();
        let decls: Vec<Node<'_>> = decl
            .children_by_field_name("declarator", &mut cursor)
            .collect();
        for d in decls {
            if d.kind() == "init_declarator" && !is_static {
                if let Some(val) = d.child_by_field_name("value") {
                    self.expr(val, func, v);
                }
            }
            let (name, ty) = r.declared(d, base.clone());
            if let Some(name) = name {
                let var = Var {
                    ty,
                    decl: r.cdecl(decl, d),
                };
                if let Some(f) = self.frames.last_mut() {
                    f.insert(name, var);
                }
            }
        }
    }

    fn stmt(&mut self, n: Node<'_>, func: &FuncInfo, v: &mut dyn Visitor) {
        if n.is_error() || n.is_missing() {
            return;
        }
        match n.kind() {
            "compound_statement" => {
                self.frames.push(HashMap::new());
                for k in 0..n.named_child_count() {
                    if let Some(c) = n.named_child(k as u32) {
                        self.stmt(c, func, v);
                    }
                }
                self.frames.pop();
            }
            "declaration" => self.declare(n, func, v),
            "for_statement" => {
                self.frames.push(HashMap::new());
                for k in 0..n.named_child_count() {
                    if let Some(c) = n.named_child(k as u32) {
                        self.stmt(c, func, v);
                    }
                }
                self.frames.pop();
            }
            "return_statement" => {
                let value = n.named_child(0).filter(|c| c.kind() != "comment");
                if !func.broken {
                    self.emit(
                        v,
                        func,
                        Shadow::Exit {
                            stmt: n.byte_range(),
                            value: value.map(|c| c.byte_range()),
                        },
                        n.start_byte(),
                    );
                }
                if let Some(c) = value {
                    self.expr(c, func, v);
                }
            }
            "case_statement" => {
                for k in 0..n.named_child_count() {
                    let Some(c) = n.named_child(k as u32) else {
                        continue;
                    };
                    if n.child_by_field_name("value")
                        .is_some_and(|val| val.id() == c.id())
                    {
                        continue;
                    }
                    self.stmt(c, func, v);
                }
            }
            "preproc_def"
            | "preproc_function_def"
            | "preproc_call"
            | "preproc_include"
            | "comment"
            | "type_definition"
            | "struct_specifier"
            | "union_specifier"
            | "enum_specifier" => {}
            "expression_statement"
            | "if_statement"
            | "while_statement"
            | "do_statement"
            | "switch_statement"
            | "labeled_statement"
            | "attributed_statement"
            | "preproc_if"
            | "preproc_ifdef"
            | "preproc_else"
            | "preproc_elif"
            | "preproc_elifdef"
            | "else_clause"
            | "condition_clause"
            | "parenthesized_expression"
            | "goto_statement"
            | "break_statement"
            | "continue_statement" => {
                for k in 0..n.named_child_count() {
                    if let Some(c) = n.named_child(k as u32) {
                        self.stmt(c, func, v);
                    }
                }
            }
            _ => self.expr(n, func, v),
        }
    }

    fn expr(&mut self, n: Node<'_>, func: &FuncInfo, v: &mut dyn Visitor) {
        if n.is_error() || n.is_missing() {
            return;
        }
        match n.kind() {
            "sizeof_expression"
            | "alignof_expression"
            | "offsetof_expression"
            | "generic_expression"
            | "macro_type_specifier"
            | "type_descriptor"
            | "string_literal"
            | "concatenated_string"
            | "number_literal"
            | "char_literal"
            | "comment"
            | "attribute_specifier" => {}
            "compound_statement" => self.stmt(n, func, v),
            "initializer_pair" => {
                if let Some(val) = n.child_by_field_name("value") {
                    self.expr(val, func, v);
                }
            }
            "field_expression" => {
                self.access(n, func, v);
                if let Some(a) = n.child_by_field_name("argument") {
                    self.expr(a, func, v);
                }
            }
            "call_expression" => {
                let callee = n.child_by_field_name("function");
                let mut only: Option<&Vec<usize>> = None;
                if let Some(c) = callee.filter(|c| c.kind() == "identifier") {
                    let name = self.t(c);
                    if self.table.unevaluated.contains(name) {
                        return;
                    }
                    only = self.table.evaluated_args.get(name);
                    self.call(n, c, func, v);
                } else if let Some(c) = callee {
                    self.expr(c, func, v);
                }
                if let Some(args) = n.child_by_field_name("arguments") {
                    let list: Vec<Node<'_>> = (0..args.named_child_count())
                        .filter_map(|k| args.named_child(k as u32))
                        .filter(|a| a.kind() != "comment")
                        .collect();
                    for (k, a) in list.into_iter().enumerate() {
                        if only.is_none_or(|o| o.contains(&k)) {
                            self.expr(a, func, v);
                        }
                    }
                }
            }
            _ => {
                for k in 0..n.named_child_count() {
                    if let Some(c) = n.named_child(k as u32) {
                        self.expr(c, func, v);
                    }
                }
            }
        }
    }

    fn call(&mut self, n: Node<'_>, callee: Node<'_>, func: &FuncInfo, v: &mut dyn Visitor) {
        let name = self.t(callee).to_string();
        let mut args = Vec::new();
        if let Some(list) = n.child_by_field_name("arguments") {
            for k in 0..list.named_child_count() {
                if let Some(a) = list.named_child(k as u32) {
                    if a.kind() != "comment" {
                        args.push(a.byte_range());
                    }
                }
            }
        }
        let sig = self.env.funcs.get(&name).cloned();
        let is_function =
            self.env.is_function(&name) && !self.frames.iter().any(|f| f.contains_key(&name));
        let shadow = Shadow::Call {
            call: n.byte_range(),
            callee: name,
            callee_range: callee.byte_range(),
            args,
            used: value_used(n, self),
            sig,
            is_function,
        };
        self.emit(v, func, shadow, n.start_byte());
    }

    fn access(&mut self, n: Node<'_>, func: &FuncInfo, v: &mut dyn Visitor) {
        let (Some(obj), Some(field)) = (
            n.child_by_field_name("argument"),
            n.child_by_field_name("field"),
        ) else {
            return;
        };
        let arrow = n
            .child_by_field_name("operator")
            .map(|o| self.t(o) == "->")
            .unwrap_or_else(|| self.t(n).contains("->"));
        let member = self.t(field).to_string();
        let oty = self.type_of(obj);
        let record = if arrow {
            self.env.record_pointed(&oty)
        } else {
            self.env.record_of(&oty)
        };
        let Some(record) = record else {
            self.unresolved.push(Unresolved {
                file: self.file_index,
                range: n.byte_range(),
                member,
                func: func.name.clone(),
                reason: "its object's struct type is not known",
                record: None,
            });
            return;
        };
        let access = self.classify(n);
        let addressable = arrow || lvalue(obj, self);
        let names = {
            let v = self.env.record_names(&record);
            if v.is_empty() {
                vec![self.env.record_display(&record)]
            } else {
                v
            }
        };
        let shadow = Shadow::Access {
            obj: obj.byte_range(),
            arrow,
            record,
            names,
            member,
            access,
            addressable,
            expr: n.byte_range(),
        };
        self.emit(v, func, shadow, field.start_byte());
    }

    /// Read, write, both, or address taken, from the access's context.
    fn classify(&self, fe: Node<'_>) -> u8 {
        let mut n = fe;
        let mut ty = self.type_of(fe);
        loop {
            let Some(p) = n.parent() else {
                return READ;
            };
            match p.kind() {
                "parenthesized_expression" => n = p,
                "field_expression"
                    if p.child_by_field_name("argument")
                        .is_some_and(|a| a.id() == n.id())
                        && p.child_by_field_name("operator")
                            .is_none_or(|o| self.t(o) != "->") =>
                {
                    ty = self.type_of(p);
                    n = p;
                }
                "subscript_expression"
                    if p.child_by_field_name("argument")
                        .is_some_and(|a| a.id() == n.id())
                        && matches!(self.env.resolve(&ty), Ty::Array(_)) =>
                {
                    ty = self.env.deref(&ty);
                    n = p;
                }
                "assignment_expression"
                    if p.child_by_field_name("left")
                        .is_some_and(|l| l.id() == n.id()) =>
                {
                    let op = p
                        .child_by_field_name("operator")
                        .map(|o| self.t(o))
                        .unwrap_or("=");
                    return if op == "=" { WRITE } else { READ | WRITE };
                }
                "update_expression" => return READ | WRITE,
                "pointer_expression"
                    if p.child_by_field_name("operator")
                        .is_some_and(|o| self.t(o) == "&") =>
                {
                    return ADDR
                }
                "argument_list" => {
                    let call = p.parent();
                    let callee = call
                        .and_then(|c| c.child_by_field_name("function"))
                        .map(|f| self.t(f))
                        .unwrap_or("");
                    if let Some(&idx) = self.table.writes.get(callee) {
                        let pos = (0..p.named_child_count())
                            .filter_map(|k| p.named_child(k as u32))
                            .filter(|c| c.kind() != "comment")
                            .position(|c| c.id() == n.id());
                        if pos == Some(idx) {
                            return WRITE;
                        }
                    }
                    return if matches!(self.env.resolve(&ty), Ty::Array(_)) {
                        ADDR
                    } else {
                        READ
                    };
                }
                "gnu_asm_output_operand" => return READ | WRITE,
                _ => {
                    return if matches!(self.env.resolve(&ty), Ty::Array(_)) {
                        ADDR
                    } else {
                        READ
                    };
                }
            }
        }
    }

    /// The type of an expression, as far as it can be told.
    pub fn type_of(&self, n: Node<'_>) -> Ty {
        match n.kind() {
            "identifier" => {
                let name = self.t(n);
                if let Some(v) = self.frames.iter().rev().find_map(|f| f.get(name)) {
                    return v.ty.clone();
                }
                if let Some(v) = self.env.globals.get(name) {
                    return v.ty.clone();
                }
                if let Some(f) = self.env.funcs.get(name) {
                    return Ty::Func(Box::new(f.ret.clone()));
                }
                Ty::Unknown
            }
            "field_expression" => {
                let (Some(obj), Some(field)) = (
                    n.child_by_field_name("argument"),
                    n.child_by_field_name("field"),
                ) else {
                    return Ty::Unknown;
                };
                let arrow = n
                    .child_by_field_name("operator")
                    .map(|o| self.t(o) == "->")
                    .unwrap_or(false);
                let base = self.type_of(obj);
                let rec = if arrow {
                    self.env.record_pointed(&base)
                } else {
                    self.env.record_of(&base)
                };
                rec.and_then(|k| self.env.member(&k, self.t(field)).map(|m| m.ty.clone()))
                    .unwrap_or(Ty::Unknown)
            }
            "pointer_expression" => {
                let arg = n.child_by_field_name("argument");
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| self.t(o))
                    .unwrap_or("*");
                match arg {
                    Some(a) if op == "&" => Ty::Ptr(Box::new(self.type_of(a))),
                    Some(a) => self.env.deref(&self.type_of(a)),
                    None => Ty::Unknown,
                }
            }
            "subscript_expression" => n
                .child_by_field_name("argument")
                .map(|a| self.env.deref(&self.type_of(a)))
                .unwrap_or(Ty::Unknown),
            "cast_expression" | "compound_literal_expression" => n
                .child_by_field_name("type")
                .map(|t| self.type_descriptor(t))
                .unwrap_or(Ty::Unknown),
            "parenthesized_expression" => match n.named_child(0) {
                Some(c) if c.kind() == "compound_statement" => (0..c.named_child_count())
                    .rev()
                    .filter_map(|k| c.named_child(k as u32))
                    .find(|s| s.kind() != "comment")
                    .filter(|s| s.kind() == "expression_statement")
                    .and_then(|s| s.named_child(0))
                    .map(|e| self.type_of(e))
                    .unwrap_or(Ty::Unknown),
                Some(c) => self.type_of(c),
                None => Ty::Unknown,
            },
            "call_expression" => self.call_type(n),
            "conditional_expression" => {
                let c = n
                    .child_by_field_name("consequence")
                    .map(|c| self.type_of(c))
                    .unwrap_or(Ty::Unknown);
                if c == Ty::Unknown {
                    n.child_by_field_name("alternative")
                        .map(|c| self.type_of(c))
                        .unwrap_or(Ty::Unknown)
                } else {
                    c
                }
            }
            "comma_expression" => n
                .child_by_field_name("right")
                .map(|c| self.type_of(c))
                .unwrap_or(Ty::Unknown),
            "assignment_expression" => n
                .child_by_field_name("left")
                .map(|c| self.type_of(c))
                .unwrap_or(Ty::Unknown),
            "update_expression" => n
                .child_by_field_name("argument")
                .map(|c| self.type_of(c))
                .unwrap_or(Ty::Unknown),
            "binary_expression" => {
                let l = n
                    .child_by_field_name("left")
                    .map(|c| self.type_of(c))
                    .unwrap_or(Ty::Unknown);
                let r = n
                    .child_by_field_name("right")
                    .map(|c| self.type_of(c))
                    .unwrap_or(Ty::Unknown);
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| self.t(o))
                    .unwrap_or("");
                let ptr = |t: &Ty| matches!(self.env.resolve(t), Ty::Ptr(_) | Ty::Array(_));
                match op {
                    "+" | "-" if ptr(&l) && !ptr(&r) => match self.env.resolve(&l) {
                        Ty::Array(x) => Ty::Ptr(x),
                        t => t,
                    },
                    "+" if ptr(&r) => r,
                    _ => Ty::Scalar,
                }
            }
            "string_literal" | "concatenated_string" => Ty::Ptr(Box::new(Ty::Scalar)),
            "number_literal" | "char_literal" | "unary_expression" | "sizeof_expression" => {
                Ty::Scalar
            }
            _ => Ty::Unknown,
        }
    }

    fn call_type(&self, n: Node<'_>) -> Ty {
        let Some(f) = n.child_by_field_name("function") else {
            return Ty::Unknown;
        };
        let args: Vec<Node<'_>> = n
            .child_by_field_name("arguments")
            .map(|l| {
                (0..l.named_child_count())
                    .filter_map(|k| l.named_child(k as u32))
                    .filter(|c| c.kind() != "comment")
                    .collect()
            })
            .unwrap_or_default();
        if f.kind() == "identifier" {
            let name = self.t(f);
            if let Some(&k) = self.table.type_arg_pointer.get(name) {
                return args
                    .get(k)
                    .map(|a| Ty::Ptr(Box::new(ty_from_text(self.t(*a)))))
                    .unwrap_or(Ty::Unknown);
            }
            if let Some(&k) = self.table.same_type_arg.get(name) {
                return args.get(k).map(|a| self.type_of(*a)).unwrap_or(Ty::Unknown);
            }
            if is_hook_macro(name) {
                return args
                    .first()
                    .map(|a| self.type_of(*a))
                    .unwrap_or(Ty::Unknown);
            }
            if let Some(t) = self.table.returns.get(name) {
                return ty_from_text(t);
            }
            if !self.frames.iter().any(|fr| fr.contains_key(name)) {
                if let Some(sig) = self.env.funcs.get(name) {
                    return sig.ret.clone();
                }
            }
        }
        match self.env.resolve(&self.type_of(f)) {
            Ty::Func(r) => *r,
            Ty::Ptr(x) => match self.env.resolve(&x) {
                Ty::Func(r) => *r,
                _ => Ty::Unknown,
            },
            _ => Ty::Unknown,
        }
    }

    fn type_descriptor(&self, t: Node<'_>) -> Ty {
        let r = self.reader();
        let Some(tn) = t.child_by_field_name("type") else {
            return Ty::Unknown;
        };
        let base = r.base_key(tn);
        match t.child_by_field_name("declarator") {
            Some(d) => r.declared(d, base).1,
            None => base,
        }
    }
}

/// `FGFT_<ASPECT>_<n>(x)`: a hook macro of an aspect woven before; it has the
/// type of its argument.
pub fn is_hook_macro(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("FGFT_") else {
        return false;
    };
    let Some((_, num)) = rest.rsplit_once('_') else {
        return false;
    };
    !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit())
}

/// A type from text such as `struct foo`, `foo_t` or `struct foo *`.
pub fn ty_from_text(s: &str) -> Ty {
    let s = s.trim();
    let stars = s
        .bytes()
        .rev()
        .take_while(|&b| b == b'*' || b == b' ')
        .filter(|&b| b == b'*')
        .count();
    let core = s.trim_end_matches(['*', ' ']).trim();
    let core = core.strip_prefix("const ").unwrap_or(core).trim();
    let mut t = if let Some(tag) = core.strip_prefix("struct ") {
        Ty::Record(RecordKey {
            union: false,
            tag: tag.trim().to_string(),
        })
    } else if let Some(tag) = core.strip_prefix("union ") {
        Ty::Record(RecordKey {
            union: true,
            tag: tag.trim().to_string(),
        })
    } else if core == "void" {
        Ty::Void
    } else if ident::is_ident(core) {
        Ty::Named(core.to_string())
    } else {
        Ty::Unknown
    };
    for _ in 0..stars {
        t = Ty::Ptr(Box::new(t));
    }
    t
}

fn value_used(call: Node<'_>, s: &Scanner<'_>) -> bool {
    let mut n = call;
    loop {
        let Some(p) = n.parent() else {
            return true;
        };
        match p.kind() {
            "parenthesized_expression" => n = p,
            "expression_statement" => return false,
            "comma_expression" => {
                return p
                    .child_by_field_name("left")
                    .is_none_or(|l| l.id() != n.id());
            }
            "cast_expression" => {
                let void = p
                    .child_by_field_name("type")
                    .map(|t| s.t(t).trim() == "void")
                    .unwrap_or(false);
                return !void;
            }
            "for_statement" => {
                return p
                    .child_by_field_name("update")
                    .is_none_or(|u| u.id() != n.id());
            }
            _ => return true,
        }
    }
}

/// Whether `&n` is allowed.
fn lvalue(n: Node<'_>, s: &Scanner<'_>) -> bool {
    match n.kind() {
        "identifier" | "subscript_expression" | "compound_literal_expression" => true,
        "pointer_expression" => n
            .child_by_field_name("operator")
            .is_some_and(|o| s.t(o) == "*"),
        "field_expression" => {
            let arrow = n
                .child_by_field_name("operator")
                .is_some_and(|o| s.t(o) == "->");
            arrow
                || n.child_by_field_name("argument")
                    .is_some_and(|a| lvalue(a, s))
        }
        "parenthesized_expression" => n
            .named_child(0)
            .is_some_and(|c| c.kind() != "compound_statement" && lvalue(c, s)),
        _ => false,
    }
}

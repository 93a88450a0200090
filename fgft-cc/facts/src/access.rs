//! Per-function facts from one walk over each function body: calls (to driver
//! functions, kernel functions, or through pointers), functions and globals
//! used as values, field accesses (record type + member, read/write), uses of
//! pointers (dereference, indexing, sized kernel calls) with where each
//! pointer came from, and type relations (`netdev_priv`, `container_of`,
//! `void *` members converted to a typed pointer).
//!
//! Types are resolved through parameters, locals (by scope), members of the
//! driver's structs, casts, typedefs and the relations above.  Driver macros
//! are expanded and their expansion walked in the scope of the use; kernel
//! functions with a model in the API table are walked through their model.

use crate::ctype::{self, CType};
use crate::macros::{self, MacroParams};
use crate::model::{
    AccessKind, ApiModels, ArgKind, CallSite, CallTarget, Callee, Deref, DriverFacts, FieldAccess,
    FnFacts, GlobalRef, KernelGlobals, Origin, PtrUse, PtrUseKind, Relation, Returns, Site,
};
use crate::program::{FnId, Program};
use fgft_parse::ParsedFile;
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;
use tree_sitter::Node;

/// Walks every function of the program.
pub fn analyze(prog: &Program, apis: &ApiModels, kglobals: &KernelGlobals) -> DriverFacts {
    let mut out = DriverFacts::default();
    let mut cache: HashMap<String, Option<Rc<ParsedFile>>> = HashMap::new();
    for fid in 0..prog.fns.len() {
        let name = prog.fns[fid].name.clone();
        let facts = analyze_fn(prog, apis, kglobals, fid, &mut cache);
        // Functions defined twice (both branches of an #ifdef): merge.
        let e = out.per_fn.entry(name).or_default();
        e.merge(facts);
    }
    out
}

fn analyze_fn(
    prog: &Program,
    apis: &ApiModels,
    kglobals: &KernelGlobals,
    fid: FnId,
    cache: &mut HashMap<String, Option<Rc<ParsedFile>>>,
) -> FnFacts {
    let def = &prog.fns[fid];
    let mut w = Walker {
        prog,
        apis,
        kglobals,
        func: def.name.clone(),
        file: def.file,
        scopes: vec![HashMap::new()],
        facts: FnFacts::default(),
        site: None,
        expanding: Vec::new(),
        in_header: 0,
        cache,
        via_macro: None,
        returned: Vec::new(),
    };
    for (i, p) in def.params.iter().enumerate() {
        w.scopes[0].insert(
            p.name.clone(),
            Var {
                ty: p.ty.clone(),
                origins: vec![Origin::Param(i)],
                param: Some(i),
                field: None,
            },
        );
    }
    w.facts.param_origins = (0..def.params.len())
        .map(|i| vec![Origin::Param(i)])
        .collect();
    let pf = &prog.files[def.file];
    if let Some(node) = prog.fn_node(fid) {
        if let Some(body) = node.child_by_field_name("body") {
            w.stmt(pf, body);
        }
    }
    // Parameter origins: whatever the parameter variables ended up holding.
    let mut po = Vec::new();
    if let Some(scope) = w.scopes.first() {
        for p in &def.params {
            po.push(
                scope
                    .get(&p.name)
                    .map(|v| v.origins.clone())
                    .unwrap_or_default(),
            );
        }
    }
    w.facts.param_origins = po;
    w.facts
}

#[derive(Debug, Clone)]
struct Var {
    ty: CType,
    origins: Vec<Origin>,
    param: Option<usize>,
    /// The member a type-inferred local (`__auto_type v = p->m;`) holds
    /// the value of: reading the local reads that member's value, so an
    /// assignment from it relates the member as the read would.
    field: Option<(CType, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Read,
    Write,
    ReadWrite,
    Addr,
    Embed,
}

impl Ctx {
    fn kind(self) -> AccessKind {
        match self {
            Ctx::Read => AccessKind::Read,
            Ctx::Write => AccessKind::Write,
            Ctx::ReadWrite => AccessKind::ReadWrite,
            Ctx::Addr => AccessKind::Addr,
            Ctx::Embed => AccessKind::Embed,
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Info {
    ty: CType,
    origins: Vec<Origin>,
    /// A `netdev_priv(x)` result waiting for its type (from a cast or the
    /// variable it is assigned to): the type of `x`.
    /// The carrier type and the accessor of a private area being read.
    pending_priv: Option<(CType, String)>,
    /// The value is a member read (`x->f`): base type and member.
    field: Option<(CType, String)>,
    /// The value is a parameter (index).
    param: Option<usize>,
    /// The expression is the address of a driver global.
    global_addr: Option<usize>,
}

struct Walker<'p, 'c> {
    prog: &'p Program,
    apis: &'p ApiModels,
    kglobals: &'p KernelGlobals,
    func: String,
    file: usize,
    scopes: Vec<HashMap<String, Var>>,
    facts: FnFacts,
    /// Inside a macro expansion: the site of the macro use.
    site: Option<Site>,
    expanding: Vec<String>,
    /// Inside the model of a kernel header helper: its function references
    /// are the arguments', already recorded at their own sites.
    in_header: usize,
    cache: &'c mut HashMap<String, Option<Rc<ParsedFile>>>,
    via_macro: Option<String>,
    /// One per expansion being walked: what its `return` statements yield
    /// (a header inline's body: `d_inode(x)` is `x->d_inode`).
    returned: Vec<Option<Info>>,
}

const MAX_EXPANSION_DEPTH: usize = 8;

impl Walker<'_, '_> {
    fn site(&self, _pf: &ParsedFile, n: Node<'_>) -> Site {
        if let Some(s) = &self.site {
            return s.clone();
        }
        Site {
            file: self.file,
            range: n.byte_range(),
            line: n.start_position().row + 1,
            func: self.func.clone(),
        }
    }

    fn lookup(&self, name: &str) -> Option<&Var> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    fn lookup_mut(&mut self, name: &str) -> Option<&mut Var> {
        self.scopes.iter_mut().rev().find_map(|s| s.get_mut(name))
    }

    // ---------------------------------------------------------------- statements

    fn stmt(&mut self, pf: &ParsedFile, n: Node<'_>) {
        match n.kind() {
            "compound_statement" => {
                self.scopes.push(HashMap::new());
                let mut c = n.walk();
                let kids: Vec<Node<'_>> = n.named_children(&mut c).collect();
                for k in kids {
                    self.stmt(pf, k);
                }
                self.scopes.pop();
            }
            "declaration" => self.local_decl(pf, n),
            "expression_statement" => {
                if let Some(e) = n.named_child(0) {
                    self.expr(pf, e, Ctx::Read);
                }
            }
            "return_statement" => {
                if let Some(e) = n.named_child(0) {
                    let info = self.expr(pf, e, Ctx::Read);
                    if let Some(slot) = self.returned.last_mut() {
                        merge_returned(slot, info);
                    } else if let Some(ret) = self.prog.def(&self.func).map(|d| d.ret.clone()) {
                        // Returning converts as assigning does (`return
                        // sb->s_fs_info;` from a `struct minix_sb_info *`).
                        self.relate(&self.prog.resolve(&ret), &info);
                    }
                }
            }
            "if_statement" | "while_statement" | "do_statement" | "switch_statement" => {
                if let Some(c) = n.child_by_field_name("condition") {
                    self.expr(pf, c, Ctx::Read);
                }
                for f in ["consequence", "alternative", "body"] {
                    if let Some(b) = n.child_by_field_name(f) {
                        self.stmt(pf, b);
                    }
                }
            }
            "else_clause" => {
                let mut c = n.walk();
                let kids: Vec<Node<'_>> = n.named_children(&mut c).collect();
                for k in kids {
                    self.stmt(pf, k);
                }
            }
            "for_statement" => {
                self.scopes.push(HashMap::new());
                if let Some(i) = n.child_by_field_name("initializer") {
                    if i.kind() == "declaration" {
                        self.local_decl(pf, i);
                    } else {
                        self.expr(pf, i, Ctx::Read);
                    }
                }
                for f in ["condition", "update"] {
                    if let Some(e) = n.child_by_field_name(f) {
                        self.expr(pf, e, Ctx::Read);
                    }
                }
                if let Some(b) = n.child_by_field_name("body") {
                    self.stmt(pf, b);
                }
                self.scopes.pop();
            }
            "case_statement" => {
                if let Some(v) = n.child_by_field_name("value") {
                    self.expr(pf, v, Ctx::Read);
                }
                let mut c = n.walk();
                let kids: Vec<Node<'_>> = n
                    .named_children(&mut c)
                    .filter(|k| Some(*k) != n.child_by_field_name("value"))
                    .collect();
                for k in kids {
                    self.stmt(pf, k);
                }
            }
            "labeled_statement" | "attributed_statement" => {
                let mut c = n.walk();
                let kids: Vec<Node<'_>> = n
                    .named_children(&mut c)
                    .filter(|k| k.kind() != "statement_identifier")
                    .collect();
                for k in kids {
                    self.stmt(pf, k);
                }
            }
            "goto_statement"
            | "break_statement"
            | "continue_statement"
            | "comment"
            | "type_definition"
            | "struct_specifier"
            | "enum_specifier"
            | "union_specifier"
            | "preproc_def"
            | "preproc_function_def"
            | "preproc_call"
            | "preproc_include" => {}
            "preproc_if" | "preproc_ifdef" | "preproc_else" | "preproc_elif" => {
                let mut c = n.walk();
                let kids: Vec<Node<'_>> = n
                    .named_children(&mut c)
                    .filter(|k| Some(*k) != n.child_by_field_name("condition"))
                    .filter(|k| k.kind() != "identifier")
                    .collect();
                for k in kids {
                    self.stmt(pf, k);
                }
            }
            _ => {
                // An expression in statement position, or an unknown
                // statement: walk it as an expression.
                self.expr(pf, n, Ctx::Read);
            }
        }
    }

    fn local_decl(&mut self, pf: &ParsedFile, n: Node<'_>) {
        let Some(tyn) = n.child_by_field_name("type") else {
            return;
        };
        let is_static = {
            let mut c = n.walk();
            let r = n.children(&mut c).any(|ch| {
                ch.kind() == "storage_class_specifier" && pf.node_text(ch).trim() == "static"
            });
            r
        };
        let base = self.prog.resolve(&ctype::base_type(pf, tyn));
        let inferred = pf.node_text(tyn).trim() == "__auto_type";
        let mut c = n.walk();
        let decls: Vec<Node<'_>> = n.children_by_field_name("declarator", &mut c).collect();
        for d in decls {
            let (name, ty) = ctype::apply_declarator(pf, base.clone(), d);
            let ty = self.prog.resolve(&ty);
            let Some(name) = name else { continue };
            if ty == CType::Func {
                continue; // a local function prototype
            }
            let is_const = {
                let mut c2 = n.walk();
                let r = n
                    .children(&mut c2)
                    .any(|ch| ch.kind() == "type_qualifier" && pf.node_text(ch).trim() == "const");
                r
            };
            if is_static && !is_const {
                self.facts.local_statics.push(self.site(pf, d));
            }
            let mut origins = Vec::new();
            let mut ty = ty;
            let mut field = None;
            if d.kind() == "init_declarator" {
                if let Some(v) = d.child_by_field_name("value") {
                    let info = if v.kind() == "initializer_list" {
                        self.init_list(pf, v);
                        Info::default()
                    } else {
                        self.expr(pf, v, Ctx::Read)
                    };
                    self.relate(&ty, &info);
                    if inferred {
                        // `__auto_type`: the initializer's type and member.
                        ty = info.ty.clone();
                        field = info.field.clone();
                    }
                    origins = info.origins;
                }
            }
            if let Some(scope) = self.scopes.last_mut() {
                scope.insert(
                    name,
                    Var {
                        ty,
                        origins,
                        param: None,
                        field,
                    },
                );
            }
        }
    }

    fn init_list(&mut self, pf: &ParsedFile, n: Node<'_>) {
        let mut c = n.walk();
        let kids: Vec<Node<'_>> = n.named_children(&mut c).collect();
        for k in kids {
            match k.kind() {
                "initializer_pair" => {
                    if let Some(v) = k.child_by_field_name("value") {
                        if v.kind() == "initializer_list" {
                            self.init_list(pf, v);
                        } else {
                            self.expr(pf, v, Ctx::Read);
                        }
                    }
                }
                "initializer_list" => self.init_list(pf, k),
                _ => {
                    self.expr(pf, k, Ctx::Read);
                }
            }
        }
    }

    /// Walks the body of a statement expression in a scope of its own;
    /// what its last statement, an expression, yields.
    fn statement_expression(&mut self, pf: &ParsedFile, body: Node<'_>, ctx: Ctx) -> Info {
        let mut c = body.walk();
        let kids: Vec<Node<'_>> = body
            .named_children(&mut c)
            .filter(|k| k.kind() != "comment")
            .collect();
        self.scopes.push(HashMap::new());
        let mut last = Info::default();
        for (i, k) in kids.iter().enumerate() {
            match (i + 1 == kids.len(), k.kind(), k.named_child(0)) {
                (true, "expression_statement", Some(e)) => last = self.expr(pf, e, ctx),
                _ => self.stmt(pf, *k),
            }
        }
        self.scopes.pop();
        last
    }

    /// Records what assigning `info` to something of type `target` tells.
    fn relate(&mut self, target: &CType, info: &Info) {
        let CType::Ptr(to) = target else {
            return;
        };
        if !to.is_recordish() && !matches!(**to, CType::Scalar(_)) {
            return;
        }
        if let Some((of, accessor)) = &info.pending_priv {
            if to.is_recordish() {
                self.facts.relations.push(Relation::Priv {
                    of: of.clone(),
                    ty: (**to).clone(),
                    accessor: accessor.clone(),
                });
            }
        }
        if info.ty.is_void_ptr()
            || info.ty == CType::Unknown
            || matches!(info.ty, CType::FieldOf(..))
        {
            if let Some((b, f)) = &info.field {
                self.facts.relations.push(Relation::Conv {
                    base: b.clone(),
                    field: f.clone(),
                    to: (**to).clone(),
                });
            }
        }
        if info.ty.is_void_ptr() {
            if let Some(i) = info.param {
                self.facts.relations.push(Relation::ParamConv {
                    index: i,
                    to: (**to).clone(),
                });
            }
        }
    }

    // --------------------------------------------------------------- expressions

    fn access(&mut self, pf: &ParsedFile, n: Node<'_>, base: &CType, field: &str, ctx: Ctx) {
        if !base.is_recordish() {
            return;
        }
        let at = self.site(pf, n);
        self.facts.accesses.push(FieldAccess {
            base: base.clone(),
            field: field.to_string(),
            kind: ctx.kind(),
            at,
        });
    }

    fn deref(&mut self, p: &Info) {
        let pointee = self.prog.resolve(&p.ty.pointee());
        self.facts.derefs.push(Deref {
            origins: p.origins.clone(),
            pointee,
        });
    }

    fn ptr_use(&mut self, pf: &ParsedFile, n: Node<'_>, p: &Info, kind: PtrUseKind, ctx: Ctx) {
        self.deref(p);
        if p.origins.is_empty() {
            return;
        }
        let at = self.site(pf, n);
        self.facts.ptr_uses.push(PtrUse {
            origins: p.origins.clone(),
            kind,
            access: ctx.kind(),
            ty: p.ty.clone(),
            at,
        });
    }

    fn expr(&mut self, pf: &ParsedFile, n: Node<'_>, ctx: Ctx) -> Info {
        match n.kind() {
            "identifier" => self.ident(pf, n, ctx),
            "field_expression" => {
                let Some(arg) = n.child_by_field_name("argument") else {
                    return Info::default();
                };
                let field = n
                    .child_by_field_name("field")
                    .map(|f| pf.node_text(f).to_string())
                    .unwrap_or_default();
                let arrow = n
                    .child_by_field_name("operator")
                    .map(|o| pf.node_text(o) == "->")
                    .unwrap_or_else(|| pf.node_text(n).contains("->"));
                let base_ty = if arrow {
                    let a = self.expr(pf, arg, Ctx::Read);
                    self.deref(&a);
                    let t = a.ty.pointee();
                    // `p->f` where p is a void * parameter converted by a cast
                    // is handled by the cast; an unknown pointee stays unknown.
                    t
                } else {
                    let a = self.expr(pf, arg, Ctx::Embed);
                    a.ty
                };
                let base_ty = self.prog.resolve(&base_ty);
                self.access(pf, n, &base_ty, &field, ctx);
                let fty = self.prog.resolve(&self.prog.field_type(&base_ty, &field));
                let mut info = Info {
                    ty: fty,
                    ..Default::default()
                };
                if base_ty.is_recordish() {
                    if ctx == Ctx::Addr {
                        info.origins = vec![Origin::FieldAddr(base_ty.clone(), field.clone())];
                    } else {
                        info.origins = vec![Origin::FieldVal(base_ty.clone(), field.clone())];
                        info.field = Some((base_ty, field));
                    }
                }
                info
            }
            "subscript_expression" => {
                let Some(arg) = n.child_by_field_name("argument") else {
                    return Info::default();
                };
                let idx = n
                    .child_by_field_name("index")
                    .or_else(|| n.child_by_field_name("indices"));
                let zero = idx.is_some_and(|i| pf.node_text(i).trim() == "0");
                if let Some(i) = idx {
                    self.expr(pf, i, Ctx::Read);
                }
                // Peek at the type without recording, to decide how to walk.
                let is_array = self
                    .peek_type(pf, arg)
                    .is_some_and(|t| matches!(t, CType::Array(..)));
                if is_array {
                    let inner_ctx = if ctx == Ctx::Embed { Ctx::Embed } else { ctx };
                    let inner_ctx = if inner_ctx == Ctx::Addr {
                        Ctx::ReadWrite
                    } else {
                        inner_ctx
                    };
                    let a = self.expr(pf, arg, inner_ctx);
                    let mut info = Info {
                        ty: a.ty.pointee(),
                        ..Default::default()
                    };
                    if ctx == Ctx::Addr {
                        info.origins = a
                            .origins
                            .iter()
                            .map(|o| match o {
                                Origin::FieldVal(b, f) => Origin::FieldAddr(b.clone(), f.clone()),
                                Origin::Global(g) => Origin::GlobalAddr(g.clone()),
                                other => other.clone(),
                            })
                            .collect();
                    }
                    info
                } else {
                    let a = self.expr(pf, arg, Ctx::Read);
                    let kind = if zero {
                        PtrUseKind::Subscript0
                    } else {
                        PtrUseKind::Index
                    };
                    let uctx = if ctx == Ctx::Embed || ctx == Ctx::Addr {
                        Ctx::ReadWrite
                    } else {
                        ctx
                    };
                    if ctx != Ctx::Embed {
                        self.ptr_use(pf, n, &a, kind, uctx);
                    } else {
                        self.ptr_use(pf, n, &a, kind, Ctx::Read);
                    }
                    Info {
                        ty: self.prog.resolve(&a.ty.pointee()),
                        origins: if ctx == Ctx::Addr {
                            a.origins
                        } else {
                            Vec::new()
                        },
                        ..Default::default()
                    }
                }
            }
            "pointer_expression" => {
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| pf.node_text(o).to_string())
                    .unwrap_or_default();
                let Some(arg) = n.child_by_field_name("argument") else {
                    return Info::default();
                };
                if op == "&" {
                    let a = self.expr(pf, arg, Ctx::Addr);
                    let origins = if a.origins.is_empty() {
                        vec![Origin::Stack]
                    } else {
                        a.origins
                    };
                    Info {
                        ty: CType::ptr(a.ty),
                        origins,
                        global_addr: a.global_addr,
                        ..Default::default()
                    }
                } else {
                    let a = self.expr(pf, arg, Ctx::Read);
                    let uctx = match ctx {
                        Ctx::Embed | Ctx::Addr => Ctx::Read,
                        c => c,
                    };
                    if ctx != Ctx::Embed && ctx != Ctx::Addr {
                        self.ptr_use(pf, n, &a, PtrUseKind::Deref, uctx);
                    }
                    let ty = self.prog.resolve(&a.ty.pointee());
                    Info {
                        ty,
                        origins: if ctx == Ctx::Addr {
                            a.origins
                        } else {
                            Vec::new()
                        },
                        ..Default::default()
                    }
                }
            }
            "call_expression" => self.call(pf, n),
            "assignment_expression" => {
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| pf.node_text(o).to_string())
                    .unwrap_or_else(|| "=".into());
                let lctx = if op == "=" {
                    Ctx::Write
                } else {
                    Ctx::ReadWrite
                };
                let right = n
                    .child_by_field_name("right")
                    .map(|r| self.expr(pf, r, Ctx::Read))
                    .unwrap_or_default();
                let Some(left) = n.child_by_field_name("left") else {
                    return right;
                };
                let l = self.expr(pf, left, lctx);
                self.relate(&l.ty, &right);
                if left.kind() == "identifier" {
                    let name = pf.node_text(left).to_string();
                    if let Some(v) = self.lookup_mut(&name) {
                        for o in right.origins.iter() {
                            if !v.origins.contains(o) {
                                v.origins.push(o.clone());
                            }
                        }
                    }
                }
                // The value of an assignment is not a read of the member it
                // stored to: a model such as if_mii's `(rq)->ifr_ifru =
                // (rq)->ifr_ifru` (the union copied in and out) must not make
                // that member look like a pointer the caller converts.
                Info { field: None, ..l }
            }
            "update_expression" => match n.child_by_field_name("argument") {
                Some(a) => {
                    let i = self.expr(pf, a, Ctx::ReadWrite);
                    if i.ty.is_pointer() {
                        self.ptr_use(pf, n, &i, PtrUseKind::Arith, Ctx::Read);
                    }
                    i
                }
                None => Info::default(),
            },
            "cast_expression" => {
                let ty = n
                    .child_by_field_name("type")
                    .map(|t| self.prog.resolve(&ctype::type_descriptor(pf, t)))
                    .unwrap_or_default();
                let v = n
                    .child_by_field_name("value")
                    .map(|v| self.expr(pf, v, ctx_value(ctx)))
                    .unwrap_or_default();
                self.relate(&ty, &v);
                Info {
                    ty,
                    origins: v.origins,
                    field: None,
                    param: None,
                    pending_priv: None,
                    global_addr: v.global_addr,
                }
            }
            "parenthesized_expression" => {
                let mut c = n.walk();
                let kids: Vec<Node<'_>> = n.named_children(&mut c).collect();
                let mut last = Info::default();
                for k in kids {
                    if k.kind() == "compound_statement" {
                        // A statement expression: its value is its last
                        // expression statement's (`({ ... __fgft_v; })`).
                        last = self.statement_expression(pf, k, ctx);
                    } else {
                        last = self.expr(pf, k, ctx);
                    }
                }
                last
            }
            "comma_expression" => {
                if let Some(l) = n.child_by_field_name("left") {
                    self.expr(pf, l, Ctx::Read);
                }
                n.child_by_field_name("right")
                    .map(|r| self.expr(pf, r, ctx))
                    .unwrap_or_default()
            }
            "conditional_expression" => {
                if let Some(c) = n.child_by_field_name("condition") {
                    self.expr(pf, c, Ctx::Read);
                }
                let a = n
                    .child_by_field_name("consequence")
                    .map(|x| self.expr(pf, x, ctx))
                    .unwrap_or_default();
                let b = n
                    .child_by_field_name("alternative")
                    .map(|x| self.expr(pf, x, ctx))
                    .unwrap_or_default();
                let mut origins = a.origins.clone();
                for o in b.origins {
                    if !origins.contains(&o) {
                        origins.push(o);
                    }
                }
                Info {
                    ty: if a.ty != CType::Unknown { a.ty } else { b.ty },
                    origins,
                    // Both branches read the same member (fgft-cc inject's
                    // `0 ? (p->m) : (p->m)`): so does the expression.
                    field: a.field.filter(|f| b.field.as_ref() == Some(f)),
                    ..Default::default()
                }
            }
            "binary_expression" => {
                let l = n
                    .child_by_field_name("left")
                    .map(|x| self.expr(pf, x, Ctx::Read))
                    .unwrap_or_default();
                let r = n
                    .child_by_field_name("right")
                    .map(|x| self.expr(pf, x, Ctx::Read))
                    .unwrap_or_default();
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| pf.node_text(o).to_string())
                    .unwrap_or_default();
                if op == "+" || op == "-" {
                    if l.ty.is_pointer() && !r.ty.is_pointer() {
                        self.ptr_use(pf, n, &l, PtrUseKind::Arith, Ctx::Read);
                        return Info {
                            ty: l.ty,
                            origins: l.origins,
                            ..Default::default()
                        };
                    }
                    if r.ty.is_pointer() && !l.ty.is_pointer() && op == "+" {
                        self.ptr_use(pf, n, &r, PtrUseKind::Arith, Ctx::Read);
                        return Info {
                            ty: r.ty,
                            origins: r.origins,
                            ..Default::default()
                        };
                    }
                }
                Info::default()
            }
            "unary_expression" => {
                if let Some(a) = n.child_by_field_name("argument") {
                    self.expr(pf, a, Ctx::Read);
                }
                Info::default()
            }
            "sizeof_expression"
            | "alignof_expression"
            | "offsetof_expression"
            | "generic_expression" => Info {
                ty: CType::Scalar("size_t".into()),
                ..Default::default()
            },
            "compound_literal_expression" => {
                let ty = n
                    .child_by_field_name("type")
                    .map(|t| ctype::type_descriptor(pf, t))
                    .unwrap_or_default();
                if let Some(v) = n.child_by_field_name("value") {
                    self.init_list(pf, v);
                }
                Info {
                    ty,
                    ..Default::default()
                }
            }
            "initializer_list" => {
                self.init_list(pf, n);
                Info::default()
            }
            "compound_statement" => {
                self.stmt(pf, n);
                Info::default()
            }
            "string_literal"
            | "concatenated_string"
            | "number_literal"
            | "char_literal"
            | "true"
            | "false"
            | "null"
            | "comment"
            | "primitive_type"
            | "type_descriptor" => Info::default(),
            "gnu_asm_expression" => {
                let mut stack = vec![n];
                while let Some(x) = stack.pop() {
                    if x.kind() == "gnu_asm_input_operand" || x.kind() == "gnu_asm_output_operand" {
                        if let Some(v) = x.child_by_field_name("value") {
                            let c = if x.kind() == "gnu_asm_output_operand" {
                                Ctx::Write
                            } else {
                                Ctx::Read
                            };
                            self.expr(pf, v, c);
                        }
                        continue;
                    }
                    let mut c = x.walk();
                    stack.extend(x.named_children(&mut c));
                }
                Info::default()
            }
            _ => {
                // Statements inside expressions (statement expressions) or
                // unknown nodes: walk children as statements.
                let mut c = n.walk();
                let kids: Vec<Node<'_>> = n.named_children(&mut c).collect();
                for k in kids {
                    if is_statement(k.kind()) {
                        self.stmt(pf, k);
                    } else {
                        self.expr(pf, k, Ctx::Read);
                    }
                }
                Info::default()
            }
        }
    }

    /// The type of an expression without recording anything.
    fn peek_type(&self, pf: &ParsedFile, n: Node<'_>) -> Option<CType> {
        match n.kind() {
            "identifier" => {
                let name = pf.node_text(n);
                if let Some(v) = self.lookup(name) {
                    return Some(v.ty.clone());
                }
                self.prog.global(name).map(|g| g.ty.clone())
            }
            "field_expression" => {
                let arg = n.child_by_field_name("argument")?;
                let field = pf.node_text(n.child_by_field_name("field")?);
                let at = self.peek_type(pf, arg)?;
                let arrow = pf.node_text(n).contains("->")
                    && n.child_by_field_name("operator")
                        .map(|o| pf.node_text(o) == "->")
                        .unwrap_or(true);
                let base = if arrow { at.pointee() } else { at };
                Some(
                    self.prog
                        .resolve(&self.prog.field_type(&self.prog.resolve(&base), field)),
                )
            }
            "parenthesized_expression" => self.peek_type(pf, n.named_child(0)?),
            "subscript_expression" => Some(
                self.peek_type(pf, n.child_by_field_name("argument")?)?
                    .pointee(),
            ),
            "pointer_expression" => {
                let a = self.peek_type(pf, n.child_by_field_name("argument")?)?;
                let op = n.child_by_field_name("operator").map(|o| pf.node_text(o));
                Some(if op == Some("&") {
                    CType::ptr(a)
                } else {
                    a.pointee()
                })
            }
            "cast_expression" => Some(ctype::type_descriptor(pf, n.child_by_field_name("type")?)),
            _ => None,
        }
    }

    fn ident(&mut self, pf: &ParsedFile, n: Node<'_>, ctx: Ctx) -> Info {
        let name = pf.node_text(n).to_string();
        if let Some(v) = self.lookup(&name) {
            let mut info = Info {
                ty: v.ty.clone(),
                origins: v.origins.clone(),
                param: v.param,
                field: v.field.clone(),
                ..Default::default()
            };
            if ctx == Ctx::Addr {
                info.origins = vec![Origin::Stack];
                info.field = None;
            }
            return info;
        }
        if self.prog.is_fn(&name) {
            if self.in_header == 0 {
                let at = self.site(pf, n);
                self.facts.fn_refs.push((name, at));
            }
            return Info {
                ty: CType::ptr(CType::Func),
                ..Default::default()
            };
        }
        if let Some(g) = self.prog.global(&name) {
            let ty = g.ty.clone();
            let at = self.site(pf, n);
            let kind = match ctx {
                // An array global used as a value decays to its address.
                Ctx::Read if matches!(ty, CType::Array(..)) => AccessKind::Addr,
                c => c.kind(),
            };
            let idx = self.facts.globals.len();
            self.facts.globals.push(GlobalRef {
                name: name.clone(),
                kind,
                kobj_only: false,
                at,
            });
            let origins = if kind == AccessKind::Addr {
                vec![Origin::GlobalAddr(name)]
            } else {
                vec![Origin::Global(name)]
            };
            return Info {
                ty,
                origins,
                global_addr: if kind == AccessKind::Addr {
                    Some(idx)
                } else {
                    None
                },
                ..Default::default()
            };
        }
        // An object-like driver macro that names driver globals or
        // functions (ns83820's `SPDSTS_POLARITY` reads `lnksts`): its
        // expansion is walked, as a function-like macro's is.
        if let Some(m) = self.prog.macros.get(&name) {
            let names_driver = || {
                fgft_base::lex::ident_tokens(&m.body).into_iter().any(|r| {
                    let t = &m.body[r.start..r.end];
                    t != name && (self.prog.global(t).is_some() || self.prog.is_fn(t))
                })
            };
            if m.params.is_none()
                && !self.expanding.contains(&name)
                && self.expanding.len() < MAX_EXPANSION_DEPTH
                && names_driver()
            {
                let body = m.body.clone();
                return self.walk_expansion(pf, n, &name, &body, true);
            }
        }
        if self.kglobals.contains(&name) {
            self.facts.kernel_globals.insert(name);
        }
        Info::default()
    }

    /// Whether the callee `func` of a call reads as casts: `(T)` with `T` a
    /// name that is no local, parameter, global or function (a type name),
    /// or such a cast applied to another (`(__u32)(__le32)`).
    fn is_cast_chain(&self, pf: &ParsedFile, func: Node<'_>) -> bool {
        let type_name = |n: Node<'_>| {
            n.kind() == "identifier" && {
                let name = pf.node_text(n);
                self.lookup(name).is_none()
                    && !self.prog.is_fn(name)
                    && self.prog.global(name).is_none()
            }
        };
        match func.kind() {
            "parenthesized_expression" => {
                func.named_child_count() == 1 && func.named_child(0).is_some_and(type_name)
            }
            "call_expression" => {
                let inner = func.child_by_field_name("function");
                let args = func.child_by_field_name("arguments");
                inner.is_some_and(|f| self.is_cast_chain(pf, f))
                    && args.is_some_and(|a| {
                        a.named_child_count() == 1 && a.named_child(0).is_some_and(type_name)
                    })
            }
            _ => false,
        }
    }

    /// Records a call through a pointer: its arguments walked, the
    /// functions they name, where the pointer comes from.
    fn indirect_call(
        &mut self,
        pf: &ParsedFile,
        n: Node<'_>,
        text: String,
        callee: Callee,
        arg_nodes: &[Node<'_>],
    ) -> Info {
        let mut args = Vec::new();
        let mut names = Vec::new();
        for a in arg_nodes {
            args.push(self.expr(pf, *a, Ctx::Read).origins);
            names.push(self.function_named(pf, *a));
        }
        let at = self.site(pf, n);
        let mut c = CallSite::new(CallTarget::Indirect(text), at, args, self.via_macro.clone());
        c.callee = Some(callee);
        c.arg_names = names;
        self.facts.calls.push(c);
        Info::default()
    }

    /// The function an argument names (`f`, `&f`, `(void *)f`): a driver
    /// function, or an identifier that is no variable of the driver (a
    /// kernel function or macro; the resolver tells which).
    fn function_named(&self, pf: &ParsedFile, a: Node<'_>) -> Option<String> {
        let a = fgft_parse::walk::under_casts(&pf.text, a);
        if a.kind() != "identifier" {
            return None;
        }
        let t = pf.node_text(a);
        let var = self.lookup(t).is_some() || self.prog.global(t).is_some();
        (!var && !self.prog.enumerators.contains(t)).then(|| t.to_string())
    }

    fn call(&mut self, pf: &ParsedFile, n: Node<'_>) -> Info {
        let Some(func) = n.child_by_field_name("function") else {
            return Info::default();
        };
        let args_node = n.child_by_field_name("arguments");
        let arg_nodes: Vec<Node<'_>> = match args_node {
            Some(a) => {
                let mut c = a.walk();
                let v: Vec<Node<'_>> = a
                    .named_children(&mut c)
                    .filter(|k| k.kind() != "comment")
                    .collect();
                v
            }
            None => Vec::new(),
        };
        // `(u16)(x)`: tree-sitter cannot tell a cast to a typedef name from a
        // call; a parenthesized name that is no variable is a type.
        if func.kind() == "parenthesized_expression" {
            if let Some(inner) = func.named_child(0).filter(|i| i.kind() == "identifier") {
                let t = pf.node_text(inner);
                if self.lookup(t).is_none() && self.prog.global(t).is_none() && !self.prog.is_fn(t)
                {
                    let mut last = Info::default();
                    for a in &arg_nodes {
                        last = self.expr(pf, *a, Ctx::Read);
                    }
                    return Info {
                        ty: self.prog.resolve(&ctype::from_text(t)),
                        origins: last.origins,
                        ..Default::default()
                    };
                }
            }
        }
        // `(typeof(x))(y)` (kernel helpers cast with it): a cast, no call.
        let typeof_cast = func.kind() == "parenthesized_expression"
            && func.named_child(0).is_some_and(|i| {
                i.kind() == "call_expression"
                    && i.child_by_field_name("function").is_some_and(|f| {
                        matches!(
                            pf.node_text(f),
                            "typeof" | "__typeof__" | "__typeof" | "typeof_unqual"
                        )
                    })
            });
        if typeof_cast {
            let mut last = Info::default();
            for a in &arg_nodes {
                last = self.expr(pf, *a, Ctx::Read);
            }
            return last;
        }
        if func.kind() != "identifier" && func.has_error() {
            // No callee tree-sitter could read (an expansion's `##args`
            // and such): nothing to call through.
            for a in &arg_nodes {
                self.expr(pf, *a, Ctx::Read);
            }
            return Info::default();
        }
        if self.is_cast_chain(pf, func) {
            // `(__u32)(__le32)(x)`: casts to type names tree-sitter does not
            // know (a kernel helper's `__force` casts), not calls.
            let mut last = Info::default();
            for a in &arg_nodes {
                last = self.expr(pf, *a, Ctx::Read);
            }
            return last;
        }
        if func.kind() != "identifier" {
            // Through a pointer (`ops->f(x)`, `(*fp)(x)`): where the pointer
            // comes from is the value of the expression under the `*`.
            let text = pf.node_text(func).to_string();
            let ptr = pointer_of_callee(pf, func);
            let info = self.expr(pf, ptr, Ctx::Read);
            let local = (ptr.kind() == "identifier")
                .then(|| pf.node_text(ptr).to_string())
                .filter(|l| self.lookup(l).is_some());
            let callee = Callee {
                origins: info.origins,
                local,
                expansion: self.expanding.last().cloned(),
            };
            return self.indirect_call(pf, n, text, callee, &arg_nodes);
        }
        let name = pf.node_text(func).to_string();
        // `typeof(x)` (a kernel macro's body spells types with it) reads
        // like a call to tree-sitter: it is no call, and nothing in it runs.
        if matches!(
            name.as_str(),
            "typeof" | "__typeof__" | "__typeof" | "typeof_unqual"
        ) {
            return Info::default();
        }
        // A local function pointer (a parameter too), or a global one.
        let is_global_ptr = !self.prog.is_fn(&name) && self.prog.global(&name).is_some();
        if self.lookup(&name).is_some() || is_global_ptr {
            let info = self.expr(pf, func, Ctx::Read);
            let callee = Callee {
                origins: info.origins,
                local: self.lookup(&name).is_some().then(|| name.clone()),
                expansion: self.expanding.last().cloned(),
            };
            return self.indirect_call(pf, n, name, callee, &arg_nodes);
        }
        // A driver function, or a macro naming one.
        let name = match self.prog.fn_alias(&name) {
            Some(f) if !self.prog.is_fn(&name) => f.to_string(),
            _ => name,
        };
        if self.prog.is_fn(&name) {
            let mut args = Vec::new();
            let mut names = Vec::new();
            // Passing converts as assigning does (`MSDOS_SB(inode->i_sb)`).
            let ptys: Vec<CType> = self
                .prog
                .def(&name)
                .map(|d| d.params.iter().map(|p| self.prog.resolve(&p.ty)).collect())
                .unwrap_or_default();
            for (k, a) in arg_nodes.iter().enumerate() {
                let i = self.expr(pf, *a, Ctx::Read);
                if let Some(t) = ptys.get(k) {
                    self.relate(t, &i);
                }
                args.push(i.origins);
                names.push(self.function_named(pf, *a));
            }
            let at = self.site(pf, n);
            let mut c = CallSite::new(
                CallTarget::Driver(name.clone()),
                at,
                args,
                self.via_macro.clone(),
            );
            c.arg_names = names;
            self.facts.calls.push(c);
            let ret = self
                .prog
                .def(&name)
                .map(|d| d.ret.clone())
                .unwrap_or_default();
            return Info {
                ty: ret,
                ..Default::default()
            };
        }
        // A driver macro: walk its expansion.
        if let Some(m) = self.prog.call_macro(&name) {
            if let Some(list) = &m.params {
                if !self.expanding.contains(&name) && self.expanding.len() < MAX_EXPANSION_DEPTH {
                    let params = MacroParams::from_list(list, &m.params_raw);
                    let args: Vec<String> = arg_nodes
                        .iter()
                        .map(|a| pf.node_text(*a).to_string())
                        .collect();
                    let text = macros::expand(&params, &m.body, &args);
                    let body = m.body.clone();
                    let _ = body;
                    return self.walk_expansion(pf, n, &name, &text, true);
                }
            }
        }
        // container_of(p, type, member).  A driver macro that renames a
        // kernel function is that function's model.
        let model = self.apis.get(&name).cloned().or_else(|| {
            self.prog
                .kernel_alias(&name)
                .and_then(|a| self.apis.get(a))
                .cloned()
        });
        if let Some(m) = &model {
            if m.returns == Returns::Container && arg_nodes.len() >= 3 {
                let inner = self.expr(pf, arg_nodes[0], Ctx::Read);
                let outer = ctype::from_text(pf.node_text(arg_nodes[1]));
                let member = pf.node_text(arg_nodes[2]).trim().to_string();
                self.facts.relations.push(Relation::Container {
                    inner: inner.ty.pointee(),
                    outer: outer.clone(),
                    member,
                });
                let at = self.site(pf, n);
                self.facts.calls.push(CallSite::new(
                    CallTarget::Kernel(name.clone()),
                    at,
                    vec![inner.origins],
                    self.via_macro.clone(),
                ));
                return Info {
                    ty: CType::ptr(self.prog.resolve(&outer)),
                    ..Default::default()
                };
            }
        }
        // A kernel function.
        let mut args = Vec::new();
        let mut infos = Vec::new();
        for (i, a) in arg_nodes.iter().enumerate() {
            let kind = model
                .as_ref()
                .and_then(|m| m.params.get(i))
                .map(|p| p.1.clone())
                .unwrap_or(ArgKind::Val);
            let info = self.expr(pf, *a, Ctx::Read);
            match &kind {
                ArgKind::Out(len) => {
                    self.ptr_use(pf, *a, &info, PtrUseKind::Sized(len.clone()), Ctx::Write)
                }
                ArgKind::In(len) => {
                    self.ptr_use(pf, *a, &info, PtrUseKind::Sized(len.clone()), Ctx::Read)
                }
                ArgKind::InOut(len) => self.ptr_use(
                    pf,
                    *a,
                    &info,
                    PtrUseKind::Sized(len.clone()),
                    Ctx::ReadWrite,
                ),
                ArgKind::InStr => self.ptr_use(pf, *a, &info, PtrUseKind::Str, Ctx::Read),
                ArgKind::Kobj => {
                    if let Some(gi) = info.global_addr {
                        if let Some(g) = self.facts.globals.get_mut(gi) {
                            g.kobj_only = true;
                        }
                    }
                }
                ArgKind::Val | ArgKind::Func => {}
            }
            args.push(info.origins.clone());
            infos.push(info);
        }
        let at = self.site(pf, n);
        self.facts.calls.push(CallSite::new(
            CallTarget::Kernel(name.clone()),
            at,
            args,
            self.via_macro.clone(),
        ));
        let Some(m) = model else {
            return Info::default();
        };
        // Walk the model for its field accesses.
        let mut model_info = Info::default();
        if let Some(model_text) = &m.model {
            if !self.expanding.contains(&name) && self.expanding.len() < MAX_EXPANSION_DEPTH {
                let params = MacroParams {
                    names: m.params.iter().map(|p| p.0.clone()).collect(),
                    variadic: None,
                };
                // Arguments parenthesized (the model is an expression), but
                // a bare name as it is: a model may paste it
                // (`stats.__##FIELD` of DEV_STATS_READ).
                let args: Vec<String> = arg_nodes
                    .iter()
                    .map(|a| {
                        let t = pf.node_text(*a);
                        if !t.is_empty() && t.bytes().all(fgft_base::ident::is_byte) {
                            t.to_string()
                        } else {
                            format!("({t})")
                        }
                    })
                    .collect();
                let text = macros::expand(&params, model_text, &args);
                self.in_header += usize::from(m.header);
                model_info = self.walk_expansion(pf, n, &name, &text, m.header);
                self.in_header -= usize::from(m.header);
            }
        }
        match m.returns {
            Returns::Priv => Info {
                ty: CType::ptr(CType::Void),
                pending_priv: infos.first().map(|i| (i.ty.pointee(), name.clone())),
                ..Default::default()
            },
            Returns::Fresh => Info {
                ty: CType::ptr(CType::Void),
                origins: vec![Origin::Fresh],
                ..Default::default()
            },
            // A helper modeled by an expression yields that expression
            // (`snd_kcontrol_chip(k)` is `k->private_data`).
            _ => model_info,
        }
    }

    /// Parses an expansion and walks it in the current scope, attributing
    /// everything to the use at `n`.
    fn walk_expansion(
        &mut self,
        pf: &ParsedFile,
        n: Node<'_>,
        name: &str,
        text: &str,
        record_macro: bool,
    ) -> Info {
        let key = text.to_string();
        let parsed = match self.cache.get(&key) {
            Some(p) => p.clone(),
            None => {
                let src = format!("void __fgft_expansion(void)\n{{\n{text};\n}}\n");
                let p = fgft_parse::parse_text(Path::new("<expansion>"), src)
                    .ok()
                    .map(Rc::new);
                self.cache.insert(key, p.clone());
                p
            }
        };
        let Some(sub) = parsed else {
            return Info::default();
        };
        let outer_site = self.site(pf, n);
        let saved_site = self.site.replace(outer_site);
        let saved_macro = if record_macro && self.via_macro.is_none() {
            self.via_macro.replace(name.to_string())
        } else {
            self.via_macro.clone()
        };
        self.expanding.push(name.to_string());
        self.returned.push(None);
        let mut result = Info::default();
        let root = sub.tree.root_node();
        let body = root
            .named_child(0)
            .and_then(|f| f.child_by_field_name("body"));
        if let Some(body) = body {
            let mut c = body.walk();
            let kids: Vec<Node<'_>> = body.named_children(&mut c).collect();
            if kids.len() == 1 && kids[0].kind() == "expression_statement" {
                if let Some(e) = kids[0].named_child(0) {
                    result = self.expr(&sub, e, Ctx::Read);
                }
            } else {
                for k in kids {
                    self.stmt(&sub, k);
                }
            }
        }
        if let Some(Some(r)) = self.returned.pop() {
            result = r;
        }
        self.expanding.pop();
        self.site = saved_site;
        self.via_macro = saved_macro;
        result
    }
}

/// Adds what one `return` of an expansion yields to what the others did:
/// the first type, every origin.
fn merge_returned(slot: &mut Option<Info>, info: Info) {
    match slot {
        None => *slot = Some(info),
        Some(r) => {
            for o in info.origins {
                if !r.origins.contains(&o) {
                    r.origins.push(o);
                }
            }
            if r.ty == CType::Unknown {
                r.ty = info.ty;
            }
        }
    }
}

fn ctx_value(ctx: Ctx) -> Ctx {
    match ctx {
        Ctx::Write | Ctx::ReadWrite | Ctx::Embed | Ctx::Addr => ctx,
        Ctx::Read => Ctx::Read,
    }
}

fn is_statement(kind: &str) -> bool {
    kind.ends_with("_statement") || kind == "declaration"
}

/// The pointer a callee expression calls through: `(*fp)` and `(fp)` are
/// calls through `fp`.
fn pointer_of_callee<'t>(pf: &ParsedFile, mut f: Node<'t>) -> Node<'t> {
    loop {
        match f.kind() {
            "parenthesized_expression" => match f.named_child(0) {
                Some(x) => f = x,
                None => return f,
            },
            "pointer_expression" if pf.node_text(f).trim_start().starts_with('*') => {
                match f.child_by_field_name("argument") {
                    Some(x) => f = x,
                    None => return f,
                }
            }
            _ => return f,
        }
    }
}

#[cfg(test)]
mod tests;

//! A small C type model, enough to say which struct a member access is on.
//!
//! Facts come from tree-sitter trees: the driver's own .c and .h files (with
//! fgft-parse's macro hints) and, when a kernel tree is given, one
//! Kbuild-preprocessed unit holding the kernel headers the driver includes
//! ([`crate::kbuild::kernel_unit`]).  Driver facts win over kernel facts.

use fgft_base::ident;
use fgft_parse::ParsedFile;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use tree_sitter::Node;

/// A struct or union, by tag; anonymous ones get a synthetic tag `@file:offset`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordKey {
    pub union: bool,
    pub tag: String,
}

impl RecordKey {
    pub fn is_anon(&self) -> bool {
        self.tag.starts_with('@')
    }
}

/// A C type, as far as join points need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    Unknown,
    Void,
    /// Arithmetic or enum.
    Scalar,
    /// A typedef name, resolved through [`TypeEnv::resolve`].
    Named(String),
    Record(RecordKey),
    Ptr(Box<Ty>),
    Array(Box<Ty>),
    Func(Box<Ty>),
}

/// A declaration's text with the declared name cut out, so the same type can
/// be declared under another name: `before NAME after`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CDecl {
    pub before: String,
    pub after: String,
}

impl CDecl {
    pub fn declare(&self, name: &str) -> String {
        let sep =
            if self.before.ends_with('*') || self.before.ends_with('(') || self.before.is_empty() {
                ""
            } else {
                " "
            };
        format!("{}{sep}{name}{}", self.before, self.after)
    }

    pub fn void_ptr() -> CDecl {
        CDecl {
            before: "void *".into(),
            after: String::new(),
        }
    }

    /// The type alone (an abstract declarator), for casts and messages.
    pub fn type_name(&self) -> String {
        format!("{}{}", self.before, self.after).trim().to_string()
    }
}

/// A struct or union member.
#[derive(Debug, Clone)]
pub struct Member {
    /// `None` for an anonymous struct or union member.
    pub name: Option<String>,
    pub ty: Ty,
    pub bitfield: bool,
}

/// A struct or union definition.
#[derive(Debug, Clone)]
pub struct RecordDef {
    pub key: RecordKey,
    pub members: Vec<Member>,
    pub file: PathBuf,
    pub line: usize,
}

/// A function parameter.
#[derive(Debug, Clone)]
pub struct Param {
    pub name: Option<String>,
    pub ty: Ty,
    pub decl: Option<CDecl>,
}

/// A function's signature.
#[derive(Debug, Clone)]
pub struct FnSig {
    pub ret: Ty,
    /// The return type as text (None when the declarator is too involved).
    pub ret_decl: Option<CDecl>,
    pub params: Vec<Param>,
    pub variadic: bool,
}

/// A variable: its type and its declaration text.
#[derive(Debug, Clone)]
pub struct Var {
    pub ty: Ty,
    pub decl: Option<CDecl>,
}

/// Where a name was defined.
#[derive(Debug, Clone)]
pub struct Origin {
    pub file: PathBuf,
    /// Whether it comes from the kernel unit (not a driver file).
    pub kernel: bool,
}

/// Everything known about types.
#[derive(Debug, Default)]
pub struct TypeEnv {
    pub records: HashMap<RecordKey, RecordDef>,
    pub typedefs: HashMap<String, (Ty, Option<CDecl>, Origin)>,
    pub funcs: HashMap<String, FnSig>,
    pub globals: HashMap<String, Var>,
    /// Function-like macros defined in the driver's files.
    pub macros: HashSet<String>,
    /// Typedef names that name a record directly.
    pub aliases: HashMap<RecordKey, Vec<String>>,
    /// Where each enum and record tag was defined.
    pub tag_origin: HashMap<String, Origin>,
    /// Whether kernel facts were loaded.
    pub has_kernel: bool,
}

/// Collapses whitespace and drops comments.
pub fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    let mut space = false;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i = s[i + 2..]
                .find("*/")
                .map(|k| i + 2 + k + 2)
                .unwrap_or(b.len());
            space = true;
            continue;
        }
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            i = s[i..].find('\n').map(|k| i + k).unwrap_or(b.len());
            continue;
        }
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
            i += 2;
            space = true;
            continue;
        }
        if b[i].is_ascii_whitespace() {
            space = true;
            i += 1;
            continue;
        }
        if space && !out.is_empty() {
            let last = out.as_bytes()[out.len() - 1];
            let c = b[i];
            // Keep a space between words; drop it around punctuation.
            if (ident::is_byte(last) && (ident::is_byte(c) || c == b'*' || c == b'('))
                || last == b','
            {
                out.push(' ');
            }
        }
        space = false;
        let ch = s[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// What a declarator declares.
struct Declared<'t> {
    name: Option<Node<'t>>,
    ty: Ty,
    /// Parameter list of the outermost function declarator on the name's path.
    params: Option<Node<'t>>,
}

pub(crate) struct Reader<'a> {
    pub text: &'a str,
    pub file: &'a Path,
}

impl Reader<'_> {
    pub fn t(&self, n: Node<'_>) -> &str {
        self.text.get(n.byte_range()).unwrap_or("")
    }

    /// The base type of a type specifier node.
    pub fn base(&self, n: Node<'_>, env: &mut TypeEnv, kernel: bool) -> Ty {
        match n.kind() {
            "primitive_type" => {
                if self.t(n) == "void" {
                    Ty::Void
                } else {
                    Ty::Scalar
                }
            }
            "sized_type_specifier" => match n.child_by_field_name("type") {
                Some(t) if t.kind() == "type_identifier" => Ty::Named(self.t(t).to_string()),
                _ => Ty::Scalar,
            },
            "type_identifier" => Ty::Named(self.t(n).to_string()),
            "struct_specifier" | "union_specifier" => {
                let union = n.kind() == "union_specifier";
                let key = match n.child_by_field_name("name") {
                    Some(name) => RecordKey {
                        union,
                        tag: self.t(name).to_string(),
                    },
                    None => RecordKey {
                        union,
                        tag: format!(
                            "@{}:{}",
                            self.file
                                .file_name()
                                .and_then(|f| f.to_str())
                                .unwrap_or("?"),
                            n.start_byte()
                        ),
                    },
                };
                if let Some(body) = n.child_by_field_name("body") {
                    self.record(key.clone(), body, n, env, kernel);
                }
                Ty::Record(key)
            }
            "enum_specifier" => {
                if let Some(name) = n.child_by_field_name("name") {
                    if n.child_by_field_name("body").is_some() {
                        env.tag_origin
                            .entry(self.t(name).to_string())
                            .or_insert_with(|| Origin {
                                file: self.file.to_path_buf(),
                                kernel,
                            });
                    }
                }
                Ty::Scalar
            }
            _ => Ty::Unknown,
        }
    }

    fn record(
        &self,
        key: RecordKey,
        body: Node<'_>,
        spec: Node<'_>,
        env: &mut TypeEnv,
        kernel: bool,
    ) {
        let mut members = Vec::new();
        let mut decls = Vec::new();
        collect_fields(body, &mut decls);
        for fd in decls {
            let Some(tn) = fd.child_by_field_name("type") else {
                continue;
            };
            let base = self.base(tn, env, kernel);
            let bitfield = (0..fd.child_count())
                .any(|k| fd.child(k).is_some_and(|c| c.kind() == "bitfield_clause"));
            let mut cursor = fd.walk();
            let declarators: Vec<Node<'_>> = fd
                .children_by_field_name("declarator", &mut cursor)
                .collect();
            if declarators.is_empty() {
                if matches!(base, Ty::Record(_)) {
                    members.push(Member {
                        name: None,
                        ty: base,
                        bitfield: false,
                    });
                }
                continue;
            }
            for d in declarators {
                let decl = self.declarator(d, base.clone());
                if let Some(name) = decl.name {
                    members.push(Member {
                        name: Some(self.t(name).to_string()),
                        ty: decl.ty,
                        bitfield,
                    });
                }
            }
        }
        if !key.is_anon() {
            env.tag_origin
                .entry(key.tag.clone())
                .or_insert_with(|| Origin {
                    file: self.file.to_path_buf(),
                    kernel,
                });
        }
        env.records.entry(key.clone()).or_insert(RecordDef {
            key,
            members,
            file: self.file.to_path_buf(),
            line: spec.start_position().row + 1,
        });
    }

    /// Applies a declarator to a base type (inside out).
    fn declarator<'t>(&self, d: Node<'t>, base: Ty) -> Declared<'t> {
        let mut node = Some(d);
        let mut ty = base;
        let mut params = None;
        // Collect the chain outermost first, then apply innermost-last.
        let mut chain: Vec<Node<'t>> = Vec::new();
        let mut name = None;
        while let Some(n) = node {
            match n.kind() {
                "identifier" | "field_identifier" | "type_identifier" | "primitive_type" => {
                    name = Some(n);
                    break;
                }
                "pointer_declarator"
                | "abstract_pointer_declarator"
                | "array_declarator"
                | "abstract_array_declarator"
                | "function_declarator"
                | "abstract_function_declarator" => {
                    chain.push(n);
                    node = n.child_by_field_name("declarator");
                }
                "parenthesized_declarator"
                | "abstract_parenthesized_declarator"
                | "attributed_declarator" => {
                    node = (0..n.named_child_count())
                        .filter_map(|k| n.named_child(k as u32))
                        .find(|c| {
                            c.kind() != "attribute_specifier" && c.kind() != "ms_call_modifier"
                        });
                }
                "init_declarator" => node = n.child_by_field_name("declarator"),
                _ => break,
            }
        }
        // Outermost declarator first: `*a[3]` is pointer(array(a)), an array
        // of pointers; the innermost function declarator's parameters are the
        // name's own.
        for n in chain.iter() {
            match n.kind() {
                "pointer_declarator" | "abstract_pointer_declarator" => ty = Ty::Ptr(Box::new(ty)),
                "array_declarator" | "abstract_array_declarator" => ty = Ty::Array(Box::new(ty)),
                _ => {
                    ty = Ty::Func(Box::new(ty));
                    params = n.child_by_field_name("parameters");
                }
            }
        }
        Declared { name, ty, params }
    }

    /// Name and type declared by a declarator.
    pub fn declared(&self, d: Node<'_>, base: Ty) -> (Option<String>, Ty) {
        let dd = self.declarator(d, base);
        (dd.name.map(|n| self.t(n).to_string()), dd.ty)
    }

    /// The base type of a specifier, without recording definitions.
    pub fn base_key(&self, n: Node<'_>) -> Ty {
        let mut scratch = TypeEnv::default();
        self.base(n, &mut scratch, false)
    }

    /// Text of the specifiers before the first declarator, storage classes
    /// left out.
    fn specifiers(&self, decl: Node<'_>) -> String {
        let first = decl
            .child_by_field_name("declarator")
            .map(|d| d.start_byte());
        let mut parts = Vec::new();
        for k in 0..decl.child_count() {
            let Some(c) = decl.child(k) else {
                continue;
            };
            if first.is_some_and(|f| c.start_byte() >= f) {
                break;
            }
            if matches!(
                c.kind(),
                "storage_class_specifier"
                    | "attribute_declaration"
                    | "attribute_specifier"
                    | "ms_declspec_modifier"
            ) || !c.is_named()
            {
                continue;
            }
            parts.push(normalize(self.t(c)));
        }
        parts.join(" ")
    }

    /// `CDecl` for the declarator `d` of declaration `decl` (name cut out).
    pub fn cdecl(&self, decl: Node<'_>, d: Node<'_>) -> Option<CDecl> {
        let spec = self.specifiers(decl);
        let d = if d.kind() == "init_declarator" {
            d.child_by_field_name("declarator")?
        } else {
            d
        };
        let name = self.declarator(d, Ty::Unknown).name?;
        let before = normalize(self.text.get(d.start_byte()..name.start_byte())?);
        let after = normalize(self.text.get(name.end_byte()..d.end_byte())?);
        let before = if before.is_empty() {
            spec
        } else {
            format!("{spec} {before}")
        };
        Some(CDecl { before, after })
    }

    /// `CDecl` for a parameter declaration, named or not.
    fn param_cdecl(&self, p: Node<'_>) -> Option<CDecl> {
        let spec = self.specifiers(p);
        match p.child_by_field_name("declarator") {
            None => Some(CDecl {
                before: spec,
                after: String::new(),
            }),
            Some(d) => {
                let name = self.declarator(d, Ty::Unknown).name;
                match name {
                    Some(name) => {
                        let before = normalize(self.text.get(d.start_byte()..name.start_byte())?);
                        let after = normalize(self.text.get(name.end_byte()..d.end_byte())?);
                        Some(CDecl {
                            before: if before.is_empty() {
                                spec
                            } else {
                                format!("{spec} {before}")
                            },
                            after,
                        })
                    }
                    None => {
                        // Abstract: only pointer chains can take a name at the end.
                        let mut n = Some(d);
                        while let Some(x) = n {
                            if x.kind() != "abstract_pointer_declarator" {
                                return None;
                            }
                            n = x.child_by_field_name("declarator");
                        }
                        Some(CDecl {
                            before: format!("{spec} {}", normalize(self.t(d))),
                            after: String::new(),
                        })
                    }
                }
            }
        }
    }

    /// Parameters of a parameter list.
    pub fn params(&self, list: Node<'_>, env: &mut TypeEnv, kernel: bool) -> (Vec<Param>, bool) {
        let mut out = Vec::new();
        let mut variadic = false;
        for k in 0..list.named_child_count() {
            let Some(p) = list.named_child(k as u32) else {
                continue;
            };
            match p.kind() {
                "variadic_parameter" => variadic = true,
                "parameter_declaration" => {
                    let Some(tn) = p.child_by_field_name("type") else {
                        out.push(Param {
                            name: None,
                            ty: Ty::Unknown,
                            decl: None,
                        });
                        continue;
                    };
                    let base = self.base(tn, env, kernel);
                    match p.child_by_field_name("declarator") {
                        None => {
                            if base == Ty::Void {
                                continue;
                            }
                            out.push(Param {
                                name: None,
                                ty: base,
                                decl: self.param_cdecl(p),
                            });
                        }
                        Some(d) => {
                            let dd = self.declarator(d, base);
                            let ty = match dd.ty {
                                Ty::Array(x) => Ty::Ptr(x),
                                t => t,
                            };
                            out.push(Param {
                                name: dd.name.map(|n| self.t(n).to_string()),
                                ty,
                                decl: self.param_cdecl(p),
                            });
                        }
                    }
                }
                _ => {}
            }
        }
        if self.t(list).contains("...") {
            variadic = true;
        }
        (out, variadic)
    }

    /// The signature of a function definition or declaration, and its name.
    pub fn fn_sig(
        &self,
        decl: Node<'_>,
        declarator: Node<'_>,
        env: &mut TypeEnv,
        kernel: bool,
    ) -> Option<(String, FnSig)> {
        let tn = decl.child_by_field_name("type")?;
        let base = self.base(tn, env, kernel);
        let dd = self.declarator(declarator, base.clone());
        let name = self.t(dd.name?).to_string();
        let Ty::Func(ret) = dd.ty else {
            return None;
        };
        let (params, variadic) = match dd.params {
            Some(l) => self.params(l, env, kernel),
            None => (Vec::new(), false),
        };
        // Return type text: specifiers plus the pointers between the name's
        // function declarator and the outside, when that is all there is.
        let mut stars = String::new();
        let mut n = declarator;
        let mut simple = true;
        loop {
            match n.kind() {
                "pointer_declarator" => {
                    let inner = n.child_by_field_name("declarator");
                    let quals = match inner {
                        Some(i) => normalize(
                            self.text
                                .get(n.start_byte() + 1..i.start_byte())
                                .unwrap_or(""),
                        ),
                        None => String::new(),
                    };
                    stars.push('*');
                    if !quals.is_empty() {
                        stars.push_str(&quals);
                        stars.push(' ');
                    }
                    match inner {
                        Some(i) => n = i,
                        None => {
                            simple = false;
                            break;
                        }
                    }
                }
                "attributed_declarator" => match n.named_child(0) {
                    Some(i) => n = i,
                    None => {
                        simple = false;
                        break;
                    }
                },
                "function_declarator" => {
                    let inner = n.child_by_field_name("declarator");
                    if inner.is_none_or(|i| i.kind() != "identifier") {
                        simple = false;
                    }
                    break;
                }
                _ => {
                    simple = false;
                    break;
                }
            }
        }
        let spec = self.specifiers(decl);
        let ret_decl = simple.then(|| CDecl {
            before: if stars.is_empty() {
                spec
            } else {
                format!("{spec} {}", stars.trim_end())
            },
            after: String::new(),
        });
        Some((
            name,
            FnSig {
                ret: *ret,
                ret_decl,
                params,
                variadic,
            },
        ))
    }
}

fn collect_fields<'t>(list: Node<'t>, out: &mut Vec<Node<'t>>) {
    for k in 0..list.named_child_count() {
        let Some(c) = list.named_child(k as u32) else {
            continue;
        };
        match c.kind() {
            "field_declaration" => out.push(c),
            k if fgft_parse::walk::is_conditional_block(k) => collect_fields(c, out),
            _ => {}
        }
    }
}

impl TypeEnv {
    /// Adds the facts of one parsed file.  Earlier files win.
    pub fn add_file(&mut self, pf: &ParsedFile, kernel: bool) {
        let r = Reader {
            text: &pf.text,
            file: &pf.path,
        };
        if kernel {
            self.has_kernel = true;
        }
        let root = pf.tree.root_node();
        self.walk_top(&r, root, kernel);
    }

    fn walk_top(&mut self, r: &Reader<'_>, n: Node<'_>, kernel: bool) {
        for k in 0..n.named_child_count() {
            let Some(c) = n.named_child(k as u32) else {
                continue;
            };
            match c.kind() {
                "function_definition" => {
                    if let Some(d) = c.child_by_field_name("declarator") {
                        if let Some((name, sig)) = r.fn_sig(c, d, self, kernel) {
                            self.funcs.entry(name).or_insert(sig);
                        }
                    }
                }
                "declaration" => self.declaration(r, c, kernel),
                "type_definition" => self.typedef(r, c, kernel),
                "struct_specifier" | "union_specifier" | "enum_specifier" => {
                    r.base(c, self, kernel);
                }
                "preproc_function_def" if !kernel => {
                    if let Some(name) = c.child_by_field_name("name") {
                        self.macros.insert(r.t(name).to_string());
                    }
                }
                k if fgft_parse::walk::holds_top_level(k) => self.walk_top(r, c, kernel),
                _ => {}
            }
        }
    }

    fn declaration(&mut self, r: &Reader<'_>, c: Node<'_>, kernel: bool) {
        let Some(tn) = c.child_by_field_name("type") else {
            return;
        };
        let base = r.base(tn, self, kernel);
        let mut cursor = c.walk();
        let decls: Vec<Node<'_>> = c
            .children_by_field_name("declarator", &mut cursor)
            .collect();
        for d in decls {
            let dd = r.declarator(d, base.clone());
            let Some(name) = dd.name else {
                continue;
            };
            let name = r.t(name).to_string();
            if matches!(dd.ty, Ty::Func(_)) {
                let inner = if d.kind() == "init_declarator" {
                    d.child_by_field_name("declarator").unwrap_or(d)
                } else {
                    d
                };
                if let Some((n, sig)) = r.fn_sig(c, inner, self, kernel) {
                    self.funcs.entry(n).or_insert(sig);
                }
            } else {
                let decl = r.cdecl(c, d);
                self.globals.entry(name).or_insert(Var { ty: dd.ty, decl });
            }
        }
    }

    fn typedef(&mut self, r: &Reader<'_>, c: Node<'_>, kernel: bool) {
        let Some(tn) = c.child_by_field_name("type") else {
            return;
        };
        let base = r.base(tn, self, kernel);
        let mut cursor = c.walk();
        let decls: Vec<Node<'_>> = c
            .children_by_field_name("declarator", &mut cursor)
            .collect();
        for d in decls {
            let dd = r.declarator(d, base.clone());
            let Some(name) = dd.name else {
                continue;
            };
            let name = r.t(name).to_string();
            if let Ty::Record(k) = &dd.ty {
                let a = self.aliases.entry(k.clone()).or_default();
                if !a.contains(&name) {
                    a.push(name.clone());
                }
            }
            if Ty::Named(name.clone()) == dd.ty {
                continue;
            }
            self.typedefs.entry(name).or_insert((
                dd.ty,
                None,
                Origin {
                    file: r.file.to_path_buf(),
                    kernel,
                },
            ));
        }
    }

    /// Rewrites where records were defined (a unit line to its header line).
    pub fn relocate(&mut self, f: impl Fn(&Path, usize) -> Option<(PathBuf, usize)>) {
        for def in self.records.values_mut() {
            if let Some((file, line)) = f(&def.file, def.line) {
                def.file = file;
                def.line = line;
            }
        }
    }

    /// Follows typedef names.
    pub fn resolve(&self, t: &Ty) -> Ty {
        let mut t = t.clone();
        for _ in 0..32 {
            match &t {
                Ty::Named(n) => match self.typedefs.get(n) {
                    Some((x, _, _)) => t = x.clone(),
                    None => return t,
                },
                _ => return t,
            }
        }
        Ty::Unknown
    }

    /// The record a value of type `t` designates (`.` access).
    pub fn record_of(&self, t: &Ty) -> Option<RecordKey> {
        match self.resolve(t) {
            Ty::Record(k) => Some(self.canonical(k)),
            _ => None,
        }
    }

    /// The record `t` points to (`->` access).
    pub fn record_pointed(&self, t: &Ty) -> Option<RecordKey> {
        match self.resolve(t) {
            Ty::Ptr(x) | Ty::Array(x) => self.record_of(&x),
            _ => None,
        }
    }

    /// Pointer and array element type.
    pub fn deref(&self, t: &Ty) -> Ty {
        match self.resolve(t) {
            Ty::Ptr(x) | Ty::Array(x) => *x,
            _ => Ty::Unknown,
        }
    }

    /// Anonymous records keep their synthetic key; named ones are the same
    /// whether the union flag was known or not.
    fn canonical(&self, k: RecordKey) -> RecordKey {
        if self.records.contains_key(&k) {
            return k;
        }
        let other = RecordKey {
            union: !k.union,
            tag: k.tag.clone(),
        };
        if self.records.contains_key(&other) {
            other
        } else {
            k
        }
    }

    /// Looks a member up, through anonymous struct and union members.
    pub fn member(&self, k: &RecordKey, name: &str) -> Option<&Member> {
        self.member_depth(k, name, 0)
    }

    fn member_depth(&self, k: &RecordKey, name: &str, depth: usize) -> Option<&Member> {
        if depth > 16 {
            return None;
        }
        let def = self.records.get(k)?;
        for m in &def.members {
            match &m.name {
                Some(n) if n == name => return Some(m),
                None => {
                    if let Ty::Record(inner) = &m.ty {
                        if let Some(x) = self.member_depth(inner, name, depth + 1) {
                            return Some(x);
                        }
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// All member names (anonymous members flattened), for suggestions.
    pub fn member_names(&self, k: &RecordKey) -> Vec<String> {
        let mut out = Vec::new();
        self.names_into(k, &mut out, 0);
        out
    }

    fn names_into(&self, k: &RecordKey, out: &mut Vec<String>, depth: usize) {
        if depth > 16 {
            return;
        }
        if let Some(def) = self.records.get(k) {
            for m in &def.members {
                match (&m.name, &m.ty) {
                    (Some(n), _) => out.push(n.clone()),
                    (None, Ty::Record(inner)) => self.names_into(inner, out, depth + 1),
                    _ => {}
                }
            }
        }
    }

    /// Names of a record for pointcut matching: its tag and typedef names.
    pub fn record_names(&self, k: &RecordKey) -> Vec<String> {
        let mut v = Vec::new();
        if !k.is_anon() {
            v.push(k.tag.clone());
        }
        if let Some(a) = self.aliases.get(k) {
            v.extend(a.iter().cloned());
        }
        v
    }

    /// Display name of a record (tag or first typedef name).
    pub fn record_display(&self, k: &RecordKey) -> String {
        self.record_names(k)
            .into_iter()
            .next()
            .unwrap_or_else(|| format!("(anonymous {})", if k.union { "union" } else { "struct" }))
    }

    /// Records whose names match a pointcut pattern.
    pub fn records_named(&self, pat: &crate::pointcut::Pattern) -> Vec<RecordKey> {
        let mut v: Vec<RecordKey> = self
            .records
            .keys()
            .filter(|k| self.record_names(k).iter().any(|n| pat.matches(n)))
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// Whether `name` is a function (not a macro) that can be called with
    /// captured arguments.
    pub fn is_function(&self, name: &str) -> bool {
        self.funcs.contains_key(name) && !self.macros.contains(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(src: &str) -> TypeEnv {
        let pf = fgft_parse::parse_text(Path::new("t.h"), src.to_string()).unwrap();
        let mut e = TypeEnv::default();
        e.add_file(&pf, false);
        e
    }

    #[test]
    fn records_typedefs_and_anonymous_members() {
        let e = env(
            "struct sk_buff { union { struct { struct sk_buff *next, *prev; }; int rb; }; unsigned int len; __u16 protocol; char cb[48]; unsigned int flag:1; struct inner { int x; } in; };\n\
             typedef struct { int a; } anon_t;\ntypedef struct sk_buff skb_t;\ntypedef skb_t *skb_p;\n\
             struct sk_buff *f(int a, const struct sk_buff *skb, ...);\n\
             int (*g(void))(int);\n\
             #define M(x) (x)\n",
        );
        let k = RecordKey {
            union: false,
            tag: "sk_buff".into(),
        };
        assert!(e.member(&k, "next").is_some());
        assert!(e.member(&k, "len").is_some());
        assert!(e.member(&k, "flag").unwrap().bitfield);
        assert!(matches!(e.member(&k, "cb").unwrap().ty, Ty::Array(_)));
        assert!(matches!(e.member(&k, "next").unwrap().ty, Ty::Ptr(_)));
        assert!(e.member(&k, "nope").is_none());
        assert_eq!(e.record_of(&Ty::Named("skb_t".into())), Some(k.clone()));
        assert_eq!(
            e.record_pointed(&Ty::Named("skb_p".into())),
            Some(k.clone())
        );
        assert_eq!(
            e.record_names(&k),
            vec!["sk_buff".to_string(), "skb_t".into()]
        );
        let anon = e.record_of(&Ty::Named("anon_t".into())).unwrap();
        assert!(anon.is_anon());
        assert_eq!(e.record_display(&anon), "anon_t");
        let f = &e.funcs["f"];
        assert_eq!(f.params.len(), 2);
        assert!(f.variadic);
        assert_eq!(
            f.params[1].decl.as_ref().unwrap().declare("x"),
            "const struct sk_buff *x"
        );
        assert_eq!(
            f.ret_decl.as_ref().unwrap().declare("r"),
            "struct sk_buff *r"
        );
        assert!(e.funcs["g"].ret_decl.is_none());
        assert!(e.macros.contains("M"));
        assert!(!e.is_function("M"));
    }

    #[test]
    fn normalize_text() {
        assert_eq!(
            normalize("const  struct\n  foo /* c */ *"),
            "const struct foo *"
        );
        assert_eq!(
            normalize("int (* cb ) ( int , long )"),
            "int (*cb)(int, long)"
        );
    }
}

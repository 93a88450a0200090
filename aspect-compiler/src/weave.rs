//! Weaving: matches the aspect's pointcuts against the driver's join-point
//! shadows and turns each matched shadow into a hook, as byte-range edits.
//!
//! Hook forms (all text inserted into driver files is newline-free, so line
//! numbers do not move; the hook macros live in the generated header):
//!
//! | shadow           | woven text                                          |
//! |------------------|-----------------------------------------------------|
//! | `p->m`           | `FGFT_A_7(p)->m`                                    |
//! | `s.m`            | `(*FGFT_A_7(&(s))).m`                               |
//! | `f(a, b)`        | `FGFT_A_7(f(a, b))`, or with `args()` bound at a    |
//! |                  | call: `({ T0 __fgft_a7_0 = (a); ...; FGFT_A_7(f(__fgft_a7_0, ...)); })` |
//! | function entry   | `{ FGFT_A_7(); { ...body... } }`                    |
//! | `return e;`      | `return FGFT_A_7(e);`                               |
//! | `return;`        | `{ FGFT_A_7(); return; }`                           |
//! | end of void body | `... FGFT_A_7(); }`                                 |
//!
//! Each hook macro evaluates the object pointer, call or return value once and
//! tests one static key per advice (`static_branch_unlikely`): switched off, a
//! hook is a NOP in the instruction stream.

use crate::codegen::{self, Bound, CallPlan, HookPlan, JpKind, Plan, Tramp};
use crate::ctypes::{CDecl, RecordKey, Ty, TypeEnv};
use crate::pointcut::{self, Prim, Source};
use crate::scan::{self, Driver, Scanner, Shadow, Site, Visitor};
use crate::table::Table;
use crate::xml::{Aspect, BodyKind};
use crate::{AspectError, Diag};
use fgft_base::edit::{Edit, Edits, Kind, Part};
use fgft_base::ident;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How to weave.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Kernel build tree: kernel types for the join points and member checks,
    /// and the compile check of the generated C.
    pub kdir: Option<PathBuf>,
    /// Extra table directories (`--tables`).
    pub tables: Vec<PathBuf>,
    /// Compile the generated C against `kdir` (advice C errors become
    /// diagnostics in the aspect file).
    pub check: bool,
}

/// One woven join point, for listings and snapshots.
#[derive(Debug, Clone)]
pub struct JpRecord {
    pub id: usize,
    pub kind: JpKind,
    pub file: String,
    pub line: usize,
    pub func: String,
    pub what: String,
    pub access: u8,
    pub advices: Vec<String>,
}

impl JpRecord {
    pub fn line_text(&self) -> String {
        let acc = if self.kind == JpKind::Access {
            format!(" {}", scan::access_name(self.access))
        } else {
            String::new()
        };
        format!(
            "{} {} {}:{} {} {}{} [{}]",
            self.id,
            self.kind.name(),
            self.file,
            self.line,
            self.func,
            self.what,
            acc,
            self.advices.join(", ")
        )
    }
}

/// The result of weaving.
#[derive(Debug, Default)]
pub struct Woven {
    pub name: String,
    /// Files written by fgft (woven sources, generated C, Makefile): relative
    /// path -> content.
    pub files: BTreeMap<String, String>,
    /// Files copied unchanged: relative path -> source path.
    pub copies: BTreeMap<String, PathBuf>,
    /// Relative paths of the woven driver files.
    pub woven: Vec<String>,
    /// Relative paths of the generated files.
    pub generated: Vec<String>,
    pub joinpoints: Vec<JpRecord>,
    pub warnings: Vec<Diag>,
    /// For the compile check: generated C line -> aspect location.
    pub line_map: codegen::LineMap,
}

impl Woven {
    /// The join-point listing (`fgft_aspect_<name>.joinpoints`).
    pub fn listing(&self) -> String {
        let mut s = String::new();
        for j in &self.joinpoints {
            s.push_str(&j.line_text());
            s.push('\n');
        }
        s
    }

    /// Writes the output tree.
    pub fn write(&self, out: &Path) -> Result<(), AspectError> {
        std::fs::create_dir_all(out).map_err(|e| AspectError::io(out, e))?;
        for (rel, src) in &self.copies {
            let dst = out.join(rel);
            if let Some(p) = dst.parent() {
                std::fs::create_dir_all(p).map_err(|e| AspectError::io(p, e))?;
            }
            std::fs::copy(src, &dst).map_err(|e| AspectError::io(&dst, e))?;
        }
        for (rel, text) in &self.files {
            let dst = out.join(rel);
            if let Some(p) = dst.parent() {
                std::fs::create_dir_all(p).map_err(|e| AspectError::io(p, e))?;
            }
            std::fs::write(&dst, text).map_err(|e| AspectError::io(&dst, e))?;
        }
        Ok(())
    }
}

/// A trampoline's identity: advice, body kind and binding signature.
type TrampKey = (usize, BodyKind, Vec<(String, CDecl)>);

/// Resolved bindings: trampoline parameters, the values at the hook, and
/// whether the call's arguments are captured.
type Bound3 = (Vec<(String, CDecl)>, Vec<Bound>, bool);

/// module_init, module_exit and a module_X_driver() statement of a file.
type ModuleHooks = (
    Option<String>,
    Option<String>,
    Option<(std::ops::Range<usize>, String, String)>,
);

struct Prepared {
    advice: usize,
    bodies: Vec<(usize, BodyKind)>,
}

/// Why a join point was left out of an advice.
struct Exclusion {
    count: usize,
    first: (String, usize),
}

struct Infra {
    init: HashMap<usize, String>,
    exit: HashMap<usize, String>,
}

struct Weaver<'a> {
    aspect: &'a Aspect,
    env: &'a TypeEnv,
    prepared: Vec<Prepared>,
    prefix: String,
    macro_prefix: String,
    file_index: usize,
    edits: Vec<Vec<Edit>>,
    hooks: Vec<HookPlan>,
    tramps: Vec<Tramp>,
    tramp_index: HashMap<TrampKey, usize>,
    exclusions: BTreeMap<(usize, String), Exclusion>,
    infra: Infra,
    infra_done: BTreeSet<&'static str>,
    /// Struct and union tags named in trampoline signatures.
    forward: BTreeSet<String>,
    /// Driver headers the generated C needs (typedefs in signatures).
    headers: BTreeSet<String>,
    /// Whether signatures name kernel typedefs (the generated C then
    /// includes the kernel headers the driver includes).
    kernel_types: bool,
    /// Matches per advice.
    matched: Vec<usize>,
    /// Functions hooked per file (for the include placement): file -> first
    /// function definition start.
    first_fn: HashMap<usize, usize>,
}

/// The view of a site a pointcut sees.
struct View<'s, 'a> {
    site: &'s Site<'a>,
}

impl pointcut::JoinPoint for View<'_, '_> {
    fn kind(&self) -> pointcut::Kind {
        match self.site.shadow {
            Shadow::Entry { .. } | Shadow::Exit { .. } | Shadow::FallOff { .. } => {
                pointcut::Kind::Execution
            }
            Shadow::Call { .. } => pointcut::Kind::Call,
            Shadow::Access { .. } => pointcut::Kind::Access,
        }
    }
    fn func(&self) -> &str {
        &self.site.func.name
    }
    fn file(&self) -> &str {
        &self.site.file.rel
    }
    fn callee(&self) -> Option<&str> {
        match &self.site.shadow {
            Shadow::Call { callee, .. } => Some(callee),
            _ => None,
        }
    }
    fn record_names(&self) -> &[String] {
        match &self.site.shadow {
            Shadow::Access { names, .. } => names,
            _ => &[],
        }
    }
    fn member(&self) -> Option<&str> {
        match &self.site.shadow {
            Shadow::Access { member, .. } => Some(member),
            _ => None,
        }
    }
    fn has_target(&self) -> bool {
        matches!(self.site.shadow, Shadow::Access { .. })
    }
    fn arg_count(&self) -> Option<usize> {
        match &self.site.shadow {
            Shadow::Call { args, .. } => Some(args.len()),
            _ => Some(self.site.func.params.len()),
        }
    }
    fn has_local(&self, name: &str) -> bool {
        self.site.scope.lookup(name).is_some()
    }
}

fn phase_bodies(shadow: &Shadow) -> &'static [BodyKind] {
    match shadow {
        Shadow::Entry { .. } => &[BodyKind::Before],
        Shadow::Exit { .. } | Shadow::FallOff { .. } => {
            &[BodyKind::After, BodyKind::AfterReturning]
        }
        Shadow::Call { .. } => &[BodyKind::Before, BodyKind::After, BodyKind::AfterReturning],
        Shadow::Access { .. } => &[BodyKind::Before],
    }
}

const C_WORDS: &[&str] = &[
    "struct",
    "union",
    "enum",
    "const",
    "volatile",
    "restrict",
    "__restrict",
    "unsigned",
    "signed",
    "int",
    "char",
    "short",
    "long",
    "void",
    "float",
    "double",
    "_Bool",
    "bool",
    "__iomem",
    "__user",
    "__rcu",
    "__percpu",
    "__force",
    "__attribute__",
    "__aligned",
    "__packed",
    "__must_check",
];

impl Weaver<'_> {
    fn exclude(&mut self, advice: usize, reason: String, site: &Site<'_>) {
        let e = self
            .exclusions
            .entry((advice, reason))
            .or_insert_with(|| Exclusion {
                count: 0,
                first: (site.file.rel.clone(), site.line),
            });
        e.count += 1;
    }

    /// Checks a binding type can be spelled in the generated files; notes
    /// the forward declarations and headers it needs.
    fn usable(&mut self, d: &CDecl) -> Result<(), String> {
        let text = format!("{} {}", d.before, d.after);
        let toks: Vec<&str> = text
            .split(|c: char| !ident::is_char(c))
            .filter(|t| !t.is_empty())
            .collect();
        let mut i = 0;
        while i < toks.len() {
            let t = toks[i];
            if (t == "struct" || t == "union") && i + 1 < toks.len() {
                self.forward.insert(format!("{t} {}", toks[i + 1]));
                i += 2;
                continue;
            }
            if t == "enum" && i + 1 < toks.len() {
                if let Some(o) = self.env.tag_origin.get(toks[i + 1]) {
                    if !o.kernel {
                        self.need_header(&o.file, toks[i + 1])?;
                    }
                }
                i += 2;
                continue;
            }
            if !C_WORDS.contains(&t) && !t.as_bytes()[0].is_ascii_digit() {
                match self.env.typedefs.get(t) {
                    Some((_, _, o)) if !o.kernel => {
                        let f = o.file.clone();
                        self.need_header(&f, t)?;
                    }
                    _ => self.kernel_types = true,
                }
            }
            i += 1;
        }
        Ok(())
    }

    fn need_header(&mut self, file: &Path, name: &str) -> Result<(), String> {
        let rel = file
            .file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default();
        if rel.ends_with(".h") {
            self.headers.insert(rel);
            Ok(())
        } else {
            Err(format!(
                "type `{name}` is defined in {rel}, not in a header the generated C can include"
            ))
        }
    }

    /// Resolves the bindings of one match into trampoline parameters.
    fn bind(
        &mut self,
        site: &Site<'_>,
        id: usize,
        bindings: &[(String, Source)],
        body: BodyKind,
        returning: Option<&str>,
    ) -> Result<Bound3, String> {
        let mut params = Vec::new();
        let mut values = Vec::new();
        let mut capture = false;
        for (name, src) in bindings {
            let (decl, value) = match src {
                Source::Target => (CDecl::void_ptr(), Bound::Target),
                Source::Arg(i) => match &site.shadow {
                    Shadow::Call {
                        sig,
                        is_function,
                        callee,
                        ..
                    } => {
                        let Some(sig) = sig.as_ref().filter(|_| *is_function) else {
                            return Err(format!(
                                "args() at calls to `{callee}`: no prototype of it is known (a macro, or a kernel function without --kdir)"
                            ));
                        };
                        let Some(d) = sig.params.get(*i).and_then(|p| p.decl.clone()) else {
                            return Err(format!(
                                "args() position {i} of `{callee}` has no declared type"
                            ));
                        };
                        capture = true;
                        (d, Bound::Expr(format!("__fgft_a{id}_{i}")))
                    }
                    _ => {
                        let Some(p) = site.func.params.get(*i) else {
                            return Err(
                                "args() asks for more parameters than the function has".into()
                            );
                        };
                        let (Some(pn), Some(d)) = (p.name.clone(), p.decl.clone()) else {
                            return Err(format!(
                                "parameter {i} of `{}` is unnamed",
                                site.func.name
                            ));
                        };
                        if !site.scope.is_param(&pn) {
                            return Err(format!(
                                "parameter `{pn}` is shadowed by a local variable"
                            ));
                        }
                        (d, Bound::Expr(pn))
                    }
                },
                Source::Local(n) => {
                    let v = site
                        .scope
                        .lookup(n)
                        .ok_or_else(|| format!("`{n}` is not in scope"))?;
                    let d = v.decl.clone().ok_or_else(|| {
                        format!("the declaration of local `{n}` is too involved to repeat")
                    })?;
                    (d, Bound::Expr(n.clone()))
                }
            };
            self.usable(&decl)?;
            params.push((name.clone(), decl));
            values.push(value);
        }
        if body == BodyKind::AfterReturning {
            if let Some(rn) = returning {
                match &site.shadow {
                    Shadow::Exit { value: Some(_), .. } if !site.func.returns_void() => {
                        let d = site.func.ret_decl.clone().ok_or_else(|| {
                            format!("the return type of `{}` is too involved to repeat", site.func.name)
                        })?;
                        self.usable(&d)?;
                        params.push((rn.to_string(), d));
                        values.push(Bound::Expr(format!("__fgft_rv{id}")));
                    }
                    Shadow::Call { sig, callee, .. } => match sig {
                        Some(s) if s.ret == Ty::Void => {}
                        Some(s) => {
                            let d = s.ret_decl.clone().ok_or_else(|| {
                                format!("the return type of `{callee}` is too involved to repeat")
                            })?;
                            self.usable(&d)?;
                            params.push((rn.to_string(), d));
                            values.push(Bound::Expr(format!("__fgft_r{id}")));
                        }
                        None => {
                            return Err(format!(
                                "after-returning at calls to `{callee}`: its return type is not known (a macro, or a kernel function without --kdir)"
                            ))
                        }
                    },
                    _ => {}
                }
            }
        }
        Ok((params, values, capture))
    }

    fn tramp(
        &mut self,
        advice: usize,
        body: usize,
        kind: BodyKind,
        params: Vec<(String, CDecl)>,
    ) -> usize {
        let key = (advice, kind, params.clone());
        if let Some(&t) = self.tramp_index.get(&key) {
            self.tramps[t].count += 1;
            return t;
        }
        let n = self
            .tramps
            .iter()
            .filter(|t| t.advice == advice && t.kind == kind)
            .count();
        let adv = &self.aspect.advices[advice].name;
        let name = if n == 0 {
            format!("{}_{}_{}", self.prefix, adv, kind.ident())
        } else {
            format!("{}_{}_{}_{}", self.prefix, adv, kind.ident(), n)
        };
        self.tramps.push(Tramp {
            name,
            advice,
            body,
            kind,
            params,
            count: 1,
        });
        self.tramp_index.insert(key, self.tramps.len() - 1);
        self.tramps.len() - 1
    }
}

impl Visitor for Weaver<'_> {
    fn site(&mut self, site: &Site<'_>) {
        let id = self.hooks.len();
        let view = View { site };
        let mut before = Vec::new();
        let mut after = Vec::new();
        let mut capture = false;
        let mut advices = Vec::new();
        let phases = phase_bodies(&site.shadow);
        for pi in 0..self.prepared.len() {
            let ai = self.prepared[pi].advice;
            let bodies = self.prepared[pi].bodies.clone();
            let advice = &self.aspect.advices[ai];
            for (bi, kind) in bodies {
                if !phases.contains(&kind) {
                    continue;
                }
                let Some(bindings) = advice.pointcut.eval(&view) else {
                    continue;
                };
                let returning = advice.bodies[bi].returning.clone();
                match self.bind(site, id, &bindings, kind, returning.as_deref()) {
                    Ok((params, values, cap)) => {
                        capture |= cap;
                        let t = self.tramp(ai, bi, kind, params);
                        let call = CallPlan {
                            advice: ai,
                            tramp: t,
                            values,
                        };
                        if kind == BodyKind::Before {
                            before.push(call);
                        } else {
                            after.push(call);
                        }
                        if !advices.contains(&ai) {
                            advices.push(ai);
                        }
                        self.matched[ai] += 1;
                    }
                    Err(reason) => self.exclude(ai, reason, site),
                }
            }
        }
        let fi = self.file_index;
        let is_init = self.infra.init.get(&fi) == Some(&site.func.name);
        let is_exit = self.infra.exit.get(&fi) == Some(&site.func.name);
        let infra = (is_init || is_exit)
            && matches!(
                site.shadow,
                Shadow::Entry { .. } | Shadow::Exit { .. } | Shadow::FallOff { .. }
            );
        if before.is_empty() && after.is_empty() && !infra {
            return;
        }
        let p = &self.prefix;
        let hooked = !(before.is_empty() && after.is_empty());
        let mac = format!("{}{id}", self.macro_prefix);
        let mut edits = Vec::new();
        match &site.shadow {
            Shadow::Entry { body } => {
                let mut pre = String::new();
                if is_init {
                    pre.push_str(&format!(" {p}_init();"));
                    self.infra_done.insert("init");
                }
                if hooked {
                    pre.push_str(&format!(" {mac}();"));
                }
                if !pre.is_empty() {
                    pre.push_str(" {");
                    edits.push(Edit::wrap(body.start + 1..body.end - 1, 0, pre, "}"));
                }
            }
            Shadow::Exit { stmt, value } => match value {
                Some(v) => {
                    if is_init {
                        edits.push(Edit::wrap(v.clone(), 0, format!("{p}_init_done("), ")"));
                    }
                    if hooked {
                        edits.push(Edit::wrap(v.clone(), 1, format!("{mac}("), ")"));
                    }
                }
                None => {
                    if hooked {
                        edits.push(Edit::wrap(stmt.clone(), 1, format!("{{ {mac}(); "), " }"));
                    }
                    if is_exit {
                        edits.push(Edit::wrap(
                            stmt.clone(),
                            2,
                            format!("{{ {p}_exit(); "),
                            " }",
                        ));
                        self.infra_done.insert("exit");
                    }
                }
            },
            Shadow::FallOff { at } => {
                // Right after the last statement, so that the closing brace
                // stays on its own line.
                let text = &site.file.pf.text[..*at];
                let end = text.trim_end().len();
                let last = text[..end].rsplit('\n').next().unwrap_or("");
                let plain = (last.ends_with(';') || last.ends_with('}'))
                    && !last.contains("//")
                    && !last.trim_start().starts_with('#');
                // After a directive or a line comment, only the brace's own
                // position is safe.
                let at = if plain { end } else { *at };
                if hooked {
                    edits.push(Edit::insert(at, 1, format!(" {mac}();")));
                }
                if is_exit {
                    edits.push(Edit::insert(at, 2, format!(" {p}_exit();")));
                    self.infra_done.insert("exit");
                }
            }
            Shadow::Call {
                call,
                callee_range,
                args,
                sig,
                ..
            } => {
                if capture {
                    let params = sig.as_ref().map(|s| s.params.clone()).unwrap_or_default();
                    let mut parts = vec![Part::Text("({ ".into())];
                    let mut call_args = Vec::new();
                    for (i, a) in args.iter().enumerate() {
                        match params.get(i).and_then(|p| p.decl.clone()) {
                            Some(d) => {
                                let n = format!("__fgft_a{id}_{i}");
                                parts.push(Part::Text(format!("{} = (", d.declare(&n))));
                                parts.push(Part::Src(a.clone()));
                                parts.push(Part::Text("); ".into()));
                                call_args.push(Part::Text(n));
                            }
                            None => call_args.push(Part::Src(a.clone())),
                        }
                    }
                    parts.push(Part::Text(format!("{mac}(")));
                    parts.push(Part::Src(callee_range.clone()));
                    parts.push(Part::Text("(".into()));
                    for (k, a) in call_args.into_iter().enumerate() {
                        if k > 0 {
                            parts.push(Part::Text(", ".into()));
                        }
                        parts.push(a);
                    }
                    parts.push(Part::Text(")); })".into()));
                    edits.push(Edit {
                        range: call.clone(),
                        prio: 1,
                        kind: Kind::Template(parts),
                    });
                } else {
                    edits.push(Edit::wrap(call.clone(), 1, format!("{mac}("), ")"));
                }
            }
            Shadow::Access {
                obj,
                arrow,
                addressable,
                ..
            } => {
                if !addressable {
                    for a in &advices {
                        self.matched[*a] -= 1;
                        self.exclude(
                            *a,
                            "a `.` access on a value that has no address (a call or expression result)".into(),
                            site,
                        );
                    }
                    return;
                }
                if *arrow {
                    edits.push(Edit::wrap(obj.clone(), 2, format!("{mac}("), ")"));
                } else {
                    edits.push(Edit::wrap(obj.clone(), 2, format!("(*{mac}(&("), ")))"));
                }
            }
        }
        self.edits[fi].extend(edits);
        let def_start = site.func.def.start;
        let e = self.first_fn.entry(fi).or_insert(def_start);
        *e = (*e).min(def_start);
        if !hooked {
            return;
        }
        let (kind, what, access) = match &site.shadow {
            Shadow::Entry { .. } => (JpKind::Entry, site.func.name.clone(), 0),
            Shadow::Exit { .. } | Shadow::FallOff { .. } => {
                (JpKind::Exit, site.func.name.clone(), 0)
            }
            Shadow::Call { callee, .. } => (JpKind::Call, callee.clone(), 0),
            Shadow::Access {
                record,
                member,
                access,
                ..
            } => (
                JpKind::Access,
                format!("{}.{member}", self.env.record_display(record)),
                *access,
            ),
        };
        self.hooks.push(HookPlan {
            id,
            macro_name: mac,
            file: site.file.rel.clone(),
            line: site.line,
            func: site.func.name.clone(),
            kind,
            what,
            access,
            before,
            after,
            shadow: site.shadow.clone(),
            returns_void: site.func.returns_void(),
            ret_decl: site.func.ret_decl.clone(),
            advices,
        });
    }
}

/// Finds `module_init(f)` / `module_exit(f)` and `module_X_driver(d);` at the
/// start of a line.
fn module_hooks(text: &str, table: &Table) -> ModuleHooks {
    let mut init = None;
    let mut exit = None;
    let mut drv = None;
    let mut off = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        let lead = line.len() - t.len();
        let call = |name: &str| -> Option<String> {
            let rest = t.strip_prefix(name)?.trim_start().strip_prefix('(')?;
            let close = rest.find(')')?;
            let arg = rest[..close].trim();
            ident::is_ident(arg).then(|| arg.to_string())
        };
        let name: String = t.chars().take_while(|&c| ident::is_char(c)).collect();
        if let Some(f) = table
            .module_macros
            .is_init(&name)
            .then(|| call(&name))
            .flatten()
        {
            init = Some(f);
        } else if let Some(f) = call("module_exit") {
            exit = Some(f);
        } else if t.starts_with("module_") && table.module_macros.contains(&name) {
            if let (Some(arg), Some(semi)) = (call(&name), t.find(';')) {
                let start = off + lead;
                drv = Some((start..start + semi + 1, name, arg));
            }
        }
        off += line.len();
    }
    (init, exit, drv)
}

/// Where to include the generated header in a woven file: the start of the
/// line of the first hooked function, moved out of conditional blocks (but
/// not out of an include guard).
fn include_point(file: &scan::SrcFile, first_fn: usize) -> usize {
    let root = file.pf.tree.root_node();
    let Some(mut n) = root.descendant_for_byte_range(first_fn, first_fn) else {
        return 0;
    };
    while n.kind() != "function_definition" {
        match n.parent() {
            Some(p) => n = p,
            None => break,
        }
    }
    let mut at = n.start_byte();
    let mut p = n.parent();
    while let Some(x) = p {
        if fgft_parse::walk::is_conditional_block(x.kind()) && !is_guard(file, x) {
            at = x.start_byte();
        }
        p = x.parent();
    }
    file.pf.text[..at].rfind('\n').map(|k| k + 1).unwrap_or(0)
}

fn is_guard(file: &scan::SrcFile, n: tree_sitter::Node<'_>) -> bool {
    if n.kind() != "preproc_ifdef" || n.parent().is_some_and(|p| p.kind() != "translation_unit") {
        return false;
    }
    let text = file.pf.text.get(n.byte_range()).unwrap_or("");
    let Some(name) = n
        .child_by_field_name("name")
        .map(|x| &file.pf.text[x.byte_range()])
    else {
        return false;
    };
    text.starts_with("#ifndef") && text.contains(&format!("#define {name}"))
}

/// Weaves `aspect` into `driver`.
pub fn weave(aspect: &Aspect, driver: &Driver, opts: &Options) -> Result<Woven, AspectError> {
    let table = Table::load(&fgft_parse::tables::TableDirs::resolve(&opts.tables))?;
    let mut env = driver.type_env();
    let mut warnings = Vec::new();
    if let Some(kdir) = &opts.kdir {
        match crate::kbuild::kernel_unit(kdir, driver, aspect) {
            Ok((pf, markers)) => {
                env.add_file(&pf, true);
                env.relocate(|file, line| {
                    if file == Path::new(crate::kbuild::KERNEL_UNIT) {
                        markers.origin(line).map(|(f, l)| (PathBuf::from(f), l))
                    } else {
                        None
                    }
                });
            }
            Err(msg) => warnings.push(
                Diag::warning(
                    &aspect.path,
                    &aspect.text,
                    0..0,
                    "kernel types are not available",
                    "",
                )
                .note(msg)
                .note("member accesses on kernel structs are typed from declarations only"),
            ),
        }
    }
    let mut errors = check_aspect(aspect, &env, driver);
    warnings.extend(errors.iter().filter(|d| d.warning).cloned());
    errors.retain(|d| !d.warning);
    if !errors.is_empty() {
        errors.extend(warnings);
        return Err(AspectError::Diagnostics(errors));
    }
    let prefix = format!("fgft_aspect_{}", aspect.name);
    let macro_prefix = format!("FGFT_{}_", aspect.name.to_ascii_uppercase());
    let prepared: Vec<Prepared> = aspect
        .advices
        .iter()
        .enumerate()
        .filter(|(_, a)| a.weave)
        .map(|(i, a)| Prepared {
            advice: i,
            bodies: a
                .bodies
                .iter()
                .enumerate()
                .map(|(k, b)| (k, b.kind))
                .collect(),
        })
        .collect();
    let mut w = Weaver {
        aspect,
        env: &env,
        prepared,
        prefix: prefix.clone(),
        macro_prefix,
        file_index: 0,
        edits: vec![Vec::new(); driver.files.len()],
        hooks: Vec::new(),
        tramps: Vec::new(),
        tramp_index: HashMap::new(),
        exclusions: BTreeMap::new(),
        infra: Infra {
            init: HashMap::new(),
            exit: HashMap::new(),
        },
        infra_done: BTreeSet::new(),
        forward: BTreeSet::new(),
        headers: BTreeSet::new(),
        kernel_types: false,
        matched: vec![0; aspect.advices.len()],
        first_fn: HashMap::new(),
    };
    let mut module_driver = None;
    for (i, f) in driver.files.iter().enumerate() {
        let (init, exit, drv) = module_hooks(&f.pf.text, &table);
        if let Some(n) = init {
            w.infra.init.insert(i, n);
        }
        if let Some(n) = exit {
            w.infra.exit.insert(i, n);
        }
        if drv.is_some() && module_driver.is_none() {
            module_driver = drv.map(|d| (i, d));
        }
    }
    let mut unresolved = Vec::new();
    let mut broken = Vec::new();
    for (i, f) in driver.files.iter().enumerate() {
        w.file_index = i;
        let mut s = Scanner::new(&env, &table, f, i);
        s.run(&mut w);
        unresolved.extend(s.unresolved);
        broken.extend(s.broken.into_iter().map(|b| (i, b)));
    }
    // Module init and exit: explicit functions, or a module_X_driver macro
    // spelled out.
    if let Some((fi, (range, mac, arg))) = &module_driver {
        if w.infra.init.is_empty() {
            let m = &table.module_macros.get(mac).expect("a known module macro");
            let (reg, unreg) = (m.register_call(arg), m.unregister_call(arg));
            let line = driver.files[*fi].pf.line_of(range.end) + 1;
            let text = format!(
                "/* {mac}({arg}), spelled out by fgft-cc aspect */\n\
                 static int __init {prefix}_module_init(void)\n{{\n\t{prefix}_init();\n\treturn {prefix}_init_done({reg});\n}}\n\
                 module_init({prefix}_module_init);\n\n\
                 static void __exit {prefix}_module_exit(void)\n{{\n\t{unreg};\n\t{prefix}_exit();\n}}\n\
                 module_exit({prefix}_module_exit);\n#line {line}"
            );
            w.edits[*fi].push(Edit::replace(range.clone(), text));
            w.first_fn.entry(*fi).or_insert(range.start);
            w.infra_done.insert("init");
            w.infra_done.insert("exit");
        }
    }
    // Diagnostics about what could not be woven.
    let access_pats: Vec<(&pointcut::Pattern, &pointcut::Pattern)> = aspect
        .advices
        .iter()
        .filter(|a| a.weave)
        .flat_map(|a| a.pointcut.prims())
        .filter_map(|(p, _)| match p {
            Prim::Access { record, member } => Some((record, member)),
            _ => None,
        })
        .collect();
    let mut shown = 0;
    let mut hidden = 0;
    for u in &unresolved {
        let relevant = access_pats.iter().any(|(r, m)| {
            m.matches(&u.member)
                && u.record
                    .as_ref()
                    .is_none_or(|names| names.iter().any(|n| r.matches(n)))
        });
        if !relevant {
            continue;
        }
        if shown >= 20 {
            hidden += 1;
            continue;
        }
        shown += 1;
        let f = &driver.files[u.file];
        warnings.push(
            Diag::warning(
                &f.pf.path,
                &f.text,
                u.range.clone(),
                format!("member access `{}` in {}() is not woven", u.member, u.func),
                u.reason,
            )
            .note("an access pointcut could match it; give its object a declared type, a cast, or --kdir for kernel types"),
        );
    }
    if hidden > 0 {
        warnings.push(Diag::warning(
            &aspect.path,
            &aspect.text,
            0..0,
            format!("{hidden} more member accesses could not be typed and are not woven"),
            "",
        ));
    }
    let exec_pats: Vec<&pointcut::Pattern> = aspect
        .advices
        .iter()
        .filter(|a| a.weave)
        .flat_map(|a| a.pointcut.prims())
        .filter_map(|(p, _)| match p {
            Prim::Execution(pat) => Some(pat),
            _ => None,
        })
        .collect();
    for (fi, (name, range)) in &broken {
        let init_or_exit = w.infra.init.get(fi) == Some(name) || w.infra.exit.get(fi) == Some(name);
        if exec_pats.iter().any(|p| p.matches(name)) || init_or_exit {
            let f = &driver.files[*fi];
            let end = f.pf.text[range.clone()]
                .find('\n')
                .map(|k| range.start + k)
                .unwrap_or(range.end);
            warnings.push(
                Diag::warning(
                    &f.pf.path,
                    &f.text,
                    range.start..end,
                    format!("function `{name}` does not parse cleanly: its entry and exits are not woven"),
                    "ERROR nodes in this function",
                )
                .note("a macro the hint table does not know is the usual cause; extend macro-hints.toml"),
            );
        }
    }
    if !w.infra_done.contains("init") && !w.hooks.is_empty() {
        warnings.push(
            Diag::warning(
                &aspect.path,
                &aspect.text,
                0..0,
                "no module init function found: the debugfs switches are not created",
                "",
            )
            .note("the driver needs module_init(fn) or a module_*_driver() macro from the table"),
        );
    }
    for ((ai, reason), ex) in &w.exclusions {
        let a = &aspect.advices[*ai];
        warnings.push(
            Diag::warning(
                &aspect.path,
                &aspect.text,
                a.pointcut_range.clone(),
                format!("advice `{}`: {} join point(s) left out", a.name, ex.count),
                reason.clone(),
            )
            .note(format!("first at {}:{}", ex.first.0, ex.first.1)),
        );
    }
    for (ai, a) in aspect.advices.iter().enumerate() {
        if a.weave && w.matched[ai] == 0 {
            warnings.push(Diag::warning(
                &aspect.path,
                &aspect.text,
                a.pointcut_range.clone(),
                format!("advice `{}` matches no join point", a.name),
                "this pointcut matches nothing in the driver",
            ));
        }
    }
    // Render the woven files.
    let mut woven = Woven {
        name: aspect.name.clone(),
        ..Default::default()
    };
    let header_name = format!("{prefix}.h");
    for (i, f) in driver.files.iter().enumerate() {
        let mut edits = std::mem::take(&mut w.edits[i]);
        if edits.is_empty() {
            woven.copies.insert(f.rel.clone(), f.pf.path.clone());
            continue;
        }
        let first = w.first_fn.get(&i).copied().unwrap_or(0);
        let at = include_point(f, first);
        let line = f.pf.line_of(at);
        edits.push(Edit::insert(
            at,
            0,
            format!("#include \"{header_name}\"\n#line {line}\n"),
        ));
        let text = Edits::from(edits)
            .apply(&f.pf.text)
            .map_err(|e| AspectError::Msg(format!("{}: internal weaving error: {e}", f.rel)))?;
        woven.files.insert(f.rel.clone(), text);
        woven.woven.push(f.rel.clone());
    }
    let plan = Plan {
        aspect,
        prefix: prefix.clone(),
        hooks: w.hooks,
        tramps: w.tramps,
        forward: w.forward,
        driver_headers: w.headers.into_iter().collect(),
        kernel_includes: if w.kernel_types {
            crate::kbuild::system_includes(driver)
        } else {
            Vec::new()
        },
        local_files: driver.files.iter().map(|f| f.rel.clone()).collect(),
    };
    let gen = codegen::generate(&plan);
    woven.joinpoints = gen.records.clone();
    for (rel, text) in gen.files {
        woven.generated.push(rel.clone());
        woven.files.insert(rel, text);
    }
    woven.line_map = gen.line_map;
    // The Makefile: add the generated object to the module.
    let c_name = format!("{prefix}.c");
    let mut linked = false;
    for (rel, path) in &driver.others {
        let base = rel.rsplit('/').next().unwrap_or(rel);
        if (base == "Makefile" || base == "Kbuild") && !rel.contains('/') {
            let text = std::fs::read_to_string(path).map_err(|e| AspectError::io(path, e))?;
            if let Some(t) = link_object(&text, driver, &prefix) {
                woven.files.insert(rel.clone(), t);
                linked = true;
                continue;
            }
        }
        woven.copies.insert(rel.clone(), path.clone());
    }
    if !linked && !woven.woven.is_empty() {
        // A single-file module: the generated C joins the woven file that
        // holds module_init (or the first woven .c).
        let host = driver
            .files
            .iter()
            .enumerate()
            .find(|(i, f)| {
                f.rel.ends_with(".c")
                    && (w.infra.init.contains_key(i)
                        || module_driver.as_ref().is_some_and(|m| m.0 == *i))
            })
            .map(|(_, f)| f.rel.clone())
            .or_else(|| woven.woven.iter().find(|r| r.ends_with(".c")).cloned());
        match host {
            Some(h) => {
                if !woven.files.contains_key(&h) {
                    let f = driver
                        .files
                        .iter()
                        .find(|f| f.rel == h)
                        .expect("host is a driver file");
                    woven.copies.remove(&h);
                    woven.files.insert(h.clone(), f.pf.text.clone());
                    woven.woven.push(h.clone());
                }
                let t = woven.files.get_mut(&h).expect("present");
                if !t.ends_with('\n') {
                    t.push('\n');
                }
                t.push_str(&format!("#include \"{c_name}\"\n"));
                warnings.push(Diag::warning(
                    &aspect.path,
                    &aspect.text,
                    0..0,
                    format!(
                        "no composite object in a Makefile: {c_name} is included at the end of {h}"
                    ),
                    "",
                ));
            }
            None => warnings.push(Diag::warning(
                &aspect.path,
                &aspect.text,
                0..0,
                format!(
                    "no Makefile and no .c file to carry {c_name}: add it to the module's objects"
                ),
                "",
            )),
        }
    }
    woven.woven.sort();
    woven
        .files
        .insert(format!("{prefix}.joinpoints"), woven.listing());
    woven.generated.push(format!("{prefix}.joinpoints"));
    woven.generated.sort();
    if opts.check {
        if let Some(kdir) = &opts.kdir {
            let diags = crate::kbuild::check(kdir, aspect, &woven, driver)?;
            let (errs, warns): (Vec<Diag>, Vec<Diag>) = diags.into_iter().partition(|d| !d.warning);
            warnings.extend(warns);
            if !errs.is_empty() {
                let mut all = errs;
                all.extend(warnings);
                return Err(AspectError::Diagnostics(all));
            }
        }
    }
    woven.warnings = warnings;
    Ok(woven)
}

/// Adds the generated object to the composite module in a Makefile.
fn link_object(text: &str, driver: &Driver, prefix: &str) -> Option<String> {
    let objs: Vec<String> = driver
        .files
        .iter()
        .filter(|f| f.rel.ends_with(".c"))
        .map(|f| format!("{}.o", f.rel.trim_end_matches(".c")))
        .collect();
    let mut composite = None;
    for line in text.lines() {
        let l = line.trim();
        for suffix in ["-objs", "-y"] {
            if let Some(pos) = l.find(suffix) {
                let name = &l[..pos];
                let rest = l[pos + suffix.len()..].trim_start();
                if ident::is_ident(&name.replace('-', "_"))
                    && (rest.starts_with(":=") || rest.starts_with("+=") || rest.starts_with('='))
                    && objs.iter().any(|o| l.split_whitespace().any(|w| w == o))
                    && name != "obj"
                {
                    composite.get_or_insert_with(|| name.to_string());
                }
            }
        }
    }
    let name = composite?;
    let mut t = text.to_string();
    if !t.ends_with('\n') {
        t.push('\n');
    }
    t.push_str(&format!(
        "\n# Added by fgft-cc aspect: advice trampolines, static keys, debugfs.\n{name}-y += {prefix}.o\n"
    ));
    Some(t)
}

/// Static checks of the aspect against the driver's types: members that the
/// struct does not have, patterns that name nothing.
pub fn check_aspect(aspect: &Aspect, env: &TypeEnv, driver: &Driver) -> Vec<Diag> {
    let mut out = Vec::new();
    let defined: BTreeSet<String> = driver
        .files
        .iter()
        .flat_map(|f| {
            let mut v = Vec::new();
            let root = f.pf.tree.root_node();
            collect_fn_names(f, root, &mut v);
            v
        })
        .collect();
    for a in &aspect.advices {
        let kinds = a.pointcut.kinds();
        for b in &a.bodies {
            for (off, name) in codegen::unknown_context_vars(&b.code.text) {
                let r = b.code.raw_range(off..off + name.len());
                out.push(
                    Diag::error(
                        &aspect.path,
                        &aspect.text,
                        r,
                        format!("unknown context variable `{name}` in advice `{}`", a.name),
                        "not a context variable",
                    )
                    .note(format!(
                        "known: {}",
                        codegen::CONTEXT_VARS
                            .iter()
                            .map(|(n, _)| *n)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                );
            }
            if b.kind != BodyKind::Before && kinds == [pointcut::Kind::Access] {
                out.push(
                    Diag::error(
                        &aspect.path,
                        &aspect.text,
                        b.range.clone(),
                        format!("advice `{}`: access join points take <before> only", a.name),
                        format!("<{}> cannot run at a member access", b.kind.tag()),
                    )
                    .note("the hook runs when the object pointer is evaluated, before the member is read or written; jp->access tells read from write"),
                );
            }
        }
        for (p, _) in a.pointcut.prims() {
            match p {
                Prim::Access { record, member } => {
                    check_access(aspect, env, record, member, &mut out)
                }
                Prim::Execution(pat) | Prim::WithinFunction(pat)
                    if !pat.is_wild() && !defined.contains(&pat.text) =>
                {
                    let mut d = Diag::warning(
                        &aspect.path,
                        &aspect.text,
                        pat.range.clone(),
                        format!("no function `{}` is defined in the driver", pat.text),
                        "names no function",
                    );
                    if let Some(s) = crate::suggest(&pat.text, defined.iter().map(String::as_str)) {
                        d = d.note(format!("did you mean `{s}`?"));
                    }
                    out.push(d);
                }
                _ => {}
            }
        }
    }
    out
}

fn collect_fn_names(f: &scan::SrcFile, n: tree_sitter::Node<'_>, out: &mut Vec<String>) {
    for k in 0..n.named_child_count() {
        let Some(c) = n.named_child(k as u32) else {
            continue;
        };
        match c.kind() {
            "function_definition" => {
                if let Some(name) = fgft_parse::function_name(&f.pf, c) {
                    out.push(name.to_string());
                }
            }
            k if fgft_parse::walk::holds_top_level(k) => collect_fn_names(f, c, out),
            _ => {}
        }
    }
}

fn check_access(
    aspect: &Aspect,
    env: &TypeEnv,
    record: &pointcut::Pattern,
    member: &pointcut::Pattern,
    out: &mut Vec<Diag>,
) {
    let path = &aspect.path;
    let text: &Arc<str> = &aspect.text;
    let recs: Vec<RecordKey> = env.records_named(record);
    if recs.is_empty() {
        if record.is_wild() {
            return;
        }
        if env.has_kernel {
            out.push(
                Diag::error(
                    path,
                    text,
                    record.range.clone(),
                    format!("no struct or union `{}` is defined in the driver or the kernel headers it includes", record.text),
                    "unknown struct",
                )
                .note("an <import> of the header that defines it brings it into the kernel unit"),
            );
        } else if !member.is_wild() {
            out.push(
                Diag::warning(
                    path,
                    text,
                    member.range.clone(),
                    format!(
                        "cannot check that `{}` has a member `{}`",
                        record.text, member.text
                    ),
                    "struct not defined in the driver's files",
                )
                .note("give --kdir to check members of kernel structs"),
            );
        }
        return;
    }
    let any = recs
        .iter()
        .any(|k| env.member_names(k).iter().any(|m| member.matches(m)));
    if any {
        return;
    }
    if record.is_wild() {
        out.push(Diag::warning(
            path,
            text,
            member.range.clone(),
            format!(
                "no struct matching `{}` has a member matching `{}`",
                record.text, member.text
            ),
            "matches no member",
        ));
        return;
    }
    let k = &recs[0];
    let names = env.member_names(k);
    let def = &env.records[k];
    let mut d = Diag::error(
        path,
        text,
        member.range.clone(),
        if member.is_wild() {
            format!("no member of `{}` matches `{}`", record.text, member.text)
        } else {
            format!("`{}` has no member `{}`", record.text, member.text)
        },
        "not a member",
    );
    if let Some(s) = crate::suggest(&member.text, names.iter().map(String::as_str)) {
        d = d.note(format!("did you mean `{s}`?"));
    }
    d = d.note(format!(
        "`{}` is defined at {}:{}",
        record.text,
        def.file.display(),
        def.line
    ));
    out.push(d);
}

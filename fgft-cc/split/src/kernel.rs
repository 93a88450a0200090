//! What the kernel itself says a name is: an exported function (the
//! kernel build directory's Module.symvers), a macro or a static inline
//! function of its headers (the driver's units preprocessed by Kbuild with
//! every definition kept, `-dD`).
//!
//! Job: tell the planner which calls of the driver are not kernel calls at
//! all.  A macro expands at the call site in SFI code and a static inline
//! is compiled into the SFI module, so both are checked like driver code
//! and need no compensation; what they call in turn is classified by the
//! same rules.  Only exported functions need a table entry.  The bodies
//! also serve as the field-access models of these names, so the copy-in
//! brings what they read.
//!
//! Invariants: a name is classified from the units of this driver only
//! (the configuration and headers it is compiled with); a static inline's
//! own calls run unwrapped inside the SFI module, so one that reaches an
//! exported function with effects is refused, naming the table entry that
//! would wrap the inline itself; nothing here guesses: a unit that cannot
//! be preprocessed leaves its names unclassified (today's diagnostics).

use crate::plan::table::{ArgSpec, Table};
use fgft_base::{ident, lex};
use fgft_facts::model::{ApiModel, ApiModels, ArgKind, Returns};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A definition of the kernel's headers.
#[derive(Debug, Clone)]
pub struct Def {
    pub kind: DefKind,
    pub params: Vec<String>,
    /// The macro's replacement text, or the function's body with braces.
    pub body: String,
    /// Where it is defined (`include/linux/netdevice.h:2550`).
    pub at: String,
    /// The names it calls.
    pub callees: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefKind {
    Macro,
    Inline,
}

impl DefKind {
    pub fn label(self) -> &'static str {
        match self {
            DefKind::Macro => "macro",
            DefKind::Inline => "static inline",
        }
    }
}

/// The kernel's view of the names a driver uses.
#[derive(Debug, Default)]
pub struct Kernel {
    exported: BTreeSet<String>,
    defs: BTreeMap<String, Def>,
    /// Members of the kernel's structs and unions that are arrays, by tag
    /// (`net_device` -> `name`, ...); anonymous members flattened.
    arrays: BTreeMap<String, BTreeSet<String>>,
    /// The flexible array members among `arrays`.
    flex: BTreeMap<String, BTreeSet<String>>,
    /// Members of the kernel's structs and unions that are function
    /// pointers, by tag (`mii_if_info` -> `mdio_read`, `mdio_write`).
    fn_members: BTreeMap<String, BTreeSet<String>>,
    /// Members of the kernel's structs and unions that point to a struct
    /// or union, by tag (`sk_buff` -> `dev` -> `net_device`).
    ptr_members: BTreeMap<String, BTreeMap<String, String>>,
    /// Every struct and union tag read (a member not in `arrays` is not one).
    records: BTreeSet<String>,
    /// Object-like macros that only rename a function
    /// (`#define cpu_to_be16s __cpu_to_be16s`).
    aliases: BTreeMap<String, String>,
    /// Every identifier the driver's own files keep after preprocessing
    /// (what `#if` blocks of this configuration drop is not there).
    own_idents: BTreeSet<String>,
    /// The driver's own macro definitions this configuration compiles
    /// (the `-dD` unit's `#define` lines of the driver's files), by name:
    /// the text after the name (`(__hp, __reg) readl(__reg)`).
    own_defines: BTreeMap<String, String>,
    /// The lines of each of the driver's own files (by the path the line
    /// markers give) that keep code after preprocessing.
    own_lines: BTreeMap<PathBuf, BTreeSet<usize>>,
    /// The header that defines each struct or union tag, as an include
    /// path (`buffer_head` -> `linux/buffer_head.h`).
    record_headers: BTreeMap<String, String>,
    /// The struct and union tags each unit (as given to [`Kernel::load`])
    /// defines once preprocessed.
    unit_records: BTreeMap<PathBuf, BTreeSet<String>>,
    /// Units that could not be preprocessed, with why.
    pub unavailable: Vec<(PathBuf, String)>,
}

/// How a name the table does not know fares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// A macro or static inline that reaches nothing needing a wrapper:
    /// compiled into SFI code. The description names it and its place.
    Header(String),
    /// A macro or static inline that reaches what it must not: each
    /// problem is a sentence, then the fix.
    Blocked(Vec<(String, String)>),
    /// An exported function.
    Exported,
    /// Neither exported nor defined by the headers of the units read.
    Unknown,
}

/// Table effects a static inline may reach directly (the call runs
/// unwrapped, from SFI code): value computations, logging and delays.
pub const HEADER_SAFE_EFFECTS: &[&str] = &["pure", "log", "delay"];

/// Functions a static inline may call directly besides the table's
/// `[direct]` symbols: the memory intrinsics, which the sanitizer turns
/// into its checked call-backs.
const HEADER_SAFE_CALLS: &[&str] = &[
    "memcpy",
    "memset",
    "memmove",
    "__memcpy",
    "__memset",
    "__memmove",
];

const KEYWORDS: &[&str] = &[
    "if",
    "while",
    "for",
    "switch",
    "return",
    "sizeof",
    "typeof",
    "__typeof__",
    "__typeof",
    "_Generic",
    "__attribute__",
    "__attribute",
    "asm",
    "__asm__",
    "__asm",
    "volatile",
    "__volatile__",
    "_Static_assert",
    "__builtin_choose_expr",
    "do",
    "else",
    "case",
    "_Alignof",
    "__alignof__",
    "alignof",
    "offsetof",
    "__builtin_offsetof",
];

/// A static inline's body as a model: its parameters renamed where they
/// stand as values, so that expanding the model like a macro leaves member
/// names alone (`skb->vlan_tci = vlan_tci` with argument `vid` is
/// `skb->vlan_tci = vid`, where a macro's expansion would also rename the
/// member).  Returns the body and the parameters' new names.
fn function_params(body: &str, params: &[String]) -> (String, Vec<String>) {
    let renamed: Vec<String> = (0..params.len())
        .map(|i| format!("__fgft_arg{i}"))
        .collect();
    let mut out = String::with_capacity(body.len());
    let mut last = 0;
    for r in fgft_base::lex::ident_tokens(body) {
        let Some(k) = params.iter().position(|p| *p == body[r.clone()]) else {
            continue;
        };
        let before = body[..r.start].trim_end();
        if before.ends_with('.') || before.ends_with("->") {
            continue;
        }
        out.push_str(&body[last..r.start]);
        out.push_str(&renamed[k]);
        last = r.end;
    }
    out.push_str(&body[last..]);
    (out, renamed)
}

/// Each unit preprocessed with its macro definitions (a Kbuild make per
/// unit, as many at once as there are CPUs); the results in `units`' order.
fn preprocess_all(kdir: &Path, units: &[PathBuf]) -> Vec<Result<String, String>> {
    use rayon::prelude::*;
    units
        .par_iter()
        .map(|u| fgft_parse::types::preprocess_with(kdir, u, true).map_err(|e| e.to_string()))
        .collect()
}

impl Kernel {
    /// Reads `kdir`'s Module.symvers and preprocesses each unit.
    pub fn load(kdir: &Path, units: &[PathBuf]) -> Kernel {
        let mut k = Kernel::default();
        if let Ok(t) = std::fs::read_to_string(kdir.join("Module.symvers")) {
            for l in t.lines() {
                if let Some(name) = l.split('\t').nth(1) {
                    k.exported.insert(name.to_string());
                }
            }
        }
        // Kbuild runs in KDIR: a unit named relative to where the user
        // stands (`tun.c`) is given to it by its absolute path.
        let abs: Vec<PathBuf> = units
            .iter()
            .map(|u| std::path::absolute(u).unwrap_or_else(|_| u.clone()))
            .collect();
        let texts = preprocess_all(kdir, &abs);
        for ((u, abs), text) in units.iter().zip(&abs).zip(texts) {
            match text {
                Ok(text) => {
                    let seen = k.read_unit(&text, abs);
                    k.read_own(&text, abs);
                    k.unit_records.insert(u.clone(), seen);
                }
                Err(e) => k.unavailable.push((u.clone(), e)),
            }
        }
        k
    }

    /// Whether the driver's own global or function `name` is compiled out
    /// in this configuration (defined only in `#if` blocks it drops).
    /// False when some unit could not be read.
    pub fn compiled_out(&self, name: &str) -> bool {
        self.unavailable.is_empty()
            && !self.own_idents.is_empty()
            && !self.own_idents.contains(name)
    }

    /// The `#if` branches of the driver's file `path` (its text `text`)
    /// that this configuration drops: no line of them keeps code after
    /// preprocessing, though some line holds code.  None when fgft did not
    /// see the file preprocessed (or some unit could not be read).
    pub fn dropped_branches(&self, path: &Path, text: &str) -> Option<Vec<std::ops::Range<usize>>> {
        if !self.unavailable.is_empty() {
            return None;
        }
        let lines = self.own_lines.get(&canonical(path)?)?;
        let mut out = Vec::new();
        let index = fgft_base::LineIndex::new(text);
        for r in fgft_parse::cond::branches(text) {
            if r.start >= r.end {
                continue;
            }
            let first = index.line(r.start);
            let mut code = false;
            let mut kept = false;
            let mut in_comment = false;
            for (k, l) in text[r.clone()].lines().enumerate() {
                let t = l.trim();
                let comment_only = in_comment || t.starts_with("/*") || t.starts_with("//");
                in_comment = fgft_parse::cond::comment_state(l.as_bytes(), in_comment);
                if t.is_empty() || t.starts_with('#') || comment_only {
                    continue;
                }
                code = true;
                if lines.contains(&(first + k)) {
                    kept = true;
                    break;
                }
            }
            if code && !kept {
                out.push(r);
            }
        }
        Some(out)
    }

    /// The identifiers of the driver's own files in a preprocessed unit.
    fn read_own(&mut self, text: &str, unit: &Path) {
        let own_dir = unit
            .parent()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        let mut own = false;
        let mut seg_start = 0;
        let flush = |k: &mut Kernel, seg: &str| {
            for t in lex::ident_tokens(seg) {
                k.own_idents.insert(seg[t.start..t.end].to_string());
            }
        };
        let mut pos = 0;
        let mut cur_file = PathBuf::new();
        let mut cur_line = 0usize;
        for line in text.split_inclusive('\n') {
            let marker = line
                .strip_prefix("# ")
                .filter(|r| r.as_bytes().first().is_some_and(u8::is_ascii_digit));
            if let Some(rest) = marker {
                if own {
                    flush(self, &text[seg_start..pos]);
                }
                let f = rest.split('"').nth(1).unwrap_or("");
                own = f.starts_with(&own_dir);
                seg_start = pos + line.len();
                if own {
                    cur_file = canonical(Path::new(f)).unwrap_or_else(|| PathBuf::from(f));
                }
                cur_line = rest
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                pos += line.len();
                continue;
            }
            if own && !line.trim().is_empty() && !line.starts_with('#') {
                self.own_lines
                    .entry(cur_file.clone())
                    .or_default()
                    .insert(cur_line);
            }
            cur_line += 1;
            if let Some(d) = line.strip_prefix("#define ").filter(|_| own) {
                // Definitions are not uses.
                flush(self, &text[seg_start..pos]);
                seg_start = pos + line.len();
                let nb = d.bytes().take_while(|&c| ident::is_byte(c)).count();
                if nb > 0 {
                    let rest = d[nb..].trim_end_matches('\n').to_string();
                    self.own_defines.insert(d[..nb].to_string(), rest);
                }
            }
            pos += line.len();
        }
        if own {
            flush(self, &text[seg_start..]);
        }
    }

    /// Gives each driver macro of `prog` the definition this configuration
    /// compiles, where the driver defines it more than once (sunhme's
    /// `hme_read32()` under `#ifdef CONFIG_SBUS` and `#else`): fgft's
    /// parse keeps one of them, the preprocessed unit tells which holds.
    pub fn active_macros(&self, prog: &mut fgft_facts::program::Program) {
        for (name, m) in prog.macros.iter_mut() {
            let Some(rest) = self.own_defines.get(name) else {
                continue;
            };
            let (params, params_raw, body) = match rest.strip_prefix('(') {
                Some(r) => {
                    let Some(close) = r.find(')') else { continue };
                    let raw = r[..close].to_string();
                    // As tree-sitter lists them: `...` its own entry,
                    // after the name of a GNU `args...`.
                    let mut ps: Vec<String> = Vec::new();
                    for p in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                        match p.strip_suffix("...") {
                            Some(n) => {
                                if !n.trim().is_empty() {
                                    ps.push(n.trim().to_string());
                                }
                                ps.push("...".into());
                            }
                            None => ps.push(p.to_string()),
                        }
                    }
                    (
                        Some(ps),
                        format!("({raw})"),
                        r[close + 1..].trim().to_string(),
                    )
                }
                None => (None, String::new(), rest.trim().to_string()),
            };
            let same = |a: &str, b: &str| {
                a.split_whitespace().collect::<String>() == b.split_whitespace().collect::<String>()
            };
            if same(&m.body.replace("\\\n", " "), &body) && m.params == params {
                continue;
            }
            m.params = params;
            m.params_raw = params_raw;
            m.body = body;
        }
    }

    /// Whether any unit was read.
    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
    }

    pub fn def(&self, name: &str) -> Option<&Def> {
        self.defs.get(self.resolve(name))
    }

    /// `name` through object-like aliases (at most a few hops).
    pub fn resolve<'a>(&'a self, mut name: &'a str) -> &'a str {
        for _ in 0..4 {
            match self.aliases.get(name) {
                Some(t) => name = t,
                None => break,
            }
        }
        name
    }

    pub fn is_exported(&self, name: &str) -> bool {
        self.exported.contains(name)
    }

    /// Whether member `member` of the kernel's struct or union `tag`
    /// (without keyword) is an array; None when the struct was not read.
    pub fn member_is_array(&self, tag: &str, member: &str) -> Option<bool> {
        if !self.records.contains(tag) {
            return None;
        }
        Some(self.arrays.get(tag).is_some_and(|m| m.contains(member)))
    }

    /// Whether member `member` of the kernel's record `tag` is a flexible
    /// array (the object's tail, of no size of its own).
    pub fn member_is_flexible(&self, tag: &str, member: &str) -> bool {
        self.flex.get(tag).is_some_and(|m| m.contains(member))
    }

    /// The struct or union tag member `member` of the kernel's record `tag`
    /// points to (`sk_buff`, `dev` -> `net_device`).
    pub fn member_pointee(&self, tag: &str, member: &str) -> Option<&str> {
        self.ptr_members.get(tag)?.get(member).map(String::as_str)
    }

    /// The function-pointer members of the kernel's struct or union `tag`
    /// (without keyword); empty when it has none or was not read.
    pub fn fn_members(&self, tag: &str) -> impl Iterator<Item = &str> {
        self.fn_members
            .get(tag)
            .into_iter()
            .flatten()
            .map(String::as_str)
    }

    /// The include path of the kernel header that defines `tag`, when
    /// `unit` (a unit given to [`Kernel::load`]) does not see its
    /// definition: generated code that walks a `struct tag` there includes
    /// it.  None when the unit sees it, or nothing is known.
    pub fn header_for(&self, unit: &Path, tag: &str) -> Option<&str> {
        let seen = self.unit_records.get(unit)?;
        if seen.contains(tag) {
            return None;
        }
        self.record_headers.get(tag).map(String::as_str)
    }

    /// Reads the macro definitions and static inline functions of one
    /// preprocessed unit; definitions of the driver's own files are not
    /// the kernel's and are skipped.  Returns the struct and union tags
    /// the unit defines.
    fn read_unit(&mut self, text: &str, unit: &Path) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let own_dir = unit
            .parent()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        let mut file = String::new();
        let mut line = 0usize;
        let b = text.as_bytes();
        let mut i = 0;
        let mut depth = 0i32;
        let mut head_start = 0usize;
        while i < b.len() {
            let at_line_start = i == 0 || b[i - 1] == b'\n';
            if at_line_start && b[i] == b'#' {
                let end = text[i..].find('\n').map_or(text.len(), |k| i + k);
                let l = &text[i..end];
                if let Some(rest) = l.strip_prefix("# ") {
                    // A line marker: `# 123 "file" flags`.
                    let mut parts = rest.splitn(2, ' ');
                    if let (Some(n), Some(f)) = (parts.next(), parts.next()) {
                        if let Ok(n) = n.parse::<usize>() {
                            line = n.saturating_sub(1);
                            file = f.split('"').nth(1).unwrap_or("").to_string();
                        }
                    }
                } else if let Some(d) = l.strip_prefix("#define ") {
                    if depth == 0 {
                        // The driver's own headers are the driver's, but an
                        // object-like alias there (`#define minix_set_bit
                        // __set_bit_le`) names the kernel function a call
                        // reaches.
                        self.read_define(d, &file, line + 1, file.starts_with(&own_dir));
                    }
                }
                line += 1;
                i = end + 1;
                if depth == 0 {
                    head_start = i;
                }
                continue;
            }
            match b[i] {
                b'\n' => line += 1,
                b'"' | b'\'' => {
                    let e = lex::skip_literal(b, i);
                    line += text[i..e].matches('\n').count();
                    i = e;
                    continue;
                }
                b'{' => {
                    if depth == 0 {
                        let head = &text[head_start..i];
                        let head_line = (
                            file.clone(),
                            line + 1 - head.trim_start().matches('\n').count(),
                        );
                        if let Some(end) = matching_brace(b, i) {
                            if let Some(tag) = record_tag(head) {
                                seen.insert(tag.clone());
                                if !file.starts_with(&own_dir) {
                                    if let Some(h) = include_path(&file) {
                                        self.record_headers.entry(tag.clone()).or_insert(h);
                                    }
                                    let mut m = Members::default();
                                    record_members(&text[i + 1..end - 1], &mut m);
                                    self.records.insert(tag.clone());
                                    self.arrays.insert(tag.clone(), m.arrays);
                                    self.flex.insert(tag.clone(), m.flex);
                                    self.ptr_members.insert(tag.clone(), m.ptrs);
                                    self.fn_members.insert(tag, m.fns);
                                }
                            } else if head.contains("inline") && !file.starts_with(&own_dir) {
                                if let Some((name, params)) = function_head(head) {
                                    let body = &text[i..end];
                                    self.defs.insert(
                                        name,
                                        Def {
                                            kind: DefKind::Inline,
                                            callees: callees(body, &params),
                                            params,
                                            body: body.to_string(),
                                            at: format!("{}:{}", shown(&head_line.0), head_line.1),
                                        },
                                    );
                                }
                            }
                        }
                    }
                    depth += 1;
                }
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        head_start = i + 1;
                    }
                }
                b';' if depth == 0 => head_start = i + 1,
                _ => {}
            }
            i += 1;
        }
        seen
    }

    fn read_define(&mut self, d: &str, file: &str, line: usize, aliases_only: bool) {
        let nb = d.bytes().take_while(|&c| ident::is_byte(c)).count();
        let name = &d[..nb];
        if name.is_empty() {
            return;
        }
        let rest = &d[nb..];
        if aliases_only && rest.starts_with('(') {
            return;
        }
        let (params, body) = if let Some(r) = rest.strip_prefix('(') {
            let close = r.find(')').unwrap_or(r.len());
            let ps: Vec<String> = r[..close]
                .split(',')
                .map(|p| p.trim().trim_end_matches("...").to_string())
                .map(|p| {
                    if p.is_empty() {
                        "__VA_ARGS__".into()
                    } else {
                        p
                    }
                })
                .collect();
            (ps, r.get(close + 1..).unwrap_or("").trim().to_string())
        } else {
            // Object-like macros are constants (not calls) or aliases of a
            // function name.
            let body = rest.trim();
            if ident::is_ident(body) && body != name {
                self.aliases.insert(name.to_string(), body.to_string());
            }
            return;
        };
        self.defs.insert(
            name.to_string(),
            Def {
                kind: DefKind::Macro,
                callees: callees(&body, &params),
                params,
                body,
                at: format!("{}:{line}", shown(file)),
            },
        );
    }

    /// Whether SFI code may reach `c`'s wrapper through the symbol itself:
    /// an exported function whose wrapper takes what it takes (no lvalue
    /// argument, not variadic).  The SFI units declare it with the
    /// wrapper's symbol (`__asm__("fgft_w_c")`), so the kernel's own
    /// inline helpers compiled into SFI code call the wrapper too.
    pub fn relabels(&self, c: &str, table: &Table) -> bool {
        self.exported.contains(c)
            && table.apis.get(c).is_some_and(|e| {
                !e.inline && !e.variadic && e.params.iter().all(|p| p.kind != ArgSpec::Lvalue)
            })
    }

    /// Every name `name`'s definition reaches, through other definitions.
    pub fn reach(&self, name: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![name.to_string()];
        while let Some(n) = stack.pop() {
            let Some(d) = self.defs.get(&n) else { continue };
            for c in &d.callees {
                if seen.insert(c.clone()) {
                    stack.push(c.clone());
                }
            }
        }
        seen
    }

    /// Field-access models for every definition the table does not know
    /// (the table's own come first).
    pub fn add_models(&self, models: &mut ApiModels) {
        let aliased = self
            .aliases
            .keys()
            .filter_map(|a| self.def(a).map(|d| (a, d)));
        for (name, d) in self.defs.iter().chain(aliased) {
            if models.map.contains_key(name) {
                continue;
            }
            let params: Vec<String> = d
                .params
                .iter()
                .filter(|p| *p != "__VA_ARGS__")
                .cloned()
                .collect();
            let (model, params) = match d.kind {
                DefKind::Macro if !d.body.is_empty() => (Some(d.body.clone()), params),
                DefKind::Inline => {
                    let (body, renamed) = function_params(&d.body, &params);
                    (Some(body), renamed)
                }
                DefKind::Macro => (None, params),
            };
            models.map.insert(
                name.clone(),
                ApiModel {
                    name: name.clone(),
                    params: params.into_iter().map(|p| (p, ArgKind::Val)).collect(),
                    model,
                    returns: Returns::Plain,
                    inline: true,
                    header: true,
                },
            );
        }
    }

    /// Whether inlining the helper `c`, which the table wraps as `e`,
    /// loses what the wrapper does: a deferred call, a lock, an object's
    /// lifetime, or a store no store log sees (inline assembly, the
    /// atomics and bit operations of x86).  Plain C stores of an inlined
    /// helper are checked and logged as the driver's own are.
    fn bypassed(&self, c: &str, e: &crate::plan::table::ApiEntry) -> bool {
        if e.commit
            || e.lock.is_some()
            || e.unlock.is_some()
            || matches!(e.effect.as_str(), "alloc" | "free")
        {
            return true;
        }
        std::iter::once(c.to_string())
            .chain(self.reach(c))
            .filter_map(|n| self.defs.get(&n))
            .any(|d| {
                ["asm", "__asm__", "asm_inline"]
                    .iter()
                    .any(|t| lex::has_token(&d.body, t))
            })
    }

    /// How `name` (a call of the driver the table does not know) fares.
    pub fn classify(&self, name: &str, table: &Table, pure: &[String]) -> Class {
        let name = self.resolve(name);
        if table.knows(name) || pure.iter().any(|p| p == name) {
            return Class::Header(format!("another name of `{name}`"));
        }
        let Some(d) = self.defs.get(name) else {
            return if self.exported.contains(name) {
                Class::Exported
            } else {
                Class::Unknown
            };
        };
        let mut problems: Vec<(String, String)> = Vec::new();
        let mut seen: BTreeSet<String> = BTreeSet::new();
        // (name, the static inline whose body the call is in, if any)
        let mut stack: Vec<(String, Option<String>)> = vec![(name.to_string(), None)];
        seen.insert(name.to_string());
        while let Some((n, inline)) = stack.pop() {
            let Some(d) = self.defs.get(&n) else { continue };
            let inline = if d.kind == DefKind::Inline {
                Some(n.clone())
            } else {
                inline
            };
            for c in &d.callees {
                if c.starts_with("__builtin_") || d.params.contains(c) {
                    continue;
                }
                let known = table.apis.get(c);
                let header_code = inline.as_deref();
                // Inside a static inline's body a helper of the headers is
                // inlined code, not a call: what matters is what it calls.
                // Unless the table wraps it: then what the helper does
                // (folio_put's reference drop, an atomic no store log
                // sees) is what the table's entry compensates.
                let wrapped = known.is_some_and(|e| !e.inline && self.bypassed(c, e));
                if header_code.is_some() && self.defs.contains_key(c) && !wrapped {
                    if seen.insert(c.clone()) {
                        stack.push((c.clone(), inline.clone()));
                    }
                    continue;
                }
                if known.is_some() || table.inline_names.contains(c) || pure.contains(c) {
                    let safe = known.is_none_or(|e| {
                        e.inline || HEADER_SAFE_EFFECTS.contains(&e.effect.as_str())
                    }) || HEADER_SAFE_CALLS.contains(&c.as_str())
                        || table.direct.contains(c)
                        || self.relabels(c, table);
                    if let (Some(h), false) = (header_code, safe) {
                        problems.push((
                            format!(
                                "`{h}` ({} {}) calls `{c}` from its own body, which is compiled into the SFI module: the call would bypass `{c}`'s wrapper",
                                self.defs[h].kind.label(),
                                self.defs[h].at
                            ),
                            format!("add [api.{h}] to a compensations.toml, so that `{h}` itself is wrapped"),
                        ));
                    }
                    continue;
                }
                if self.defs.contains_key(c) {
                    if seen.insert(c.clone()) {
                        stack.push((c.clone(), inline.clone()));
                    }
                    continue;
                }
                if HEADER_SAFE_CALLS.contains(&c.as_str()) || table.direct.contains(c) {
                    continue;
                }
                if self.exported.contains(c) {
                    let (what, fix) = match header_code {
                        Some(h) => (
                            format!(
                                "`{h}` ({} {}) calls exported `{c}`, which has no entry in the compensation table",
                                self.defs[h].kind.label(),
                                self.defs[h].at
                            ),
                            format!("add [api.{h}] (or [api.{c}] if `{c}` is side-effect free) to a compensations.toml"),
                        ),
                        None => (
                            format!(
                                "`{n}` ({} {}) expands to a call of exported `{c}`, which has no entry in the compensation table",
                                self.defs[&n].kind.label(),
                                self.defs[&n].at
                            ),
                            format!("add [api.{c}] to a compensations.toml"),
                        ),
                    };
                    problems.push((what, fix));
                }
            }
        }
        if problems.is_empty() {
            Class::Header(format!(
                "{} of the kernel headers, {}",
                d.kind.label(),
                d.at
            ))
        } else {
            problems.sort();
            problems.dedup();
            Class::Blocked(problems)
        }
    }
}

/// A header path as reports show it: relative to the kernel tree or build
/// directory (`include/linux/netdevice.h`, `arch/x86/include/...`).
fn shown(file: &str) -> String {
    for k in ["/include/", "/arch/"] {
        if let Some(i) = file.find(k) {
            return file[i + 1..].to_string();
        }
    }
    file.to_string()
}

/// How a kernel header named by a line marker is included: the path after
/// its `include/` directory (`.../include/linux/buffer_head.h` ->
/// `linux/buffer_head.h`), without `uapi/` or `generated/`.  None for a
/// file outside an include directory.
fn include_path(file: &str) -> Option<String> {
    let at = file.rfind("/include/")?;
    let mut rest = &file[at + "/include/".len()..];
    for p in ["generated/", "uapi/"] {
        rest = rest.strip_prefix(p).unwrap_or(rest);
    }
    (rest.ends_with(".h") && !rest.is_empty()).then(|| rest.to_string())
}

/// `struct NAME` or `union NAME` ending a definition's head.
fn record_tag(head: &str) -> Option<String> {
    let words: Vec<&str> = head
        .split(|c: char| c.is_whitespace())
        .filter(|w| !w.is_empty() && !w.starts_with("__attribute__"))
        .collect();
    let n = words.len();
    if n >= 2 && matches!(words[n - 2], "struct" | "union") && ident::is_ident(words[n - 1]) {
        return Some(words[n - 1].to_string());
    }
    None
}

/// The members of a struct body that fgft asks about.
#[derive(Default)]
struct Members {
    arrays: BTreeSet<String>,
    /// Flexible array members (`struct hwc_work_request reqs[];`), also in
    /// `arrays`.
    flex: BTreeSet<String>,
    /// Function pointers (`int (*mdio_read)(...)`).
    fns: BTreeSet<String>,
    /// Pointers to a record: member -> tag (`struct net_device *dev`).
    ptrs: BTreeMap<String, String>,
}

/// The array and function-pointer members of a struct body (`{` and `}`
/// excluded), anonymous struct and union members flattened.
fn record_members(body: &str, out: &mut Members) {
    let b = body.as_bytes();
    let (mut depth, mut paren) = (0i32, 0i32);
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => {
                i = lex::skip_literal(b, i);
                continue;
            }
            b'{' => depth += 1,
            b'}' => depth -= 1,
            b'(' => paren += 1,
            b')' => paren -= 1,
            b';' if depth == 0 && paren == 0 => {
                member_decl(&body[start..i], out);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
}

/// One member declaration: a nested record (named or anonymous) or a list
/// of declarators.
fn member_decl(d: &str, out: &mut Members) {
    let d = d.trim();
    if let (Some(open), Some(close)) = (d.find('{'), d.rfind('}')) {
        let after = d[close + 1..].trim();
        if after.is_empty() || after.starts_with("__attribute__") {
            record_members(&d[open + 1..close], out);
        } else if ident::is_ident(after) {
            // `struct { ... } link_modes;`: its members by path
            // (`link_modes.advertising`).
            let mut inner = Members::default();
            record_members(&d[open + 1..close], &mut inner);
            let p = |m: &String| format!("{after}.{m}");
            out.arrays.extend(inner.arrays.iter().map(p));
            out.flex.extend(inner.flex.iter().map(p));
            out.fns.extend(inner.fns.iter().map(p));
            out.ptrs
                .extend(inner.ptrs.iter().map(|(m, t)| (p(m), t.clone())));
        } else {
            declarators(after, out);
        }
        return;
    }
    // The type is everything before the first declarator; declarators are
    // separated by commas outside parentheses.
    declarators(d, out);
}

fn declarators(d: &str, out: &mut Members) {
    let parts = lex::split_top(d, b',');
    // `struct tag *a, *b`: the record every single-pointer declarator
    // points to.
    let words: Vec<&str> = d
        .split(|c: char| c.is_whitespace() || c == '*')
        .filter(|w| !w.is_empty() && !matches!(*w, "const" | "volatile"))
        .collect();
    let pointee = match words.as_slice() {
        [kw, tag, ..] if matches!(*kw, "struct" | "union") && ident::is_ident(tag) => {
            Some(tag.to_string())
        }
        _ => None,
    };
    for p in parts {
        let p = p.trim();
        if let Some(tag) = &pointee {
            if !p.contains(['(', '[']) && p.matches('*').count() == 1 {
                let n = p.bytes().rev().take_while(|&c| ident::is_byte(c)).count();
                if n > 0 {
                    out.ptrs.insert(p[p.len() - n..].to_string(), tag.clone());
                }
            }
        }
        if let Some(star) = p.find("(*") {
            // `ret (*name)(params)`: the name up to its closing parenthesis.
            let rest = p[star + 2..].trim_start();
            let n = rest.bytes().take_while(|&c| ident::is_byte(c)).count();
            if n > 0 {
                // `(*name[2])`: an array of them.
                let set = if rest[n..].trim_start().starts_with('[') {
                    &mut out.arrays
                } else {
                    &mut out.fns
                };
                set.insert(rest[..n].to_string());
            }
            continue;
        }
        let Some(br) = p.find('[') else { continue };
        let before = p[..br].trim_end();
        let nb = before
            .bytes()
            .rev()
            .take_while(|&c| ident::is_byte(c))
            .count();
        let name = &before[before.len() - nb..];
        if !name.is_empty() {
            out.arrays.insert(name.to_string());
            let size = p[br + 1..].split(']').next().unwrap_or("").trim();
            if size.is_empty() || size == "0" {
                out.flex.insert(name.to_string());
            }
        }
    }
}

/// The byte after the `}` closing the `{` at `open`.
fn matching_brace(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => {
                i = lex::skip_literal(b, i);
                continue;
            }
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The name and parameter names of a function definition's head (the text
/// before its body), skipping attributes.
fn function_head(head: &str) -> Option<(String, Vec<String>)> {
    let b = head.as_bytes();
    let mut depth = 0i32;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'(' => {
                if depth == 0 {
                    let before = head[..i].trim_end();
                    let nb = before
                        .bytes()
                        .rev()
                        .take_while(|&c| ident::is_byte(c))
                        .count();
                    let name = &before[before.len() - nb..];
                    let skip = matches!(
                        name,
                        "__attribute__" | "__attribute" | "__typeof__" | "typeof" | "__typeof" | ""
                    );
                    if !skip && !name.as_bytes()[0].is_ascii_digit() {
                        let close = lex::close_paren(b, i)?;
                        let params = param_names(&head[i + 1..close - 1]);
                        return Some((name.to_string(), params));
                    }
                }
                depth += 1;
            }
            b')' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    None
}

/// Parameter names of a parameter list (`const struct x *a, int (*cb)(int)`).
fn param_names(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let parts = lex::split_top(list, b',');
    for p in parts {
        let p = p.trim();
        if p.is_empty() || p == "void" || p == "..." {
            continue;
        }
        // A function pointer names itself after `(*`.
        let name = if let Some(k) = p.find("(*") {
            p[k + 2..]
                .trim_start()
                .bytes()
                .take_while(|&c| ident::is_byte(c))
                .map(char::from)
                .collect::<String>()
        } else {
            let cut = p.find('[').unwrap_or(p.len());
            let s = p[..cut].trim_end();
            let nb = s.bytes().rev().take_while(|&c| ident::is_byte(c)).count();
            s[s.len() - nb..].to_string()
        };
        if !name.is_empty() {
            out.push(name);
        }
    }
    out
}

/// The names called in `body` (identifiers followed by `(`), in order,
/// without keywords and `params`.
fn callees(body: &str, params: &[String]) -> Vec<String> {
    let b = body.as_bytes();
    let mut out: Vec<String> = Vec::new();
    for t in lex::ident_tokens(body) {
        let id = &body[t.start..t.end];
        let mut j = t.end;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t' || b[j] == b'\n') {
            j += 1;
        }
        if j >= b.len() || b[j] != b'(' {
            continue;
        }
        // `x.f(` and `x->f(` call through members.
        let before = body[..t.start].trim_end();
        if before.ends_with('.') || before.ends_with("->") {
            continue;
        }
        if KEYWORDS.contains(&id)
            || params.iter().any(|p| p == id)
            || id.as_bytes()[0].is_ascii_digit()
        {
            continue;
        }
        if !out.iter().any(|o| o == id) {
            out.push(id.to_string());
        }
    }
    out
}

/// The path `p` names, one spelling for every way of naming it: canonical
/// where the file exists, absolute otherwise.
fn canonical(p: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(p)
        .ok()
        .or_else(|| std::path::absolute(p).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNIT: &str = r#"# 1 "/k/include/linux/x.h" 1
#define X_FIELD(p) ((p)->field)
#define X_CALL(p,...) x_exported(p, ##__VA_ARGS__)
#define X_CONST 3
static inline __attribute__((__unused__)) int x_inline(const struct x *a, int (*cb)(int))
{
	return a->n + x_pure(a->m);
}
static inline void x_bad(struct x *a)
{
	x_exported(a);
}
struct x { int n; char name[16], *p; union { u8 addr[6]; u32 w; }; struct { int q[2]; struct y *to; } in; unsigned int f:1; int (*rd)(struct x *, int), (*wr)(int); void (*tab[2])(void); struct y *dev, *peers[2]; const struct y *cdev; struct y **pp; };
extern void x_exported(struct x *);
# 1 "/drv/d.c"
static inline int drv_own(int a) { return a; }
"#;

    #[test]
    fn an_inline_models_parameters_leave_member_names_alone() {
        let (body, params) = function_params(
            "skb->vlan_proto = vlan_proto; skb->vlan_tci = vlan_tci; x.vlan_tci = f(vlan_tci)",
            &["skb".into(), "vlan_proto".into(), "vlan_tci".into()],
        );
        assert_eq!(params, ["__fgft_arg0", "__fgft_arg1", "__fgft_arg2"]);
        assert_eq!(
            body,
            "__fgft_arg0->vlan_proto = __fgft_arg1; __fgft_arg0->vlan_tci = __fgft_arg2; x.vlan_tci = f(__fgft_arg2)"
        );
    }

    fn kernel() -> Kernel {
        let mut k = Kernel::default();
        k.exported.insert("x_exported".into());
        k.read_unit(UNIT, Path::new("/drv/d.c"));
        k
    }

    #[test]
    fn macros_and_inlines_are_read_with_their_place() {
        let k = kernel();
        let m = k.def("X_FIELD").unwrap();
        assert_eq!(m.kind, DefKind::Macro);
        assert_eq!(m.params, ["p"]);
        assert_eq!(m.at, "include/linux/x.h:2");
        assert!(
            k.def("X_CONST").is_none(),
            "object-like macros are not calls"
        );
        let f = k.def("x_inline").unwrap();
        assert_eq!(f.kind, DefKind::Inline);
        assert_eq!(f.params, ["a", "cb"]);
        assert_eq!(f.callees, ["x_pure"]);
        assert_eq!(f.at, "include/linux/x.h:5");
        assert!(
            k.def("drv_own").is_none(),
            "the driver's own files are not the kernel's"
        );
        assert_eq!(k.def("X_CALL").unwrap().callees, ["x_exported"]);
        assert_eq!(k.member_is_array("x", "name"), Some(true));
        assert_eq!(
            k.member_is_array("x", "addr"),
            Some(true),
            "anonymous unions are flattened"
        );
        assert_eq!(k.member_is_array("x", "p"), Some(false));
        assert_eq!(k.member_is_array("x", "in"), Some(false));
        assert_eq!(k.member_is_array("x", "f"), Some(false));
        assert_eq!(k.member_is_array("y", "name"), None);
        assert_eq!(
            k.member_is_array("x", "in.q"),
            Some(true),
            "a named member of an unnamed struct type is read by path"
        );
        assert_eq!(k.member_pointee("x", "dev"), Some("y"));
        assert_eq!(k.member_pointee("x", "cdev"), Some("y"));
        assert_eq!(k.member_pointee("x", "in.to"), Some("y"));
        assert_eq!(k.member_pointee("x", "peers"), None, "an array of pointers");
        assert_eq!(k.member_pointee("x", "pp"), None, "a pointer to a pointer");
        assert_eq!(k.member_pointee("x", "p"), None);
        assert_eq!(
            k.fn_members("x").collect::<Vec<_>>(),
            ["rd", "wr"],
            "function pointers, not arrays of them"
        );
        assert_eq!(k.member_is_array("x", "tab"), Some(true));
        assert_eq!(k.fn_members("y").count(), 0);
    }

    #[test]
    fn classes_follow_what_definitions_reach() {
        let k = kernel();
        let t = Table::default();
        assert!(matches!(k.classify("X_FIELD", &t, &[]), Class::Header(_)));
        assert!(matches!(k.classify("x_inline", &t, &[]), Class::Header(_)));
        let Class::Blocked(p) = k.classify("X_CALL", &t, &[]) else {
            panic!("a macro reaching an unknown export is blocked");
        };
        assert!(p[0].1.contains("[api.x_exported]"), "{p:?}");
        let Class::Blocked(p) = k.classify("x_bad", &t, &[]) else {
            panic!("an inline reaching an unknown export is blocked");
        };
        assert!(p[0].1.contains("[api.x_bad]"), "{p:?}");
        assert_eq!(k.classify("x_exported", &t, &[]), Class::Exported);
        assert_eq!(k.classify("nothing", &t, &[]), Class::Unknown);
        assert!(matches!(
            k.classify("X_CALL", &t, &["x_exported".to_string()]),
            Class::Header(_)
        ));
    }
}

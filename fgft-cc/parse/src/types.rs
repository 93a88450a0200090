//! Types from the Kbuild-preprocessed unit, read with lang-c.
//!
//! [`unit_types`] preprocesses a driver file exactly as Kbuild compiles it
//! (`make -C KDIR M=SCRATCH file.i`, in a scratch copy of the driver's
//! directory: the user's tree is never written), applies a fix-up pass for
//! the GNU forms lang-c 0.15 does not parse, and extracts struct and union
//! definitions (fields with their type text and pointer/array flags),
//! typedefs and function prototypes.  When lang-c still fails, the facts come
//! from tree-sitter over the original file and a [`TypesWarning`] says so:
//! never silently.
//!
//! The fix-up pass keeps every byte offset and newline of the `.i` (it blanks
//! or respells in place), so lang-c's spans and the `.i` line markers still
//! name the original header lines.

use crate::{ParseError, ParsedFile};
use fgft_base::ident;
use fgft_base::kbuild::Make;
use lang_c::ast;
use lang_c::span::Node;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One struct or union field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Field {
    pub name: String,
    /// The field's type, as C text without the name (`struct net_device *`,
    /// `int (*)(struct net_device *)`, `u8 [6]`).
    pub ty: String,
    pub pointer: bool,
    pub array: bool,
    pub function_pointer: bool,
}

/// A struct or union definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StructDef {
    pub name: String,
    pub union: bool,
    pub fields: Vec<Field>,
    /// Where it is defined (header or source file, 1-based line), when known.
    pub file: String,
    pub line: usize,
}

/// A function prototype (declared or defined in the unit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Prototype {
    pub name: String,
    /// Return type and parameters as C text.
    pub ret: String,
    pub params: Vec<String>,
    /// Whether the unit defines it (has a body).
    pub defined: bool,
}

/// Where the facts came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TypesSource {
    /// lang-c over the Kbuild-preprocessed unit.
    LangC,
    /// tree-sitter over the original file (fallback).
    TreeSitter,
}

/// Type facts of a unit.
#[derive(Debug, Clone, Serialize)]
pub struct Types {
    pub source: TypesSource,
    pub structs: BTreeMap<String, StructDef>,
    /// typedef name -> the type it names, as C text.
    pub typedefs: BTreeMap<String, String>,
    pub prototypes: BTreeMap<String, Prototype>,
}

/// The warning given when lang-c could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypesWarning {
    pub path: PathBuf,
    pub message: String,
}

impl std::fmt::Display for TypesWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: warning: {}", self.path.display(), self.message)
    }
}

/// Types of `file` as Kbuild compiles it against `kdir`; falls back to
/// tree-sitter facts of the original file with a warning when preprocessing
/// or lang-c fails.
pub fn unit_types(kdir: &Path, file: &Path) -> Result<(Types, Option<TypesWarning>), ParseError> {
    let why = match preprocess(kdir, file) {
        Ok(i) => match from_preprocessed(file, &i) {
            Ok(t) => return Ok((t, None)),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    };
    let pf = crate::parse_file(file)?;
    let warning = TypesWarning {
        path: file.to_path_buf(),
        message: format!(
            "types come from tree-sitter facts of this file only (no headers, \
             no macro expansion), because the preprocessed unit could not be read: {why}"
        ),
    };
    Ok((from_tree_sitter(&pf), Some(warning)))
}

/// `make -C kdir M=SCRATCH stem.i` in a scratch copy of `file`'s directory;
/// returns the preprocessed text.
pub fn preprocess(kdir: &Path, file: &Path) -> Result<String, ParseError> {
    preprocess_with(kdir, file, false)
}

/// [`preprocess`], and with `defines` the unit keeps every macro definition
/// in place (`-dD`): what the kernel's headers define, as they define it
/// for this unit and this configuration.
pub fn preprocess_with(kdir: &Path, file: &Path, defines: bool) -> Result<String, ParseError> {
    let err = |message: String| ParseError::Kbuild {
        path: file.to_path_buf(),
        message,
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    let stem = file
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|_| file.extension().is_some_and(|e| e == "c"))
        .ok_or_else(|| err("not a .c file".into()))?;
    if !kdir.join("Makefile").is_file() {
        return Err(err(format!(
            "{} is not a kernel build directory",
            kdir.display()
        )));
    }
    let scratch = tempfile::tempdir().map_err(|e| err(format!("scratch directory: {e}")))?;
    let entries = std::fs::read_dir(dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
    for e in entries.flatten() {
        let p = e.path();
        if p.is_file() && p.extension().is_some_and(|x| x == "c" || x == "h") {
            if let Some(name) = p.file_name() {
                std::fs::copy(&p, scratch.path().join(name))
                    .map_err(|e| err(format!("copy {}: {e}", p.display())))?;
            }
        }
    }
    std::fs::write(
        scratch.path().join("Kbuild"),
        format!(
            "obj-m := {stem}.o\n{}{}",
            driver_ccflags(kdir, dir, stem),
            // The kernel's view is that of SFI code, which is compiled
            // with tracepoints out (NOTRACE).
            if defines {
                "ccflags-y += -dD -DNOTRACE\n"
            } else {
                ""
            }
        ),
    )
    .map_err(|e| err(format!("write Kbuild: {e}")))?;
    let out = Make::new(kdir, scratch.path())
        .target(format!("{stem}.i"))
        .run()
        .map_err(|e| err(e.to_string()))?;
    if !out.success() {
        let tail: Vec<&str> = out.stderr.lines().rev().take(6).collect();
        return Err(err(format!(
            "make {stem}.i failed: {}",
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        )));
    }
    let text = std::fs::read_to_string(scratch.path().join(format!("{stem}.i")))
        .map_err(|e| err(format!("read {stem}.i: {e}")))?;
    // Name the driver's own files by their real place, not the scratch copy.
    let from = format!("{}/", scratch.path().display());
    let to = format!("{}/", dir.display());
    Ok(text.replace(&from, &to))
}

/// The compiler flags the driver's own Kbuild files give this unit, as
/// Kbuild lines for the scratch copy: `-I` of the unit's directory (its
/// `#include "../other/x.h"` resolve from there, not from the copy), the
/// directory Makefile's `ccflags-y`, `ccflags-$(CONFIG_X)` for options the
/// kernel's `.config` sets and `CFLAGS_<unit>.o`, and the `subdir-ccflags`
/// of the Makefiles above it; `$(src)`, `$(obj)` and `$(srctree)` are
/// spelled out.
fn driver_ccflags(kdir: &Path, dir: &Path, stem: &str) -> String {
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let config = std::fs::read_to_string(kdir.join(".config")).unwrap_or_default();
    let set = |opt: &str| {
        config
            .lines()
            .any(|l| l.strip_prefix(opt).is_some_and(|r| r == "=y" || r == "=m"))
    };
    let srctree = dir
        .ancestors()
        .find(|a| {
            a.join("Kconfig").is_file() && a.join("arch").is_dir() && a.join("drivers").is_dir()
        })
        .map(Path::to_path_buf)
        .unwrap_or_else(|| kdir.to_path_buf());
    let mut out = format!("ccflags-y += -I{}\n", dir.display());
    let mut at = Some(dir.as_path());
    let mut own = true;
    while let Some(d) = at {
        if d == srctree || !d.starts_with(&srctree) {
            break;
        }
        if let Ok(mk) = std::fs::read_to_string(d.join("Makefile"))
            .or_else(|_| std::fs::read_to_string(d.join("Kbuild")))
        {
            for (var, value) in make_assignments(&mk) {
                let keep = match var.as_str() {
                    "subdir-ccflags-y" => true,
                    "ccflags-y" | "EXTRA_CFLAGS" => own,
                    v if v == format!("CFLAGS_{stem}.o") => own,
                    v => v
                        .strip_prefix(if own {
                            "ccflags-$("
                        } else {
                            "subdir-ccflags-$("
                        })
                        .or_else(|| v.strip_prefix("subdir-ccflags-$("))
                        .and_then(|r| r.strip_suffix(')'))
                        .is_some_and(&set),
                };
                if !keep {
                    continue;
                }
                let value = value
                    .replace("$(src)", &d.display().to_string())
                    .replace("$(obj)", &d.display().to_string())
                    .replace("$(srctree)", &srctree.display().to_string());
                // Flags naming make variables fgft does not know are left out.
                if value.contains("$(") {
                    continue;
                }
                out.push_str(&format!("ccflags-y += {value}\n"));
            }
        }
        own = false;
        at = d.parent();
    }
    out
}

/// `VAR = value`, `VAR := value` and `VAR += value` lines of a Makefile
/// (continuations joined), in order.
fn make_assignments(mk: &str) -> Vec<(String, String)> {
    let joined = mk.replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        let line = line.split('#').next().unwrap_or("");
        let Some(eq) = line.find('=') else {
            continue;
        };
        let (lhs, rhs) = (&line[..eq], line[eq + 1..].trim());
        let var = lhs.trim_end_matches([':', '+', '?']).trim();
        if var.is_empty() || var.contains(char::is_whitespace) || rhs.is_empty() {
            continue;
        }
        out.push((var.to_string(), rhs.to_string()));
    }
    out
}

// ------------------------------------------------------------- fix-up ---

/// Respells the GNU forms lang-c lacks, in place (same length, same lines).
/// Function bodies are blanked to `;` (types do not need them; most of the
/// unsupported forms live there: `asm goto`, `&&label`, `?:`, `__auto_type`,
/// statement attributes).  Returns the text and the names of the functions
/// whose bodies were removed.
pub fn fix_up(text: &str) -> (String, Vec<String>) {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let toks = lex_i(b);
    let mut defined = Vec::new();
    let mut depth = 0usize;
    let mut k = 0;
    // Byte ranges to blank outright.
    let blank = |out: &mut Vec<u8>, s: usize, e: usize| {
        for c in &mut out[s..e] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while k < toks.len() {
        let (s, e) = toks[k];
        let t = &b[s..e];
        match t {
            b"{" => {
                if depth == 0 {
                    if let Some(name) = body_owner(b, &toks, k) {
                        if let Some(close) = match_brace(b, &toks, k) {
                            blank(&mut out, s, toks[close].1);
                            out[s] = b';';
                            defined.push(name);
                            k = close + 1;
                            continue;
                        }
                    }
                }
                // Empty struct/union body: `struct x {}` -> `struct x   `.
                if k + 1 < toks.len() && &b[toks[k + 1].0..toks[k + 1].1] == b"}" {
                    let prev2 = k.checked_sub(2).map(|p| &b[toks[p].0..toks[p].1]);
                    let prev1 = k.checked_sub(1).map(|p| &b[toks[p].0..toks[p].1]);
                    if matches!(prev1, Some(b"struct" | b"union")) {
                        // Anonymous and empty: `typedef struct { } x;` -> `int`.
                        let kw = toks[k - 1];
                        blank(&mut out, kw.0, toks[k + 1].1);
                        out[kw.0..kw.0 + 3].copy_from_slice(b"int");
                        k += 2;
                        continue;
                    }
                    if matches!(prev2, Some(b"struct" | b"union")) {
                        blank(&mut out, s, toks[k + 1].1);
                        k += 2;
                        continue;
                    }
                }
                depth += 1;
            }
            b"}" => depth = depth.saturating_sub(1),
            // `a ?: b` (GNU, empty middle) -> `a ? 0: b`, or `a || b` when
            // there is no room for the `0`.
            b"?" if k + 1 < toks.len() && &b[toks[k + 1].0..toks[k + 1].1] == b":" => {
                let colon = toks[k + 1].0;
                if colon > e {
                    out[e] = b'0';
                } else {
                    out[s] = b'|';
                    out[colon] = b'|';
                }
                k += 2;
                continue;
            }
            b"__int128" => {
                out[s..e].copy_from_slice(b"long    ");
            }
            b"__int128_t" | b"__uint128_t" => {
                out[s..e].copy_from_slice(if t.len() == 10 {
                    b"long      "
                } else {
                    b"long       "
                });
            }
            b"__seg_gs" | b"__seg_fs" => blank(&mut out, s, e),
            b"__auto_type" => out[s..e].copy_from_slice(b"long       "),
            b"asm" | b"__asm__" | b"__asm" if depth == 0 => {
                // File-scope asm statement (EXPORT_SYMBOL and friends), or an
                // asm label on a declaration: blanked with its operands.
                let mut j = k + 1;
                while j < toks.len()
                    && matches!(
                        &b[toks[j].0..toks[j].1],
                        b"volatile" | b"__volatile__" | b"inline" | b"goto"
                    )
                {
                    j += 1;
                }
                if j < toks.len() && &b[toks[j].0..toks[j].1] == b"(" {
                    if let Some(close) = match_paren(b, &toks, j) {
                        let end = toks[close].1;
                        blank(&mut out, s, end);
                        k = close + 1;
                        continue;
                    }
                }
            }
            b"__builtin_types_compatible_p"
                if k + 1 < toks.len() && &b[toks[k + 1].0..toks[k + 1].1] == b"(" =>
            {
                if let Some(close) = match_paren(b, &toks, k + 1) {
                    blank(&mut out, s, toks[close].1);
                    out[s] = b'1';
                    k = close + 1;
                    continue;
                }
            }
            b"_Float16" | b"__bf16" => {
                blank(&mut out, s, e);
                out[s..s + 5].copy_from_slice(b"short");
            }
            _ => {}
        }
        k += 1;
    }
    let s = String::from_utf8(out).unwrap_or_else(|_| text.to_string());
    (s, defined)
}

/// Tokens of a `.i` file: identifiers, numbers, strings and single
/// punctuation bytes; line markers and whitespace skipped.
fn lex_i(b: &[u8]) -> Vec<(usize, usize)> {
    let mut v = Vec::with_capacity(b.len() / 5);
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line_start = true;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'#' && line_start {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'"' || c == b'\'' {
            let s = i;
            i += 1;
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i = (i + 1).min(b.len());
            v.push((s, i));
            line_start = false;
        } else if ident::is_byte(c) {
            let s = i;
            while i < b.len() && (ident::is_byte(b[i]) || b[i] == b'.') {
                i += 1;
            }
            v.push((s, i));
            line_start = false;
        } else {
            v.push((i, i + 1));
            i += 1;
            line_start = false;
        }
    }
    v
}

fn match_paren(b: &[u8], toks: &[(usize, usize)], open: usize) -> Option<usize> {
    match_pair(b, toks, open, b'(', b')')
}

fn match_brace(b: &[u8], toks: &[(usize, usize)], open: usize) -> Option<usize> {
    match_pair(b, toks, open, b'{', b'}')
}

fn match_pair(b: &[u8], toks: &[(usize, usize)], open: usize, o: u8, c: u8) -> Option<usize> {
    let mut d = 0usize;
    for (k, &(s, e)) in toks.iter().enumerate().skip(open) {
        if e - s == 1 && b[s] == o {
            d += 1;
        } else if e - s == 1 && b[s] == c {
            d = d.checked_sub(1)?;
            if d == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// If the `{` at token `k` (at file scope) opens a function body, the
/// function's name: the `{` follows the `)` of a parameter list whose `(`
/// follows the function's identifier (attributes in between are skipped).
fn body_owner(b: &[u8], toks: &[(usize, usize)], k: usize) -> Option<String> {
    let text = |i: usize| &b[toks[i].0..toks[i].1];
    let mut j = k.checked_sub(1)?;
    // Skip trailing `__attribute__((...))` groups and asm labels.
    loop {
        if text(j) != b")" {
            return None;
        }
        let open = match_back(b, toks, j)?;
        let before = open.checked_sub(1)?;
        match text(before) {
            b"__attribute__" | b"__attribute" | b"asm" | b"__asm__" => {
                j = before.checked_sub(1)?;
                continue;
            }
            // Compound literal or initializer: `= (T){`.
            b"=" | b"," | b"(" => return None,
            name if name
                .first()
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_') =>
            {
                return Some(String::from_utf8_lossy(name).into_owned());
            }
            // `(*f(int))(...)` style declarators: find the innermost name.
            b")" => {
                let inner = match_back(b, toks, before)?;
                let mut n = inner + 1;
                while n < before {
                    let t = text(n);
                    if t.first()
                        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
                        && text(n + 1) == b"("
                    {
                        return Some(String::from_utf8_lossy(t).into_owned());
                    }
                    n += 1;
                }
                return None;
            }
            _ => return None,
        }
    }
}

fn match_back(b: &[u8], toks: &[(usize, usize)], close: usize) -> Option<usize> {
    let mut d = 0usize;
    for k in (0..=close).rev() {
        let t = &b[toks[k].0..toks[k].1];
        if t == b")" {
            d += 1;
        } else if t == b"(" {
            d = d.checked_sub(1)?;
            if d == 0 {
                return Some(k);
            }
        }
    }
    None
}

// ------------------------------------------------------------- lang-c ---

/// Reads a preprocessed unit with lang-c (after [`fix_up`]).
pub fn from_preprocessed(path: &Path, text: &str) -> Result<Types, ParseError> {
    let (fixed, defined) = fix_up(text);
    let cfg = lang_c::driver::Config::with_gcc();
    let parse = lang_c::driver::parse_preprocessed(&cfg, fixed).map_err(|e| {
        let line_text = e.source.lines().nth(e.line.saturating_sub(1)).unwrap_or("");
        let (file, line) = LineIndex::new(&e.source).locate(e.offset);
        ParseError::Kbuild {
            path: path.to_path_buf(),
            message: format!(
                "lang-c: syntax error at {}:{} (line {} of the .i): `{}`",
                file,
                line,
                e.line,
                line_text.trim().chars().take(120).collect::<String>()
            ),
        }
    })?;
    let mut t = Types {
        source: TypesSource::LangC,
        structs: BTreeMap::new(),
        typedefs: BTreeMap::new(),
        prototypes: BTreeMap::new(),
    };
    let src = parse.source.as_str();
    let mut rd = Reader {
        src,
        types: &mut t,
        anon: 0,
        lines: LineIndex::new(src),
    };
    for ext in &parse.unit.0 {
        if let ast::ExternalDeclaration::Declaration(d) = &ext.node {
            rd.declaration(d);
        }
    }
    for name in defined {
        if let Some(p) = t.prototypes.get_mut(&name) {
            p.defined = true;
        }
    }
    Ok(t)
}

struct Reader<'a> {
    src: &'a str,
    types: &'a mut Types,
    anon: usize,
    lines: LineIndex<'a>,
}

/// Maps offsets of a `.i` to the original file and line through its line
/// markers (`# 12 "file.h"`), indexed once.
struct LineIndex<'a> {
    src: &'a str,
    /// (offset of the line after the marker, line number, file)
    marks: Vec<(usize, usize, &'a str)>,
}

impl<'a> LineIndex<'a> {
    fn new(src: &'a str) -> LineIndex<'a> {
        let mut marks = Vec::new();
        let mut off = 0;
        for line in src.split_inclusive('\n') {
            let next = off + line.len();
            if let Some(rest) = line.strip_prefix("# ") {
                let mut it = rest.splitn(2, ' ');
                if let (Some(n), Some(f)) = (it.next(), it.next()) {
                    if let (Ok(n), Some(f)) = (n.parse::<usize>(), f.trim_end().strip_prefix('"')) {
                        let f = f.split('"').next().unwrap_or(f);
                        marks.push((next, n, f));
                    }
                }
            }
            off = next;
        }
        LineIndex { src, marks }
    }

    fn locate(&self, offset: usize) -> (&'a str, usize) {
        let i = self.marks.partition_point(|m| m.0 <= offset);
        match i.checked_sub(1).map(|k| self.marks[k]) {
            Some((start, n, f)) => {
                let nl = self.src.as_bytes()[start..offset.min(self.src.len())]
                    .iter()
                    .filter(|&&c| c == b'\n')
                    .count();
                (f, n + nl)
            }
            None => ("", 0),
        }
    }
}

impl Reader<'_> {
    fn text<T>(&self, n: &Node<T>) -> &str {
        self.src.get(n.span.start..n.span.end).unwrap_or("")
    }

    fn squash(s: &str) -> String {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// Type text of specifiers; records struct definitions met on the way.
    fn specifiers_text(&mut self, specs: &[&Node<ast::TypeSpecifier>], quals: &[String]) -> String {
        let mut parts: Vec<String> = quals.to_vec();
        for s in specs {
            match &s.node {
                ast::TypeSpecifier::Struct(st) => {
                    let name = self.struct_def(st);
                    let kw = match st.node.kind.node {
                        ast::StructKind::Struct => "struct",
                        ast::StructKind::Union => "union",
                    };
                    parts.push(format!("{kw} {name}"));
                }
                ast::TypeSpecifier::Enum(e) => {
                    let name = e
                        .node
                        .identifier
                        .as_ref()
                        .map(|i| i.node.name.clone())
                        .unwrap_or_else(|| "<anonymous>".into());
                    parts.push(format!("enum {name}"));
                }
                _ => parts.push(Self::squash(self.text(s))),
            }
        }
        parts.join(" ")
    }

    /// Records a struct/union definition; returns its name (a made-up one
    /// for anonymous ones).
    fn struct_def(&mut self, st: &Node<ast::StructType>) -> String {
        let name = match &st.node.identifier {
            Some(i) => i.node.name.clone(),
            None => {
                self.anon += 1;
                format!("<anonymous#{}>", self.anon)
            }
        };
        let Some(decls) = &st.node.declarations else {
            return name;
        };
        let mut fields = Vec::new();
        for d in decls {
            let ast::StructDeclaration::Field(f) = &d.node else {
                continue;
            };
            let specs: Vec<&Node<ast::TypeSpecifier>> = f
                .node
                .specifiers
                .iter()
                .filter_map(|s| match &s.node {
                    ast::SpecifierQualifier::TypeSpecifier(t) => Some(t),
                    _ => None,
                })
                .collect();
            let quals: Vec<String> = f
                .node
                .specifiers
                .iter()
                .filter_map(|s| match &s.node {
                    ast::SpecifierQualifier::TypeQualifier(q) => Some(Self::squash(self.text(q))),
                    _ => None,
                })
                .collect();
            let base = self.specifiers_text(&specs, &quals);
            if f.node.declarators.is_empty() {
                // Anonymous member struct/union: its fields are ours.
                let anonymous = specs.iter().any(|s| {
                    matches!(&s.node, ast::TypeSpecifier::Struct(st) if st.node.identifier.is_none())
                });
                if anonymous {
                    let inner_name = base.split_once(' ').map(|x| x.1).unwrap_or_default();
                    if let Some(def) = self.types.structs.get(inner_name) {
                        fields.extend(def.fields.clone());
                    }
                }
                continue;
            }
            for sd in &f.node.declarators {
                let Some(decl) = &sd.node.declarator else {
                    continue;
                };
                if let Some(field) = self.field(&base, decl) {
                    fields.push(field);
                }
            }
        }
        let (file, line) = self.lines.locate(st.span.start);
        let def = StructDef {
            name: name.clone(),
            union: matches!(st.node.kind.node, ast::StructKind::Union),
            fields,
            file: file.to_string(),
            line,
        };
        // Keep the first full definition of a name.
        self.types.structs.entry(name.clone()).or_insert(def);
        name
    }

    fn field(&mut self, base: &str, decl: &Node<ast::Declarator>) -> Option<Field> {
        let (name, pointer, array, func) = declarator_shape(&decl.node)?;
        let mut shape = Self::squash(self.text(decl));
        if let Some(pos) = ident::find_word(&shape, &name) {
            shape.replace_range(pos..pos + name.len(), "");
        }
        let shape = Self::squash(&shape);
        Some(Field {
            name,
            ty: if shape.is_empty() {
                base.to_string()
            } else {
                format!("{base} {shape}")
            },
            pointer,
            array,
            function_pointer: func && pointer,
        })
    }

    fn declaration(&mut self, d: &Node<ast::Declaration>) {
        let mut typedef = false;
        let mut specs = Vec::new();
        let mut quals = Vec::new();
        for s in &d.node.specifiers {
            match &s.node {
                ast::DeclarationSpecifier::StorageClass(sc)
                    if sc.node == ast::StorageClassSpecifier::Typedef =>
                {
                    typedef = true;
                }
                ast::DeclarationSpecifier::TypeSpecifier(t) => specs.push(t),
                ast::DeclarationSpecifier::TypeQualifier(q) => {
                    quals.push(Self::squash(self.text(q)));
                }
                _ => {}
            }
        }
        let base = self.specifiers_text(&specs, &quals);
        for id in &d.node.declarators {
            let decl = &id.node.declarator;
            let Some((name, _, _, func)) = declarator_shape(&decl.node) else {
                continue;
            };
            let mut shape = Self::squash(self.text(decl));
            if let Some(pos) = ident::find_word(&shape, &name) {
                shape.replace_range(pos..pos + name.len(), "");
            }
            let shape = Self::squash(&shape);
            let full = if shape.is_empty() {
                base.clone()
            } else {
                format!("{base} {shape}")
            };
            if typedef {
                self.types.typedefs.entry(name).or_insert(full);
            } else if func {
                let params = function_params(&decl.node)
                    .map(|ps| ps.iter().map(|p| Self::squash(self.text(p))).collect())
                    .unwrap_or_default();
                let ret = Self::squash(&format!("{base} {}", return_shape(&decl.node)));
                self.types
                    .prototypes
                    .entry(name.clone())
                    .or_insert(Prototype {
                        name,
                        ret,
                        params,
                        defined: false,
                    });
            }
        }
    }
}

/// (name, pointer, array, function) of a declarator.
fn declarator_shape(d: &ast::Declarator) -> Option<(String, bool, bool, bool)> {
    let mut pointer = false;
    let mut array = false;
    let mut func = false;
    for x in &d.derived {
        match x.node {
            ast::DerivedDeclarator::Pointer(_) => pointer = true,
            ast::DerivedDeclarator::Array(_) => array = true,
            ast::DerivedDeclarator::Function(_) | ast::DerivedDeclarator::KRFunction(_) => {
                func = true
            }
            _ => {}
        }
    }
    match &d.kind.node {
        ast::DeclaratorKind::Identifier(i) => Some((i.node.name.clone(), pointer, array, func)),
        ast::DeclaratorKind::Declarator(inner) => {
            let (n, p, a, f) = declarator_shape(&inner.node)?;
            Some((n, p || pointer, a || array, f || func))
        }
        ast::DeclaratorKind::Abstract => None,
    }
}

fn function_params(d: &ast::Declarator) -> Option<&Vec<Node<ast::ParameterDeclaration>>> {
    for x in &d.derived {
        if let ast::DerivedDeclarator::Function(f) = &x.node {
            return Some(&f.node.parameters);
        }
    }
    match &d.kind.node {
        ast::DeclaratorKind::Declarator(inner) => function_params(&inner.node),
        _ => None,
    }
}

/// `*` for each pointer level before a function declarator's parameters.
fn return_shape(d: &ast::Declarator) -> String {
    d.derived
        .iter()
        .take_while(|x| matches!(x.node, ast::DerivedDeclarator::Pointer(_)))
        .map(|_| "*")
        .collect()
}

// -------------------------------------------------------- tree-sitter ---

/// Fallback: struct/union definitions, typedefs and prototypes of one parsed
/// original file (no headers, no macro expansion).
pub fn from_tree_sitter(pf: &ParsedFile) -> Types {
    let mut t = Types {
        source: TypesSource::TreeSitter,
        structs: BTreeMap::new(),
        typedefs: BTreeMap::new(),
        prototypes: BTreeMap::new(),
    };
    let mut stack = vec![pf.tree.root_node()];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "struct_specifier" | "union_specifier" => {
                if let (Some(name), Some(body)) =
                    (n.child_by_field_name("name"), n.child_by_field_name("body"))
                {
                    let name = pf.node_text(name).to_string();
                    let fields = ts_fields(pf, body);
                    t.structs.entry(name.clone()).or_insert(StructDef {
                        name,
                        union: n.kind() == "union_specifier",
                        fields,
                        file: pf.path.display().to_string(),
                        line: n.start_position().row + 1,
                    });
                }
            }
            "type_definition" => {
                let base = n
                    .child_by_field_name("type")
                    .map(|x| ts_type_text(pf, x))
                    .unwrap_or_default();
                let mut c = n.walk();
                for d in n.children_by_field_name("declarator", &mut c) {
                    if let Some((name, shape, ..)) = ts_declarator(pf, d) {
                        let full = squash(&format!("{base} {shape}"));
                        t.typedefs.entry(name).or_insert(full);
                    }
                }
            }
            "function_definition" | "declaration" => {
                let base = n
                    .child_by_field_name("type")
                    .map(|x| ts_type_text(pf, x))
                    .unwrap_or_default();
                let mut c = n.walk();
                let decls: Vec<_> = n.children_by_field_name("declarator", &mut c).collect();
                for d in decls {
                    let d = if d.kind() == "init_declarator" {
                        d.child_by_field_name("declarator").unwrap_or(d)
                    } else {
                        d
                    };
                    if let Some((name, _, _, _, true)) = ts_declarator(pf, d) {
                        let params = find_params(d)
                            .map(|p| {
                                let mut c = p.walk();
                                p.named_children(&mut c)
                                    .filter(|x| x.kind() != "comment")
                                    .map(|x| squash(pf.node_text(x)))
                                    .collect()
                            })
                            .unwrap_or_default();
                        let defined = n.kind() == "function_definition";
                        let e = t.prototypes.entry(name.clone()).or_insert(Prototype {
                            name,
                            ret: base.clone(),
                            params,
                            defined,
                        });
                        e.defined |= defined;
                    }
                }
            }
            _ => {}
        }
        if n.kind() != "function_definition" {
            let mut c = n.walk();
            let kids: Vec<_> = n.children(&mut c).collect();
            stack.extend(kids.into_iter().rev());
        }
    }
    t
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn ts_type_text(pf: &ParsedFile, t: tree_sitter::Node<'_>) -> String {
    match (t.kind(), t.child_by_field_name("name")) {
        ("struct_specifier", Some(n)) => format!("struct {}", pf.node_text(n)),
        ("union_specifier", Some(n)) => format!("union {}", pf.node_text(n)),
        ("enum_specifier", Some(n)) => format!("enum {}", pf.node_text(n)),
        _ => squash(pf.node_text(t)),
    }
}

/// (name, shape without the name, pointer, array, function) of a declarator.
fn ts_declarator(
    pf: &ParsedFile,
    d: tree_sitter::Node<'_>,
) -> Option<(String, String, bool, bool, bool)> {
    let (mut pointer, mut array, mut func) = (false, false, false);
    let mut n = d;
    for _ in 0..32 {
        match n.kind() {
            "identifier" | "field_identifier" | "type_identifier" => {
                let name = pf.node_text(n).to_string();
                let full = squash(pf.node_text(d));
                let shape = match ident::find_word(&full, &name) {
                    Some(p) => squash(&format!("{}{}", &full[..p], &full[p + name.len()..])),
                    None => full,
                };
                return Some((name, shape, pointer, array, func));
            }
            "pointer_declarator" => pointer = true,
            "array_declarator" => array = true,
            "function_declarator" => func = true,
            _ => {}
        }
        n = n
            .child_by_field_name("declarator")
            .or_else(|| n.named_child(0))?;
    }
    None
}

fn find_params(d: tree_sitter::Node<'_>) -> Option<tree_sitter::Node<'_>> {
    let mut n = d;
    for _ in 0..32 {
        if n.kind() == "function_declarator" {
            return n.child_by_field_name("parameters");
        }
        n = n
            .child_by_field_name("declarator")
            .or_else(|| n.named_child(0))?;
    }
    None
}

fn ts_fields(pf: &ParsedFile, body: tree_sitter::Node<'_>) -> Vec<Field> {
    let mut out = Vec::new();
    let mut cur = body.walk();
    let kids: Vec<_> = body.named_children(&mut cur).collect();
    for fd in kids {
        if fd.kind().starts_with("preproc_") {
            out.extend(ts_fields(pf, fd));
            continue;
        }
        if fd.kind() != "field_declaration" {
            continue;
        }
        let ty = fd.child_by_field_name("type");
        let base = ty.map(|x| ts_type_text(pf, x)).unwrap_or_default();
        let mut c = fd.walk();
        let decls: Vec<_> = fd.children_by_field_name("declarator", &mut c).collect();
        if decls.is_empty() {
            if let Some(b2) = ty.and_then(|x| x.child_by_field_name("body")) {
                out.extend(ts_fields(pf, b2));
            }
        }
        for d in decls {
            if let Some((name, shape, pointer, array, func)) = ts_declarator(pf, d) {
                out.push(Field {
                    name,
                    ty: squash(&format!("{base} {shape}")),
                    pointer,
                    array,
                    function_pointer: func && pointer,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_kbuild_flags_reach_the_scratch_copy() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        for d in ["arch", "drivers/net/a/b", "drivers/net/a/common", "kdir"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("Kconfig"), "").unwrap();
        std::fs::write(
            root.join("kdir/.config"),
            "CONFIG_ON=y\n# CONFIG_OFF is not set\n",
        )
        .unwrap();
        std::fs::write(
            root.join("drivers/net/a/Makefile"),
            "subdir-ccflags-y += -I$(src)/common\nccflags-y += -DPARENT_ONLY\n",
        )
        .unwrap();
        std::fs::write(
            root.join("drivers/net/a/b/Makefile"),
            "obj-m += u.o\nccflags-y := -I $(srctree)/drivers/net/a/common \\\n\t-DTWO\n\
             ccflags-$(CONFIG_ON) += -DON\nccflags-$(CONFIG_OFF) += -DOFF\n\
             CFLAGS_u.o := -DU # for u only\nCFLAGS_v.o := -DV\nccflags-y += $(UNKNOWN)\n",
        )
        .unwrap();
        let dir = root.join("drivers/net/a/b");
        let f = driver_ccflags(&root.join("kdir"), &dir, "u");
        let r = root.display();
        assert_eq!(
            f,
            format!(
                "ccflags-y += -I{r}/drivers/net/a/b\n\
                 ccflags-y += -I {r}/drivers/net/a/common  \t-DTWO\n\
                 ccflags-y += -DON\n\
                 ccflags-y += -DU\n\
                 ccflags-y += -I{r}/drivers/net/a/common\n"
            )
        );
    }

    #[test]
    fn fix_up_keeps_offsets_and_lines() {
        let i = "# 1 \"x.c\"\ntypedef unsigned __int128 u128;\nstruct e {};\n\
                 static int f(int a)\n{\n\tasm goto(\"jmp %l0\" :::: l);\nl:\n\treturn a ?: 1;\n}\n\
                 asm(\".section .x\");\nstruct s { int a; };\n";
        let (out, defined) = fix_up(i);
        assert_eq!(out.len(), i.len());
        assert_eq!(out.matches('\n').count(), i.matches('\n').count());
        assert_eq!(defined, ["f"]);
        assert!(!out.contains("asm") && !out.contains("__int128") && !out.contains("?:"));
        let t = from_preprocessed(Path::new("x.c"), i).unwrap();
        assert_eq!(t.source, TypesSource::LangC);
        assert_eq!(t.typedefs["u128"], "unsigned long");
        assert_eq!(t.structs["s"].fields[0].name, "a");
        assert_eq!(t.structs["s"].line, 10);
        assert!(t.prototypes["f"].defined);
    }

    #[test]
    fn fields_and_prototypes() {
        let i = "struct net_device;\n\
                 struct ops {\n\tint (*open)(struct net_device *dev);\n\tunsigned char addr[6];\n\
                 \tstruct net_device *dev;\n\tunion { int x; long y; };\n\tconst char *name;\n};\n\
                 typedef struct ops ops_t;\n\
                 extern struct net_device *alloc(int n, const char *fmt, ...);\n";
        let t = from_preprocessed(Path::new("x.c"), i).unwrap();
        let f = &t.structs["ops"].fields;
        let names: Vec<_> = f.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["open", "addr", "dev", "x", "y", "name"]);
        assert!(f[0].function_pointer && f[0].ty.starts_with("int (*)("));
        assert!(f[1].array && !f[1].pointer);
        assert!(f[2].pointer && f[2].ty == "struct net_device *");
        assert_eq!(f[5].ty, "const char *");
        assert_eq!(t.typedefs["ops_t"], "struct ops");
        let p = &t.prototypes["alloc"];
        assert_eq!(p.ret, "struct net_device *");
        assert_eq!(p.params, ["int n", "const char *fmt"]);
        assert!(!p.defined);
    }

    #[test]
    fn lang_c_failure_is_an_error() {
        let e = from_preprocessed(Path::new("x.c"), "struct { int a b; };\n").unwrap_err();
        assert!(e.to_string().contains("lang-c"), "{e}");
    }

    #[test]
    fn tree_sitter_fallback() {
        let pf = crate::parse_text(
            Path::new("d.c"),
            "struct priv { struct net_device *ndev; u8 mac[6]; void (*cb)(int); };\n\
             typedef struct priv priv_t;\nstatic int probe(struct pci_dev *p) { return 0; }\n"
                .into(),
        )
        .unwrap();
        let t = from_tree_sitter(&pf);
        assert_eq!(t.source, TypesSource::TreeSitter);
        let f = &t.structs["priv"].fields;
        assert!(f[0].pointer && f[0].ty == "struct net_device *");
        assert!(f[1].array && f[1].ty == "u8 [6]");
        assert!(f[2].function_pointer);
        assert_eq!(t.typedefs["priv_t"], "struct priv");
        assert!(t.prototypes["probe"].defined);
        assert_eq!(t.prototypes["probe"].params, ["struct pci_dev *p"]);
    }
}

//! The macro-hint table and the length-preserving rewrite it drives.
//!
//! The table (`fgft-cc/tables/macro-hints.toml`, embedded, plus user extension
//! files) names kernel macros that tree-sitter-c cannot parse as written.  The
//! rewrite respells them in place: bytes are blanked or replaced by other ASCII
//! bytes, nothing moves, and newlines are never touched, so byte offsets, lines
//! and columns of the rewritten text are those of the original.

use crate::tables::{self, TableSource};
use crate::ParseError;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::path::PathBuf;

/// A fast hasher for the short identifiers the rewrite looks up on every
/// token (the tables are trusted data, so no flooding resistance is needed).
#[derive(Debug, Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

impl FxHasher {
    #[inline]
    fn add(&mut self, x: u64) {
        self.hash = (self.hash.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// Build hasher of [`FxHasher`].
pub type FxBuild = BuildHasherDefault<FxHasher>;

/// File name of the table (built-in and extension files).
pub const TABLE_NAME: &str = "macro-hints.toml";
const BUILTIN: &str = include_str!("../../tables/macro-hints.toml");

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HintFile {
    #[serde(default)]
    blank: Vec<String>,
    #[serde(default)]
    blank_call: Vec<String>,
    #[serde(default)]
    iterators: Vec<String>,
    #[serde(default)]
    declare: BTreeMap<String, usize>,
    #[serde(default)]
    decl_call: DeclCall,
    #[serde(default)]
    init_fragment: Names,
    #[serde(default)]
    type_args: BTreeMap<String, Vec<usize>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeclCall {
    #[serde(default)]
    names: Vec<String>,
    #[serde(default)]
    storage: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Names {
    #[serde(default)]
    names: Vec<String>,
}

/// A set of macro names; names with `*` are wildcard patterns.
#[derive(Debug, Default, Clone)]
pub struct NameSet {
    exact: HashSet<String, FxBuild>,
    patterns: Vec<Vec<String>>,
}

impl NameSet {
    fn add(&mut self, name: &str) {
        if name.contains('*') {
            self.patterns
                .push(name.split('*').map(str::to_string).collect());
        } else {
            self.exact.insert(name.to_string());
        }
    }

    /// Whether `name` is in the set.
    pub fn contains(&self, name: &str) -> bool {
        self.exact.contains(name) || self.patterns.iter().any(|p| glob_match(p, name))
    }

    /// Number of entries (exact names and patterns).
    pub fn len(&self) -> usize {
        self.exact.len() + self.patterns.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `parts` is a pattern split at `*`: first part is a prefix, last a suffix,
/// the middle ones must appear in order.
fn glob_match(parts: &[String], name: &str) -> bool {
    let (first, rest) = match parts.split_first() {
        Some(x) => x,
        None => return name.is_empty(),
    };
    let Some(mut s) = name.strip_prefix(first.as_str()) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return s.is_empty();
    };
    for m in middle {
        match s.find(m.as_str()) {
            Some(i) => s = &s[i + m.len()..],
            None => return false,
        }
    }
    s.len() >= last.len() && s.ends_with(last.as_str())
}

/// The compiled macro-hint table.
#[derive(Debug, Default, Clone)]
pub struct HintTable {
    pub blank: NameSet,
    pub blank_call: NameSet,
    pub iterators: NameSet,
    /// Declaration macro -> argument position of the declared name.
    pub declare: HashMap<String, usize, FxBuild>,
    pub decl_call: NameSet,
    pub storage: HashSet<String, FxBuild>,
    pub init_fragment: NameSet,
    pub type_args: HashMap<String, Vec<usize>, FxBuild>,
}

impl HintTable {
    /// The built-in table only.
    pub fn builtin() -> Result<HintTable, ParseError> {
        Self::from_sources(&[TableSource {
            path: None,
            text: BUILTIN.to_string(),
        }])
    }

    /// The built-in table extended by `macro-hints.toml` files in `FGFT_TABLES`
    /// directories and in `extra_dirs`.
    pub fn load(extra_dirs: &[PathBuf]) -> Result<HintTable, ParseError> {
        let dirs = tables::table_dirs(extra_dirs);
        Self::from_sources(&tables::extension_files(BUILTIN, TABLE_NAME, &dirs)?)
    }

    /// Builds a table from table texts, later ones extending earlier ones.
    pub fn from_sources(sources: &[TableSource]) -> Result<HintTable, ParseError> {
        let mut t = HintTable::default();
        for src in sources {
            let f: HintFile = tables::parse_toml(src, TABLE_NAME)?;
            for n in &f.blank {
                t.blank.add(n);
            }
            for n in &f.blank_call {
                t.blank_call.add(n);
            }
            for n in &f.iterators {
                if n.len() < 5 && !n.contains('*') {
                    return Err(tables::table_error(
                        src,
                        TABLE_NAME,
                        n,
                        format!("iterator `{n}` is shorter than `while`: it cannot be respelled in place"),
                    ));
                }
                t.iterators.add(n);
            }
            for (n, pos) in &f.declare {
                if n.len() < 3 {
                    return Err(tables::table_error(
                        src,
                        TABLE_NAME,
                        n,
                        format!("declaration macro `{n}` is shorter than `int`"),
                    ));
                }
                t.declare.insert(n.clone(), *pos);
            }
            for n in &f.decl_call.names {
                t.decl_call.add(n);
            }
            t.storage.extend(f.decl_call.storage.iter().cloned());
            for n in &f.init_fragment.names {
                t.init_fragment.add(n);
            }
            for (n, pos) in &f.type_args {
                t.type_args.insert(n.clone(), pos.clone());
            }
        }
        Ok(t)
    }

    /// Rewrites `text` so tree-sitter-c can parse it.  The result has exactly the
    /// same length, the same newlines, and differs only inside macro uses named
    /// by the table.
    pub fn rewrite(&self, text: &str) -> String {
        let (toks, dirs) = lex(text.as_bytes());
        let mut depth = Vec::with_capacity(toks.len());
        // Whether the innermost open brace before each token is an initializer.
        let mut in_init = Vec::with_capacity(toks.len());
        let mut stack: Vec<bool> = Vec::new();
        for (k, t) in toks.iter().enumerate() {
            depth.push(stack.len() as u32);
            in_init.push(stack.last().copied().unwrap_or(false));
            match t.kind {
                Kind::Punct(b'{') => {
                    let prev = k.checked_sub(1).map(|p| toks[p].kind);
                    let init = match prev {
                        Some(Kind::Punct(b'=')) => true,
                        Some(Kind::Punct(b',' | b'{')) => stack.last().copied().unwrap_or(false),
                        _ => false,
                    };
                    stack.push(init);
                }
                Kind::Punct(b'}') => {
                    stack.pop();
                }
                _ => {}
            }
        }
        let mut rw = Rewriter {
            src: text.as_bytes(),
            out: text.as_bytes().to_vec(),
            toks: &toks,
            table: self,
            depth,
            in_init,
        };
        rw.run();
        // Directives inside initializer lists (`#ifdef CONFIG_PM` around
        // `.suspend = f,`): tree-sitter cannot parse them there; blanking the
        // directive lines keeps every branch's items.
        for d in &dirs {
            let inside = rw.depth.get(d.next_tok).copied().unwrap_or(0) > 0;
            if rw.in_init.get(d.next_tok).copied().unwrap_or(false)
                || (inside && is_define(&rw.src[d.start..d.end]))
            {
                // Also `#define` inside enum and struct bodies and blocks: not
                // C, and tree-sitter only takes them between declarations.
                rw.blank(d.start, d.end);
            } else if is_define(&rw.src[d.start..d.end]) {
                rw.gnu_variadic(d.start, d.end);
            }
        }
        let out = rw.out;
        debug_assert_eq!(out.len(), text.len());
        // Every replacement byte is ASCII and every replaced range covers whole
        // characters, so this cannot fail; fall back to the original if it does.
        String::from_utf8(out).unwrap_or_else(|_| text.to_string())
    }
}

/// C keywords (a type-name argument respelled as one identifier must not
/// become one of them).
const KEYWORDS: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "_Bool",
    "_Complex",
    "_Alignas",
    "_Alignof",
    "_Atomic",
    "_Generic",
    "_Noreturn",
    "_Static_assert",
    "_Thread_local",
    "__asm__",
    "asm",
    "__volatile__",
    "__inline",
    "__inline__",
    "__restrict",
    "__extension__",
    "typeof",
    "__typeof__",
    "__typeof",
    "__attribute__",
    "__attribute",
    "offsetof",
    "__builtin_offsetof",
    "alignof",
    "__alignof__",
    "bool",
    "true",
    "false",
    "NULL",
];

/// Words that start a type name in an argument (generic type-argument rule).
const TYPE_START: &[&str] = &[
    "struct", "union", "enum", "unsigned", "signed", "char", "short", "int", "long", "float",
    "double", "void", "_Bool", "const", "volatile",
];

/// Callees whose parentheses are not a macro call's argument list.
const NOT_CALLS: &[&str] = &[
    "sizeof",
    "typeof",
    "__typeof__",
    "__typeof",
    "_Alignof",
    "alignof",
    "__alignof__",
    "offsetof",
    "__builtin_offsetof",
    "_Generic",
    "__attribute__",
    "__attribute",
    "asm",
    "__asm__",
    "__asm",
    "if",
    "while",
    "for",
    "switch",
    "return",
    "_Static_assert",
    "static_assert",
    "__builtin_types_compatible_p",
    "__builtin_va_arg",
];

/// Keywords after which an identifier followed by `(` is still an expression.
const EXPR_KEYWORDS: &[&str] = &["return", "case", "else", "do", "sizeof"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ident,
    Punct(u8),
    /// Number, string or character literal.
    Lit,
}

/// A preprocessor directive (with its continuation lines) and the index of
/// the first token after it.
#[derive(Debug, Clone, Copy)]
struct Directive {
    start: usize,
    end: usize,
    next_tok: usize,
}

#[derive(Debug, Clone, Copy)]
struct Tok {
    kind: Kind,
    start: usize,
    end: usize,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether a directive is `#define` or `#undef`.
fn is_define(d: &[u8]) -> bool {
    let body: Vec<u8> = d
        .iter()
        .skip(1)
        .skip_while(|c| **c == b' ' || **c == b'\t')
        .take(6)
        .copied()
        .collect();
    body.starts_with(b"define") || body.starts_with(b"undef")
}

/// Whether `b` (starting with a digit) is a C integer or floating constant.
fn valid_number(b: &[u8]) -> bool {
    let suffix = |r: &[u8]| r.iter().all(|c| matches!(c, b'u' | b'U' | b'l' | b'L'));
    if b.len() > 2 && b[0] == b'0' && matches!(b[1], b'x' | b'X') {
        let body = &b[2..];
        let n = body
            .iter()
            .take_while(|c| c.is_ascii_hexdigit() || **c == b'.')
            .count();
        let rest = &body[n..];
        if let Some(exp) = rest.strip_prefix(b"p").or_else(|| rest.strip_prefix(b"P")) {
            let exp = exp
                .strip_prefix(b"+")
                .or_else(|| exp.strip_prefix(b"-"))
                .unwrap_or(exp);
            let d = exp.iter().take_while(|c| c.is_ascii_digit()).count();
            return d > 0
                && exp[d..]
                    .iter()
                    .all(|c| matches!(c, b'f' | b'F' | b'l' | b'L'));
        }
        return n > 0 && suffix(rest);
    }
    if b.len() > 2 && b[0] == b'0' && matches!(b[1], b'b' | b'B') {
        let n = b[2..]
            .iter()
            .take_while(|c| matches!(c, b'0' | b'1'))
            .count();
        return n > 0 && suffix(&b[2 + n..]);
    }
    let n = b
        .iter()
        .take_while(|c| c.is_ascii_digit() || **c == b'.')
        .count();
    let mut rest = &b[n..];
    if let Some(exp) = rest.strip_prefix(b"e").or_else(|| rest.strip_prefix(b"E")) {
        let exp = exp
            .strip_prefix(b"+")
            .or_else(|| exp.strip_prefix(b"-"))
            .unwrap_or(exp);
        let d = exp.iter().take_while(|c| c.is_ascii_digit()).count();
        if d == 0 {
            return false;
        }
        rest = &exp[d..];
    }
    suffix(rest) || rest.iter().all(|c| matches!(c, b'f' | b'F' | b'l' | b'L'))
}

/// A small C lexer: identifiers, punctuation and literals, skipping comments,
/// whitespace and preprocessor directives (whose bodies tree-sitter does not
/// parse as C either).
fn lex(b: &[u8]) -> (Vec<Tok>, Vec<Directive>) {
    let mut toks = Vec::with_capacity(b.len() / 4);
    let mut dirs = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    let n = b.len();
    while i < n {
        let c = b[i];
        match c {
            b'\n' => {
                line_start = true;
                i += 1;
            }
            b' ' | b'\t' | b'\r' | b'\x0c' | b'\x0b' => i += 1,
            b'\\' if i + 1 < n && b[i + 1] == b'\n' => i += 2,
            b'/' if i + 1 < n && b[i + 1] == b'*' => {
                i = skip_block_comment(b, i);
            }
            b'/' if i + 1 < n && b[i + 1] == b'/' => {
                while i < n && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'#' if line_start => {
                // Directive: to the end of the line, with continuations and
                // comments that span lines.
                let start = i;
                while i < n && b[i] != b'\n' {
                    if b[i] == b'\\' && i + 1 < n && b[i + 1] == b'\n' {
                        i += 2;
                    } else if b[i] == b'\\' && i + 2 < n && b[i + 1] == b'\r' && b[i + 2] == b'\n' {
                        i += 3;
                    } else if b[i] == b'/' && i + 1 < n && b[i + 1] == b'*' {
                        i = skip_block_comment(b, i);
                    } else if b[i] == b'/' && i + 1 < n && b[i + 1] == b'/' {
                        while i < n && b[i] != b'\n' {
                            i += 1;
                        }
                    } else {
                        i += 1;
                    }
                }
                dirs.push(Directive {
                    start,
                    end: i,
                    next_tok: toks.len(),
                });
            }
            b'"' | b'\'' => {
                let s = i;
                i += 1;
                while i < n && b[i] != c && b[i] != b'\n' {
                    if b[i] == b'\\' && i + 1 < n {
                        i += 1;
                    }
                    i += 1;
                }
                i = (i + 1).min(n);
                toks.push(Tok {
                    kind: Kind::Lit,
                    start: s,
                    end: i,
                });
                line_start = false;
            }
            _ if is_ident_start(c) => {
                let s = i;
                while i < n && is_ident_char(b[i]) {
                    i += 1;
                }
                toks.push(Tok {
                    kind: Kind::Ident,
                    start: s,
                    end: i,
                });
                line_start = false;
            }
            _ if c.is_ascii_digit() || (c == b'.' && i + 1 < n && b[i + 1].is_ascii_digit()) => {
                let s = i;
                i += 1;
                while i < n {
                    let d = b[i];
                    let exponent_sign =
                        (d == b'+' || d == b'-') && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P');
                    if is_ident_char(d) || d == b'.' || exponent_sign {
                        i += 1;
                    } else {
                        break;
                    }
                }
                toks.push(Tok {
                    kind: Kind::Lit,
                    start: s,
                    end: i,
                });
                line_start = false;
            }
            _ if c.is_ascii() => {
                toks.push(Tok {
                    kind: Kind::Punct(c),
                    start: i,
                    end: i + 1,
                });
                i += 1;
                line_start = false;
            }
            _ => {
                // Non-ASCII outside comments and literals: skip the character.
                i += 1;
                while i < n && (b[i] & 0xc0) == 0x80 {
                    i += 1;
                }
                line_start = false;
            }
        }
    }
    (toks, dirs)
}

fn skip_block_comment(b: &[u8], mut i: usize) -> usize {
    i += 2;
    while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
        i += 1;
    }
    (i + 2).min(b.len())
}

struct Rewriter<'a> {
    src: &'a [u8],
    out: Vec<u8>,
    toks: &'a [Tok],
    table: &'a HintTable,
    /// Brace depth before each token.
    depth: Vec<u32>,
    /// Whether each token is directly inside an initializer list.
    in_init: Vec<bool>,
}

/// How far a macro's argument list may reach, in tokens.
const MAX_ARG_TOKENS: usize = 20_000;

impl Rewriter<'_> {
    fn text(&self, i: usize) -> &str {
        let t = self.toks[i];
        // Token boundaries are ASCII positions, so this slice is valid UTF-8.
        std::str::from_utf8(&self.src[t.start..t.end]).unwrap_or("")
    }

    fn is_punct(&self, i: usize, c: u8) -> bool {
        self.toks.get(i).is_some_and(|t| t.kind == Kind::Punct(c))
    }

    fn is_ident(&self, i: usize) -> bool {
        self.toks.get(i).is_some_and(|t| t.kind == Kind::Ident)
    }

    /// Blanks bytes `s..e`, keeping line breaks.
    fn blank(&mut self, s: usize, e: usize) {
        for b in &mut self.out[s..e] {
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
    }

    /// Index of the `)` matching the `(` at token `open`; `None` when it is not
    /// found before a `;` (a statement boundary) or the length limit.
    fn match_paren(&self, open: usize) -> Option<usize> {
        let mut depth = 0usize;
        for (k, t) in self.toks.iter().enumerate().skip(open).take(MAX_ARG_TOKENS) {
            match t.kind {
                Kind::Punct(b'(') => depth += 1,
                Kind::Punct(b')') => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(k);
                    }
                }
                Kind::Punct(b';') if depth > 0 => return None,
                _ => {}
            }
        }
        None
    }

    /// Token ranges of the arguments between `open` and `close`.
    fn split_args(&self, open: usize, close: usize) -> Vec<(usize, usize)> {
        let mut args = Vec::new();
        let mut depth = 0i32;
        let mut start = open + 1;
        for k in open + 1..close {
            match self.toks[k].kind {
                Kind::Punct(b'(' | b'[' | b'{') => depth += 1,
                Kind::Punct(b')' | b']' | b'}') => depth -= 1,
                Kind::Punct(b',') if depth == 0 => {
                    args.push((start, k));
                    start = k + 1;
                }
                _ => {}
            }
        }
        if start < close || !args.is_empty() {
            args.push((start, close));
        }
        args
    }

    /// Whether token `i` stands where a statement may start.
    fn at_statement_start(&self, i: usize) -> bool {
        if i == 0 {
            return true;
        }
        match self.toks[i - 1].kind {
            Kind::Punct(b';' | b'{' | b'}' | b')' | b':') => true,
            Kind::Ident => matches!(self.text(i - 1), "else" | "do"),
            _ => false,
        }
    }

    /// Whether the identifier at `i`, followed by `(`, is a call rather than the
    /// name in a declarator (`int foo(`, `*foo(`).
    fn is_call_position(&self, i: usize) -> bool {
        if i == 0 {
            return true;
        }
        match self.toks[i - 1].kind {
            Kind::Ident => EXPR_KEYWORDS.contains(&self.text(i - 1)),
            Kind::Punct(b'*') => false,
            _ => true,
        }
    }

    fn run(&mut self) {
        let mut i = 0;
        while i < self.toks.len() {
            i = self.step(i);
        }
    }

    /// Handles token `i`; returns the index of the next token to look at.
    fn step(&mut self, i: usize) -> usize {
        let t = self.toks[i];
        if t.kind == Kind::Lit {
            self.number(i);
            return i + 1;
        }
        if !self.is_ident(i) {
            return i + 1;
        }
        let src = self.src;
        // Token boundaries are ASCII positions, so this slice is valid UTF-8.
        let name = std::str::from_utf8(&src[t.start..t.end]).unwrap_or("");
        let table = self.table;
        if name == "case" {
            self.case_range(i);
            return i + 1;
        }
        if self.is_punct(i + 1, b':') && !self.is_punct(i + 2, b':') {
            self.label(i);
        }
        self.merge_string_macros(i);
        if table.blank.contains(name) {
            self.blank(t.start, t.end);
            return i + 1;
        }
        let call = self.is_punct(i + 1, b'(');
        if table.blank_call.contains(name) {
            if call {
                if let Some(close) = self.match_paren(i + 1) {
                    self.blank(t.start, self.toks[close].end);
                    return close + 1;
                }
            }
            self.blank(t.start, t.end);
            return i + 1;
        }
        if call && matches!(name, "offsetof" | "__builtin_offsetof") {
            self.offsetof(i);
            return i + 1;
        }
        if !call || NOT_CALLS.contains(&name) {
            return i + 1;
        }
        let Some(close) = self.match_paren(i + 1) else {
            return i + 1;
        };
        if let Some(&pos) = table.declare.get(name) {
            if self.declare(i, close, pos) {
                return close + 1;
            }
        }
        if self.at_statement_start(i)
            && (table.iterators.contains(name)
                || (self.depth[i] > 0 && self.is_punct(close + 1, b'{')))
        {
            // Listed iterators, and any `NAME(args) {` inside a block (a call
            // is never followed by a block in C).
            self.iterator(i, close);
        }
        if table.decl_call.contains(name) {
            self.decl_call(i);
        }
        if table.init_fragment.contains(name) {
            self.init_fragment(close);
        }
        self.type_args(i, close, name);
        if self.is_punct(i + 2, b',') && self.is_call_position(i) {
            // `MACRO(, x)`: an empty first argument does not parse; the comma
            // is blanked (the call keeps its other arguments).
            let c = self.toks[i + 2].start;
            self.out[c] = b' ';
        }
        i + 1
    }

    /// `#define F(a, args...)`: the GNU named variadic parameter is respelled
    /// `args   ` (tree-sitter only takes a bare `...`).
    fn gnu_variadic(&mut self, start: usize, end: usize) {
        let line = &self.src[start..end];
        let Some(open) = line.iter().position(|&c| c == b'(') else {
            return;
        };
        let Some(close) = line[open..].iter().position(|&c| c == b')') else {
            return;
        };
        let params = start + open..start + open + close;
        if let Some(p) = self.src[params.clone()]
            .windows(3)
            .position(|w| w == b"...")
        {
            let at = params.start + p;
            if at > 0 && is_ident_char(self.src[at - 1]) {
                self.out[at..at + 3].copy_from_slice(b"   ");
            }
        }
    }

    /// A number token that is not a C number (`10000baseT_Full`, `5705_PLUS`:
    /// token-pasting macro arguments) is respelled as an identifier.
    fn number(&mut self, i: usize) {
        let t = self.toks[i];
        let b = &self.src[t.start..t.end];
        if !b[0].is_ascii_digit() || valid_number(b) {
            return;
        }
        self.out[t.start] = b'_';
    }

    /// GNU case ranges: `case A ... B:` -> `case A  |  B:`.
    fn case_range(&mut self, i: usize) {
        let mut depth = 0i32;
        for k in i + 1..(i + 64).min(self.toks.len()) {
            match self.toks[k].kind {
                Kind::Punct(b'(' | b'[') => depth += 1,
                Kind::Punct(b')' | b']') => depth -= 1,
                Kind::Punct(b':' | b';' | b'{' | b'}') if depth <= 0 => return,
                Kind::Punct(b'.')
                    if depth == 0 && self.is_punct(k + 1, b'.') && self.is_punct(k + 2, b'.') =>
                {
                    let s = self.toks[k].start;
                    if self.toks[k + 2].end == s + 3 {
                        self.out[s..s + 3].copy_from_slice(b" | ");
                    }
                    return;
                }
                _ => {}
            }
        }
    }

    /// A label right before a preprocessor line or the end of a block
    /// (`out:\n#endif`, `err: }`) is respelled `out;` so the block parses.
    fn label(&mut self, i: usize) {
        if self.depth[i] == 0 || !self.at_statement_start(i) {
            return;
        }
        if KEYWORDS.contains(&self.text(i)) || self.text(i) == "default" {
            return;
        }
        let colon = self.toks[i + 1];
        let next_start = self.toks.get(i + 2).map_or(self.src.len(), |t| t.start);
        let gap = &self.src[colon.end..next_start];
        let directive_follows = gap
            .split(|&b| b == b'\n')
            .skip(1)
            .any(|line| line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'#'));
        if directive_follows || self.is_punct(i + 2, b'}') {
            self.out[colon.start] = b';';
        }
    }

    /// `KERN_INFO DRV_NAME ": x"`: upper-case macro names that stand next to
    /// each other before a string literal are joined into one identifier
    /// (`KERN_INFO_DRV_NAME`), which tree-sitter accepts in a string
    /// concatenation.
    fn merge_string_macros(&mut self, i: usize) {
        let upper = |r: &Self, k: usize| {
            r.is_ident(k)
                && r.src[r.toks[k].start..r.toks[k].end]
                    .iter()
                    .all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        };
        if !upper(self, i) || (i > 0 && upper(self, i - 1)) {
            return;
        }
        let mut k = i;
        while upper(self, k + 1) {
            k += 1;
        }
        let string_next = self
            .toks
            .get(k + 1)
            .is_some_and(|t| t.kind == Kind::Lit && self.src[t.start] == b'"');
        if k == i || !string_next {
            return;
        }
        for j in i..k {
            let (a, b) = (self.toks[j].end, self.toks[j + 1].start);
            if !self.src[a..b].iter().all(|&c| c == b' ' || c == b'\t') {
                return;
            }
        }
        for j in i..k {
            let (a, b) = (self.toks[j].end, self.toks[j + 1].start);
            for x in &mut self.out[a..b] {
                *x = b'_';
            }
        }
    }

    /// `offsetof(T, a.b[i])`: tree-sitter only takes a plain member name, so
    /// the keyword is respelled as a macro name (`offsetoF`) and `T` as one
    /// identifier; the call then parses as an expression.
    fn offsetof(&mut self, i: usize) {
        let Some(close) = self.match_paren(i + 1) else {
            return;
        };
        let args = self.split_args(i + 1, close);
        let [(s0, e0), (s1, e1)] = args[..] else {
            return;
        };
        let plain_type = self.looks_like_type(s0, e0) || (e0 == s0 + 1 && self.is_ident(s0));
        if plain_type && e1 == s1 + 1 && self.is_ident(s1) {
            return;
        }
        if self.src[self.toks[s0].start..self.toks[e0 - 1].end].contains(&b'\n') {
            return;
        }
        let t = self.toks[i];
        self.out[t.end - 1] = b'F';
        if self.looks_like_type(s0, e0) {
            self.respell_as_ident(self.toks[s0].start, self.toks[e0 - 1].end);
        }
    }

    /// `NAME(a, b, c)` declaring the argument at `pos` -> `int  b`.
    fn declare(&mut self, i: usize, close: usize, pos: usize) -> bool {
        let args = self.split_args(i + 1, close);
        let Some(&(s, e)) = args.get(pos) else {
            return false;
        };
        if e != s + 1 || !self.is_ident(s) {
            return false;
        }
        let t = self.toks[i];
        self.blank(t.start, t.end);
        self.out[t.start..t.start + 3].copy_from_slice(b"int");
        let keep = self.toks[s];
        self.blank(self.toks[i + 1].start, keep.start);
        self.blank(keep.end, self.toks[close].end);
        true
    }

    /// `NAME(args) stmt` -> `while(args) stmt`.
    fn iterator(&mut self, i: usize, close: usize) {
        let t = self.toks[i];
        if t.end - t.start < 5 {
            return;
        }
        let next_ok = matches!(
            self.toks.get(close + 1).map(|t| t.kind),
            Some(Kind::Punct(b'{' | b'*' | b'(' | b'+' | b'-')) | Some(Kind::Ident)
        );
        if !next_ok {
            return;
        }
        self.blank(t.start, t.end);
        self.out[t.start..t.start + 5].copy_from_slice(b"while");
    }

    /// Blanks the storage class and qualifiers before a call-shaped declaration.
    fn decl_call(&mut self, i: usize) {
        let mut k = i;
        while k > 0 && self.is_ident(k - 1) && self.table.storage.contains(self.text(k - 1)) {
            k -= 1;
            let t = self.toks[k];
            self.blank(t.start, t.end);
        }
    }

    /// Puts the comma an initializer fragment's expansion would end with.
    fn init_fragment(&mut self, close: usize) {
        let Some(next) = self.toks.get(close + 1) else {
            return;
        };
        if matches!(next.kind, Kind::Punct(b',' | b'}')) {
            return;
        }
        let from = self.toks[close].end;
        if let Some(off) = self.src[from..next.start]
            .iter()
            .position(|&b| b == b' ' || b == b'\t')
        {
            // Only plain blanks before the next token: not inside a comment.
            if self.src[from..from + off]
                .iter()
                .all(|b| b.is_ascii_whitespace())
            {
                self.out[from + off] = b',';
            }
        }
    }

    /// Respells type-name arguments as single identifiers.
    fn type_args(&mut self, i: usize, close: usize, name: &str) {
        let listed = self.table.type_args.get(name);
        if listed.is_none() && !self.is_call_position(i) {
            return;
        }
        let args = self.split_args(i + 1, close);
        for (k, &(s, e)) in args.iter().enumerate() {
            if s >= e {
                continue;
            }
            let forced = listed.is_some_and(|l| l.contains(&k));
            if forced || self.looks_like_type(s, e) {
                self.respell_as_ident(self.toks[s].start, self.toks[e - 1].end);
            }
        }
    }

    /// Tokens `s..e` form a type name with no declarator: a type keyword first,
    /// then only identifiers and `*`.
    fn looks_like_type(&self, s: usize, e: usize) -> bool {
        if !self.is_ident(s) || !TYPE_START.contains(&self.text(s)) {
            return false;
        }
        if matches!(self.text(s), "struct" | "union" | "enum")
            && !(s + 1 < e && self.is_ident(s + 1))
        {
            return false;
        }
        (s..e).all(|k| self.is_ident(k) || self.is_punct(k, b'*'))
    }

    /// Bytes `s..e` become one identifier (`struct foo *` -> `struct_foo__`).
    fn respell_as_ident(&mut self, s: usize, e: usize) {
        if self.src[s..e].contains(&b'\n') || !is_ident_start(self.src[s]) {
            return;
        }
        if self.src[s..e].iter().all(|&b| is_ident_char(b))
            && !KEYWORDS.contains(&std::str::from_utf8(&self.src[s..e]).unwrap_or(""))
        {
            return;
        }
        for k in s..e {
            if !is_ident_char(self.out[k]) {
                self.out[k] = b'_';
            }
        }
        let word = std::str::from_utf8(&self.out[s..e]).unwrap_or("");
        if KEYWORDS.contains(&word) {
            self.out[e - 1] = b'_';
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(s: &str) -> String {
        let t = HintTable::builtin().expect("built-in table parses");
        let out = t.rewrite(s);
        assert_eq!(out.len(), s.len(), "length preserved");
        for (a, b) in s.bytes().zip(out.bytes()) {
            assert_eq!(a == b'\n', b == b'\n', "newlines preserved");
        }
        out
    }

    #[test]
    fn builtin_table_loads() {
        let t = HintTable::builtin().unwrap();
        assert!(t.blank.contains("__iomem"));
        assert!(t.blank.len() > 60);
        assert!(t.iterators.contains("list_for_each_entry_safe"));
        assert!(t.iterators.contains("netdev_for_each_mc_addr"));
        assert!(!t.iterators.contains("foreach"));
    }

    #[test]
    fn glob() {
        let p = |s: &str| s.split('*').map(str::to_string).collect::<Vec<_>>();
        assert!(glob_match(&p("*for_each*"), "list_for_each_entry"));
        assert!(glob_match(&p("*for_each*"), "for_each"));
        assert!(!glob_match(&p("*for_each*"), "for_eac"));
        assert!(glob_match(&p("a*b"), "ab"));
        assert!(!glob_match(&p("ab*b"), "ab"));
        assert!(glob_match(&p("x"), "x"));
    }

    #[test]
    fn blanks_annotations() {
        assert_eq!(rw("void __iomem *p;"), "void         *p;");
        assert_eq!(
            rw("int f(void) __acquires(x) __releases(y);"),
            "int f(void)                            ;"
        );
        assert_eq!(rw("x __iomemx;"), "x __iomemx;");
    }

    #[test]
    fn iterators_become_while() {
        assert_eq!(
            rw("{ list_for_each_entry(p, &h, m) { f(p); } }"),
            "{ while              (p, &h, m) { f(p); } }"
        );
        // Not at statement start, or followed by `;`: untouched.
        assert_eq!(rw("x = list_for_each(a);"), "x = list_for_each(a);");
        assert_eq!(rw("{ for_each_x(a); }"), "{ for_each_x(a); }");
        // A definition of such a function is not a statement.
        assert_eq!(
            rw("void foo_for_each(int a) { }"),
            "void foo_for_each(int a) { }"
        );
    }

    #[test]
    fn type_arguments() {
        assert_eq!(
            rw("p = container_of(q, struct foo, m);"),
            "p = container_of(q, struct_foo, m);"
        );
        assert_eq!(
            rw("x = min_t(unsigned int, a, b);"),
            "x = min_t(unsigned_int, a, b);"
        );
        assert_eq!(rw("x = va_arg(ap, int);"), "x = va_arg(ap, in_);");
        // Generic rule: any call argument that is a type name.
        assert_eq!(
            rw("q = my_entry(p, struct foo *, m);"),
            "q = my_entry(p, struct_foo__, m);"
        );
        // Prototypes keep their parameter types.
        assert_eq!(rw("int f(struct foo *, int);"), "int f(struct foo *, int);");
        assert_eq!(rw("x = sizeof(struct foo);"), "x = sizeof(struct foo);");
    }

    #[test]
    fn declaration_macros() {
        assert_eq!(
            rw("static DEFINE_SPINLOCK(lock);"),
            "static int             lock ;"
        );
        assert_eq!(
            rw("struct s { DECLARE_BITMAP(map, 64); };"),
            "struct s { int            map     ; };"
        );
        assert_eq!(
            rw("static SIMPLE_DEV_PM_OPS(pm, s, r);"),
            "       SIMPLE_DEV_PM_OPS(pm, s, r);"
        );
    }

    #[test]
    fn initializer_fragments() {
        assert_eq!(
            rw("{ SET_SYSTEM_SLEEP_PM_OPS(a, b)\n\t.x = c }"),
            "{ SET_SYSTEM_SLEEP_PM_OPS(a, b)\n,.x = c }"
        );
        assert_eq!(
            rw("{ SET_SYSTEM_SLEEP_PM_OPS(a, b) }"),
            "{ SET_SYSTEM_SLEEP_PM_OPS(a, b) }"
        );
    }

    #[test]
    fn generic_rules() {
        assert_eq!(rw("{ case 1 ... 8: x; }"), "{ case 1  |  8: x; }");
        assert_eq!(rw("{ case A...B: x; }"), "{ case A | B: x; }");
        assert_eq!(rw("f(a, 10000baseT_Full);"), "f(a, _0000baseT_Full);");
        assert_eq!(
            rw("x = 0x1fUL + 1.5e-3f + 0b101 + 07;"),
            "x = 0x1fUL + 1.5e-3f + 0b101 + 07;"
        );
        assert_eq!(
            rw("printk(KERN_INFO DRV_NAME \": x\");"),
            "printk(KERN_INFO_DRV_NAME \": x\");"
        );
        assert_eq!(rw("{ f();\nout:\n#endif\n}"), "{ f();\nout;\n#endif\n}");
        assert_eq!(rw("{ f();\nout: }"), "{ f();\nout; }");
        assert_eq!(rw("{ out: f(); }"), "{ out: f(); }");
        assert_eq!(
            rw("{ my_walk(a, b) { f(); } }"),
            "{ while  (a, b) { f(); } }"
        );
        // At file scope a `NAME(args) {` is a macro-made function definition.
        assert_eq!(
            rw("SYSCALL_DEFINE1(x, int, a) { }"),
            "SYSCALL_DEFINE1(x, in_, a) { }"
        );
        assert_eq!(
            rw("n = offsetof(struct s, a.b[2]);"),
            "n = offsetoF(struct_s, a.b[2]);"
        );
        assert_eq!(
            rw("n = offsetof(struct s, a);"),
            "n = offsetof(struct s, a);"
        );
    }

    #[test]
    fn directives_in_initializers() {
        let s = "static const struct x o = {\n\t.a = f,\n#ifdef CONFIG_PM\n\t.b = g,\n#endif\n};\n\
                 void h(void) {\n#ifdef X\n\tf();\n#endif\n}\n";
        let out = rw(s);
        assert!(!out.contains("#ifdef CONFIG_PM") && out.contains("\t.b = g,"));
        assert!(out.contains("#ifdef X"));
        assert_eq!(rw("CONFIGFS_ATTR(, release);"), "CONFIGFS_ATTR(  release);");
        let e = "enum { A = 1,\n#define A_X 3\n B };\n#define D(x, args...) f(x, ##args)\n";
        assert_eq!(
            rw(e),
            "enum { A = 1,\n             \n B };\n#define D(x, args   ) f(x, ##args)\n"
        );
    }

    #[test]
    fn comments_strings_and_directives_untouched() {
        let s = "/* __iomem */ char *s = \"__user\";\n#define X __init\n// __init\n";
        assert_eq!(rw(s), s);
    }

    #[test]
    fn utf8_survives() {
        let s = "/* Grüße */ void __iomem *p; /* ü */\nint x = min_t(unsigned /* é */ int, a, b);";
        let out = rw(s);
        assert!(out.contains("void         *p"));
    }

    #[test]
    fn extension_table_extends() {
        let t = HintTable::from_sources(&[
            TableSource {
                path: None,
                text: BUILTIN.to_string(),
            },
            TableSource {
                path: Some("ext/macro-hints.toml".into()),
                text: "blank = [\"__my_attr\"]\niterators = [\"my_walk\"]\n".into(),
            },
        ])
        .unwrap();
        assert!(t.blank.contains("__my_attr"));
        assert!(t.blank.contains("__iomem"));
        assert!(t.iterators.contains("my_walk"));
        let bad = HintTable::from_sources(&[TableSource {
            path: Some("bad.toml".into()),
            text: "blank = 3\n".into(),
        }]);
        assert!(matches!(bad, Err(ParseError::Table { .. })));
        let unknown = HintTable::from_sources(&[TableSource {
            path: Some("bad.toml".into()),
            text: "blanc = []\n".into(),
        }]);
        assert!(matches!(unknown, Err(ParseError::Table { .. })));
    }
}

//! A cheap index of a local header: which names it may define, found with a
//! token scan of its hint-rewritten text (no tree-sitter parse), so that the
//! survey parses a header only when a lookup may find something in it.
//!
//! Every set over-approximates what the parse would give (a name is left out
//! only when no parse can define it there):
//! - `idents`: every identifier token (in code and in directives);
//! - `members`: identifiers inside braces, counting each `#if` branch from
//!   the depth at the `#if` and going on after `#endif` from the deepest
//!   branch (so a member is inside braces however the branches are taken);
//! - `brace`: identifiers followed by `{` before a `;` or `}` that is kept
//!   whenever they are (same or enclosing `#if` branch): struct, union and
//!   function definitions (`struct X {`, `int X(void) {`);
//! - `typedef`: identifiers of `typedef ... ;` declarations;
//! - `macros`: names of function-like macros (`#define X(`).
//!
//! Names are taken from the original text at the rewritten text's token
//! ranges, as the parse's node texts are.  A header with an identifier the
//! scan does not understand (`$`, non-ASCII) may define anything.

use crate::slots::FactKey;
use fgft_base::ident;
use fgft_base::lex::{skip_block_comment, skip_line_comment};
use fgft_parse::hints::FxHasher;
use std::hash::Hasher;

/// Hashes of names (a filter: a hash match may be a false positive, a miss
/// never is).
#[derive(Debug, Default, Clone)]
pub struct NameSet(Vec<u64>);

impl NameSet {
    fn from_hashes(mut v: Vec<u64>) -> NameSet {
        v.sort_unstable();
        v.dedup();
        v.shrink_to_fit();
        NameSet(v)
    }

    /// Whether `name` may be in the set.
    pub fn may_contain(&self, name: &str) -> bool {
        self.0.binary_search(&hash(name)).is_ok()
    }
}

/// The hash the index keeps of a name (also used by callers that index
/// names of their own the same way).
pub fn hash(name: &str) -> u64 {
    let mut h = FxHasher::default();
    h.write(name.as_bytes());
    h.finish()
}

/// What a header may define (see the module documentation).
#[derive(Debug, Default, Clone)]
pub struct Index {
    /// Anything may be defined (the scan met something it cannot read).
    pub all: bool,
    pub idents: NameSet,
    pub brace: NameSet,
    pub typedef: NameSet,
    pub macros: NameSet,
    /// Identifiers inside braces (outside directives): struct members.
    pub members: NameSet,
}

impl Index {
    /// May define a function or function-like macro named `name`.
    pub fn may_define_function(&self, name: &str) -> bool {
        self.all || self.brace.may_contain(name) || self.macros.may_contain(name)
    }

    /// May declare a global or function named `name`.
    pub fn may_name(&self, name: &str) -> bool {
        self.all || self.idents.may_contain(name)
    }

    /// May declare a struct or union member named `name`.
    pub fn may_declare_member(&self, name: &str) -> bool {
        self.all || self.members.may_contain(name)
    }

    /// May define struct/union `name` (by tag or typedef name).
    pub fn may_define_struct(&self, name: &str) -> bool {
        self.all || self.brace.may_contain(name) || self.typedef.may_contain(name)
    }

    /// May define typedef `name`.
    pub fn may_define_typedef(&self, name: &str) -> bool {
        self.all || self.typedef.may_contain(name)
    }

    /// May hold `name` in the fact table `key` (see [`crate::slots::Facts`]).
    pub fn may_have(&self, key: FactKey, name: &str) -> bool {
        match key {
            FactKey::Function | FactKey::Global => self.may_name(name),
            FactKey::Struct => self.may_define_struct(name),
            FactKey::Typedef => self.may_define_typedef(name),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum T {
    Ident,
    Typedef,
    Semi,
    Open,
    Close,
}

#[derive(Debug, Clone, Copy)]
struct Tok {
    t: T,
    /// Hash of the name (identifiers).
    h: u64,
    /// Innermost conditional branch (0: none).
    branch: u32,
    /// Brace depth before the token.
    depth: i32,
}

/// Longest forward scan from one token before giving up (and assuming the
/// worst).
const SCAN_CAP: usize = 4096;

/// Indexes a header: `text` is its text, `hinted` the macro-hint rewrite of
/// it (same length, same offsets).
pub fn index(text: &str, hinted: &str) -> Index {
    let b = hinted.as_bytes();
    let n = b.len();
    let name_hash = |s: usize, e: usize| hash(text.get(s..e).unwrap_or(""));
    let mut all = false;
    let mut idents: Vec<u64> = Vec::new();
    let mut macros: Vec<u64> = Vec::new();
    let mut toks: Vec<Tok> = Vec::new();
    // Conditional branches: parent of each (index = id; 0 is the root).
    let mut parent: Vec<u32> = vec![0];
    let mut stack: Vec<u32> = Vec::new();
    // Per open conditional: the brace depth at its `#if` and the largest
    // depth a finished branch ended at (branches are alternatives: each
    // starts at the group's depth, and the group ends at the largest).
    let mut groups: Vec<(i32, i32)> = Vec::new();
    let mut members: Vec<u64> = Vec::new();
    let mut depth = 0i32;
    let mut i = 0;
    let is_id = ident::is_byte;
    while i < n {
        if let Some(next) = skip_blank(b, i) {
            i = next;
            continue;
        }
        let c = b[i];
        if c == b'#' {
            // A directive, to the end of its (continued) line.
            let end = directive_end(b, i);
            let d = &b[i..end];
            let mut k = 1;
            while k < d.len() && (d[k] == b' ' || d[k] == b'\t') {
                k += 1;
            }
            let ws = k;
            while k < d.len() && is_id(d[k]) {
                k += 1;
            }
            let word = &d[ws..k];
            match word {
                b"if" | b"ifdef" | b"ifndef" => {
                    let id = parent.len() as u32;
                    parent.push(stack.last().copied().unwrap_or(0));
                    stack.push(id);
                    groups.push((depth, i32::MIN));
                }
                b"elif" | b"else" | b"elifdef" | b"elifndef" => {
                    if stack.pop().is_some() {
                        let id = parent.len() as u32;
                        parent.push(stack.last().copied().unwrap_or(0));
                        stack.push(id);
                    }
                    if let Some(g) = groups.last_mut() {
                        g.1 = g.1.max(depth);
                        depth = g.0;
                    }
                }
                b"endif" => {
                    stack.pop();
                    if let Some(g) = groups.pop() {
                        depth = depth.max(g.1);
                    }
                }
                b"define" => {
                    let mut m = k;
                    while m < d.len() && (d[m] == b' ' || d[m] == b'\t') {
                        m += 1;
                    }
                    let s = m;
                    while m < d.len() && is_id(d[m]) {
                        m += 1;
                    }
                    if m > s && d.get(m) == Some(&b'(') {
                        macros.push(name_hash(i + s, i + m));
                    }
                }
                _ => {}
            }
            // Every identifier of the directive counts as a name.
            let mut k = 0;
            while k < d.len() {
                if d[k] == b'_' || d[k].is_ascii_alphabetic() {
                    let s = k;
                    while k < d.len() && is_id(d[k]) {
                        k += 1;
                    }
                    idents.push(name_hash(i + s, i + k));
                } else if d[k].is_ascii_digit() {
                    while k < d.len() && (is_id(d[k]) || d[k] == b'.') {
                        k += 1;
                    }
                } else {
                    if d[k] == b'$' || d[k] >= 0x80 {
                        all = true;
                    }
                    k += 1;
                }
            }
            i = end;
            continue;
        }
        if c == b'"' || c == b'\'' {
            i = skip_literal(b, i);
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            i += 1;
            while i < n
                && (is_id(b[i])
                    || b[i] == b'.'
                    || ((b[i] == b'+' || b[i] == b'-')
                        && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P')))
            {
                i += 1;
            }
            continue;
        }
        let branch = stack.last().copied().unwrap_or(0);
        if c == b'_' || c.is_ascii_alphabetic() {
            let s = i;
            while i < n && is_id(b[i]) {
                i += 1;
            }
            if i < n && (b[i] == b'$' || b[i] >= 0x80) {
                all = true;
            }
            // `L"..."`, `u8'x'`: a literal's prefix.
            if i < n && (b[i] == b'"' || b[i] == b'\'') && i - s <= 2 {
                continue;
            }
            let h = name_hash(s, i);
            idents.push(h);
            if depth >= 1 {
                members.push(h);
            }
            let t = if &b[s..i] == b"typedef" {
                T::Typedef
            } else {
                T::Ident
            };
            toks.push(Tok {
                t,
                h,
                branch,
                depth,
            });
            continue;
        }
        if c == b'$' || c >= 0x80 {
            all = true;
            i += 1;
            continue;
        }
        let t = match c {
            b';' => Some(T::Semi),
            b'{' => Some(T::Open),
            b'}' => Some(T::Close),
            _ => None,
        };
        if let Some(t) = t {
            toks.push(Tok {
                t,
                h: 0,
                branch,
                depth,
            });
            match t {
                T::Open => depth += 1,
                T::Close => depth = (depth - 1).max(0),
                _ => {}
            }
        }
        i += 1;
    }
    // Whether branch `a` is `b` or encloses it (a token in `a` is kept
    // whenever one in `b` is).
    let encloses = |a: u32, mut b: u32| {
        for _ in 0..64 {
            if a == b {
                return true;
            }
            if b == 0 {
                return false;
            }
            b = parent[b as usize];
        }
        true
    };
    // Next `{` and next `;`/`}` after each token.
    let len = toks.len();
    let mut next_open = vec![usize::MAX; len + 1];
    let mut next_term = vec![usize::MAX; len + 1];
    for k in (0..len).rev() {
        next_open[k] = if toks[k].t == T::Open {
            k
        } else {
            next_open[k + 1]
        };
        next_term[k] = if matches!(toks[k].t, T::Semi | T::Close) {
            k
        } else {
            next_term[k + 1]
        };
    }
    let mut brace: Vec<u64> = Vec::new();
    let mut typedef: Vec<u64> = Vec::new();
    for (k, tk) in toks.iter().enumerate() {
        match tk.t {
            T::Ident => {
                let (o, t) = (next_open[k + 1], next_term[k + 1]);
                if o == usize::MAX {
                    continue;
                }
                if o < t {
                    brace.push(tk.h);
                    continue;
                }
                if encloses(toks[t].branch, tk.branch) {
                    continue; // a `;` or `}` first, kept with the name
                }
                // A terminator in another branch: look further.
                let mut j = t;
                let mut found = false;
                let mut steps = 0;
                while j < len {
                    steps += 1;
                    if steps > SCAN_CAP {
                        found = true;
                        break;
                    }
                    match toks[j].t {
                        T::Open => {
                            found = true;
                            break;
                        }
                        T::Semi | T::Close if encloses(toks[j].branch, tk.branch) => break,
                        _ => {}
                    }
                    j += 1;
                }
                if found {
                    brace.push(tk.h);
                }
            }
            T::Typedef => {
                // Every name to the `;` that ends it, at its brace depth.
                let mut j = k + 1;
                let mut steps = 0;
                while j < len {
                    steps += 1;
                    if steps > SCAN_CAP * 16 {
                        all = true;
                        break;
                    }
                    let x = toks[j];
                    if x.t == T::Semi && x.depth == tk.depth && encloses(x.branch, tk.branch) {
                        break;
                    }
                    if x.t == T::Ident {
                        typedef.push(x.h);
                    }
                    j += 1;
                }
            }
            _ => {}
        }
    }
    Index {
        all,
        idents: NameSet::from_hashes(idents),
        brace: NameSet::from_hashes(brace),
        typedef: NameSet::from_hashes(typedef),
        macros: NameSet::from_hashes(macros),
        members: NameSet::from_hashes(members),
    }
}

/// A top-level item of a header ([`items`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// From its first token to its end.
    pub range: std::ops::Range<usize>,
    /// Where its outermost `{` is, if it has one: a function's name comes
    /// before it.
    pub open: Option<usize>,
    /// It is a function definition (its outermost `{` follows a `)`).
    pub body: bool,
    /// A function whose body has a `{` right after a name (`struct x {`,
    /// `union {`): it may declare struct members.
    pub records: bool,
}

/// The top-level items of a header's hint-rewritten text `b`, in order: each
/// declaration or definition outside braces and parentheses, from its first
/// token to its end (a `;`, or the `}` of a body opened right after a `)`:
/// a function), and each directive line outside braces other than a
/// conditional.  Conditionals (`#if` ... `#endif`) outside braces belong to
/// no item; inside braces they are part of theirs.  A parse of some items
/// alone (each to the end of its line) sees what the whole parse sees there.
///
/// `None` when the text cannot be cut that way: a directive between an
/// item's first token and its end, or brackets that do not balance.
pub fn items(b: &[u8]) -> Option<Vec<Item>> {
    let n = b.len();
    let mut out = Vec::new();
    let mut i = 0;
    let (mut braces, mut parens) = (0i32, 0i32);
    let mut start: Option<usize> = None;
    let mut open: Option<usize> = None;
    let mut body = false;
    let mut records = false;
    // The last byte of the previous token, and of the previous token
    // outside braces.
    let (mut prev, mut last) = (0u8, 0u8);
    // The end of the last token.
    let mut tail = 0;
    let is_id = ident::is_byte;
    let close = |out: &mut Vec<Item>,
                 range,
                 open: &mut Option<usize>,
                 body: &mut bool,
                 records: &mut bool| {
        out.push(Item {
            range,
            open: open.take(),
            body: std::mem::take(body),
            records: std::mem::take(records),
        });
    };
    while i < n {
        if let Some(next) = skip_blank(b, i) {
            i = next;
            continue;
        }
        let c = b[i];
        if c == b'#' {
            let end = directive_end(b, i);
            if braces == 0 && parens == 0 {
                if start.is_some() {
                    return None;
                }
                let d = &b[i + 1..end];
                let w = d
                    .iter()
                    .position(|&x| x != b' ' && x != b'\t')
                    .unwrap_or(d.len());
                let word_end = d[w..]
                    .iter()
                    .position(|&x| !is_id(x))
                    .map_or(d.len(), |p| w + p);
                let conditional = matches!(
                    &d[w..word_end],
                    b"if"
                        | b"ifdef"
                        | b"ifndef"
                        | b"elif"
                        | b"else"
                        | b"endif"
                        | b"elifdef"
                        | b"elifndef"
                );
                if !conditional {
                    let mut end = end;
                    while end > i && b[end - 1].is_ascii_whitespace() {
                        end -= 1;
                    }
                    out.push(Item {
                        range: i..end,
                        open: None,
                        body: false,
                        records: false,
                    });
                }
            }
            i = end;
            continue;
        }
        let s = i;
        if start.is_none() {
            start = Some(s);
        }
        if c == b'"' || c == b'\'' {
            i = skip_literal(b, i);
        } else if is_id(c) {
            while i < n && is_id(b[i]) {
                i += 1;
            }
        } else {
            i += 1;
            match c {
                b'(' => parens += 1,
                b')' => parens -= 1,
                b'{' => {
                    if braces == 0 && parens == 0 {
                        body = last == b')';
                        open = Some(s);
                    } else if body && is_id(prev) {
                        records = true;
                    }
                    braces += 1;
                }
                b'}' => {
                    braces -= 1;
                    if braces == 0 && parens == 0 && body {
                        let st = start.take().unwrap_or(s);
                        close(&mut out, st..i, &mut open, &mut body, &mut records);
                        (prev, last) = (0, 0);
                        continue;
                    }
                }
                b';' if braces == 0 && parens == 0 => {
                    let st = start.take().unwrap_or(s);
                    close(&mut out, st..i, &mut open, &mut body, &mut records);
                    (prev, last) = (0, 0);
                    continue;
                }
                _ => {}
            }
            if braces < 0 || parens < 0 {
                return None;
            }
        }
        prev = b[i - 1];
        if braces == 0 {
            last = prev;
        }
        tail = i;
    }
    if braces != 0 || parens != 0 {
        return None;
    }
    if let Some(s) = start {
        close(&mut out, s..tail, &mut open, &mut body, &mut records);
    }
    Some(out)
}

/// Past the blank at `i` (white space, an escaped newline, a comment), or
/// `None` when a token or directive starts there.
fn skip_blank(b: &[u8], i: usize) -> Option<usize> {
    match b[i] {
        b'\n' | b' ' | b'\t' | b'\r' | b'\x0c' | b'\x0b' => Some(i + 1),
        b'\\' if b.get(i + 1) == Some(&b'\n') => Some(i + 2),
        b'/' if b.get(i + 1) == Some(&b'*') => Some(skip_block_comment(b, i)),
        b'/' if b.get(i + 1) == Some(&b'/') => Some(skip_line_comment(b, i)),
        _ => None,
    }
}

/// End of a string or character literal (at the newline when unterminated).
fn skip_literal(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'\n' => return j,
            c if c == q => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// End of the directive starting at `i` (its newline, after continuation
/// lines and comments that span lines).
fn directive_end(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\n' => return j,
            b'\\' if b.get(j + 1) == Some(&b'\n') => j += 2,
            b'\\' if b.get(j + 1) == Some(&b'\r') && b.get(j + 2) == Some(&b'\n') => j += 3,
            b'/' if b.get(j + 1) == Some(&b'*') => j = skip_block_comment(b, j),
            b'/' if b.get(j + 1) == Some(&b'/') => j = skip_line_comment(b, j),
            b'"' | b'\'' => j = skip_literal(b, j),
            _ => j += 1,
        }
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(s: &str) -> Option<Vec<&str>> {
        items(s.as_bytes()).map(|v| v.into_iter().map(|it| &s[it.range]).collect())
    }

    #[test]
    fn items_cut_at_top_level_ends() {
        let src = "/* c */\n#ifndef H\n#define H\n#define M(a) ((a) + 1)\n\
                   struct s {\n\tint a; /* } */\n#ifdef X\n\tint b;\n#endif\n} __packed;\n\
                   static inline int f(int x)\n{\n\treturn x ? g(\"}\") : 0;\n}\n\
                   int p(void (*cb)(int a; int b));\nT(x, { a; });\nenum e { A, B };\n#endif\n";
        assert_eq!(
            cut(src).unwrap(),
            [
                "#define H",
                "#define M(a) ((a) + 1)",
                "struct s {\n\tint a; /* } */\n#ifdef X\n\tint b;\n#endif\n} __packed;",
                "static inline int f(int x)\n{\n\treturn x ? g(\"}\") : 0;\n}",
                "int p(void (*cb)(int a; int b));",
                "T(x, { a; });",
                "enum e { A, B };",
            ]
        );
    }

    #[test]
    fn items_refuse_what_they_cannot_cut() {
        // A conditional between a declaration's start and its end (inside
        // its parentheses it is part of the item).
        assert_eq!(cut("static int x\n#ifdef X\n= 1\n#endif\n;\n"), None);
        assert_eq!(
            cut("int f(int a,\n#ifdef X\nint b\n#endif\n);\n").unwrap(),
            ["int f(int a,\n#ifdef X\nint b\n#endif\n);"]
        );
        // Branches that open a body twice.
        assert_eq!(cut("int f(void)\n#ifdef X\n{\n#else\n{\n#endif\n}\n"), None);
        assert_eq!(cut("}"), None);
        let flags: Vec<(Option<usize>, bool, bool)> = items(
            b"int f(void) { struct { int a; } x; return 0; }\nint g(void) { if (x) { } }\nstruct s { int a; };\n",
        )
        .unwrap()
        .into_iter()
        .map(|it| (it.open, it.body, it.records))
        .collect();
        assert_eq!(
            flags,
            [
                (Some(12), true, true),
                (Some(59), true, false),
                (Some(83), false, false)
            ]
        );
        // A trailing item with no end is kept.
        assert_eq!(cut("EXPORT(x)\n").unwrap(), ["EXPORT(x)"]);
    }

    fn ix(s: &str) -> Index {
        index(s, s)
    }

    #[test]
    fn definitions_prototypes_and_branches() {
        let x = ix("struct a;\nstruct b { int f; };\nint p(int x);\n\
             static inline int d(int x)\n{\n\treturn q(x);\n}\n\
             #define M(x) ((x) + 1)\n#define N 3\n\
             typedef struct { int g; } t_t;\ntypedef int u_t;\n\
             int c(int y)\n#ifdef A\n;\n#else\n{ return 0; }\n#endif\n");
        assert!(x.may_define_struct("b") && !x.may_define_struct("a"));
        assert!(!x.may_define_function("p") && x.may_name("p"));
        assert!(x.may_define_function("d") && !x.may_define_function("q"));
        assert!(x.may_define_function("M") && !x.may_define_function("N"));
        assert!(x.may_define_struct("t_t") && x.may_define_typedef("u_t"));
        assert!(!x.may_define_typedef("b"));
        // The `;` is in another branch than the name: may be a definition.
        assert!(x.may_define_function("c"));
        assert!(!x.may_name("nothing") && x.may_name("g"));
        assert!(x.may_declare_member("g") && x.may_declare_member("f"));
        assert!(!x.may_declare_member("p") && !x.may_declare_member("N"));
        // Braces opened in both branches count once.
        let y = ix(
            "#ifdef A\nstruct s {\n#else\nstruct t {\n#endif\n\tint m;\n};\nint top;\n\
             #if B\n}\n#else\n}\n#endif\nstruct u { int n; };\n",
        );
        assert!(y.may_declare_member("m") && y.may_declare_member("n"));
    }

    #[test]
    fn comments_strings_and_odd_text() {
        let x = ix("/* struct z { */ char *s = \"w {\"; // v {\n#define L \"/*\"\nint k;\n");
        assert!(!x.may_define_struct("z") && !x.may_define_struct("w"));
        assert!(!x.may_define_struct("v") && x.may_name("k"));
        assert!(ix("int a$b;").all);
        let _ = ix("#define\n#if\n#endif\n#endif\n\"\n'\n/*");
    }
}

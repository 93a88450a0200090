//! Pointcut expressions: parsing (with positions in the aspect file), static
//! checks on the names they bind, and evaluation against a join point.
//!
//! Grammar (keywords are case-insensitive; `&&`, `||`, `!` are synonyms):
//!
//! ```text
//! expr    := or
//! or      := and (OR and)*
//! and     := unary (AND unary)*
//! unary   := NOT unary | '(' expr ')' | prim
//! prim    := execution(PAT) | call(PAT) | access(PAT.PAT) | within_function(PAT)
//!          | file(GLOB) | args(NAME, ...) | target(NAME) | local(NAME)
//! ```
//!
//! A pattern is a C identifier in which `%` (or `*`) matches any run of
//! characters.  `args`, `target` and `local` both filter and bind: the join
//! point must have that argument, target pointer or local variable, and the
//! advice sees it under the given name.

use crate::textmap::Mapped;
use fgft_base::ident;
use std::ops::Range;

/// The primitive pointcuts, for "did you mean" and documentation.
pub const PRIMITIVES: &[&str] = &[
    "execution",
    "call",
    "access",
    "within_function",
    "file",
    "args",
    "target",
    "local",
];

/// A name pattern with `%`/`*` wildcards.
#[derive(Debug, Clone)]
pub struct Pattern {
    pub text: String,
    /// Range in the aspect file.
    pub range: Range<usize>,
}

impl Pattern {
    pub fn is_wild(&self) -> bool {
        self.text.contains(['%', '*'])
    }

    pub fn matches(&self, name: &str) -> bool {
        wild_match(self.text.as_bytes(), name.as_bytes())
    }
}

fn wild_match(p: &[u8], s: &[u8]) -> bool {
    // Iterative glob with backtracking to the last wildcard.
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'%' || p[pi] == b'*') {
            star = Some((pi, si));
            pi += 1;
        } else if pi < p.len() && p[pi] == s[si] {
            pi += 1;
            si += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && (p[pi] == b'%' || p[pi] == b'*') {
        pi += 1;
    }
    pi == p.len()
}

/// A bound name.
#[derive(Debug, Clone)]
pub struct Name {
    pub name: String,
    pub range: Range<usize>,
}

/// A primitive pointcut.
#[derive(Debug, Clone)]
pub enum Prim {
    Execution(Pattern),
    Call(Pattern),
    Access {
        record: Pattern,
        member: Pattern,
    },
    WithinFunction(Pattern),
    File {
        glob: globset::GlobMatcher,
        text: String,
    },
    /// `None` skips a position (`_`).
    Args(Vec<Option<Name>>),
    Target(Name),
    Local(Name),
}

/// A pointcut expression.
#[derive(Debug, Clone)]
pub enum Expr {
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>, Range<usize>),
    Not(Box<Expr>),
    Prim(Prim, Range<usize>),
}

/// Kinds of join point shadows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Execution,
    Call,
    Access,
}

/// Where a binding's value comes from at a join point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Target,
    /// The i-th argument: of the function for execution and access join
    /// points, of the call for call join points.
    Arg(usize),
    Local(String),
}

/// What a pointcut needs to know about a join point.
pub trait JoinPoint {
    fn kind(&self) -> Kind;
    fn func(&self) -> &str;
    /// File path relative to the driver root.
    fn file(&self) -> &str;
    fn callee(&self) -> Option<&str>;
    /// Names of the accessed struct: its tag and every typedef naming it.
    fn record_names(&self) -> &[String];
    fn member(&self) -> Option<&str>;
    fn has_target(&self) -> bool;
    fn arg_count(&self) -> Option<usize>;
    fn has_local(&self, name: &str) -> bool;
}

/// A parse or check error: range in the aspect file and message.
#[derive(Debug, Clone)]
pub struct Error {
    pub range: Range<usize>,
    pub message: String,
    pub label: String,
    pub notes: Vec<String>,
}

fn err(range: Range<usize>, message: impl Into<String>, label: impl Into<String>) -> Error {
    Error {
        range,
        message: message.into(),
        label: label.into(),
        notes: Vec::new(),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    LParen,
    RParen,
    And,
    Or,
    Not,
    Word(String),
    /// Any other character (meaningful only inside an argument list).
    Punct(char),
}

/// How deeply a pointcut may nest: open parentheses and NOTs at once, and
/// levels of the expression tree (each AND, OR and NOT adds one).  Real
/// pointcuts use a handful; the parser and every walk of the expression
/// recurse, so deeper input is refused at the token that goes too deep.
pub const MAX_DEPTH: usize = 256;

struct Parser<'a> {
    src: &'a Mapped,
    toks: Vec<(Tok, Range<usize>)>,
    pos: usize,
    /// Open parentheses and NOTs around the current token.
    nest: usize,
}

/// A byte of a name pattern: an identifier byte or a wildcard (`%`, `*`).
fn pattern_byte(c: u8) -> bool {
    ident::is_byte(c) || c == b'%' || c == b'*'
}

fn lex(src: &Mapped) -> Result<Vec<(Tok, Range<usize>)>, Error> {
    let t = src.text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < t.len() {
        let c = t[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let tok = match c {
            b'(' => {
                i += 1;
                Tok::LParen
            }
            b')' => {
                i += 1;
                Tok::RParen
            }
            b'!' => {
                i += 1;
                Tok::Not
            }
            b'&' if t.get(i + 1) == Some(&b'&') => {
                i += 2;
                Tok::And
            }
            b'|' if t.get(i + 1) == Some(&b'|') => {
                i += 2;
                Tok::Or
            }
            _ if pattern_byte(c) => {
                while i < t.len() && pattern_byte(t[i]) {
                    i += 1;
                }
                let w = &src.text[start..i];
                match w.to_ascii_lowercase().as_str() {
                    "and" => Tok::And,
                    "or" => Tok::Or,
                    "not" => Tok::Not,
                    _ => Tok::Word(w.to_string()),
                }
            }
            b'"' | b'\'' => {
                let q = c;
                i += 1;
                while i < t.len() && t[i] != q {
                    i += 1;
                }
                if i >= t.len() {
                    return Err(err(
                        src.raw_range(start..t.len()),
                        "unterminated quoted text in pointcut",
                        "this quote is not closed",
                    ));
                }
                i += 1;
                Tok::Word(src.text[start..i].to_string())
            }
            _ => {
                let ch = src.text[i..].chars().next().unwrap_or('?');
                i += ch.len_utf8();
                Tok::Punct(ch)
            }
        };
        out.push((tok, start..i));
    }
    Ok(out)
}

/// Parses a pointcut from decoded text (positions map to the aspect file).
pub fn parse(src: &Mapped) -> Result<Expr, Error> {
    let toks = lex(src)?;
    if toks.is_empty() {
        return Err(err(
            src.raw_range(0..src.text.len()),
            "empty pointcut",
            "a pointcut such as `execution(fn)` is needed here",
        ));
    }
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        nest: 0,
    };
    let (e, _) = p.or()?;
    if let Some((t, r)) = p.toks.get(p.pos) {
        if let Tok::Punct(ch) = t {
            return Err(err(
                src.raw_range(r.clone()),
                format!("unexpected character `{ch}` in pointcut"),
                "not part of a pointcut",
            ));
        }
        return Err(err(
            src.raw_range(r.clone()),
            "unexpected text after the pointcut",
            "expected AND, OR or the end of the pointcut",
        ));
    }
    Ok(e)
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.0)
    }

    fn end_range(&self) -> Range<usize> {
        let e = self.src.text.len();
        self.src.raw_range(e..e)
    }

    /// The tree depth of a new AND, OR or NOT node over subtrees of depth
    /// `d`, refused at its operator `r` beyond [`MAX_DEPTH`].
    fn deeper(&self, d: usize, r: &Range<usize>) -> Result<usize, Error> {
        if d < MAX_DEPTH {
            return Ok(d + 1);
        }
        let mut e = err(
            self.src.raw_range(r.clone()),
            format!("the pointcut nests deeper than {MAX_DEPTH} levels of AND, OR and NOT"),
            "too deep here",
        );
        e.notes
            .push("split it into several advices, or list names with `%` patterns".into());
        Err(e)
    }

    /// Enters a parenthesis or a NOT at `r`, refused beyond [`MAX_DEPTH`].
    fn enter(&mut self, r: &Range<usize>) -> Result<(), Error> {
        self.nest += 1;
        if self.nest <= MAX_DEPTH {
            return Ok(());
        }
        let mut e = err(
            self.src.raw_range(r.clone()),
            format!("the pointcut nests more than {MAX_DEPTH} parentheses and NOTs deep"),
            "too deep here",
        );
        e.notes.push(format!(
            "fgft-cc reads at most {MAX_DEPTH} levels; remove the extra parentheses"
        ));
        Err(e)
    }

    /// An OR chain, with its tree depth.
    fn or(&mut self) -> Result<(Expr, usize), Error> {
        let (mut l, mut d) = self.and()?;
        while self.peek() == Some(&Tok::Or) {
            let r = self.toks[self.pos].1.clone();
            self.pos += 1;
            let (rhs, dr) = self.and()?;
            d = self.deeper(d.max(dr), &r)?;
            l = Expr::Or(Box::new(l), Box::new(rhs), self.src.raw_range(r));
        }
        Ok((l, d))
    }

    fn and(&mut self) -> Result<(Expr, usize), Error> {
        let (mut l, mut d) = self.unary()?;
        while self.peek() == Some(&Tok::And) {
            let r = self.toks[self.pos].1.clone();
            self.pos += 1;
            let (rhs, dr) = self.unary()?;
            d = self.deeper(d.max(dr), &r)?;
            l = Expr::And(Box::new(l), Box::new(rhs));
        }
        Ok((l, d))
    }

    fn unary(&mut self) -> Result<(Expr, usize), Error> {
        match self.toks.get(self.pos).cloned() {
            Some((Tok::Not, r)) => {
                self.pos += 1;
                self.enter(&r)?;
                let (e, d) = self.unary()?;
                self.nest -= 1;
                Ok((Expr::Not(Box::new(e)), self.deeper(d, &r)?))
            }
            Some((Tok::LParen, r)) => {
                self.pos += 1;
                self.enter(&r)?;
                let e = self.or()?;
                self.nest -= 1;
                if self.peek() != Some(&Tok::RParen) {
                    let mut e = err(
                        self.src.raw_range(r),
                        "unclosed parenthesis in pointcut",
                        "this `(` has no matching `)`",
                    );
                    e.notes.push("add the missing `)`".into());
                    return Err(e);
                }
                self.pos += 1;
                Ok(e)
            }
            Some((Tok::Word(w), r)) => {
                self.pos += 1;
                Ok((self.prim(&w, r)?, 0))
            }
            Some((Tok::Punct(ch), r)) => Err(err(
                self.src.raw_range(r),
                format!("unexpected character `{ch}` in pointcut"),
                "not part of a pointcut",
            )),
            Some((t, r)) => Err(err(
                self.src.raw_range(r),
                format!("expected a pointcut, found {}", describe(&t)),
                "expected a pointcut such as `execution(fn)` here",
            )),
            None => Err(err(
                self.end_range(),
                "the pointcut ends too early",
                "expected a pointcut after this",
            )),
        }
    }

    fn prim(&mut self, name: &str, r: Range<usize>) -> Result<Expr, Error> {
        let lower = name.to_ascii_lowercase();
        let known = PRIMITIVES.contains(&lower.as_str()) || lower == "within";
        if !known {
            let mut e = err(
                self.src.raw_range(r.clone()),
                format!("unknown pointcut `{name}`"),
                "not a pointcut",
            );
            if let Some(s) = crate::suggest(&lower, PRIMITIVES.iter().copied()) {
                e.notes.push(format!("did you mean `{s}`?"));
            }
            e.notes
                .push(format!("known pointcuts: {}", PRIMITIVES.join(", ")));
            return Err(e);
        }
        if self.peek() != Some(&Tok::LParen) {
            return Err(err(
                self.src.raw_range(r),
                format!("`{name}` needs an argument list"),
                format!("expected `{name}(...)`"),
            ));
        }
        // The argument text is everything up to the matching `)`, raw.
        let open = self.toks[self.pos].1.end;
        let mut depth = 0usize;
        let mut close = None;
        let mut k = self.pos;
        while k < self.toks.len() {
            match self.toks[k].0 {
                Tok::LParen => depth += 1,
                Tok::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(k);
                        break;
                    }
                }
                _ => {}
            }
            k += 1;
        }
        let Some(close) = close else {
            return Err(err(
                self.src.raw_range(self.toks[self.pos].1.clone()),
                "unclosed parenthesis in pointcut",
                "this `(` has no matching `)`",
            ));
        };
        let args_end = self.toks[close].1.start;
        self.pos = close + 1;
        let whole = self.src.raw_range(r.start..args_end + 1);
        let args = split_args(&self.src.text, open..args_end);
        let prim = self.build(&lower, name, &args, open..args_end)?;
        Ok(Expr::Prim(prim, whole))
    }

    fn one_arg(
        &self,
        name: &str,
        args: &[(String, Range<usize>)],
        inner: Range<usize>,
    ) -> Result<(String, Range<usize>), Error> {
        match args {
            [a] if !a.0.is_empty() => Ok(a.clone()),
            _ => Err(err(
                self.src.raw_range(inner),
                format!("`{name}` takes exactly one argument"),
                "expected one argument here",
            )),
        }
    }

    fn pattern(&self, what: &str, a: &(String, Range<usize>)) -> Result<Pattern, Error> {
        let ok = !a.0.is_empty() && a.0.bytes().all(pattern_byte);
        if !ok {
            return Err(err(
                self.src.raw_range(a.1.clone()),
                format!("bad {what} pattern `{}`", a.0),
                "expected a C name, `%` matching any characters",
            ));
        }
        Ok(Pattern {
            text: a.0.clone(),
            range: self.src.raw_range(a.1.clone()),
        })
    }

    fn name(&self, a: &(String, Range<usize>)) -> Result<Name, Error> {
        if !ident::is_ident(&a.0) {
            return Err(err(
                self.src.raw_range(a.1.clone()),
                format!("`{}` is not a C identifier", a.0),
                "expected a name for the advice to use",
            ));
        }
        if RESERVED.contains(&a.0.as_str()) || a.0.starts_with("__fgft") {
            return Err(err(
                self.src.raw_range(a.1.clone()),
                format!("`{}` is reserved in advice code", a.0),
                "pick another name",
            ));
        }
        Ok(Name {
            name: a.0.clone(),
            range: self.src.raw_range(a.1.clone()),
        })
    }

    fn build(
        &self,
        lower: &str,
        name: &str,
        args: &[(String, Range<usize>)],
        inner: Range<usize>,
    ) -> Result<Prim, Error> {
        Ok(match lower {
            "execution" => {
                Prim::Execution(self.pattern("function", &self.one_arg(name, args, inner)?)?)
            }
            "call" => Prim::Call(self.pattern("function", &self.one_arg(name, args, inner)?)?),
            "within_function" | "within" => {
                Prim::WithinFunction(self.pattern("function", &self.one_arg(name, args, inner)?)?)
            }
            "access" => {
                let a = self.one_arg(name, args, inner)?;
                let Some(dot) = a.0.find('.') else {
                    let mut e = err(
                        self.src.raw_range(a.1.clone()),
                        format!("`access` needs `struct.member`, found `{}`", a.0),
                        "expected `struct.member`",
                    );
                    e.notes.push(
                        "use `%` for any struct or any member, e.g. `access(sk_buff.%)`".into(),
                    );
                    return Err(e);
                };
                let s = (a.0[..dot].trim().to_string(), a.1.start..a.1.start + dot);
                let m = (
                    a.0[dot + 1..].trim().to_string(),
                    a.1.start + dot + 1..a.1.end,
                );
                Prim::Access {
                    record: self.pattern("struct", &s)?,
                    member: self.pattern("member", &m)?,
                }
            }
            "file" => {
                let a = self.one_arg(name, args, inner)?;
                let text = a.0.trim_matches(['"', '\'']).to_string();
                let glob = globset::GlobBuilder::new(&text)
                    .literal_separator(false)
                    .build()
                    .map_err(|e| {
                        err(
                            self.src.raw_range(a.1.clone()),
                            format!("bad file glob `{text}`: {e}"),
                            "not a glob",
                        )
                    })?;
                Prim::File {
                    glob: glob.compile_matcher(),
                    text,
                }
            }
            "args" => {
                if args.len() == 1 && args[0].0.is_empty() {
                    return Err(err(
                        self.src.raw_range(inner),
                        "`args` needs at least one name",
                        "expected names, `_` to skip a position",
                    ));
                }
                let mut names = Vec::new();
                for a in args {
                    if a.0 == "_" {
                        names.push(None);
                    } else {
                        names.push(Some(self.name(a)?));
                    }
                }
                Prim::Args(names)
            }
            "target" => Prim::Target(self.name(&self.one_arg(name, args, inner)?)?),
            "local" => Prim::Local(self.name(&self.one_arg(name, args, inner)?)?),
            _ => unreachable!("checked against PRIMITIVES"),
        })
    }
}

/// Names the generated trampolines use themselves.
pub const RESERVED: &[&str] = &["jp"];

fn describe(t: &Tok) -> &'static str {
    match t {
        Tok::LParen => "`(`",
        Tok::RParen => "`)`",
        Tok::And => "AND",
        Tok::Or => "OR",
        Tok::Not => "NOT",
        Tok::Word(_) => "a name",
        Tok::Punct(_) => "a character",
    }
}

/// Splits `text[range]` at top-level commas; each piece trimmed, with its range.
fn split_args(text: &str, range: Range<usize>) -> Vec<(String, Range<usize>)> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = range.start;
    let b = text.as_bytes();
    for i in range.clone() {
        match b[i] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b',' if depth == 0 => {
                out.push(trimmed(text, start..i));
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(trimmed(text, start..range.end));
    out
}

fn trimmed(text: &str, r: Range<usize>) -> (String, Range<usize>) {
    let s = &text[r.clone()];
    let lead = s.len() - s.trim_start().len();
    let t = s.trim();
    (t.to_string(), r.start + lead..r.start + lead + t.len())
}

impl Expr {
    /// Names bound by the expression; errors for names bound twice in a
    /// conjunction or on one side of an OR only.
    pub fn bound_names(&self) -> Result<Vec<Name>, Error> {
        match self {
            Expr::Prim(p, _) => Ok(match p {
                Prim::Args(a) => a.iter().flatten().cloned().collect(),
                Prim::Target(n) | Prim::Local(n) => vec![n.clone()],
                _ => Vec::new(),
            }),
            Expr::Not(_) => Ok(Vec::new()),
            Expr::And(a, b) => {
                let mut l = a.bound_names()?;
                for n in b.bound_names()? {
                    if let Some(prev) = l.iter().find(|x| x.name == n.name) {
                        let mut e = err(
                            n.range.clone(),
                            format!("`{}` is bound twice", n.name),
                            "second binding",
                        );
                        e.notes.push(format!(
                            "it is already bound at byte {} of the aspect file",
                            prev.range.start
                        ));
                        return Err(e);
                    }
                    l.push(n);
                }
                Ok(l)
            }
            Expr::Or(a, b, r) => {
                let l = a.bound_names()?;
                let rr = b.bound_names()?;
                let mut ln: Vec<_> = l.iter().map(|n| n.name.clone()).collect();
                let mut rn: Vec<_> = rr.iter().map(|n| n.name.clone()).collect();
                ln.sort();
                rn.sort();
                if ln != rn {
                    let mut e = err(
                        r.clone(),
                        "both sides of OR must bind the same names",
                        format!(
                            "left binds {{{}}}, right binds {{{}}}",
                            ln.join(", "),
                            rn.join(", ")
                        ),
                    );
                    e.notes.push(
                        "a name bound on one side only would be undefined at some join points"
                            .into(),
                    );
                    return Err(e);
                }
                Ok(l)
            }
        }
    }

    /// The join-point kinds the expression can match (conservative).
    pub fn kinds(&self) -> Vec<Kind> {
        let all = vec![Kind::Execution, Kind::Call, Kind::Access];
        match self {
            Expr::Prim(Prim::Execution(_), _) => vec![Kind::Execution],
            Expr::Prim(Prim::Call(_), _) => vec![Kind::Call],
            Expr::Prim(Prim::Access { .. }, _) => vec![Kind::Access],
            Expr::Prim(..) | Expr::Not(_) => all,
            Expr::And(a, b) => {
                let r = b.kinds();
                a.kinds().into_iter().filter(|k| r.contains(k)).collect()
            }
            Expr::Or(a, b, _) => {
                let mut k = a.kinds();
                for x in b.kinds() {
                    if !k.contains(&x) {
                        k.push(x);
                    }
                }
                k.sort();
                k
            }
        }
    }

    /// Every primitive, in source order.
    pub fn prims(&self) -> Vec<(&Prim, Range<usize>)> {
        let mut out = Vec::new();
        self.walk(&mut |p, r| out.push((p, r)));
        out
    }

    fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Prim, Range<usize>)) {
        match self {
            Expr::Prim(p, r) => f(p, r.clone()),
            Expr::Not(a) => a.walk(f),
            Expr::And(a, b) | Expr::Or(a, b, _) => {
                a.walk(f);
                b.walk(f);
            }
        }
    }

    /// Whether the expression matches `jp`; on a match, the bindings.
    pub fn eval(&self, jp: &dyn JoinPoint) -> Option<Vec<(String, Source)>> {
        match self {
            Expr::Prim(p, _) => eval_prim(p, jp),
            Expr::Not(a) => match a.eval(jp) {
                Some(_) => None,
                None => Some(Vec::new()),
            },
            Expr::And(a, b) => {
                let mut l = a.eval(jp)?;
                l.extend(b.eval(jp)?);
                Some(l)
            }
            Expr::Or(a, b, _) => a.eval(jp).or_else(|| b.eval(jp)),
        }
    }
}

fn eval_prim(p: &Prim, jp: &dyn JoinPoint) -> Option<Vec<(String, Source)>> {
    match p {
        Prim::Execution(pat) => {
            (jp.kind() == Kind::Execution && pat.matches(jp.func())).then(Vec::new)
        }
        Prim::Call(pat) => {
            (jp.kind() == Kind::Call && jp.callee().is_some_and(|c| pat.matches(c))).then(Vec::new)
        }
        Prim::Access { record, member } => (jp.kind() == Kind::Access
            && jp.record_names().iter().any(|n| record.matches(n))
            && jp.member().is_some_and(|m| member.matches(m)))
        .then(Vec::new),
        Prim::WithinFunction(pat) => pat.matches(jp.func()).then(Vec::new),
        Prim::File { glob, .. } => {
            let f = jp.file();
            let base = f.rsplit('/').next().unwrap_or(f);
            (glob.is_match(f) || glob.is_match(base)).then(Vec::new)
        }
        Prim::Args(names) => {
            let n = jp.arg_count()?;
            if n < names.len() {
                return None;
            }
            Some(
                names
                    .iter()
                    .enumerate()
                    .filter_map(|(i, n)| n.as_ref().map(|n| (n.name.clone(), Source::Arg(i))))
                    .collect(),
            )
        }
        Prim::Target(n) => jp
            .has_target()
            .then(|| vec![(n.name.clone(), Source::Target)]),
        Prim::Local(n) => {
            if jp.has_local(&n.name) {
                Some(vec![(n.name.clone(), Source::Local(n.name.clone()))])
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::textmap::decode;

    fn p(s: &str) -> Result<Expr, Error> {
        parse(&decode(s, 0..s.len()))
    }

    struct J {
        kind: Kind,
        func: &'static str,
        callee: Option<&'static str>,
        rec: Vec<String>,
        member: Option<&'static str>,
        locals: Vec<&'static str>,
    }
    impl JoinPoint for J {
        fn kind(&self) -> Kind {
            self.kind
        }
        fn func(&self) -> &str {
            self.func
        }
        fn file(&self) -> &str {
            "net/e1000_main.c"
        }
        fn callee(&self) -> Option<&str> {
            self.callee
        }
        fn record_names(&self) -> &[String] {
            &self.rec
        }
        fn member(&self) -> Option<&str> {
            self.member
        }
        fn has_target(&self) -> bool {
            self.kind == Kind::Access
        }
        fn arg_count(&self) -> Option<usize> {
            Some(2)
        }
        fn has_local(&self, n: &str) -> bool {
            self.locals.contains(&n)
        }
    }

    fn access(member: &'static str) -> J {
        J {
            kind: Kind::Access,
            func: "e1000_clean_rx_irq",
            callee: None,
            rec: vec!["sk_buff".into()],
            member: Some(member),
            locals: vec!["adapter"],
        }
    }

    #[test]
    fn seed_pointcut() {
        let e = p("access(sk_buff.%) AND target(arg0)").unwrap();
        let b = e.eval(&access("len")).unwrap();
        assert_eq!(b, vec![("arg0".to_string(), Source::Target)]);
        let e =
            p("access(inode.i_uid) AND within_function(inode_change_ok) AND target(v)").unwrap();
        assert!(e.eval(&access("len")).is_none());
    }

    #[test]
    fn boolean_structure() {
        let e = p("(execution(e1000_%) OR call(netif_%)) and not within_function(%irq)").unwrap();
        let mut j = access("len");
        j.kind = Kind::Execution;
        j.func = "e1000_open";
        assert!(e.eval(&j).is_some());
        j.func = "e1000_intr_irq";
        assert!(e.eval(&j).is_none());
        j.kind = Kind::Call;
        j.func = "e1000_xmit";
        j.callee = Some("netif_wake_queue");
        assert!(e.eval(&j).is_some());
        assert!(p("file(*_main.c) && !local(adapter)")
            .unwrap()
            .eval(&j)
            .is_none());
        assert!(p("file(\"e1000_*.c\")").unwrap().eval(&j).is_some());
    }

    #[test]
    fn wildcards() {
        let pat = |t: &str| Pattern {
            text: t.into(),
            range: 0..0,
        };
        assert!(pat("%").matches(""));
        assert!(pat("e1000_%_irq").matches("e1000_clean_rx_irq"));
        assert!(!pat("e1000_%_irq").matches("e1000_clean_rx"));
        assert!(pat("sk_%").matches("sk_buff"));
        assert!(pat("*buff").matches("sk_buff"));
    }

    #[test]
    fn errors_are_located() {
        let src = "access(sk_buff.%) AND targt(x)";
        let e = p(src).unwrap_err();
        assert_eq!(&src[e.range.clone()], "targt");
        assert!(e.notes.iter().any(|n| n.contains("`target`")));
        let e = p("access(sk_buff)").unwrap_err();
        assert!(e.message.contains("struct.member"));
        let e = p("(execution(f)").unwrap_err();
        assert!(e.message.contains("unclosed"));
        let e = p("execution(f) AND").unwrap_err();
        assert!(e.message.contains("ends too early"));
        let e = p("execution(f g)").unwrap_err();
        assert!(e.message.contains("bad function pattern"));
        assert!(p("").is_err());
    }

    #[test]
    fn binding_checks() {
        let e = p("args(a, b) AND local(a)").unwrap();
        assert!(e.bound_names().unwrap_err().message.contains("bound twice"));
        let e = p("target(t) OR execution(f)").unwrap();
        assert!(e.bound_names().is_err());
        let e = p("(target(t) AND access(a.b)) OR (local(t) AND call(f))").unwrap();
        assert_eq!(e.bound_names().unwrap().len(), 1);
        assert!(p("target(jp)").is_err());
    }

    #[test]
    fn kinds() {
        let e = p("access(a.%) AND target(t)").unwrap();
        assert_eq!(e.kinds(), vec![Kind::Access]);
        let e = p("access(a.%) OR execution(f)").unwrap();
        assert_eq!(e.kinds(), vec![Kind::Execution, Kind::Access]);
    }
}

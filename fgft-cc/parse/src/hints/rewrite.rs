//! The rewriter: respells the macro uses the table names, in place.
//!
//! Invariant: the output has the length of the input and a newline exactly
//! where the input has one; every replacement byte is ASCII and every
//! replaced range covers whole characters.

use super::*;

pub(super) struct Rewriter<'a> {
    pub(super) src: &'a [u8],
    /// `src` as text.
    pub(super) text: &'a str,
    pub(super) out: Vec<u8>,
    pub(super) toks: &'a [Tok],
    pub(super) table: &'a HintTable,
    pub(super) index: &'a Index,
    /// Scratch list of argument token ranges.
    pub(super) args: Vec<(usize, usize)>,
}

/// How far a macro's argument list may reach, in tokens (the distance fits
/// [`Tok::close`]).
pub(super) const MAX_ARG_TOKENS: usize = 20_000;
const _: () = assert!(MAX_ARG_TOKENS <= u16::MAX as usize);

impl<'a> Rewriter<'a> {
    pub(super) fn text(&self, i: usize) -> &'a str {
        let t = self.toks[i];
        // Token boundaries are character boundaries.
        self.text.get(t.start..t.end).unwrap_or("")
    }

    pub(super) fn is_punct(&self, i: usize, c: u8) -> bool {
        self.toks.get(i).is_some_and(|t| t.kind == Kind::Punct(c))
    }

    pub(super) fn is_ident(&self, i: usize) -> bool {
        self.toks.get(i).is_some_and(|t| t.kind == Kind::Ident)
    }

    /// Whether token `i` has any of the `flags` bits.
    pub(super) fn is_word(&self, i: usize, flags: u16) -> bool {
        self.toks[i].flags & flags != 0
    }

    /// Whether the name set of bit `set` holds identifier `i`.
    #[inline]
    pub(super) fn in_set(&self, i: usize, set: u16) -> bool {
        let t = self.toks[i];
        t.flags & set != 0 || self.index.glob(set, &self.src[t.start..t.end])
    }

    /// Blanks bytes `s..e`, keeping line breaks.
    pub(super) fn blank(&mut self, s: usize, e: usize) {
        for b in &mut self.out[s..e] {
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
    }

    /// Index of the `)` matching the `(` at token `open`; `None` when it is not
    /// found before a `;` (a statement boundary) or the length limit.
    pub(super) fn match_paren(&self, open: usize) -> Option<usize> {
        match self.toks.get(open) {
            Some(t) if t.close > 0 => Some(open + t.close as usize),
            _ => None,
        }
    }

    /// Token ranges of the arguments between `open` and `close`, into `args`.
    pub(super) fn split_args(&self, open: usize, close: usize, args: &mut Vec<(usize, usize)>) {
        args.clear();
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
    }

    /// Whether token `i` stands where a statement may start.
    pub(super) fn at_statement_start(&self, i: usize) -> bool {
        if i == 0 {
            return true;
        }
        match self.toks[i - 1].kind {
            Kind::Punct(b';' | b'{' | b'}' | b')' | b':') => true,
            Kind::Ident => self.is_word(i - 1, ELSE_DO),
            _ => false,
        }
    }

    /// Whether the identifier at `i`, followed by `(`, is a call rather than the
    /// name in a declarator (`int foo(`, `*foo(`).
    pub(super) fn is_call_position(&self, i: usize) -> bool {
        if i == 0 {
            return true;
        }
        match self.toks[i - 1].kind {
            Kind::Ident => self.is_word(i - 1, EXPR_KEYWORD),
            Kind::Punct(b'*') => false,
            _ => true,
        }
    }

    pub(super) fn run(&mut self) {
        let mut i = 0;
        while i < self.toks.len() {
            i = self.step(i);
        }
    }

    /// Handles token `i`; returns the index of the next token to look at.
    pub(super) fn step(&mut self, i: usize) -> usize {
        let t = self.toks[i];
        match t.kind {
            Kind::Lit => {
                self.number(i);
                return i + 1;
            }
            Kind::Punct(_) => return i + 1,
            Kind::Ident => {}
        }
        if self.is_word(i, CASE) {
            self.case_range(i);
            return i + 1;
        }
        if self.is_punct(i + 1, b':') && !self.is_punct(i + 2, b':') {
            self.label(i);
        }
        self.merge_string_macros(i);
        if self.in_set(i, BLANK) {
            self.blank(t.start, t.end);
            return i + 1;
        }
        let call = self.is_punct(i + 1, b'(');
        if self.in_set(i, BLANK_CALL) {
            if call {
                if let Some(close) = self.match_paren(i + 1) {
                    self.blank(t.start, self.toks[close].end);
                    return close + 1;
                }
            }
            self.blank(t.start, t.end);
            return i + 1;
        }
        if call && self.is_word(i, OFFSETOF) {
            self.offsetof(i);
            return i + 1;
        }
        if !call || self.is_word(i, NOT_CALL) {
            return i + 1;
        }
        let Some(close) = self.match_paren(i + 1) else {
            return i + 1;
        };
        let table = self.table;
        let name = self.text(i);
        if let Some(&pos) = table.declare.get(name) {
            if self.declare(i, close, pos) {
                return close + 1;
            }
        }
        if let Some(&(a, b)) = table.declare_array.get(name) {
            if self.declare_array(i, close, a, b) {
                return close + 1;
            }
        }
        if self.at_statement_start(i)
            && (self.in_set(i, ITERATOR) || (t.nested && self.is_punct(close + 1, b'{')))
        {
            // Listed iterators, and any `NAME(args) {` inside a block (a call
            // is never followed by a block in C).
            self.iterator(i, close);
        }
        if self.in_set(i, DECL_CALL) {
            self.decl_call(i);
        }
        if self.in_set(i, INIT_FRAGMENT) {
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
    pub(super) fn gnu_variadic(&mut self, start: usize, end: usize) {
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
    pub(super) fn number(&mut self, i: usize) {
        let t = self.toks[i];
        let b = &self.src[t.start..t.end];
        if !b[0].is_ascii_digit() || valid_number(b) {
            return;
        }
        self.out[t.start] = b'_';
    }

    /// GNU case ranges: `case A ... B:` -> `case A  |  B:`.
    pub(super) fn case_range(&mut self, i: usize) {
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
    pub(super) fn label(&mut self, i: usize) {
        if !self.toks[i].nested || !self.at_statement_start(i) {
            return;
        }
        // `default` is one of the keywords.
        if self.is_word(i, KEYWORD) {
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
    pub(super) fn merge_string_macros(&mut self, i: usize) {
        let upper = |r: &Self, k: usize| r.is_ident(k) && r.is_word(k, UPPER);
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
    pub(super) fn offsetof(&mut self, i: usize) {
        let Some(close) = self.match_paren(i + 1) else {
            return;
        };
        let mut args = std::mem::take(&mut self.args);
        self.split_args(i + 1, close, &mut args);
        let two = match args[..] {
            [a, b] => Some((a, b)),
            _ => None,
        };
        self.args = args;
        let Some(((s0, e0), (s1, e1))) = two else {
            return;
        };
        let plain_type = self.looks_like_type(s0, e0) || (e0 == s0 + 1 && self.is_ident(s0));
        if plain_type && e1 == s1 + 1 && self.is_ident(s1) {
            return;
        }
        // An empty first argument (`offsetof( , m)`) spans no bytes.
        let first = self.src.get(self.toks[s0].start..self.toks[e0 - 1].end);
        if first.is_some_and(|a| a.contains(&b'\n')) {
            return;
        }
        let t = self.toks[i];
        self.out[t.end - 1] = b'F';
        if self.looks_like_type(s0, e0) {
            self.respell_as_ident(self.toks[s0].start, self.toks[e0 - 1].end);
        }
    }

    /// `NAME(a, b, c)` declaring the argument at `pos` -> `int  b`.
    pub(super) fn declare(&mut self, i: usize, close: usize, pos: usize) -> bool {
        let mut args = std::mem::take(&mut self.args);
        self.split_args(i + 1, close, &mut args);
        let arg = args.get(pos).copied();
        self.args = args;
        let Some((s, e)) = arg else {
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

    /// `NAME(a, n)` declaring array `a` of `n` elements -> `int  a[n]`
    /// (the comma becomes `[`, the closing parenthesis `]`).
    pub(super) fn declare_array(&mut self, i: usize, close: usize, a: usize, b: usize) -> bool {
        let mut args = std::mem::take(&mut self.args);
        self.split_args(i + 1, close, &mut args);
        let (name, count) = (args.get(a).copied(), args.get(b).copied());
        self.args = args;
        let (Some((s, e)), Some((cs, ce))) = (name, count) else {
            return false;
        };
        // The comma between the two is the token before the count.
        if e != s + 1 || !self.is_ident(s) || cs == 0 || ce <= cs || !self.is_punct(cs - 1, b',') {
            return false;
        }
        let t = self.toks[i];
        self.blank(t.start, self.toks[close].end);
        self.out[t.start..t.start + 3].copy_from_slice(b"int");
        for (from, to) in [
            (self.toks[s].start, self.toks[s].end),
            (self.toks[cs].start, self.toks[ce - 1].end),
        ] {
            self.out[from..to].copy_from_slice(&self.src[from..to]);
        }
        self.out[self.toks[cs - 1].start] = b'[';
        self.out[self.toks[close].start] = b']';
        true
    }

    /// `NAME(args) stmt` -> `while(args) stmt`.
    pub(super) fn iterator(&mut self, i: usize, close: usize) {
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
    pub(super) fn decl_call(&mut self, i: usize) {
        let mut k = i;
        while k > 0 && self.is_ident(k - 1) && self.table.storage.contains(self.text(k - 1)) {
            k -= 1;
            let t = self.toks[k];
            self.blank(t.start, t.end);
        }
    }

    /// Puts the comma an initializer fragment's expansion would end with.
    pub(super) fn init_fragment(&mut self, close: usize) {
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
    pub(super) fn type_args(&mut self, i: usize, close: usize, name: &str) {
        let listed = self.table.type_args.get(name);
        // Unlisted, only an argument that starts with a type word is respelled.
        if listed.is_none()
            && (!self.is_call_position(i) || self.toks[i + 1].flags & TYPE_INSIDE == 0)
        {
            return;
        }
        let mut args = std::mem::take(&mut self.args);
        self.split_args(i + 1, close, &mut args);
        for (k, &(s, e)) in args.iter().enumerate() {
            if s >= e {
                continue;
            }
            let forced = listed.is_some_and(|l| l.contains(&k));
            if forced || self.looks_like_type(s, e) {
                self.respell_as_ident(self.toks[s].start, self.toks[e - 1].end);
            }
        }
        self.args = args;
    }

    /// Tokens `s..e` form a type name with no declarator: a type keyword first,
    /// then only identifiers and `*`.
    pub(super) fn looks_like_type(&self, s: usize, e: usize) -> bool {
        if !self.is_ident(s) || !self.is_word(s, TYPE_WORD) {
            return false;
        }
        if self.is_word(s, TAG) && !(s + 1 < e && self.is_ident(s + 1)) {
            return false;
        }
        (s..e).all(|k| self.is_ident(k) || self.is_punct(k, b'*'))
    }

    /// Bytes `s..e` become one identifier (`struct foo *` -> `struct_foo__`).
    pub(super) fn respell_as_ident(&mut self, s: usize, e: usize) {
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

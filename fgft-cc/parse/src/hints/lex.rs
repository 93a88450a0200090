//! The lexer of the rewrite: tokens and preprocessor directives of the
//! original text, with byte classes and eight-bytes-at-a-time scans.
//!
//! Invariant: tokens are in order, disjoint and cover every byte that is no
//! blank, comment or directive; offsets are those of the original text.

use super::*;
use fgft_base::lex::skip_block_comment;

/// C keywords (a type-name argument respelled as one identifier must not
/// become one of them).
pub(super) const KEYWORDS: &[&str] = &[
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
pub(super) const TYPE_START: &[&str] = &[
    "struct", "union", "enum", "unsigned", "signed", "char", "short", "int", "long", "float",
    "double", "void", "_Bool", "const", "volatile",
];

/// Callees whose parentheses are not a macro call's argument list.
pub(super) const NOT_CALLS: &[&str] = &[
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
pub(super) const EXPR_KEYWORDS: &[&str] = &["return", "case", "else", "do", "sizeof"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Ident,
    Punct(u8),
    /// Number, string or character literal.
    Lit,
}

/// A preprocessor directive (with its continuation lines) and the index of
/// the first token after it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Directive {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) next_tok: usize,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Tok {
    pub(super) start: usize,
    pub(super) end: usize,
    /// For `(`: how many tokens after it its `)` stands, when that is within
    /// [`MAX_ARG_TOKENS`] and no `;` comes between them; 0 otherwise.
    pub(super) close: u16,
    /// For identifiers, their [`Index`] flags; for `(`, [`TYPE_INSIDE`].
    pub(super) flags: u16,
    pub(super) kind: Kind,
    /// Whether the token is inside braces (the brace depth before it, as a
    /// `u32`, is not 0).
    pub(super) nested: bool,
    /// Whether the innermost open brace before the token is an initializer.
    pub(super) in_init: bool,
}

pub(super) fn is_ident_start(b: u8) -> bool {
    CLASS[b as usize] & C_IDENT_START != 0
}

pub(super) fn is_ident_char(b: u8) -> bool {
    CLASS[b as usize] & C_IDENT != 0
}

// Byte classes of the lexer.
pub(super) const C_IDENT_START: u8 = 1;
pub(super) const C_IDENT: u8 = 2;
/// Upper-case letter, digit or `_`.
pub(super) const C_UPPER: u8 = 4;
/// Blank or newline.
pub(super) const C_SPACE: u8 = 8;
/// Newline, `\\` or `/`: where a directive may end or a comment start.
pub(super) const C_DIRECTIVE_STOP: u8 = 16;
/// Newline, `\\` or a quote: where a literal may end.
pub(super) const C_STRING_STOP: u8 = 32;

pub(super) static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        let mut k = 0;
        if b.is_ascii_alphabetic() || b == b'_' {
            k |= C_IDENT_START | C_IDENT;
        }
        if b.is_ascii_digit() {
            k |= C_IDENT;
        }
        if b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_' {
            k |= C_UPPER;
        }
        if matches!(b, b' ' | b'\t' | b'\r' | b'\x0c' | b'\x0b' | b'\n') {
            k |= C_SPACE;
        }
        if matches!(b, b'\n' | b'\\' | b'/') {
            k |= C_DIRECTIVE_STOP;
        }
        if matches!(b, b'\n' | b'\\' | b'"' | b'\'') {
            k |= C_STRING_STOP;
        }
        t[c] = k;
        c += 1;
    }
    t
};

/// Position of the first `byte` at or after `from` (eight bytes at a time).
pub(super) fn find_byte(hay: &[u8], from: usize, byte: u8) -> Option<usize> {
    let pat = ONES * u64::from(byte);
    let mut i = from;
    while i + 8 <= hay.len() {
        let x = load_u64(&hay[i..]) ^ pat;
        // The lowest flagged byte is the first zero byte of `x` (a borrow
        // only flags bytes above it).
        let zero = x.wrapping_sub(ONES) & !x & HIGH;
        if zero != 0 {
            return Some(i + (zero.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    let rest = hay.get(i..)?;
    rest.iter().position(|&c| c == byte).map(|p| i + p)
}

/// Whether a directive is `#define` or `#undef`.
pub(super) fn is_define(d: &[u8]) -> bool {
    matches!(directive_word(d), b"define" | b"undef")
}

/// The directive word of `d` (`if`, `ifdef`, `else`, `endif`, ...).
pub(super) fn directive_word(d: &[u8]) -> &[u8] {
    let rest = d.get(1..).unwrap_or_default();
    let blanks = rest
        .iter()
        .take_while(|c| **c == b' ' || **c == b'\t')
        .count();
    let body = &rest[blanks..];
    let n = body.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    &body[..n]
}

/// Whether `b` (starting with a digit) is a C integer or floating constant.
pub(super) fn valid_number(b: &[u8]) -> bool {
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
/// parse as C either).  Each token also gets its brace context, a `(` the
/// place of its `)`, and an identifier its [`Index`] flags.
pub(super) fn lex(b: &[u8], index: &Index) -> (Vec<Tok>, Vec<Directive>) {
    let mut lx = Lexer {
        toks: Vec::with_capacity(b.len() / 3),
        braces: Vec::new(),
        parens: Vec::new(),
        semis: 0,
    };
    let mut dirs = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    let n = b.len();
    while i < n {
        let c = b[i];
        let class = CLASS[c as usize];
        if class & C_IDENT_START != 0 {
            let s = i;
            let (end, upper) = ident_end(b, i + 1, class & C_UPPER != 0);
            i = end;
            let upper = if upper { UPPER } else { 0 };
            lx.ident(s, i, index.flags(&b[s..i]) | upper);
            line_start = false;
            continue;
        }
        if class & C_SPACE != 0 {
            // Blanks and newlines; a newline starts a line.
            line_start |= c == b'\n';
            i += 1;
            while let Some(&d) = b.get(i) {
                if CLASS[d as usize] & C_SPACE == 0 {
                    break;
                }
                line_start |= d == b'\n';
                i += 1;
            }
            continue;
        }
        match c {
            b'\\' if i + 1 < n && b[i + 1] == b'\n' => i += 2,
            b'/' if i + 1 < n && b[i + 1] == b'*' => {
                i = skip_block_comment(b, i);
            }
            b'/' if i + 1 < n && b[i + 1] == b'/' => {
                i = line_end(b, i);
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
                        i = line_end(b, i);
                    } else {
                        i += 1;
                        while b
                            .get(i)
                            .is_some_and(|&d| CLASS[d as usize] & C_DIRECTIVE_STOP == 0)
                        {
                            i += 1;
                        }
                    }
                }
                dirs.push(Directive {
                    start,
                    end: i,
                    next_tok: lx.toks.len(),
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
                    while b
                        .get(i)
                        .is_some_and(|&d| CLASS[d as usize] & C_STRING_STOP == 0)
                    {
                        i += 1;
                    }
                }
                i = (i + 1).min(n);
                lx.push(Kind::Lit, s, i, 0);
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
                lx.push(Kind::Lit, s, i, 0);
                line_start = false;
            }
            _ if c.is_ascii() => {
                lx.punct(c, i);
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
    (lx.toks, dirs)
}

/// Token list under construction, with the open braces and parentheses.
pub(super) struct Lexer {
    pub(super) toks: Vec<Tok>,
    /// Whether each open brace starts an initializer list.
    pub(super) braces: Vec<bool>,
    /// Open parentheses: token index, how many `;` came before it, and
    /// whether a type word came after it.
    pub(super) parens: Vec<(usize, usize, bool)>,
    /// Number of `;` so far.
    pub(super) semis: usize,
}

impl Lexer {
    #[inline]
    pub(super) fn ident(&mut self, start: usize, end: usize, flags: u16) {
        if flags & TYPE_WORD != 0 {
            if let Some(open) = self.parens.last_mut() {
                open.2 = true;
            }
        }
        self.push(Kind::Ident, start, end, flags);
    }

    #[inline]
    pub(super) fn punct(&mut self, c: u8, at: usize) {
        let k = self.toks.len();
        // Every token, braces too, gets the brace context before it.
        self.push(Kind::Punct(c), at, at + 1, 0);
        match c {
            b'{' => {
                let in_init = self.braces.last().copied().unwrap_or(false);
                let init = match k.checked_sub(1).map(|p| self.toks[p].kind) {
                    Some(Kind::Punct(b'=')) => true,
                    Some(Kind::Punct(b',' | b'{')) => in_init,
                    _ => false,
                };
                self.braces.push(init);
            }
            b'}' => {
                self.braces.pop();
            }
            b'(' => self.parens.push((k, self.semis, false)),
            b')' => {
                // The innermost open `(` is the one whose depth count this
                // `)` brings back to zero.
                if let Some((open, semis, typed)) = self.parens.pop() {
                    if semis == self.semis && k - open < MAX_ARG_TOKENS {
                        self.toks[open].close = (k - open) as u16;
                    }
                    if typed {
                        self.toks[open].flags |= TYPE_INSIDE;
                        if let Some(outer) = self.parens.last_mut() {
                            outer.2 = true;
                        }
                    }
                }
            }
            b';' => self.semis += 1,
            _ => {}
        }
    }

    /// Appends a token with the current brace context.
    #[inline]
    pub(super) fn push(&mut self, kind: Kind, start: usize, end: usize, flags: u16) {
        let nested = self.braces.len() as u32 != 0;
        let in_init = self.braces.last().copied().unwrap_or(false);
        self.toks.push(Tok {
            start,
            end,
            close: 0,
            flags,
            kind,
            nested,
            in_init,
        });
    }
}

/// SWAR constants: every byte 0x01, 0x7f, 0x80.
pub(super) const ONES: u64 = 0x0101_0101_0101_0101;
pub(super) const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
pub(super) const HIGH: u64 = 0x8080_8080_8080_8080;

/// High bit of each byte of `x7` (bytes below 0x80) that lies in `lo..=hi`.
#[inline]
pub(super) fn bytes_in(x7: u64, lo: u8, hi: u8) -> u64 {
    // Neither sum carries out of a byte: x7 <= 0x7f.
    let at_least_lo = x7 + ONES * u64::from(0x80 - lo);
    let above_hi = x7 + ONES * u64::from(0x7f - hi);
    at_least_lo & !above_hi & HIGH
}

/// High bit of each byte of `w` that is an identifier character, and of each
/// that is an upper-case letter, digit or `_`.
#[inline]
pub(super) fn ident_bytes(w: u64) -> (u64, u64) {
    let ascii = !w & HIGH;
    let x7 = w & LOW7;
    let letter = bytes_in(x7 | (ONES * 0x20), b'a', b'z');
    let digit_or_under = bytes_in(x7, b'0', b'9') | bytes_in(x7, b'_', b'_');
    let upper = bytes_in(x7, b'A', b'Z');
    (
        (letter | digit_or_under) & ascii,
        (upper | digit_or_under) & ascii,
    )
}

/// End of the identifier whose rest starts at `i`, eight bytes at a time
/// (one hard-to-predict branch per identifier rather than per byte), and
/// whether it has only upper-case letters, digits and `_` (`upper`: whether
/// the bytes before `i` have).
#[inline]
pub(super) fn ident_end(b: &[u8], mut i: usize, mut upper: bool) -> (usize, bool) {
    while i + 8 <= b.len() {
        let (ident, up) = ident_bytes(load_u64(&b[i..]));
        let other = !ident & HIGH;
        if other == 0 {
            upper &= up == HIGH;
            i += 8;
            continue;
        }
        let len = (other.trailing_zeros() / 8) as usize;
        let mask = HIGH & ((1u64 << (len * 8)) - 1);
        upper &= up & mask == mask;
        return (i + len, upper);
    }
    let mut all = if upper { C_UPPER } else { 0 };
    while let Some(&d) = b.get(i) {
        let k = CLASS[d as usize];
        if k & C_IDENT == 0 {
            break;
        }
        all &= k;
        i += 1;
    }
    (i, all != 0)
}

/// End of the line holding byte `i` (the position of its newline).
pub(super) fn line_end(b: &[u8], i: usize) -> usize {
    find_byte(b, i, b'\n').unwrap_or(b.len())
}

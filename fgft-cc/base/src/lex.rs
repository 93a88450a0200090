//! Tiny C lexing helpers over bytes.
//!
//! Job: skip a comment or a literal that starts at a given offset, and list
//! the identifier tokens of a C text.
//!
//! Invariants: offsets are byte offsets into the slice given; a comment that
//! is not closed runs to the end of the text (the length of the slice is
//! returned, never an offset past it); a `//` comment ends at its newline
//! unless the newline is escaped.

/// Index just past the block comment opening (`/*`) at `i`.
pub fn skip_block_comment(b: &[u8], i: usize) -> usize {
    let mut from = i + 2;
    while let Some(p) = b.get(from..).and_then(|r| memchr::memchr(b'*', r)) {
        let star = from + p;
        if b.get(star + 1) == Some(&b'/') {
            return star + 2;
        }
        from = star + 1;
    }
    b.len()
}

/// Index of the newline ending the line comment (`//`) opening at `i` (an
/// escaped newline continues it).
pub fn skip_line_comment(b: &[u8], i: usize) -> usize {
    let mut j = i + 2;
    while j < b.len() {
        if b[j] == b'\n' && b[j - 1] != b'\\' {
            return j;
        }
        j += 1;
    }
    b.len()
}

/// Index just past the string or character literal opening at `i` (its
/// quote, `"` or `'`); a backslash escapes the next byte.
pub fn skip_literal(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() && b[j] != q {
        j += if b[j] == b'\\' { 2 } else { 1 };
    }
    (j + 1).min(b.len())
}

/// The identifier tokens of C text `s` outside string and character
/// literals, as byte ranges in order (the letters of a number such as
/// `0x1f` or `10UL` are not identifiers).
pub fn ident_tokens(s: &str) -> Vec<std::ops::Range<usize>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\'' {
            i = skip_literal(b, i);
        } else if crate::ident::is_start(c) {
            let st = i;
            i = crate::ident::word_end(b, i);
            out.push(st..i);
        } else if c.is_ascii_digit() {
            i = crate::ident::word_end(b, i);
        } else {
            i += 1;
        }
    }
    out
}

/// Whether `name` stands in C text `s` as an identifier token.
pub fn has_token(s: &str, name: &str) -> bool {
    ident_tokens(s).into_iter().any(|r| &s[r] == name)
}

/// The byte after the `)` that closes the `(` at `open` (nesting counted;
/// literals are not looked into). None when it never closes.
pub fn close_paren(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (k, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// `s` cut at every `sep` outside parentheses and brackets (a parameter
/// list, a declarator list).
pub fn split_top(s: &str, sep: u8) -> Vec<&str> {
    let mut depth = 0i32;
    let mut start = 0;
    let mut parts = Vec::new();
    for (i, &c) in s.as_bytes().iter().enumerate() {
        match c {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            c if c == sep && depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

#[cfg(test)]
mod tests {
    #[test]
    fn parens_and_top_level_cuts() {
        assert_eq!(super::close_paren(b"f(a, (b)) + c", 1), Some(9));
        assert_eq!(super::close_paren(b"(a", 0), None);
        assert_eq!(
            super::split_top("int a, int (*f)(int, int), u8 b[2]", b','),
            ["int a", " int (*f)(int, int)", " u8 b[2]"]
        );
    }

    use super::*;

    #[test]
    fn literals_and_tokens() {
        assert_eq!(skip_literal(br#""a\"b" x"#, 0), 6);
        assert_eq!(skip_literal(b"'x' y", 0), 3);
        assert_eq!(skip_literal(b"\"open", 0), 5);
        let s = "f(a, \"b c\", 'd', 0x1fUL) + e_2";
        let toks: Vec<&str> = ident_tokens(s).into_iter().map(|r| &s[r]).collect();
        assert_eq!(toks, ["f", "a", "e_2"]);
        assert!(has_token(s, "e_2") && !has_token(s, "b") && !has_token(s, "e"));
    }

    #[test]
    fn block_comments() {
        assert_eq!(skip_block_comment(b"/* a */x", 0), 7);
        assert_eq!(skip_block_comment(b"x/**/y", 1), 5);
        assert_eq!(skip_block_comment(b"/*/ x", 0), 5);
        assert_eq!(skip_block_comment(b"/* ** */", 0), 8);
        assert_eq!(skip_block_comment(b"/* open", 0), 7);
        assert_eq!(skip_block_comment(b"/*", 0), 2);
    }

    #[test]
    fn line_comments() {
        assert_eq!(skip_line_comment(b"// a\nb", 0), 4);
        assert_eq!(skip_line_comment(b"// a\\\nb\nc", 0), 7);
        assert_eq!(skip_line_comment(b"// end", 0), 6);
    }
}

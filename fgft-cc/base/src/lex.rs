//! Tiny C lexing helpers over bytes.
//!
//! Job: skip a comment that starts at a given offset.
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

#[cfg(test)]
mod tests {
    use super::*;

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

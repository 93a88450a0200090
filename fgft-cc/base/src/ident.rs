//! C identifier bytes and words.
//!
//! Job: answer "may this byte start / continue an identifier", "is this
//! string one", "where does this word stand as a whole word", and spell an
//! arbitrary name as an identifier.
//!
//! Invariants: an identifier is `[A-Za-z_][A-Za-z0-9_]*` (ASCII only), except
//! for [`is_byte_ext`], which also admits `$` and any non-ASCII byte (GNU C
//! and UTF-8 identifiers, for scanners that must not split such a word);
//! nothing here allocates except [`c_ident_from`].

/// Whether `c` may start an identifier.
pub fn is_start(c: u8) -> bool {
    c == b'_' || c.is_ascii_alphabetic()
}

/// Whether `c` may stand inside an identifier.
pub fn is_byte(c: u8) -> bool {
    c == b'_' || c.is_ascii_alphanumeric()
}

/// [`is_byte`], plus `$` and every non-ASCII byte.
pub fn is_byte_ext(c: u8) -> bool {
    is_byte(c) || c == b'$' || c >= 0x80
}

/// [`is_byte`] for a `char` (no non-ASCII character is one).
pub fn is_char(c: char) -> bool {
    c.is_ascii() && is_byte(c as u8)
}

/// Whether `s` is a C identifier.
pub fn is_ident(s: &str) -> bool {
    s.as_bytes().first().is_some_and(|&c| is_start(c)) && is_word(s)
}

/// Whether `s` is non-empty and made of identifier bytes only (a leading
/// digit allowed: a pp-number is such a word too).
pub fn is_word(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_byte)
}

/// The first offset where `w` stands in `s` as a whole word (no identifier
/// byte right before or after it).
pub fn find_word(s: &str, w: &str) -> Option<usize> {
    if w.is_empty() {
        return None;
    }
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(p) = s[from..].find(w) {
        let at = from + p;
        let before = at.checked_sub(1).map(|i| b[i]);
        let after = b.get(at + w.len()).copied();
        if !before.is_some_and(is_byte) && !after.is_some_and(is_byte) {
            return Some(at);
        }
        from = at + w.len();
    }
    None
}

/// Whether `w` stands in `s` as a whole word.
pub fn has_word(s: &str, w: &str) -> bool {
    find_word(s, w).is_some()
}

/// The identifier bytes of `s` from `i` on: the end of the word at `i`.
pub fn word_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_byte(b[i]) {
        i += 1;
    }
    i
}

/// `name` with every character that may not stand in an identifier (`_`
/// aside) replaced by `_`.
pub fn underscored(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// `name` spelled as a C identifier: [`underscored`], and a leading digit (or
/// an empty name) gets an `a` in front.
pub fn c_ident_from(name: &str) -> String {
    let mut s = underscored(name);
    if s.is_empty() || s.as_bytes()[0].is_ascii_digit() {
        s.insert(0, 'a');
    }
    s
}

/// The edit distance (insertions, deletions, substitutions of characters)
/// between `a` and `b`, for "did you mean" notes.
pub fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The closest of `candidates` to `name`, when close enough to suggest (a
/// third of the name's length, at least 2; a prefix of three or more
/// characters counts as one typo); ties go to the smallest candidate.
pub fn suggest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    candidates
        .map(|c| {
            let d = distance(name, c);
            let d = if c.starts_with(name) && name.len() >= 3 {
                d.min(1)
            } else {
                d
            };
            (d, c)
        })
        .filter(|(d, c)| *d <= 2.max(name.len() / 3) && *d < c.len())
        .min()
        .map(|(_, c)| c.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_and_suggestions() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("same", "same"), 0);
        let names = ["execution", "call", "access", "args"];
        assert_eq!(suggest("acess", names.into_iter()), Some("access".into()));
        assert_eq!(suggest("exec", names.into_iter()), Some("execution".into()));
        assert_eq!(suggest("zzzzzz", names.into_iter()), None);
    }

    #[test]
    fn bytes_and_identifiers() {
        assert!(is_start(b'_') && is_start(b'a') && !is_start(b'1'));
        assert!(is_byte(b'1') && !is_byte(b'$') && is_byte_ext(b'$'));
        assert!(is_byte_ext(0xc3) && !is_byte(0xc3));
        assert!(is_ident("_a1") && !is_ident("1a") && !is_ident("") && !is_ident("a-b"));
        assert!(is_word("1a") && !is_word(""));
        assert!(is_char('_') && is_char('9') && !is_char('-') && !is_char('é'));
    }

    #[test]
    fn whole_words_only() {
        assert_eq!(find_word("foo_bar foo", "foo"), Some(8));
        assert_eq!(find_word("xfoo foox", "foo"), None);
        assert_eq!(find_word("(foo)", "foo"), Some(1));
        assert_eq!(find_word("foo", ""), None);
        assert!(has_word("a+b", "b") && !has_word("ab", "b"));
        assert_eq!(word_end(b"ab_1+c", 0), 4);
    }

    #[test]
    fn spelled_as_identifier() {
        assert_eq!(c_ident_from("my-drv.c"), "my_drv_c");
        assert_eq!(c_ident_from("8139too"), "a8139too");
        assert_eq!(c_ident_from(""), "a");
        assert_eq!(underscored("a-b.c_d é"), "a_b_c_d__");
    }
}

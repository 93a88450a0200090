//! How deep a Rust text nests, found before a recursive parser (syn) sees it.
//!
//! Job: refuse, with the place, a Rust text whose syntax tree would be deep
//! enough to overflow the stack of syn's recursive descent (or of the
//! recursive visits and drops after it), and run the parse on a thread
//! whose stack holds any text that passes.
//!
//! The scan is one pass over the bytes: string, character and byte
//! literals (raw ones too), lifetimes and comments (nested block comments
//! too) are skipped. It counts two things:
//! - bracket depth (`(`, `[`, `{`), limited to [`MAX_BRACKETS`];
//! - the *nesting depth* a tree can reach: every open bracket, plus, within
//!   each bracket level, the tokens that can nest a node in the one before
//!   it (operators, prefix `&`/`*`/`!`/`-`, `<` of generics, `.`, `?`, a
//!   bracket after an expression as in `f()()`, and `if`, `as`, `return`,
//!   `break`, `let`, `move`, `dyn`, `impl`, ...), counted from the last
//!   point where the tree is flat again: `;`, a `,` or `=>` (outside
//!   unclosed `<`), or a `}` not followed by `else`, an operator or `.`.
//!   Limited to [`MAX_NESTING`].
//!
//! Invariants: the scan never recurses and reads each byte once; a text
//! that passes nests at most [`MAX_NESTING`] levels in any tree syn builds
//! from it, and [`on_deep_stack`] gives the parse a stack sized for that
//! many levels of syn's largest frames (measured in a debug build: about
//! 52 KiB a level for nested generics).

/// Deepest bracket nesting accepted.
pub const MAX_BRACKETS: usize = 256;

/// Deepest tree nesting accepted (brackets and chained tokens together).
pub const MAX_NESTING: usize = 1024;

/// Stack of the thread [`on_deep_stack`] runs on: [`MAX_NESTING`] levels
/// of syn's largest frames, twice over.
pub const STACK_BYTES: usize = MAX_NESTING * 128 * 1024;

/// Where and why a text nests too deep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooDeep {
    /// Byte offset of the token that goes too deep.
    pub offset: usize,
    /// 1-based line and column (in characters) of it.
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// One open bracket level.
struct Level {
    /// Nesting depth where the level starts.
    base: usize,
    /// Chained tokens since the tree was last flat at this level.
    chain: usize,
    /// Chain values at each `<` not yet closed (a `,` goes back to the
    /// last one: `A<B, C<D, ...>>` nests through its commas).
    angles: Vec<usize>,
    /// The last token of this level closed a `{}`.
    after_brace: bool,
}

impl Level {
    fn new(base: usize) -> Level {
        Level {
            base,
            chain: 0,
            angles: Vec::new(),
            after_brace: false,
        }
    }

    fn flat(&mut self) {
        self.chain = 0;
        self.angles.clear();
    }

    fn depth(&self) -> usize {
        self.base + self.chain
    }
}

/// Keywords that nest the tree (`if a {} else if b {}`, `x as u8 as u16`,
/// `return return x`, `|| move || ...`).
const NESTING_WORDS: &[&[u8]] = &[
    b"if", b"as", b"return", b"break", b"yield", b"let", b"move", b"box", b"async", b"dyn",
    b"impl", b"await", b"while", b"for", b"match", b"loop", b"unsafe", b"where",
];

/// Checks `text` against [`MAX_BRACKETS`] and [`MAX_NESTING`].
pub fn check(text: &str) -> Result<(), TooDeep> {
    let b = text.as_bytes();
    let mut levels = vec![Level::new(0)];
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        // Comments, literals and lifetimes: skipped whole.
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            i = memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |p| i + p);
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i = skip_block_comment(b, i);
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'"' {
            i = skip_string(b, i + 1);
            chain_token(&mut levels, false);
            continue;
        }
        if c == b'\'' {
            i = skip_quote(b, i);
            chain_token(&mut levels, false);
            continue;
        }
        if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            let end = ident_end(b, i);
            let word = &b[i..end];
            if let Some(j) = literal_after_prefix(b, word, end) {
                i = j;
                chain_token(&mut levels, false);
                continue;
            }
            i = end;
            let nests = NESTING_WORDS.contains(&word);
            let cont = word == b"else" || word == b"as";
            token(&mut levels, nests, cont);
            check_level(text, &levels, start)?;
            continue;
        }
        i += 1;
        match c {
            b'(' | b'[' | b'{' => {
                token(&mut levels, true, true);
                let top = levels.last().map_or(0, Level::depth);
                levels.push(Level::new(top + 1));
                if levels.len() - 1 > MAX_BRACKETS {
                    return Err(too_deep(
                        text,
                        start,
                        format!(
                            "brackets nest deeper than {MAX_BRACKETS} levels here: \
                             refusing to parse this file (syn's recursive parse would \
                             overflow the stack)"
                        ),
                    ));
                }
                check_level(text, &levels, start)?;
            }
            b')' | b']' | b'}' => {
                if levels.len() > 1 {
                    levels.pop();
                }
                if let Some(l) = levels.last_mut() {
                    l.after_brace = c == b'}';
                }
            }
            b';' => flat_token(&mut levels),
            b',' => {
                if let Some(l) = levels.last_mut() {
                    l.chain = l.angles.last().copied().unwrap_or(0);
                    l.after_brace = false;
                }
            }
            b'=' if b.get(i) == Some(&b'>') => {
                i += 1;
                flat_token(&mut levels);
            }
            b'-' if b.get(i) == Some(&b'>') => {
                i += 1;
                token(&mut levels, false, true);
            }
            b':' if b.get(i) == Some(&b':') => {
                i += 1;
                token(&mut levels, false, true);
            }
            b'#' | b'$' | b'@' | b'~' | b':' => token(&mut levels, false, true),
            b'<' => {
                token(&mut levels, true, true);
                if let Some(l) = levels.last_mut() {
                    let ch = l.chain;
                    l.angles.push(ch);
                }
                check_level(text, &levels, start)?;
            }
            b'|' => {
                // Closure parameters (`|a, b| |c, d| x`) nest through
                // their commas, as generics do.
                token(&mut levels, true, true);
                if let Some(l) = levels.last_mut() {
                    let ch = l.chain;
                    l.angles.push(ch);
                }
                check_level(text, &levels, start)?;
            }
            b'>' => {
                token(&mut levels, false, true);
                if let Some(l) = levels.last_mut() {
                    l.angles.pop();
                }
            }
            _ => {
                // Operators and prefixes: each may nest one node.
                token(&mut levels, true, true);
                check_level(text, &levels, start)?;
            }
        }
    }
    Ok(())
}

/// A token at the current level: `nests` adds one to the chain; a token
/// that does not continue an expression (`cont` false) after a `}` means
/// the tree was flat there (`fn a() {} fn b() {}`).
fn token(levels: &mut [Level], nests: bool, cont: bool) {
    if let Some(l) = levels.last_mut() {
        if l.after_brace && !cont {
            l.flat();
        }
        l.after_brace = false;
        if nests {
            l.chain += 1;
        }
    }
}

/// A literal or other operand.
fn chain_token(levels: &mut [Level], nests: bool) {
    token(levels, nests, false);
}

fn flat_token(levels: &mut [Level]) {
    if let Some(l) = levels.last_mut() {
        l.flat();
        l.after_brace = false;
    }
}

fn check_level(text: &str, levels: &[Level], at: usize) -> Result<(), TooDeep> {
    let d = levels.last().map_or(0, Level::depth);
    if d > MAX_NESTING {
        return Err(too_deep(
            text,
            at,
            format!(
                "the syntax nests deeper than {MAX_NESTING} levels here (operators, \
                 prefixes, generics or brackets chained without a `;` or `,`): refusing to \
                 parse this file (syn's recursive parse would overflow the stack)"
            ),
        ));
    }
    Ok(())
}

fn too_deep(text: &str, offset: usize, message: String) -> TooDeep {
    let before = &text[..offset];
    let line = before.bytes().filter(|&c| c == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |p| p + 1);
    let col = text[line_start..offset].chars().count() + 1;
    TooDeep {
        offset,
        line,
        col,
        message,
    }
}

fn ident_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
        i += 1;
    }
    i
}

/// Past a `/* */` comment at `i` (Rust's nest).
fn skip_block_comment(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

/// Past the closing `"` of a string whose body starts at `i`.
fn skip_string(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// Past a character literal or a lifetime starting with the `'` at `i`.
fn skip_quote(b: &[u8], i: usize) -> usize {
    match b.get(i + 1) {
        Some(b'\\') => {
            // An escape: up to the closing quote.
            let mut j = i + 3;
            while j < b.len() && b[j] != b'\'' && b[j] != b'\n' {
                j += 1;
            }
            (j + 1).min(b.len())
        }
        Some(_) => {
            // One character (maybe several bytes), then a quote: a char;
            // otherwise a lifetime or label.
            let mut j = i + 2;
            while j < b.len() && (b[j] & 0xC0) == 0x80 {
                j += 1;
            }
            if b.get(j) == Some(&b'\'') {
                j + 1
            } else {
                ident_end(b, i + 1).max(i + 1)
            }
        }
        None => b.len(),
    }
}

/// Past a literal that starts with the prefix `word` ending at `end`:
/// `b"..."`, `c"..."`, `b'x'`, raw strings `r"..."`, `r#"..."#`, `br`/`cr`.
fn literal_after_prefix(b: &[u8], word: &[u8], end: usize) -> Option<usize> {
    match (word, b.get(end)) {
        (b"b" | b"c", Some(b'"')) => Some(skip_string(b, end + 1)),
        (b"b", Some(b'\'')) => Some(skip_quote(b, end)),
        (b"r" | b"br" | b"cr", Some(b'"' | b'#')) => {
            let mut j = end;
            while b.get(j) == Some(&b'#') {
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                return None; // a raw identifier (`r#type`)
            }
            let hashes = j - end;
            let mut k = j + 1;
            while k < b.len() {
                if b[k] == b'"'
                    && b.len() >= k + 1 + hashes
                    && b[k + 1..k + 1 + hashes].iter().all(|&h| h == b'#')
                {
                    return Some(k + 1 + hashes);
                }
                k += 1;
            }
            Some(b.len())
        }
        _ => None,
    }
}

/// Runs `f` on a thread with a [`STACK_BYTES`] stack (syn's parse, the
/// visits after it and the tree's drop all recurse), and waits for it.
/// When the thread cannot be made, `f` runs here.
pub fn on_deep_stack<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let mut f = Some(f);
    let r = std::thread::scope(|s| {
        let job = &mut f;
        match std::thread::Builder::new()
            .name("fgft-rust-parse".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(s, move || job.take().map(|f| f()))
        {
            Ok(h) => match h.join() {
                Ok(r) => r,
                Err(p) => std::panic::resume_unwind(p),
            },
            Err(_) => None,
        }
    });
    match r {
        Some(r) => r,
        None => (f.take().expect("the job runs once"))(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(open: &str, close: &str, n: usize) -> String {
        format!("fn f() {}{}\n", open.repeat(n), close.repeat(n))
    }

    #[test]
    fn ordinary_code_passes() {
        let src = r##"
            //! Doc { ( [ not brackets
            /* nested /* comment { */ still { */
            use kernel::{prelude::*, c_str};
            const S: &str = "}}}}{{{{ \" ((";
            const R: &str = r#"{{{{ " (("#;
            const C: char = '{'; const Q: char = '\''; const U: char = 'é';
            const B: &[u8] = b"{{"; const BC: u8 = b'{';
            struct A<'a, T: Iterator<Item = Vec<Option<&'a u8>>>>(T, &'a ());
            fn r#type<'a>(x: &'a u8) -> &'a u8 { 'outer: loop { break 'outer; } x }
            fn g() { let v = 1 + 2 * 3 - 4 / 5 | 6 & 7 ^ 8 << 1 >> 1; if a { } else if b { } else { } }
        "##;
        assert_eq!(check(src), Ok(()));
        // Many items and statements: each is flat again.
        let many = "fn a() { let x = f(a, b)?.c[1] + 2; }\n".repeat(20_000);
        assert_eq!(check(&many), Ok(()));
        let arms: String = (0..5000)
            .map(|i| format!("{i} => {{ x + {i} }}\n"))
            .collect();
        assert_eq!(check(&format!("fn f() {{ match x {{ {arms} }} }}")), Ok(()));
        assert_eq!(check(&nested("{", "}", MAX_BRACKETS - 1)), Ok(()));
    }

    #[test]
    fn deep_brackets_are_located() {
        let src = nested("{", "}", 5000);
        let e = check(&src).unwrap_err();
        assert_eq!((e.line, e.col), (1, 8 + MAX_BRACKETS));
        assert_eq!(src.as_bytes()[e.offset], b'{');
        assert!(e.message.contains("256"), "{e}");
        let e = check(&format!(
            "\nfn f() {{ let x = {}1{}; }}",
            "(".repeat(300),
            ")".repeat(300)
        ))
        .unwrap_err();
        assert_eq!(e.line, 2);
        // Brackets inside literals and comments do not count.
        let s = format!(
            "const S: &str = \"{}\"; // {}\n",
            "{".repeat(5000),
            "(".repeat(5000)
        );
        assert_eq!(check(&s), Ok(()));
    }

    #[test]
    fn deep_chains_are_refused() {
        let cases = [
            format!("fn f() {{ let x = {}x; }}", "!".repeat(5000)),
            format!("fn f() {{ let x = {}; }}", vec!["1"; 5000].join("+")),
            format!("type T = {}u8;", "& ".repeat(5000)),
            format!("type T = {}u8{};", "A<".repeat(2000), ">".repeat(2000)),
            format!("type T = {}u8{};", "A<X, ".repeat(2000), ">".repeat(2000)),
            format!("fn f() {{ x{}; }}", ".a()".repeat(5000)),
            format!("fn f() {{ x{}; }}", "()".repeat(5000)),
            format!("fn f() {{ if a {{}} {}}}", "else if a {} ".repeat(5000)),
            format!("fn f() {{ let x = {}1; }}", "|x| ".repeat(5000)),
            format!("fn f() {{ let x = {}1; }}", "|x, y| ".repeat(5000)),
            format!("fn f() {{ {}1; }}", "return ".repeat(5000)),
            format!("fn f() {{ x{}; }}", "?".repeat(5000)),
        ];
        for c in &cases {
            let e = check(c)
                .err()
                .unwrap_or_else(|| panic!("passed: {}", &c[..60]));
            assert!(e.message.contains("nests deeper"), "{e}");
        }
    }

    #[test]
    fn the_deep_stack_runs_the_job() {
        assert_eq!(on_deep_stack(|| 6 * 7), 42);
    }
}

//! fgft-parse: the front end.
//!
//! Invariant: the tree is always built over a *length-preserving* rewrite of the
//! original text (macro hints blank or respell bytes without moving any), so every
//! byte range in the tree is a byte range in the original file.
//!
//! - [`parse_text`] / [`parse_file`]: tree-sitter-c with the default macro hints
//!   (built-in table plus `FGFT_TABLES` extensions) and the default parse budget;
//!   [`parse_text_with`] / [`parse_file_with`] take explicit [`Options`].
//! - [`hints`]: the macro-hint table and the rewrite.
//! - [`health`]: which top-level functions hold ERROR or MISSING nodes.
//! - [`types`]: struct/union/typedef/prototype facts from the Kbuild-preprocessed
//!   unit, read with lang-c.
//! - [`tables`]: where data tables and their user extensions come from.

use std::ops::{ControlFlow, Range};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

pub mod cond;
pub mod health;
pub mod hints;
pub mod modinit;
pub mod tables;
pub mod types;
pub mod walk;

pub use hints::HintTable;

/// Errors of the front end.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("tree-sitter could not parse {path}")]
    TreeSitter { path: PathBuf },
    /// The input is not C text (binary data).
    #[error("{path}: not a C source file: {reason}")]
    NotC {
        path: PathBuf,
        reason: String,
        /// Byte offset of the offending data.
        offset: usize,
    },
    /// The parse ran out of its budget (time or size); the file is skipped.
    #[error("{path}: parse budget exceeded ({what}) at byte {offset}")]
    Budget {
        path: PathBuf,
        text: String,
        offset: usize,
        what: String,
    },
    /// A data table (built-in or user extension) is malformed.
    #[error("{path}: bad table: {message}")]
    Table {
        path: PathBuf,
        text: String,
        range: Option<Range<usize>>,
        message: String,
    },
    /// Preprocessing a unit with Kbuild failed.
    #[error("{path}: {message}")]
    Kbuild { path: PathBuf, message: String },
}

/// Per-file parse budget: a file larger than `max_bytes` or whose parse takes
/// longer than `time` is given up with [`ParseError::Budget`], never a hang.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub time: Duration,
    pub max_bytes: usize,
}

/// Environment variable overriding the default time budget, in milliseconds.
pub const BUDGET_ENV: &str = "FGFT_PARSE_BUDGET_MS";

impl Default for Budget {
    fn default() -> Self {
        let ms = std::env::var(BUDGET_ENV)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(10_000);
        Budget {
            time: Duration::from_millis(ms),
            max_bytes: 64 << 20,
        }
    }
}

/// How to parse.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Macro hints; `None` parses the raw text.
    pub hints: Option<Arc<HintTable>>,
    pub budget: Budget,
}

impl Options {
    /// Default hints (built-in plus `FGFT_TABLES`) and default budget.
    pub fn with_default_hints() -> Result<Options, ParseError> {
        Ok(Options {
            hints: Some(default_hints()?),
            budget: Budget::default(),
        })
    }

    /// Raw tree-sitter-c, no hints.
    pub fn raw() -> Options {
        Options::default()
    }
}

/// The built-in hint table extended by `FGFT_TABLES`, loaded once.
pub fn default_hints() -> Result<Arc<HintTable>, ParseError> {
    static DEFAULT: OnceLock<Result<Arc<HintTable>, String>> = OnceLock::new();
    let r = DEFAULT.get_or_init(|| {
        HintTable::load(&tables::TableDirs::resolve(&[]))
            .map(Arc::new)
            .map_err(|e| e.to_string())
    });
    match r {
        Ok(t) => Ok(t.clone()),
        // Reload to return the full, located error (cheap: the error path only).
        Err(_) => HintTable::load(&tables::TableDirs::resolve(&[])).map(Arc::new),
    }
}

/// One parsed C file.
pub struct ParsedFile {
    pub path: PathBuf,
    /// The original text, byte for byte (invalid UTF-8 bytes, if any, are
    /// replaced one for one by `?`; see `non_utf8`).
    pub text: String,
    pub tree: tree_sitter::Tree,
    /// The text tree-sitter saw: `text` after the macro-hint rewrite (same
    /// length, same newlines).
    pub hinted: String,
    /// Whether the file had bytes that are not UTF-8.
    pub non_utf8: bool,
    /// Byte offset of each line's start, made on the first [`line_of`]
    /// (`text` does not change after the parse).
    ///
    /// [`line_of`]: ParsedFile::line_of
    line_starts: std::sync::OnceLock<fgft_base::LineIndex>,
}

impl ParsedFile {
    /// A parse of UTF-8 `text` (the file at `path`), `hinted` its rewrite.
    fn of_text(path: &Path, text: String, tree: tree_sitter::Tree, hinted: String) -> ParsedFile {
        ParsedFile {
            path: path.to_path_buf(),
            text,
            tree,
            hinted,
            non_utf8: false,
            line_starts: std::sync::OnceLock::new(),
        }
    }

    /// Text of a node, taken from the original file.
    pub fn node_text(&self, node: tree_sitter::Node<'_>) -> &str {
        self.text.get(node.byte_range()).unwrap_or("")
    }

    /// 1-based line of a byte offset.
    /// A binary search of the line starts: linear work over a whole file
    /// however many places ask.
    pub fn line_of(&self, byte: usize) -> usize {
        self.line_starts
            .get_or_init(|| fgft_base::LineIndex::new(&self.text))
            .line(byte)
    }

    /// Top-level function health of this file.
    pub fn health(&self) -> health::Health {
        health::of(self)
    }
}

/// Parses `text` as C with the default hints and budget.
pub fn parse_text(path: &Path, text: String) -> Result<ParsedFile, ParseError> {
    parse_text_with(path, text, &Options::with_default_hints()?)
}

/// Reads and parses one file with the default hints and budget.
pub fn parse_file(path: &Path) -> Result<ParsedFile, ParseError> {
    parse_file_with(path, &Options::with_default_hints()?)
}

/// Reads and parses one file.
pub fn parse_file_with(path: &Path, opts: &Options) -> Result<ParsedFile, ParseError> {
    let bytes = std::fs::read(path).map_err(|source| ParseError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let (text, non_utf8) = decode(path, bytes)?;
    let mut pf = parse_text_with(path, text, opts)?;
    pf.non_utf8 = non_utf8;
    Ok(pf)
}

/// Turns file bytes into text of the same length: NUL bytes mean binary (not
/// C); invalid UTF-8 bytes become `?` one for one.
pub fn decode(path: &Path, bytes: Vec<u8>) -> Result<(String, bool), ParseError> {
    if let Some(off) = bytes.iter().position(|&b| b == 0) {
        return Err(ParseError::NotC {
            path: path.to_path_buf(),
            reason: "it holds NUL bytes (binary data)".into(),
            offset: off,
        });
    }
    Ok(fgft_base::text_same_len(bytes))
}

/// Parses `text` as C with explicit options.
pub fn parse_text_with(
    path: &Path,
    text: String,
    opts: &Options,
) -> Result<ParsedFile, ParseError> {
    if text.len() > opts.budget.max_bytes {
        return Err(ParseError::Budget {
            path: path.to_path_buf(),
            offset: 0,
            what: format!(
                "file is {} bytes, the budget is {} bytes",
                text.len(),
                opts.budget.max_bytes
            ),
            text,
        });
    }
    let hinted = directive_comments_blanked(match &opts.hints {
        Some(h) => h.rewrite(&text),
        None => text.clone(),
    });
    let deadline = Instant::now() + opts.budget.time;
    let parsed = ts_parse(&hinted, deadline, opts.budget.time);
    let (tree, hinted) = match parsed {
        Ok(tree) if opts.hints.is_some() => cond_fallback(tree, hinted, deadline, opts.budget.time),
        Ok(tree) => Ok((tree, hinted)),
        Err(e) => Err(e),
    }
    .map_err(|e| e.into_error(path, &text))?;
    if let Some(offset) = too_deep(&tree, MAX_DEPTH) {
        return Err(ParseError::Budget {
            path: path.to_path_buf(),
            offset,
            what: format!(
                "the syntax nests deeper than {MAX_DEPTH} levels here (braces, parentheses, \
                 `if`s or a chain of operators); fgft reads code up to that depth"
            ),
            text,
        });
    }
    Ok(ParsedFile::of_text(path, text, tree, hinted))
}

/// How deep a syntax tree may nest.  Every walker of fgft's that recurses
/// over the tree (facts, split, inject, aspect) is bounded by it: a deeper
/// file is refused at the node that goes too deep, never walked into a
/// stack overflow.  Real kernel code stays far below (its deepest drivers
/// reach about 60).
pub const MAX_DEPTH: usize = 1000;

/// The start of the first node deeper than `limit`, found without
/// recursion.
pub fn too_deep(tree: &tree_sitter::Tree, limit: usize) -> Option<usize> {
    let mut found = None;
    walk::preorder(tree.root_node(), |n, depth| {
        if found.is_none() && depth as usize > limit {
            found = Some(n.start_byte());
        }
        found.is_none()
    });
    found
}

/// `text` with each one-line block comment inside a preprocessor directive
/// turned into blanks (same length): tree-sitter-c ends a `#define` at a
/// comment that a continued line follows (ixgb's `#define DESC_NEEDED
/// TXD_USE_COUNT(...) /* skb->date */ + \`), and parses what is left of it
/// as code.
pub fn directive_comments_blanked(text: String) -> String {
    let mut b = text.into_bytes();
    let mut i = 0;
    let mut line_start = true;
    let mut in_directive = false;
    while i < b.len() {
        let c = b[i];
        if line_start {
            line_start = false;
            let mut j = i;
            while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                j += 1;
            }
            if !in_directive {
                in_directive = b.get(j) == Some(&b'#');
            }
        }
        match c {
            b'\n' => {
                // A directive goes on past a line that ends in a backslash.
                let cont = i > 0 && b[i - 1] == b'\\';
                in_directive = in_directive && cont;
                line_start = true;
                i += 1;
            }
            b'"' | b'\'' => i = fgft_base::lex::skip_literal(&b, i),
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = fgft_base::lex::skip_block_comment(&b, i);
                let one_line = !b[i..end].contains(&b'\n');
                if in_directive && one_line {
                    for x in &mut b[i..end] {
                        *x = b' ';
                    }
                }
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => i = fgft_base::lex::skip_line_comment(&b, i),
            _ => i += 1,
        }
    }
    String::from_utf8(b).unwrap_or_default()
}

/// Parses only `ranges` of a file whose text and hint rewrite (`hinted`,
/// same length) are in hand, each range to the end of its last line (so a
/// directive keeps its newline).  Node positions are those of the whole
/// file.  There is no conditional fallback: a caller that needs the whole
/// parse's view checks the tree for errors.
pub fn parse_ranges_with(
    path: &Path,
    text: String,
    hinted: String,
    ranges: &[Range<usize>],
    opts: &Options,
) -> Result<ParsedFile, ParseError> {
    let budget = opts.budget.time;
    let ts = variant_ranges(hinted.as_bytes(), ranges);
    let tree = ts_reparse(&hinted, None, Some(&ts), Instant::now() + budget, budget)
        .map_err(|e| e.into_error(path, &text))?;
    Ok(ParsedFile::of_text(path, text, tree, hinted))
}

enum TsFail {
    Budget { offset: usize, what: String },
    Other,
}

impl TsFail {
    /// The front-end error for a parse of `text` (the file at `path`).
    fn into_error(self, path: &Path, text: &str) -> ParseError {
        match self {
            TsFail::Budget { offset, what } => ParseError::Budget {
                path: path.to_path_buf(),
                offset: offset.min(text.len()),
                what,
                text: text.to_string(),
            },
            TsFail::Other => ParseError::TreeSitter {
                path: path.to_path_buf(),
            },
        }
    }
}

/// One tree-sitter-c parse with a deadline.
fn ts_parse(text: &str, deadline: Instant, budget: Duration) -> Result<tree_sitter::Tree, TsFail> {
    ts_reparse(text, None, None, deadline, budget)
}

/// A parse that reuses `old` (already edited) where the text is unchanged.
/// `ranges`: parse only these parts of `text` (all of it when they are not
/// valid included ranges).
fn ts_reparse(
    text: &str,
    old: Option<&tree_sitter::Tree>,
    ranges: Option<&[tree_sitter::Range]>,
    deadline: Instant,
    budget: Duration,
) -> Result<tree_sitter::Tree, TsFail> {
    // One parser per thread, reused: many small parses (a header's items)
    // would otherwise each pay for making one.
    thread_local! {
        static PARSER: std::cell::RefCell<Option<tree_sitter::Parser>> =
            const { std::cell::RefCell::new(None) };
    }
    let mut parser = match PARSER.with(|p| p.borrow_mut().take()) {
        Some(p) => p,
        None => {
            let mut p = tree_sitter::Parser::new();
            p.set_language(&tree_sitter_c::LANGUAGE.into())
                .map_err(|_| TsFail::Other)?;
            p
        }
    };
    parser.reset();
    let whole: &[tree_sitter::Range] = &[];
    if parser.set_included_ranges(ranges.unwrap_or(whole)).is_err() {
        let _ = parser.set_included_ranges(whole);
    }
    let mut reached = 0usize;
    let mut timed_out = false;
    let mut progress = |s: &tree_sitter::ParseState| {
        reached = s.current_byte_offset();
        if Instant::now() >= deadline {
            timed_out = true;
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let bytes = text.as_bytes();
    let mut input = |off: usize, _: tree_sitter::Point| bytes.get(off..).unwrap_or(&[]);
    let tree = parser.parse_with_options(
        &mut input,
        old,
        Some(tree_sitter::ParseOptions::new().progress_callback(&mut progress)),
    );
    PARSER.with(|p| *p.borrow_mut() = Some(parser));
    match tree {
        Some(t) => Ok(t),
        None if timed_out => Err(TsFail::Budget {
            offset: reached,
            what: format!("parse took longer than {budget:?}"),
        }),
        None => Err(TsFail::Other),
    }
}

/// Where conditionals break functions, tries keeping the first or the last
/// branch of each conditional inside them (see [`cond`]); keeps a variant per
/// broken region only where it parses cleanly.
fn cond_fallback(
    tree: tree_sitter::Tree,
    hinted: String,
    deadline: Instant,
    budget: Duration,
) -> Result<(tree_sitter::Tree, String), TsFail> {
    let regions = health::problem_regions(&tree, &hinted);
    let before = regions.len();
    if regions.is_empty() {
        return Ok((tree, hinted));
    }
    let groups = cond::groups(&hinted);
    // A region the parser's error ends inside a conditional (an unclosed
    // brace swallowing the rest of the file, up to ns83820's `#if 0`
    // stubs) takes the whole conditional.
    let regions: Vec<Range<usize>> = regions
        .into_iter()
        .map(|r| cond::cover_groups(&groups, r))
        .filter(|r| cond::any_inside(&groups, r))
        .collect();
    if regions.is_empty() {
        return Ok((tree, hinted));
    }
    // A variant parses only the regions: everything else is blanked (same
    // length, same newlines), and the parser reads only the regions (each
    // to the end of its last line), so the parse costs what they cost.
    let ranges = variant_ranges(hinted.as_bytes(), &regions);
    let variant = |keep_first: bool| -> Result<(Vec<u8>, Vec<Range<usize>>), TsFail> {
        let src = hinted.as_bytes();
        let mut v: Vec<u8> = src
            .iter()
            .map(|&c| if c == b'\n' || c == b'\r' { c } else { b' ' })
            .collect();
        for r in &regions {
            v[r.clone()].copy_from_slice(&src[r.clone()]);
            cond::apply(&mut v, &groups, r, keep_first);
        }
        let s = String::from_utf8(v).map_err(|_| TsFail::Other)?;
        let t = ts_reparse(&s, None, Some(&ranges), deadline, budget)?;
        let bad = health::problem_regions(&t, &s);
        Ok((s.into_bytes(), bad))
    };
    let (first, first_bad) = variant(true)?;
    let (last, last_bad) = variant(false)?;
    let clean = |bad: &[Range<usize>], r: &Range<usize>| {
        !bad.iter().any(|b| b.start < r.end && r.start < b.end)
    };
    let mut out = hinted.as_bytes().to_vec();
    let mut edited = tree.clone();
    let mut changed = false;
    for r in &regions {
        let src = if clean(&first_bad, r) {
            &first
        } else if clean(&last_bad, r) {
            &last
        } else {
            continue;
        };
        out[r.clone()].copy_from_slice(&src[r.clone()]);
        // Same-length edit: tree-sitter re-parses only around it.
        let (start, end) = (point_at(&out, r.start), point_at(&out, r.end));
        edited.edit(&tree_sitter::InputEdit {
            start_byte: r.start,
            old_end_byte: r.end,
            new_end_byte: r.end,
            start_position: start,
            old_end_position: end,
            new_end_position: end,
        });
        changed = true;
    }
    if !changed {
        return Ok((tree, hinted));
    }
    let out = String::from_utf8(out).map_err(|_| TsFail::Other)?;
    let t2 = ts_reparse(&out, Some(&edited), None, deadline, budget)?;
    if health::problem_regions(&t2, &out).len() <= before {
        Ok((t2, out))
    } else {
        Ok((tree, hinted))
    }
}

/// The parts of a variant the parser reads: `regions` merged, each extended
/// to the end of its last line (the newline ends a directive there), with
/// their rows and columns.
fn variant_ranges(text: &[u8], regions: &[Range<usize>]) -> Vec<tree_sitter::Range> {
    let mut sorted = regions.to_vec();
    sorted.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::new();
    for r in sorted {
        let from = r.end.min(text.len());
        let end = text[from..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(text.len(), |p| from + p + 1);
        let r = r.start..end.max(r.end);
        match merged.last_mut() {
            Some(m) if r.start <= m.end => m.end = m.end.max(r.end),
            _ => merged.push(r),
        }
    }
    let (mut pos, mut row, mut line_start) = (0usize, 0usize, 0usize);
    let mut point = |to: usize| {
        let to = to.min(text.len());
        for (i, &c) in text.iter().enumerate().take(to).skip(pos) {
            if c == b'\n' {
                row += 1;
                line_start = i + 1;
            }
        }
        pos = pos.max(to);
        tree_sitter::Point {
            row,
            column: to - line_start,
        }
    };
    merged
        .into_iter()
        .map(|r| {
            let start_point = point(r.start);
            let end_point = point(r.end);
            tree_sitter::Range {
                start_byte: r.start,
                end_byte: r.end,
                start_point,
                end_point,
            }
        })
        .collect()
}

/// Row and column (bytes) of offset `at`.
fn point_at(text: &[u8], at: usize) -> tree_sitter::Point {
    let before = &text[..at.min(text.len())];
    let row = before.iter().filter(|&&c| c == b'\n').count();
    let col = before.iter().rev().take_while(|&&c| c != b'\n').count();
    tree_sitter::Point { row, column: col }
}

/// The name a function definition defines (through pointer, parenthesized and
/// attributed declarators).
pub fn function_name<'a>(pf: &'a ParsedFile, def: tree_sitter::Node<'_>) -> Option<&'a str> {
    function_name_node(def).map(|n| pf.node_text(n))
}

/// The identifier node naming what a function definition defines: its
/// declarator followed through function, pointer, parenthesized, attributed
/// and array declarators.
pub fn function_name_node(def: tree_sitter::Node<'_>) -> Option<tree_sitter::Node<'_>> {
    let k = walk::kinds();
    let mut d = k.child(def, k.f_declarator)?;
    loop {
        let id = d.kind_id();
        if id == k.identifier || id == k.field_identifier {
            return Some(d);
        }
        if id == k.function_declarator
            || id == k.pointer_declarator
            || id == k.parenthesized_declarator
            || id == k.attributed_declarator
            || id == k.array_declarator
        {
            d = match k.child(d, k.f_declarator) {
                Some(x) => x,
                None => d.named_child(0)?,
            };
        } else {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every node's byte range is a range of the original text, and the
    /// original text is what `node_text` returns.
    #[test]
    fn byte_ranges_equal_original() {
        let src = "static void __iomem *base;\n\
                   static DEFINE_SPINLOCK(lock);\n\
                   int f(struct dev *d) {\n\
                   \tstruct foo *p = container_of(d, struct foo, dev);\n\
                   \tlist_for_each_entry(p, &h, list) {\n\
                   \t\tg(p);\n\
                   \t}\n\
                   \treturn min_t(unsigned int, p->a, 3);\n\
                   }\n";
        let pf = parse_text(Path::new("t.c"), src.to_string()).unwrap();
        assert_eq!(pf.text, src);
        assert_eq!(pf.hinted.len(), src.len());
        assert!(
            !pf.tree.root_node().has_error(),
            "{}",
            pf.tree.root_node().to_sexp()
        );
        let root = pf.tree.root_node();
        assert_eq!(root.end_byte(), src.len());
        let mut stack = vec![root];
        let mut idents = Vec::new();
        while let Some(n) = stack.pop() {
            assert!(n.end_byte() <= src.len());
            // Rows/columns agree with the original text too.
            assert_eq!(n.start_position().row + 1, pf.line_of(n.start_byte()));
            if n.kind() == "identifier" {
                idents.push(pf.node_text(n).to_string());
            }
            for k in 0..n.child_count() {
                stack.extend(n.child(k));
            }
        }
        assert!(idents.iter().any(|s| s == "base"));
        // The respelled type argument reads as the original text.
        assert!(idents.iter().any(|s| s == "struct foo"), "{idents:?}");
        let raw = parse_text_with(Path::new("t.c"), src.to_string(), &Options::raw()).unwrap();
        assert!(raw.tree.root_node().has_error());
    }

    #[test]
    fn budget_gives_a_diagnostic() {
        let mut src = String::new();
        for i in 0..20_000 {
            src.push_str(&format!("int f{i}(void) {{ return {i} + g(a, b); }}\n"));
        }
        let opts = Options {
            hints: None,
            budget: Budget {
                time: Duration::from_millis(0),
                max_bytes: 1 << 30,
            },
        };
        match parse_text_with(Path::new("big.c"), src.clone(), &opts) {
            Err(ParseError::Budget { offset, .. }) => assert!(offset < src.len()),
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("a zero budget must stop the parse"),
        }
        let small = Options {
            hints: None,
            budget: Budget {
                time: Duration::from_secs(60),
                max_bytes: 10,
            },
        };
        assert!(matches!(
            parse_text_with(Path::new("big.c"), src, &small),
            Err(ParseError::Budget { .. })
        ));
    }

    #[test]
    fn decode_keeps_length() {
        let (s, bad) = decode(Path::new("x.c"), b"int a; /* \xe9t\xe9 */\n".to_vec()).unwrap();
        assert!(bad);
        assert_eq!(s, "int a; /* ?t? */\n");
        assert!(matches!(
            decode(Path::new("x.o"), b"\x7fELF\0\0".to_vec()),
            Err(ParseError::NotC { offset: 4, .. })
        ));
    }

    #[test]
    fn names_of_functions() {
        let pf = parse_text(
            Path::new("t.c"),
            "static int *(get)(void) { return 0; }\nvoid __init setup(int a) {}\n".into(),
        )
        .unwrap();
        let root = pf.tree.root_node();
        let names: Vec<_> = (0..root.named_child_count())
            .filter_map(|k| root.named_child(k as u32))
            .filter_map(|n| function_name(&pf, n))
            .collect();
        assert_eq!(names, ["get", "setup"]);
    }
}
#[cfg(test)]
mod directive_comment_tests {
    use super::directive_comments_blanked;

    #[test]
    fn comments_inside_continued_defines_are_blanked() {
        let t = "#define A x /* c */ + \\\n\ty /* d */\nint z; /* kept */\n";
        let out = directive_comments_blanked(t.to_string());
        assert_eq!(out.len(), t.len());
        assert_eq!(
            out,
            "#define A x         + \\\n\ty        \nint z; /* kept */\n"
        );
        // A comment spanning lines stays (blanking it would join lines).
        let m = "#define B 1 /* a\n b */\n";
        assert_eq!(directive_comments_blanked(m.to_string()), m);
    }
}

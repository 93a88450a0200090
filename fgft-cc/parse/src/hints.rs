//! The macro-hint table and the length-preserving rewrite it drives.
//!
//! The table (`fgft-cc/tables/macro-hints.toml`, embedded, plus user extension
//! files) names kernel macros that tree-sitter-c cannot parse as written.  The
//! rewrite respells them in place: bytes are blanked or replaced by other ASCII
//! bytes, nothing moves, and newlines are never touched, so byte offsets, lines
//! and columns of the rewritten text are those of the original.

use crate::tables::{self, TableSource};
use crate::ParseError;
use fgft_base::lex::skip_block_comment;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

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
    patterns: Vec<Glob>,
    /// Names these contents: 0 while empty, a fresh number after every `add`
    /// (clones share it), so [`Index`] can tell which sets it was built from.
    stamp: u64,
}

/// Source of [`NameSet`] stamps.
static NEXT_STAMP: AtomicU64 = AtomicU64::new(1);

impl NameSet {
    fn add(&mut self, name: &str) {
        if name.contains('*') {
            self.patterns.push(Glob::new(name));
        } else {
            self.exact.insert(name.to_string());
        }
        self.stamp = NEXT_STAMP.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether `name` is in the set.
    pub fn contains(&self, name: &str) -> bool {
        self.exact.contains(name) || self.patterns.iter().any(|p| p.matches(name.as_bytes()))
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

/// A wildcard pattern `prefix*middle*...*suffix`: the middle parts must
/// appear in order between the prefix and the suffix.
#[derive(Debug, Clone)]
struct Glob {
    prefix: Box<[u8]>,
    middle: Vec<Box<[u8]>>,
    suffix: Box<[u8]>,
    /// Length of all parts together: no shorter name matches.
    min_len: usize,
    /// [`byte_set`] of all parts: a name that lacks one of them cannot match.
    bytes: u64,
}

/// Which bytes occur in `w`, folded to 64 (byte modulo 64).
fn byte_set(w: &[u8]) -> u64 {
    w.iter().fold(0, |set, &c| set | 1 << (c & 63))
}

impl Glob {
    /// `pattern` holds at least one `*`.
    fn new(pattern: &str) -> Glob {
        let mut parts: Vec<Box<[u8]>> = pattern.split('*').map(|p| p.as_bytes().into()).collect();
        let min_len = parts.iter().map(|p| p.len()).sum();
        let bytes = parts.iter().fold(0, |set, p| set | byte_set(p));
        // Splitting at a `*` gives at least two parts.
        let suffix = if parts.len() > 1 { parts.pop() } else { None };
        let prefix = if parts.is_empty() {
            Box::default()
        } else {
            parts.remove(0)
        };
        Glob {
            prefix,
            middle: parts,
            suffix: suffix.unwrap_or_default(),
            min_len,
            bytes,
        }
    }

    /// Whether `name` matches the pattern.
    fn matches(&self, name: &[u8]) -> bool {
        if name.len() < self.min_len {
            return false;
        }
        let Some(mut s) = strip_prefix(name, &self.prefix) else {
            return false;
        };
        for m in &self.middle {
            match find(s, m) {
                Some(i) => s = &s[i + m.len()..],
                None => return false,
            }
        }
        s.len() >= self.suffix.len() && same_word(&s[s.len() - self.suffix.len()..], &self.suffix)
    }
}

#[inline]
fn strip_prefix<'s>(s: &'s [u8], prefix: &[u8]) -> Option<&'s [u8]> {
    let head = s.get(..prefix.len())?;
    if head.first() == prefix.first() && same_word(head, prefix) {
        Some(&s[prefix.len()..])
    } else {
        None
    }
}

/// First position of `needle` in `hay` (identifiers are short: a plain scan).
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let Some((&n0, _)) = needle.split_first() else {
        return Some(0);
    };
    let last = hay.len().checked_sub(needle.len())?;
    (0..=last).find(|&i| hay[i] == n0 && same_word(&hay[i..i + needle.len()], needle))
}

// Bits of an identifier's [`Index`] flags: the table's name sets that hold it
// exactly (wildcard patterns are matched separately)...
const BLANK: u16 = 1 << 0;
const BLANK_CALL: u16 = 1 << 1;
const ITERATOR: u16 = 1 << 2;
const DECL_CALL: u16 = 1 << 3;
const INIT_FRAGMENT: u16 = 1 << 4;
// ...and the fixed word lists the rewrite asks about.
const KEYWORD: u16 = 1 << 5;
const NOT_CALL: u16 = 1 << 6;
const EXPR_KEYWORD: u16 = 1 << 7;
const TYPE_WORD: u16 = 1 << 8;
/// `struct`, `union`, `enum`.
const TAG: u16 = 1 << 9;
/// `case`.
const CASE: u16 = 1 << 10;
/// `offsetof`, `__builtin_offsetof`.
const OFFSETOF: u16 = 1 << 11;
/// `else`, `do`.
const ELSE_DO: u16 = 1 << 12;
/// Set by the lexer: only upper-case letters, digits and `_`.
const UPPER: u16 = 1 << 13;
/// Set by the lexer on a `(`: a [`TYPE_WORD`] stands before its `)`.
const TYPE_INSIDE: u16 = 1 << 14;

/// One lookup per identifier: name -> flags of every name set and word list
/// that holds it, plus each set's wildcard patterns.  The lexer stores the
/// flags in every identifier token, so the rewrite never hashes a name twice.
#[derive(Debug, Clone)]
struct Index {
    words: WordTable,
    /// Wildcard patterns of each set (set bit `1 << k` at `k`).
    globs: [Vec<Glob>; 5],
    /// Per set, the first bytes a name matching one of its patterns may
    /// start with (a bit set of 256).
    glob_starts: [[u64; 4]; 5],
    /// Bits of the sets that have patterns.
    glob_sets: u16,
    /// Stamps of the sets the index was built from, in [`HintTable::sets`] order.
    stamps: [u64; 5],
}

impl Index {
    fn build(sets: [(&NameSet, u16); 5]) -> Index {
        let mut words: HashMap<&[u8], u16, FxBuild> = HashMap::default();
        let lists: [(&[&str], u16); 4] = [
            (KEYWORDS, KEYWORD),
            (NOT_CALLS, NOT_CALL),
            (EXPR_KEYWORDS, EXPR_KEYWORD),
            (TYPE_START, TYPE_WORD),
        ];
        let fixed: [(&str, u16); 8] = [
            ("struct", TAG),
            ("union", TAG),
            ("enum", TAG),
            ("case", CASE),
            ("offsetof", OFFSETOF),
            ("__builtin_offsetof", OFFSETOF),
            ("else", ELSE_DO),
            ("do", ELSE_DO),
        ];
        let words_of = lists
            .iter()
            .flat_map(|(l, bit)| l.iter().map(move |w| (*w, *bit)))
            .chain(fixed);
        for (w, bit) in words_of {
            *words.entry(w.as_bytes()).or_default() |= bit;
        }
        let mut globs: [Vec<Glob>; 5] = Default::default();
        let mut glob_starts = [[0u64; 4]; 5];
        let mut glob_sets = 0;
        let mut stamps = [0; 5];
        for (k, (set, bit)) in sets.into_iter().enumerate() {
            for n in &set.exact {
                *words.entry(n.as_bytes()).or_default() |= bit;
            }
            let at = bit.trailing_zeros() as usize;
            for p in &set.patterns {
                match p.prefix.first() {
                    Some(&c) => glob_starts[at][usize::from(c >> 6)] |= 1 << (c & 63),
                    None => glob_starts[at] = [u64::MAX; 4],
                }
                globs[at].push(p.clone());
                glob_sets |= bit;
            }
            stamps[k] = set.stamp;
        }
        Index {
            words: WordTable::new(words),
            globs,
            glob_starts,
            glob_sets,
            stamps,
        }
    }

    /// Flags of the exact word `w`.
    #[inline]
    fn flags(&self, w: &[u8]) -> u16 {
        self.words.get(w)
    }

    /// Whether a wildcard pattern of the set with bit `bit` (one of the five
    /// set bits) matches `w`.
    #[inline]
    fn glob(&self, bit: u16, w: &[u8]) -> bool {
        if self.glob_sets & bit == 0 {
            return false;
        }
        let at = bit.trailing_zeros() as usize;
        let may = match (w.first(), self.glob_starts.get(at)) {
            (Some(&c), Some(starts)) => starts[usize::from(c >> 6)] >> (c & 63) & 1 != 0,
            (None, _) => self.globs.get(at).is_some_and(|g| !g.is_empty()),
            (_, None) => false,
        };
        may && self.glob_slow(at, w)
    }

    #[inline(never)]
    fn glob_slow(&self, at: usize, w: &[u8]) -> bool {
        let Some(globs) = self.globs.get(at) else {
            return false;
        };
        let mut have = None;
        globs.iter().any(|p| {
            w.len() >= p.min_len
                && (p.prefix.is_empty() || w.first() == p.prefix.first())
                && p.bytes & !*have.get_or_insert_with(|| byte_set(w)) == 0
                && p.matches(w)
        })
    }
}

/// Open-addressing hash table of words -> flags, built once and tuned for
/// lookups that mostly miss (most identifiers are in no list).
#[derive(Clone)]
struct WordTable {
    /// Per slot: 0 when empty, else the word's hash with the top bit set.
    tags: Box<[u32]>,
    /// Per slot: the word and its flags.
    entries: Box<[(Box<[u8]>, u16)]>,
    /// Number of slots minus one (a power of two minus one).
    mask: usize,
    /// Per first byte (modulo 128), bit `min(length, 63)` is set when a word
    /// of that shape is in the table: most misses stop here.
    shapes: Box<[u64; 128]>,
}

impl std::fmt::Debug for WordTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words = self.tags.iter().filter(|&&t| t != 0).count();
        f.debug_struct("WordTable")
            .field("words", &words)
            .field("slots", &self.tags.len())
            .finish_non_exhaustive()
    }
}

/// Where a non-empty word falls in [`WordTable::shapes`].
#[inline]
fn shape_of(w: &[u8], first: u8) -> (usize, u64) {
    (usize::from(first & 127), 1 << w.len().min(63))
}

impl WordTable {
    fn new(words: HashMap<&[u8], u16, FxBuild>) -> WordTable {
        // At most a quarter full: a miss usually reads one or two tags.
        let slots = (words.len() * 4).next_power_of_two().max(16);
        let mut tags = vec![0u32; slots].into_boxed_slice();
        let mut entries: Box<[(Box<[u8]>, u16)]> =
            (0..slots).map(|_| (Box::default(), 0)).collect();
        let mask = slots - 1;
        let mut shapes = Box::new([0u64; 128]);
        for (w, flags) in words {
            if let Some(&first) = w.first() {
                let (row, bit) = shape_of(w, first);
                shapes[row] |= bit;
            }
            let h = word_hash(w);
            let mut k = slot_of(h, mask);
            while tags[k] != 0 {
                k = (k + 1) & mask;
            }
            tags[k] = tag_of(h);
            entries[k] = (w.into(), flags);
        }
        WordTable {
            tags,
            entries,
            mask,
            shapes,
        }
    }

    /// Flags of `w`; 0 when it is not in the table.
    #[inline]
    fn get(&self, w: &[u8]) -> u16 {
        if let Some(&first) = w.first() {
            let (row, bit) = shape_of(w, first);
            if self.shapes[row] & bit == 0 {
                return 0;
            }
        }
        let h = word_hash(w);
        let tag = tag_of(h);
        let mut k = slot_of(h, self.mask);
        loop {
            match self.tags.get(k) {
                Some(&t) if t == tag => {
                    if let Some((word, flags)) = self.entries.get(k) {
                        if same_word(word, w) {
                            return *flags;
                        }
                    }
                }
                Some(0) | None => return 0,
                Some(_) => {}
            }
            k = (k + 1) & self.mask;
        }
    }
}

#[inline]
fn slot_of(h: u64, mask: usize) -> usize {
    (h >> 32) as usize & mask
}

#[inline]
fn tag_of(h: u64) -> u32 {
    h as u32 | 0x8000_0000
}

#[inline]
fn load_u64(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[..8]);
    u64::from_le_bytes(w)
}

#[inline]
fn load_u32(b: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[..4]);
    u32::from_le_bytes(w)
}

/// `x == y`, without a library call for short words.
#[inline]
fn same_word(x: &[u8], y: &[u8]) -> bool {
    let n = x.len();
    if n != y.len() {
        return false;
    }
    if n > 16 {
        return x == y;
    }
    if n >= 8 {
        // The first and the last eight bytes cover the word.
        load_u64(x) == load_u64(y) && load_u64(&x[n - 8..]) == load_u64(&y[n - 8..])
    } else if n >= 4 {
        load_u32(x) == load_u32(y) && load_u32(&x[n - 4..]) == load_u32(&y[n - 4..])
    } else {
        x.iter().zip(y).all(|(a, b)| a == b)
    }
}

/// Hash of a word from its length and its first and last bytes (at most 16
/// of them): cheap for identifiers of any length; the table compares whole
/// words anyway.
#[inline]
fn word_hash(w: &[u8]) -> u64 {
    let n = w.len();
    let (a, b) = if n >= 8 {
        (load_u64(w), load_u64(&w[n - 8..]))
    } else if n >= 4 {
        (u64::from(load_u32(w)), u64::from(load_u32(&w[n - 4..])))
    } else if n > 0 {
        let x = u64::from(w[0]) | u64::from(w[n / 2]) << 8 | u64::from(w[n - 1]) << 16;
        (x, 0)
    } else {
        (0, 0)
    };
    let m = u128::from(a ^ 0x243f_6a88_85a3_08d3)
        * u128::from(b ^ (n as u64).rotate_left(40) ^ 0x1319_8a2e_0370_7344);
    (m as u64) ^ (m >> 64) as u64
}

/// The compiled macro-hint table.
#[derive(Debug, Clone)]
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
    /// The name sets and word lists combined; rebuilt by `rewrite` when a name
    /// set was replaced after the table was built.
    index: Index,
}

impl Default for HintTable {
    fn default() -> HintTable {
        let empty = NameSet::default();
        HintTable {
            blank: NameSet::default(),
            blank_call: NameSet::default(),
            iterators: NameSet::default(),
            declare: HashMap::default(),
            decl_call: NameSet::default(),
            storage: HashSet::default(),
            init_fragment: NameSet::default(),
            type_args: HashMap::default(),
            // The sets are empty: the index holds the fixed word lists only.
            index: Index::build([(&empty, 0); 5]),
        }
    }
}

impl HintTable {
    /// The name sets with their [`Index`] bits.
    fn sets(&self) -> [(&NameSet, u16); 5] {
        [
            (&self.blank, BLANK),
            (&self.blank_call, BLANK_CALL),
            (&self.iterators, ITERATOR),
            (&self.decl_call, DECL_CALL),
            (&self.init_fragment, INIT_FRAGMENT),
        ]
    }

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
        t.index = Index::build(t.sets());
        Ok(t)
    }

    /// Rewrites `text` so tree-sitter-c can parse it.  The result has exactly the
    /// same length, the same newlines, and differs only inside macro uses named
    /// by the table.
    pub fn rewrite(&self, text: &str) -> String {
        let sets = self.sets();
        let rebuilt;
        let index = if sets.iter().map(|(s, _)| s.stamp).eq(self.index.stamps) {
            &self.index
        } else {
            rebuilt = Index::build(sets);
            &rebuilt
        };
        let (toks, dirs) = lex(text.as_bytes(), index);
        let mut rw = Rewriter {
            src: text.as_bytes(),
            text,
            out: text.as_bytes().to_vec(),
            toks: &toks,
            table: self,
            index,
            args: Vec::new(),
        };
        rw.run();
        // Directives inside initializer lists (`#ifdef CONFIG_PM` around
        // `.suspend = f,`): tree-sitter cannot parse them there; blanking the
        // directive lines keeps every branch's items.
        for d in &dirs {
            let next = toks.get(d.next_tok);
            let inside = next.is_some_and(|t| t.nested);
            if next.is_some_and(|t| t.in_init) || (inside && is_define(&rw.src[d.start..d.end])) {
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
    start: usize,
    end: usize,
    /// For `(`: how many tokens after it its `)` stands, when that is within
    /// [`MAX_ARG_TOKENS`] and no `;` comes between them; 0 otherwise.
    close: u16,
    /// For identifiers, their [`Index`] flags; for `(`, [`TYPE_INSIDE`].
    flags: u16,
    kind: Kind,
    /// Whether the token is inside braces (the brace depth before it, as a
    /// `u32`, is not 0).
    nested: bool,
    /// Whether the innermost open brace before the token is an initializer.
    in_init: bool,
}

fn is_ident_start(b: u8) -> bool {
    CLASS[b as usize] & C_IDENT_START != 0
}

fn is_ident_char(b: u8) -> bool {
    CLASS[b as usize] & C_IDENT != 0
}

// Byte classes of the lexer.
const C_IDENT_START: u8 = 1;
const C_IDENT: u8 = 2;
/// Upper-case letter, digit or `_`.
const C_UPPER: u8 = 4;
/// Blank or newline.
const C_SPACE: u8 = 8;
/// Newline, `\\` or `/`: where a directive may end or a comment start.
const C_DIRECTIVE_STOP: u8 = 16;
/// Newline, `\\` or a quote: where a literal may end.
const C_STRING_STOP: u8 = 32;

static CLASS: [u8; 256] = {
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
fn find_byte(hay: &[u8], from: usize, byte: u8) -> Option<usize> {
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
fn is_define(d: &[u8]) -> bool {
    let rest = d.get(1..).unwrap_or_default();
    let blanks = rest
        .iter()
        .take_while(|c| **c == b' ' || **c == b'\t')
        .count();
    let body = &rest[blanks..];
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
/// parse as C either).  Each token also gets its brace context, a `(` the
/// place of its `)`, and an identifier its [`Index`] flags.
fn lex(b: &[u8], index: &Index) -> (Vec<Tok>, Vec<Directive>) {
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
struct Lexer {
    toks: Vec<Tok>,
    /// Whether each open brace starts an initializer list.
    braces: Vec<bool>,
    /// Open parentheses: token index, how many `;` came before it, and
    /// whether a type word came after it.
    parens: Vec<(usize, usize, bool)>,
    /// Number of `;` so far.
    semis: usize,
}

impl Lexer {
    #[inline]
    fn ident(&mut self, start: usize, end: usize, flags: u16) {
        if flags & TYPE_WORD != 0 {
            if let Some(open) = self.parens.last_mut() {
                open.2 = true;
            }
        }
        self.push(Kind::Ident, start, end, flags);
    }

    #[inline]
    fn punct(&mut self, c: u8, at: usize) {
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
    fn push(&mut self, kind: Kind, start: usize, end: usize, flags: u16) {
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
const ONES: u64 = 0x0101_0101_0101_0101;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// High bit of each byte of `x7` (bytes below 0x80) that lies in `lo..=hi`.
#[inline]
fn bytes_in(x7: u64, lo: u8, hi: u8) -> u64 {
    // Neither sum carries out of a byte: x7 <= 0x7f.
    let at_least_lo = x7 + ONES * u64::from(0x80 - lo);
    let above_hi = x7 + ONES * u64::from(0x7f - hi);
    at_least_lo & !above_hi & HIGH
}

/// High bit of each byte of `w` that is an identifier character, and of each
/// that is an upper-case letter, digit or `_`.
#[inline]
fn ident_bytes(w: u64) -> (u64, u64) {
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
fn ident_end(b: &[u8], mut i: usize, mut upper: bool) -> (usize, bool) {
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
fn line_end(b: &[u8], i: usize) -> usize {
    find_byte(b, i, b'\n').unwrap_or(b.len())
}

struct Rewriter<'a> {
    src: &'a [u8],
    /// `src` as text.
    text: &'a str,
    out: Vec<u8>,
    toks: &'a [Tok],
    table: &'a HintTable,
    index: &'a Index,
    /// Scratch list of argument token ranges.
    args: Vec<(usize, usize)>,
}

/// How far a macro's argument list may reach, in tokens (the distance fits
/// [`Tok::close`]).
const MAX_ARG_TOKENS: usize = 20_000;
const _: () = assert!(MAX_ARG_TOKENS <= u16::MAX as usize);

impl<'a> Rewriter<'a> {
    fn text(&self, i: usize) -> &'a str {
        let t = self.toks[i];
        // Token boundaries are character boundaries.
        self.text.get(t.start..t.end).unwrap_or("")
    }

    fn is_punct(&self, i: usize, c: u8) -> bool {
        self.toks.get(i).is_some_and(|t| t.kind == Kind::Punct(c))
    }

    fn is_ident(&self, i: usize) -> bool {
        self.toks.get(i).is_some_and(|t| t.kind == Kind::Ident)
    }

    /// Whether token `i` has any of the `flags` bits.
    fn is_word(&self, i: usize, flags: u16) -> bool {
        self.toks[i].flags & flags != 0
    }

    /// Whether the name set of bit `set` holds identifier `i`.
    #[inline]
    fn in_set(&self, i: usize, set: u16) -> bool {
        let t = self.toks[i];
        t.flags & set != 0 || self.index.glob(set, &self.src[t.start..t.end])
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
        match self.toks.get(open) {
            Some(t) if t.close > 0 => Some(open + t.close as usize),
            _ => None,
        }
    }

    /// Token ranges of the arguments between `open` and `close`, into `args`.
    fn split_args(&self, open: usize, close: usize, args: &mut Vec<(usize, usize)>) {
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
    fn at_statement_start(&self, i: usize) -> bool {
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
    fn is_call_position(&self, i: usize) -> bool {
        if i == 0 {
            return true;
        }
        match self.toks[i - 1].kind {
            Kind::Ident => self.is_word(i - 1, EXPR_KEYWORD),
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
    fn merge_string_macros(&mut self, i: usize) {
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
    fn offsetof(&mut self, i: usize) {
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
    fn declare(&mut self, i: usize, close: usize, pos: usize) -> bool {
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
    fn looks_like_type(&self, s: usize, e: usize) -> bool {
        if !self.is_ident(s) || !self.is_word(s, TYPE_WORD) {
            return false;
        }
        if self.is_word(s, TAG) && !(s + 1 < e && self.is_ident(s + 1)) {
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
        let m = |p: &str, n: &str| Glob::new(p).matches(n.as_bytes());
        assert!(m("*for_each*", "list_for_each_entry"));
        assert!(m("*for_each*", "for_each"));
        assert!(!m("*for_each*", "for_eac"));
        assert!(m("a*b", "ab"));
        assert!(!m("ab*b", "ab"));
        assert!(m("SENSOR_DEVICE_ATTR*", "SENSOR_DEVICE_ATTR_2_RW"));
        assert!(!m("SENSOR_DEVICE_ATTR*", "SENSOR_DEVICE_ATT"));
    }

    /// `*` matches any run of bytes, by backtracking.
    fn glob_reference(p: &[u8], n: &[u8]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some((b'*', rest)) => (0..=n.len()).any(|k| glob_reference(rest, &n[k..])),
            Some((c, rest)) => n.first() == Some(c) && glob_reference(rest, &n[1..]),
        }
    }

    /// All strings over `alphabet` of length up to `max`.
    fn strings(alphabet: &[u8], max: usize) -> Vec<Vec<u8>> {
        let mut all = vec![Vec::new()];
        let mut last = vec![Vec::new()];
        for _ in 0..max {
            let next: Vec<Vec<u8>> = last
                .iter()
                .flat_map(|s| {
                    alphabet.iter().map(move |&c| {
                        let mut t = s.clone();
                        t.push(c);
                        t
                    })
                })
                .collect();
            all.extend(next.iter().cloned());
            last = next;
        }
        all
    }

    #[test]
    fn glob_agrees_with_backtracking() {
        let names = strings(b"ab", 7);
        let mut patterns = 0;
        for p in strings(b"ab*", 5) {
            if !p.contains(&b'*') {
                continue;
            }
            patterns += 1;
            let g = Glob::new(std::str::from_utf8(&p).unwrap());
            for n in &names {
                assert_eq!(
                    g.matches(n),
                    glob_reference(&p, n),
                    "pattern {:?} name {:?}",
                    String::from_utf8_lossy(&p),
                    String::from_utf8_lossy(n)
                );
            }
        }
        assert!(patterns > 300);
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
        // An empty type argument: respelled like `offsetof(,a.b)`, no panic.
        assert_eq!(rw("n = offsetof(,a.b);"), "n = offsetoF(,a.b);");
        assert_eq!(rw("n = offsetof( , a.b);"), "n = offsetoF( , a.b);");
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

    /// Small deterministic generator for the randomized tests.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    fn table(text: &str) -> HintTable {
        HintTable::from_sources(&[TableSource {
            path: None,
            text: text.into(),
        }])
        .unwrap()
    }

    #[test]
    fn index_agrees_with_name_sets() {
        let t = table(
            "blank = [\"__a\", \"x_*\", \"both\"]\n\
             blank_call = [\"*_y\", \"both\", \"__builtin_q\"]\n\
             iterators = [\"*for_each*\", \"*_foreach*\", \"for_all_*\", \"a*b*c\", \"walk_it\"]\n\
             [decl_call]\nnames = [\"DEV_ATTR*\", \"DEVICE_ATTR\", \"*\"]\n\
             [init_fragment]\nnames = [\"PM_OPS\", \"*__*__*\"]\n",
        );
        let mut names: Vec<String> = [
            "__a",
            "x_",
            "x_1",
            "ax_",
            "q_y",
            "_y",
            "y",
            "both",
            "__builtin_q",
            "list_for_each",
            "for_each",
            "for_eac",
            "hlist_foreach_x",
            "for_all_cpus",
            "for_all",
            "abc",
            "ac",
            "a_b_c_",
            "walk_it",
            "DEV_ATTR",
            "DEV_ATTR_RW",
            "DEVICE_ATTR",
            "PM_OPS",
            "a__b__c",
            "a____",
            "____",
            "if",
            "case",
            "struct",
            "offsetof",
            "do",
            "else",
            "sizeof",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let alphabet = b"_abcfhoreyx1";
        for _ in 0..5000 {
            let len = 1 + rng.below(14);
            names.push(
                (0..len)
                    .map(|_| alphabet[rng.below(alphabet.len())] as char)
                    .collect(),
            );
        }
        for n in &names {
            let w = n.as_bytes();
            for (set, bit) in t.sets() {
                let indexed = t.index.flags(w) & bit != 0 || t.index.glob(bit, w);
                assert_eq!(indexed, set.contains(n), "{n} in set {bit}");
            }
            let lists: [(&[&str], u16); 4] = [
                (KEYWORDS, KEYWORD),
                (NOT_CALLS, NOT_CALL),
                (EXPR_KEYWORDS, EXPR_KEYWORD),
                (TYPE_START, TYPE_WORD),
            ];
            for (list, bit) in lists {
                assert_eq!(
                    t.index.flags(w) & bit != 0,
                    list.contains(&n.as_str()),
                    "{n}"
                );
            }
            let fixed = [
                (TAG, &["struct", "union", "enum"][..]),
                (CASE, &["case"]),
                (OFFSETOF, &["offsetof", "__builtin_offsetof"]),
                (ELSE_DO, &["else", "do"]),
            ];
            for (bit, words) in fixed {
                assert_eq!(
                    t.index.flags(w) & bit != 0,
                    words.contains(&n.as_str()),
                    "{n}"
                );
            }
        }
    }

    #[test]
    fn word_table_finds_exactly_its_words() {
        let mut words: Vec<Vec<u8>> = Vec::new();
        for len in 1..40 {
            // Same first and last eight bytes, different middles.
            for mid in [b'a', b'b', b'c'] {
                let mut w = vec![b'_'; len];
                w[len / 2] = mid;
                words.push(w);
            }
            words.push((0..len).map(|k| b'A' + (k % 26) as u8).collect());
        }
        let map: HashMap<&[u8], u16, FxBuild> = words
            .iter()
            .enumerate()
            .filter(|(k, _)| k % 2 == 0)
            .map(|(k, w)| (w.as_slice(), k as u16 + 1))
            .collect();
        let table = WordTable::new(map.clone());
        for w in &words {
            assert_eq!(table.get(w), map.get(w.as_slice()).copied().unwrap_or(0));
        }
        assert_eq!(table.get(b""), 0);
        assert_eq!(table.get(b"__builtin_offsetof_x"), 0);
    }

    #[test]
    fn identifier_scan_agrees_with_bytes() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let samples = b"aZ_09\x80\xff(- Q\n";
        for _ in 0..20000 {
            let len = rng.below(24);
            let mut b: Vec<u8> = (0..len)
                .map(|_| {
                    if rng.below(4) == 0 {
                        rng.below(256) as u8
                    } else {
                        samples[rng.below(samples.len())]
                    }
                })
                .collect();
            b.insert(0, b'K');
            let want_end = 1 + b[1..].iter().take_while(|&&c| is_ident_char(c)).count();
            let want_upper = b[..want_end]
                .iter()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_');
            assert_eq!(ident_end(&b, 1, true), (want_end, want_upper), "{b:?}");
            for from in 0..b.len() {
                let want = b[from..].iter().position(|&c| c == b'\n').map(|p| from + p);
                assert_eq!(find_byte(&b, from, b'\n'), want, "{b:?}");
            }
        }
    }

    /// The brace context and `)` of every token, computed as the rewrite did
    /// before the lexer tracked them.
    #[test]
    fn token_context_agrees_with_rescans() {
        let index = HintTable::default().index;
        let pieces = [
            "(",
            ")",
            "{",
            "}",
            ";",
            ",",
            "=",
            "a",
            "int",
            "struct",
            " ",
            "\n#if x\n",
            "[",
            "]",
        ];
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for _ in 0..3000 {
            let text: String = (0..rng.below(60))
                .map(|_| pieces[rng.below(pieces.len())])
                .collect();
            let (toks, _) = lex(text.as_bytes(), &index);
            let mut stack: Vec<bool> = Vec::new();
            for (k, t) in toks.iter().enumerate() {
                assert_eq!(t.nested, !stack.is_empty(), "{text:?} token {k}");
                assert_eq!(
                    t.in_init,
                    stack.last().copied().unwrap_or(false),
                    "{text:?}"
                );
                match t.kind {
                    Kind::Punct(b'{') => {
                        let init = match k.checked_sub(1).map(|p| toks[p].kind) {
                            Some(Kind::Punct(b'=')) => true,
                            Some(Kind::Punct(b',' | b'{')) => {
                                stack.last().copied().unwrap_or(false)
                            }
                            _ => false,
                        };
                        stack.push(init);
                    }
                    Kind::Punct(b'}') => {
                        stack.pop();
                    }
                    Kind::Punct(b'(') => {
                        let mut depth = 0usize;
                        let mut close = None;
                        for (j, u) in toks.iter().enumerate().skip(k).take(MAX_ARG_TOKENS) {
                            match u.kind {
                                Kind::Punct(b'(') => depth += 1,
                                Kind::Punct(b')') => {
                                    depth -= 1;
                                    if depth == 0 {
                                        close = Some(j);
                                        break;
                                    }
                                }
                                Kind::Punct(b';') => break,
                                _ => {}
                            }
                        }
                        let expect = close.map_or(0, |c| c - k);
                        assert_eq!(usize::from(t.close), expect, "{text:?} token {k}");
                        if let Some(c) = close {
                            let typed = toks[k + 1..c]
                                .iter()
                                .any(|u| u.kind == Kind::Ident && u.flags & TYPE_WORD != 0);
                            assert_eq!(t.flags & TYPE_INSIDE != 0, typed, "{text:?} token {k}");
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn sets_replaced_after_loading_are_used() {
        let mut t = HintTable::builtin().unwrap();
        let ext = table("blank = [\"__my_attr\"]\n");
        assert_eq!(t.rewrite("int __iomem *p;"), "int         *p;");
        t.blank = ext.blank.clone();
        assert_eq!(t.rewrite("int __iomem *p;"), "int __iomem *p;");
        assert_eq!(t.rewrite("int __my_attr x;"), "int           x;");
        std::mem::swap(&mut t.blank, &mut t.blank_call);
        assert_eq!(t.rewrite("int __my_attr(3) x;"), "int              x;");
        assert_eq!(t.rewrite("int __aligned(8) x;"), "int          (8) x;");
        let fresh = HintTable::builtin().unwrap();
        assert_eq!(fresh.rewrite("int __aligned(8) x;"), "int              x;");
    }
}

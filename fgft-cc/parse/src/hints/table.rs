//! The macro-hint table: the TOML files (built in, plus extension files),
//! the name sets and wildcard patterns they hold, and the compiled
//! `HintTable` whose `rewrite` drives the lexer and the rewriter.
//!
//! Invariant: a table never changes once built; each name set has a stamp
//! that tells tables apart in caches.

use super::*;
use crate::tables::{self, TableDirs, TableSource};
use crate::ParseError;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

/// File name of the table (built-in and extension files).
pub const TABLE_NAME: &str = "macro-hints.toml";
pub(super) const BUILTIN: &str = include_str!("../../../tables/macro-hints.toml");

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HintFile {
    #[serde(default)]
    pub(super) blank: Vec<String>,
    #[serde(default)]
    pub(super) blank_call: Vec<String>,
    #[serde(default)]
    pub(super) iterators: Vec<String>,
    #[serde(default)]
    pub(super) declare: BTreeMap<String, usize>,
    #[serde(default)]
    pub(super) declare_array: BTreeMap<String, Vec<usize>>,
    #[serde(default)]
    pub(super) expand: BTreeMap<String, ExpandRaw>,
    #[serde(default)]
    pub(super) decl_call: DeclCall,
    #[serde(default)]
    pub(super) init_fragment: Names,
    #[serde(default)]
    pub(super) type_args: BTreeMap<String, Vec<usize>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DeclCall {
    #[serde(default)]
    pub(super) names: Vec<String>,
    #[serde(default)]
    pub(super) storage: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Names {
    #[serde(default)]
    pub(super) names: Vec<String>,
}

/// A set of macro names; names with `*` are wildcard patterns.
#[derive(Debug, Default, Clone)]
pub struct NameSet {
    pub(super) exact: HashSet<String, FxBuild>,
    pub(super) patterns: Vec<Glob>,
    /// Names these contents: 0 while empty, a fresh number after every `add`
    /// (clones share it), so [`Index`] can tell which sets it was built from.
    pub(super) stamp: u64,
}

/// Source of [`NameSet`] stamps.
pub(super) static NEXT_STAMP: AtomicU64 = AtomicU64::new(1);

impl NameSet {
    pub(super) fn add(&mut self, name: &str) {
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
pub(super) struct Glob {
    pub(super) prefix: Box<[u8]>,
    pub(super) middle: Vec<Box<[u8]>>,
    pub(super) suffix: Box<[u8]>,
    /// Length of all parts together: no shorter name matches.
    pub(super) min_len: usize,
    /// [`byte_set`] of all parts: a name that lacks one of them cannot match.
    pub(super) bytes: u64,
}

/// Which bytes occur in `w`, folded to 64 (byte modulo 64).
pub(super) fn byte_set(w: &[u8]) -> u64 {
    w.iter().fold(0, |set, &c| set | 1 << (c & 63))
}

impl Glob {
    /// `pattern` holds at least one `*`.
    pub(super) fn new(pattern: &str) -> Glob {
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
    pub(super) fn matches(&self, name: &[u8]) -> bool {
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
pub(super) fn strip_prefix<'s>(s: &'s [u8], prefix: &[u8]) -> Option<&'s [u8]> {
    let head = s.get(..prefix.len())?;
    if head.first() == prefix.first() && same_word(head, prefix) {
        Some(&s[prefix.len()..])
    } else {
        None
    }
}

/// First position of `needle` in `hay` (identifiers are short: a plain scan).
pub(super) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let Some((&n0, _)) = needle.split_first() else {
        return Some(0);
    };
    let last = hay.len().checked_sub(needle.len())?;
    (0..=last).find(|&i| hay[i] == n0 && same_word(&hay[i..i + needle.len()], needle))
}

/// `[expand.NAME]`: what a kernel macro that defines file-scope objects
/// stands for.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct ExpandRaw {
    params: Vec<String>,
    body: String,
}

/// A kernel macro's definition, as `[expand]` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    pub params: Vec<String>,
    pub body: String,
}

/// The compiled macro-hint table.
#[derive(Debug, Clone)]
pub struct HintTable {
    pub blank: NameSet,
    pub blank_call: NameSet,
    pub iterators: NameSet,
    /// Declaration macro -> argument position of the declared name.
    pub declare: HashMap<String, usize, FxBuild>,
    /// Array declaration macro -> argument positions of the declared name
    /// and of the element count (`DECLARE_BITMAP(name, bits)`).
    pub declare_array: HashMap<String, (usize, usize), FxBuild>,
    /// Kernel macros that define file-scope objects (`ATTRIBUTE_GROUPS(x)`
    /// defines `x_group` and `x_groups`), with their definitions.
    pub expand: BTreeMap<String, Expansion>,
    pub decl_call: NameSet,
    pub storage: HashSet<String, FxBuild>,
    pub init_fragment: NameSet,
    pub type_args: HashMap<String, Vec<usize>, FxBuild>,
    /// The name sets and word lists combined; rebuilt by `rewrite` when a name
    /// set was replaced after the table was built.
    pub(super) index: Index,
}

impl Default for HintTable {
    fn default() -> HintTable {
        let empty = NameSet::default();
        HintTable {
            blank: NameSet::default(),
            blank_call: NameSet::default(),
            iterators: NameSet::default(),
            declare: HashMap::default(),
            declare_array: HashMap::default(),
            expand: BTreeMap::new(),
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
    pub(super) fn sets(&self) -> [(&NameSet, u16); 5] {
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
    pub fn load(dirs: &TableDirs) -> Result<HintTable, ParseError> {
        Self::from_sources(&dirs.sources(BUILTIN, TABLE_NAME)?)
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
            for (n, e) in &f.expand {
                let x = Expansion {
                    params: e.params.clone(),
                    body: e.body.clone(),
                };
                t.expand.insert(n.clone(), x);
            }
            for (n, pos) in &f.declare_array {
                let ok = matches!(pos.as_slice(), [a, b] if *b == a + 1) && n.len() >= 3;
                if !ok {
                    return Err(tables::table_error(
                        src,
                        TABLE_NAME,
                        n,
                        format!(
                            "array declaration macro `{n}`: give [name, count] argument positions, the count right after the name (and a name no shorter than `int`)"
                        ),
                    ));
                }
                t.declare_array.insert(n.clone(), (pos[0], pos[1]));
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
        for (k, d) in dirs.iter().enumerate() {
            let next = toks.get(d.next_tok);
            let inside = next.is_some_and(|t| t.nested);
            if next.is_some_and(|t| t.in_init) && crate::cond::if_zero(&rw.src[d.start..d.end]) {
                // `#if 0` there (ns83820's `.suspend = ,` stubs) is never
                // compiled: its first branch goes with the directive.
                if let Some(to) = branch_end(&dirs, k, rw.src) {
                    rw.blank(d.start, to);
                }
            }
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

/// Where the first branch of the conditional that directive `k` opens
/// ends: the start of its `#else`, `#elif` or `#endif`.
fn branch_end(dirs: &[Directive], k: usize, src: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    for d in &dirs[k + 1..] {
        match directive_word(&src[d.start..d.end]) {
            b"if" | b"ifdef" | b"ifndef" => depth += 1,
            b"endif" if depth > 0 => depth -= 1,
            b"else" | b"elif" | b"elifdef" | b"elifndef" | b"endif" if depth == 0 => {
                return Some(d.start)
            }
            _ => {}
        }
    }
    None
}

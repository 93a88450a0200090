//! The word table: every identifier the hint table names, with the flags
//! of the name sets that hold it, in one open-addressed table looked up by
//! a hash of the word's bytes.
//!
//! Invariant: a lookup answers exactly the flags of the name sets that hold
//! the word (wildcard patterns are matched separately); a word not in the
//! table has no flags.

use super::*;
use std::collections::HashMap;

// Bits of an identifier's [`Index`] flags: the table's name sets that hold it
// exactly (wildcard patterns are matched separately)...
pub(super) const BLANK: u16 = 1 << 0;
pub(super) const BLANK_CALL: u16 = 1 << 1;
pub(super) const ITERATOR: u16 = 1 << 2;
pub(super) const DECL_CALL: u16 = 1 << 3;
pub(super) const INIT_FRAGMENT: u16 = 1 << 4;
// ...and the fixed word lists the rewrite asks about.
pub(super) const KEYWORD: u16 = 1 << 5;
pub(super) const NOT_CALL: u16 = 1 << 6;
pub(super) const EXPR_KEYWORD: u16 = 1 << 7;
pub(super) const TYPE_WORD: u16 = 1 << 8;
/// `struct`, `union`, `enum`.
pub(super) const TAG: u16 = 1 << 9;
/// `case`.
pub(super) const CASE: u16 = 1 << 10;
/// `offsetof`, `__builtin_offsetof`.
pub(super) const OFFSETOF: u16 = 1 << 11;
/// `else`, `do`.
pub(super) const ELSE_DO: u16 = 1 << 12;
/// Set by the lexer: only upper-case letters, digits and `_`.
pub(super) const UPPER: u16 = 1 << 13;
/// Set by the lexer on a `(`: a [`TYPE_WORD`] stands before its `)`.
pub(super) const TYPE_INSIDE: u16 = 1 << 14;

/// One lookup per identifier: name -> flags of every name set and word list
/// that holds it, plus each set's wildcard patterns.  The lexer stores the
/// flags in every identifier token, so the rewrite never hashes a name twice.
#[derive(Debug, Clone)]
pub(super) struct Index {
    pub(super) words: WordTable,
    /// Wildcard patterns of each set (set bit `1 << k` at `k`).
    pub(super) globs: [Vec<Glob>; 5],
    /// Per set, the first bytes a name matching one of its patterns may
    /// start with (a bit set of 256).
    pub(super) glob_starts: [[u64; 4]; 5],
    /// Bits of the sets that have patterns.
    pub(super) glob_sets: u16,
    /// Stamps of the sets the index was built from, in [`HintTable::sets`] order.
    pub(super) stamps: [u64; 5],
}

impl Index {
    pub(super) fn build(sets: [(&NameSet, u16); 5]) -> Index {
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
    pub(super) fn flags(&self, w: &[u8]) -> u16 {
        self.words.get(w)
    }

    /// Whether a wildcard pattern of the set with bit `bit` (one of the five
    /// set bits) matches `w`.
    #[inline]
    pub(super) fn glob(&self, bit: u16, w: &[u8]) -> bool {
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
    pub(super) fn glob_slow(&self, at: usize, w: &[u8]) -> bool {
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
pub(super) struct WordTable {
    /// Per slot: 0 when empty, else the word's hash with the top bit set.
    pub(super) tags: Box<[u32]>,
    /// Per slot: the word and its flags.
    pub(super) entries: Box<[(Box<[u8]>, u16)]>,
    /// Number of slots minus one (a power of two minus one).
    pub(super) mask: usize,
    /// Per first byte (modulo 128), bit `min(length, 63)` is set when a word
    /// of that shape is in the table: most misses stop here.
    pub(super) shapes: Box<[u64; 128]>,
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
pub(super) fn shape_of(w: &[u8], first: u8) -> (usize, u64) {
    (usize::from(first & 127), 1 << w.len().min(63))
}

impl WordTable {
    pub(super) fn new(words: HashMap<&[u8], u16, FxBuild>) -> WordTable {
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
    pub(super) fn get(&self, w: &[u8]) -> u16 {
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
pub(super) fn slot_of(h: u64, mask: usize) -> usize {
    (h >> 32) as usize & mask
}

#[inline]
pub(super) fn tag_of(h: u64) -> u32 {
    h as u32 | 0x8000_0000
}

#[inline]
pub(super) fn load_u64(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[..8]);
    u64::from_le_bytes(w)
}

#[inline]
pub(super) fn load_u32(b: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[..4]);
    u32::from_le_bytes(w)
}

/// `x == y`, without a library call for short words.
#[inline]
pub(super) fn same_word(x: &[u8], y: &[u8]) -> bool {
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
pub(super) fn word_hash(w: &[u8]) -> u64 {
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

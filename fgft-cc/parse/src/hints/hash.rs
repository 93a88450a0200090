//! The hasher of the hint tables: a fast hash of the short identifiers the
//! rewrite looks up on every token.
//!
//! Invariant: deterministic (no per-process seed); no flooding resistance,
//! the tables being trusted data.

use std::hash::{BuildHasherDefault, Hasher};

/// A fast hasher for the short identifiers the rewrite looks up on every
/// token (the tables are trusted data, so no flooding resistance is needed).
#[derive(Debug, Default, Clone, Copy)]
pub struct FxHasher {
    pub(super) hash: u64,
}

impl FxHasher {
    #[inline]
    pub(super) fn add(&mut self, x: u64) {
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

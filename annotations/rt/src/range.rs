//! The range table: a mapping database of the address ranges a transaction
//! may touch, with rights.
//!
//! The Rust counterpart of `fgft_map`, `fgft_map_derived`, `fgft_unmap` and
//! `fgft_check` in `runtime-kmod/include/fgft/runtime.h`. Grants do not
//! overlap within one table; a grant can be derived from another (an object
//! reached through another) and is then revoked with it. Revocation is a
//! post-order walk of the derivation tree, done with an explicit stack so a
//! deep tree cannot overflow the call stack.
//!
//! Lookups are a last-hit cache in front of a `BTreeMap` (logarithmic).

use crate::Error;
use std::cell::Cell;
use std::collections::BTreeMap;

/// Read right (`FGFT_R` in the C API).
pub const FGFT_R: u32 = 0x1;
/// Write right (`FGFT_W`).
pub const FGFT_W: u32 = 0x2;
/// Both (`FGFT_RW`).
pub const FGFT_RW: u32 = FGFT_R | FGFT_W;

/// One grant: `[start, start + len)` with `rights`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub start: u64,
    pub len: u64,
    pub rights: u32,
    /// Start of the grant this one was derived from.
    pub parent: Option<u64>,
    /// Starts of the grants derived from this one.
    pub children: Vec<u64>,
}

impl Grant {
    fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// A mapping database over one address space (process addresses for MMIO,
/// bus addresses for DMA).
#[derive(Debug, Default)]
pub struct RangeTable {
    grants: BTreeMap<u64, Grant>,
    /// Last grant a check hit: `(start, end, rights)`.
    last: Cell<Option<(u64, u64, u32)>>,
}

impl Clone for RangeTable {
    fn clone(&self) -> Self {
        RangeTable {
            grants: self.grants.clone(),
            last: Cell::new(None),
        }
    }
}

impl RangeTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of grants.
    pub fn len(&self) -> usize {
        self.grants.len()
    }

    pub fn is_empty(&self) -> bool {
        self.grants.is_empty()
    }

    /// Grants `rights` on `[addr, addr + len)` (`fgft_map`).
    pub fn map(&mut self, addr: u64, len: u64, rights: u32) -> Result<(), Error> {
        self.insert(addr, len, rights, None)
    }

    /// Grants a range derived from the grant that contains `parent`
    /// (`fgft_map_derived`): revoked whenever that grant is; its rights are at
    /// most the parent's.
    pub fn map_derived(
        &mut self,
        parent: u64,
        addr: u64,
        len: u64,
        rights: u32,
    ) -> Result<(), Error> {
        let pstart = self
            .find(parent)
            .map(|g| (g.start, g.rights))
            .ok_or(Error::NoParent { addr: parent })?;
        if rights & !pstart.1 != 0 {
            return Err(Error::RightsExceedParent {
                addr,
                rights,
                parent: pstart.1,
            });
        }
        self.insert(addr, len, rights, Some(pstart.0))?;
        if let Some(p) = self.grants.get_mut(&pstart.0) {
            p.children.push(addr);
        }
        Ok(())
    }

    fn insert(
        &mut self,
        addr: u64,
        len: u64,
        rights: u32,
        parent: Option<u64>,
    ) -> Result<(), Error> {
        let end = addr.checked_add(len).ok_or(Error::BadRange { addr, len })?;
        if len == 0 || rights & !FGFT_RW != 0 {
            return Err(Error::BadRange { addr, len });
        }
        // The grant before `end` (if any) must end at or before `addr`.
        if let Some((_, g)) = self.grants.range(..end).next_back() {
            if g.end() > addr {
                return Err(Error::Overlap {
                    addr,
                    len,
                    other: g.start,
                });
            }
        }
        self.grants.insert(
            addr,
            Grant {
                start: addr,
                len,
                rights,
                parent,
                children: Vec::new(),
            },
        );
        Ok(())
    }

    /// The grant containing `addr`.
    pub fn find(&self, addr: u64) -> Option<&Grant> {
        let (_, g) = self.grants.range(..=addr).next_back()?;
        (addr < g.end()).then_some(g)
    }

    /// Revokes the grant starting at `addr` and everything derived from it,
    /// children before parents (`fgft_unmap`). Returns the number revoked.
    pub fn unmap(&mut self, addr: u64) -> usize {
        if !self.grants.contains_key(&addr) {
            return 0;
        }
        self.last.set(None);
        if let Some(p) = self.grants[&addr].parent {
            if let Some(pg) = self.grants.get_mut(&p) {
                pg.children.retain(|c| *c != addr);
            }
        }
        // Iterative post-order: push (node, expanded).
        let mut stack = vec![(addr, false)];
        let mut revoked = 0;
        while let Some((a, expanded)) = stack.pop() {
            if expanded {
                if self.grants.remove(&a).is_some() {
                    revoked += 1;
                }
                continue;
            }
            stack.push((a, true));
            if let Some(g) = self.grants.get(&a) {
                for c in g.children.iter().rev() {
                    stack.push((*c, false));
                }
            }
        }
        revoked
    }

    /// Revokes every grant.
    pub fn clear(&mut self) {
        self.grants.clear();
        self.last.set(None);
    }

    /// True when `[addr, addr + len)` lies inside one grant that has every
    /// right of `rights` (`fgft_check`).
    pub fn check(&self, addr: u64, len: u64, rights: u32) -> bool {
        let Some(end) = addr.checked_add(len) else {
            return false;
        };
        if let Some((s, e, r)) = self.last.get() {
            if addr >= s && end <= e && r & rights == rights {
                return true;
            }
        }
        match self.find(addr) {
            Some(g) if end <= g.end() && g.rights & rights == rights => {
                self.last.set(Some((g.start, g.end(), g.rights)));
                true
            }
            _ => false,
        }
    }

    /// Every grant, by address.
    pub fn grants(&self) -> impl Iterator<Item = &Grant> {
        self.grants.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_check_rights_and_bounds() {
        let mut t = RangeTable::new();
        t.map(0x1000, 0x10, FGFT_R).unwrap();
        t.map(0x1010, 8, FGFT_RW).unwrap();
        assert!(t.check(0x1000, 4, FGFT_R));
        assert!(t.check(0x100c, 4, FGFT_R));
        assert!(!t.check(0x100c, 8, FGFT_R), "straddles two grants");
        assert!(!t.check(0x1000, 4, FGFT_W));
        assert!(t.check(0x1010, 8, FGFT_RW));
        assert!(!t.check(0x1018, 1, FGFT_R));
        assert!(!t.check(0xfff, 1, FGFT_R));
        assert!(!t.check(u64::MAX, 2, FGFT_R));
    }

    #[test]
    fn overlaps_and_bad_ranges_are_refused() {
        let mut t = RangeTable::new();
        t.map(0x100, 0x100, FGFT_RW).unwrap();
        assert!(matches!(
            t.map(0x80, 0x81, FGFT_R),
            Err(Error::Overlap { .. })
        ));
        assert!(matches!(
            t.map(0x1ff, 1, FGFT_R),
            Err(Error::Overlap { .. })
        ));
        assert!(matches!(
            t.map(0x300, 0, FGFT_R),
            Err(Error::BadRange { .. })
        ));
        assert!(matches!(
            t.map(u64::MAX, 2, FGFT_R),
            Err(Error::BadRange { .. })
        ));
        t.map(0x200, 1, FGFT_R).unwrap();
        t.map(0x80, 0x80, FGFT_R).unwrap();
    }

    #[test]
    fn derived_grants_are_revoked_post_order() {
        let mut t = RangeTable::new();
        t.map(0x1000, 0x100, FGFT_RW).unwrap();
        t.map_derived(0x1010, 0x2000, 0x10, FGFT_R).unwrap();
        t.map_derived(0x2004, 0x3000, 0x10, FGFT_R).unwrap();
        t.map_derived(0x1000, 0x4000, 0x10, FGFT_RW).unwrap();
        t.map(0x5000, 0x10, FGFT_R).unwrap();
        assert!(matches!(
            t.map_derived(0x2000, 0x6000, 4, FGFT_W),
            Err(Error::RightsExceedParent { .. })
        ));
        assert!(matches!(
            t.map_derived(0x9999, 0x6000, 4, FGFT_R),
            Err(Error::NoParent { .. })
        ));
        assert!(t.check(0x3000, 4, FGFT_R));
        assert_eq!(t.unmap(0x2000), 2);
        assert!(!t.check(0x3000, 4, FGFT_R) && !t.check(0x2000, 4, FGFT_R));
        assert!(t.check(0x4000, 4, FGFT_R));
        assert_eq!(t.unmap(0x1000), 2);
        assert_eq!(t.len(), 1);
        assert_eq!(t.unmap(0x1000), 0);
    }

    #[test]
    fn deep_chains_revoke_without_recursion() {
        let mut t = RangeTable::new();
        t.map(0, 1, FGFT_RW).unwrap();
        for i in 1..50_000u64 {
            t.map_derived(i - 1, i, 1, FGFT_RW).unwrap();
        }
        assert_eq!(t.unmap(0), 50_000);
        assert!(t.is_empty());
    }

    #[test]
    fn last_hit_cache_is_dropped_on_unmap() {
        let mut t = RangeTable::new();
        t.map(0x10, 0x10, FGFT_RW).unwrap();
        assert!(t.check(0x10, 4, FGFT_W));
        t.unmap(0x10);
        assert!(!t.check(0x10, 4, FGFT_W));
    }
}

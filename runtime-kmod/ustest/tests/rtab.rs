//! Range table: unit tests and a property test against a naive model.

use fgft_rt_ustest::{mem_fail_in, mem_live, preempt_points, DsError, Rtab, PIECEWISE, R, RW, W};
use proptest::prelude::*;

#[test]
fn map_check_and_rights() {
    let mut t = Rtab::new();
    let g = t.map(0x1000, 0x100, R).unwrap();
    assert!(t.check(0x1000, 8, R));
    assert!(t.check(0x10f8, 8, R));
    assert!(!t.check(0x10f9, 8, R), "crosses the end");
    assert!(!t.check(0xfff, 2, R), "starts before");
    assert!(!t.check(0x1000, 8, W), "no write right");
    assert_eq!(t.check_slow(0x1010, 4, R), g);
    assert_eq!(t.validate(), 0);
}

#[test]
fn invalid_arguments() {
    let mut t = Rtab::new();
    assert_eq!(t.map(0x1000, 0, R), Err(DsError::Inval));
    assert_eq!(t.map(0x1000, 8, 0), Err(DsError::Inval));
    assert_eq!(t.map(0x1000, 8, 4), Err(DsError::Inval), "no-log alone");
    assert_eq!(t.map(0x1000, 8, 8), Err(DsError::Inval), "unknown bit");
    t.map(0x9000, 8, R | 4).unwrap();
    assert!(t.check(0x9000, 8, R), "no-log grants still allow");
    assert_eq!(
        t.map_derived(0x9000, 0xa000, 8, W | 4),
        Err(DsError::Perm),
        "no-log is not a right on its own"
    );
    t.unmap(0x9000, 4).unwrap();
    assert_eq!(t.map(usize::MAX - 3, 8, R), Err(DsError::Inval), "wraps");
    assert_eq!(t.map_derived(0x1000, 0x2000, 8, R), Err(DsError::NoEnt));
    t.map(0x1000, 8, R).unwrap();
    assert_eq!(t.map_derived(0x1000, 0x2000, 8, W), Err(DsError::Perm));
    assert!(!t.check(usize::MAX - 1, 4, R), "wrapping access refused");
    assert_eq!(t.unmap(0x3000, 4), Err(DsError::NoEnt));
    assert_eq!(t.validate(), 0);
}

/// A body that alternates between a few objects (a frame, its ring, a
/// descriptor, the private area) hits the windows kept behind the last hit:
/// no lookup after the first round; a revoked grant leaves them too.
#[test]
fn recent_windows_serve_alternating_objects() {
    let mut t = Rtab::new();
    let objs = [0x1000usize, 0x5000, 0x9000, 0xd000];
    for &o in &objs {
        t.map(o, 0x100, RW).unwrap();
    }
    for &o in &objs {
        assert!(t.check(o + 8, 8, R));
    }
    let slow = t.slow_lookups();
    for round in 0..4 {
        for &o in objs.iter().rev().chain(objs.iter()) {
            assert!(t.check(o + 0x10 + round, 4, W));
        }
    }
    assert_eq!(t.slow_lookups(), slow, "four objects fit the windows");
    // A fifth object pushes the oldest window out: one lookup for it.
    t.map(0x20000, 0x40, R).unwrap();
    assert!(t.check(0x20000, 4, R));
    assert!(
        !t.check(0x20000, 4, W),
        "a read-only window allows no store"
    );
    // Revoking an object that sits in a window: refused, not served.
    assert_eq!(t.unmap(0x9000, 8), Ok(1));
    assert!(
        !t.check(0x9010, 4, R),
        "a revoked grant must not stay cached"
    );
    assert!(t.check(0xd010, 4, R));
    assert_eq!(t.validate(), 0);
}

#[test]
fn last_hit_is_invalidated_by_revoke() {
    let mut t = Rtab::new();
    t.map(0x1000, 0x40, RW).unwrap();
    assert!(t.check(0x1008, 8, W));
    let slow = t.slow_lookups();
    assert!(t.check(0x1010, 8, W));
    assert_eq!(
        t.slow_lookups(),
        slow,
        "second access hits the last-hit window"
    );
    assert_eq!(t.unmap(0x1000, 8), Ok(1));
    assert!(
        !t.check(0x1010, 8, W),
        "a revoked grant must not stay cached"
    );
}

#[test]
fn piecewise_cover_and_overlap() {
    let mut t = Rtab::new();
    t.map(0x1000, 0x10, RW).unwrap();
    t.map(0x1010, 0x10, RW).unwrap();
    assert_eq!(t.check_slow(0x1008, 0x10, W), PIECEWISE);
    assert!(t.check(0x1008, 0x10, W));
    assert!(!t.check(0x1008, 0x20, W), "runs past the second grant");
    // A big read-only grant with a small writable one inside it.
    let mut t = Rtab::new();
    t.map(0x1000, 0x1000, R).unwrap();
    t.map(0x1800, 0x10, RW).unwrap();
    assert!(t.check(0x1804, 4, W));
    assert!(!t.check(0x1004, 4, W));
    assert!(t.check(0x1fff, 1, R));
    // Overlapping grants reached only through the running maximum.
    let mut t = Rtab::new();
    t.map(0x0, 0x10000, R).unwrap();
    for i in 1..100 {
        t.map(i * 0x10, 4, RW).unwrap();
    }
    assert!(
        t.check(0xfff0, 8, R),
        "found behind 99 later-starting grants"
    );
    assert!(!t.check(0xfff0, 8, W));
    assert_eq!(t.validate(), 0);
}

#[test]
fn derived_rights_and_recursive_revoke() {
    let mut t = Rtab::new();
    let a = t.map(0x1000, 0x100, RW).unwrap();
    let b = t.map_derived(0x1000, 0x2000, 0x100, RW).unwrap();
    let c = t.map_derived(0x2010, 0x3000, 0x100, R).unwrap();
    let d = t.map_derived(0x1000, 0x4000, 0x100, RW).unwrap();
    assert_eq!(t.grant(b).unwrap().parent, Some(a));
    assert_eq!(t.grant(c).unwrap().parent, Some(b));
    assert_eq!(t.grant(d).unwrap().parent, Some(a));
    assert!(
        !t.check(0x3000, 1, W),
        "derived rights are cut to the request"
    );
    let e = t.map(0x5000, 0x10, R).unwrap();
    assert_eq!(
        t.map_derived(0x5000, 0x6000, 0x10, RW)
            .map(|i| t.grant(i).unwrap().rights),
        Ok(R)
    );
    assert_eq!(t.unmap(0x2000, 4), Ok(2), "b and c");
    assert!(!t.check(0x3000, 1, R));
    assert!(t.check(0x4000, 1, W));
    assert_eq!(t.unmap(0x1000, 4), Ok(2), "a and d");
    assert_eq!(t.nlive(), 2);
    assert!(t.grant(e).is_ok());
    assert_eq!(t.validate(), 0);
}

#[test]
fn unmap_picks_the_latest_grant_at_an_address() {
    let mut t = Rtab::new();
    t.map(0x1000, 0x10, R).unwrap();
    t.map(0x1000, 0x10, RW).unwrap();
    assert!(t.check(0x1000, 4, W));
    assert_eq!(t.unmap(0x1000, 1), Ok(1));
    assert!(!t.check(0x1000, 4, W));
    assert!(t.check(0x1000, 4, R));
}

#[test]
fn revoke_steps_are_bounded_and_post_order() {
    // A tree: one root, 5 children with 5 children each, and a chain of 20.
    let mut t = Rtab::new();
    t.map(0, 16, RW).unwrap();
    let mut total = 1;
    for i in 0..5 {
        let ci = 0x1000 * (i + 1);
        t.map_derived(0, ci, 16, RW).unwrap();
        total += 1;
        for j in 0..5 {
            t.map_derived(ci, ci + 0x100 * (j + 1), 16, RW).unwrap();
            total += 1;
        }
    }
    let mut at = 0x1000;
    for k in 0..20 {
        let next = 0x100000 + k * 0x100;
        t.map_derived(at, next, 16, R).unwrap();
        at = next;
        total += 1;
    }
    t.map(0x900000, 16, RW).unwrap();
    let root = t.find_start(0).unwrap();
    let mut rv = t.revoke_begin(root).unwrap();
    let mut steps = 0;
    loop {
        let before = t.nlive();
        let done = t.revoke_step(&mut rv, 3);
        steps += 1;
        let removed = before - t.nlive();
        assert!(removed <= 3, "a step removed {removed} grants");
        // validate() fails on any live grant whose parent is gone, so this
        // proves children always go before their parent.
        assert_eq!(t.validate(), 0, "tree invalid after step {steps}");
        if done {
            break;
        }
        assert_eq!(removed, 3);
    }
    assert_eq!(rv.removed, total);
    assert_eq!(steps, (total as usize).div_ceil(3));
    assert_eq!(t.nlive(), 1, "the unrelated grant survives");
    assert!(t.check(0x900000, 16, W));
}

#[test]
fn unmap_takes_preemption_points_between_batches() {
    let mut t = Rtab::new();
    t.map(0, 8, RW).unwrap();
    for i in 1..=1000usize {
        t.map_derived(0, i * 16, 8, RW).unwrap();
    }
    let p0 = preempt_points();
    assert_eq!(t.unmap(0, 64), Ok(1001));
    assert_eq!(
        preempt_points() - p0,
        1001 / 64,
        "one point between batches"
    );
    assert_eq!(t.validate(), 0);
    assert_eq!(t.nlive(), 0);
}

#[test]
fn slots_are_reused_after_revoke() {
    let base = mem_live();
    let mut t = Rtab::new();
    for round in 0..50 {
        for i in 0..100usize {
            t.map(i * 32, 16, RW).unwrap();
        }
        for i in 0..100usize {
            assert_eq!(t.unmap(i * 32, 8), Ok(1), "round {round}");
        }
        assert_eq!(t.validate(), 0);
    }
    let held = mem_live() - base;
    // The grants, the index and the visited set.
    assert!(held <= 3, "arrays only: {held} live allocations");
    t.trim(16);
    assert_eq!(mem_live(), base, "trim frees grown arrays");
}

#[test]
fn allocation_failure_leaves_a_valid_table() {
    let mut t = Rtab::new();
    for fail in 0..4 {
        for i in 0..40usize {
            let _ = t.map(i * 64, 16, RW);
        }
        mem_fail_in(fail);
        let r = t.map(0x100000 + fail as usize, 16, RW);
        let r2 = t.map(0x200000 + fail as usize, 16, RW);
        mem_fail_in(-1);
        assert!(r.is_ok() || r == Err(DsError::NoMem));
        assert!(r2.is_ok() || r2 == Err(DsError::NoMem));
        assert_eq!(t.validate(), 0);
        t.reset();
        assert_eq!(t.nlive(), 0);
    }
    // Growth failure itself: a fresh table cannot allocate its first array.
    let mut t = Rtab::new();
    mem_fail_in(0);
    assert_eq!(t.map(0x1000, 8, R), Err(DsError::NoMem));
    mem_fail_in(-1);
    assert_eq!(t.validate(), 0);
    assert_eq!(t.map(0x1000, 8, R).map(|_| ()), Ok(()));
}

#[test]
fn no_leak_after_destroy() {
    let base = mem_live();
    {
        let mut t = Rtab::new();
        for i in 0..500usize {
            t.map(i * 8, 8, R).unwrap();
        }
    }
    assert_eq!(mem_live(), base);
}

// ---- property test against a naive model ----

#[derive(Debug, Clone)]
enum Op {
    Map(usize, usize, u32),
    Derive(usize, usize, usize, u32),
    Unmap(usize, u32),
    Check(usize, usize, u32),
    Find(usize),
    Reset,
}

#[derive(Debug, Clone)]
struct MGrant {
    start: usize,
    end: usize,
    rights: u32,
    seq: u64,
    parent: Option<usize>,
    live: bool,
}

#[derive(Default)]
struct Model {
    g: Vec<MGrant>,
    seq: u64,
}

impl Model {
    fn add(
        &mut self,
        start: usize,
        len: usize,
        rights: u32,
        parent: Option<usize>,
    ) -> Result<(), DsError> {
        if len == 0 || rights == 0 || rights & !RW != 0 {
            return Err(DsError::Inval);
        }
        self.seq += 1;
        self.g.push(MGrant {
            start,
            end: start + len,
            rights,
            seq: self.seq,
            parent,
            live: true,
        });
        Ok(())
    }
    fn latest(&self, f: impl Fn(&MGrant) -> bool) -> Option<usize> {
        (0..self.g.len())
            .filter(|&i| self.g[i].live && f(&self.g[i]))
            .max_by_key(|&i| self.g[i].seq)
    }
    fn derive(&mut self, p: usize, start: usize, len: usize, rights: u32) -> Result<(), DsError> {
        if rights == 0 || rights & !RW != 0 {
            return Err(DsError::Inval);
        }
        let Some(parent) = self.latest(|g| g.start <= p && p < g.end) else {
            return Err(DsError::NoEnt);
        };
        let r = rights & self.g[parent].rights;
        if r == 0 {
            return Err(DsError::Perm);
        }
        self.add(start, len, r, Some(parent))
    }
    fn unmap(&mut self, addr: usize) -> Result<i32, DsError> {
        let Some(root) = self.latest(|g| g.start == addr) else {
            return Err(DsError::NoEnt);
        };
        let mut kill = vec![root];
        let mut n = 0;
        while let Some(i) = kill.pop() {
            self.g[i].live = false;
            n += 1;
            for j in 0..self.g.len() {
                if self.g[j].live && self.g[j].parent == Some(i) {
                    kill.push(j);
                }
            }
        }
        Ok(n)
    }
    fn check(&self, a: usize, len: usize, r: u32) -> bool {
        (a..a + len).all(|b| {
            self.g
                .iter()
                .any(|g| g.live && g.start <= b && b < g.end && g.rights & r == r)
        })
    }
    fn live(&self) -> u32 {
        self.g.iter().filter(|g| g.live).count() as u32
    }
}

fn op() -> impl Strategy<Value = Op> {
    let addr = 0usize..256;
    let len = 0usize..40;
    let rights = prop_oneof![Just(R), Just(W), Just(RW), Just(0u32), Just(4u32)];
    let crights = prop_oneof![Just(R), Just(W), Just(RW)];
    prop_oneof![
        4 => (addr.clone(), len.clone(), rights.clone()).prop_map(|(a, l, r)| Op::Map(a, l, r)),
        4 => (addr.clone(), addr.clone(), len.clone(), rights).prop_map(|(p, a, l, r)| Op::Derive(p, a, l, r)),
        2 => (addr.clone(), 1u32..5).prop_map(|(a, b)| Op::Unmap(a, b)),
        6 => (addr.clone(), 1usize..24, crights).prop_map(|(a, l, r)| Op::Check(a, l, r)),
        2 => addr.prop_map(Op::Find),
        1 => Just(Op::Reset),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn rtab_matches_model(ops in proptest::collection::vec(op(), 1..120)) {
        let base = mem_live();
        {
            let mut t = Rtab::new();
            let mut m = Model::default();
            for (i, op) in ops.iter().enumerate() {
                match *op {
                    Op::Map(a, l, r) => {
                        prop_assert_eq!(t.map(a, l, r).map(|_| ()), m.add(a, l, r, None), "op {} {:?}", i, op);
                    }
                    Op::Derive(p, a, l, r) => {
                        prop_assert_eq!(t.map_derived(p, a, l, r).map(|_| ()), m.derive(p, a, l, r), "op {} {:?}", i, op);
                    }
                    Op::Unmap(a, b) => {
                        prop_assert_eq!(t.unmap(a, b), m.unmap(a), "op {} {:?}", i, op);
                    }
                    Op::Check(a, l, r) => {
                        prop_assert_eq!(t.check(a, l, r), m.check(a, l, r), "op {} {:?}", i, op);
                    }
                    Op::Find(a) => {
                        prop_assert_eq!(t.find_start(a).is_ok(), m.latest(|g| g.start == a).is_some(), "op {} {:?}", i, op);
                    }
                    Op::Reset => {
                        t.reset();
                        m.g.iter_mut().for_each(|g| g.live = false);
                    }
                }
                // Validating settles the index: every few operations only,
                // so that lookups also meet grants not yet sorted in.
                if i % 5 == 4 || i + 1 == ops.len() {
                    prop_assert_eq!(t.validate(), 0, "invariants after op {} {:?}", i, op);
                }
                prop_assert_eq!(t.nlive(), m.live());
            }
        }
        prop_assert_eq!(mem_live(), base, "table memory freed");
    }
}

/// A batch of grants in no order (an I/O path's in-place walk) is sorted
/// into the index at the first lookup, merged with what was there.
#[test]
fn a_batch_in_no_order_is_found_after_one_settle() {
    let mut t = Rtab::new();
    // Inside a page of the batch's, between its grants.
    let base = 0x1000 + 100 * 4096 + 1024;
    // Some grants in order first: the sorted part.
    for i in 0..40usize {
        t.map(base + i * 64, 48, RW).unwrap();
    }
    assert!(t.check(base, 8, RW));
    // Then 300 at scattered addresses, some before and some inside the
    // sorted part, some starting where another does.
    let addr = |i: usize| 0x1000 + (i * 7919 % 300) * 4096;
    for i in 0..300usize {
        t.map(addr(i), 100 + i % 7, if i % 3 == 0 { R } else { RW })
            .unwrap();
    }
    t.map(base + 5 * 64, 8, R).unwrap();
    for i in 0..300usize {
        assert!(t.find_start(addr(i)).is_ok(), "grant {i}");
        assert!(t.check(addr(i) + 99, 1, R), "grant {i}");
        assert_eq!(t.check(addr(i), 1, W), i % 3 != 0, "grant {i}");
        assert!(!t.check(addr(i) + 107, 1, R), "past grant {i}");
    }
    assert!(t.check(base + 39 * 64 + 40, 8, RW));
    assert_eq!(t.validate(), 0);
    assert_eq!(t.unmap(base + 5 * 64, 8), Ok(1));
    assert!(t.find_start(base + 5 * 64).is_ok(), "the older grant there");
    assert_eq!(t.validate(), 0);
}

//! Object tracker: unit tests and a property test against a model.

use std::collections::BTreeMap;

use fgft_rt_ustest::{mem_fail_in, mem_live, DsError, ObjTrack};
use proptest::prelude::*;

#[test]
fn copy_find_orig_and_sizes() {
    let base = mem_live();
    {
        let mut ot = ObjTrack::new();
        let c = ot.copy(0xffff_8880_0000_1000, 64, 96).unwrap();
        // SAFETY: c is a 96-byte copy.
        unsafe {
            assert_eq!(ObjTrack::peek(c, 95), 0, "copies are zeroed");
            ObjTrack::poke(c, 95, 7);
        }
        assert_eq!(
            ot.copy(0xffff_8880_0000_1000, 64, 96),
            Some(c),
            "same copy again"
        );
        assert_eq!(
            ot.copy(0xffff_8880_0000_1000, 64, 32),
            Some(c),
            "smaller request fits"
        );
        assert_eq!(
            ot.copy(0xffff_8880_0000_1000, 64, 200),
            None,
            "cannot grow in place"
        );
        assert_eq!(ot.find(0xffff_8880_0000_1000), Some(c));
        assert_eq!(ot.orig(c), Some(0xffff_8880_0000_1000));
        assert_eq!(ot.find(0xffff_8880_0000_1008), None, "find is exact");
        assert_eq!(ot.to_copy(0xffff_8880_0000_1008), Some(c + 8));
        assert_eq!(ot.to_orig(c + 63), Some(0xffff_8880_0000_1000 + 63));
        assert_eq!(ot.to_orig(c + 64), None, "past the kernel object's size");
        assert_eq!(ot.to_copy(0xffff_8880_0000_1000 + 64), None);
        assert_eq!(ot.copy(0, 8, 8), None, "NULL is never tracked");
        assert_eq!(
            mem_live() - base,
            1 + 3,
            "one arena chunk, the objects array and two indexes"
        );
        let d = ot.copy(0xffff_8880_0000_2000, 8, 8).unwrap();
        assert_eq!(d, c + 128, "the next copy follows in the chunk, aligned");
        assert_eq!(mem_live() - base, 1 + 3, "no allocation for it");
        let big = ot.copy(0xffff_8880_0001_0000, 20000, 20000).unwrap();
        assert_eq!(mem_live() - base, 2 + 3, "a chunk of its own");
        // SAFETY: big is a 20000-byte copy.
        unsafe {
            assert_eq!(ObjTrack::peek(big, 19999), 0);
        }
        ot.reset();
        assert_eq!(ot.find(0xffff_8880_0000_1000), None);
        assert_eq!(
            mem_live() - base,
            1 + 3,
            "the big chunk freed at reset, one usual chunk kept"
        );
        let e = ot.copy(0xffff_8880_0000_3000, 96, 96).unwrap();
        assert_eq!(e, c, "the kept chunk is reused from its start");
        // SAFETY: e is a 96-byte copy over the old one.
        unsafe {
            assert_eq!(ObjTrack::peek(e, 95), 0, "reused memory is zeroed");
        }
    }
    assert_eq!(mem_live(), base);
}

#[test]
fn nested_objects_pick_the_smallest() {
    let mut ot = ObjTrack::new();
    let outer = ot.copy(0x10000, 0x100, 0x100).unwrap();
    let member = ot.copy(0x10040, 0x10, 0x10).unwrap();
    assert_eq!(ot.to_copy(0x10044), Some(member + 4));
    assert_eq!(ot.to_copy(0x10034), Some(outer + 0x34));
    assert_eq!(ot.to_copy(0x10050), Some(outer + 0x50));
}

#[test]
fn caller_owned_copies() {
    let base = mem_live();
    let mut ot = ObjTrack::new();
    let mut buf = [0u8; 16];
    let b = buf.as_mut_ptr() as usize;
    ot.add(0x5000, 16, b, 16).unwrap();
    assert_eq!(ot.add(0x5000, 16, b, 16), Err(DsError::Exist));
    assert_eq!(ot.add(0, 16, b, 16), Err(DsError::Inval));
    assert_eq!(ot.find(0x5000), Some(b));
    ot.reset();
    drop(ot);
    buf[0] = 1;
    assert_eq!(buf[0], 1, "not freed by the tracker");
    assert_eq!(mem_live(), base);
}

#[test]
fn allocation_failure() {
    let base = mem_live();
    {
        let mut ot = ObjTrack::new();
        for n in 0..6 {
            mem_fail_in(n);
            let r = ot.copy(0x1000 * (n as usize + 1), 8, 8);
            mem_fail_in(-1);
            if let Some(c) = r {
                assert_eq!(ot.find(0x1000 * (n as usize + 1)), Some(c));
            } else {
                assert_eq!(ot.find(0x1000 * (n as usize + 1)), None);
            }
        }
        ot.reset();
    }
    assert_eq!(mem_live(), base, "nothing leaked on failure paths");
}

#[derive(Debug, Clone)]
enum Op {
    Copy(usize, usize, usize),
    Find(usize),
    ToCopy(usize),
    Reset,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn tracker_matches_model(ops in proptest::collection::vec(prop_oneof![
        3 => (0usize..64, 1usize..64, 1usize..64).prop_map(|(k, s, c)| Op::Copy(k, s, c)),
        2 => (0usize..64).prop_map(Op::Find),
        3 => (0usize..8192).prop_map(Op::ToCopy),
        1 => Just(Op::Reset),
    ], 1..100)) {
        let base = mem_live();
        {
            let mut ot = ObjTrack::new();
            // kernel address -> (ksize, copy, csize); objects never overlap here.
            let mut m: BTreeMap<usize, (usize, usize, usize)> = BTreeMap::new();
            for op in &ops {
                match *op {
                    Op::Copy(k, ks, cs) => {
                        let ka = 0x1000 + k * 128;
                        let got = ot.copy(ka, ks, cs);
                        match m.get(&ka) {
                            Some(&(_, c, mcs)) => prop_assert_eq!(got, (cs <= mcs).then_some(c)),
                            None => {
                                let c = got.expect("allocation");
                                // SAFETY: c is a fresh copy of cs bytes.
                                unsafe { prop_assert_eq!(ObjTrack::peek(c, cs - 1), 0) };
                                m.insert(ka, (ks, c, cs));
                            }
                        }
                    }
                    Op::Find(k) => {
                        let ka = 0x1000 + k * 128;
                        prop_assert_eq!(ot.find(ka), m.get(&ka).map(|e| e.1));
                        if let Some(&(_, c, _)) = m.get(&ka) {
                            prop_assert_eq!(ot.orig(c), Some(ka));
                        }
                    }
                    Op::ToCopy(p) => {
                        let want = m.range(..=p).next_back().and_then(|(&ka, &(ks, c, cs))| {
                            let off = p - ka;
                            (off < ks && off < cs).then_some(c + off)
                        });
                        prop_assert_eq!(ot.to_copy(p), want);
                        if let Some(cp) = want {
                            prop_assert_eq!(ot.to_orig(cp), Some(p));
                        }
                    }
                    Op::Reset => {
                        ot.reset();
                        m.clear();
                    }
                }
            }
        }
        prop_assert_eq!(mem_live(), base);
    }
}

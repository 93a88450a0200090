//! Undo log: unit tests and a property test against a model.

use fgft_rt_ustest::{
    mem_live, DsError, Event, UndoLog, LOCK_MUTEX, LOCK_SPIN, LOCK_SPIN_BH, LOCK_SPIN_IRQSAVE,
    REC_DEFER, REC_UNDO, REC_UNDO_LATE,
};
use proptest::prelude::*;

fn call(id: u64) -> Event {
    Event::Call(id, id + 1, id + 2, id + 3)
}

fn args(id: u64) -> [u64; 4] {
    [id, id + 1, id + 2, id + 3]
}

#[test]
fn abort_runs_lifo_and_releases_locks() {
    let mut l = UndoLog::new();
    l.lock(LOCK_SPIN_IRQSAVE, 0xa000, 0x246).unwrap();
    l.push(REC_UNDO, args(10)).unwrap();
    l.push(REC_DEFER, args(20)).unwrap();
    l.lock(LOCK_MUTEX, 0xb000, 0).unwrap();
    l.push(REC_UNDO, args(30)).unwrap();
    let (ev, st) = l.finish(true);
    assert_eq!(
        ev,
        vec![
            call(30),
            Event::Unlock(LOCK_MUTEX, 0xb000, 0),
            call(20),
            call(10),
            Event::Unlock(LOCK_SPIN_IRQSAVE, 0xa000, 0x246),
        ]
    );
    assert_eq!(st.ran_undo, 2);
    assert_eq!(st.ran_defer, 1);
    assert_eq!(st.released_locks, 2);
    assert_eq!(st.missing_unlocks, 2);
    assert_eq!(st.held_locks, 0);
}

#[test]
fn a_late_undo_runs_after_the_locks_are_released() {
    // iput() of a new inode calls back into the file system, which takes
    // the lock the transaction holds (two-phase): it runs last.
    let mut l = UndoLog::new();
    l.lock(LOCK_SPIN, 0xa000, 0).unwrap();
    l.push(REC_UNDO_LATE, args(10)).unwrap();
    l.push(REC_UNDO, args(20)).unwrap();
    l.unlock(LOCK_SPIN, 0xa000).unwrap();
    let (ev, st) = l.finish(true);
    assert_eq!(
        ev,
        vec![call(20), Event::Unlock(LOCK_SPIN, 0xa000, 0), call(10)]
    );
    assert_eq!(st.ran_undo, 2);
    // A commit runs no undo, late or not.
    l.lock(LOCK_SPIN, 0xa000, 0).unwrap();
    l.push(REC_UNDO_LATE, args(10)).unwrap();
    l.unlock(LOCK_SPIN, 0xa000).unwrap();
    let (ev, _) = l.finish(false);
    assert_eq!(ev, vec![Event::Unlock(LOCK_SPIN, 0xa000, 0)]);
}

#[test]
fn commit_skips_undo_but_not_defer_or_locks() {
    let mut l = UndoLog::new();
    l.lock(LOCK_SPIN, 0xa000, 0).unwrap();
    l.push(REC_UNDO, args(10)).unwrap();
    l.push(REC_DEFER, args(20)).unwrap();
    l.unlock(LOCK_SPIN, 0xa000).unwrap();
    let (ev, st) = l.finish(false);
    // The locks go first: a deferred call sleeps with none held.
    assert_eq!(ev, vec![Event::Unlock(LOCK_SPIN, 0xa000, 0), call(20)]);
    assert_eq!(st.missing_unlocks, 0, "the body unlocked it");
    // The log is empty afterwards.
    let (ev, _) = l.finish(true);
    assert!(ev.is_empty());
}

#[test]
fn commit_runs_deferred_calls_in_the_bodys_order_after_the_locks() {
    // sync_dirty_buffer(bh) after spin_unlock(), then brelse(bh): the sync
    // runs first, with no spinlock held.  An abort still runs its records
    // newest first, each with the locks held when it was made.
    let mut l = UndoLog::new();
    l.lock(LOCK_SPIN, 0xa000, 0).unwrap();
    l.push(REC_DEFER, args(10)).unwrap();
    l.unlock(LOCK_SPIN, 0xa000).unwrap();
    l.push(REC_DEFER, args(20)).unwrap();
    l.push(REC_DEFER, args(30)).unwrap();
    let (ev, st) = l.finish(false);
    assert_eq!(
        ev,
        vec![
            Event::Unlock(LOCK_SPIN, 0xa000, 0),
            call(10),
            call(20),
            call(30)
        ]
    );
    assert_eq!(st.ran_defer, 3);
    l.lock(LOCK_SPIN, 0xa000, 0).unwrap();
    l.push(REC_DEFER, args(10)).unwrap();
    l.unlock(LOCK_SPIN, 0xa000).unwrap();
    l.push(REC_DEFER, args(20)).unwrap();
    let (ev, _) = l.finish(true);
    assert_eq!(
        ev,
        vec![call(20), call(10), Event::Unlock(LOCK_SPIN, 0xa000, 0)]
    );
}

#[test]
fn two_phase_locking() {
    let mut l = UndoLog::new();
    l.lock(LOCK_SPIN_BH, 0xa000, 0).unwrap();
    // A second acquire of a held lock would self-deadlock: refused.
    assert_eq!(l.lock(LOCK_SPIN_BH, 0xa000, 0), Err(DsError::Deadlk));
    // Unlock is deferred; re-locking keeps holding it (no second acquire).
    l.unlock(LOCK_SPIN_BH, 0xa000).unwrap();
    l.lock(LOCK_SPIN_BH, 0xa000, 0).unwrap();
    l.unlock(LOCK_SPIN_BH, 0xa000).unwrap();
    // A lock the transaction never took: its release waits for the end.
    l.unlock(LOCK_SPIN, 0xc000).unwrap();
    let (ev, st) = l.finish(true);
    assert_eq!(
        ev,
        vec![
            Event::Unlock(LOCK_SPIN, 0xc000, 0),
            Event::Unlock(LOCK_SPIN_BH, 0xa000, 0)
        ]
    );
    assert_eq!(st.released_locks, 2);
}

#[test]
fn null_actions_refused() {
    let mut l = UndoLog::new();
    assert_eq!(l.push_null(REC_UNDO), Err(DsError::Inval));
    assert_eq!(l.push(9, args(1)), Err(DsError::Inval));
}

#[test]
fn memory_is_bounded() {
    let base = mem_live();
    {
        let mut l = UndoLog::new();
        for round in 0..20u64 {
            for i in 0..300 {
                l.push(REC_UNDO, args(round * 1000 + i)).unwrap();
            }
            let (ev, _) = l.finish(round % 2 == 0);
            assert_eq!(ev.len(), if round % 2 == 0 { 300 } else { 0 });
        }
        assert_eq!(mem_live() - base, 1, "one array, reused");
    }
    assert_eq!(mem_live(), base);
}

#[derive(Debug, Clone)]
enum Op {
    Undo,
    Defer,
    Lock(u8),
    Unlock(u8),
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn log_matches_model(ops in proptest::collection::vec(prop_oneof![
        Just(Op::Undo),
        Just(Op::Defer),
        // More locks than the log lists by index (FGFT_LOCKIDX, 8): its
        // lookups go through every record then.
        (0u8..12).prop_map(Op::Lock),
        (0u8..12).prop_map(Op::Unlock),
    ], 0..80), abort in any::<bool>()) {
        let mut l = UndoLog::new();
        // Model: a list of (record, held) in push order.
        #[derive(Debug)]
        enum M { Call(u64, bool), Lock(usize, bool, bool), Foreign(usize) }
        let mut m: Vec<M> = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let id = i as u64 * 10;
            match *op {
                Op::Undo => { l.push(REC_UNDO, args(id)).unwrap(); m.push(M::Call(id, true)); }
                Op::Defer => { l.push(REC_DEFER, args(id)).unwrap(); m.push(M::Call(id, false)); }
                Op::Lock(k) => {
                    let lk = 0x1000 * (k as usize + 1);
                    let held = m.iter_mut().rev().find_map(|r| match r {
                        M::Lock(x, pend, _) if *x == lk => Some(pend),
                        _ => None,
                    });
                    match held {
                        Some(pend) if *pend => { *pend = false; prop_assert_eq!(l.lock(LOCK_SPIN, lk, 0), Ok(())); }
                        Some(_) => prop_assert_eq!(l.lock(LOCK_SPIN, lk, 0), Err(DsError::Deadlk)),
                        None => { l.lock(LOCK_SPIN, lk, 0).unwrap(); m.push(M::Lock(lk, false, true)); }
                    }
                }
                Op::Unlock(k) => {
                    let lk = 0x1000 * (k as usize + 1);
                    l.unlock(LOCK_SPIN, lk).unwrap();
                    let held = m.iter_mut().rev().find_map(|r| match r {
                        M::Lock(x, pend, _) if *x == lk => Some(pend),
                        _ => None,
                    });
                    match held {
                        Some(pend) => *pend = true,
                        None => m.push(M::Foreign(lk)),
                    }
                }
            }
        }
        let mut want = Vec::new();
        for r in m.iter().rev() {
            match *r {
                M::Call(id, undo) => if abort { want.push(call(id)) } else { let _ = undo; },
                M::Lock(lk, _, _) | M::Foreign(lk) => want.push(Event::Unlock(LOCK_SPIN, lk, 0)),
            }
        }
        // A commit: the deferred calls after the locks, oldest first.
        if !abort {
            for r in m.iter() {
                if let M::Call(id, false) = *r {
                    want.push(call(id));
                }
            }
        }
        let (ev, st) = l.finish(abort);
        prop_assert_eq!(ev, want);
        prop_assert_eq!(st.held_locks, 0);
        let _ = m.iter().filter(|r| matches!(r, M::Lock(_, _, true))).count();
    }
}

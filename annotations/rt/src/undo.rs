//! The undo log: compensations run last-in first-out on abort, deferred
//! actions run at the end either way (`fgft_undo_push`, `fgft_defer_push`),
//! and the record of MMIO writes a transaction made.

/// A compensation or deferred action.
pub type Action = Box<dyn FnOnce()>;

#[derive(Default)]
pub struct UndoLog {
    undo: Vec<Action>,
    defer: Vec<Action>,
}

impl UndoLog {
    pub fn push_undo(&mut self, f: Action) {
        self.undo.push(f);
    }

    pub fn push_defer(&mut self, f: Action) {
        self.defer.push(f);
    }

    pub fn len(&self) -> usize {
        self.undo.len() + self.defer.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Commit: compensations are dropped, deferred actions run (LIFO).
    pub fn run_commit(mut self) {
        self.undo.clear();
        while let Some(f) = self.defer.pop() {
            f();
        }
    }

    /// Abort: compensations run LIFO, then deferred actions LIFO.
    pub fn run_abort(&mut self) {
        while let Some(f) = self.undo.pop() {
            f();
        }
        while let Some(f) = self.defer.pop() {
            f();
        }
    }
}

/// One MMIO write made inside a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmioWrite {
    /// Base address of the window (its identity).
    pub window: u64,
    pub off: u64,
    /// Bytes: 1, 2, 4 or 8.
    pub width: u8,
    pub value: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    #[test]
    fn abort_runs_undo_lifo_then_defer_and_commit_only_defer() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut u = UndoLog::default();
        for i in 0..3 {
            let l = log.clone();
            u.push_undo(Box::new(move || l.borrow_mut().push(format!("u{i}"))));
        }
        let l = log.clone();
        u.push_defer(Box::new(move || l.borrow_mut().push("d".into())));
        assert_eq!(u.len(), 4);
        u.run_abort();
        assert_eq!(*log.borrow(), ["u2", "u1", "u0", "d"]);
        assert!(u.is_empty());

        log.borrow_mut().clear();
        let mut u = UndoLog::default();
        let l = log.clone();
        u.push_undo(Box::new(move || l.borrow_mut().push("u".into())));
        let l = log.clone();
        u.push_defer(Box::new(move || l.borrow_mut().push("d".into())));
        u.run_commit();
        assert_eq!(*log.borrow(), ["d"]);
    }
}

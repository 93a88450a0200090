//! Safe wrappers over the fgft runtime's portable data structures.
//!
//! `fgft_rt.ko` is built from `runtime-kmod/src/{ivx,rtab,objtrack,undolog}.c`.
//! `build.rs` compiles exactly those files for user space, together with a
//! shim (`csrc/shim.c`) that provides the memory hooks with per-thread
//! accounting and allocation-failure injection.  The tests in `tests/` drive
//! them through the wrappers below and compare them against simple models.

use std::cell::RefCell;
use std::ffi::c_void;
use std::os::raw::{c_int, c_long, c_uint, c_ulong};
use std::ptr::NonNull;

/// Read right (`FGFT_R`).
pub const R: u32 = 0x1;
/// Write right (`FGFT_W`).
pub const W: u32 = 0x2;
/// Read and write.
pub const RW: u32 = R | W;
/// `fgft_rtab_check_slow` result when several grants cover an access.
pub const PIECEWISE: i32 = 0x7fff_ffff;

/// An errno returned by the C code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DsError {
    #[error("invalid argument (EINVAL)")]
    Inval,
    #[error("out of memory (ENOMEM)")]
    NoMem,
    #[error("not found (ENOENT)")]
    NoEnt,
    #[error("no rights left (EPERM)")]
    Perm,
    #[error("already tracked (EEXIST)")]
    Exist,
    #[error("would deadlock (EDEADLK)")]
    Deadlk,
    #[error("errno {0}")]
    Other(i32),
}

fn check(rc: c_int) -> Result<i32, DsError> {
    if rc >= 0 {
        return Ok(rc);
    }
    Err(match -rc {
        1 => DsError::Perm,
        2 => DsError::NoEnt,
        12 => DsError::NoMem,
        17 => DsError::Exist,
        22 => DsError::Inval,
        35 => DsError::Deadlk,
        e => DsError::Other(e),
    })
}

#[repr(C)]
struct RawRtab {
    _p: [u8; 0],
}
#[repr(C)]
struct RawOt {
    _p: [u8; 0],
}
#[repr(C)]
struct RawUndo {
    _p: [u8; 0],
}

/// Mirror of `struct fgft_revoke`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct Revoke {
    pub root: c_int,
    pub cursor: c_int,
    pub removed: u32,
    pub done: bool,
}

type UndoFn = extern "C" fn(c_ulong, c_ulong, c_ulong, c_ulong);
type UnlockFn = extern "C" fn(*mut c_void, c_uint, *mut c_void, c_ulong);

extern "C" {
    fn us_mem_live() -> c_long;
    fn us_mem_fail_in(n: c_long);
    fn us_preempt_points() -> c_ulong;

    fn us_rtab_new() -> *mut RawRtab;
    fn us_rtab_free(t: *mut RawRtab);
    fn us_rtab_nlive(t: *const RawRtab) -> c_uint;
    fn us_rtab_slow(t: *const RawRtab) -> u64;
    fn us_rtab_grant(
        t: *const RawRtab,
        id: c_int,
        start: *mut usize,
        end: *mut usize,
        rights: *mut c_uint,
        parent: *mut c_int,
    ) -> c_int;
    fn fgft_rtab_map(t: *mut RawRtab, start: usize, len: usize, rights: u32) -> c_int;
    fn fgft_rtab_map_derived(
        t: *mut RawRtab,
        parent: usize,
        start: usize,
        len: usize,
        rights: u32,
    ) -> c_int;
    fn fgft_rtab_find_start(t: *const RawRtab, addr: usize) -> c_int;
    fn fgft_rtab_find_containing(t: *const RawRtab, addr: usize) -> c_int;
    fn fgft_rtab_revoke_begin(t: *mut RawRtab, rv: *mut Revoke, id: c_int);
    fn fgft_rtab_revoke_step(t: *mut RawRtab, rv: *mut Revoke, budget: u32) -> bool;
    fn fgft_rtab_unmap(t: *mut RawRtab, addr: usize, batch: u32) -> c_int;
    fn fgft_rtab_reset(t: *mut RawRtab);
    fn fgft_rtab_trim(t: *mut RawRtab, keep: u32);
    fn fgft_rtab_check(t: *mut RawRtab, addr: usize, len: usize, rights: u32) -> bool;
    fn fgft_rtab_check_slow(t: *mut RawRtab, addr: usize, len: usize, rights: u32) -> c_int;
    fn fgft_rtab_validate(t: *const RawRtab) -> c_int;

    fn us_ot_new() -> *mut RawOt;
    fn us_ot_free(ot: *mut RawOt);
    fn fgft_objtrack_copy(
        ot: *mut RawOt,
        kobj: *const c_void,
        ksize: usize,
        csize: usize,
    ) -> *mut c_void;
    fn fgft_objtrack_add(
        ot: *mut RawOt,
        kobj: *const c_void,
        ksize: usize,
        copy: *mut c_void,
        csize: usize,
    ) -> c_int;
    fn fgft_objtrack_find(ot: *const RawOt, kobj: *const c_void) -> *mut c_void;
    fn fgft_objtrack_orig(ot: *const RawOt, copy: *const c_void) -> *mut c_void;
    fn fgft_objtrack_to_copy(ot: *const RawOt, kptr: *const c_void) -> *mut c_void;
    fn fgft_objtrack_to_orig(ot: *const RawOt, cptr: *const c_void) -> *mut c_void;
    fn fgft_objtrack_reset(ot: *mut RawOt);

    fn us_undo_new() -> *mut RawUndo;
    fn us_undo_free(l: *mut RawUndo);
    fn fgft_undo_reserve(l: *mut RawUndo, extra: u32) -> c_int;
    fn fgft_undo_add(
        l: *mut RawUndo,
        kind: u8,
        f: Option<UndoFn>,
        a0: c_ulong,
        a1: c_ulong,
        a2: c_ulong,
        a3: c_ulong,
    ) -> c_int;
    fn fgft_undo_add_lock(l: *mut RawUndo, kind: u32, lock: *mut c_void, flags: c_ulong);
    fn fgft_undo_add_unlock(l: *mut RawUndo, kind: u32, lock: *mut c_void, flags: c_ulong)
        -> c_int;
    fn us_undo_mark_unlock(l: *mut RawUndo, lock: *mut c_void) -> c_int;
    fn us_undo_relock(l: *mut RawUndo, lock: *mut c_void) -> c_int;
    fn us_undo_finish(l: *mut RawUndo, abort: c_int, unlock: UnlockFn, ctx: *mut c_void);
    fn us_undo_stats(l: *const RawUndo, out: *mut [c_uint; 5]);
}

/// Live allocations made through `fgft_mem_*` by this thread.
pub fn mem_live() -> i64 {
    // SAFETY: reads a thread-local counter.
    unsafe { us_mem_live() as i64 }
}

/// Makes the `n`-th allocation from now fail (`0` = the next one); `-1` disables.
pub fn mem_fail_in(n: i64) {
    // SAFETY: sets a thread-local counter.
    unsafe { us_mem_fail_in(n as c_long) }
}

/// Preemption points taken by this thread so far.
pub fn preempt_points() -> u64 {
    // SAFETY: reads a thread-local counter.
    unsafe { us_preempt_points() as u64 }
}

/// One live grant as the C table stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub start: usize,
    pub end: usize,
    pub rights: u32,
    pub parent: Option<i32>,
}

/// A range table (`struct fgft_rtab`).
pub struct Rtab(NonNull<RawRtab>);

impl Default for Rtab {
    fn default() -> Self {
        Self::new()
    }
}

impl Rtab {
    pub fn new() -> Self {
        // SAFETY: the shim returns a fresh, initialised table or NULL.
        let p = unsafe { us_rtab_new() };
        Rtab(NonNull::new(p).expect("malloc of a range table failed"))
    }
    fn p(&self) -> *mut RawRtab {
        self.0.as_ptr()
    }
    pub fn map(&mut self, start: usize, len: usize, rights: u32) -> Result<i32, DsError> {
        // SAFETY: self owns a valid table.
        check(unsafe { fgft_rtab_map(self.p(), start, len, rights) })
    }
    pub fn map_derived(
        &mut self,
        parent: usize,
        start: usize,
        len: usize,
        rights: u32,
    ) -> Result<i32, DsError> {
        // SAFETY: self owns a valid table.
        check(unsafe { fgft_rtab_map_derived(self.p(), parent, start, len, rights) })
    }
    pub fn find_start(&self, addr: usize) -> Result<i32, DsError> {
        // SAFETY: self owns a valid table.
        check(unsafe { fgft_rtab_find_start(self.p(), addr) })
    }
    pub fn find_containing(&self, addr: usize) -> Result<i32, DsError> {
        // SAFETY: self owns a valid table.
        check(unsafe { fgft_rtab_find_containing(self.p(), addr) })
    }
    pub fn unmap(&mut self, addr: usize, batch: u32) -> Result<i32, DsError> {
        // SAFETY: self owns a valid table.
        check(unsafe { fgft_rtab_unmap(self.p(), addr, batch) })
    }
    /// Starts a resumable revoke of grant `id` (which must be live).
    pub fn revoke_begin(&mut self, id: i32) -> Result<Revoke, DsError> {
        self.grant(id)?;
        let mut rv = Revoke::default();
        // SAFETY: id is a live grant of this table.
        unsafe { fgft_rtab_revoke_begin(self.p(), &mut rv, id) };
        Ok(rv)
    }
    /// One bounded step of a revoke; true when the root is gone.
    pub fn revoke_step(&mut self, rv: &mut Revoke, budget: u32) -> bool {
        // SAFETY: rv was started on this table and the table was not
        // changed in between (the caller keeps &mut self).
        unsafe { fgft_rtab_revoke_step(self.p(), rv, budget) }
    }
    pub fn reset(&mut self) {
        // SAFETY: self owns a valid table.
        unsafe { fgft_rtab_reset(self.p()) }
    }
    pub fn trim(&mut self, keep: u32) {
        // SAFETY: self owns a valid table.
        unsafe { fgft_rtab_trim(self.p(), keep) }
    }
    pub fn check(&mut self, addr: usize, len: usize, rights: u32) -> bool {
        // SAFETY: self owns a valid table.
        unsafe { fgft_rtab_check(self.p(), addr, len, rights) }
    }
    /// `-1` refused, a grant id, or [`PIECEWISE`].
    pub fn check_slow(&mut self, addr: usize, len: usize, rights: u32) -> i32 {
        // SAFETY: self owns a valid table.
        unsafe { fgft_rtab_check_slow(self.p(), addr, len, rights) }
    }
    /// 0, or the negative code of the first broken invariant.
    pub fn validate(&self) -> i32 {
        // SAFETY: self owns a valid table.
        unsafe { fgft_rtab_validate(self.p()) }
    }
    pub fn nlive(&self) -> u32 {
        // SAFETY: self owns a valid table.
        unsafe { us_rtab_nlive(self.p()) }
    }
    pub fn slow_lookups(&self) -> u64 {
        // SAFETY: self owns a valid table.
        unsafe { us_rtab_slow(self.p()) }
    }
    pub fn grant(&self, id: i32) -> Result<Grant, DsError> {
        let (mut s, mut e, mut r, mut p) = (0usize, 0usize, 0u32, 0i32);
        // SAFETY: out-pointers are valid locals.
        check(unsafe { us_rtab_grant(self.p(), id, &mut s, &mut e, &mut r, &mut p) })?;
        Ok(Grant {
            start: s,
            end: e,
            rights: r,
            parent: (p >= 0).then_some(p),
        })
    }
}

impl Drop for Rtab {
    fn drop(&mut self) {
        // SAFETY: the table was made by us_rtab_new and is freed once.
        unsafe { us_rtab_free(self.p()) }
    }
}

/// An object tracker (`struct fgft_objtrack`).  Kernel addresses are plain
/// numbers here: the tracker never dereferences them.
pub struct ObjTrack(NonNull<RawOt>);

impl Default for ObjTrack {
    fn default() -> Self {
        Self::new()
    }
}

impl ObjTrack {
    pub fn new() -> Self {
        // SAFETY: the shim returns a fresh, initialised tracker or NULL.
        let p = unsafe { us_ot_new() };
        ObjTrack(NonNull::new(p).expect("malloc of an object tracker failed"))
    }
    fn p(&self) -> *mut RawOt {
        self.0.as_ptr()
    }
    /// The copy of kernel object `kobj` (allocated zeroed on first use).
    pub fn copy(&mut self, kobj: usize, ksize: usize, csize: usize) -> Option<usize> {
        // SAFETY: kobj is only used as a key.
        let c = unsafe { fgft_objtrack_copy(self.p(), kobj as *const c_void, ksize, csize) };
        (!c.is_null()).then_some(c as usize)
    }
    /// Tracks a caller-owned copy (`copy` is only used as a key).
    pub fn add(
        &mut self,
        kobj: usize,
        ksize: usize,
        copy: usize,
        csize: usize,
    ) -> Result<(), DsError> {
        // SAFETY: both addresses are only used as keys.
        check(unsafe {
            fgft_objtrack_add(
                self.p(),
                kobj as *const c_void,
                ksize,
                copy as *mut c_void,
                csize,
            )
        })
        .map(|_| ())
    }
    pub fn find(&self, kobj: usize) -> Option<usize> {
        // SAFETY: lookup only.
        let c = unsafe { fgft_objtrack_find(self.p(), kobj as *const c_void) };
        (!c.is_null()).then_some(c as usize)
    }
    pub fn orig(&self, copy: usize) -> Option<usize> {
        // SAFETY: lookup only.
        let k = unsafe { fgft_objtrack_orig(self.p(), copy as *const c_void) };
        (!k.is_null()).then_some(k as usize)
    }
    pub fn to_copy(&self, kptr: usize) -> Option<usize> {
        // SAFETY: lookup only.
        let c = unsafe { fgft_objtrack_to_copy(self.p(), kptr as *const c_void) };
        (!c.is_null()).then_some(c as usize)
    }
    pub fn to_orig(&self, cptr: usize) -> Option<usize> {
        // SAFETY: lookup only.
        let k = unsafe { fgft_objtrack_to_orig(self.p(), cptr as *const c_void) };
        (!k.is_null()).then_some(k as usize)
    }
    /// Writes `byte` at `off` of a copy the tracker returned (proves it is
    /// real memory of at least `off + 1` bytes).
    ///
    /// # Safety
    /// `copy` must come from [`ObjTrack::copy`] with `csize > off`, and the
    /// tracker must not have been reset since.
    pub unsafe fn poke(copy: usize, off: usize, byte: u8) {
        // SAFETY: guaranteed by the caller.
        unsafe { *((copy + off) as *mut u8) = byte };
    }
    /// Reads a byte of a copy (see [`ObjTrack::poke`]).
    ///
    /// # Safety
    /// As for [`ObjTrack::poke`].
    pub unsafe fn peek(copy: usize, off: usize) -> u8 {
        // SAFETY: guaranteed by the caller.
        unsafe { *((copy + off) as *const u8) }
    }
    pub fn reset(&mut self) {
        // SAFETY: self owns a valid tracker.
        unsafe { fgft_objtrack_reset(self.p()) }
    }
}

impl Drop for ObjTrack {
    fn drop(&mut self) {
        // SAFETY: made by us_ot_new, freed once.
        unsafe { us_ot_free(self.p()) }
    }
}

/// Something the undo log ran, in the order it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A compensation or deferred action, identified by its first argument.
    Call(u64, u64, u64, u64),
    /// A lock release: kind, lock, flags.
    Unlock(u32, usize, u64),
}

thread_local! {
    static EVENTS: RefCell<Vec<Event>> = const { RefCell::new(Vec::new()) };
}

extern "C" fn record_call(a0: c_ulong, a1: c_ulong, a2: c_ulong, a3: c_ulong) {
    EVENTS.with(|e| e.borrow_mut().push(Event::Call(a0, a1, a2, a3)));
}

extern "C" fn record_unlock(_ctx: *mut c_void, kind: c_uint, lock: *mut c_void, flags: c_ulong) {
    EVENTS.with(|e| {
        e.borrow_mut()
            .push(Event::Unlock(kind, lock as usize, flags))
    });
}

/// Record kinds (`enum fgft_rec_kind`).
pub const REC_UNDO: u8 = 1;
pub const REC_DEFER: u8 = 2;
/// An undo run after the locks are released (FGFT_REC_UNDO_LATE).
pub const REC_UNDO_LATE: u8 = 5;
/// Lock kinds (`enum fgft_lock_kind`).
pub const LOCK_SPIN: u32 = 1;
pub const LOCK_SPIN_IRQSAVE: u32 = 2;
pub const LOCK_SPIN_BH: u32 = 3;
pub const LOCK_MUTEX: u32 = 4;

/// Counters of the last `finish`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UndoStats {
    pub ran_undo: u32,
    pub ran_defer: u32,
    pub released_locks: u32,
    pub missing_unlocks: u32,
    pub held_locks: u32,
}

/// An undo log (`struct fgft_undolog`).  Actions record [`Event`]s.
pub struct UndoLog(NonNull<RawUndo>);

impl Default for UndoLog {
    fn default() -> Self {
        Self::new()
    }
}

impl UndoLog {
    pub fn new() -> Self {
        // SAFETY: the shim returns a fresh, initialised log or NULL.
        let p = unsafe { us_undo_new() };
        UndoLog(NonNull::new(p).expect("malloc of an undo log failed"))
    }
    fn p(&self) -> *mut RawUndo {
        self.0.as_ptr()
    }
    /// Adds an UNDO or DEFER record whose action records `Event::Call(args)`.
    pub fn push(&mut self, kind: u8, args: [u64; 4]) -> Result<(), DsError> {
        // SAFETY: record_call is a valid C-ABI function.
        check(unsafe {
            fgft_undo_add(
                self.p(),
                kind,
                Some(record_call),
                args[0],
                args[1],
                args[2],
                args[3],
            )
        })
        .map(|_| ())
    }
    /// Adds a record with a NULL action (must be refused).
    pub fn push_null(&mut self, kind: u8) -> Result<(), DsError> {
        // SAFETY: a NULL action is refused by the C code.
        check(unsafe { fgft_undo_add(self.p(), kind, None, 0, 0, 0, 0) }).map(|_| ())
    }
    /// Takes a lock inside the transaction: re-taking one whose unlock is
    /// pending keeps holding it; re-taking a held one would deadlock.
    pub fn lock(&mut self, kind: u32, lock: usize, flags: u64) -> Result<(), DsError> {
        // SAFETY: lock is only used as a key.
        match check(unsafe { us_undo_relock(self.p(), lock as *mut c_void) }) {
            Ok(_) => return Ok(()),
            Err(DsError::NoEnt) => {}
            Err(e) => return Err(e),
        }
        // SAFETY: reserve before recording, as the kernel does.
        check(unsafe { fgft_undo_reserve(self.p(), 1) })?;
        // SAFETY: room was reserved.
        unsafe { fgft_undo_add_lock(self.p(), kind, lock as *mut c_void, flags) };
        Ok(())
    }
    /// Unlock inside the body: marks a held lock, or defers a foreign one.
    pub fn unlock(&mut self, kind: u32, lock: usize) -> Result<(), DsError> {
        // SAFETY: lock is only used as a key.
        match check(unsafe { us_undo_mark_unlock(self.p(), lock as *mut c_void) }) {
            Ok(_) => Ok(()),
            Err(DsError::NoEnt) => {
                // SAFETY: lock is only used as a key.
                check(unsafe { fgft_undo_add_unlock(self.p(), kind, lock as *mut c_void, 0) })
                    .map(|_| ())
            }
            Err(e) => Err(e),
        }
    }
    /// Ends the transaction; returns what ran, in order.
    pub fn finish(&mut self, abort: bool) -> (Vec<Event>, UndoStats) {
        EVENTS.with(|e| e.borrow_mut().clear());
        // SAFETY: record_unlock is a valid C-ABI function.
        unsafe {
            us_undo_finish(
                self.p(),
                abort as c_int,
                record_unlock,
                std::ptr::null_mut(),
            )
        };
        let mut out = [0 as c_uint; 5];
        // SAFETY: out is a valid [u32; 5].
        unsafe { us_undo_stats(self.p(), &mut out) };
        let ev = EVENTS.with(|e| std::mem::take(&mut *e.borrow_mut()));
        (
            ev,
            UndoStats {
                ran_undo: out[0],
                ran_defer: out[1],
                released_locks: out[2],
                missing_unlocks: out[3],
                held_locks: out[4],
            },
        )
    }
}

impl Drop for UndoLog {
    fn drop(&mut self) {
        // SAFETY: made by us_undo_new, freed once.
        unsafe { us_undo_free(self.p()) }
    }
}

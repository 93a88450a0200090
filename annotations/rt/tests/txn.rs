//! Transactions end to end on a fake device: a register window over plain
//! memory, a driver with #[fgft::driver] / #[fgft::isolate] /
//! #[fgft::checkpoint] / #[fgft::restore].

use fgft::mmio::{W4, W8};
use fgft::{Abort, Cause, Errno, FromAbort, MmioWindow, Reg, Undo, FGFT_R, FGFT_RW, FGFT_W};
use std::cell::RefCell;
use std::rc::Rc;

const ID: u64 = 0x00;
const VALUE: u64 = 0x04;
const CMD: u64 = 0x08;
const RAISE: u64 = 0x10;
const ACK: u64 = 0x14;
const ADDR: u64 = 0x20;

static REGS: &[Reg] = &[
    Reg::new("id", ID, W4, FGFT_R, Undo::None),
    Reg::new("value", VALUE, W4, FGFT_RW, Undo::Restore),
    Reg::new("cmd", CMD, W4, FGFT_W, Undo::None),
    Reg::new("raise", RAISE, W4, FGFT_W, Undo::Compensate(ACK)),
    Reg::new("ack", ACK, W4, FGFT_W, Undo::None),
    Reg::new("addr", ADDR, W4 | W8, FGFT_RW, Undo::Restore),
];

/// Plain memory standing in for a BAR (0x40 bytes; offsets 0x28.. are in
/// the window but no register).
struct FakeBar(Box<[u64; 8]>);

impl FakeBar {
    fn new() -> Self {
        let mut m = Box::new([0u64; 8]);
        m[0] = 0x1234_00ed;
        FakeBar(m)
    }
    fn window(&mut self) -> MmioWindow {
        // SAFETY: the memory outlives the window in every test (the bar is
        // kept alive next to the driver).
        unsafe { MmioWindow::from_raw("fake", self.0.as_mut_ptr().cast(), 0x40, REGS).unwrap() }
    }
    fn u32_at(&self, off: usize) -> u32 {
        let b: &[u8; 64] = unsafe { &*(self.0.as_ptr().cast()) };
        u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
    }
}

#[derive(Debug, PartialEq)]
enum DrvError {
    Aborted(Cause, Errno),
    Busy,
}

impl FromAbort for DrvError {
    fn from_abort(a: Abort) -> Self {
        DrvError::Aborted(a.cause, a.errno)
    }
}

struct Drv {
    regs: MmioWindow,
    count: u32,
    history: Vec<u32>,
    name: String,
    restores: Rc<RefCell<Vec<String>>>,
    untouched: NotClone,
}

struct NotClone;

#[derive(Debug, Clone)]
struct Cp {
    regs: fgft::RegCheckpoint,
}

trait Ops {
    fn set(&mut self, v: u32, fault: Fault) -> Result<u32, DrvError>;
    fn raise(&mut self, v: u32, fault: Fault) -> Result<(), DrvError>;
    fn wide(&mut self) -> i32;
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Fault {
    None,
    Panic,
    Outside,
    Width,
    ReadOnly,
    NotARegister,
    Busy,
}

#[fgft::driver]
impl Ops for Drv {
    #[fgft::isolate(err = EBUSY, fields(count, history))]
    fn set(&mut self, v: u32, fault: Fault) -> Result<u32, DrvError> {
        self.regs.write32(VALUE, v);
        self.regs.write64(ADDR, u64::from(v) << 32 | 0xabc);
        self.bump(v);
        let _ = &self.untouched;
        match fault {
            Fault::None => {}
            Fault::Panic => panic!("injected"),
            Fault::Outside => {
                self.regs.read32(0x40);
            }
            Fault::Width => {
                self.regs.read64(VALUE);
            }
            Fault::ReadOnly => self.regs.write32(ID, 1),
            Fault::NotARegister => {
                self.regs.read32(0x30);
            }
            Fault::Busy => return Err(DrvError::Busy),
        }
        Ok(self.regs.read32(VALUE))
    }

    #[fgft::isolate]
    fn raise(&mut self, v: u32, fault: Fault) -> Result<(), DrvError> {
        self.regs.write32(RAISE, v);
        self.name.push_str("-raised");
        if fault == Fault::Panic {
            let d = self.history.len() - self.history.len();
            let _ = 10 / d;
        }
        Ok(())
    }

    #[fgft::isolate(err = EINVAL)]
    fn wide(&mut self) -> i32 {
        self.regs.read32(0x3c) as i32
    }
}

#[fgft::driver]
impl Drv {
    fn bump(&mut self, v: u32) {
        self.count += 1;
        self.history.push(v);
    }

    /// Same-block calls are followed: `count` and `history` are found
    /// through `bump`.
    #[fgft::isolate]
    fn bump_checked(&mut self, v: u32, limit: usize) -> Result<usize, DrvError> {
        self.bump(v);
        assert!(self.history.len() <= limit, "too many");
        Ok(self.history.len())
    }

    /// Only used by `isolation_can_be_switched_off` (the switch is global).
    #[fgft::isolate]
    fn switchable(&mut self, fail: bool) -> Result<u32, DrvError> {
        self.count += 1;
        assert!(!fail, "injected");
        Ok(self.count)
    }

    #[fgft::checkpoint]
    fn save(&self) -> Cp {
        Cp {
            regs: self.regs.checkpoint(),
        }
    }

    #[fgft::restore]
    fn back(&mut self, cp: &Cp, txn: &fgft::Txn) {
        let rep = self.regs.undo_writes(&cp.regs, txn);
        self.restores.borrow_mut().push(format!(
            "{} {:?} restored={} compensated={} ignored={}",
            txn.entry(),
            txn.cause(),
            rep.restored,
            rep.compensated,
            rep.ignored
        ));
    }
}

fn driver(bar: &mut FakeBar) -> Drv {
    Drv {
        regs: bar.window(),
        count: 0,
        history: Vec::new(),
        name: "drv".into(),
        restores: Rc::new(RefCell::new(Vec::new())),
        untouched: NotClone,
    }
}

#[test]
fn commit_keeps_changes() {
    let mut bar = FakeBar::new();
    let mut d = driver(&mut bar);
    assert_eq!(d.set(7, Fault::None), Ok(7));
    assert_eq!(d.set(8, Fault::None), Ok(8));
    assert_eq!((d.count, d.history.clone()), (2, vec![7, 8]));
    assert_eq!(bar.u32_at(VALUE as usize), 8);
    assert!(d.restores.borrow().is_empty());
    // An error the method returns itself is not an abort.
    assert_eq!(d.set(9, Fault::Busy), Err(DrvError::Busy));
    assert_eq!(d.count, 3);
}

#[test]
fn every_fault_is_recovered_and_state_restored() {
    let mut bar = FakeBar::new();
    let mut d = driver(&mut bar);
    d.set(5, Fault::None).unwrap();
    let cases = [
        (Fault::Panic, Cause::Panic),
        (Fault::Outside, Cause::Range),
        (Fault::Width, Cause::Range),
        (Fault::ReadOnly, Cause::Range),
        (Fault::NotARegister, Cause::Range),
    ];
    for (fault, cause) in cases {
        let r = d.set(99, fault);
        assert_eq!(
            r,
            Err(DrvError::Aborted(cause, fgft::errno::EBUSY)),
            "{fault:?}"
        );
        assert_eq!(d.count, 1, "{fault:?}: field restored");
        assert_eq!(d.history, vec![5], "{fault:?}: field restored");
        assert_eq!(
            bar.u32_at(VALUE as usize),
            5,
            "{fault:?}: register restored"
        );
        assert_eq!(
            bar.u32_at(ADDR as usize + 4),
            5,
            "{fault:?}: 64-bit register restored"
        );
        assert_eq!(d.set(6, Fault::None), Ok(6), "{fault:?}: works afterwards");
        d.set(5, Fault::None).unwrap();
        d.count = 1;
        d.history = vec![5];
    }
    let log = d.restores.borrow();
    assert_eq!(log.len(), 5);
    assert_eq!(log[0], "Drv::set Panic restored=2 compensated=0 ignored=0");
}

#[test]
fn compensation_and_divide_by_zero() {
    let mut bar = FakeBar::new();
    let mut d = driver(&mut bar);
    let r = d.raise(0x100, Fault::Panic);
    assert_eq!(r, Err(DrvError::Aborted(Cause::Panic, fgft::errno::EIO)));
    // The raise was compensated by writing the same value to ACK.
    assert_eq!(bar.u32_at(ACK as usize), 0x100);
    assert_eq!(d.name, "drv");
    assert!(d.raise(1, Fault::None).is_ok());
    assert_eq!(d.name, "drv-raised");
}

#[test]
fn integer_returns_carry_negative_errno() {
    let mut bar = FakeBar::new();
    let mut d = driver(&mut bar);
    assert_eq!(d.wide(), -22);
    let st = fgft::entries()
        .into_iter()
        .find(|e| e.name == "Drv::wide")
        .unwrap()
        .stats();
    assert!(st.aborts_by(Cause::Range) >= 1);
    assert!(st.recovery_count >= 1 && st.recovery_max_ns > 0);
}

#[test]
fn isolation_can_be_switched_off() {
    let mut bar = FakeBar::new();
    let mut d = driver(&mut bar);
    d.switchable(false).unwrap();
    assert!(fgft::set_isolation("Drv::switchable", false));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| d.switchable(true)));
    assert!(r.is_err(), "with isolation off the panic escapes");
    assert_eq!(d.count, 2, "and the state is left as the panic left it");
    fgft::set_isolation("Drv::switchable", true);
    assert!(d.switchable(true).is_err());
    assert_eq!(d.count, 2);
    let st = fgft::entries()
        .into_iter()
        .find(|e| e.name == "Drv::switchable")
        .unwrap()
        .stats();
    assert_eq!(
        (
            st.begins,
            st.commits,
            st.bypassed,
            st.aborts_by(Cause::Panic)
        ),
        (2, 1, 1, 1)
    );
}

// Nested transactions, the undo log, explicit failure and the range table
// API, without the macros.
#[test]
fn nested_transactions_and_undo_log() {
    static OUTER: fgft::Entry = fgft::Entry::new("outer", "here");
    static INNER: fgft::Entry = fgft::Entry::new("inner", "here");
    let log = Rc::new(RefCell::new(Vec::new()));
    let mut g = fgft::Txn::begin(&OUTER).unwrap();
    let l = log.clone();
    let r = g.call(|| {
        let l2 = l.clone();
        fgft::undo_push(move || l2.borrow_mut().push("undo-outer"));
        assert_eq!(fgft::current(), Some("outer"));
        let mut gi = fgft::Txn::begin(&INNER).unwrap();
        let l3 = l.clone();
        let inner = gi.call(|| {
            let l4 = l3.clone();
            fgft::undo_push(move || l4.borrow_mut().push("undo-inner"));
            assert!(fgft::map(fgft::Space::Dma, 0x1000, 0x100, FGFT_R));
            assert!(fgft::check(fgft::Space::Dma, 0x1010, 4, FGFT_R));
            assert!(!fgft::check(fgft::Space::Dma, 0x1010, 4, FGFT_W));
            fgft::check_dma(fgft::Space::Dma, 0x2000, 4, FGFT_R);
        });
        let failed = inner.expect_err("refused DMA address fails the inner txn");
        assert_eq!(failed.cause(), Cause::Range);
        let a = failed.abort(fgft::errno::EFAULT, |_| Ok(()));
        assert_eq!(a.errno, fgft::errno::EFAULT);
        assert!(a.message.unwrap().contains("0x2000"));
        assert_eq!(fgft::depth(), 1);
        // The inner grant is gone with the inner transaction.
        assert!(!fgft::check(fgft::Space::Dma, 0x1010, 4, FGFT_R));
        fgft::fail(Cause::Explicit, "give up".into());
    });
    let failed = r.err().unwrap();
    assert_eq!(failed.cause(), Cause::Explicit);
    let a = failed.abort(fgft::errno::EIO, |_| Err("device gone".into()));
    assert!(!a.restored);
    assert_eq!(*log.borrow(), ["undo-inner", "undo-outer"]);
    assert_eq!(fgft::depth(), 0);
    // Outside a transaction every access is allowed.
    assert!(fgft::check(fgft::Space::Dma, 0x2000, 4, FGFT_RW));
}

#[test]
fn calls_within_the_driver_block_are_followed() {
    let mut bar = FakeBar::new();
    let mut d = driver(&mut bar);
    assert_eq!(d.bump_checked(1, 2), Ok(1));
    assert_eq!(d.bump_checked(2, 2), Ok(2));
    let r = d.bump_checked(3, 2);
    assert_eq!(r, Err(DrvError::Aborted(Cause::Panic, fgft::errno::EIO)));
    assert_eq!((d.count, d.history.clone()), (2, vec![1, 2]));
}

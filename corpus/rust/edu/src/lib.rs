//! A user-space Rust driver for QEMU's `edu` PCI device (1234:11e8), with
//! its entry points isolated by fgft.
//!
//! The device (QEMU `docs/specs/edu.rst`): BAR0 is 1 MiB of MMIO; only
//! 4-byte accesses below 0x80, 4 or 8 bytes from 0x80 on.
//!
//! | offset | register | use here |
//! |--------|----------|----------|
//! | 0x00 | identification `0xRRrr00ed` | checked at open |
//! | 0x04 | liveness: reads back `!value` | `liveness` |
//! | 0x08 | factorial: write n, read n! (u32, wrapping) | `factorial`, `factorial_irq` |
//! | 0x20 | status: bit 0 computing (RO), bit 7 raise IRQ 0x1 when done | |
//! | 0x24 | interrupt status | |
//! | 0x60 / 0x64 | interrupt raise / acknowledge | `raise_irq` |
//! | 0x80 / 0x88 / 0x90 / 0x98 | DMA source / destination / count / command | `dma_roundtrip` |
//!
//! The DMA engine copies between host memory and a 4 KiB buffer inside the
//! device at device address 0x40000 (command bit 0 start, bit 1 direction
//! 1 = device to RAM, bit 2 raise IRQ 0x100); a transfer takes 100 ms of
//! virtual time. QEMU aborts the whole VM when a transfer falls outside the
//! device buffer, and with no IOMMU a wrong host address is a write into
//! someone else's memory: every address is checked against the
//! transaction's range table before it is programmed.
//!
//! Access: `uio_pci_generic` (see [`pci`]); DMA memory from
//! [`fgft::DmaRegion`] (physical address from `/proc/self/pagemap`: no
//! IOMMU in the guest, and vfio's no-IOMMU mode is not built into Debian's
//! kernel).

pub mod fault;
pub mod pci;

use fault::Fault;
use fgft::mmio::{W4, W8};
use fgft::{
    check_dma, Abort, DeviceState, DmaRegion, FromAbort, MmioWindow, Reg, RegCheckpoint, Space,
    Undo, FGFT_R, FGFT_RW, FGFT_W,
};
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const IDENT: u64 = 0x00;
pub const LIVENESS: u64 = 0x04;
pub const FACT: u64 = 0x08;
pub const STATUS: u64 = 0x20;
pub const IRQ_STATUS: u64 = 0x24;
pub const IRQ_RAISE: u64 = 0x60;
pub const IRQ_ACK: u64 = 0x64;
pub const DMA_SRC: u64 = 0x80;
pub const DMA_DST: u64 = 0x88;
pub const DMA_COUNT: u64 = 0x90;
pub const DMA_CMD: u64 = 0x98;

pub const STATUS_COMPUTING: u32 = 0x01;
pub const STATUS_IRQ_FACT: u32 = 0x80;
/// Interrupt status value of a finished factorial.
pub const IRQ_FACT: u32 = 0x1;
pub const DMA_START: u64 = 0x1;
pub const DMA_TO_RAM: u64 = 0x2;
/// The device's DMA buffer.
pub const DEV_BUF: u64 = 0x40000;
pub const DEV_BUF_LEN: u64 = 4096;
/// The device's default DMA mask (28 bits).
pub const DMA_MASK: u64 = (1 << 28) - 1;
/// Largest DMA round trip: the host buffer holds the data and the copy back.
pub const MAX_DMA: usize = 2048;

/// The register table: what every transaction may touch, and how a write is
/// undone on abort.
pub static REGS: &[Reg] = &[
    Reg::new("ident", IDENT, W4, FGFT_R, Undo::None),
    // Reads back the complement of what was written.
    Reg::new("liveness", LIVENESS, W4, FGFT_RW, Undo::RestoreInverted),
    // Writing starts a computation; its result is transient.
    Reg::new("factorial", FACT, W4, FGFT_RW, Undo::None),
    Reg::new("status", STATUS, W4, FGFT_RW, Undo::Restore),
    Reg::new("irq_status", IRQ_STATUS, W4, FGFT_R, Undo::None),
    Reg::new(
        "irq_raise",
        IRQ_RAISE,
        W4,
        FGFT_W,
        Undo::Compensate(IRQ_ACK),
    ),
    Reg::new("irq_ack", IRQ_ACK, W4, FGFT_W, Undo::None),
    Reg::new("dma_src", DMA_SRC, W4 | W8, FGFT_RW, Undo::Restore),
    Reg::new("dma_dst", DMA_DST, W4 | W8, FGFT_RW, Undo::Restore),
    Reg::new("dma_count", DMA_COUNT, W4 | W8, FGFT_RW, Undo::Restore),
    // A started transfer cannot be undone (at most once); restore waits
    // for it to finish.
    Reg::new("dma_cmd", DMA_CMD, W4 | W8, FGFT_RW, Undo::None),
];

#[derive(Debug, thiserror::Error)]
pub enum EduError {
    #[error("{path}: {source}", path = .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {what}", path = .path.display())]
    Sysfs { path: PathBuf, what: String },
    #[error("no edu device (1234:11e8) on the PCI bus; start QEMU with -device edu")]
    NoDevice,
    #[error("unexpected identification register {0:#010x}")]
    BadIdent(u32),
    #[error("timed out waiting for {0}")]
    Timeout(&'static str),
    #[error("liveness check failed: wrote {wrote:#x}, read {read:#x}")]
    Liveness { wrote: u32, read: u32 },
    #[error("DMA of {0} bytes is larger than {MAX_DMA}")]
    TooLong(usize),
    #[error("runtime: {0}")]
    Rt(#[from] fgft::Error),
    #[error("{0}")]
    Aborted(Abort),
}

impl FromAbort for EduError {
    fn from_abort(a: Abort) -> Self {
        EduError::Aborted(a)
    }
}

/// CLOCK_MONOTONIC in ns: comparable across processes (unlike `Instant`).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// The interrupt line, through `/dev/uioN`.
#[derive(Debug)]
pub struct UioIrq {
    file: File,
    path: PathBuf,
}

impl DeviceState for UioIrq {}
impl DeviceState for pci::Config {}

impl UioIrq {
    pub fn open(path: &Path) -> Result<UioIrq, EduError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|source| EduError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(UioIrq {
            file,
            path: path.to_path_buf(),
        })
    }

    fn poll(&self, timeout_ms: i32) -> Result<bool, EduError> {
        let mut p = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, timeout_ms) };
        if r < 0 {
            return Err(EduError::Io {
                path: self.path.clone(),
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(r > 0)
    }

    /// Waits for an interrupt; returns the uio event count.
    pub fn wait(&self, timeout: Duration) -> Result<u32, EduError> {
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        if !self.poll(ms)? {
            return Err(EduError::Timeout("interrupt"));
        }
        let mut b = [0u8; 4];
        (&self.file)
            .read_exact(&mut b)
            .map_err(|source| EduError::Io {
                path: self.path.clone(),
                source,
            })?;
        Ok(u32::from_ne_bytes(b))
    }

    /// Consumes an interrupt event that is already pending.
    pub fn drain(&self) -> Result<(), EduError> {
        if self.poll(0)? {
            self.wait(Duration::ZERO)?;
        }
        Ok(())
    }
}

/// Operation counters (driver state).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    pub factorials: u64,
    pub irqs: u64,
    pub dma_bytes: u64,
    /// Factorials computed per cache entry.
    pub per_cache_entry: u64,
}

/// Factorials remembered by the driver, with a checksum so a corrupted
/// entry is noticed.
const MEMO_LEN: usize = 16;

fn memo_hash(n: u32, v: u32) -> u64 {
    u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(v)
}

fn memo_sum(memo: &[(u32, u32)]) -> u64 {
    memo.iter()
        .fold(0u64, |a, (n, v)| a.wrapping_add(memo_hash(*n, *v)))
}

/// The driver's consistency check (a `BUG_ON` in kernel terms).
fn check_memo(memo: &[(u32, u32)], sum: u64) {
    assert_eq!(memo_sum(memo), sum, "edu: factorial cache corrupted");
}

/// `n!` as the device computes it (32-bit, wrapping).
pub fn expected_factorial(n: u32) -> u32 {
    (1..=n).fold(1u32, |a, i| a.wrapping_mul(i))
}

fn wait_until(
    what: &'static str,
    timeout: Duration,
    mut done: impl FnMut() -> bool,
) -> Result<(), EduError> {
    let start = Instant::now();
    let mut spins = 0u32;
    while !done() {
        if start.elapsed() > timeout {
            return Err(EduError::Timeout(what));
        }
        spins += 1;
        if spins > 64 {
            std::thread::sleep(Duration::from_micros(200));
        } else {
            std::hint::spin_loop();
        }
    }
    Ok(())
}

fn wait_fact(regs: &MmioWindow) -> Result<(), EduError> {
    wait_until("factorial", Duration::from_secs(2), || {
        regs.read32(STATUS) & STATUS_COMPUTING == 0
    })
}

fn wait_dma(regs: &MmioWindow) -> Result<(), EduError> {
    wait_until("DMA", Duration::from_secs(5), || {
        regs.read64(DMA_CMD) & DMA_START == 0
    })
}

/// Programs and starts one transfer after checking both addresses against
/// the transaction's range table (a refused address fails the transaction
/// before the device sees it).
fn start_dma(regs: &MmioWindow, host: u64, dev: u64, len: u64, to_ram: bool) {
    if to_ram {
        check_dma(Space::DevMem, dev, len, FGFT_R);
        check_dma(Space::Dma, host, len, FGFT_W);
        regs.write64(DMA_SRC, dev);
        regs.write64(DMA_DST, host);
    } else {
        check_dma(Space::Dma, host, len, FGFT_R);
        check_dma(Space::DevMem, dev, len, FGFT_W);
        regs.write64(DMA_SRC, host);
        regs.write64(DMA_DST, dev);
    }
    regs.write64(DMA_COUNT, len);
    regs.write64(DMA_CMD, DMA_START | if to_ram { DMA_TO_RAM } else { 0 });
}

/// Waits for the device to finish what it started (a factorial, a DMA
/// transfer): used at open and by restore.
fn quiesce(regs: &MmioWindow) -> Result<(), EduError> {
    wait_fact(regs)?;
    wait_dma(regs)
}

/// The device state a transaction can change, saved at its start.
#[derive(Debug, Clone)]
pub struct EduCheckpoint {
    pub regs: RegCheckpoint,
    pub irq_status: u32,
}

/// The driver.
#[derive(Debug)]
pub struct Edu {
    regs: MmioWindow,
    irq: UioIrq,
    config: pci::Config,
    buf: DmaRegion,
    memo: Vec<(u32, u32)>,
    memo_sum: u64,
    pub stats: Counters,
    pub sysfs: PathBuf,
}

/// The driver's entry points (the "driver trait" a framework would call).
pub trait EduOps {
    /// Writes `v` to the liveness register and checks it reads back `!v`.
    fn liveness(&mut self, v: u32) -> Result<u32, EduError>;
    /// `n!` by polling (cached by the driver).
    fn factorial(&mut self, n: u32) -> Result<u32, EduError>;
    /// `n!` with the completion interrupt.
    fn factorial_irq(&mut self, n: u32) -> Result<u32, EduError>;
    /// Copies `data` to the device buffer by DMA and back into host memory.
    fn dma_roundtrip(&mut self, data: &[u8]) -> Result<Vec<u8>, EduError>;
    /// Raises interrupt `v` and waits for it; returns the interrupt status.
    fn raise_irq(&mut self, v: u32) -> Result<u32, EduError>;
}

#[fgft::driver]
impl EduOps for Edu {
    #[fgft::isolate(err = EIO)]
    fn liveness(&mut self, v: u32) -> Result<u32, EduError> {
        self.regs.write32(LIVENESS, v);
        let read = self.regs.read32(LIVENESS);
        if read != !v {
            return Err(EduError::Liveness { wrote: v, read });
        }
        Ok(read)
    }

    #[fgft::isolate(err = EIO)]
    fn factorial(&mut self, n: u32) -> Result<u32, EduError> {
        check_memo(&self.memo, self.memo_sum);
        if let Some(&(_, v)) = self.memo.iter().find(|(m, _)| *m == n) {
            return Ok(v);
        }
        self.regs.write32(FACT, n);
        if fault::fire(Fault::Panic) {
            panic!("edu: injected panic in factorial({n})");
        }
        if fault::fire(Fault::MmioOutside) {
            let past = self.regs.len() + 0x100;
            self.regs.read32(past);
        }
        if fault::fire(Fault::MmioUnmapped) {
            self.regs.write32(0x40, n);
        }
        if fault::fire(Fault::MmioWidth) {
            self.regs.read64(FACT);
        }
        wait_fact(&self.regs)?;
        let v = self.regs.read32(FACT);
        if self.memo.len() == MEMO_LEN {
            let (on, ov) = self.memo.remove(0);
            self.memo_sum = self.memo_sum.wrapping_sub(memo_hash(on, ov));
        }
        self.memo.push((n, v));
        self.memo_sum = self.memo_sum.wrapping_add(memo_hash(n, v));
        if fault::fire(Fault::CorruptState) {
            self.memo[0].1 ^= 0xdead;
            self.stats.factorials += 1000;
            self.regs.write32(LIVENESS, 0x0bad_0bad);
            self.regs.write32(STATUS, STATUS_IRQ_FACT);
        }
        let mut entries = self.memo.len() as u64;
        if fault::fire(Fault::DivZero) {
            entries -= self.memo.len() as u64;
        }
        self.stats.factorials += 1;
        self.stats.per_cache_entry = self.stats.factorials / entries;
        check_memo(&self.memo, self.memo_sum);
        Ok(v)
    }

    #[fgft::isolate(err = EIO)]
    fn factorial_irq(&mut self, n: u32) -> Result<u32, EduError> {
        self.regs.write32(STATUS, STATUS_IRQ_FACT);
        self.regs.write32(FACT, n);
        self.irq.wait(Duration::from_secs(2))?;
        let st = self.regs.read32(IRQ_STATUS);
        if fault::fire(Fault::PanicIrq) {
            panic!("edu: injected panic before acknowledging interrupt {st:#x}");
        }
        self.regs.write32(IRQ_ACK, st);
        self.config.unmask_intx()?;
        self.regs.write32(STATUS, 0);
        let v = self.regs.read32(FACT);
        self.stats.irqs += 1;
        Ok(v)
    }

    #[fgft::isolate(err = EIO)]
    fn dma_roundtrip(&mut self, data: &[u8]) -> Result<Vec<u8>, EduError> {
        if data.len() > MAX_DMA || data.is_empty() {
            return Err(EduError::TooLong(data.len()));
        }
        let len = data.len() as u64;
        self.buf.write_at(0, data)?;
        self.buf.write_at(MAX_DMA, &vec![0u8; data.len()])?;
        let mut dev = DEV_BUF;
        let mut host = self.buf.bus();
        if fault::fire(Fault::WrongDmaDevice) {
            dev += DEV_BUF_LEN;
        }
        if fault::fire(Fault::WrongDmaHost) {
            host += 16 << 20;
        }
        start_dma(&self.regs, host, dev, len, false);
        wait_dma(&self.regs)?;
        start_dma(
            &self.regs,
            self.buf.bus() + MAX_DMA as u64,
            DEV_BUF,
            len,
            true,
        );
        if fault::fire(Fault::PanicDma) {
            panic!("edu: injected panic with a DMA transfer in flight");
        }
        wait_dma(&self.regs)?;
        let mut out = vec![0u8; data.len()];
        self.buf.read_at(MAX_DMA, &mut out)?;
        self.stats.dma_bytes += 2 * len;
        Ok(out)
    }

    #[fgft::isolate(err = EIO)]
    fn raise_irq(&mut self, v: u32) -> Result<u32, EduError> {
        self.regs.write32(IRQ_RAISE, v);
        if fault::fire(Fault::PanicRaise) {
            panic!("edu: injected panic after raising interrupt {v:#x}");
        }
        self.irq.wait(Duration::from_secs(2))?;
        let st = self.regs.read32(IRQ_STATUS);
        self.regs.write32(IRQ_ACK, st);
        self.config.unmask_intx()?;
        self.stats.irqs += 1;
        Ok(st)
    }
}

#[fgft::driver]
impl Edu {
    /// Device checkpoint: the restorable registers and the pending
    /// interrupts.
    #[fgft::checkpoint]
    fn checkpoint(&self) -> EduCheckpoint {
        EduCheckpoint {
            regs: self.regs.checkpoint(),
            irq_status: self.regs.read32(IRQ_STATUS),
        }
    }

    /// Device restore: let started work finish (it is not replayed), put
    /// back the registers the transaction wrote, acknowledge interrupts it
    /// left pending, unmask INTx.
    #[fgft::restore]
    fn restore(&mut self, cp: &EduCheckpoint, txn: &fgft::Txn) -> Result<(), EduError> {
        quiesce(&self.regs)?;
        self.regs.undo_writes(&cp.regs, txn);
        let pending = self.regs.read32(IRQ_STATUS) & !cp.irq_status;
        if pending != 0 {
            self.regs.write32(IRQ_ACK, pending);
        }
        // The interrupt line only needs attention when the transaction
        // could have made the device interrupt (config-space access through
        // sysfs is slow).
        let irq_touched = txn
            .mmio_writes()
            .iter()
            .any(|w| matches!(w.off, STATUS | IRQ_RAISE | DMA_CMD));
        if pending != 0 || irq_touched {
            self.irq.drain()?;
            self.config.unmask_intx()?;
        }
        Ok(())
    }
}

impl Edu {
    /// Finds the device, binds it to `uio_pci_generic`, maps BAR0, enables
    /// DMA, allocates the DMA buffer and brings the device to a known state.
    pub fn open() -> Result<Edu, EduError> {
        let sysfs = pci::find()?;
        let uio = pci::bind_uio(&sysfs)?;
        let irq = UioIrq::open(&uio)?;
        let config = pci::Config::open(&sysfs)?;
        config.enable_dma()?;
        let regs = MmioWindow::map_resource("edu-bar0", &sysfs.join("resource0"), REGS)?;
        let id = regs.read32(IDENT);
        if id & 0xff != 0xed {
            return Err(EduError::BadIdent(id));
        }
        let buf = DmaRegion::alloc(2 * MAX_DMA, DMA_MASK)?;
        match fgft::grants::grant(Space::DevMem, DEV_BUF, DEV_BUF_LEN, FGFT_RW) {
            Ok(()) | Err(fgft::Error::Overlap { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        let edu = Edu {
            regs,
            irq,
            config,
            buf,
            memo: Vec::new(),
            memo_sum: 0,
            stats: Counters::default(),
            sysfs,
        };
        edu.reset()?;
        Ok(edu)
    }

    /// Known state: nothing running, no interrupt pending or enabled.
    fn reset(&self) -> Result<(), EduError> {
        quiesce(&self.regs)?;
        self.regs.write32(STATUS, 0);
        let st = self.regs.read32(IRQ_STATUS);
        if st != 0 {
            self.regs.write32(IRQ_ACK, st);
        }
        self.irq.drain()?;
        self.config.unmask_intx()
    }

    /// Reads a register directly, outside any transaction (for tests):
    /// 4 bytes below 0x80, 8 from there on; `u64::MAX` when out of the
    /// window.
    pub fn peek(&self, off: u64) -> u64 {
        let width = if off < 0x80 { W4 } else { W8 };
        self.regs.try_read(off, width).unwrap_or(u64::MAX)
    }

    pub fn ident(&self) -> u32 {
        self.regs.read32(IDENT)
    }

    /// Entries of the factorial cache.
    pub fn memo_len(&self) -> usize {
        self.memo.len()
    }

    pub fn dma_bus(&self) -> u64 {
        self.buf.bus()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factorial_wraps_like_the_device() {
        assert_eq!(expected_factorial(0), 1);
        assert_eq!(expected_factorial(5), 120);
        assert_eq!(expected_factorial(12), 479_001_600);
        // 13! does not fit in 32 bits; the device keeps the low bits.
        assert_eq!(expected_factorial(13), 6_227_020_800u64 as u32);
    }

    #[test]
    fn register_table_follows_the_edu_spec() {
        for r in REGS {
            // 4-byte accesses only below 0x80; 4 or 8 from there on.
            if r.off < 0x80 {
                assert_eq!(r.widths, W4, "{}", r.name);
            } else {
                assert_eq!(r.widths, W4 | W8, "{}", r.name);
            }
            assert!(r.off + u64::from(r.max_width()) <= 1 << 20, "{}", r.name);
        }
        let mut offs: Vec<u64> = REGS.iter().map(|r| r.off).collect();
        offs.sort_unstable();
        offs.dedup();
        assert_eq!(offs.len(), REGS.len());
    }

    #[test]
    fn memo_check_notices_corruption() {
        let memo = vec![(3, 6), (4, 24)];
        let sum = memo_sum(&memo);
        check_memo(&memo, sum);
        let bad = vec![(3, 6), (4, 25)];
        assert!(std::panic::catch_unwind(|| check_memo(&bad, sum)).is_err());
    }
}

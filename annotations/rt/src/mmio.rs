//! Checked MMIO: a register window whose accessors check offset and width
//! against the transaction's range table before touching the device, and
//! record the writes a transaction makes so that the device restore knows
//! what to put back (the Rust counterpart of the undo log for device
//! registers).
//!
//! A window is described by a register table (data, not code): each
//! register's offset, allowed access widths, rights and how a write to it is
//! undone. Creating a window registers each register as a standing grant
//! ([`crate::grants`]), so inside a transaction an access is allowed only
//! when it falls inside one register with the right rights; the width rule
//! follows from the grant length (a 4-byte register refuses an 8-byte
//! access).

use crate::range::{FGFT_R, FGFT_W};
use crate::txn::{self, Cause, Space, Txn};
use crate::undo::MmioWrite;
use crate::{grants, Error};
use std::fmt;
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::ptr::NonNull;

/// Allowed widths, as a mask of byte counts (`W4 | W8`).
pub const W1: u8 = 1;
pub const W2: u8 = 2;
pub const W4: u8 = 4;
pub const W8: u8 = 8;

/// How a write to a register made inside an aborted transaction is undone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undo {
    /// Write back the value the device checkpoint read (the register must be
    /// readable and writable).
    Restore,
    /// Write back the complement of the checkpointed value: for a register
    /// that reads back the inverse of what was written (edu's liveness).
    RestoreInverted,
    /// Write the same value to the register at this offset (e.g. an
    /// interrupt raise is undone by acknowledging it).
    Compensate(u64),
    /// Nothing can or need be undone here (a command that started work, a
    /// read-only or self-clearing register); the driver's restore handles
    /// the device's consequences.
    None,
}

/// One register of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reg {
    pub name: &'static str,
    pub off: u64,
    /// Mask of allowed widths (`W4`, `W4 | W8`).
    pub widths: u8,
    /// `FGFT_R`, `FGFT_W` or `FGFT_RW`.
    pub rights: u32,
    pub undo: Undo,
}

impl Reg {
    pub const fn new(name: &'static str, off: u64, widths: u8, rights: u32, undo: Undo) -> Self {
        Reg {
            name,
            off,
            widths,
            rights,
            undo,
        }
    }

    /// The widest allowed access (the grant length).
    pub fn max_width(&self) -> u8 {
        [W8, W4, W2, W1]
            .into_iter()
            .find(|w| self.widths & w != 0)
            .unwrap_or(W1)
    }
}

/// Why an access was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Past the end of the window, or misaligned.
    OutOfWindow { off: u64, width: u8, len: u64 },
    /// Inside the window but not granted to the transaction with these
    /// rights (no such register, wrong width, write to a read-only one).
    NotGranted { off: u64, width: u8, rights: u32 },
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::OutOfWindow { off, width, len } => write!(
                f,
                "MMIO access of {width} bytes at {off:#x} is outside the window (length {len:#x}) or misaligned"
            ),
            Refused::NotGranted { off, width, rights } => write!(
                f,
                "MMIO {} of {width} bytes at {off:#x} is not granted by the range table",
                if rights & FGFT_W != 0 { "write" } else { "read" }
            ),
        }
    }
}

struct Mapping {
    len: usize,
}

/// A mapped register window (a PCI BAR).
pub struct MmioWindow {
    name: &'static str,
    base: NonNull<u8>,
    len: u64,
    regs: &'static [Reg],
    mapping: Option<Mapping>,
}

// SAFETY: the window is a device mapping; volatile accesses through it are
// valid from any thread.
unsafe impl Send for MmioWindow {}

/// Register values saved by [`MmioWindow::checkpoint`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegCheckpoint {
    window: u64,
    /// `(offset, width, value)` of every `Undo::Restore` register.
    pub values: Vec<(u64, u8, u64)>,
}

/// What [`MmioWindow::undo_writes`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UndoReport {
    /// Registers written back from the checkpoint.
    pub restored: usize,
    /// Compensating writes made.
    pub compensated: usize,
    /// Logged writes that need no undo.
    pub ignored: usize,
}

impl MmioWindow {
    /// Wraps `len` bytes of device memory at `base`.
    ///
    /// # Safety
    /// `base..base + len` must be a device mapping that stays valid for the
    /// window's lifetime, and each register of `regs` must be safe to access
    /// with the widths it allows.
    pub unsafe fn from_raw(
        name: &'static str,
        base: *mut u8,
        len: u64,
        regs: &'static [Reg],
    ) -> Result<Self, Error> {
        let base = NonNull::new(base).ok_or(Error::NullWindow { name })?;
        let w = MmioWindow {
            name,
            base,
            len,
            regs,
            mapping: None,
        };
        w.register()?;
        Ok(w)
    }

    /// Maps a whole PCI resource file (`/sys/bus/pci/devices/D/resource0`)
    /// and wraps it.
    pub fn map_resource(
        name: &'static str,
        path: &Path,
        regs: &'static [Reg],
    ) -> Result<Self, Error> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let ulen = usize::try_from(len).map_err(|_| Error::BadRange { addr: 0, len })?;
        if len == 0 {
            return Err(Error::BadRange { addr: 0, len });
        }
        // SAFETY: mapping a device resource file shared, at a fresh address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ulen,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io(std::io::Error::last_os_error()));
        }
        let base = NonNull::new(p.cast::<u8>()).ok_or(Error::NullWindow { name })?;
        let w = MmioWindow {
            name,
            base,
            len,
            regs,
            mapping: Some(Mapping { len: ulen }),
        };
        w.register()?;
        Ok(w)
    }

    fn register(&self) -> Result<(), Error> {
        for r in self.regs {
            let w = u64::from(r.max_width());
            if r.off.checked_add(w).is_none_or(|e| e > self.len) {
                return Err(Error::RegOutsideWindow {
                    name: self.name,
                    reg: r.name,
                    off: r.off,
                });
            }
            if let Err(e) = grants::grant(Space::Mmio, self.addr(r.off), w, r.rights) {
                self.unregister();
                return Err(e);
            }
        }
        Ok(())
    }

    fn unregister(&self) {
        for r in self.regs {
            grants::revoke(Space::Mmio, self.addr(r.off));
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn regs(&self) -> &'static [Reg] {
        self.regs
    }

    /// The window's identity in logs: its base address.
    pub fn id(&self) -> u64 {
        self.base.as_ptr() as u64
    }

    fn addr(&self, off: u64) -> u64 {
        self.id().wrapping_add(off)
    }

    /// Checks an access without making it: bounds and alignment always,
    /// the range table inside a transaction.
    pub fn check(&self, off: u64, width: u8, rights: u32) -> Result<(), Refused> {
        let w = u64::from(width);
        if !matches!(width, W1 | W2 | W4 | W8)
            || !off.is_multiple_of(w)
            || off.checked_add(w).is_none_or(|e| e > self.len)
        {
            return Err(Refused::OutOfWindow {
                off,
                width,
                len: self.len,
            });
        }
        if !txn::check(Space::Mmio, self.addr(off), w, rights) {
            return Err(Refused::NotGranted { off, width, rights });
        }
        Ok(())
    }

    fn raw_read(&self, off: u64, width: u8) -> u64 {
        // SAFETY: `check` proved off..off+width lies inside the mapping and
        // is naturally aligned.
        unsafe {
            let p = self.base.as_ptr().add(off as usize);
            match width {
                W1 => u64::from(p.read_volatile()),
                W2 => u64::from(p.cast::<u16>().read_volatile()),
                W4 => u64::from(p.cast::<u32>().read_volatile()),
                _ => p.cast::<u64>().read_volatile(),
            }
        }
    }

    fn raw_write(&self, off: u64, width: u8, v: u64) {
        // SAFETY: as in raw_read.
        unsafe {
            let p = self.base.as_ptr().add(off as usize);
            match width {
                W1 => p.write_volatile(v as u8),
                W2 => p.cast::<u16>().write_volatile(v as u16),
                W4 => p.cast::<u32>().write_volatile(v as u32),
                _ => p.cast::<u64>().write_volatile(v),
            }
        }
    }

    /// A checked read: `Err` when refused (the transaction goes on).
    pub fn try_read(&self, off: u64, width: u8) -> Result<u64, Refused> {
        self.check(off, width, FGFT_R)?;
        Ok(self.raw_read(off, width))
    }

    /// A checked write, logged when inside a transaction.
    pub fn try_write(&self, off: u64, width: u8, v: u64) -> Result<(), Refused> {
        self.check(off, width, FGFT_W)?;
        if txn::depth() > 0 {
            txn::log_mmio_write(MmioWrite {
                window: self.id(),
                off,
                width,
                value: v,
            });
        }
        self.raw_write(off, width, v);
        Ok(())
    }

    /// A checked read that fails the transaction ([`Cause::Range`]) when
    /// refused; outside a transaction a refused access (out of the window)
    /// panics, as it is a driver bug.
    pub fn read(&self, off: u64, width: u8) -> u64 {
        match self.try_read(off, width) {
            Ok(v) => v,
            Err(e) => txn::fail(Cause::Range, format!("{}: {e}", self.name)),
        }
    }

    /// A checked write that fails the transaction when refused.
    pub fn write(&self, off: u64, width: u8, v: u64) {
        if let Err(e) = self.try_write(off, width, v) {
            txn::fail(Cause::Range, format!("{}: {e}", self.name))
        }
    }

    pub fn read32(&self, off: u64) -> u32 {
        self.read(off, W4) as u32
    }

    pub fn read64(&self, off: u64) -> u64 {
        self.read(off, W8)
    }

    pub fn write32(&self, off: u64, v: u32) {
        self.write(off, W4, u64::from(v))
    }

    pub fn write64(&self, off: u64, v: u64) {
        self.write(off, W8, v)
    }

    /// Reads every `Undo::Restore`/`RestoreInverted` register (the register part of a device
    /// checkpoint).
    pub fn checkpoint(&self) -> RegCheckpoint {
        let values = self
            .regs
            .iter()
            .filter(|r| {
                matches!(r.undo, Undo::Restore | Undo::RestoreInverted) && r.rights & FGFT_R != 0
            })
            .map(|r| {
                let w = r.max_width();
                (r.off, w, self.read(r.off, w))
            })
            .collect();
        RegCheckpoint {
            window: self.id(),
            values,
        }
    }

    /// Undoes the writes `txn` made to this window, newest first: writes the
    /// checkpointed value back into each `Undo::Restore` register written
    /// (once), makes each `Undo::Compensate` write. Runs after the
    /// transaction ended, so its own writes are neither checked against nor
    /// logged in it (the window bounds still apply).
    pub fn undo_writes(&self, cp: &RegCheckpoint, txn: &Txn) -> UndoReport {
        let mut rep = UndoReport::default();
        let mut done: Vec<u64> = Vec::new();
        for w in txn
            .mmio_writes()
            .iter()
            .rev()
            .filter(|w| w.window == self.id())
        {
            let reg = self
                .regs
                .iter()
                .find(|r| w.off >= r.off && w.off < r.off + u64::from(r.max_width()));
            match reg.map(|r| (r, r.undo)) {
                Some((r, undo @ (Undo::Restore | Undo::RestoreInverted)))
                    if cp.window == self.id() =>
                {
                    if !done.contains(&r.off) {
                        if let Some(&(off, width, v)) =
                            cp.values.iter().find(|(o, _, _)| *o == r.off)
                        {
                            let v = if undo == Undo::RestoreInverted { !v } else { v };
                            let _ = self.try_write_unlogged(off, width, v);
                            rep.restored += 1;
                        }
                        done.push(r.off);
                    }
                }
                Some((_, Undo::Compensate(to))) => {
                    let _ = self.try_write_unlogged(to, w.width, w.value);
                    rep.compensated += 1;
                }
                _ => rep.ignored += 1,
            }
        }
        rep
    }

    fn try_write_unlogged(&self, off: u64, width: u8, v: u64) -> Result<(), Refused> {
        self.check(off, width, FGFT_W)?;
        self.raw_write(off, width, v);
        Ok(())
    }
}

impl Drop for MmioWindow {
    fn drop(&mut self) {
        self.unregister();
        if let Some(m) = &self.mapping {
            // SAFETY: unmapping what map_resource mapped.
            unsafe {
                libc::munmap(self.base.as_ptr().cast(), m.len);
            }
        }
    }
}

impl crate::snap::DeviceState for MmioWindow {}

impl fmt::Debug for MmioWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MmioWindow")
            .field("name", &self.name)
            .field("base", &self.base)
            .field("len", &self.len)
            .field("regs", &self.regs.len())
            .finish()
    }
}

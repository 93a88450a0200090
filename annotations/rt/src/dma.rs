//! DMA buffers in user space and checked DMA addresses.
//!
//! A [`DmaRegion`] is locked anonymous memory whose bus address is its
//! physical address, read from `/proc/self/pagemap` (needs root). That is
//! the bus address only when no IOMMU translates device addresses, as in a
//! QEMU guest without a virtual IOMMU. Creating a region registers a
//! standing DMA grant; a driver checks every address it is about to hand to
//! the device with [`check_dma`], so a wrong address fails the transaction
//! before the device sees it.

use crate::range::FGFT_RW;
use crate::txn::{self, Cause, Space};
use crate::{grants, Error};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::ptr::NonNull;

/// Bytes per page (x86-64).
pub const PAGE: usize = 4096;

/// Locked host memory the device can reach by DMA.
#[derive(Debug)]
pub struct DmaRegion {
    ptr: NonNull<u8>,
    len: usize,
    bus: u64,
}

// SAFETY: plain memory owned by the region.
unsafe impl Send for DmaRegion {}

/// Physical address of the page holding `vaddr`, from `/proc/self/pagemap`.
pub fn phys_addr(vaddr: usize) -> Result<u64, Error> {
    let path = PathBuf::from("/proc/self/pagemap");
    let io = |source| Error::Io {
        path: path.clone(),
        source,
    };
    let f = File::open(&path).map_err(io)?;
    let mut e = [0u8; 8];
    f.read_exact_at(&mut e, (vaddr / PAGE) as u64 * 8)
        .map_err(io)?;
    let e = u64::from_le_bytes(e);
    let pfn = e & ((1u64 << 55) - 1);
    if e >> 63 == 0 || pfn == 0 {
        return Err(Error::NoPhysAddr {
            vaddr: vaddr as u64,
        });
    }
    Ok(pfn * PAGE as u64 + (vaddr % PAGE) as u64)
}

impl DmaRegion {
    /// Allocates `len` bytes (at most one page, so they are physically
    /// contiguous), locked in memory, below `mask` in bus address space.
    pub fn alloc(len: usize, mask: u64) -> Result<Self, Error> {
        if len == 0 || len > PAGE {
            return Err(Error::BadRange {
                addr: 0,
                len: len as u64,
            });
        }
        // SAFETY: a fresh private anonymous mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE | libc::MAP_LOCKED,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::Io {
                path: PathBuf::from("mmap(MAP_LOCKED)"),
                source: std::io::Error::last_os_error(),
            });
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(Error::NoPhysAddr { vaddr: 0 })?;
        // Touch it so the page is present before pagemap is read.
        // SAFETY: inside the fresh mapping.
        unsafe { ptr.as_ptr().write_volatile(0) };
        let unmap = |e| {
            // SAFETY: unmapping the mapping made above.
            unsafe { libc::munmap(p, PAGE) };
            e
        };
        let bus = phys_addr(p as usize).map_err(unmap)?;
        if bus.checked_add(len as u64 - 1).none_or_above(mask) {
            return Err(unmap(Error::AboveDmaMask { bus, mask }));
        }
        grants::grant(Space::Dma, bus, len as u64, FGFT_RW).map_err(unmap)?;
        Ok(DmaRegion { ptr, len, bus })
    }

    pub fn bus(&self) -> u64 {
        self.bus
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `data` into the region at `off` (volatile: the device reads it).
    pub fn write_at(&self, off: usize, data: &[u8]) -> Result<(), Error> {
        if off.checked_add(data.len()).none_or_above(self.len as u64) {
            return Err(Error::BadRange {
                addr: off as u64,
                len: data.len() as u64,
            });
        }
        for (i, b) in data.iter().enumerate() {
            // SAFETY: bounds checked above.
            unsafe { self.ptr.as_ptr().add(off + i).write_volatile(*b) };
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    /// Copies from the region at `off` into `out` (volatile: the device
    /// wrote it).
    pub fn read_at(&self, off: usize, out: &mut [u8]) -> Result<(), Error> {
        if off.checked_add(out.len()).none_or_above(self.len as u64) {
            return Err(Error::BadRange {
                addr: off as u64,
                len: out.len() as u64,
            });
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: bounds checked above.
            *b = unsafe { self.ptr.as_ptr().add(off + i).read_volatile() };
        }
        Ok(())
    }
}

trait GtExt {
    fn none_or_above(self, limit: u64) -> bool;
}

impl<T: TryInto<u64>> GtExt for Option<T> {
    fn none_or_above(self, limit: u64) -> bool {
        match self.map(TryInto::try_into) {
            Some(Ok(v)) => v > limit,
            _ => true,
        }
    }
}

impl Drop for DmaRegion {
    fn drop(&mut self) {
        grants::revoke(Space::Dma, self.bus);
        // SAFETY: unmapping what alloc mapped.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), PAGE) };
    }
}

impl crate::snap::DeviceState for DmaRegion {}

/// Fails the current transaction ([`Cause::Range`]) unless
/// `[addr, addr + len)` of `space` (`Space::Dma` for host memory,
/// `Space::DevMem` for the device's own buffers) is granted with `rights`.
/// Call it on every address about to be programmed into the device.
pub fn check_dma(space: Space, addr: u64, len: u64, rights: u32) {
    txn::check_or_fail(space, addr, len, rights, &|| {
        format!(
            "DMA {} range {addr:#x}+{len:#x} is not granted",
            space.name()
        )
    });
}

/// Whether `[addr, addr + len)` of `space` is granted with `rights` (always
/// true outside a transaction).
pub fn dma_allowed(space: Space, addr: u64, len: u64, rights: u32) -> bool {
    txn::check(space, addr, len, rights)
}

/// Explicit failure helper for drivers: [`txn::fail`] with
/// [`Cause::Explicit`].
pub fn fail_explicit(message: impl Into<String>) -> ! {
    txn::fail(Cause::Explicit, message.into())
}

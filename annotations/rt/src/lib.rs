//! fgft for Rust drivers: entry points that run as transactions.
//!
//! This crate (package `fgft-rt`, library name `fgft`) is the runtime, and
//! re-exports the attributes of `fgft-macros`, so drivers write
//! `#[fgft::driver]`, `#[fgft::isolate]`, `#[fgft::checkpoint]` and
//! `#[fgft::restore]`. It mirrors the C runtime of the kernel side
//! (`runtime-kmod/include/fgft/runtime.h`), concept for concept:
//!
//! | C runtime                         | here                                   |
//! |-----------------------------------|----------------------------------------|
//! | `fgft_txn_begin/call/commit/abort`| [`Txn::begin`], [`TxnGuard::call`], [`TxnGuard::commit`], [`Failed::abort`] |
//! | `enum fgft_cause`                 | [`Cause`] (`Panic` for OOPS/GPF/TRAP, `Range`, `Explicit`) |
//! | `fgft_txn_fail`                   | [`fail`]                               |
//! | `FGFT_R`, `FGFT_W`, `FGFT_RW`     | [`FGFT_R`], [`FGFT_W`], [`FGFT_RW`]    |
//! | `fgft_map/map_derived/unmap/check`| [`RangeTable`], [`map`], [`unmap`], [`check`], [`grants`] |
//! | `fgft_undo_push/defer_push`       | [`undo_push`], [`defer_push`], [`UndoLog`] |
//! | checked loads/stores              | [`MmioWindow`] accessors, [`dma::check_dma`] |
//! | `struct fgft_dev_ops`             | [`Device`] (from `#[fgft::checkpoint]`/`#[fgft::restore]`), [`DeviceOf`] for kernel-style `dev: &mut D` entry points |
//! | `struct fgft_entry`, debugfs      | [`Entry`], [`EntryStats`], [`set_isolation`] |
//! | `fgft_txn_abort()` error code     | [`Abort`] with [`Errno`], via [`FromAbort`]/[`AbortValue`] |
//!
//! Faults are panics (caught with `catch_unwind`; the crate must not be
//! built with `panic = "abort"`) and refused checks.

pub mod device;
pub mod dma;
pub mod errno;
mod error;
pub mod grants;
#[cfg(feature = "kernel")]
pub mod kernel;
pub mod mmio;
pub mod range;
pub mod snap;
pub mod stats;
pub mod txn;
pub mod undo;

pub use device::{Device, DeviceOf, RestoreResult};
pub use dma::{check_dma, DmaRegion};
pub use errno::{errno_by_name, Abort, AbortValue, Errno, FromAbort};
pub use error::Error;
pub use fgft_macros::{checkpoint, driver, isolate, restore};
pub use mmio::{MmioWindow, Refused, Reg, RegCheckpoint, Undo, UndoReport};
pub use range::{RangeTable, FGFT_R, FGFT_RW, FGFT_W};
pub use snap::DeviceState;
pub use stats::{entries, set_isolation, set_isolation_global, Entry, EntryStats};
pub use txn::{
    check, check_or_fail, current, defer_push, depth, fail, map, undo_push, unmap, Cause, Failed,
    Space, Txn, TxnGuard,
};
pub use undo::{MmioWrite, UndoLog};

/// Items the generated code names; not for hand-written code.
#[doc(hidden)]
pub mod __private {
    pub use crate::snap::{Field, ViaClone, ViaDevice, ViaNone};
    pub use std::panic::AssertUnwindSafe;
}

//! Device checkpoints (`struct fgft_dev_ops`): implemented by
//! `#[fgft::driver]` from the methods marked `#[fgft::checkpoint]` and
//! `#[fgft::restore]`.

use crate::txn::Txn;
use std::fmt::Debug;

/// A driver whose device state can be checkpointed and restored.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no device checkpoint, which #[fgft::isolate] needs",
    label = "isolated entry point of `{Self}`",
    note = "mark its checkpoint and restore methods with #[fgft::checkpoint] and #[fgft::restore] in an impl block of `{Self}` that carries #[fgft::driver]"
)]
pub trait Device {
    type Checkpoint;
    /// Saves the device state (cheap; runs at the start of every
    /// transaction).
    fn fgft_checkpoint(&mut self) -> Self::Checkpoint;
    /// Brings the device back to `cp`, knowing what the aborted transaction
    /// wrote to it.
    fn fgft_restore(&mut self, cp: &Self::Checkpoint, txn: &Txn) -> Result<(), String>;
}

/// The device checkpoint of a kernel-style driver, whose entry points keep
/// their state in a parameter (`fn read_status(dev: &mut phy::Device)`)
/// instead of `self`: `Self` is the driver type (`PhyAX88772A`), `D` the
/// device type. Implemented by `#[fgft::driver]` from a receiverless
/// `#[fgft::checkpoint] fn save(dev: &mut D) -> S` and
/// `#[fgft::restore] fn restore(dev: &mut D, cp: &S [, txn: &fgft::Txn])`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no device checkpoint for `{D}`, which #[fgft::isolate] on a kernel-style method needs",
    label = "kernel-style isolated entry point of `{Self}`, with its state in a `&mut {D}` parameter",
    note = "in an impl block of `{Self}` that carries #[fgft::driver], mark `fn save(dev: &mut {D}) -> Saved` with #[fgft::checkpoint] and `fn restore(dev: &mut {D}, cp: &Saved)` with #[fgft::restore]"
)]
pub trait DeviceOf<D: ?Sized> {
    type Checkpoint;
    /// Saves the state of `dev` (runs at the start of every transaction).
    fn fgft_checkpoint(dev: &mut D) -> Self::Checkpoint;
    /// Brings `dev` back to `cp`, knowing what the aborted transaction
    /// wrote.
    fn fgft_restore(dev: &mut D, cp: &Self::Checkpoint, txn: &Txn) -> Result<(), String>;
}

/// What a `#[fgft::restore]` method may return: `()` or `Result<(), E>`
/// with `E: Debug`.
pub trait RestoreResult {
    fn into_restore_result(self) -> Result<(), String>;
}

impl RestoreResult for () {
    fn into_restore_result(self) -> Result<(), String> {
        Ok(())
    }
}

/// Any error with `Debug` (the kernel's `Error` has no `Display`).
impl<E: Debug> RestoreResult for Result<(), E> {
    fn into_restore_result(self) -> Result<(), String> {
        self.map_err(|e| format!("{e:?}"))
    }
}

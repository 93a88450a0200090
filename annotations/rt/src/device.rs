//! Device checkpoints (`struct fgft_dev_ops`): implemented by
//! `#[fgft::driver]` from the methods marked `#[fgft::checkpoint]` and
//! `#[fgft::restore]`.

use crate::txn::Txn;
use std::fmt::Display;

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

/// What a `#[fgft::restore]` method may return: `()` or `Result<(), E>`.
pub trait RestoreResult {
    fn into_restore_result(self) -> Result<(), String>;
}

impl RestoreResult for () {
    fn into_restore_result(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: Display> RestoreResult for Result<(), E> {
    fn into_restore_result(self) -> Result<(), String> {
        self.map_err(|e| e.to_string())
    }
}

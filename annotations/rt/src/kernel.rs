//! The kernel crate's types as fgft sees them (feature `kernel`).
//!
//! Kernel-style entry points return `kernel::error::Result<T>`; an aborted
//! transaction becomes the negative errno of its `Abort` (`-EIO` by
//! default), as the C runtime's `fgft_txn_abort()` returns it.

use crate::{Abort, FromAbort};

impl FromAbort for kernel::error::Error {
    fn from_abort(abort: Abort) -> Self {
        kernel::error::Error::from_errno(-abort.errno.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{errno, Cause};
    use std::time::Duration;

    fn abort(errno: crate::Errno) -> Abort {
        Abort {
            entry: "T::m",
            errno,
            cause: Cause::Panic,
            message: None,
            recovery: Duration::ZERO,
            unwind: Duration::ZERO,
            restored: true,
        }
    }

    #[test]
    fn abort_becomes_the_negative_errno() {
        let e = kernel::error::Error::from_abort(abort(errno::EIO));
        assert_eq!(e, kernel::error::code::EIO);
        assert_eq!(e.to_errno(), -5);
        let e = kernel::error::Error::from_abort(abort(errno::ENODEV));
        assert_eq!(e.to_errno(), -19);
    }
}

//! Error values an aborted transaction hands back to the caller.

use crate::Cause;
use std::fmt;
use std::time::Duration;

/// A positive errno value (`EIO` is 5). Entry points that return a kernel
/// style integer get `-errno`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

macro_rules! errnos {
    ($($name:ident = $v:expr, $text:expr;)*) => {
        $(#[doc = $text] pub const $name: Errno = Errno($v);)*
        /// `(name, value)` of every errno constant of this module.
        pub const ERRNO_TABLE: &[(&str, i32)] = &[$((stringify!($name), $v)),*];
    };
}

errnos! {
    EPERM = 1, "Operation not permitted";
    ENOENT = 2, "No such file or directory";
    EINTR = 4, "Interrupted call";
    EIO = 5, "I/O error (the default for an aborted entry point)";
    ENXIO = 6, "No such device or address";
    EAGAIN = 11, "Try again";
    ENOMEM = 12, "Out of memory";
    EFAULT = 14, "Bad address";
    EBUSY = 16, "Device or resource busy";
    ENODEV = 19, "No such device";
    EINVAL = 22, "Invalid argument";
    ERANGE = 34, "Result out of range";
    ETIMEDOUT = 110, "Timed out";
    ECANCELED = 125, "Operation canceled";
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match ERRNO_TABLE.iter().find(|(_, v)| *v == self.0) {
            Some((n, _)) => f.write_str(n),
            None => write!(f, "errno {}", self.0),
        }
    }
}

/// What an aborted transaction reports: the Rust counterpart of the error
/// code `fgft_txn_abort()` returns, with the cause and the recovery time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Abort {
    /// The isolated entry point (`Type::method`).
    pub entry: &'static str,
    pub errno: Errno,
    pub cause: Cause,
    /// Panic message or refused access, when there is one.
    pub message: Option<String>,
    /// From the fault to the end of the abort (state, undo log and device
    /// restored).
    pub recovery: Duration,
    /// The part of `recovery` spent unwinding from the fault to the
    /// transaction's `call` (the rest is undo log and restore).
    pub unwind: Duration,
    /// False when the device restore itself failed.
    pub restored: bool,
}

impl fmt::Display for Abort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} aborted ({}, cause {:?}",
            self.entry, self.errno, self.cause
        )?;
        if let Some(m) = &self.message {
            write!(f, ": {m}")?;
        }
        write!(f, "); recovered in {} ns", self.recovery.as_nanos())?;
        if !self.restored {
            f.write_str(", device restore FAILED")?;
        }
        Ok(())
    }
}

impl std::error::Error for Abort {}

/// An error type that can carry an aborted transaction. Implement it for the
/// error type of your entry points' `Result`s.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry the error of an aborted transaction",
    label = "the error type of this isolated entry point",
    note = "implement `fgft::FromAbort` for `{Self}` (e.g. a variant holding `fgft::Abort`)"
)]
pub trait FromAbort {
    fn from_abort(abort: Abort) -> Self;
}

impl FromAbort for Abort {
    fn from_abort(abort: Abort) -> Self {
        abort
    }
}

impl FromAbort for std::io::Error {
    fn from_abort(abort: Abort) -> Self {
        std::io::Error::from_raw_os_error(abort.errno.0)
    }
}

impl FromAbort for Errno {
    fn from_abort(abort: Abort) -> Self {
        abort.errno
    }
}

/// A return type an isolated entry point can have: it can say "this call
/// failed" (`Result<T, E>` with `E: FromAbort`, or a kernel-style negative
/// errno integer).
#[diagnostic::on_unimplemented(
    message = "an isolated entry point cannot return `{Self}`: it cannot carry an error",
    label = "return type of an #[fgft::isolate] method",
    note = "return `Result<T, E>` with `E: fgft::FromAbort`, or an `i32`/`i64`/`isize` errno"
)]
pub trait AbortValue {
    fn from_abort(abort: Abort) -> Self;
}

impl<T, E: FromAbort> AbortValue for Result<T, E> {
    fn from_abort(abort: Abort) -> Self {
        Err(E::from_abort(abort))
    }
}

macro_rules! int_abort {
    ($($t:ty),*) => {$(
        impl AbortValue for $t {
            fn from_abort(abort: Abort) -> Self {
                -(abort.errno.0 as $t)
            }
        }
    )*};
}
int_abort!(i32, i64, isize);

/// Resolves an errno name of [`ERRNO_TABLE`].
pub fn errno_by_name(name: &str) -> Option<Errno> {
    ERRNO_TABLE
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| Errno(*v))
}

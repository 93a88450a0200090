//! Kernel errors: a negative errno wrapped in `Error`.

use core::fmt;

/// A kernel error code (negative errno), as `kernel::error::Error`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Error(i32);

/// `Result<T = (), E = Error>`, as the kernel crate defines it.
pub type Result<T = (), E = Error> = core::result::Result<T, E>;

impl Error {
    /// From a negative errno (`-EIO`); values outside `-4095..=-1` become
    /// `EINVAL`, as in the kernel.
    pub fn from_errno(errno: i32) -> Error {
        if (-4095..=-1).contains(&errno) {
            Error(errno)
        } else {
            code::EINVAL
        }
    }

    /// The negative errno.
    pub fn to_errno(self) -> i32 {
        self.0
    }

    fn name(self) -> Option<&'static str> {
        code::NAMES
            .iter()
            .find(|(_, e)| e.0 == self.0)
            .map(|(n, _)| *n)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n}"),
            None => write!(f, "Error({})", self.0),
        }
    }
}

/// Error codes (`kernel::error::code`).
pub mod code {
    use super::Error;

    macro_rules! codes {
        ($($name:ident = $v:expr;)*) => {
            $(#[doc = concat!("-", stringify!($name))] pub const $name: Error = Error(-$v);)*
            pub(crate) const NAMES: &[(&str, Error)] = &[$((stringify!($name), $name)),*];
        };
    }

    codes! {
        EPERM = 1;
        ENOENT = 2;
        EIO = 5;
        ENXIO = 6;
        EAGAIN = 11;
        ENOMEM = 12;
        EFAULT = 14;
        EBUSY = 16;
        ENODEV = 19;
        EINVAL = 22;
        ERANGE = 34;
        ETIMEDOUT = 110;
        ENOTSUPP = 524;
    }
}

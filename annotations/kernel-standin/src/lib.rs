//! A local stand-in of the kernel crate (`rust/kernel` in a kernel tree),
//! covering the types fgft's attributes meet in kernel-style drivers:
//! `kernel::error` and `kernel::net::phy`, with the 6.12 signatures.
//!
//! Debian's 6.12 and 6.1 kernels are built without `CONFIG_RUST`, so no
//! Rust driver can be built against their headers. fgft checks its
//! attributes against this crate instead (`annotations/macros/tests/ui`).
//! The types keep the kernel's shape where it matters to fgft: a
//! `phy::Device` is neither `Clone` nor `Copy` (in the kernel it wraps the C
//! `struct phy_device`), methods take `dev: &mut phy::Device` with no
//! receiver, and `Result` defaults to `Result<(), Error>`. Behind the API a
//! `phy::Device` is an emulated PHY (registers in memory), so tests can run.

pub mod error;
pub mod net;
pub mod prelude;

pub use macros::vtable;

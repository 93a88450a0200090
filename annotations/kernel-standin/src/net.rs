//! Networking (`kernel::net`).

pub mod phy;

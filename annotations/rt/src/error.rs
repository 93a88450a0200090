//! The one error type of fgft-rt.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}", path = .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("bad range {addr:#x}+{len:#x}")]
    BadRange { addr: u64, len: u64 },
    #[error("range {addr:#x}+{len:#x} overlaps the grant at {other:#x}")]
    Overlap { addr: u64, len: u64, other: u64 },
    #[error("no grant contains the parent address {addr:#x}")]
    NoParent { addr: u64 },
    #[error("derived grant at {addr:#x} asks rights {rights:#x} beyond its parent's {parent:#x}")]
    RightsExceedParent { addr: u64, rights: u32, parent: u32 },
    #[error("MMIO window {name} has a null base")]
    NullWindow { name: &'static str },
    #[error("MMIO window {name}: register {reg} at {off:#x} lies outside the window")]
    RegOutsideWindow {
        name: &'static str,
        reg: &'static str,
        off: u64,
    },
    #[error("no physical address for {vaddr:#x} (pagemap needs root and a present page)")]
    NoPhysAddr { vaddr: u64 },
    #[error("DMA buffer at bus address {bus:#x} lies above the device's DMA mask {mask:#x}")]
    AboveDmaMask { bus: u64, mask: u64 },
}

//! The fault-injection switch: a fault is armed by name and fires once, at
//! the first injection site of that kind the driver reaches.

use std::sync::atomic::{AtomicU8, Ordering};

/// Faults the driver can be made to commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Fault {
    None = 0,
    /// `panic!` in `factorial`, after the input register was written.
    Panic,
    /// Divide by zero (a Rust panic) while updating the counters.
    DivZero,
    /// MMIO read past the end of the BAR.
    MmioOutside,
    /// MMIO write inside the BAR at an offset that is no register (0x40).
    MmioUnmapped,
    /// 8-byte MMIO read of a 4-byte register (edu allows only 4 below 0x80).
    MmioWidth,
    /// Corrupts the factorial cache, the liveness and status registers,
    /// then the driver's consistency check panics.
    CorruptState,
    /// DMA to a device address past the edu buffer (QEMU would abort the
    /// whole VM with "DMA range out of bounds").
    WrongDmaDevice,
    /// DMA from a host bus address 16 MiB past the driver's buffer (memory
    /// the driver does not own).
    WrongDmaHost,
    /// Panic while a DMA transfer is in flight.
    PanicDma,
    /// Panic after the factorial interrupt arrived, before it is
    /// acknowledged.
    PanicIrq,
    /// Panic after raising an interrupt (`raise` is undone by an `ack`).
    PanicRaise,
}

impl Fault {
    pub const ALL: [Fault; 11] = [
        Fault::Panic,
        Fault::DivZero,
        Fault::MmioOutside,
        Fault::MmioUnmapped,
        Fault::MmioWidth,
        Fault::CorruptState,
        Fault::WrongDmaDevice,
        Fault::WrongDmaHost,
        Fault::PanicDma,
        Fault::PanicIrq,
        Fault::PanicRaise,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Fault::None => "none",
            Fault::Panic => "panic",
            Fault::DivZero => "div-zero",
            Fault::MmioOutside => "mmio-outside",
            Fault::MmioUnmapped => "mmio-unmapped",
            Fault::MmioWidth => "mmio-width",
            Fault::CorruptState => "corrupt-state",
            Fault::WrongDmaDevice => "wrong-dma-device",
            Fault::WrongDmaHost => "wrong-dma-host",
            Fault::PanicDma => "panic-dma",
            Fault::PanicIrq => "panic-irq",
            Fault::PanicRaise => "panic-raise",
        }
    }

    pub fn from_name(s: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.name() == s)
    }

    fn from_u8(v: u8) -> Fault {
        Fault::ALL
            .into_iter()
            .find(|f| *f as u8 == v)
            .unwrap_or(Fault::None)
    }
}

static ARMED: AtomicU8 = AtomicU8::new(Fault::None as u8);

/// Arms `f`: it fires at the next site of its kind.
pub fn arm(f: Fault) {
    ARMED.store(f as u8, Ordering::SeqCst);
}

/// The armed fault, if any.
pub fn armed() -> Fault {
    Fault::from_u8(ARMED.load(Ordering::SeqCst))
}

/// At an injection site: true (once) when `site` is armed.
pub fn fire(site: Fault) -> bool {
    ARMED
        .compare_exchange(
            site as u8,
            Fault::None as u8,
            Ordering::SeqCst,
            Ordering::SeqCst,
        )
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_fire_once() {
        for f in Fault::ALL {
            assert_eq!(Fault::from_name(f.name()), Some(f));
        }
        assert_eq!(Fault::from_name("nope"), None);
        arm(Fault::PanicDma);
        assert!(!fire(Fault::Panic));
        assert_eq!(armed(), Fault::PanicDma);
        assert!(fire(Fault::PanicDma));
        assert!(!fire(Fault::PanicDma));
        assert_eq!(armed(), Fault::None);
    }
}

//! PHY registers: clause 22 (`C22`) and clause 45 (`C45`), as
//! `kernel::net::phy::reg`.

use super::Device;
use crate::error::{code, Result};

mod private {
    pub trait Sealed {}
    impl Sealed for super::C22 {}
    impl Sealed for super::C45 {}
}

/// A register `Device::read` and `Device::write` accept.
pub trait Register: private::Sealed {
    fn read(&self, dev: &mut Device) -> Result<u16>;
    fn write(&self, dev: &mut Device, val: u16) -> Result;
    fn read_status(dev: &mut Device) -> Result<u16>;
}

/// A clause 22 register (5-bit address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct C22(u8);

impl C22 {
    pub const BMCR: Self = C22(0x00);
    pub const BMSR: Self = C22(0x01);
    pub const PHYSID1: Self = C22(0x02);
    pub const PHYSID2: Self = C22(0x03);
    pub const ADVERTISE: Self = C22(0x04);
    pub const LPA: Self = C22(0x05);
    pub const EXPANSION: Self = C22(0x06);
    pub const NEXT_PAGE_TRANSMIT: Self = C22(0x07);
    pub const LP_RECEIVED_NEXT_PAGE: Self = C22(0x08);
    pub const MASTER_SLAVE_CONTROL: Self = C22(0x09);
    pub const MASTER_SLAVE_STATUS: Self = C22(0x0a);
    pub const PSE_CONTROL: Self = C22(0x0b);
    pub const PSE_STATUS: Self = C22(0x0c);
    pub const MMD_CONTROL: Self = C22(0x0d);
    pub const MMD_DATA: Self = C22(0x0e);
    pub const EXTENDED_STATUS: Self = C22(0x0f);

    /// Vendor registers 0x10 to 0x1f; other numbers fail to build.
    pub const fn vendor_specific<const N: u8>() -> Self {
        assert!(N > 0x0f && N < 0x20, "vendor registers are 0x10..=0x1f");
        C22(N)
    }

    pub(crate) fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl Register for C22 {
    fn read(&self, dev: &mut Device) -> Result<u16> {
        Ok(dev.phy.c22[self.index()])
    }

    fn write(&self, dev: &mut Device, val: u16) -> Result {
        dev.phy.write_c22(self.index(), val);
        Ok(())
    }

    fn read_status(dev: &mut Device) -> Result<u16> {
        dev.genphy_update_link()?;
        dev.genphy_read_lpa()?;
        Ok(0)
    }
}

/// An MMD (device address of a clause 45 register).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mmd(u8);

impl Mmd {
    pub const PMAPMD: Self = Mmd(1);
    pub const WIS: Self = Mmd(2);
    pub const PCS: Self = Mmd(3);
    pub const PHYXS: Self = Mmd(4);
    pub const DTEXS: Self = Mmd(5);
    pub const TC: Self = Mmd(6);
    pub const AN: Self = Mmd(7);
    pub const C22_EXT: Self = Mmd(29);
    pub const VEND1: Self = Mmd(30);
    pub const VEND2: Self = Mmd(31);
}

/// A clause 45 register (MMD and 16-bit address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct C45 {
    devad: Mmd,
    regnum: u16,
}

impl C45 {
    pub fn new(devad: Mmd, regnum: u16) -> Self {
        C45 { devad, regnum }
    }
}

impl Register for C45 {
    fn read(&self, dev: &mut Device) -> Result<u16> {
        Ok(dev
            .phy
            .c45
            .get(&(self.devad.0, self.regnum))
            .copied()
            .unwrap_or(0))
    }

    fn write(&self, dev: &mut Device, val: u16) -> Result {
        dev.phy.c45.insert((self.devad.0, self.regnum), val);
        Ok(())
    }

    fn read_status(_dev: &mut Device) -> Result<u16> {
        Err(code::ENOTSUPP)
    }
}

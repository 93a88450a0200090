//! PHY drivers (`kernel::net::phy`): `Device`, the `Driver` vtable trait
//! and device ids, with the 6.12 signatures.
//!
//! In the kernel, `Device` wraps the C `struct phy_device` and its register
//! accesses go over MDIO. Here it is an emulated PHY: 32 clause 22
//! registers and a clause 45 map in memory, link and negotiation state in
//! fields. Methods named `emulated_*` exist only in the stand-in (tests
//! use them to play the wire and to look inside).

pub mod reg;

use crate::error::{code, Result};
use core::ffi::CStr;
use std::collections::BTreeMap;

/// The PHY state machine's states (`enum phy_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceState {
    Down,
    Ready,
    Halted,
    Error,
    Up,
    Running,
    NoLink,
    CableTest,
}

/// Duplex of the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DuplexMode {
    Full,
    Half,
    Unknown,
}

const BMCR_RESET: u16 = 0x8000;
const BMCR_ANENABLE: u16 = 0x1000;
const BMCR_PDOWN: u16 = 0x0800;
const BMCR_ANRESTART: u16 = 0x0200;
const BMSR_LSTATUS: u16 = 0x0004;
const BMSR_ANEGCOMPLETE: u16 = 0x0020;
const ADVERTISE_100FULL: u16 = 0x0100;
const ADVERTISE_100HALF: u16 = 0x0080;
const ADVERTISE_10FULL: u16 = 0x0040;

/// The emulated hardware behind a `Device`.
pub(crate) struct Phy {
    pub(crate) c22: [u16; 32],
    pub(crate) c45: BTreeMap<(u8, u16), u16>,
    /// What the link partner advertises once the link is up.
    partner: u16,
}

impl Phy {
    pub(crate) fn write_c22(&mut self, idx: usize, val: u16) {
        match idx {
            // BMSR, PHYSID1/2 and LPA are read-only.
            0x01..=0x03 | 0x05 => {}
            0x00 if val & BMCR_RESET != 0 => {
                // Reset self-clears and brings back the defaults.
                self.c22[0x00] = BMCR_ANENABLE;
                self.c22[0x04] = 0x01e1;
            }
            0x00 => {
                self.c22[0x00] = val & !BMCR_ANRESTART;
                if val & BMCR_ANRESTART != 0 {
                    self.negotiate();
                }
            }
            _ => self.c22[idx] = val,
        }
    }

    fn link_up(&self) -> bool {
        self.c22[0x01] & BMSR_LSTATUS != 0
    }

    fn negotiate(&mut self) {
        if self.link_up() && self.c22[0x00] & BMCR_ANENABLE != 0 {
            self.c22[0x05] = self.partner & self.c22[0x04];
            self.c22[0x01] |= BMSR_ANEGCOMPLETE;
        }
    }
}

/// A PHY device (`struct phy_device`). Entry points receive it as
/// `dev: &mut phy::Device`. Not `Clone`: it is the device.
pub struct Device {
    pub(crate) phy: Phy,
    phy_id: u32,
    state: DeviceState,
    speed: u32,
    duplex: DuplexMode,
    link: bool,
    autoneg_complete: bool,
}

impl Device {
    /// Stand-in only: an emulated PHY with id `phy_id`, link down.
    pub fn emulated(phy_id: u32) -> Device {
        let mut c22 = [0u16; 32];
        c22[0x00] = BMCR_ANENABLE;
        c22[0x01] = 0x7809;
        c22[0x02] = (phy_id >> 16) as u16;
        c22[0x03] = phy_id as u16;
        c22[0x04] = 0x01e1;
        Device {
            phy: Phy {
                c22,
                c45: BTreeMap::new(),
                partner: 0x05e1,
            },
            phy_id,
            state: DeviceState::Ready,
            speed: 0,
            duplex: DuplexMode::Unknown,
            link: false,
            autoneg_complete: false,
        }
    }

    /// Stand-in only: plugs or unplugs the cable.
    pub fn emulated_set_link(&mut self, up: bool) {
        if up {
            self.phy.c22[0x01] |= BMSR_LSTATUS;
            self.phy.negotiate();
        } else {
            self.phy.c22[0x01] &= !(BMSR_LSTATUS | BMSR_ANEGCOMPLETE);
            self.phy.c22[0x05] = 0;
        }
    }

    /// Stand-in only: speed and duplex as the driver last set them.
    pub fn emulated_speed_duplex(&self) -> (u32, DuplexMode) {
        (self.speed, self.duplex)
    }

    pub fn phy_id(&self) -> u32 {
        self.phy_id
    }

    pub fn state(&self) -> DeviceState {
        self.state
    }

    pub fn is_link_up(&self) -> bool {
        self.link
    }

    pub fn is_autoneg_enabled(&self) -> bool {
        self.phy.c22[0x00] & BMCR_ANENABLE != 0
    }

    pub fn is_autoneg_completed(&self) -> bool {
        self.autoneg_complete
    }

    pub fn set_speed(&mut self, speed: u32) {
        self.speed = speed;
    }

    pub fn set_duplex(&mut self, mode: DuplexMode) {
        self.duplex = mode;
    }

    pub fn read<R: reg::Register>(&mut self, reg: R) -> Result<u16> {
        reg.read(self)
    }

    pub fn write<R: reg::Register>(&mut self, reg: R, val: u16) -> Result {
        reg.write(self, val)
    }

    /// Reads `regnum` of `page` (page selected through register 0x1f).
    pub fn read_paged(&mut self, page: u16, regnum: u16) -> Result<u16> {
        if regnum > 0x1f {
            return Err(code::EINVAL);
        }
        let old = self.phy.c22[0x1f];
        self.phy.c22[0x1f] = page;
        let v = self.phy.c22[usize::from(regnum)];
        self.phy.c22[0x1f] = old;
        Ok(v)
    }

    pub fn resolve_aneg_linkmode(&mut self) {
        let common = self.phy.c22[0x05] & self.phy.c22[0x04];
        (self.speed, self.duplex) = if common & ADVERTISE_100FULL != 0 {
            (100, DuplexMode::Full)
        } else if common & ADVERTISE_100HALF != 0 {
            (100, DuplexMode::Half)
        } else if common & ADVERTISE_10FULL != 0 {
            (10, DuplexMode::Full)
        } else {
            (10, DuplexMode::Half)
        };
    }

    pub fn genphy_soft_reset(&mut self) -> Result {
        self.phy.write_c22(0x00, BMCR_RESET);
        if self.phy.c22[0x00] & BMCR_RESET != 0 {
            return Err(code::ETIMEDOUT);
        }
        Ok(())
    }

    pub fn init_hw(&mut self) -> Result {
        self.state = DeviceState::Ready;
        Ok(())
    }

    pub fn start_aneg(&mut self) -> Result {
        let bmcr = self.phy.c22[0x00];
        self.phy
            .write_c22(0x00, bmcr | BMCR_ANENABLE | BMCR_ANRESTART);
        self.state = DeviceState::Up;
        Ok(())
    }

    pub fn genphy_resume(&mut self) -> Result {
        self.phy.c22[0x00] &= !BMCR_PDOWN;
        Ok(())
    }

    pub fn genphy_suspend(&mut self) -> Result {
        self.phy.c22[0x00] |= BMCR_PDOWN;
        Ok(())
    }

    pub fn genphy_read_status<R: reg::Register>(&mut self) -> Result<u16> {
        R::read_status(self)
    }

    pub fn genphy_update_link(&mut self) -> Result {
        self.link = self.phy.link_up();
        self.autoneg_complete = self.phy.c22[0x01] & BMSR_ANEGCOMPLETE != 0;
        self.state = if self.link {
            DeviceState::Running
        } else {
            DeviceState::NoLink
        };
        Ok(())
    }

    pub fn genphy_read_lpa(&mut self) -> Result {
        if self.autoneg_complete {
            self.resolve_aneg_linkmode();
        }
        Ok(())
    }

    pub fn genphy_read_abilities(&mut self) -> Result {
        Ok(())
    }
}

/// Driver flags (`PHY_IS_INTERNAL`, ...).
pub mod flags {
    pub const IS_INTERNAL: u32 = 0x0000_0001;
    pub const RST_AFTER_CLK_EN: u32 = 0x0000_0002;
    pub const POLL_CABLE_TEST: u32 = 0x0000_0004;
    pub const ALWAYS_CALL_SUSPEND: u32 = 0x0000_0008;
}

/// Which PHY ids a driver binds to: an id and a mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceId {
    id: u32,
    mask: u32,
}

impl DeviceId {
    pub const fn new_with_exact_mask(id: u32) -> Self {
        DeviceId { id, mask: !0 }
    }

    pub const fn new_with_model_mask(id: u32) -> Self {
        DeviceId { id, mask: !0 << 4 }
    }

    pub const fn new_with_vendor_mask(id: u32) -> Self {
        DeviceId { id, mask: !0 << 10 }
    }

    pub const fn new_with_custom_mask(id: u32, mask: u32) -> Self {
        DeviceId { id, mask }
    }

    pub const fn new_with_driver<T: Driver>() -> Self {
        T::PHY_DEVICE_ID
    }

    pub const fn id(&self) -> u32 {
        self.id
    }

    pub fn matches(&self, phy_id: u32) -> bool {
        phy_id & self.mask == self.id & self.mask
    }
}

/// A PHY driver: the Rust side of `struct phy_driver`. Methods left out of
/// a `#[vtable]` impl stay NULL in the C vtable; here their defaults say
/// `ENOTSUPP`.
#[crate::vtable]
pub trait Driver {
    const FLAGS: u32 = 0;
    const NAME: &'static CStr;
    const PHY_DEVICE_ID: DeviceId = DeviceId::new_with_custom_mask(0, 0);

    fn soft_reset(_dev: &mut Device) -> Result {
        Err(code::ENOTSUPP)
    }

    fn probe(_dev: &mut Device) -> Result {
        Err(code::ENOTSUPP)
    }

    fn get_features(_dev: &mut Device) -> Result {
        Err(code::ENOTSUPP)
    }

    fn match_phy_device(_dev: &Device) -> bool {
        false
    }

    fn config_aneg(_dev: &mut Device) -> Result {
        Err(code::ENOTSUPP)
    }

    fn read_status(_dev: &mut Device) -> Result<u16> {
        Err(code::ENOTSUPP)
    }

    fn suspend(_dev: &mut Device) -> Result {
        Err(code::ENOTSUPP)
    }

    fn resume(_dev: &mut Device) -> Result {
        Err(code::ENOTSUPP)
    }

    fn read_mmd(_dev: &mut Device, _devnum: u8, _regnum: u16) -> Result<u16> {
        Err(code::ENOTSUPP)
    }

    fn write_mmd(_dev: &mut Device, _devnum: u8, _regnum: u16, _val: u16) -> Result {
        Err(code::ENOTSUPP)
    }

    fn link_change_notify(_dev: &mut Device) {}
}

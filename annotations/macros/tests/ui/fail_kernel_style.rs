// Kernel-style entry points (`dev: &mut phy::Device`, no receiver) that
// cannot be isolated, against the kernel stand-in.
use kernel::net::phy::{self, reg::C22, Driver};
use kernel::prelude::*;

// No #[fgft::checkpoint]/#[fgft::restore] for phy::Device: the device
// cannot be brought back.
struct NoCheckpoint;

#[vtable]
impl Driver for NoCheckpoint {
    const NAME: &'static core::ffi::CStr = c"no checkpoint";

    #[fgft::isolate]
    fn read_status(dev: &mut phy::Device) -> Result<u16> {
        dev.read(C22::BMSR)
    }
}

struct Bad;

#[fgft::driver]
impl Bad {
    #[fgft::checkpoint]
    fn save(dev: &mut phy::Device, extra: u8) -> u16 {
        let _ = extra;
        dev.read(C22::BMCR).unwrap_or(0)
    }
    #[fgft::restore]
    fn restore(dev: &mut phy::Device, cp: &u16) {
        let _ = dev.write(C22::BMCR, *cp);
    }
}

#[fgft::driver]
#[vtable]
impl Driver for Bad {
    const NAME: &'static core::ffi::CStr = c"bad";

    // Through a shared reference the state cannot be put back.
    #[fgft::isolate]
    fn match_phy_device(dev: &phy::Device) -> bool {
        dev.phy_id() == 1
    }

    // skip/fields/snapshot name fields of `self`; there is no `self`.
    #[fgft::isolate(skip(link))]
    fn suspend(dev: &mut phy::Device) -> Result {
        dev.genphy_suspend()
    }

    // A kernel-style entry point that returns nothing cannot report the abort.
    #[fgft::isolate]
    fn link_change_notify(dev: &mut phy::Device) {
        let _ = dev.genphy_update_link();
    }
}

fn main() {}

// Kernel-style entry points: a PHY driver shaped like
// drivers/net/phy/ax88796b_rust.rs, against the kernel stand-in. The
// methods take `dev: &mut phy::Device` and no receiver; `#[fgft::isolate]`
// checkpoints the device through `fgft::DeviceOf<phy::Device>`, which
// `#[fgft::driver]` implements from the receiverless checkpoint and
// restore functions. This case runs: a fault in `read_status` returns
// `-EIO` with the registers and speed put back, a good call commits.
use kernel::net::phy::{self, reg::C22, DeviceId, Driver, DuplexMode};
use kernel::prelude::*;

struct PhyAX88772A;

struct Saved {
    bmcr: u16,
    advertise: u16,
    speed: u32,
    duplex: DuplexMode,
}

#[fgft::driver]
impl PhyAX88772A {
    #[fgft::checkpoint]
    fn save(dev: &mut phy::Device) -> Saved {
        let (speed, duplex) = dev.emulated_speed_duplex();
        Saved {
            bmcr: dev.read(C22::BMCR).unwrap_or(0),
            advertise: dev.read(C22::ADVERTISE).unwrap_or(0),
            speed,
            duplex,
        }
    }

    #[fgft::restore]
    fn restore(dev: &mut phy::Device, cp: &Saved, txn: &fgft::Txn) -> Result {
        let _ = txn;
        dev.write(C22::BMCR, cp.bmcr)?;
        dev.write(C22::ADVERTISE, cp.advertise)?;
        dev.set_speed(cp.speed);
        dev.set_duplex(cp.duplex);
        Ok(())
    }
}

static FAULT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[fgft::driver]
#[vtable]
impl Driver for PhyAX88772A {
    const FLAGS: u32 = phy::flags::IS_INTERNAL;
    const NAME: &'static core::ffi::CStr = c"Asix Electronics AX88772A";
    const PHY_DEVICE_ID: DeviceId = DeviceId::new_with_exact_mask(0x003b1861);

    #[fgft::isolate]
    fn read_status(dev: &mut phy::Device) -> Result<u16> {
        dev.genphy_update_link()?;
        if !dev.is_link_up() {
            return Ok(0);
        }
        let ret = dev.read(C22::BMCR)?;
        dev.write(C22::BMCR, ret & !0x1000)?;
        dev.set_speed(100);
        dev.set_duplex(DuplexMode::Full);
        if FAULT.load(std::sync::atomic::Ordering::Relaxed) {
            panic!("injected fault after the registers changed");
        }
        dev.genphy_read_lpa()?;
        Ok(0)
    }

    // `mut dev`, extra parameters, and an errno of its own.
    #[fgft::isolate(err = ENODEV)]
    fn read_mmd(mut dev: &mut phy::Device, devnum: u8, regnum: u16) -> Result<u16> {
        let _ = &mut dev;
        if devnum > 31 {
            panic!("bad MMD {devnum}");
        }
        dev.read(phy::reg::C45::new(phy::reg::Mmd::PCS, regnum))
    }

    fn suspend(dev: &mut phy::Device) -> Result {
        dev.genphy_suspend()
    }
}

// Alone on a method of a plain impl block, too.
struct Helper;

#[fgft::driver]
impl Helper {
    #[fgft::checkpoint]
    fn save(dev: &mut phy::Device) -> u16 {
        dev.read(C22::ADVERTISE).unwrap_or(0)
    }
    #[fgft::restore]
    fn restore(dev: &mut phy::Device, adv: &u16) {
        let _ = dev.write(C22::ADVERTISE, *adv);
    }
}

impl Helper {
    #[fgft::isolate]
    fn advertise(dev: &mut phy::Device, adv: u16) -> Result {
        dev.write(C22::ADVERTISE, adv)?;
        if adv == 0 {
            panic!("advertising nothing");
        }
        Ok(())
    }
}

fn main() {
    std::panic::set_hook(Box::new(|_| {}));
    assert!(PhyAX88772A::HAS_READ_STATUS && PhyAX88772A::HAS_READ_MMD);
    assert!(!PhyAX88772A::HAS_PROBE);
    assert!(PhyAX88772A::PHY_DEVICE_ID.matches(0x003b1861));
    let mut dev = phy::Device::emulated(0x003b1861);
    dev.emulated_set_link(true);

    // A fault after two writes: the call returns -EIO, the device is as
    // before the call.
    let bmcr = dev.read(C22::BMCR).unwrap();
    FAULT.store(true, std::sync::atomic::Ordering::Relaxed);
    let r = PhyAX88772A::read_status(&mut dev);
    assert_eq!(r, Err(EIO));
    assert_eq!(r.unwrap_err().to_errno(), -5);
    assert_eq!(dev.read(C22::BMCR).unwrap(), bmcr);
    assert_eq!(dev.emulated_speed_duplex(), (0, DuplexMode::Unknown));
    let stats = fgft::entries()
        .into_iter()
        .find(|e| e.name == "PhyAX88772A::read_status")
        .expect("the entry point is registered under Type::method");
    assert_eq!(stats.stats().aborts_by(fgft::Cause::Panic), 1);

    // The same call without the fault commits its writes.
    FAULT.store(false, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(PhyAX88772A::read_status(&mut dev), Ok(0));
    assert_eq!(dev.read(C22::BMCR).unwrap(), bmcr & !0x1000);
    assert_eq!(dev.emulated_speed_duplex(), (100, DuplexMode::Full));

    assert_eq!(PhyAX88772A::read_mmd(&mut dev, 40, 1), Err(ENODEV));
    assert_eq!(PhyAX88772A::read_mmd(&mut dev, 3, 1), Ok(0));
    assert_eq!(PhyAX88772A::suspend(&mut dev), Ok(()));

    let adv = dev.read(C22::ADVERTISE).unwrap();
    assert_eq!(Helper::advertise(&mut dev, 0), Err(EIO));
    assert_eq!(dev.read(C22::ADVERTISE).unwrap(), adv);
    assert_eq!(Helper::advertise(&mut dev, 0x0101), Ok(()));
    assert_eq!(dev.read(C22::ADVERTISE).unwrap(), 0x0101);
}

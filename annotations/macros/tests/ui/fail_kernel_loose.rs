// A kernel-style function outside an impl block: there is no driver type
// (`Self`) to find the device checkpoint on.
use kernel::net::phy;
use kernel::prelude::*;

#[fgft::isolate]
fn loose(dev: &mut phy::Device) -> Result {
    dev.genphy_resume()
}

fn main() {}

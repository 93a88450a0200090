// A driver that uses every attribute correctly compiles.
use fgft::{Abort, FromAbort};

#[derive(Debug)]
struct E;
impl FromAbort for E {
    fn from_abort(_: Abort) -> Self {
        E
    }
}

struct Dev {
    n: u32,
    v: Vec<u8>,
    file: std::fs::File,
    custom: NotClone,
}
struct NotClone(u8);
fn save_custom(c: &NotClone) -> NotClone {
    NotClone(c.0)
}

// Shaped like a kernel `#[vtable]` trait: associated consts next to the
// entry points, and other attributes on the impl block.
trait Ops {
    const NAME: &'static str;
    fn op(&mut self, x: u8) -> Result<u8, E>;
    fn raw(&mut self) -> i32;
}

#[allow(clippy::needless_return)]
#[fgft::driver]
impl Ops for Dev {
    const NAME: &'static str = "dev";

    #[fgft::isolate(err = ENODEV, snapshot(custom = "save_custom"))]
    fn op(&mut self, x: u8) -> Result<u8, E> {
        self.n += 1;
        self.v.push(x);
        self.custom.0 = x;
        let _ = &mut self.file;
        Ok(x)
    }

    #[fgft::isolate(skip(n))]
    fn raw(&mut self) -> i32 {
        self.n = 0;
        0
    }
}

#[fgft::driver]
impl Dev {
    #[fgft::checkpoint]
    fn save(&self) -> u32 {
        self.n
    }

    #[fgft::restore]
    fn restore(&mut self, cp: &u32) -> Result<(), String> {
        let _ = cp;
        Ok(())
    }
}

fn main() {}

// An isolated entry point of a driver that has no device checkpoint.

struct Dev {
    n: u32,
}

#[fgft::driver]
impl Dev {
    #[fgft::isolate]
    fn op(&mut self) -> Result<u32, fgft::Abort> {
        self.n += 1;
        Ok(self.n)
    }
}

fn main() {}

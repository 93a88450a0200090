// Signatures an isolated entry point cannot have.

struct Dev {
    n: u32,
}

#[fgft::driver]
impl Dev {
    #[fgft::isolate]
    async fn is_async(&mut self) -> Result<u32, fgft::Abort> {
        Ok(self.n)
    }

    #[fgft::isolate]
    fn shared(&self) -> Result<u32, fgft::Abort> {
        Ok(self.n)
    }

    #[fgft::isolate]
    fn consumes(self) -> Result<u32, fgft::Abort> {
        Ok(self.n)
    }

    #[fgft::isolate]
    fn returns_nothing(&mut self) {
        self.n += 1;
    }

    #[fgft::isolate]
    fn returns_unit(&mut self) -> () {
        self.n += 1;
    }

    #[fgft::isolate]
    fn opaque(&mut self) -> Result<impl Iterator<Item = u32>, fgft::Abort> {
        Ok(std::iter::once(self.n))
    }

    #[fgft::checkpoint]
    fn save(&self) -> u32 {
        self.n
    }

    #[fgft::restore]
    fn restore(&mut self, _cp: &u32) {}
}

fn main() {}

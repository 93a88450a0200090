// Calls and uses of `self` the analysis cannot follow, and bad options.

struct Dev {
    n: u32,
}

impl Dev {
    fn elsewhere(&mut self) {
        self.n += 1;
    }
}

fn helper(d: &mut Dev) {
    d.n += 1;
}

#[fgft::driver]
impl Dev {
    #[fgft::isolate]
    fn calls_out(&mut self) -> Result<u32, fgft::Abort> {
        self.elsewhere();
        Ok(self.n)
    }

    #[fgft::isolate]
    fn whole(&mut self) -> Result<u32, fgft::Abort> {
        helper(self);
        Ok(self.n)
    }

    #[fgft::isolate(retries = 3)]
    fn unknown_option(&mut self) -> Result<u32, fgft::Abort> {
        Ok(self.n)
    }

    #[fgft::isolate(skip(m))]
    fn skips_nothing(&mut self) -> Result<u32, fgft::Abort> {
        self.n += 1;
        Ok(self.n)
    }

    #[fgft::checkpoint]
    fn save(&self) -> u32 {
        self.n
    }

    #[fgft::restore]
    fn restore(&mut self, _cp: &u32) {}
}

fn main() {}

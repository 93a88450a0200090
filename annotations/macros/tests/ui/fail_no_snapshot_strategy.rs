// A field the method changes whose type has no snapshot strategy.

struct Counter(u32);

impl Counter {
    fn bump(&mut self) {
        self.0 += 1;
    }
}

struct Dev {
    counter: Counter,
    n: u32,
}

#[fgft::driver]
impl Dev {
    #[fgft::isolate]
    fn op(&mut self) -> Result<u32, fgft::Abort> {
        self.n += 1;
        self.counter.bump();
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

// Errors only the type checker can see: a return type that cannot carry
// the abort, an error type without FromAbort, an unknown errno name, a
// restore whose checkpoint type does not match.

struct Dev {
    n: u32,
}

#[derive(Debug)]
struct PlainError;

#[fgft::driver]
impl Dev {
    #[fgft::isolate]
    fn cannot_carry(&mut self) -> Option<u32> {
        self.n += 1;
        Some(self.n)
    }

    #[fgft::isolate]
    fn plain_error(&mut self) -> Result<u32, PlainError> {
        self.n += 1;
        Ok(self.n)
    }

    #[fgft::isolate(err = EWHAT)]
    fn unknown_errno(&mut self) -> Result<u32, fgft::Abort> {
        self.n += 1;
        Ok(self.n)
    }

    #[fgft::checkpoint]
    fn save(&self) -> u32 {
        self.n
    }

    #[fgft::restore]
    fn restore(&mut self, _cp: &u64) {}
}

fn main() {}

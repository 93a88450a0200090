// Checkpoint and restore come in pairs, inside a #[fgft::driver] block.

struct A;

#[fgft::driver]
impl A {
    #[fgft::checkpoint]
    fn save(&self) -> u32 {
        0
    }
}

struct B;

#[fgft::driver]
impl B {
    #[fgft::restore]
    fn restore(&mut self, _cp: &u32) {}
}

struct C;

impl C {
    #[fgft::checkpoint]
    fn save(&self) -> u32 {
        0
    }
}

struct D;

#[fgft::driver]
impl D {
    #[fgft::checkpoint]
    fn save(&self, extra: u32) -> u32 {
        extra
    }

    #[fgft::restore]
    fn restore(&mut self, _cp: &u32) {}
}

fn main() {}

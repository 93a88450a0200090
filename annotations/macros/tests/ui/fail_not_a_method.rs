// #[fgft::isolate] on things that are not methods.

#[fgft::isolate]
fn free_function() -> Result<(), fgft::Abort> {
    Ok(())
}

#[fgft::isolate]
struct NotAFunction {
    x: u32,
}

struct Dev;

#[fgft::driver]
impl Dev {
    #[fgft::isolate]
    fn associated(x: u32) -> Result<u32, fgft::Abort> {
        Ok(x)
    }
}

fn main() {}

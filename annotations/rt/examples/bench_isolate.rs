//! Benchmark (reported, never asserted): a `#[fgft::isolate]` call against
//! the same method called plainly, for methods that touch 1, 8 and 64
//! fields of `self`, measured side by side in one run.
//!
//!     cargo run --release -p fgft-rt --example bench_isolate [CALLS]
//!
//! The isolated call is a transaction: the fields the method can change are
//! snapshot first, the body runs under `catch_unwind`, and it commits; the
//! plain call is the body alone.  Each line gives ns per call for both and
//! their ratio (the median of five rounds of CALLS calls, default 200000).

use fgft::{Abort, FromAbort};
use std::hint::black_box;
use std::time::Instant;

#[derive(Debug)]
struct E;

impl FromAbort for E {
    fn from_abort(_: Abort) -> Self {
        E
    }
}

// Devices of `u64` fields, each with a method that adds `v` to every field,
// called plainly and as the body of an isolated method.

#[derive(Default)]
struct One {
    f0: u64,
}

// No device behind it: an empty checkpoint.
#[fgft::driver]
impl One {
    #[fgft::checkpoint]
    fn save(&self) -> u8 {
        0
    }

    #[fgft::restore]
    fn restore(&mut self, _cp: &u8) -> Result<(), String> {
        Ok(())
    }

    fn plain(&mut self, v: u64) -> Result<u64, E> {
        self.f0 = self.f0.wrapping_add(v);
        Ok(self.f0)
    }

    // The same body, as a transaction (the block's attribute lets it see
    // the fields `plain` writes).
    #[fgft::isolate]
    fn isolated(&mut self, v: u64) -> Result<u64, E> {
        self.plain(v)
    }
}

#[derive(Default)]
struct Eight {
    f0: u64,
    f1: u64,
    f2: u64,
    f3: u64,
    f4: u64,
    f5: u64,
    f6: u64,
    f7: u64,
}

// No device behind it: an empty checkpoint.
#[fgft::driver]
impl Eight {
    #[fgft::checkpoint]
    fn save(&self) -> u8 {
        0
    }

    #[fgft::restore]
    fn restore(&mut self, _cp: &u8) -> Result<(), String> {
        Ok(())
    }

    fn plain(&mut self, v: u64) -> Result<u64, E> {
        self.f0 = self.f0.wrapping_add(v);
        self.f1 = self.f1.wrapping_add(v);
        self.f2 = self.f2.wrapping_add(v);
        self.f3 = self.f3.wrapping_add(v);
        self.f4 = self.f4.wrapping_add(v);
        self.f5 = self.f5.wrapping_add(v);
        self.f6 = self.f6.wrapping_add(v);
        self.f7 = self.f7.wrapping_add(v);
        Ok(self.f0 ^ self.f1 ^ self.f2 ^ self.f3 ^ self.f4 ^ self.f5 ^ self.f6 ^ self.f7)
    }

    // The same body, as a transaction (the block's attribute lets it see
    // the fields `plain` writes).
    #[fgft::isolate]
    fn isolated(&mut self, v: u64) -> Result<u64, E> {
        self.plain(v)
    }
}

#[derive(Default)]
struct SixtyFour {
    f0: u64,
    f1: u64,
    f2: u64,
    f3: u64,
    f4: u64,
    f5: u64,
    f6: u64,
    f7: u64,
    f8: u64,
    f9: u64,
    f10: u64,
    f11: u64,
    f12: u64,
    f13: u64,
    f14: u64,
    f15: u64,
    f16: u64,
    f17: u64,
    f18: u64,
    f19: u64,
    f20: u64,
    f21: u64,
    f22: u64,
    f23: u64,
    f24: u64,
    f25: u64,
    f26: u64,
    f27: u64,
    f28: u64,
    f29: u64,
    f30: u64,
    f31: u64,
    f32: u64,
    f33: u64,
    f34: u64,
    f35: u64,
    f36: u64,
    f37: u64,
    f38: u64,
    f39: u64,
    f40: u64,
    f41: u64,
    f42: u64,
    f43: u64,
    f44: u64,
    f45: u64,
    f46: u64,
    f47: u64,
    f48: u64,
    f49: u64,
    f50: u64,
    f51: u64,
    f52: u64,
    f53: u64,
    f54: u64,
    f55: u64,
    f56: u64,
    f57: u64,
    f58: u64,
    f59: u64,
    f60: u64,
    f61: u64,
    f62: u64,
    f63: u64,
}

// No device behind it: an empty checkpoint.
#[fgft::driver]
impl SixtyFour {
    #[fgft::checkpoint]
    fn save(&self) -> u8 {
        0
    }

    #[fgft::restore]
    fn restore(&mut self, _cp: &u8) -> Result<(), String> {
        Ok(())
    }

    fn plain(&mut self, v: u64) -> Result<u64, E> {
        self.f0 = self.f0.wrapping_add(v);
        self.f1 = self.f1.wrapping_add(v);
        self.f2 = self.f2.wrapping_add(v);
        self.f3 = self.f3.wrapping_add(v);
        self.f4 = self.f4.wrapping_add(v);
        self.f5 = self.f5.wrapping_add(v);
        self.f6 = self.f6.wrapping_add(v);
        self.f7 = self.f7.wrapping_add(v);
        self.f8 = self.f8.wrapping_add(v);
        self.f9 = self.f9.wrapping_add(v);
        self.f10 = self.f10.wrapping_add(v);
        self.f11 = self.f11.wrapping_add(v);
        self.f12 = self.f12.wrapping_add(v);
        self.f13 = self.f13.wrapping_add(v);
        self.f14 = self.f14.wrapping_add(v);
        self.f15 = self.f15.wrapping_add(v);
        self.f16 = self.f16.wrapping_add(v);
        self.f17 = self.f17.wrapping_add(v);
        self.f18 = self.f18.wrapping_add(v);
        self.f19 = self.f19.wrapping_add(v);
        self.f20 = self.f20.wrapping_add(v);
        self.f21 = self.f21.wrapping_add(v);
        self.f22 = self.f22.wrapping_add(v);
        self.f23 = self.f23.wrapping_add(v);
        self.f24 = self.f24.wrapping_add(v);
        self.f25 = self.f25.wrapping_add(v);
        self.f26 = self.f26.wrapping_add(v);
        self.f27 = self.f27.wrapping_add(v);
        self.f28 = self.f28.wrapping_add(v);
        self.f29 = self.f29.wrapping_add(v);
        self.f30 = self.f30.wrapping_add(v);
        self.f31 = self.f31.wrapping_add(v);
        self.f32 = self.f32.wrapping_add(v);
        self.f33 = self.f33.wrapping_add(v);
        self.f34 = self.f34.wrapping_add(v);
        self.f35 = self.f35.wrapping_add(v);
        self.f36 = self.f36.wrapping_add(v);
        self.f37 = self.f37.wrapping_add(v);
        self.f38 = self.f38.wrapping_add(v);
        self.f39 = self.f39.wrapping_add(v);
        self.f40 = self.f40.wrapping_add(v);
        self.f41 = self.f41.wrapping_add(v);
        self.f42 = self.f42.wrapping_add(v);
        self.f43 = self.f43.wrapping_add(v);
        self.f44 = self.f44.wrapping_add(v);
        self.f45 = self.f45.wrapping_add(v);
        self.f46 = self.f46.wrapping_add(v);
        self.f47 = self.f47.wrapping_add(v);
        self.f48 = self.f48.wrapping_add(v);
        self.f49 = self.f49.wrapping_add(v);
        self.f50 = self.f50.wrapping_add(v);
        self.f51 = self.f51.wrapping_add(v);
        self.f52 = self.f52.wrapping_add(v);
        self.f53 = self.f53.wrapping_add(v);
        self.f54 = self.f54.wrapping_add(v);
        self.f55 = self.f55.wrapping_add(v);
        self.f56 = self.f56.wrapping_add(v);
        self.f57 = self.f57.wrapping_add(v);
        self.f58 = self.f58.wrapping_add(v);
        self.f59 = self.f59.wrapping_add(v);
        self.f60 = self.f60.wrapping_add(v);
        self.f61 = self.f61.wrapping_add(v);
        self.f62 = self.f62.wrapping_add(v);
        self.f63 = self.f63.wrapping_add(v);
        Ok(self.f0 ^ self.f1 ^ self.f2 ^ self.f3)
    }

    // The same body, as a transaction (the block's attribute lets it see
    // the fields `plain` writes).
    #[fgft::isolate]
    fn isolated(&mut self, v: u64) -> Result<u64, E> {
        self.plain(v)
    }
}

/// ns per call of `f`, the median of five rounds of `calls` calls.
fn ns_per_call(calls: u64, mut f: impl FnMut(u64) -> u64) -> f64 {
    let mut rounds: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            let mut acc = 0u64;
            for i in 0..calls {
                acc ^= f(black_box(i));
            }
            black_box(acc);
            t.elapsed().as_nanos() as f64 / calls as f64
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[2]
}

fn main() {
    let calls: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    println!("fields  plain ns/call  isolated ns/call  ratio");
    let row = |fields: usize, plain: f64, isolated: f64| {
        println!(
            "{fields:>6}  {plain:>13.1}  {isolated:>16.1}  {:>5.1}",
            isolated / plain
        );
    };
    let mut d = One::default();
    let p = ns_per_call(calls, |v| d.plain(v).unwrap_or(0));
    let i = ns_per_call(calls, |v| d.isolated(v).unwrap_or(0));
    row(1, p, i);
    let mut d = Eight::default();
    let p = ns_per_call(calls, |v| d.plain(v).unwrap_or(0));
    let i = ns_per_call(calls, |v| d.isolated(v).unwrap_or(0));
    row(8, p, i);
    let mut d = SixtyFour::default();
    let p = ns_per_call(calls, |v| d.plain(v).unwrap_or(0));
    let i = ns_per_call(calls, |v| d.isolated(v).unwrap_or(0));
    row(64, p, i);
}

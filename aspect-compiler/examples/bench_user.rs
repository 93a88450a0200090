//! The user-space hook-cost benchmark: per-call cost of fgft_bench_access()
//! uninstrumented, with its hook switched off, and switched on with empty
//! advice.  Five runs of the harness; the medians are reported.
//!
//! cargo run --release -p fgft-aspect --example bench_user

use std::path::Path;

fn main() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let work = match tempfile::tempdir() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("tempdir: {e}");
            std::process::exit(1);
        }
    };
    let bin = match fgft_aspect::bench::build_user(repo, work.path()) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let mut runs = Vec::new();
    for _ in 0..5 {
        match fgft_aspect::bench::run_user(&bin, 10_000) {
            Ok(r) => runs.push(r),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
    }
    let m = |v: &str| fgft_aspect::bench::median(&runs, v).unwrap_or(f64::NAN);
    let (plain, off, on) = (m("plain"), m("disabled"), m("enabled-empty"));
    println!("user space (static-key shim), ns per call, median of 5 runs:");
    println!("  uninstrumented       {plain:7.3}");
    println!(
        "  hook switched off    {off:7.3}  (+{:.3} per hit; target <= 1)",
        off - plain
    );
    println!(
        "  hook on, empty advice {on:6.3}  (+{:.3} per hit; target <= 5)",
        on - plain
    );
}

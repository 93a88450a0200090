//! Hook-cost benchmark of fgft aspects, in one run (reported, not asserted):
//!
//! 1. user space: the woven benchmark C and the generated trampolines on the
//!    static-key shim (fgft_aspect::bench), median of 5 runs;
//! 2. the VM (QEMU TCG, Debian 6.12): the same sources as two modules, the
//!    uninstrumented build (plus a kprobe with an empty handler on the
//!    function's entry and one inside it) and the woven build (hook switched
//!    off, and on with empty advice).
//!
//! cargo run --release -p fgft-vm --example bench_aspect
//!
//! TCG emulates every instruction, so the VM figures are far above native
//! ones; compare them with each other (hook against kprobe).

use fgft_aspect::bench;
use fgft_vm::{kbuild, run, Env, VmSpec};
use std::time::Duration;

fn main() {
    if let Err(e) = real_main() {
        eprintln!("bench_aspect: {e}");
        std::process::exit(1);
    }
}

fn real_main() -> Result<(), String> {
    let env = Env::load().map_err(|e| e.to_string())?;
    let repo = env.repo_root.clone();

    // User space.
    let work = tempfile_dir(&env, "aspect-bench-user")?;
    let bin = bench::build_user(&repo, &work)?;
    let mut runs = Vec::new();
    for _ in 0..5 {
        runs.push(bench::run_user(&bin, 10_000)?);
    }
    let m = |v: &str| bench::median(&runs, v).unwrap_or(f64::NAN);

    // The VM: plain and woven modules.
    let woven_dir = env.target_dir.join("aspect-bench-woven-src");
    bench::weave_module(&repo, &woven_dir, Some(&env.kdir))?;
    let woven = kbuild(&env, "aspect-bench-woven", &woven_dir, &env.kdir, &[])
        .map_err(|e| e.to_string())?;
    let plain = kbuild(
        &env,
        "aspect-bench-plain",
        &bench::bench_dir(&repo).join("module"),
        &env.kdir,
        &[],
    )
    .map_err(|e| e.to_string())?;
    let mods = env.target_dir.join("aspect-bench-modules");
    std::fs::create_dir_all(&mods).map_err(|e| e.to_string())?;
    for (src, name) in [
        (plain.join("fgft_bench.ko"), "fgft_bench_plain.ko"),
        (woven.join("fgft_bench.ko"), "fgft_bench_woven.ko"),
    ] {
        std::fs::copy(&src, mods.join(name)).map_err(|e| format!("{}: {e}", src.display()))?;
    }
    let mut spec = VmSpec::new("aspect-bench");
    spec.modules = vec![
        mods.join("fgft_bench_plain.ko"),
        mods.join("fgft_bench_woven.ko"),
    ];
    spec.script = "insmod /lib/fgft/fgft_bench_plain.ko iters=1000000 || exit 10\n\
                   rmmod fgft_bench || exit 11\n\
                   insmod /lib/fgft/fgft_bench_woven.ko iters=1000000 || exit 12\n\
                   rmmod fgft_bench || exit 13\n"
        .into();
    spec.timeout = Duration::from_secs(600);
    let out = run(&env, &spec).map_err(|e| e.to_string())?;
    if !out.is_clean() {
        return Err(format!("VM run failed:\n{out}"));
    }
    let vm = bench::parse(&out.console);
    let v = |name: &str| vm.get(name).unwrap_or(f64::NAN);

    println!("fgft aspect hook cost, ns per call (per hit = minus uninstrumented)");
    println!();
    println!("| variant                     | user space | per hit | VM (TCG) | per hit |");
    println!("|-----------------------------|-----------:|--------:|---------:|--------:|");
    let row = |label: &str, u: f64, k: f64| {
        let up = u - m("plain");
        let kp = k - v("plain");
        println!("| {label:<27} | {u:10.3} | {up:7.3} | {k:8.3} | {kp:7.3} |");
    };
    row("uninstrumented", m("plain"), v("plain"));
    row("hook switched off", m("disabled"), v("disabled"));
    row(
        "hook on, empty advice",
        m("enabled-empty"),
        v("enabled-empty"),
    );
    row("kprobe on entry (ftrace)", f64::NAN, v("kprobe-entry"));
    row("kprobe inside the function", f64::NAN, v("kprobe-inside"));
    println!();
    println!(
        "switch check: user space {:?}/2 advice hits, VM {:?}/2",
        runs[0].switch_hits, vm.switch_hits
    );
    println!("targets: switched off <= 1 ns per hit, on with empty advice <= 5 ns per hit");
    Ok(())
}

fn tempfile_dir(env: &Env, name: &str) -> Result<std::path::PathBuf, String> {
    let d = env.target_dir.join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).map_err(|e| e.to_string())?;
    Ok(d)
}

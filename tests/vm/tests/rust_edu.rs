//! The Rust edu driver (corpus/rust/edu) under fgft, in a VM with QEMU's
//! `edu` device: every injected fault is recovered, the device still
//! computes correct results afterwards, and fgft's recovery time is compared
//! with restarting the driver process (both measured in the guest).
//!
//! The guest program is built here as a static binary
//! (`cargo build --release --target x86_64-unknown-linux-gnu` with
//! `-C target-feature=+crt-static`, in `<target>/guest-rust`) and reaches the
//! device through `uio_pci_generic`.

use fgft_vm::{run, Env, Marker, Outcome, VmSpec};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

const TARGET: &str = "x86_64-unknown-linux-gnu";

/// Builds `fgft-edu` static and returns its host path.
fn build_guest(env: &Env) -> PathBuf {
    let target_dir = env.target_dir.join("guest-rust");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(&env.repo_root)
        .args([
            "build",
            "--release",
            "-p",
            "fgft-edu",
            "--bin",
            "fgft-edu",
            "--target",
            TARGET,
        ])
        .arg("--target-dir")
        .arg(&target_dir)
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "building the static guest program failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = target_dir.join(TARGET).join("release/fgft-edu");
    let elf = std::fs::read(&bin).expect("guest binary");
    let interp = b"/lib64/ld-linux-x86-64.so.2";
    assert!(
        !elf.windows(interp.len()).any(|w| w == interp),
        "fgft-edu is dynamically linked"
    );
    bin
}

/// Kinds that crash a native (non-isolated) driver process, so restart
/// recovery can be timed for them. The others are silent (a write to no
/// register, a wrong-width read) or fatal to the whole VM (QEMU aborts on
/// an out-of-range edu DMA; a wrong host address is a stray DMA write), and
/// are compared with the restart time of a plain panic.
const CRASHING: &str = "panic,div-zero,mmio-outside,corrupt-state,panic-dma,panic-irq,panic-raise";

/// Faults injected per kind, and restarts timed per kind.
const ROUNDS: usize = 5;

const SCRIPT: &str = r#"
modprobe uio_pci_generic || exit 10
fgft-edu bind || exit 11
fgft-edu selftest || exit 12
fgft-edu campaign --rounds ROUNDS || exit 13
fgft-edu restart --rounds ROUNDS --kinds KINDS || exit 14
"#;

fn by_kind<'a>(out: &'a Outcome, name: &str) -> BTreeMap<String, &'a Marker> {
    out.markers_named(name)
        .into_iter()
        .filter_map(|m| m.get("kind").map(|k| (k.to_string(), m)))
        .collect()
}

#[test]
fn edu_driver_recovers_from_every_injected_fault() {
    let env = Env::load().expect("fgft environment (scripts/setup.sh --print-env)");
    let bin = build_guest(&env);
    let mut spec = VmSpec::new("rust-edu");
    spec.stock_modules = vec!["uio_pci_generic".into()];
    spec.files.push((bin, "/bin/fgft-edu".into()));
    spec.qemu_args = vec!["-device".into(), "edu".into()];
    // All of RAM below the edu device's default 28-bit DMA mask.
    spec.memory_mb = 256;
    spec.script = SCRIPT
        .replace("KINDS", CRASHING)
        .replace("ROUNDS", &ROUNDS.to_string());
    spec.timeout = Duration::from_secs(300);
    let out = run(&env, &spec).expect("boot");
    assert!(out.is_clean(), "{out}");
    assert_eq!(out.exit_status, Some(0), "{out}");
    assert_eq!(out.oopses, 0, "{out}");

    let st = out
        .marker("edu-selftest")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(st.get("ok"), Some("1"), "{st}");

    // Every fault, every round: fired, recovered with the expected cause,
    // driver state and device registers restored, device correct after.
    let faults = out.markers_named("edu-fault");
    assert_eq!(faults.len(), 11 * ROUNDS, "{out}");
    for f in &faults {
        for k in ["fired", "recovered", "state_ok", "regs_ok", "device_ok"] {
            assert_eq!(f.get(k), Some("1"), "{k} in {f}");
        }
        assert_eq!(f.get("cause"), f.get("expected"), "{f}");
        assert_eq!(f.get("errno"), Some("EIO"), "{f}");
    }
    let kinds = by_kind(&out, "edu-kind");
    assert_eq!(kinds.len(), 11, "{out}");
    let restarts = by_kind(&out, "edu-restart-kind");
    assert_eq!(restarts.len(), CRASHING.split(',').count(), "{out}");
    for r in out.markers_named("edu-restart") {
        assert_ne!(r.get("native_exit"), Some("0"), "{r}");
    }

    // Recovery against restart, per fault kind, on medians (the 2-core
    // host is shared, so single rounds can be delayed by milliseconds).
    let panic_restart: f64 = restarts["panic"].parse("median_ns").unwrap();
    println!("fault kind        fgft recovery (median / mean, us)   restart (median / mean, us)   ratio (median)");
    let mut worst: f64 = 0.0;
    for (kind, m) in &kinds {
        let fgft_ns: f64 = m.parse("median_ns").unwrap();
        let fgft_mean: f64 = m.parse("mean_ns").unwrap();
        let (restart_ns, restart_mean, note) = match restarts.get(kind) {
            Some(r) => (
                r.parse::<f64>("median_ns").unwrap(),
                r.parse::<f64>("mean_ns").unwrap(),
                "",
            ),
            None => (
                panic_restart,
                restarts["panic"].parse::<f64>("mean_ns").unwrap(),
                " (vs restart after a panic: natively this fault does not crash the process)",
            ),
        };
        assert!(fgft_ns > 0.0 && restart_ns > 0.0, "{m}");
        let ratio = fgft_ns / restart_ns;
        worst = worst.max(ratio);
        println!(
            "{kind:<17} {:>10.1} / {:>10.1} {:>16.1} / {:>10.1} {:>14.4}{note}",
            fgft_ns / 1e3,
            fgft_mean / 1e3,
            restart_ns / 1e3,
            restart_mean / 1e3,
            ratio
        );
        println!(
            "FGFT-RESULT rust-edu kind={kind} fgft_median_ns={fgft_ns:.0} fgft_mean_ns={fgft_mean:.0} \
             restart_median_ns={restart_ns:.0} restart_mean_ns={restart_mean:.0} ratio={ratio:.4}"
        );
        // Recovery must beat restarting the driver process, except with a
        // DMA transfer in flight: neither can finish before the device does
        // (100 ms of virtual time per edu transfer), so both wait for it.
        if kind != "panic-dma" {
            assert!(
                ratio < 1.0,
                "{kind}: fgft recovery is not faster than a restart ({ratio})"
            );
        }
    }
    if let Some(o) = out.marker("edu-overhead") {
        println!("committed transaction (liveness): {o}");
    }
    println!(
        "worst recovery/restart ratio: {worst:.4}; VM run {:.1} s",
        out.duration.as_secs_f64()
    );
}

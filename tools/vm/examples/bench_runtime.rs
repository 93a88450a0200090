//! Benchmark of the fgft runtime (issue 3), not a test: boots once, runs the
//! self-test module's `bench` scenario and prints ns per operation against
//! the uninstrumented code measured in the same run.
//!
//! `cargo run -p fgft-vm --example bench_runtime`
//!
//! Operations (see runtime-kmod/selftest/st_main.c, st_bench()):
//! - begin_commit: fgft_txn_begin + fgft_txn_commit of an empty transaction,
//!   against one indirect call of an empty function;
//! - begin_call_commit: the same with fgft_txn_call of an empty body;
//! - checked_store: one store in SFI-instrumented code whose range check hits
//!   the last-hit window, against the same store in uninstrumented code;
//! - checked_store_miss: stores alternating between two grants, so every
//!   check misses the last-hit window (served by a recent window);
//! - revoke_N: fgft_unmap of a grant with N derived grants, per grant,
//!   against one indirect call per grant.
//!
//! Numbers come from QEMU TCG (no KVM here): absolute times are inflated by
//! the emulation, the ratios are the meaningful part.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use fgft_vm::{kbuild, run, Env, VmError, VmSpec};

fn bench() -> Result<(), VmError> {
    let env = Env::load()?;
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../runtime-kmod");
    let dir = kbuild(&env, "runtime-bench", &src, &env.kdir, &[])?;
    let mut spec = VmSpec::new("runtime-bench");
    spec.modules = vec![
        dir.join("fgft_rt.ko"),
        dir.join("selftest/fgft_selftest.ko"),
    ];
    spec.qemu_args = vec!["-smp".into(), "2".into()];
    spec.timeout = Duration::from_secs(300);
    spec.script = "grep -m1 'model name' /proc/cpuinfo\n\
                   grep . /sys/devices/system/cpu/vulnerabilities/*\n\
                   insmod /lib/fgft/fgft_rt.ko || exit 2\n\
                   insmod /lib/fgft/fgft_selftest.ko || exit 3\n\
                   echo bench > /sys/kernel/debug/fgft_selftest/run || exit 4\n"
        .into();
    let out = run(&env, &spec)?;
    let rows = out.markers_named("st-bench");
    if rows.is_empty() || out.exit_status != Some(0) {
        eprintln!("benchmark did not run:\n{out}\n{}", out.tail(60));
        return Err(VmError::Spec {
            name: spec.name,
            reason: "no st-bench markers".into(),
        });
    }
    println!(
        "fgft runtime benchmark (QEMU TCG, {} s boot)",
        out.duration.as_secs()
    );
    println!(
        "{:<22} {:>12} {:>16} {:>8}",
        "operation", "ns/op", "uninstrumented", "ratio"
    );
    for m in rows {
        println!(
            "{:<22} {:>12} {:>16} {:>8}",
            m.get("op").unwrap_or("?"),
            m.get("ns").unwrap_or("?"),
            m.get("base_ns").unwrap_or("?"),
            m.get("ratio").unwrap_or("?")
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

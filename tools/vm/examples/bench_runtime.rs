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
//! - checked_store: one store in SFI code as fgft-cc builds it, whose range
//!   check hits this cpu's window inline (include/fgft/sfi-as.sh), against
//!   the same store in uninstrumented code;
//! - checked_store_call: the same store with the check a runtime call that
//!   hits the transaction's last-hit window (SFI code built without
//!   sfi-as.sh);
//! - checked_store_miss: stores alternating between two grants, so every
//!   check misses the last-hit window (served by a recent window);
//! - revoke_N: fgft_unmap of a grant with N derived grants, per grant,
//!   against one indirect call per grant.
//!
//! Numbers come from QEMU TCG (no KVM here): absolute times are inflated by
//! the emulation, the ratios are the meaningful part.  They also move from
//! boot to boot (modules load at other addresses, and how fast TCG runs
//! code depends on where it lands), so the benchmark boots
//! FGFT_BENCH_BOOTS times (default 3) and reports medians.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use fgft_vm::{kbuild, run, Env, VmError, VmSpec};

/// One boot's rows: operation, ns per op, uninstrumented ns, ratio.
type Rows = Vec<(String, f64, f64, f64)>;

fn boot_once(env: &Env, dir: &std::path::Path) -> Result<Rows, VmError> {
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
    let out = run(env, &spec)?;
    let rows = out.markers_named("st-bench");
    if rows.is_empty() || out.exit_status != Some(0) {
        eprintln!("benchmark did not run:\n{out}\n{}", out.tail(60));
        return Err(VmError::Spec {
            name: spec.name,
            reason: "no st-bench markers".into(),
        });
    }
    let num = |v: Option<&str>| v.and_then(|x| x.parse::<f64>().ok()).unwrap_or(f64::NAN);
    Ok(rows
        .iter()
        .map(|m| {
            (
                m.get("op").unwrap_or("?").to_string(),
                num(m.get("ns")),
                num(m.get("base_ns")),
                num(m.get("ratio")),
            )
        })
        .collect())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn bench() -> Result<(), VmError> {
    let env = Env::load()?;
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../runtime-kmod");
    let dir = kbuild(&env, "runtime-bench", &src, &env.kdir, &[])?;
    // Each boot loads the modules at other addresses, and TCG's speed
    // depends on where code lands: the medians over boots are reported.
    let boots: usize = std::env::var("FGFT_BENCH_BOOTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(3);
    let mut all: Vec<Rows> = Vec::new();
    for i in 0..boots {
        let rows = boot_once(&env, &dir)?;
        println!("boot {}:", i + 1);
        for (op, ns, base, ratio) in &rows {
            println!("  {op:<22} {ns:>10.1} ns {base:>10.1} ns {ratio:>8.2}");
        }
        all.push(rows);
    }
    println!("\nfgft runtime benchmark (QEMU TCG), medians over {boots} boots");
    println!(
        "{:<22} {:>10} {:>16} {:>8} {:>16}",
        "operation", "ns/op", "uninstrumented", "ratio", "ratio min-max"
    );
    for (k, (op, ..)) in all[0].iter().enumerate() {
        let col = |f: fn(&(String, f64, f64, f64)) -> f64| -> Vec<f64> {
            all.iter()
                .filter_map(|r| r.get(k).filter(|x| &x.0 == op).map(f))
                .collect()
        };
        let ratios = col(|x| x.3);
        let lo = ratios.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = ratios.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        println!(
            "{:<22} {:>10.1} {:>16.1} {:>8.2} {:>16}",
            op,
            median(col(|x| x.1)),
            median(col(|x| x.2)),
            median(ratios),
            format!("{lo:.2}-{hi:.2}")
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

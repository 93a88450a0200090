//! Guest test program for the edu driver: binds the device, runs the fault
//! campaign under fgft and measures restart recovery.
//!
//! ```text
//! fgft-edu bind                         bind to uio_pci_generic, print the device
//! fgft-edu selftest                     open and check every entry point once
//! fgft-edu campaign [--rounds N] [--kinds k,k]
//!                                       inject each fault N times under fgft
//! fgft-edu restart [--rounds N] [--kinds k,k]
//!                                       crash a native driver process with each
//!                                       fault, time until a new one is ready
//! fgft-edu serve --native --fault K     (child) open, then commit fault K
//! fgft-edu serve --ready                (child) open, check, report ready
//! ```
//!
//! Results are console markers `FGFT-MARK <name> k=v ...`.

use fgft::Cause;
use fgft_edu::fault::{self, Fault};
use fgft_edu::{expected_factorial, mono_ns, Edu, EduError, EduOps};
use std::io::{BufRead, BufReader};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

#[derive(Debug, thiserror::Error)]
enum CliError {
    #[error("usage: fgft-edu bind|selftest|campaign|restart|serve [options] ({0})")]
    Usage(String),
    #[error(transparent)]
    Edu(#[from] EduError),
    #[error("{0}")]
    Failed(String),
}

struct Args {
    cmd: String,
    rounds: u32,
    kinds: Vec<Fault>,
    native: bool,
    ready: bool,
    fault: Option<Fault>,
}

fn parse_kinds(s: &str) -> Result<Vec<Fault>, CliError> {
    s.split(',')
        .filter(|k| !k.is_empty())
        .map(|k| Fault::from_name(k).ok_or_else(|| CliError::Usage(format!("unknown fault {k}"))))
        .collect()
}

fn parse_args() -> Result<Args, CliError> {
    let mut it = std::env::args().skip(1);
    let cmd = it
        .next()
        .ok_or_else(|| CliError::Usage("no command".into()))?;
    let mut a = Args {
        cmd,
        rounds: 3,
        kinds: Fault::ALL.to_vec(),
        native: false,
        ready: false,
        fault: None,
    };
    while let Some(o) = it.next() {
        let mut val = || {
            it.next()
                .ok_or_else(|| CliError::Usage(format!("{o} needs a value")))
        };
        match o.as_str() {
            "--rounds" => {
                a.rounds = val()?
                    .parse()
                    .map_err(|_| CliError::Usage("--rounds takes a number".into()))?
            }
            "--kinds" => a.kinds = parse_kinds(&val()?)?,
            "--fault" => {
                a.fault = Some(
                    parse_kinds(&val()?)?
                        .first()
                        .copied()
                        .unwrap_or(Fault::None),
                )
            }
            "--native" => a.native = true,
            "--ready" => a.ready = true,
            other => return Err(CliError::Usage(format!("unknown option {other}"))),
        }
    }
    Ok(a)
}

/// The entry point each fault is injected into, and the cause fgft must
/// report.
fn plan(f: Fault) -> (&'static str, Cause) {
    match f {
        Fault::Panic | Fault::DivZero | Fault::CorruptState => ("factorial", Cause::Panic),
        Fault::MmioOutside | Fault::MmioUnmapped | Fault::MmioWidth => ("factorial", Cause::Range),
        Fault::WrongDmaDevice | Fault::WrongDmaHost => ("dma_roundtrip", Cause::Range),
        Fault::PanicDma => ("dma_roundtrip", Cause::Panic),
        Fault::PanicIrq => ("factorial_irq", Cause::Panic),
        Fault::PanicRaise => ("raise_irq", Cause::Panic),
        Fault::None => ("liveness", Cause::None),
    }
}

fn pattern(seed: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(seed) as u8)
        .collect()
}

/// Calls the entry point that `f` is injected into. `n` is a fresh
/// factorial argument (not in the driver's cache).
fn trigger(edu: &mut Edu, f: Fault, n: u32) -> Result<(), EduError> {
    match plan(f).0 {
        "factorial" => edu.factorial(n).map(drop),
        "dma_roundtrip" => edu.dma_roundtrip(&pattern(n, 256)).map(drop),
        "factorial_irq" => edu.factorial_irq(n % 13).map(drop),
        "raise_irq" => edu.raise_irq(0x20).map(drop),
        _ => edu.liveness(n).map(drop),
    }
}

/// Is the device (and the driver) still right? Every entry point, with
/// known answers.
fn verify(edu: &mut Edu, seed: u32) -> Result<(), String> {
    for n in 0..=12 {
        let v = edu
            .factorial(n)
            .map_err(|e| format!("factorial({n}): {e}"))?;
        if v != expected_factorial(n) {
            return Err(format!(
                "factorial({n}) = {v}, expected {}",
                expected_factorial(n)
            ));
        }
    }
    let v = edu
        .factorial_irq(7)
        .map_err(|e| format!("factorial_irq(7): {e}"))?;
    if v != 5040 {
        return Err(format!("factorial_irq(7) = {v}"));
    }
    edu.liveness(0x1234_5678 ^ seed)
        .map_err(|e| format!("liveness: {e}"))?;
    let st = edu.raise_irq(0x40).map_err(|e| format!("raise_irq: {e}"))?;
    if st != 0x40 {
        return Err(format!(
            "interrupt status {st:#x} after raising 0x40 (stale interrupt left pending)"
        ));
    }
    let data = pattern(seed, 64);
    let back = edu.dma_roundtrip(&data).map_err(|e| format!("dma: {e}"))?;
    if back != data {
        return Err("DMA round trip returned different bytes".into());
    }
    Ok(())
}

fn selftest() -> Result<(), CliError> {
    let t = Instant::now();
    let mut edu = Edu::open()?;
    let open_ns = t.elapsed().as_nanos();
    verify(&mut edu, 1).map_err(CliError::Failed)?;
    println!(
        "FGFT-MARK edu-selftest ok=1 ident={:#010x} dma_bus={:#x} open_ns={open_ns}",
        edu.ident(),
        edu.dma_bus()
    );
    Ok(())
}

#[derive(Default)]
struct KindStats {
    n: u32,
    recovered: u32,
    ok: u32,
    ns: Vec<u64>,
}

fn campaign(a: &Args) -> Result<(), CliError> {
    let mut edu = Edu::open()?;
    verify(&mut edu, 0).map_err(|e| CliError::Failed(format!("before the campaign: {e}")))?;
    overhead(&mut edu)?;
    let mut fresh = 20u32;
    let mut failures = 0u32;
    for &kind in &a.kinds {
        let (entry, want) = plan(kind);
        let mut ks = KindStats::default();
        for round in 0..a.rounds {
            fresh += 1;
            let stats_before = edu.stats.clone();
            let memo_before = edu.memo_len();
            let regs_before = device_regs(&edu);
            fault::arm(kind);
            let r = trigger(&mut edu, kind, fresh);
            let fired = fault::armed() == Fault::None;
            fault::arm(Fault::None);
            let (recovered, cause, errno, ns, unwind_ns, restored) = match &r {
                Err(EduError::Aborted(ab)) => (
                    ab.cause == want,
                    ab.cause.name(),
                    ab.errno.to_string(),
                    fgft::txn::as_nanos(ab.recovery),
                    fgft::txn::as_nanos(ab.unwind),
                    ab.restored,
                ),
                Err(e) => (false, "error", e.to_string().replace(' ', "_"), 0, 0, false),
                Ok(()) => (false, "none", "0".into(), 0, 0, false),
            };
            let state_ok = edu.stats == stats_before && edu.memo_len() == memo_before;
            let regs_ok = device_regs(&edu) == regs_before;
            let device = verify(&mut edu, fresh);
            let device_ok = device.is_ok();
            let ok = fired && recovered && restored && state_ok && regs_ok && device_ok;
            ks.n += 1;
            ks.recovered += u32::from(recovered && restored);
            ks.ok += u32::from(ok);
            ks.ns.push(ns);
            if !ok {
                failures += 1;
            }
            println!(
                "FGFT-MARK edu-fault kind={} round={round} entry=Edu::{entry} fired={} cause={cause} \
                 expected={} errno={errno} recovered={} recovery_ns={ns} unwind_ns={unwind_ns} state_ok={} regs_ok={} device_ok={}",
                kind.name(),
                u8::from(fired),
                want.name(),
                u8::from(recovered && restored),
                u8::from(state_ok),
                u8::from(regs_ok),
                u8::from(device_ok),
            );
            if let Err(e) = device {
                println!(
                    "edu: {} round {round}: device check failed: {e}",
                    kind.name()
                );
            }
        }
        let (mean, median, min, max) = summary(&ks.ns);
        println!(
            "FGFT-MARK edu-kind kind={} n={} recovered={} ok={} mean_ns={mean} median_ns={median} \
             min_ns={min} max_ns={max}",
            kind.name(),
            ks.n,
            ks.recovered,
            ks.ok
        );
    }
    for e in fgft::entries() {
        let s = e.stats();
        println!(
            "FGFT-MARK edu-entry name={} begins={} commits={} aborts_panic={} aborts_range={} \
             restore_failures={} recovery_mean_ns={}",
            e.name,
            s.begins,
            s.commits,
            s.aborts_by(Cause::Panic),
            s.aborts_by(Cause::Range),
            s.restore_failures,
            s.recovery_mean_ns()
        );
    }
    if failures > 0 {
        return Err(CliError::Failed(format!(
            "{failures} injected faults were not cleanly recovered"
        )));
    }
    Ok(())
}

/// Registers a transaction restores, read directly (outside any
/// transaction).
fn device_regs(edu: &Edu) -> [u64; 5] {
    use fgft_edu::{DMA_COUNT, DMA_DST, DMA_SRC, LIVENESS, STATUS};
    [LIVENESS, STATUS, DMA_SRC, DMA_DST, DMA_COUNT].map(|r| edu.peek(r))
}

/// `(mean, median, min, max)`.
fn summary(ns: &[u64]) -> (u64, u64, u64, u64) {
    if ns.is_empty() {
        return (0, 0, 0, 0);
    }
    let mut v = ns.to_vec();
    v.sort_unstable();
    let sum: u64 = v.iter().sum();
    (sum / v.len() as u64, v[v.len() / 2], v[0], v[v.len() - 1])
}

/// Cost of a committed transaction: the liveness entry point with
/// isolation on and off.
fn overhead(edu: &mut Edu) -> Result<(), CliError> {
    const N: u32 = 300;
    let mut run = |on: bool| -> Result<u64, CliError> {
        fgft::set_isolation_global(on);
        let t = Instant::now();
        for i in 0..N {
            edu.liveness(i)?;
        }
        Ok(t.elapsed().as_nanos() as u64 / u64::from(N))
    };
    let native = run(false)?;
    let isolated = run(true)?;
    let native2 = run(false)?;
    fgft::set_isolation_global(true);
    println!(
        "FGFT-MARK edu-overhead entry=Edu::liveness calls={N} isolated_ns={isolated} native_ns={}",
        native.min(native2)
    );
    Ok(())
}

fn restart(a: &Args) -> Result<(), CliError> {
    let exe = std::env::current_exe().map_err(|e| CliError::Failed(format!("current_exe: {e}")))?;
    for &kind in &a.kinds {
        if matches!(
            kind,
            Fault::MmioUnmapped | Fault::MmioWidth | Fault::WrongDmaDevice | Fault::WrongDmaHost
        ) {
            return Err(CliError::Usage(format!(
                "{} does not crash a native driver process (silent corruption, or QEMU aborts the VM)",
                kind.name()
            )));
        }
        let mut ns = Vec::new();
        for round in 0..a.rounds {
            let mut child = Command::new(&exe)
                .args(["serve", "--native", "--fault", kind.name()])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| CliError::Failed(format!("spawn: {e}")))?;
            let out = child
                .stdout
                .take()
                .ok_or_else(|| CliError::Failed("no stdout".into()))?;
            let t_fault = read_stamp(out, "FAULT")?;
            let status = child
                .wait()
                .map_err(|e| CliError::Failed(format!("wait: {e}")))?;
            if status.success() {
                return Err(CliError::Failed(format!(
                    "{}: the native driver did not crash",
                    kind.name()
                )));
            }
            let mut next = Command::new(&exe)
                .args(["serve", "--ready"])
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| CliError::Failed(format!("spawn: {e}")))?;
            let out = next
                .stdout
                .take()
                .ok_or_else(|| CliError::Failed("no stdout".into()))?;
            let t_ready = read_stamp(out, "READY")?;
            let st = next
                .wait()
                .map_err(|e| CliError::Failed(format!("wait: {e}")))?;
            if !st.success() {
                return Err(CliError::Failed(
                    "the restarted driver failed its check".into(),
                ));
            }
            let d = t_ready.saturating_sub(t_fault);
            ns.push(d);
            println!(
                "FGFT-MARK edu-restart kind={} round={round} native_exit={} restart_ns={d}",
                kind.name(),
                status.code().unwrap_or(-1)
            );
        }
        let (mean, median, min, max) = summary(&ns);
        println!(
            "FGFT-MARK edu-restart-kind kind={} n={} mean_ns={mean} median_ns={median} min_ns={min} \
             max_ns={max}",
            kind.name(),
            ns.len()
        );
    }
    Ok(())
}

fn read_stamp(out: std::process::ChildStdout, what: &str) -> Result<u64, CliError> {
    let prefix = format!("FGFT-EDU {what} t=");
    for line in BufReader::new(out).lines() {
        let line = line.map_err(|e| CliError::Failed(format!("child output: {e}")))?;
        if let Some(v) = line.strip_prefix(&prefix) {
            return v
                .trim()
                .parse()
                .map_err(|_| CliError::Failed(format!("bad stamp line {line:?}")));
        }
    }
    Err(CliError::Failed(format!("child exited without {what}")))
}

fn serve(a: &Args) -> Result<(), CliError> {
    if a.native {
        fgft::set_isolation_global(false);
    }
    let mut edu = Edu::open()?;
    if a.ready {
        edu.liveness(0x5a5a_0001)?;
        if edu.factorial(5)? != 120 {
            return Err(CliError::Failed(
                "factorial(5) is wrong after restart".into(),
            ));
        }
        println!("FGFT-EDU READY t={}", mono_ns());
        return Ok(());
    }
    let f = a
        .fault
        .ok_or_else(|| CliError::Usage("serve needs --fault or --ready".into()))?;
    edu.factorial(3)?;
    fault::arm(f);
    println!("FGFT-EDU FAULT t={}", mono_ns());
    trigger(&mut edu, f, 21)?;
    Err(CliError::Failed(format!(
        "{}: survived without fgft",
        f.name()
    )))
}

fn main() -> ExitCode {
    let r = parse_args().and_then(|a| match a.cmd.as_str() {
        "bind" => {
            let dev = fgft_edu::pci::find()?;
            let uio = fgft_edu::pci::bind_uio(&dev)?;
            println!(
                "FGFT-MARK edu-bound dev={} uio={}",
                dev.display(),
                uio.display()
            );
            Ok(())
        }
        "selftest" => selftest(),
        "campaign" => campaign(&a),
        "restart" => restart(&a),
        "serve" => serve(&a),
        other => Err(CliError::Usage(format!("unknown command {other}"))),
    });
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fgft-edu: {e}");
            println!(
                "FGFT-MARK edu-error msg={}",
                e.to_string().replace(' ', "_")
            );
            ExitCode::FAILURE
        }
    }
}

//! Pinning QEMU's threads to host CPUs ([`crate::VmSpec::pin_vcpus`]).
//!
//! Under TCG each vCPU is a host thread. Left to the host scheduler, a
//! measured vCPU shares its host CPU with whatever vCPU is busy, so a
//! guest's latency measures the host as much as the guest. Pinned, vCPU
//! `k` runs alone on host CPU `k` (modulo the host's CPUs), and QEMU's
//! other threads (its main loop, which fires the guest's timers) run on
//! the last vCPU's host CPU. QEMU names its threads (`-name
//! ...,debug-threads=on`): vCPU `k` is `CPU k/TCG`. QEMU starts under
//! `taskset` on the main loop's CPU, so every thread it creates inherits
//! that; each vCPU thread is moved once it appears.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The vCPU count of QEMU arguments: `-smp N` or `-smp cpus=N,...`;
/// 1 without `-smp`.
pub(crate) fn smp_count(args: &[String]) -> Result<usize, String> {
    let Some(i) = args.iter().position(|a| a == "-smp" || a == "--smp") else {
        return Ok(1);
    };
    let v = args.get(i + 1).ok_or("`-smp` has no value")?;
    let first = v.split(',').next().unwrap_or("");
    let n = first.strip_prefix("cpus=").unwrap_or(first);
    n.parse::<usize>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("`-smp {v}`: cannot read the vCPU count"))
}

/// The host CPU of vCPU `k` and the one of QEMU's other threads.
pub(crate) fn plan(vcpus: usize, host: usize) -> (Vec<usize>, usize) {
    let host = host.max(1);
    let cpus = (0..vcpus).map(|k| k % host).collect();
    (cpus, vcpus.saturating_sub(1) % host)
}

/// vCPU index of a QEMU thread name (`CPU 1/TCG` -> 1).
pub(crate) fn vcpu_of(comm: &str) -> Option<usize> {
    comm.trim()
        .strip_prefix("CPU ")?
        .strip_suffix("/TCG")?
        .parse()
        .ok()
}

/// Waits (until `deadline`) for QEMU process `pid`'s vCPU threads and
/// moves vCPU `k` to host CPU `cpus[k]`. Returns one line per thread
/// (`CPU 1/TCG (tid 1234) -> host CPU 1`).
pub(crate) fn pin_vcpus(
    pid: u32,
    cpus: &[usize],
    deadline: Instant,
) -> Result<Vec<String>, String> {
    let tasks = format!("/proc/{pid}/task");
    let mut done: Vec<Option<String>> = vec![None; cpus.len()];
    while done.iter().any(Option::is_none) {
        if Instant::now() >= deadline {
            let missing: Vec<String> = (0..cpus.len())
                .filter(|k| done[*k].is_none())
                .map(|k| format!("CPU {k}/TCG"))
                .collect();
            return Err(format!("no thread {} appeared", missing.join(", ")));
        }
        let entries = std::fs::read_dir(&tasks).map_err(|e| format!("{tasks}: {e}"))?;
        for e in entries.flatten() {
            let tid = e.file_name().to_string_lossy().into_owned();
            let Ok(comm) = std::fs::read_to_string(Path::new(&tasks).join(&tid).join("comm"))
            else {
                continue;
            };
            let Some(k) = vcpu_of(&comm).filter(|k| *k < cpus.len()) else {
                continue;
            };
            if done[k].is_some() {
                continue;
            }
            let out = Command::new("taskset")
                .args(["-p", "-c", &cpus[k].to_string(), &tid])
                .output()
                .map_err(|e| format!("cannot run taskset: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "taskset -p -c {} {tid}: {}",
                    cpus[k],
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            done[k] = Some(format!(
                "{} (tid {tid}) -> host CPU {}",
                comm.trim(),
                cpus[k]
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(done.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn smp_counts() {
        assert_eq!(smp_count(&v("-m 512")), Ok(1));
        assert_eq!(smp_count(&v("-device e1000 -smp 2")), Ok(2));
        assert_eq!(smp_count(&v("-smp cpus=4,sockets=1")), Ok(4));
        assert!(smp_count(&v("-smp")).is_err());
        assert!(smp_count(&v("-smp x")).is_err());
        assert!(smp_count(&v("-smp 0")).is_err());
    }

    #[test]
    fn plans() {
        assert_eq!(plan(2, 2), (vec![0, 1], 1));
        assert_eq!(plan(2, 4), (vec![0, 1], 1));
        assert_eq!(plan(3, 2), (vec![0, 1, 0], 0));
        assert_eq!(plan(1, 2), (vec![0], 0));
        assert_eq!(plan(2, 0), (vec![0, 0], 0));
    }

    #[test]
    fn thread_names() {
        assert_eq!(vcpu_of("CPU 1/TCG\n"), Some(1));
        assert_eq!(vcpu_of("CPU 12/TCG"), Some(12));
        assert_eq!(vcpu_of("qemu-system-x86"), None);
        assert_eq!(vcpu_of("CPU 1/KVM"), None);
    }
}

//! fgft runs: the injected driver split (fgft-split), every variant in as few
//! boots as possible.
//!
//! One boot loads the runtime, the SFI module and the main module, then for
//! each variant: arm it, trigger its entry point, disarm, check the device,
//! and read the runtime's recovery counters. If a boot goes down the
//! remaining variants continue in a new boot, so one bad variant costs one
//! boot, not the campaign.

use crate::config::Config;
use crate::CampaignError;
use fgft_inject::Variant;
use fgft_vm::{Env, Outcome, VmSpec};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// Modules of an fgft build, in load order (runtime first, main last).
#[derive(Debug, Clone)]
pub struct FgftModules {
    pub modules: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FgftOutcome {
    /// The call faulted, fgft recovered (the runtime counted the recovery),
    /// nothing crashed and the device works afterwards. Whether the caller
    /// saw an error depends on the slot: a void slot cannot return one.
    Recovered,
    /// The fault never fired or did no harm: the call succeeded.
    NoFault,
    /// Recovered, but the device check failed afterwards.
    DeviceBroken,
    /// The kernel oopsed outside a recovered transaction, hung or panicked.
    Crash,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FgftResult {
    pub id: u32,
    pub label: String,
    pub outcome: FgftOutcome,
    pub trigger_rc: Option<i32>,
    /// Recoveries the runtime counted for this variant.
    pub recoveries: u64,
    /// Time the runtime spent recovering (fault to end of abort), ns.
    pub recovery_ns: u64,
    /// Aborts that restored the device checkpoint (the others left the
    /// device as it was: the call had touched none of its registers).
    #[serde(default)]
    pub restores: u64,
    pub device_ok: Option<bool>,
    /// The kernel printed an oops report that the runtime then recovered
    /// (a fault in kernel code the body called: the die notifier runs after
    /// the report).
    #[serde(default)]
    pub oops_reported: bool,
    /// Where the kernel's oops path was entered, from its report (`RIP:`
    /// line): for a recovery after an oops report, and for a crash.
    #[serde(default)]
    pub oops_at: Option<String>,
}

/// The function of the first `RIP:` line of a console window
/// (`mii_link_ok+0xd/0x50 [mii]`), or the first panic line.
fn oops_site(window: &str) -> Option<String> {
    for line in window.lines() {
        if let Some(i) = line.find("RIP: 0010:") {
            return Some(line[i + "RIP: 0010:".len()..].trim().to_string());
        }
    }
    window
        .lines()
        .find(|l| l.contains("Kernel panic"))
        .map(|l| l.trim().to_string())
}

/// Shell helpers the fgft script uses: read a counter from the runtime.
const PRELUDE: &str =
    "stat() { awk -v k=\"$1\" '$1 == k { print $2 }' /sys/kernel/debug/fgft/stats; }\n";

/// The guest script for a batch of variants.
pub fn script(cfg: &Config, mods: &FgftModules, batch: &[&Variant]) -> String {
    let d = &cfg.driver;
    let mut s = String::from(PRELUDE);
    s.push_str(&cfg.load_deps());
    for m in &mods.modules {
        let f = m
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        s.push_str(&format!("insmod /lib/fgft/{f} || exit 3\n"));
    }
    s.push_str(&format!("sleep 1\n{}\nsleep 1\n{}\n", d.setup, d.check));
    s.push_str("echo FGFT-MARK ready\n");
    for v in batch {
        let trig = cfg
            .trigger_cmd(&v.entry)
            .unwrap_or_else(|| "false".to_string());
        s.push_str(&format!(
            "echo FGFT-MARK arm id={id}\n\
             r0=$(stat recoveries); n0=$(stat recovery_ns_sum); d0=$(stat restores)\n\
             echo {id} > /sys/module/fgft_rt/parameters/fgft_inject_id\n\
             {trig}\n\
             rc=$?\n\
             echo 0 > /sys/module/fgft_rt/parameters/fgft_inject_id\n\
             r1=$(stat recoveries); n1=$(stat recovery_ns_sum); d1=$(stat restores)\n\
             echo FGFT-MARK fgft id={id} rc=$rc rec=$((r1 - r0)) rec_ns=$((n1 - n0)) restores=$((d1 - d0))\n\
             {check}\n\
             echo FGFT-MARK checked id={id}\n",
            id = v.id,
            check = d.check,
        ));
    }
    s.push_str("cat /sys/kernel/debug/fgft/stats\necho FGFT-MARK all-done\n");
    s
}

/// The console of one variant: from its `arm` marker to its `checked`
/// marker, or to the end of the log when the boot went down first. Empty
/// when the variant was never armed.
fn variant_console(console: &str, id: u32) -> &str {
    let arm = format!("FGFT-MARK arm id={id}\n");
    let Some(start) = console.find(&arm) else {
        return "";
    };
    let rest = &console[start..];
    let done = format!("FGFT-MARK checked id={id}\n");
    match rest.find(&done) {
        Some(end) => &rest[..end],
        None => rest,
    }
}

/// The runtime's line when its die notifier takes over a fault.
const RECOVERED: &str = ": recovered: fault at ";

/// Oops reports in `window` that the runtime recovered: each counted oops
/// line followed by the runtime's recovery line before the next oops.
fn recovered_oops_reports(window: &str) -> usize {
    let mut pending = false;
    let mut n = 0;
    for line in window.lines() {
        let one = fgft_vm::parse_console(line);
        if one.oopses > 0 {
            pending = true;
        } else if pending && line.contains(RECOVERED) {
            n += 1;
            pending = false;
        }
    }
    n
}

/// The device check after a variant, from the markers of its console: the
/// first check marker past its `fgft` marker (a trigger that is the check
/// itself, as on the I/O path, prints one before it), passing when `field`
/// is positive.
fn device_check_after(markers: &[fgft_vm::Marker], marker: &str, field: &str) -> Option<bool> {
    markers
        .iter()
        .skip_while(|m| m.name != "fgft")
        .find(|m| m.name == marker)
        .and_then(|c| c.parse::<u64>(field))
        .map(|n| n > 0)
}

/// Results for the variants of a batch that this boot got through. A
/// variant whose console shows a kernel oops or panic, or whose `checked`
/// marker is missing (the boot hung or went down), is a crash: the kernel
/// is no longer trusted, so the caller resumes after it in a new boot. The
/// same after a variant that leaves the device failing its check.
pub fn classify(cfg: &Config, batch: &[&Variant], out: &Outcome) -> Vec<FgftResult> {
    let mut res = Vec::new();
    for v in batch {
        let window = variant_console(&out.console, v.id);
        let seen = fgft_vm::parse_console(window);
        let recovered_oopses = recovered_oops_reports(window);
        let crashed = seen.oopses > recovered_oopses || seen.panicked;
        let id = v.id.to_string();
        let m = out
            .markers_named("fgft")
            .into_iter()
            .find(|m| m.get("id") == Some(id.as_str()));
        let checked = out
            .markers_named("checked")
            .into_iter()
            .any(|m| m.get("id") == Some(id.as_str()));
        let Some(m) = m.filter(|_| checked && !crashed) else {
            res.push(FgftResult {
                id: v.id,
                label: v.label.clone(),
                outcome: FgftOutcome::Crash,
                trigger_rc: None,
                recoveries: 0,
                recovery_ns: 0,
                restores: 0,
                device_ok: None,
                oops_reported: false,
                oops_at: oops_site(window),
            });
            break;
        };
        let rc = m.parse::<i32>("rc");
        let rec = m.parse::<u64>("rec").unwrap_or(0);
        let rec_ns = m.parse::<u64>("rec_ns").unwrap_or(0);
        let device_ok = device_check_after(
            &seen.markers,
            &cfg.driver.check_marker,
            &cfg.driver.check_field,
        );
        let outcome = if rec == 0 {
            FgftOutcome::NoFault
        } else if device_ok == Some(true) {
            FgftOutcome::Recovered
        } else {
            FgftOutcome::DeviceBroken
        };
        res.push(FgftResult {
            id: v.id,
            label: v.label.clone(),
            outcome,
            trigger_rc: rc,
            recoveries: rec,
            recovery_ns: rec_ns,
            restores: m.parse::<u64>("restores").unwrap_or(0),
            device_ok,
            oops_reported: recovered_oopses > 0,
            oops_at: (recovered_oopses > 0).then(|| oops_site(window)).flatten(),
        });
        // A device that fails its check after this variant (a silent fault
        // that committed a bad register value, or a failed recovery) is no
        // longer trusted either: the next variant starts in a new boot, on
        // a fresh device, so that it is judged by its own effect.
        if device_ok == Some(false) {
            break;
        }
    }
    res
}

/// Whether the last of a boot's results is a crash only because the boot
/// ran out of time (QEMU killed, no oops or panic in the variant's window)
/// while the variant was not the boot's first: its budget went to the
/// variants before it, so it is run again at the start of a new boot,
/// with the whole budget.  A variant that hangs there is a crash.
fn timed_out_behind_others(out: &Outcome, got: &[FgftResult]) -> bool {
    out.timed_out
        && !out.panicked
        && got.len() > 1
        && got
            .last()
            .is_some_and(|r| r.outcome == FgftOutcome::Crash && r.oops_at.is_none())
}

/// Runs every variant, resuming in a new boot after a crash.
pub fn run_all(
    env: &Env,
    cfg: &Config,
    mods: &FgftModules,
    variants: &[Variant],
    timeout: Duration,
) -> Result<(Vec<FgftResult>, usize), CampaignError> {
    let mut results = Vec::new();
    let mut boots = 0;
    let mut rest: Vec<&Variant> = variants.iter().collect();
    while !rest.is_empty() {
        boots += 1;
        let mut spec = VmSpec::new(&format!("campaign-{}-fgft-{boots}", cfg.driver.name));
        spec.modules = mods.modules.clone();
        spec.qemu_args = cfg.driver.qemu.clone();
        spec.timeout = timeout + Duration::from_secs(3 * rest.len() as u64);
        spec.script = script(cfg, mods, &rest);
        crate::add_guest_support(cfg, &crate::guest_files(env)?, &mut spec);
        let out = fgft_vm::run(env, &spec)?;
        if out.marker("ready").is_none() {
            return Err(CampaignError::Msg(format!(
                "fgft boot {boots} of {} never got ready\n{}",
                cfg.driver.name,
                out.summary()
            )));
        }
        let mut got = classify(cfg, &rest, &out);
        if timed_out_behind_others(&out, &got) {
            if let Some(r) = got.pop() {
                eprintln!(
                    "fgft   {:3} boot {boots} ran out of time: run again in a new boot",
                    r.id
                );
            }
        }
        let n = got.len();
        for r in &got {
            eprintln!(
                "fgft   {:3} {:<13} {}",
                r.id,
                format!("{:?}", r.outcome),
                r.label
            );
        }
        results.extend(got);
        rest.drain(..n.min(rest.len()));
    }
    Ok((results, boots))
}

#[cfg(test)]
mod tests {
    use super::variant_console;
    use super::{timed_out_behind_others, FgftOutcome, FgftResult};

    fn result(id: u32, outcome: FgftOutcome, oops_at: Option<&str>) -> FgftResult {
        FgftResult {
            id,
            label: format!("v{id}"),
            outcome,
            trigger_rc: None,
            recoveries: 0,
            recovery_ns: 0,
            restores: 0,
            device_ok: None,
            oops_reported: false,
            oops_at: oops_at.map(str::to_string),
        }
    }

    #[test]
    fn a_variant_the_boot_ran_out_of_time_for_runs_again() {
        let mut out = fgft_vm::Outcome {
            timed_out: true,
            ..Default::default()
        };
        let ok = result(1, FgftOutcome::Recovered, None);
        let cut = result(2, FgftOutcome::Crash, None);
        assert!(timed_out_behind_others(&out, &[ok.clone(), cut.clone()]));
        // First of its boot, with the whole budget: a hang.
        assert!(!timed_out_behind_others(&out, std::slice::from_ref(&cut)));
        // An oops in its window, or a panic: a crash however long it took.
        let oopsed = result(2, FgftOutcome::Crash, Some("e1000_intr+0x10"));
        assert!(!timed_out_behind_others(&out, &[ok.clone(), oopsed]));
        out.panicked = true;
        assert!(!timed_out_behind_others(&out, &[ok.clone(), cut.clone()]));
        // QEMU exited by itself: what classify() said stands.
        out.panicked = false;
        out.timed_out = false;
        assert!(!timed_out_behind_others(&out, &[ok, cut]));
    }

    const LOG: &str = "FGFT-MARK ready\n\
        FGFT-MARK arm id=1\n\
        FGFT-MARK fgft id=1 rc=1 rec=1 rec_ns=5\n\
        FGFT-MARK checked id=1\n\
        FGFT-MARK arm id=2\n\
        [    5.95] BUG: kernel NULL pointer dereference, address: 0240\n\
        [    5.96] Oops: Oops: 0000 [#1] PREEMPT SMP NOPTI\n\
        FGFT-MARK fgft id=2 rc=137 rec=0 rec_ns=0\n\
        FGFT-MARK checked id=2\n\
        FGFT-MARK arm id=3\n";

    #[test]
    fn the_device_check_is_the_one_after_the_trigger() {
        // An I/O-path trigger is the traffic check itself: it fails while
        // the fault is armed, and the check after the fgft marker decides.
        let window = "FGFT-MARK arm id=7\n\
            FGFT-MARK pkt sent=200 received=0\n\
            FGFT-MARK fgft id=7 rc=1 rec=212 rec_ns=5\n\
            FGFT-MARK pkt sent=200 received=200\n";
        let m = fgft_vm::parse_console(window).markers;
        assert_eq!(super::device_check_after(&m, "pkt", "received"), Some(true));
        let broken = window.replace("received=200", "received=0");
        let m = fgft_vm::parse_console(&broken).markers;
        assert_eq!(
            super::device_check_after(&m, "pkt", "received"),
            Some(false)
        );
        let m = fgft_vm::parse_console("FGFT-MARK pkt received=9\n").markers;
        assert_eq!(super::device_check_after(&m, "pkt", "received"), None);
    }

    #[test]
    fn an_oops_belongs_to_the_variant_armed_before_it() {
        let one = fgft_vm::parse_console(variant_console(LOG, 1));
        let two = fgft_vm::parse_console(variant_console(LOG, 2));
        let three = fgft_vm::parse_console(variant_console(LOG, 3));
        assert_eq!((one.oopses, two.oopses, three.oopses), (0, 1, 0));
        assert!(variant_console(LOG, 3).starts_with("FGFT-MARK arm id=3"));
        assert_eq!(variant_console(LOG, 4), "");
    }

    #[test]
    fn an_oops_the_runtime_recovered_is_counted_apart() {
        let recovered = "[ 8.81] BUG: kernel NULL pointer dereference, address: 02c8\n\
            [ 8.81] Oops: Oops: 0000 [#1] PREEMPT SMP NOPTI\n\
            [ 8.82] RIP: 0010:mii_link_ok+0xd/0x50 [mii]\n\
            [ 8.83] fgft: rtl8139_get_link: recovered: fault at mii_link_ok+0xd/0x50 [mii] caught, transaction aborted\n";
        assert_eq!(super::recovered_oops_reports(recovered), 1);
        let two = format!("{recovered}[ 9.10] Oops: general protection fault [#2]\n");
        assert_eq!(super::recovered_oops_reports(&two), 1);
        assert_eq!(super::recovered_oops_reports(LOG), 0);
    }
}

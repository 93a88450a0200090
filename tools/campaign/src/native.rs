//! Native runs: the injected driver without fgft, one boot per variant.

use crate::config::Config;
use crate::CampaignError;
use fgft_inject::Variant;
use fgft_vm::{Env, Outcome, VmSpec};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// What a variant did to a native kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NativeOutcome {
    /// The kernel panicked.
    Panic,
    /// An oops (the faulting process was killed; the kernel is tainted).
    Oops,
    /// The guest stopped answering before the scenario ended.
    Hang,
    /// The call returned an error and nothing else went wrong.
    Error,
    /// Nothing visible: the call "succeeded" (state may be corrupt).
    Silent,
}

impl NativeOutcome {
    /// A crash in the paper's sense: the system or the driver went down.
    pub fn is_crash(self) -> bool {
        matches!(
            self,
            NativeOutcome::Panic | NativeOutcome::Oops | NativeOutcome::Hang
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NativeResult {
    pub id: u32,
    pub label: String,
    pub outcome: NativeOutcome,
    /// Exit status of the trigger, when it came back.
    pub trigger_rc: Option<i32>,
    /// Device check after the call (frames received), when it ran.
    pub device_ok: Option<bool>,
    pub first_oops: Option<String>,
}

/// The guest script for one native variant.
pub fn script(cfg: &Config, module_file: &str, v: &Variant) -> String {
    let d = &cfg.driver;
    let trig = cfg
        .trigger_cmd(&v.entry)
        .unwrap_or_else(|| "false".to_string());
    format!(
        "{deps}insmod /lib/fgft/{module_file} || exit 3\n\
         sleep 1\n\
         {setup}\n\
         sleep 1\n\
         echo FGFT-MARK ready\n\
         echo {id} > /sys/module/{m}/parameters/fgft_inject_id\n\
         {trig}\n\
         echo FGFT-MARK trigger id={id} rc=$?\n\
         echo 0 > /sys/module/{m}/parameters/fgft_inject_id\n\
         {check}\n\
         echo FGFT-MARK done id={id}\n",
        deps = cfg.load_deps(),
        setup = d.setup,
        id = v.id,
        m = cfg.sysfs_module(),
        check = d.check,
    )
}

/// Classifies one native boot.
pub fn classify(cfg: &Config, v: &Variant, out: &Outcome) -> NativeResult {
    let trigger_rc = out
        .markers_named("trigger")
        .last()
        .and_then(|m| m.parse::<i32>("rc"));
    let device_ok = out
        .markers_named(&cfg.driver.check_marker)
        .last()
        .and_then(|m| m.parse::<u64>(&cfg.driver.check_field))
        .map(|n| n > 0);
    let outcome = if out.panicked {
        NativeOutcome::Panic
    } else if out.oopses > 0 {
        NativeOutcome::Oops
    } else if out.timed_out || out.marker("done").is_none() {
        NativeOutcome::Hang
    } else if trigger_rc.unwrap_or(0) != 0 {
        NativeOutcome::Error
    } else {
        NativeOutcome::Silent
    };
    NativeResult {
        id: v.id,
        label: v.label.clone(),
        outcome,
        trigger_rc,
        device_ok,
        first_oops: out.oops_lines.first().cloned(),
    }
}

/// Boots once per variant (two at a time: the harness bounds parallel boots).
pub fn run_all(
    env: &Env,
    cfg: &Config,
    ko: &Path,
    variants: &[Variant],
    timeout: Duration,
) -> Result<Vec<NativeResult>, CampaignError> {
    let module_file = ko
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let files = crate::guest_files(env)?;
    let results = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let first_err = std::sync::Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(v) = variants.get(i) else { break };
                let mut spec =
                    VmSpec::new(&format!("campaign-{}-native-{}", cfg.driver.name, v.id));
                spec.modules.push(ko.to_path_buf());
                spec.qemu_args = cfg.driver.qemu.clone();
                spec.timeout = timeout;
                spec.script = script(cfg, &module_file, v);
                crate::add_guest_support(cfg, &files, &mut spec);
                match fgft_vm::run(env, &spec) {
                    Ok(out) => {
                        let c = classify(cfg, v, &out);
                        eprintln!(
                            "native {:3} {:<7} {}",
                            v.id,
                            format!("{:?}", c.outcome),
                            v.label
                        );
                        results.lock().unwrap().push(c);
                    }
                    Err(e) => {
                        first_err.lock().unwrap().get_or_insert(e);
                        break;
                    }
                }
            });
        }
    });
    if let Some(e) = first_err.into_inner().unwrap() {
        return Err(e.into());
    }
    let mut r = results.into_inner().unwrap();
    r.sort_by_key(|x| x.id);
    Ok(r)
}

//! Restart recovery, the baseline fgft is measured against: unload the
//! driver, load it again, bring the ports up and wait until a frame passes.

use crate::config::Config;
use crate::CampaignError;
use fgft_vm::{Env, VmSpec};
use std::path::Path;
use std::time::Duration;

/// Guest script: `runs` timed restarts of the module in `/lib/fgft/<file>`.
pub fn script(cfg: &Config, module_file: &str, runs: usize) -> String {
    let d = &cfg.driver;
    let mut s = format!(
        "{deps}insmod /lib/fgft/{module_file} || exit 3\nsleep 1\n{setup}\n{check}\n",
        deps = cfg.load_deps(),
        setup = d.setup,
        check = d.check
    );
    let ready = format!("{} && {}", d.setup, d.check.replace("-n 200", "-n 1"));
    for _ in 0..runs {
        s.push_str(&format!(
            "fgft-time restart sh -c 'rmmod {m} && insmod /lib/fgft/{module_file} && {ready}'\n",
            m = cfg.sysfs_module()
        ));
    }
    s
}

/// Boots once and returns the restart times in nanoseconds.
pub fn measure(env: &Env, cfg: &Config, ko: &Path, runs: usize) -> Result<Vec<u64>, CampaignError> {
    let file = ko
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut spec = VmSpec::new(&format!("campaign-{}-restart", cfg.driver.name));
    spec.modules.push(ko.to_path_buf());
    spec.qemu_args = cfg.driver.qemu.clone();
    spec.timeout = Duration::from_secs(60 + 20 * runs as u64);
    spec.script = script(cfg, &file, runs);
    crate::add_guest_support(cfg, &crate::guest_files(env)?, &mut spec);
    let out = fgft_vm::run(env, &spec)?;
    let times: Vec<u64> = out
        .markers_named("time")
        .iter()
        .filter(|m| m.get("label") == Some("restart") && m.get("rc") == Some("0"))
        .filter_map(|m| m.parse::<u64>("ns"))
        .collect();
    if times.len() != runs {
        return Err(CampaignError::Msg(format!(
            "restart measurement: {} of {runs} restarts succeeded\n{}",
            times.len(),
            out.summary()
        )));
    }
    Ok(times)
}

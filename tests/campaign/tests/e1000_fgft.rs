//! The CI campaign: one driver (upstream e1000), at least 20 injected faults
//! under fgft in as few boots as possible. Every fault that fires must be
//! recovered with the device still passing traffic; nothing may crash.
//! The same campaign run as three shards and merged gives every variant
//! the outcome the single run gave it. The same sample passes on Debian's
//! PREEMPT_RT 6.12 kernel (runtime and driver built against its headers).
//! None of the sampled entries touches a register, so no recovery restores
//! the device.

use fgft_campaign::config::Config;
use fgft_campaign::fgft::{self, FgftOutcome};
use fgft_campaign::prepare;
use fgft_campaign::report::DriverReport;
use fgft_campaign::shard::{self, Shard};
use std::path::Path;
use std::time::Duration;

/// Entry points the CI campaign faults (a subset of corpus/campaign/e1000.toml
/// whose closures split handles without extra hints).
const ENTRIES: &[&str] = &[
    "e1000_get_msglevel",
    "e1000_set_msglevel",
    "e1000_get_regs_len",
    "e1000_get_eeprom_len",
    "e1000_get_pauseparam",
    "e1000_get_ringparam",
];

/// Runs the sample on `env`'s kernel and checks its outcome: no crash, no
/// broken device, one boot, at least half the faults fired and recovered.
fn sample(
    env: &fgft_vm::Env,
) -> (
    Config,
    prepare::Prepared,
    fgft::FgftModules,
    Vec<fgft::FgftResult>,
) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut cfg = Config::load(&root.join("corpus/campaign/e1000.toml")).expect("config");
    cfg.trigger.retain(|k, _| ENTRIES.contains(&k.as_str()));
    assert_eq!(cfg.trigger.len(), ENTRIES.len(), "config lost a trigger");
    let prep = prepare::inject(env, &cfg, 7, 6, &[]).expect("inject");
    assert!(
        prep.variants.len() >= 20,
        "only {} variants",
        prep.variants.len()
    );
    let entries: Vec<String> = ENTRIES.iter().map(|s| s.to_string()).collect();
    let mods = prepare::build_fgft(env, &cfg, &prep, &entries, "fgft").expect("fgft build");
    let (res, boots) =
        fgft::run_all(env, &cfg, &mods, &prep.variants, Duration::from_secs(120)).expect("run");
    let table: String = res
        .iter()
        .map(|r| {
            format!(
                "{:3} {:?} rc={:?} rec={} restores={} {}\n",
                r.id, r.outcome, r.trigger_rc, r.recoveries, r.restores, r.label
            )
        })
        .collect();
    assert_eq!(res.len(), prep.variants.len(), "{table}");
    let crashes = res
        .iter()
        .filter(|r| r.outcome == FgftOutcome::Crash)
        .count();
    let broken = res
        .iter()
        .filter(|r| r.outcome == FgftOutcome::DeviceBroken)
        .count();
    let recovered = res
        .iter()
        .filter(|r| r.outcome == FgftOutcome::Recovered)
        .count();
    assert_eq!(crashes, 0, "crashes under fgft:\n{table}");
    assert_eq!(broken, 0, "device broken after recovery:\n{table}");
    assert_eq!(boots, 1, "a boot went down:\n{table}");
    // Most planted faults sit on paths QEMU's e1000 executes.
    assert!(recovered * 2 >= res.len(), "too few faults fired:\n{table}");
    // None of these entries reads or writes a register: each recovery
    // leaves the device as it was (no restore, no reset), and the traffic
    // check after it passed.
    let restored = res
        .iter()
        .filter(|r| r.outcome == FgftOutcome::Recovered && r.restores > 0)
        .count();
    assert_eq!(
        restored, 0,
        "device restored after an untouched call:\n{table}"
    );
    eprintln!(
        "{} ({}): {recovered} of {} faults recovered in {boots} boot(s)\n{table}",
        env.kver,
        if env.is_rt() { "PREEMPT_RT" } else { "stock" },
        res.len()
    );
    (cfg, prep, mods, res)
}

#[test]
fn e1000_faults_are_recovered_under_fgft_on_preempt_rt() {
    let env = fgft_vm::Env::load().expect("environment").rt();
    sample(&env);
}

#[test]
fn e1000_faults_are_recovered_under_fgft() {
    let env = fgft_vm::Env::load().expect("environment");
    let (cfg, prep, mods, res) = sample(&env);

    // Three shards, merged: the same outcome for every variant (timings
    // aside, which no two runs share).
    let mut parts = Vec::new();
    for i in 1..=3 {
        let s = Shard { index: i, count: 3 };
        let share = s.select(&prep.variants);
        let (r, b) =
            fgft::run_all(&env, &cfg, &mods, &share, Duration::from_secs(120)).expect("shard run");
        parts.push((
            std::path::PathBuf::from(format!("shard {i}/3")),
            DriverReport {
                driver: cfg.driver.name.clone(),
                seed: 7,
                native: Vec::new(),
                fgft: r,
                fgft_boots: b,
                restart_ns: Vec::new(),
                throughput: None,
                io_path: false,
            },
        ));
    }
    let merged = shard::merge(parts).expect("merge");
    let outcomes = |rs: &[fgft::FgftResult]| -> Vec<String> {
        rs.iter()
            .map(|r| {
                format!(
                    "{} {} {:?} rc={:?} rec={} dev={:?}",
                    r.id, r.label, r.outcome, r.trigger_rc, r.recoveries, r.device_ok
                )
            })
            .collect()
    };
    assert_eq!(outcomes(&merged.fgft), outcomes(&res));
    assert_eq!(merged.fgft_boots, 3);
}

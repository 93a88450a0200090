//! Native campaign smoke tests on drivers other than e1000, in QEMU.
//!
//! - `tulip_entry_bug_oopses`, `ens1370_entry_bug_oopses`: a BUG() planted
//!   at the entry of one entry point (so the outcome cannot be anything but
//!   an oops once the trigger reaches it) is built natively, booted,
//!   triggered and classified `Oops`; then the restart baseline (rmmod,
//!   insmod, device ready) is measured once. ens1370 also exercises the
//!   config's `deps` and the campaign guest programs (fgft-snd).
//! - `triggers_reach_entry_points` (ignored: a few minutes): for every
//!   config in `corpus/campaign/`, the driver built as the campaign builds
//!   it, with no variant armed, booted once with the function tracer on the
//!   entry points of its `[trigger]` table; each trigger runs alone and must
//!   enter every entry point mapped to it, and the device check must pass
//!   after all of them. Run it after changing a config:
//!   `cargo test -p fgft-campaign-tests --test native_smoke -- --ignored`
//!   (`FGFT_REACH_ONLY=8139too,e100` limits it to those configs).

use fgft_campaign::config::Config;
use fgft_campaign::native::NativeOutcome;
use fgft_campaign::{native, prepare, restart};
use fgft_inject::FaultKind;
use fgft_vm::{Env, VmSpec};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn env() -> Env {
    Env::load().expect("fgft environment (scripts/setup.sh)")
}

fn config_path(env: &Env, name: &str) -> PathBuf {
    env.repo_root
        .join("corpus/campaign")
        .join(format!("{name}.toml"))
}

/// Builds every guest program once per process: the tests run in parallel
/// threads, and `fgft_vm::guest_program` must not build the same program
/// from two threads at once.
fn prebuild_guest_programs(env: &Env) {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        guest_programs(env);
    });
}

/// fgft-ethtool, fgft-pkt and every campaign guest program, as (host
/// binary, guest path).
fn guest_programs(env: &Env) -> Vec<(PathBuf, String)> {
    let mut files: Vec<(PathBuf, String)> = ["fgft-ethtool", "fgft-pkt"]
        .iter()
        .map(|t| (fgft_vm::guest_tool(env, t).unwrap(), format!("/bin/{t}")))
        .collect();
    let mut progs: Vec<PathBuf> = std::fs::read_dir(env.repo_root.join("tools/campaign/guest"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    progs.sort();
    for p in progs {
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        files.push((
            fgft_vm::guest_program(env, &p).unwrap(),
            format!("/bin/{stem}"),
        ));
    }
    files
}

/// Entry BUG variants of `entries` in driver `name`: each must oops the
/// native kernel, and one timed restart must succeed.
fn entry_bug_campaign(name: &str, entries: &[&str]) {
    let env = env();
    prebuild_guest_programs(&env);
    let cfg = Config::load(&config_path(&env, name)).unwrap();
    let mut prep = prepare::inject(&env, &cfg, 1, 1, &[FaultKind::Bug]).unwrap();
    prep.variants
        .retain(|v| entries.contains(&v.entry.as_str()));
    assert_eq!(
        prep.variants.len(),
        entries.len(),
        "{name}: one entry BUG variant per entry point expected"
    );
    let ko = prepare::build_native(&env, &cfg, &prep).unwrap();
    let results =
        native::run_all(&env, &cfg, &ko, &prep.variants, Duration::from_secs(40)).unwrap();
    assert_eq!(results.len(), entries.len());
    for (r, v) in results.iter().zip(&prep.variants) {
        assert_eq!(r.id, v.id);
        assert_eq!(
            r.outcome,
            NativeOutcome::Oops,
            "{name}: {} should oops natively: {r:?}",
            v.label
        );
        let oops = r.first_oops.as_deref().unwrap_or_default();
        assert!(
            oops.contains("kernel BUG at") || oops.contains("invalid opcode"),
            "{name}: {}: not a BUG(): {oops}",
            v.label
        );
        // The trigger was killed by the oops, so it never returned 0.
        assert_ne!(r.trigger_rc, Some(0), "{name}: {}", v.label);
    }
    let times = restart::measure(&env, &cfg, &ko, 1).unwrap();
    assert_eq!(times.len(), 1);
    // rmmod + insmod + ready takes at least a millisecond and, on TCG, far
    // less than the boot's time limit.
    assert!(
        (1_000_000..60_000_000_000).contains(&times[0]),
        "{name}: restart took {} ns",
        times[0]
    );
    eprintln!(
        "{name}: {} variant(s) oops natively; restart {:.1} ms",
        results.len(),
        times[0] as f64 / 1e6
    );
}

#[test]
fn tulip_entry_bug_oopses() {
    entry_bug_campaign("tulip", &["tulip_get_drvinfo"]);
}

#[test]
fn ens1370_entry_bug_oopses() {
    // A /proc read: the oops leaves no lock the device check needs.
    entry_bug_campaign("ens1370", &["snd_ak4531_proc_read"]);
}

/// Stock modules a config loads first (`[driver] deps`), read from the
/// TOML itself.
fn deps_of(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let v: toml::Value =
        toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    v["driver"]
        .get("deps")
        .and_then(|x| x.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Guest command -> the entry points it must reach, in config order.
fn trigger_groups(cfg: &Config) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for entry in cfg.trigger.keys() {
        let cmd = cfg.trigger_cmd(entry).unwrap();
        match groups.iter_mut().find(|(c, _)| *c == cmd) {
            Some((_, es)) => es.push(entry.clone()),
            None => groups.push((cmd, vec![entry.clone()])),
        }
    }
    groups
}

/// The guest script: load, set up, trace the entry points, run each
/// trigger alone and report which entry points it entered, then check.
fn reach_script(cfg: &Config, deps: &[String], module_file: &str) -> String {
    let d = &cfg.driver;
    let module = d.module.replace('-', "_");
    let mut s = String::new();
    for dep in deps {
        let _ = writeln!(s, "modprobe {dep} || exit 3");
    }
    let _ = writeln!(
        s,
        "insmod /lib/fgft/{module_file} || exit 3\nsleep 1\n{}\nsleep 1",
        d.setup
    );
    s.push_str(
        "T=/sys/kernel/tracing\n\
         [ -e $T/trace ] || mount -t tracefs nodev $T || exit 4\n",
    );
    // `:mod:` keeps same-named functions of other code out; 6.12 refuses it
    // for a module named 8139too, which then falls back to the bare name.
    for e in cfg.trigger.keys() {
        let _ = writeln!(
            s,
            "echo '{e}:mod:{module}' >> $T/set_ftrace_filter 2>/dev/null || \
             echo '{e}' >> $T/set_ftrace_filter || echo FGFT-MARK notrace fn={e}"
        );
    }
    s.push_str("echo function > $T/current_tracer || exit 4\n");
    for (i, (cmd, entries)) in trigger_groups(cfg).iter().enumerate() {
        let _ = writeln!(
            s,
            "echo > $T/trace\n{cmd}\necho FGFT-MARK reach-trigger i={i} rc=$?"
        );
        for e in entries {
            let _ = writeln!(
                s,
                "if grep -q ' {e} <-' $T/trace; then h=1; else h=0; fi; \
                 echo FGFT-MARK reach fn={e} trigger={i} hit=$h"
            );
        }
    }
    let _ = writeln!(s, "echo nop > $T/current_tracer\n{}", d.check);
    s
}

#[test]
#[ignore = "one build and one boot per campaign config (a few minutes); run after changing a config"]
fn triggers_reach_entry_points() {
    let env = env();
    let dir = env.repo_root.join("corpus/campaign");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    // FGFT_REACH_ONLY=8139too,e100 checks only those configs.
    if let Ok(only) = std::env::var("FGFT_REACH_ONLY") {
        let only: Vec<&str> = only.split(',').map(str::trim).collect();
        paths.retain(|p| {
            p.file_stem()
                .is_some_and(|s| only.contains(&s.to_string_lossy().as_ref()))
        });
        assert!(!paths.is_empty(), "FGFT_REACH_ONLY matches no config");
    }
    let tools = guest_programs(&env);
    let results: Vec<(PathBuf, Result<String, String>)> = std::thread::scope(|sc| {
        let handles: Vec<_> = paths
            .iter()
            .map(|p| {
                let (env, tools) = (&env, &tools);
                sc.spawn(move || (p.clone(), reach_one(env, p, tools)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut failed = String::new();
    for (path, res) in &results {
        let name = path.file_stem().unwrap().to_string_lossy();
        match res {
            Ok(table) => eprintln!("{name}: every entry point reached\n{table}"),
            Err(e) => {
                eprintln!("{name}: FAILED\n{e}");
                let _ = writeln!(failed, "{name}: {}", e.lines().next().unwrap_or(""));
            }
        }
    }
    assert!(failed.is_empty(), "{failed}");
}

/// Builds the driver as the campaign does (every entry point carries an
/// entry BUG variant, none armed: the driver behaves as upstream's) and
/// boots once; Ok(per-entry table) or Err(what went wrong).
fn reach_one(env: &Env, path: &Path, tools: &[(PathBuf, String)]) -> Result<String, String> {
    let cfg = Config::load(path).map_err(|e| e.to_string())?;
    let deps = deps_of(path);
    let prep = prepare::inject(env, &cfg, 1, 1, &[FaultKind::Bug]).map_err(|e| e.to_string())?;
    let armed: Vec<&str> = prep.variants.iter().map(|v| v.entry.as_str()).collect();
    let ko = prepare::build_native(env, &cfg, &prep).map_err(|e| e.to_string())?;
    let module_file = ko.file_name().unwrap().to_string_lossy().into_owned();
    let groups = trigger_groups(&cfg);
    let mut spec = VmSpec::new(&format!("campaign-reach-{}", cfg.driver.name));
    spec.qemu_args = cfg.driver.qemu.clone();
    spec.stock_modules = deps.clone();
    spec.modules.push(ko);
    spec.files = tools.to_vec();
    spec.timeout = Duration::from_secs(90 + 10 * groups.len() as u64);
    spec.script = reach_script(&cfg, &deps, &module_file);
    let out = fgft_vm::run(env, &spec).map_err(|e| e.to_string())?;
    let mut problems = String::new();
    let mut table = String::new();
    if out.oopses > 0 || out.panicked || out.timed_out || out.exit_status.is_none() {
        let _ = writeln!(
            problems,
            "the clean run did not stay clean: {}",
            out.summary()
        );
    }
    for m in out.markers_named("notrace") {
        let _ = writeln!(problems, "{} cannot be traced", m.get("fn").unwrap_or("?"));
    }
    let rcs: BTreeMap<usize, String> = out
        .markers_named("reach-trigger")
        .iter()
        .filter_map(|m| Some((m.parse::<usize>("i")?, m.get("rc")?.to_string())))
        .collect();
    for (i, (cmd, entries)) in groups.iter().enumerate() {
        for e in entries {
            let hit = out
                .markers_named("reach")
                .iter()
                .find(|m| m.get("fn") == Some(e.as_str()))
                .and_then(|m| m.get("hit"))
                .map(str::to_string);
            let rc = rcs.get(&i).map_or("-", String::as_str);
            let sites = if armed.contains(&e.as_str()) {
                ""
            } else {
                " (no BUG site)"
            };
            let _ = writeln!(
                table,
                "  {e:<32} rc={rc:<3} hit={} via `{cmd}`{sites}",
                hit.as_deref().unwrap_or("-")
            );
            if hit.as_deref() != Some("1") {
                let _ = writeln!(problems, "`{cmd}` (rc {rc}) does not enter {e}");
            }
        }
    }
    let d = &cfg.driver;
    let ok = out
        .markers_named(&d.check_marker)
        .last()
        .and_then(|m| m.parse::<u64>(&d.check_field))
        .is_some_and(|n| n > 0);
    if !ok {
        let _ = writeln!(
            problems,
            "device check `{}` failed after the triggers",
            d.check
        );
    }
    if problems.is_empty() {
        Ok(table)
    } else {
        Err(format!("{problems}{table}{out}"))
    }
}

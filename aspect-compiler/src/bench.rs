//! The user-space hook-cost benchmark (reported, not asserted).
//!
//! `aspect-compiler/bench/module` is the benchmark's driver-like code: one
//! member write per call in `fgft_bench_access()`.  It is woven with
//! `aspect-compiler/bench/bench.xml`, and the woven `bench_target.c` plus the
//! generated `fgft_aspect_bench.c` are compiled in user space against the
//! static-key shim of `aspect-compiler/bench/user/shim` (real 5-byte NOP /
//! jmp patching, like the kernel's jump labels), next to the original
//! `bench_target.c`.  The same woven files build into the kernel module that
//! `tools/vm/examples/bench_aspect.rs` times in the VM.

use crate::scan::Driver;
use crate::{weave, Aspect, Options, Woven};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The benchmark's directory in the repository.
pub fn bench_dir(repo: &Path) -> PathBuf {
    repo.join("aspect-compiler/bench")
}

/// Weaves the benchmark module into `out`.
pub fn weave_module(repo: &Path, out: &Path, kdir: Option<&Path>) -> Result<Woven, String> {
    let dir = bench_dir(repo);
    let aspect = Aspect::load(&dir.join("bench.xml")).map_err(|e| format!("{e:?}"))?;
    let driver = Driver::load(&[dir.join("module")]).map_err(|e| e.to_string())?;
    let opts = Options {
        kdir: kdir.map(Path::to_path_buf),
        tables: Vec::new(),
        check: kdir.is_some(),
    };
    let woven = weave(&aspect, &driver, &opts).map_err(|e| format!("{e:?}"))?;
    if !woven.warnings.is_empty() {
        return Err(format!("weaving the benchmark warns: {:?}", woven.warnings));
    }
    let _ = std::fs::remove_dir_all(out);
    woven.write(out).map_err(|e| e.to_string())?;
    Ok(woven)
}

/// One measured variant.
#[derive(Debug, Clone)]
pub struct Sample {
    pub variant: String,
    pub ns_per_call: f64,
}

/// What one run of the user-space harness printed.
#[derive(Debug, Clone, Default)]
pub struct UserRun {
    pub samples: Vec<Sample>,
    /// Hits of the counting advice over 4 calls, 2 of them switched on.
    pub switch_hits: Option<u64>,
    pub output: String,
}

impl UserRun {
    pub fn get(&self, variant: &str) -> Option<f64> {
        self.samples
            .iter()
            .find(|s| s.variant == variant)
            .map(|s| s.ns_per_call)
    }
}

fn gcc(args: &[&str], cwd: &Path) -> Result<(), String> {
    let out = Command::new("gcc")
        .args(args)
        .current_dir(cwd)
        .output()
        .map_err(|e| format!("cannot run gcc: {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    if !out.status.success() || err.contains("warning:") {
        return Err(format!("gcc {}:\n{err}", args.join(" ")));
    }
    Ok(())
}

/// Builds the user-space harness in `work` (woven sources there too) and
/// returns the binary.
pub fn build_user(repo: &Path, work: &Path) -> Result<PathBuf, String> {
    let woven_dir = work.join("woven");
    weave_module(repo, &woven_dir, None)?;
    let dir = bench_dir(repo);
    let shim = dir.join("user/shim");
    let inc = format!("-I{}", shim.display());
    let common = [
        "-O2",
        "-fno-pie",
        "-no-pie",
        "-Wall",
        "-Wextra",
        "-Wno-unused-parameter",
        inc.as_str(),
        "-I.",
        "-DKBUILD_MODNAME=\"fgft_bench\"",
    ];
    let plain_src = dir.join("module/bench_target.c");
    let plain_obj = work.join("plain.o");
    let mut a: Vec<&str> = common.to_vec();
    let ps = plain_src.to_string_lossy().to_string();
    let po = plain_obj.to_string_lossy().to_string();
    a.extend([
        "-Dfgft_bench_access=plain_fgft_bench_access",
        "-Dfgft_bench_count=plain_fgft_bench_count",
        "-Dfgft_bench_advice_hits=plain_fgft_bench_advice_hits",
        "-c",
        ps.as_str(),
        "-o",
        po.as_str(),
    ]);
    gcc(&a, &woven_dir)?;
    let bin = work.join("bench-user");
    let shim_c = dir.join("user/shim.c").to_string_lossy().to_string();
    let main_c = dir.join("user/main.c").to_string_lossy().to_string();
    let b = bin.to_string_lossy().to_string();
    let mut a: Vec<&str> = common.to_vec();
    a.extend([
        "bench_target.c",
        "fgft_aspect_bench.c",
        shim_c.as_str(),
        main_c.as_str(),
        po.as_str(),
        "-o",
        b.as_str(),
    ]);
    gcc(&a, &woven_dir)?;
    Ok(bin)
}

/// Parses `FGFT-MARK bench ...` lines (user space or kernel console).
pub fn parse(output: &str) -> UserRun {
    let mut run = UserRun {
        output: output.to_string(),
        ..Default::default()
    };
    for line in output.lines() {
        let Some(k) = line.find("FGFT-MARK ") else {
            continue;
        };
        let f: Vec<&str> = line[k + 10..].split_whitespace().collect();
        let field = |name: &str| {
            f.iter()
                .find_map(|x| x.strip_prefix(&format!("{name}=")))
                .map(str::to_string)
        };
        match f.first() {
            Some(&"bench") => {
                if let (Some(v), Some(ns)) = (field("variant"), field("ns_per_call")) {
                    if let Ok(ns) = ns.parse() {
                        run.samples.push(Sample {
                            variant: v,
                            ns_per_call: ns,
                        });
                    }
                }
            }
            Some(&"bench-switch") => {
                run.switch_hits = field("advice_hits").and_then(|h| h.parse().ok())
            }
            _ => {}
        }
    }
    run
}

/// Runs the harness binary once.
pub fn run_user(bin: &Path, calls_per_batch: u64) -> Result<UserRun, String> {
    let out = Command::new(bin)
        .arg(calls_per_batch.to_string())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed", bin.display()));
    }
    Ok(parse(&String::from_utf8_lossy(&out.stdout)))
}

/// Median of `runs` runs per variant.
pub fn median(runs: &[UserRun], variant: &str) -> Option<f64> {
    let mut v: Vec<f64> = runs.iter().filter_map(|r| r.get(variant)).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Some(v[v.len() / 2])
}

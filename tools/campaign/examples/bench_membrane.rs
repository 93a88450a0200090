//! Benchmark of restartable file systems (issue 17), not a test: the fault
//! campaign on the split minix, the same faults in the native module, and
//! the workload's overhead against Debian's own module. See
//! `fgft_campaign::membrane` for the method.
//!
//! `cargo run --release -p fgft-campaign --example bench_membrane -- [--out results/membrane.md]`
//! (`scripts/bench-membrane.sh` runs it as the README's benchmark command).
//! `FGFT_FS_FAULTS_PER_ENTRY` (default 6) variants per function,
//! `FGFT_FS_NATIVE` (default: all that fired) variants run natively,
//! `FGFT_FS_ROUNDS` (5) rounds and `FGFT_FS_OPS` (2000) operations a round
//! of the overhead benchmark change the run.

use fgft_campaign::membrane::{self, Native, Results};
use fgft_campaign::CampaignError;
use fgft_vm::Env;
use std::path::PathBuf;
use std::process::ExitCode;

fn var(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn bench(out: &PathBuf) -> Result<(), CampaignError> {
    let env = Env::load()?;
    let per_entry = var("FGFT_FS_FAULTS_PER_ENTRY", 6);
    let targets = membrane::fs_targets(&env, &membrane::MINIX)?.len();
    eprintln!("bench_membrane: campaign, {per_entry} per function over {targets} functions");
    let c = membrane::fs_campaign(&env, &membrane::MINIX, "bench-minix-camp", per_entry, 10)?;
    if c.out.panicked || c.out.timed_out {
        return Err(CampaignError::Msg(format!(
            "the campaign's boot went down: {}\n{}",
            c.out.summary(),
            c.out.tail(40)
        )));
    }
    let fsck = membrane::fsck("fsck.minix", &["-f"], &c.img)?;
    let fired: Vec<u32> = c
        .fired()
        .iter()
        .filter_map(|f| f.parse::<u32>("id"))
        .collect();
    let n_native = var("FGFT_FS_NATIVE", fired.len()).min(fired.len());
    let native_dir = membrane::native_fs(&env, &membrane::MINIX, &c.tree, "bench-minix")?;
    let mut native: Vec<(u32, Native)> = Vec::new();
    for (i, id) in fired.iter().take(n_native).enumerate() {
        let o = membrane::native_outcome(
            &env,
            &membrane::MINIX,
            &native_dir,
            *id,
            "bench-minix-native",
        )?;
        eprintln!(
            "bench_membrane: native {}/{n_native}: variant {id}: {}",
            i + 1,
            o.name()
        );
        native.push((*id, o));
    }
    let (rounds, ops) = (var("FGFT_FS_ROUNDS", 5), var("FGFT_FS_OPS", 2000));
    let (rt, built) = membrane::split_fs(
        &env,
        &membrane::MINIX,
        &env.src612,
        Vec::new(),
        "bench-minix-clean",
    )?;
    eprintln!("bench_membrane: overhead, {rounds} rounds of {ops} operations");
    let rounds = membrane::overhead(&env, &membrane::MINIX, (&rt, &built), rounds, ops)?;
    let sidecar_path = env.repo_root.join("corpus/upstream/minix.toml");
    let sidecar = std::fs::read_to_string(&sidecar_path).map_err(|source| CampaignError::Io {
        path: sidecar_path,
        source,
    })?;
    let text = membrane::report(&Results {
        campaign: &c,
        per_entry,
        targets,
        native,
        rounds,
        ops,
        sidecar,
        fsck,
        command: format!("FGFT_FS_FAULTS_PER_ENTRY={per_entry} scripts/bench-membrane.sh"),
    });
    std::fs::write(out, text).map_err(|source| CampaignError::Io {
        path: out.clone(),
        source,
    })?;
    eprintln!("bench_membrane: wrote {}", out.display());
    Ok(())
}

fn main() -> ExitCode {
    let mut out = PathBuf::from("results/membrane.md");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--out", Some(p)) => out = PathBuf::from(p),
            _ => {
                eprintln!("usage: bench_membrane [--out FILE]");
                return ExitCode::from(2);
            }
        }
    }
    match bench(&out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_membrane: {e}");
            ExitCode::from(1)
        }
    }
}

//! Variant preparation: inject into a scratch copy of the driver and build
//! the native module.

use crate::config::{Config, Tree};
use crate::{io, CampaignError};
use fgft_inject::{FaultKind, Options, Source, Variant};
use fgft_vm::Env;
use std::path::{Path, PathBuf};

/// An injected driver, ready to build or split.
pub struct Prepared {
    /// The injected copy of the driver directory (all its files).
    pub dir: PathBuf,
    pub variants: Vec<Variant>,
}

/// The driver's directory in its tree.
pub fn driver_dir(env: &Env, cfg: &Config) -> PathBuf {
    match cfg.driver.tree {
        Tree::Linux => env.src612.join(&cfg.driver.dir),
        Tree::Repo => env.repo_root.join(&cfg.driver.dir),
    }
}

/// The name a source is built under: a module made of several objects
/// cannot have an object named like itself (Kbuild: circular dependency),
/// so `8139too.c` in module `8139too` becomes `8139too-fgft.c`.
fn build_name(cfg: &Config, source: &str) -> String {
    let stem = source.trim_end_matches(".c");
    if stem.replace('-', "_") == cfg.driver.module.replace('-', "_") {
        format!("{stem}-fgft.c")
    } else {
        source.to_string()
    }
}

/// Copies the regular files of `src` into a fresh `dst` (removed first when
/// it exists), naming each copy `rename(file name)`; `None` skips the file.
fn copy_dir_files(
    src: &Path,
    dst: &Path,
    rename: &dyn Fn(&str) -> Option<String>,
) -> Result<(), CampaignError> {
    if dst.exists() {
        std::fs::remove_dir_all(dst).map_err(io(dst))?;
    }
    std::fs::create_dir_all(dst).map_err(io(dst))?;
    let mut entries = Vec::new();
    for e in std::fs::read_dir(src).map_err(io(src))? {
        entries.push(e.map_err(io(src))?.path());
    }
    entries.sort();
    for p in entries {
        if !p.is_file() {
            continue;
        }
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        if let Some(to) = rename(&name) {
            let dest = dst.join(to);
            std::fs::copy(&p, &dest).map_err(io(&dest))?;
        }
    }
    Ok(())
}

/// Applies the config's compatibility edits to the copy in `work`.
fn apply_compat(cfg: &Config, work: &Path) -> Result<(), CampaignError> {
    for c in &cfg.driver.compat {
        let bad = |msg: String| CampaignError::Config {
            path: cfg.path.clone(),
            msg: format!("compat edit of {}: {msg}", c.file),
        };
        if c.find.is_empty() || c.find.contains('\n') || c.replace.contains('\n') {
            return Err(bad(
                "`find` must be non-empty and neither may hold a line break".into(),
            ));
        }
        let p = work.join(&c.file);
        let text = std::fs::read_to_string(&p).map_err(io(&p))?;
        let n = text.matches(&c.find).count();
        if n != 1 {
            return Err(bad(format!("`{}` occurs {n} times, not once", c.find)));
        }
        std::fs::write(&p, text.replacen(&c.find, &c.replace, 1)).map_err(io(&p))?;
    }
    Ok(())
}

/// Copies the driver directory from the 6.12 tree and plants the variants.
pub fn inject(
    env: &Env,
    cfg: &Config,
    seed: u64,
    per_entry: usize,
    kinds: &[FaultKind],
) -> Result<Prepared, CampaignError> {
    let src = driver_dir(env, cfg);
    let work = env
        .target_dir
        .join("campaign")
        .join(&cfg.driver.name)
        .join("inj");
    copy_dir_files(&src, &work, &|n| Some(n.to_string()))?;
    apply_compat(cfg, &work)?;
    let mut sources = Vec::new();
    for f in &cfg.driver.sources {
        let p = work.join(f);
        let text = std::fs::read_to_string(&p).map_err(io(&p))?;
        sources.push(Source {
            rel: PathBuf::from(f),
            file: fgft_parse::parse_text(&src.join(f), text)?,
        });
    }
    let entries: Vec<&String> = cfg.trigger.keys().collect();
    let sites = fgft_inject::find_sites(&sources, &|n| entries.iter().any(|e| *e == n));
    let variants = fgft_inject::select(
        &sources,
        &sites,
        &Options {
            seed,
            per_entry,
            kinds: kinds.to_vec(),
        },
    );
    if variants.is_empty() {
        return Err(CampaignError::Msg(format!(
            "{}: no injection site in the triggered entry points",
            cfg.path.display()
        )));
    }
    let texts = fgft_inject::apply(&sources, &variants)?;
    for (s, t) in sources.iter().zip(texts) {
        let dest = work.join(&s.rel);
        std::fs::write(&dest, t).map_err(io(&dest))?;
    }
    Ok(Prepared {
        dir: work,
        variants,
    })
}

/// Builds the injected driver natively (plus the inject switch) and returns
/// the module file.
pub fn build_native(env: &Env, cfg: &Config, prep: &Prepared) -> Result<PathBuf, CampaignError> {
    let dir = prep
        .dir
        .parent()
        .unwrap_or(Path::new("."))
        .join("native-src");
    copy_dir_files(&prep.dir, &dir, &|n| {
        (!matches!(n, "Makefile" | "Kconfig" | "Kbuild")).then(|| build_name(cfg, n))
    })?;
    let support = dir.join("fgft_inject.c");
    std::fs::write(&support, fgft_inject::native_support_c()).map_err(io(&support))?;
    let objs: Vec<String> = cfg
        .driver
        .sources
        .iter()
        .map(|s| build_name(cfg, s).trim_end_matches(".c").to_string() + ".o")
        .chain(std::iter::once("fgft_inject.o".to_string()))
        .collect();
    // The module keeps its upstream name, so module parameters and the
    // guest's view are those of the stock driver.
    // The driver's own directory on the include path, as upstream Makefiles
    // give it to units that name headers through it (tracepoints).
    let mut kbuild = format!(
        "obj-m += {m}.o\n{m}-y := {}\nccflags-y += -I$(src)\n",
        objs.join(" "),
        m = cfg.driver.module
    );
    let include = env.repo_root.join("annotations/include");
    let mut extra: Vec<&Path> = Vec::new();
    if cfg.driver.tree == Tree::Repo {
        kbuild.push_str("ccflags-y += -I$(src)/include\n");
        extra.push(&include);
    }
    let kb = dir.join("Kbuild");
    std::fs::write(&kb, kbuild).map_err(io(&kb))?;
    // The plain copy (no variants) builds apart from the injected one.
    let flavor = if prep.variants.is_empty() {
        "stock"
    } else {
        "native"
    };
    let name = format!("campaign-{}-{flavor}", cfg.driver.name);
    let built = fgft_vm::kbuild(env, &name, &dir, &env.kdir, &extra)?;
    Ok(built.join(format!("{}.ko", cfg.driver.module)))
}

/// The fault-injection switch as the compensation table sees it: a pure
/// runtime call (fgft_rt.ko exports it), so split wraps it like any other.
const INJECT_TABLE: &str = r#"# Added by fgft-campaign: the fault-injection switch of fgft_rt.ko.
[api.fgft_inject_hit]
effect = "pure"
proto = "bool fgft_inject_hit(int id)"
header = "fgft/runtime.h"
args.id = "val"
"#;

/// Splits the injected driver (fgft-split, isolating `entries`), builds the
/// runtime and both modules, and returns them in load order.
pub fn build_fgft(
    env: &Env,
    cfg: &Config,
    prep: &Prepared,
    entries: &[String],
    flavor: &str,
) -> Result<crate::fgft::FgftModules, CampaignError> {
    build_fgft_with(env, cfg, prep, entries, flavor, |_| {})
}

/// [`build_fgft`] with split options of the caller's (`stage_times`,
/// `no_read_checks`): `tweak` sees the options before the split.
pub fn build_fgft_with(
    env: &Env,
    cfg: &Config,
    prep: &Prepared,
    entries: &[String],
    flavor: &str,
    tweak: impl FnOnce(&mut fgft_split::Options),
) -> Result<crate::fgft::FgftModules, CampaignError> {
    let work = prep.dir.parent().unwrap_or(Path::new(".")).to_path_buf();
    let tables = work.join("tables");
    std::fs::create_dir_all(&tables).map_err(io(&tables))?;
    let t = tables.join("compensations.toml");
    std::fs::write(&t, INJECT_TABLE).map_err(io(&t))?;
    let out = work.join(format!("split-{flavor}"));
    // The module's own sources (split follows their local includes), not
    // every file of a shared directory such as drivers/net/ethernet/realtek.
    let mut opts = fgft_split::Options {
        sources: cfg
            .driver
            .sources
            .iter()
            .map(|f| prep.dir.join(f))
            .collect(),
        annotations: cfg
            .driver
            .annotations
            .iter()
            .map(|a| env.repo_root.join(a))
            .collect(),
        isolate: entries.to_vec(),
        kdir: Some(env.kdir.clone()),
        tables: vec![tables],
        module: Some(cfg.driver.module.clone()),
        no_hints: cfg.driver.no_hints,
        ..Default::default()
    };
    tweak(&mut opts);
    crate::split::split(&opts, &out, &cfg.driver.name)?;
    // One make builds the runtime (OUT/runtime/) and both modules.
    let name = format!("campaign-{}-{flavor}", cfg.driver.name);
    let built = fgft_vm::kbuild(env, &name, &out, &env.kdir, &[])?;
    let m = &cfg.driver.module;
    Ok(crate::fgft::FgftModules {
        modules: vec![
            built.join("runtime/fgft_rt.ko"),
            built.join(format!("{m}_sfi.ko")),
            built.join(format!("{m}_fgft.ko")),
        ],
    })
}

/// The driver directory copied as is (no variants): the fgft build that
/// throughput is measured on.
pub fn plain(env: &Env, cfg: &Config) -> Result<Prepared, CampaignError> {
    let src = driver_dir(env, cfg);
    let work = env
        .target_dir
        .join("campaign")
        .join(format!("{}-plain", cfg.driver.name))
        .join("src");
    copy_dir_files(&src, &work, &|n| Some(n.to_string()))?;
    apply_compat(cfg, &work)?;
    Ok(Prepared {
        dir: work,
        variants: Vec::new(),
    })
}

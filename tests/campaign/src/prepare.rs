//! Variant preparation: inject into a scratch copy of the driver and build
//! the native module.

use crate::config::Config;
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

/// Copies the driver directory from the 6.12 tree and plants the variants.
pub fn inject(
    env: &Env,
    cfg: &Config,
    seed: u64,
    per_entry: usize,
    kinds: &[FaultKind],
) -> Result<Prepared, CampaignError> {
    let src = env.src612.join(&cfg.driver.dir);
    let work = env
        .target_dir
        .join("campaign")
        .join(&cfg.driver.name)
        .join("inj");
    if work.exists() {
        std::fs::remove_dir_all(&work).map_err(io(&work))?;
    }
    std::fs::create_dir_all(&work).map_err(io(&work))?;
    for e in std::fs::read_dir(&src).map_err(io(&src))? {
        let p = e.map_err(io(&src))?.path();
        if p.is_file() {
            let dest = work.join(p.file_name().unwrap_or_default());
            std::fs::copy(&p, &dest).map_err(io(&dest))?;
        }
    }
    let mut sources = Vec::new();
    for f in &cfg.driver.sources {
        let p = src.join(f);
        sources.push(Source {
            rel: PathBuf::from(f),
            file: fgft_parse::parse_file(&p)?,
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
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
    }
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    for e in std::fs::read_dir(&prep.dir).map_err(io(&prep.dir))? {
        let p = e.map_err(io(&prep.dir))?.path();
        let name = p.file_name().unwrap_or_default();
        if p.is_file() && name != "Makefile" && name != "Kconfig" {
            let dest = dir.join(name);
            std::fs::copy(&p, &dest).map_err(io(&dest))?;
        }
    }
    let support = dir.join("fgft_inject.c");
    std::fs::write(&support, fgft_inject::native_support_c()).map_err(io(&support))?;
    let objs: Vec<String> = cfg
        .driver
        .sources
        .iter()
        .map(|s| s.trim_end_matches(".c").to_string() + ".o")
        .chain(std::iter::once("fgft_inject.o".to_string()))
        .collect();
    // The module keeps its upstream name, so module parameters and the
    // guest's view are those of the stock driver.
    let kbuild = format!(
        "obj-m += {m}.o\n{m}-y := {}\n",
        objs.join(" "),
        m = cfg.driver.module
    );
    let kb = dir.join("Kbuild");
    std::fs::write(&kb, kbuild).map_err(io(&kb))?;
    let name = format!("campaign-{}-native", cfg.driver.name);
    let built = fgft_vm::kbuild(env, &name, &dir, &env.kdir, &[])?;
    Ok(built.join(format!("{}.ko", cfg.driver.module)))
}

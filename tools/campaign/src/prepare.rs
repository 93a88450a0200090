//! Variant preparation: inject into a scratch copy of the driver and build
//! the native module.

use crate::config::{Config, Tree};
use crate::{io, CampaignError};
use fgft_inject::{FaultKind, Options, Source, Variant};
use fgft_vm::Env;
use std::fmt::Write as _;
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
    let mut kbuild = format!(
        "obj-m += {m}.o\n{m}-y := {}\n",
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

/// Renders a split error for the campaign's error message: every located
/// diagnostic (the errors and the warnings that came with them) as
/// `path:line:col: error: message`, then its source line marked with its
/// label, then its notes; other errors as they display.
pub fn split_error(e: &fgft_split::Error) -> String {
    let fgft_split::Error::Located(diags) = e else {
        return e.to_string();
    };
    let mut s = String::new();
    for d in diags {
        let level = if d.warning { "warning" } else { "error" };
        let mut at = d.range.start.min(d.text.len());
        while !d.text.is_char_boundary(at) {
            at -= 1;
        }
        let line_start = d.text[..at].rfind('\n').map_or(0, |i| i + 1);
        let line_no = d.text[..at].matches('\n').count() + 1;
        let line_end = d.text[at..].find('\n').map_or(d.text.len(), |i| at + i);
        let prefix = &d.text[line_start..at];
        let loc = format!(
            "{}:{line_no}:{}",
            d.path.display(),
            prefix.chars().count() + 1
        );
        // Some messages carry the location already (the annotation parser's).
        let message = d
            .message
            .strip_prefix(&loc)
            .and_then(|m| m.strip_prefix(": "))
            .unwrap_or(&d.message);
        let _ = writeln!(s, "{loc}: {level}: {message}");
        let line = d.text[line_start..line_end].trim_end();
        if !line.is_empty() {
            let pad: String = prefix
                .chars()
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            let end = d.range.end.clamp(at, line_end);
            let width = d.text.get(at..end).map_or(1, |t| t.chars().count().max(1));
            let gutter = " ".repeat(line_no.to_string().len());
            let _ = writeln!(s, " {line_no} | {line}");
            let _ = writeln!(s, " {gutter} | {pad}{} {}", "^".repeat(width), d.label);
        }
        for n in &d.notes {
            let _ = writeln!(s, "    = note: {n}");
        }
    }
    s.push_str(&e.to_string());
    s
}

/// Makes `out` an empty directory for a split's output, as `fgft-cc split
/// --force` does: never one that contains or lies in an input.
fn fresh_out(out: &Path, inputs: &[&Path]) -> Result<(), CampaignError> {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let o = match (out.parent(), out.file_name()) {
        (Some(parent), Some(name)) if !out.exists() => canon(parent).join(name),
        _ => canon(out),
    };
    for i in inputs {
        let i = canon(i);
        if i.starts_with(&o) || o.starts_with(&i) && i.is_dir() {
            return Err(CampaignError::Msg(format!(
                "split output {} overlaps input {}: refusing to write there",
                out.display(),
                i.display()
            )));
        }
    }
    if out.exists() {
        std::fs::remove_dir_all(out).map_err(io(out))?;
    }
    std::fs::create_dir_all(out).map_err(io(out))
}

/// Stack of the thread a split runs on: that of a process's main thread.
const SPLIT_STACK: usize = 8 << 20;

/// Splits with the fgft-split library and writes the result to `out`
/// (replaced). Nothing is written when the split fails; the error names
/// `what` and carries every diagnostic with its file and line. Returns the
/// split's summary line.
pub fn split(opts: &fgft_split::Options, out: &Path, what: &str) -> Result<String, CampaignError> {
    let failed = |e: fgft_split::Error| {
        CampaignError::Msg(format!("split failed for {what}:\n{}", split_error(&e)))
    };
    // On a thread of its own with the stack `fgft-cc`'s main thread has (a
    // test thread's default is smaller), and a panic stays this driver's
    // error, as a crashed `fgft-cc` process was.
    let computed = std::thread::scope(|sc| {
        std::thread::Builder::new()
            .name("fgft-split".into())
            .stack_size(SPLIT_STACK)
            .spawn_scoped(sc, || fgft_split::compute(opts))
            .map_err(|e| CampaignError::Msg(format!("split of {what}: thread: {e}")))?
            .join()
            .map_err(|p| {
                let why = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                CampaignError::Msg(format!("split failed for {what}: panicked: {why}"))
            })
    })?;
    let split = computed.map_err(failed)?;
    let inputs: Vec<&Path> = opts
        .sources
        .iter()
        .chain(&opts.tree)
        .chain(&opts.annotations)
        .map(PathBuf::as_path)
        .collect();
    fresh_out(out, &inputs)?;
    fgft_split::write(out, &split.out).map_err(failed)?;
    Ok(split.summary)
}

/// Splits the injected driver (fgft-split, isolating `entries`), builds the
/// runtime and both modules, and returns them in load order.
pub fn build_fgft(
    env: &Env,
    cfg: &Config,
    prep: &Prepared,
    entries: &[String],
    flavor: &str,
) -> Result<crate::fgft::FgftModules, CampaignError> {
    let rt = fgft_vm::kbuild(
        env,
        "campaign-fgft_rt",
        &env.repo_root.join("runtime-kmod"),
        &env.kdir,
        &[],
    )?;
    let work = prep.dir.parent().unwrap_or(Path::new(".")).to_path_buf();
    let tables = work.join("tables");
    std::fs::create_dir_all(&tables).map_err(io(&tables))?;
    let t = tables.join("compensations.toml");
    std::fs::write(&t, INJECT_TABLE).map_err(io(&t))?;
    let out = work.join(format!("split-{flavor}"));
    // The module's own sources (split follows their local includes), not
    // every file of a shared directory such as drivers/net/ethernet/realtek.
    let opts = fgft_split::Options {
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
        runtime_symvers: Some(rt.join("Module.symvers")),
        module: Some(cfg.driver.module.clone()),
        ..Default::default()
    };
    split(&opts, &out, &cfg.driver.name)?;
    let name = format!("campaign-{}-{flavor}", cfg.driver.name);
    let built = fgft_vm::kbuild(env, &name, &out, &env.kdir, &[])?;
    let m = &cfg.driver.module;
    Ok(crate::fgft::FgftModules {
        modules: vec![
            rt.join("fgft_rt.ko"),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn located(text: &str, range: std::ops::Range<usize>, warning: bool) -> fgft_split::Located {
        fgft_split::Located {
            path: PathBuf::from("drv/e1000_main.c"),
            text: text.to_string(),
            range,
            message: "a problem".into(),
            label: "here".into(),
            notes: vec!["why it matters".into()],
            warning,
        }
    }

    #[test]
    fn split_errors_name_file_and_line() {
        let text = "int a;\n\tint bad = x;\nint c;\n";
        let at = text.find("bad").unwrap();
        let e = fgft_split::Error::Located(vec![
            located(text, at..at + 3, false),
            located(text, 0..3, true),
        ]);
        assert_eq!(
            split_error(&e),
            "drv/e1000_main.c:2:6: error: a problem\n \
             2 | \tint bad = x;\n   | \t    ^^^ here\n    = note: why it matters\n\
             drv/e1000_main.c:1:1: warning: a problem\n \
             1 | int a;\n   | ^^^ here\n    = note: why it matters\n\
             1 error(s)"
        );
    }

    #[test]
    fn split_errors_without_text_still_name_the_file() {
        let e = fgft_split::Error::Located(vec![located("", 10..20, false)]);
        assert_eq!(
            split_error(&e),
            "drv/e1000_main.c:1:1: error: a problem\n    = note: why it matters\n1 error(s)"
        );
        let m = fgft_split::Error::Msg("no driver".into());
        assert_eq!(split_error(&m), "no driver");
    }

    #[test]
    fn split_output_never_overlaps_an_input() {
        let dir = std::env::temp_dir().join(format!("fgft-campaign-out-{}", std::process::id()));
        let src = dir.join("src");
        std::fs::create_dir_all(&src).unwrap();
        assert!(fresh_out(&src.join("split"), &[&src]).is_err());
        assert!(fresh_out(&dir, &[&src]).is_err());
        let out = dir.join("split");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("old.c"), "").unwrap();
        fresh_out(&out, &[&src]).unwrap();
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_split_reports_file_and_line_and_writes_nothing() {
        let dir = std::env::temp_dir().join(format!("fgft-campaign-split-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sidecar = dir.join("bad.toml");
        std::fs::write(&sidecar, "# a sidecar\n[driver]\nfiles = 3\n").unwrap();
        let out = dir.join("split");
        let opts = fgft_split::Options {
            annotations: vec![sidecar.clone()],
            ..Default::default()
        };
        let e = split(&opts, &out, "bad").unwrap_err().to_string();
        assert!(e.starts_with("split failed for bad:\n"), "{e}");
        let at = format!("{}:3:1: error: unknown key `files`", sidecar.display());
        assert!(e.contains(&at), "{e}");
        assert!(!out.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

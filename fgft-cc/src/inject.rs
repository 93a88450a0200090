//! `fgft-cc inject`: deterministic, labelled faulty variants of entry points.
//!
//! Writes OUT/<same relative paths> (the driver with every chosen variant
//! planted, each behind its own id), OUT/fgft_inject.c (the switch for a
//! native build) and OUT/fgft-inject.json (the manifest a campaign reads).

use crate::diag::CliError;
use fgft_inject::{FaultKind, Options, Source};
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// Driver source files or directories (.c and .h are read).
    #[arg(required = true)]
    pub sources: Vec<PathBuf>,
    /// Output directory (written whole or not at all).
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// Entry point to inject into: a function name or glob (repeatable).
    #[arg(long = "entry", required = true)]
    pub entries: Vec<String>,
    /// Paths in OUT are relative to this directory (default: the common
    /// directory of the sources).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Seed of the variant choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Variants per entry point, at most.
    #[arg(long = "per-entry", default_value_t = 4)]
    pub per_entry: usize,
    /// Fault kinds to draw from, comma-separated (default: all but the
    /// boundary kinds corrupt-ret, corrupt-len and corrupt-member, which are
    /// drawn only when named).
    #[arg(long, value_delimiter = ',')]
    pub kinds: Vec<String>,
    /// Replace an OUT that an earlier fgft run wrote (it holds
    /// `.fgft-manifest`); a directory fgft did not write is never replaced.
    #[arg(long)]
    pub force: bool,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CliError + '_ {
    move |source| CliError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Collects .c/.h files, sorted: each directory once (symbolic-link
/// loops skipped), special files skipped; what was skipped is listed on
/// stderr.  A named source that does not exist is an error.
fn collect(sources: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
    for s in sources {
        std::fs::metadata(s).map_err(io(s))?;
    }
    let w = fgft_base::walk::files(sources, &|p| {
        matches!(p.extension().and_then(|e| e.to_str()), Some("c" | "h"))
    });
    for s in &w.skipped {
        eprintln!(
            "fgft-cc inject: warning: {}: skipped: {}",
            s.path.display(),
            s.why
        );
    }
    let mut files = w.files;
    files.dedup();
    Ok(files)
}

fn common_dir(files: &[PathBuf]) -> PathBuf {
    let mut base = files[0].parent().map(Path::to_path_buf).unwrap_or_default();
    for f in files {
        while !f.starts_with(&base) {
            if !base.pop() {
                break;
            }
        }
    }
    base
}

fn globs(pats: &[String]) -> Result<GlobSet, CliError> {
    let mut b = GlobSetBuilder::new();
    for p in pats {
        let g = Glob::new(p).map_err(|e| {
            crate::diag::arg_error(
                "--entry",
                p,
                format!("--entry `{p}` is not a valid glob: {e}"),
                "give a function name or a glob such as drv_get_*",
            )
        })?;
        b.add(g);
    }
    b.build()
        .map_err(|e| CliError::Msg(format!("--entry patterns: {e}")))
}

pub fn run(args: Args) -> Result<(), CliError> {
    // Every argument is checked before anything is read or written.
    let kinds = args
        .kinds
        .iter()
        .map(|k| FaultKind::parse(k.trim()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            crate::diag::arg_error(
                "--kinds",
                &args.kinds.join(","),
                format!("--kinds: {e}"),
                "see fgft-cc inject --help for the fault kinds",
            )
        })?;
    if args.per_entry == 0 {
        return Err(crate::diag::arg_error(
            "--per-entry",
            "0",
            "--per-entry 0 asks for no variant".into(),
            "give at least 1 (the default is 4)",
        ));
    }
    let set = globs(&args.entries)?;
    let files = collect(&args.sources)?;
    if files.is_empty() {
        return Err(crate::diag::sources_error(
            &args.sources,
            "no .c or .h files in the given sources".into(),
            "name the driver's source files, or a directory that holds them",
        ));
    }
    let root = match &args.root {
        Some(r) => {
            if !r.is_dir() {
                let shown = r.display().to_string();
                return Err(crate::diag::arg_error(
                    "--root",
                    &shown,
                    format!("--root {shown} is not a directory"),
                    "give the directory the sources' paths in OUT are relative to",
                ));
            }
            r.clone()
        }
        None => common_dir(&files),
    };
    let mut inputs = files.clone();
    inputs.extend(args.sources.iter().cloned());
    let mut sources = Vec::new();
    for f in &files {
        let file = fgft_parse::parse_file(f)?;
        let rel = f.strip_prefix(&root).map(Path::to_path_buf).map_err(|_| {
            CliError::Msg(format!(
                "{} is not under --root {}",
                f.display(),
                root.display()
            ))
        })?;
        sources.push(Source { rel, file });
    }
    let sites = fgft_inject::find_sites(&sources, &|n| set.is_match(n));
    let opts = Options {
        seed: args.seed,
        per_entry: args.per_entry,
        kinds,
    };
    let variants = fgft_inject::select(&sources, &sites, &opts);
    if variants.is_empty() {
        let known = sites.len();
        return Err(crate::diag::arg_error(
            "--entry",
            &args.entries.join(" --entry "),
            format!(
                "no injection site in any function matching {}",
                args.entries.join(", ")
            ),
            &if known == 0 {
                "no function of the sources matches: name one that exists, e.g. --entry 'drv_*'"
                    .to_string()
            } else {
                format!("{known} site(s) matched, but none of the chosen --kinds")
            },
        ));
    }
    let texts =
        fgft_inject::apply(&sources, &variants).map_err(|e| CliError::Msg(e.to_string()))?;
    let stage = fgft_base::outdir::stage(&args.out, &inputs, args.force, "fgft-cc inject")
        .map_err(|e| crate::diag::out_error("-o", &args.out, e))?;
    let out = stage.path();
    for (src, text) in sources.iter().zip(texts) {
        let dest = out.join(&src.rel);
        if let Some(d) = dest.parent() {
            std::fs::create_dir_all(d).map_err(io(d))?;
        }
        std::fs::write(&dest, text).map_err(io(&dest))?;
    }
    let support = out.join("fgft_inject.c");
    std::fs::write(&support, fgft_inject::native_support_c()).map_err(io(&support))?;
    let manifest = serde_json::json!({
        "seed": args.seed,
        "per_entry": args.per_entry,
        "variants": variants,
    });
    let mpath = out.join("fgft-inject.json");
    let mut text =
        serde_json::to_string_pretty(&manifest).map_err(|e| CliError::Msg(e.to_string()))?;
    text.push('\n');
    std::fs::write(&mpath, text).map_err(io(&mpath))?;
    stage
        .commit()
        .map_err(|e| crate::diag::out_error("-o", &args.out, e))?;
    for v in &variants {
        println!("{:4} {}", v.id, v.label);
    }
    eprintln!(
        "fgft-cc inject: {} variants in {} entry points written to {}",
        variants.len(),
        variants
            .iter()
            .map(|v| &v.entry)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        args.out.display()
    );
    Ok(())
}

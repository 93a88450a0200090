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
    /// Output directory (must not exist or be empty, unless --force).
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
    /// Fault kinds to draw from, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    pub kinds: Vec<String>,
    /// Replace the contents of a non-empty OUT.
    #[arg(long)]
    pub force: bool,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CliError + '_ {
    move |source| CliError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Collects .c/.h files, sorted, with the base they are relative to.
fn collect(sources: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
    let mut files = Vec::new();
    for s in sources {
        let meta = std::fs::metadata(s).map_err(io(s))?;
        if meta.is_dir() {
            let mut stack = vec![s.clone()];
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).map_err(io(&d))? {
                    let p = e.map_err(io(&d))?.path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if matches!(p.extension().and_then(|e| e.to_str()), Some("c" | "h")) {
                        files.push(p);
                    }
                }
            }
        } else {
            files.push(s.clone());
        }
    }
    files.sort();
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
        let g = Glob::new(p).map_err(|e| CliError::Msg(format!("--entry `{p}`: {e}")))?;
        b.add(g);
    }
    b.build()
        .map_err(|e| CliError::Msg(format!("--entry patterns: {e}")))
}

pub fn run(args: Args) -> Result<(), CliError> {
    let kinds = args
        .kinds
        .iter()
        .map(|k| FaultKind::parse(k.trim()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::Msg(e.to_string()))?;
    let files = collect(&args.sources)?;
    if files.is_empty() {
        return Err(CliError::Msg(
            "no .c or .h files in the given sources".into(),
        ));
    }
    let root = match &args.root {
        Some(r) => r.clone(),
        None => common_dir(&files),
    };
    fgft_base::outdir::prepare(&args.out, &files, args.force)?;
    let set = globs(&args.entries)?;

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
        return Err(CliError::Msg(format!(
            "no injection site in any function matching {}",
            args.entries.join(", ")
        )));
    }
    let texts =
        fgft_inject::apply(&sources, &variants).map_err(|e| CliError::Msg(e.to_string()))?;
    for (src, text) in sources.iter().zip(texts) {
        let dest = args.out.join(&src.rel);
        if let Some(d) = dest.parent() {
            std::fs::create_dir_all(d).map_err(io(d))?;
        }
        std::fs::write(&dest, text).map_err(io(&dest))?;
    }
    let support = args.out.join("fgft_inject.c");
    std::fs::write(&support, fgft_inject::native_support_c()).map_err(io(&support))?;
    let manifest = serde_json::json!({
        "seed": args.seed,
        "per_entry": args.per_entry,
        "variants": variants,
    });
    let mpath = args.out.join("fgft-inject.json");
    let mut text =
        serde_json::to_string_pretty(&manifest).map_err(|e| CliError::Msg(e.to_string()))?;
    text.push('\n');
    std::fs::write(&mpath, text).map_err(io(&mpath))?;
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

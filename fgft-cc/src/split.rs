//! `fgft-cc split`: the command-line edge of the split library
//! (`fgft-split`): clap options in, diagnostics out.
//!
//! Nothing is written when there is an error: every problem is reported as a
//! located diagnostic first.  OUT must not exist, be empty, or `--force` must
//! be given; OUT may not overlap the inputs or the tree.

use crate::diag::CliError;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Driver source files, or one directory holding the driver (optional
    /// when --annotations names the driver's files).
    pub sources: Vec<PathBuf>,
    /// Output directory (created; must be empty unless --force).
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// Kernel source tree the sidecar's file names are relative to.
    #[arg(long)]
    pub tree: Option<PathBuf>,
    /// Sidecar annotation file (TOML); repeatable: later files add hints,
    /// entry points and pure APIs to the first.
    #[arg(long)]
    pub annotations: Vec<PathBuf>,
    /// Entry points to isolate: a function name or a glob (`e1000_get_*`),
    /// or the functions stored in a slot `struct.field`, globs allowed
    /// (`ethtool_ops.*`); repeatable.
    #[arg(long = "isolate")]
    pub isolate: Vec<String>,
    /// Build OUT against --kdir after writing it: any gcc or modpost error
    /// or warning, and any kernel call of the SFI module without a wrapper,
    /// is reported at its generated line (with the driver line it comes
    /// from) and the command fails.
    #[arg(long)]
    pub check: bool,
    /// Isolate the slots of a profile of profiles.toml (`management`:
    /// ethtool_ops and the net_device_ops getters and setters).
    #[arg(long)]
    pub profile: Option<String>,
    /// Kernel build directory the output is meant for (recorded in OUT's
    /// Makefile as the default KDIR).
    #[arg(long)]
    pub kdir: Option<PathBuf>,
    /// Replace a non-empty OUT.
    #[arg(long)]
    pub force: bool,
    /// Extra table directories (compensations.toml, module-init.toml,
    /// macro-hints.toml); FGFT_TABLES is read too.
    #[arg(long = "tables")]
    pub tables: Vec<PathBuf>,
    /// Module.symvers of the built runtime module (for modpost).
    #[arg(long = "runtime-symvers")]
    pub runtime_symvers: Option<PathBuf>,
    /// Build the SFI module without read checks (stores are still checked).
    #[arg(long = "no-read-checks")]
    pub no_read_checks: bool,
    /// Stubs stamp the cycle counter between the stages of their
    /// transaction (begin, grants, copy-in, body, copy-out, commit) and of
    /// calls with isolation off; debugfs fgft/entries/NAME/stages shows the
    /// sums (for benchmarks: bench_iopath)
    #[arg(long = "stage-times")]
    pub stage_times: bool,
    /// Module name (default: from the sidecar, the Makefile, or the sources).
    #[arg(long)]
    pub module: Option<String>,
    /// No device checkpoint: do not derive one from the PM code, and do not
    /// warn that the driver has none.
    #[arg(long = "no-checkpoint")]
    pub no_checkpoint: bool,
    /// Leave out the marshaling hints of the annotation files and the
    /// sources (`[[hint]]`, `FGFT_BLOB` and the like): what the kernel's
    /// contracts and inference find alone (plan.txt names each source).
    #[arg(long = "no-hints")]
    pub no_hints: bool,
    /// Kernel version for the sidecar's per-version file lists (default:
    /// read from the tree's Makefile).
    #[arg(long = "kernel-version")]
    pub kernel_version: Option<String>,
    /// How diagnostics are written: `text` (stderr, with source snippets)
    /// or `sarif` (a SARIF 2.1.0 log on stdout, for code-scanning tools;
    /// the text goes to stderr as well, the summary lines too).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Sarif,
}

impl Args {
    fn options(&self) -> fgft_split::Options {
        fgft_split::Options {
            sources: self.sources.clone(),
            tree: self.tree.clone(),
            annotations: self.annotations.clone(),
            isolate: self.isolate.clone(),
            profile: self.profile.clone(),
            kdir: self.kdir.clone(),
            tables: self.tables.clone(),
            runtime_symvers: self.runtime_symvers.clone(),
            no_read_checks: self.no_read_checks,
            stage_times: self.stage_times,
            module: self.module.clone(),
            no_checkpoint: self.no_checkpoint,
            no_hints: self.no_hints,
            kernel_version: self.kernel_version.clone(),
        }
    }
}

pub fn run(args: Args) -> Result<(), CliError> {
    if args.format == Format::Text {
        return split(&args, &mut |l| println!("{l}"), &mut Vec::new());
    }
    // SARIF: the log is stdout; the summary lines go to stderr.
    let mut warnings = Vec::new();
    let r = split(&args, &mut |l| eprintln!("{l}"), &mut warnings);
    let (mut diags, errors) = match &r {
        Ok(()) => (Vec::new(), Vec::new()),
        Err(CliError::Located(d)) => (d.clone(), Vec::new()),
        Err(e) => (Vec::new(), vec![e.to_string()]),
    };
    warnings.append(&mut diags);
    let log = crate::sarif::log(&warnings, &errors);
    println!(
        "{}",
        serde_json::to_string_pretty(&log).map_err(|e| CliError::Msg(e.to_string()))?
    );
    r
}

/// The split; `say` prints a summary line, `warnings` gets the warnings
/// (they are also shown on stderr).
fn split(
    args: &Args,
    say: &mut dyn FnMut(String),
    warnings: &mut Vec<crate::diag::Located>,
) -> Result<(), CliError> {
    if args.check && args.kdir.is_none() {
        return Err(CliError::Msg(
            "--check builds the output: give the kernel build directory with --kdir".into(),
        ));
    }
    if let [dir] = args.sources.as_slice() {
        if fgft_split::rust_crate::is_crate(dir) {
            return split_crate(args, dir, say);
        }
    }
    let opts = args.options();
    let tables = fgft_split::Tables::load(&opts.tables)?;
    let split = fgft_split::compute_with(&opts, &tables)?;
    if !split.warnings.is_empty() {
        crate::diag::emit(&split.warnings);
        warnings.extend(split.warnings.iter().cloned());
    }
    let mut inputs: Vec<PathBuf> = args.sources.clone();
    if let Some(t) = &args.tree {
        inputs.push(t.clone());
    }
    inputs.extend(args.annotations.iter().cloned());
    fgft_base::outdir::prepare(&args.out, &inputs, args.force)?;
    fgft_split::write(&args.out, &split.out)?;
    say(format!("{} -> {}", split.summary, args.out.display()));
    if let Some(kdir) = args.kdir.as_deref().filter(|_| args.check) {
        let pure = split.direct_symbols.clone();
        let co = fgft_split::check::CheckOpts {
            kdir,
            table: &tables.api,
            pure: &pure,
        };
        let diags = fgft_split::check::check(&args.out, &co)?;
        if !diags.is_empty() {
            return Err(CliError::Located(diags));
        }
        say(format!(
            "checked: {} builds with no warning against {}",
            args.out.display(),
            kdir.display()
        ));
    }
    Ok(())
}

/// A Rust driver crate: OUT is the crate with `#[fgft::isolate]` added to
/// the chosen methods (fgft_split::rust_crate).
fn split_crate(
    args: &Args,
    dir: &std::path::Path,
    say: &mut dyn FnMut(String),
) -> Result<(), CliError> {
    let cs = fgft_split::rust_crate::split(dir, &args.isolate)?;
    fgft_base::outdir::prepare(&args.out, &[dir.to_path_buf()], args.force)?;
    for (rel, bytes) in &cs.out {
        let p = args.out.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|source| CliError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        std::fs::write(&p, bytes).map_err(|source| CliError::Io {
            path: p.clone(),
            source,
        })?;
    }
    for l in &cs.isolated {
        say(format!("  #[fgft::isolate] {l}"));
    }
    say(format!("{} -> {}", cs.summary, args.out.display()));
    Ok(())
}

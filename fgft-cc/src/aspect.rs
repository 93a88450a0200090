//! `fgft-cc aspect ASPECT.xml SOURCES...|DIR -o OUT`: weaves a KLAS aspect
//! into a driver.
//!
//! OUT is a driver source tree again: the woven files, the generated
//! `fgft_aspect*.{h,c}`, the join-point listing and the Makefile with the
//! generated object added.  It builds with `make -C KDIR M=OUT`, and it is a
//! valid input of `fgft-cc split` (weave first, then split OUT).

use crate::diag::{self, CliError, Located};
use fgft_aspect::{Aspect, AspectError, Diag};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The aspect file (XML, the KLAS form).
    pub aspect: PathBuf,
    /// Driver source files, or one directory.
    #[arg(required = true)]
    pub sources: Vec<PathBuf>,
    /// Output directory: the woven driver source tree.  It must not exist,
    /// be empty, or (with --force) be an earlier fgft output; it must not
    /// lie inside the sources.
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// Replace OUT when it is an earlier fgft output (a directory holding
    /// fgft's manifest); any other non-empty OUT is refused.
    #[arg(long)]
    pub force: bool,
    /// Kernel build tree: kernel struct types for join points and member
    /// checks, and a compile check of the advice code.
    #[arg(long)]
    pub kdir: Option<PathBuf>,
    /// With --kdir, do not compile the generated C.
    #[arg(long)]
    pub no_check: bool,
    /// Extra directory of data tables (aspect-macros.toml, macro-hints.toml).
    #[arg(long = "tables")]
    pub tables: Vec<PathBuf>,
    /// Print the woven join points.
    #[arg(long)]
    pub list: bool,
}

fn located(d: Diag) -> Located {
    Located {
        path: d.path,
        text: d.text.to_string(),
        range: d.range,
        message: d.message,
        label: d.label,
        notes: d.notes,
        warning: d.warning,
    }
}

fn cli_error(e: AspectError) -> CliError {
    match e {
        AspectError::Diagnostics(d) => CliError::Located(d.into_iter().map(located).collect()),
        AspectError::Parse(p) => CliError::Parse(p),
        AspectError::Io { path, source } => CliError::Io { path, source },
        other => CliError::Msg(other.to_string()),
    }
}

/// Everything `aspect` reads: OUT may neither hold nor lie inside any of it.
fn inputs(args: &Args, driver: &fgft_aspect::scan::Driver) -> Vec<PathBuf> {
    let mut v = vec![args.aspect.clone()];
    v.extend(args.sources.iter().cloned());
    v.extend(driver.inputs());
    v.extend(
        fgft_parse::tables::TableDirs::resolve(&args.tables)
            .dirs()
            .iter()
            .cloned(),
    );
    v.extend(args.kdir.iter().cloned());
    v
}

pub fn run(args: Args) -> Result<(), CliError> {
    let aspect = Aspect::load(&args.aspect).map_err(cli_error)?;
    let driver = fgft_aspect::scan::Driver::load(&args.sources).map_err(|e| match e {
        // What is wrong with the sources as given: shown at them.
        AspectError::Msg(m) => diag::sources_error(
            &args.sources,
            m,
            "give one directory, or the driver's regular source files",
        ),
        other => cli_error(other),
    })?;
    let skipped: Vec<Located> = driver.warnings.iter().cloned().map(located).collect();
    diag::emit(&skipped);
    // OUT is checked before the weave (a refusal costs nothing) and written
    // whole, in a staging directory put in place only on success.
    let stage = fgft_base::outdir::stage(
        &args.out,
        &inputs(&args, &driver),
        args.force,
        "fgft-cc aspect",
    )
    .map_err(|e| diag::out_error("-o", &args.out, e))?;
    let opts = fgft_aspect::Options {
        kdir: args.kdir.clone(),
        tables: args.tables.clone(),
        check: args.kdir.is_some() && !args.no_check,
    };
    let woven = fgft_aspect::weave(&aspect, &driver, &opts).map_err(cli_error)?;
    woven.write(stage.path()).map_err(cli_error)?;
    stage
        .commit()
        .map_err(|e| diag::out_error("-o", &args.out, e))?;
    let warnings: Vec<Located> = woven.warnings.iter().cloned().map(located).collect();
    diag::emit(&warnings);
    if args.list {
        print!("{}", woven.listing());
    }
    println!(
        "aspect {}: {} join point(s) woven into {} file(s); output in {}",
        woven.name,
        woven.joinpoints.len(),
        woven.woven.len(),
        args.out.display()
    );
    Ok(())
}

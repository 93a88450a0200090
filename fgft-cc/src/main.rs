//! fgft-cc: the command-line edge.
//!
//! Every subcommand returns `Result<(), CliError>`; this file turns errors into a
//! user-facing report (codespan-reporting for located diagnostics) and exit code 1.
//! Nothing below `main` prints errors or exits on its own.

use clap::{Parser, Subcommand};

mod aspect;
mod diag;
mod inject;
mod roots;
mod sarif;
mod split;
mod survey;
mod tables;

#[derive(Parser)]
#[command(
    name = "fgft-cc",
    version,
    about = "Fine-grained fault tolerance for Linux drivers"
)]
struct Cli {
    /// When diagnostics are coloured: `auto` (stderr is a terminal and
    /// NO_COLOR is unset), `always` or `never`.
    #[arg(long, global = true, value_enum, default_value_t = diag::ColorWhen::Auto)]
    color: diag::ColorWhen,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List every function stored in a kernel slot: `function struct.field file:line`.
    Roots(roots::Args),
    /// Split a driver into a main module and an SFI module that build with Kbuild.
    Split(split::Args),
    /// Weave a KLAS aspect into driver sources.
    Aspect(aspect::Args),
    /// Write deterministic, labelled faulty variants of entry points.
    Inject(inject::Args),
    /// Survey a kernel tree: entry points, PM, unknown APIs, hints, parse health per module.
    Survey(survey::Args),
    /// Commands on fgft's tables: `tables audit` checks the compensation table against a kernel tree.
    Tables(tables::Args),
}

/// The stack of the thread that runs a command: deep enough for every
/// walker up to fgft-parse's `MAX_DEPTH` (reserved, not committed, memory).
const STACK: usize = 1 << 30;

fn main() {
    // Memory is taken from the kernel once and kept (issue 47's scaling
    // bench: at 10 MB of source the run was a fifth slower otherwise).
    // - The work runs on one thread that is not the main one, and glibc
    //   would give it an arena of its own: heaps of 64 MB grown by
    //   mprotect() a few pages at a time.  One arena grows with brk().
    // - Freed memory is not trimmed back to the kernel, and blocks up to
    //   32 MB (glibc's largest threshold) come from the heap rather than from
    //   mmap(): the pipeline frees and reallocates large buffers (texts, edit
    //   lists, token vectors), and each fresh page costs a fault and a clear.
    // - The heap grows 64 MB at a time.
    // A run is one process that exits when done, so nothing holds on to the
    // memory afterwards.
    // SAFETY: mallopt() only sets malloc parameters; nothing else runs yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
    }
    let cli = Cli::parse();
    diag::set_color(cli.color);
    let code = std::thread::Builder::new()
        .name("fgft-cc".into())
        .stack_size(STACK)
        .spawn(move || run(cli))
        .map(|h| h.join().unwrap_or(101))
        .unwrap_or_else(|e| {
            eprintln!("fgft-cc: error: cannot start: {e}");
            1
        });
    std::process::exit(code);
}

fn run(cli: Cli) -> i32 {
    let result = diag::check_env().and_then(|()| match cli.command {
        Command::Roots(a) => roots::run(a),
        Command::Split(a) => split::run(a),
        Command::Aspect(a) => aspect::run(a),
        Command::Inject(a) => inject::run(a),
        Command::Survey(a) => survey::run(a),
        Command::Tables(a) => tables::run(a),
    });
    match result {
        Ok(()) => 0,
        Err(e) => {
            diag::report(&e);
            1
        }
    }
}

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
}

/// The stack of the thread that runs a command: deep enough for every
/// walker up to fgft-parse's `MAX_DEPTH` (reserved, not committed, memory).
const STACK: usize = 1 << 30;

fn main() {
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
    });
    match result {
        Ok(()) => 0,
        Err(e) => {
            diag::report(&e);
            1
        }
    }
}

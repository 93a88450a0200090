//! `fgft-cc aspect`.

use crate::diag::CliError;

#[derive(clap::Args)]
pub struct Args {
    /// Driver source files or directories.
    #[arg(required = true)]
    pub sources: Vec<std::path::PathBuf>,
}

pub fn run(_args: Args) -> Result<(), CliError> {
    Err(CliError::Msg("`aspect` is not implemented yet".into()))
}

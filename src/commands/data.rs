//! `attnzoo data fetch`.

use std::path::PathBuf;

use anyhow::Result;
use attnzoo::translation::corpus;

use super::output::Stdout;

/// `attnzoo data` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Downloads Debian's trans-de-en with apt-get and builds the sentence-pair splits.
    Fetch {
        /// Cache folder [default: ~/.cache/attnzoo]
        #[arg(long)]
        cache: Option<PathBuf>,
    },
}

/// Fetches the corpus and prints its folder.
pub fn run(command: Command) -> Result<()> {
    let Command::Fetch { cache } = command;
    let mut out = Stdout::open()?;
    out.line(corpus::fetch(cache)?.display())?;
    out.finish()
}

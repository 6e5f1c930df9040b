//! One function per CLI subcommand.

mod backends;
mod embed;

pub use backends::{backends, check};
pub use embed::{embed, read_lines};

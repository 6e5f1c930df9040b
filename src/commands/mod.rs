//! One function per CLI subcommand.

mod backends;

pub use backends::{backends, check};

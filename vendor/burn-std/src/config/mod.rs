/// Autodiff config module.
pub mod autodiff;
/// Fusion config module.
pub mod fusion;
/// Remote backend config module.
pub mod remote;

mod base;
mod logger;

pub use base::*;
pub use cubecl_environment::config::RuntimeConfig;
pub use cubecl_environment::config::logger::{LogCrateLevel, LogLevel, LoggerConfig, LoggerSinks};
pub use logger::*;

use std::fmt;

use attnzoo_backends::BackendError;
use attnzoo_models::AttnError;

/// What a command reports to the user: one line on stderr and an exit status.
#[derive(Debug)]
pub enum CliError {
    /// The backend or device cannot be used (exit 2).
    Backend(BackendError),
    /// Bad input or config (exit 2).
    Input(String),
}

impl CliError {
    /// Exit status: 2 for usage and environment problems.
    pub fn exit_code(&self) -> u8 {
        2
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Backend(error) => write!(f, "{error}"),
            CliError::Input(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for CliError {}

impl From<BackendError> for CliError {
    fn from(error: BackendError) -> Self {
        CliError::Backend(error)
    }
}

impl From<AttnError> for CliError {
    fn from(error: AttnError) -> Self {
        CliError::Input(error.to_string())
    }
}

use std::fmt;

/// A bad config or input, with a message that names the offending value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttnError(pub String);

impl AttnError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        AttnError(message.into())
    }
}

impl fmt::Display for AttnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AttnError {}

/// Returns an [`AttnError`] from the enclosing function when `condition` fails.
macro_rules! ensure {
    ($condition:expr, $($message:tt)+) => {
        let holds: bool = $condition;
        if !holds {
            return Err($crate::AttnError::new(format!($($message)+)));
        }
    };
}
pub(crate) use ensure;

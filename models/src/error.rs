use std::borrow::Cow;
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
        f.write_str(&escape_control(&self.0))
    }
}

/// `text` on one line: its control characters (a newline that a quoted file name, JSON key or
/// value carried in) written as escapes, so that an error stays one line whatever it quotes.
///
/// ```
/// assert_eq!(attnzoo_models::escape_control("unknown variant `a\nb`"), "unknown variant `a\\nb`");
/// ```
pub fn escape_control(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut line = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            line.extend(c.escape_default());
        } else {
            line.push(c);
        }
    }
    Cow::Owned(line)
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

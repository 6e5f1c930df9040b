//! Clap value parsers: each number is checked where it is parsed, by the library's ranges
//! ([`attnzoo::validate`]), so a bad value is refused before anything runs or is written.

use std::str::FromStr;

use attnzoo::validate;

fn number<T: FromStr>(text: &str) -> Result<T, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of the kind expected"))
}

/// A finite number.
pub fn finite(text: &str) -> Result<f64, String> {
    validate::finite(number(text)?)
}

/// A finite number above 0.
pub fn positive(text: &str) -> Result<f64, String> {
    validate::positive(number(text)?)
}

/// A probability in `[0, 1]`.
pub fn probability(text: &str) -> Result<f64, String> {
    validate::probability(number(text)?)
}

/// A fraction in `[0, 1)`.
pub fn fraction_below_one(text: &str) -> Result<f64, String> {
    validate::fraction_below_one(number(text)?)
}

/// A fraction in `[0, 1)`, as the `f32` of label smoothing.
pub fn fraction_below_one_f32(text: &str) -> Result<f32, String> {
    fraction_below_one(text).map(|value| value as f32)
}

/// A count of at least 1.
pub fn at_least_one(text: &str) -> Result<usize, String> {
    validate::at_least_one(number(text)?)
}

/// A beam size, 1 to [`validate::MAX_BEAM`].
pub fn beam_size(text: &str) -> Result<usize, String> {
    validate::beam_size(number(text)?)
}

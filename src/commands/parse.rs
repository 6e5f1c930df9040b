//! Clap value parsers: each number is checked where it is parsed, by the library's ranges
//! ([`attnzoo::validate`]), so a bad value is refused before anything runs or is written.

use std::str::FromStr;

use attnzoo::validate;

fn number<T: FromStr>(text: &str) -> Result<T, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of the kind expected"))
}

/// A learning rate in `(0, 10]`.
pub fn learning_rate(text: &str) -> Result<f64, String> {
    validate::learning_rate(number(text)?)
}

/// A time budget in minutes, above 0 and at most a week.
pub fn minutes(text: &str) -> Result<f64, String> {
    validate::minutes(number(text)?)
}

/// A length-penalty α in `[-10, 10]`.
pub fn alpha(text: &str) -> Result<f64, String> {
    validate::alpha(number(text)?)
}

/// A length ratio in `(0, 100]`.
pub fn length_ratio(text: &str) -> Result<f64, String> {
    validate::length_ratio(number(text)?)
}

/// A probability in `[0, 1]`.
pub fn probability(text: &str) -> Result<f64, String> {
    validate::probability(number(text)?)
}

/// A fraction in `[0, 1)`.
pub fn fraction_below_one(text: &str) -> Result<f64, String> {
    validate::fraction_below_one(number(text)?)
}

/// A fraction in `[0, 1)`, as the `f32` of label smoothing (which must not round up to 1).
pub fn fraction_below_one_f32(text: &str) -> Result<f32, String> {
    match fraction_below_one(text)? as f32 {
        value if value < 1.0 => Ok(value),
        _ => Err(format!(
            "{text} rounds to 1 as a 32-bit float: not in [0, 1)"
        )),
    }
}

/// A request timeout in seconds, in `[0.1, 3600]`.
pub fn timeout_seconds(text: &str) -> Result<f64, String> {
    validate::timeout_seconds(number(text)?)
}

/// An address to listen on, `IP:PORT`; `localhost:PORT` is `127.0.0.1:PORT`.
pub fn listen_addr(text: &str) -> Result<std::net::SocketAddr, String> {
    let text = text.trim();
    if let Some(port) = text.strip_prefix("localhost:") {
        let port: u16 = port
            .parse()
            .map_err(|_| format!("`{port}` is not a port number in 0–65535"))?;
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().map_err(|_| {
        format!(
            "`{text}` is not an address to listen on: IP:PORT such as 127.0.0.1:8080 or \
             [::1]:8080, or localhost:PORT"
        )
    })
}

/// A queue length, 1 to [`validate::MAX_QUEUE`].
pub fn queue_length(text: &str) -> Result<usize, String> {
    validate::queue_length(number(text)?)
}

/// A count, 0 or more.
pub fn count(text: &str) -> Result<usize, String> {
    number(text)
}

/// A subword vocabulary size, 0 (whole words) or 5 to [`validate::MAX_VOCAB`].
pub fn bpe_vocab(text: &str) -> Result<usize, String> {
    validate::bpe_vocab(number(text)?)
}

/// A seed, any `u64`.
pub fn seed(text: &str) -> Result<u64, String> {
    number(text)
}

/// An n-gram length for the no-repeat rule, 0 (no rule) to [`validate::MAX_NGRAM`].
pub fn ngram(text: &str) -> Result<usize, String> {
    validate::ngram(number(text)?)
}

/// A count of at least 1.
pub fn at_least_one(text: &str) -> Result<usize, String> {
    validate::at_least_one(number(text)?)
}

/// A model width, 1 to [`validate::MAX_WIDTH`].
pub fn width(text: &str) -> Result<usize, String> {
    validate::width(number(text)?)
}

/// A number of layers, 1 to [`validate::MAX_LAYERS`].
pub fn layers(text: &str) -> Result<usize, String> {
    validate::layers(number(text)?)
}

/// A beam size, 1 to [`validate::MAX_BEAM`].
pub fn beam_size(text: &str) -> Result<usize, String> {
    validate::beam_size(number(text)?)
}

/// A sampling temperature in `(0, 100]`.
pub fn temperature(text: &str) -> Result<f64, String> {
    let value: f64 = number(text)?;
    if value > 0.0 && value <= 100.0 {
        Ok(value)
    } else {
        Err(format!(
            "{} is not a temperature in (0, 100]",
            validate::show(value)
        ))
    }
}

/// A top-p (nucleus) mass in `(0, 1]`.
pub fn top_p(text: &str) -> Result<f64, String> {
    let value: f64 = number(text)?;
    if value > 0.0 && value <= 1.0 {
        Ok(value)
    } else {
        Err(format!(
            "{} is not a top-p in (0, 1]",
            validate::show(value)
        ))
    }
}

/// Token ids, comma-separated: `1,2,3`.
pub fn token_ids(text: &str) -> Result<Vec<u32>, String> {
    text.split(',')
        .map(|id| {
            id.trim().parse().map_err(|_| {
                format!(
                    "`{}` is not a token id (a whole number 0 to 4294967295)",
                    id.trim()
                )
            })
        })
        .collect()
}

/// A perplexity context, 4 to [`validate::MAX_CONTEXT`] tokens.
pub fn context(text: &str) -> Result<usize, String> {
    validate::context(number(text)?)
}

//! The ranges of the numbers a user gives, written once: the command line's parsers and the
//! checks of configs read back from a checkpoint both call these. Each error names the value.

/// The widest beam decoding accepts: a beam holds `beam × vocabulary` scores per source and
/// step, and beyond a few dozen hypotheses search stops paying (Koehn & Knowles 2017, "Six
/// Challenges for Neural Machine Translation": quality falls with wide beams).
pub const MAX_BEAM: usize = 64;

/// The largest learning rate: Adam moves each weight by about this much per step, so far above
/// 1 no model trains (the defaults are 2e-3 and 3e-3).
pub const MAX_LEARNING_RATE: f64 = 10.0;

/// The longest training run a time budget may ask for, in minutes: a week.
pub const MAX_MINUTES: f64 = 7.0 * 24.0 * 60.0;

/// The largest |α| of beam search's length penalty `((5 + |Y|) / 6)^α`: beyond it the penalty
/// alone decides (GNMT tunes α in [0.6, 1]).
pub const MAX_ALPHA: f64 = 10.0;

/// The longest translation, as a multiple of its source's length.
pub const MAX_LENGTH_RATIO: f64 = 100.0;

/// The most requests `attnzoo serve` lets wait for the model thread.
pub const MAX_QUEUE: usize = 1024;

/// The longest a request to `attnzoo serve` may take, in seconds: an hour.
pub const MAX_TIMEOUT_SECONDS: f64 = 3600.0;

/// The shortest request timeout, in seconds: below it no translation could finish.
pub const MIN_TIMEOUT_SECONDS: f64 = 0.1;

/// `value` as a reader wants it in a message: `0.05`, `0.0625`, `1e30`, `1e-300` — at most
/// four decimals, never 300 digits.
pub fn show(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude == 0.0 || !value.is_finite() {
        format!("{value}")
    } else if (1e-4..1e9).contains(&magnitude) {
        let text = format!("{value:.4}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{value:e}")
    }
}

/// A finite number.
pub fn finite(value: f64) -> Result<f64, String> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(format!("{} is not a finite number", show(value)))
    }
}

/// A finite number above 0.
pub fn positive(value: f64) -> Result<f64, String> {
    if finite(value)? > 0.0 {
        Ok(value)
    } else {
        Err(format!("{} is not above 0", show(value)))
    }
}

/// A finite number in `[low, high]`, said as `what`.
fn within(value: f64, low: f64, high: f64, what: &str) -> Result<f64, String> {
    if (low..=high).contains(&finite(value)?) {
        Ok(value)
    } else {
        Err(format!("{} is not {what}", show(value)))
    }
}

/// A probability: in `[0, 1]`.
pub fn probability(value: f64) -> Result<f64, String> {
    within(value, 0.0, 1.0, "a probability in [0, 1]")
}

/// A fraction below 1: in `[0, 1)` (label smoothing: at 1 no weight is left for the answer).
pub fn fraction_below_one(value: f64) -> Result<f64, String> {
    if (0.0..1.0).contains(&finite(value)?) {
        Ok(value)
    } else {
        Err(format!("{} is not in [0, 1)", show(value)))
    }
}

/// A finite number above 0 and at most `high`, said as `what`.
fn positive_up_to(value: f64, high: f64, what: &str) -> Result<f64, String> {
    positive(value)?;
    within(value, 0.0, high, what)
}

/// A learning rate: above 0, at most [`MAX_LEARNING_RATE`].
pub fn learning_rate(value: f64) -> Result<f64, String> {
    positive_up_to(value, MAX_LEARNING_RATE, "a learning rate in (0, 10]")
}

/// A time budget in minutes: above 0, at most [`MAX_MINUTES`].
pub fn minutes(value: f64) -> Result<f64, String> {
    positive_up_to(value, MAX_MINUTES, "in (0, 10080] minutes (a week)")
}

/// A request timeout: [`MIN_TIMEOUT_SECONDS`] to [`MAX_TIMEOUT_SECONDS`].
pub fn timeout_seconds(value: f64) -> Result<f64, String> {
    within(
        value,
        MIN_TIMEOUT_SECONDS,
        MAX_TIMEOUT_SECONDS,
        "in [0.1, 3600] seconds",
    )
}

/// Beam search's length-penalty α: in `[-MAX_ALPHA, MAX_ALPHA]`.
pub fn alpha(value: f64) -> Result<f64, String> {
    within(value, -MAX_ALPHA, MAX_ALPHA, "in [-10, 10]")
}

/// The longest translation as a multiple of the source length: above 0, at most
/// [`MAX_LENGTH_RATIO`].
pub fn length_ratio(value: f64) -> Result<f64, String> {
    positive_up_to(value, MAX_LENGTH_RATIO, "in (0, 100]")
}

/// The widest state a model config may ask for: an RNN's width, a Transformer's `d_model` or
/// feed-forward width.
pub const MAX_WIDTH: usize = 16_384;

/// The most layers a model config may ask for, per stack.
pub const MAX_LAYERS: usize = 64;

/// The most parameters a model config may ask for: 4 GiB of `f32`.
pub const MAX_PARAMETERS: f64 = (1u64 << 30) as f64;

/// A count from 1 to `high`; else `why(value)`.
fn one_to(value: usize, high: usize, why: impl Fn(usize) -> String) -> Result<usize, String> {
    if (1..=high).contains(&value) {
        Ok(value)
    } else {
        Err(why(value))
    }
}

/// A width: 1 to [`MAX_WIDTH`].
pub fn width(value: usize) -> Result<usize, String> {
    one_to(value, MAX_WIDTH, |v| {
        format!("{v} is not a width in 1–{MAX_WIDTH}")
    })
}

/// A count of layers: 1 to [`MAX_LAYERS`].
pub fn layers(value: usize) -> Result<usize, String> {
    one_to(value, MAX_LAYERS, |v| {
        format!("{v} is not a number of layers in 1–{MAX_LAYERS}")
    })
}

/// The longest perplexity context, in tokens.
pub const MAX_CONTEXT: usize = 131_072;

/// A perplexity context: 4 to [`MAX_CONTEXT`] tokens (the model's own limit is checked when
/// it runs).
pub fn context(value: usize) -> Result<usize, String> {
    if (4..=MAX_CONTEXT).contains(&value) {
        Ok(value)
    } else {
        Err(format!(
            "{value} is not a context in 4–{MAX_CONTEXT} tokens"
        ))
    }
}

/// A count of at least 1.
pub fn at_least_one(value: usize) -> Result<usize, String> {
    if value >= 1 {
        Ok(value)
    } else {
        Err("must be at least 1".into())
    }
}

/// A queue length: 1 to [`MAX_QUEUE`].
pub fn queue_length(value: usize) -> Result<usize, String> {
    one_to(value, MAX_QUEUE, |v| {
        format!("{v} is not a queue length in 1–{MAX_QUEUE}")
    })
}

/// The largest vocabulary a run may ask for, of words or of subwords.
pub const MAX_VOCAB: usize = 1_000_000;

/// A vocabulary size: 5 (the 4 special tokens and one more) to [`MAX_VOCAB`].
pub fn vocab_size(value: usize) -> Result<usize, String> {
    if (5..=MAX_VOCAB).contains(&value) {
        Ok(value)
    } else {
        Err(format!(
            "{value} is not a vocabulary size in 5–{MAX_VOCAB} (4 tokens are special)"
        ))
    }
}

/// A subword vocabulary size: 0 (whole words) or a [`vocab_size`].
pub fn bpe_vocab(value: usize) -> Result<usize, String> {
    match value {
        0 => Ok(0),
        _ => vocab_size(value).map_err(|why| format!("{why}; 0 keeps whole words")),
    }
}

/// The longest sentence translated or embedded, in characters: far more than the tokens a model
/// reads (it cuts a sentence to those, with a warning), and a bound on the memory that
/// tokenizing it takes (a 30 MB line took 3.4 GB).
pub const MAX_SENTENCE_CHARS: usize = 10_000;

/// A sentence of at most [`MAX_SENTENCE_CHARS`] characters.
pub fn sentence(text: &str) -> Result<&str, String> {
    match text.chars().count() {
        chars if chars > MAX_SENTENCE_CHARS => Err(format!(
            "{chars} characters; a sentence may have at most {MAX_SENTENCE_CHARS}"
        )),
        _ => Ok(text),
    }
}

/// The longest n-gram the no-repeat rule takes (longer than any translation).
pub const MAX_NGRAM: usize = 1000;

/// An n-gram length for the no-repeat rule: 0 (no rule) to [`MAX_NGRAM`].
pub fn ngram(value: usize) -> Result<usize, String> {
    if value <= MAX_NGRAM {
        Ok(value)
    } else {
        Err(format!(
            "{value} is not an n-gram length in 0–{MAX_NGRAM} (0: no rule)"
        ))
    }
}

/// A beam size: 1 (greedy) to [`MAX_BEAM`].
pub fn beam_size(value: usize) -> Result<usize, String> {
    one_to(value, MAX_BEAM, |v| {
        format!("beam size {v} is not in 1–{MAX_BEAM} (1 is greedy search)")
    })
}

/// `field: why` when `check(value)` fails: how a config file's bad field is reported.
pub fn field<T: Copy>(
    name: &str,
    value: T,
    check: fn(T) -> Result<T, String>,
) -> Result<T, String> {
    check(value).map_err(|why| format!("{name}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_is_counted_in_characters() {
        let longest = "ü".repeat(MAX_SENTENCE_CHARS);
        assert_eq!(sentence(&longest), Ok(longest.as_str()));
        let error = sentence(&format!("{longest}.")).unwrap_err();
        assert_eq!(error, "10001 characters; a sentence may have at most 10000");
    }

    #[test]
    fn ranges_hold_their_ends_and_refuse_what_is_outside() {
        assert!(finite(f64::NAN).is_err() && finite(-1e300).is_ok());
        assert!(
            positive(0.0).is_err() && positive(f64::INFINITY).is_err() && positive(1e-9).is_ok()
        );
        assert!(probability(0.0).is_ok() && probability(1.0).is_ok() && probability(1.01).is_err());
        assert!(fraction_below_one(0.0).is_ok() && fraction_below_one(1.0).is_err());
        assert!(at_least_one(0).is_err() && at_least_one(1).is_ok());
        assert!(width(0).is_err() && width(MAX_WIDTH).is_ok() && width(MAX_WIDTH + 1).is_err());
        assert!(layers(0).is_err() && layers(MAX_LAYERS).is_ok() && layers(4_000_000_000).is_err());
        assert!(beam_size(0).is_err() && beam_size(MAX_BEAM).is_ok());
        assert!(ngram(0).is_ok() && ngram(MAX_NGRAM).is_ok() && ngram(MAX_NGRAM + 1).is_err());
        assert!(queue_length(0).is_err() && queue_length(MAX_QUEUE + 1).is_err());
        assert!(timeout_seconds(0.0).is_err() && timeout_seconds(3600.0).is_ok());
        assert!(timeout_seconds(1e-12).is_err() && timeout_seconds(0.1).is_ok());
        assert!(timeout_seconds(f64::NAN).is_err() && timeout_seconds(3601.0).is_err());
        assert!(beam_size(MAX_BEAM + 1).unwrap_err().contains("64"));
        assert_eq!(
            field("dropout", 5.0, probability).unwrap_err(),
            "dropout: 5 is not a probability in [0, 1]"
        );
        assert!(learning_rate(10.0).is_ok() && learning_rate(10.5).is_err());
        assert!(learning_rate(0.0).is_err() && learning_rate(3e-3).is_ok());
        assert!(minutes(MAX_MINUTES).is_ok() && minutes(MAX_MINUTES + 1.0).is_err());
        assert!(alpha(-MAX_ALPHA).is_ok() && alpha(1e30).is_err() && alpha(0.0).is_ok());
        assert!(length_ratio(MAX_LENGTH_RATIO).is_ok() && length_ratio(1e30).is_err());
    }

    #[test]
    fn numbers_in_messages_are_short() {
        assert_eq!(
            minutes(1e30).unwrap_err(),
            "1e30 is not in (0, 10080] minutes (a week)"
        );
        assert_eq!(positive(-1e-300).unwrap_err(), "-1e-300 is not above 0");
        assert_eq!(show(0.05), "0.05");
        assert_eq!(show(0.062498049650000005), "0.0625");
        assert_eq!(show(10080.0), "10080");
        assert_eq!(show(f64::NAN), "NaN");
    }
}

//! The ranges of the numbers a user gives, written once: the command line's parsers and the
//! checks of configs read back from a checkpoint both call these. Each error names the value.

/// The widest beam decoding accepts: a beam holds `beam × vocabulary` scores per source and
/// step, and beyond a few dozen hypotheses search stops paying (Koehn & Knowles 2017, "Six
/// Challenges for Neural Machine Translation": quality falls with wide beams).
pub const MAX_BEAM: usize = 64;

/// A finite number.
pub fn finite(value: f64) -> Result<f64, String> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(format!("{value} is not a finite number"))
    }
}

/// A finite number above 0.
pub fn positive(value: f64) -> Result<f64, String> {
    if finite(value)? > 0.0 {
        Ok(value)
    } else {
        Err(format!("{value} is not above 0"))
    }
}

/// A probability: in `[0, 1]`.
pub fn probability(value: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&finite(value)?) {
        Ok(value)
    } else {
        Err(format!("{value} is not a probability in [0, 1]"))
    }
}

/// A fraction below 1: in `[0, 1)` (label smoothing: at 1 no weight is left for the answer).
pub fn fraction_below_one(value: f64) -> Result<f64, String> {
    if (0.0..1.0).contains(&finite(value)?) {
        Ok(value)
    } else {
        Err(format!("{value} is not in [0, 1)"))
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

/// A beam size: 1 (greedy) to [`MAX_BEAM`].
pub fn beam_size(value: usize) -> Result<usize, String> {
    if (1..=MAX_BEAM).contains(&value) {
        Ok(value)
    } else {
        Err(format!(
            "beam size {value} is not in 1–{MAX_BEAM} (1 is greedy search)"
        ))
    }
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
    fn ranges_hold_their_ends_and_refuse_what_is_outside() {
        assert!(finite(f64::NAN).is_err() && finite(-1e300).is_ok());
        assert!(
            positive(0.0).is_err() && positive(f64::INFINITY).is_err() && positive(1e-9).is_ok()
        );
        assert!(probability(0.0).is_ok() && probability(1.0).is_ok() && probability(1.01).is_err());
        assert!(fraction_below_one(0.0).is_ok() && fraction_below_one(1.0).is_err());
        assert!(at_least_one(0).is_err() && at_least_one(1).is_ok());
        assert!(beam_size(0).is_err() && beam_size(MAX_BEAM).is_ok());
        assert!(beam_size(MAX_BEAM + 1).unwrap_err().contains("64"));
        assert_eq!(
            field("dropout", 5.0, probability).unwrap_err(),
            "dropout: 5 is not a probability in [0, 1]"
        );
    }
}

//! Numbers as messages show them: the one way every error of every crate prints a number a user
//! gave (this crate is the one every other builds on).
//!
//! Rust prints an `f64` in full positional notation, so `1e300` came back in an error as a
//! 301-digit number and `1e-300` as 300 zeros. [`number`] prints a value as its shortest
//! round-trip decimal (what the user most likely typed) where that is short and not tiny, and in
//! exponent notation (`1e300`, `2.5e-9`) where the decimal would run past [`POSITIONAL_DIGITS`]
//! characters or the value is below [`SMALLEST_POSITIONAL`].

/// The longest positional form shown; past it, exponent notation.
pub const POSITIONAL_DIGITS: usize = 16;

/// The smallest magnitude shown positionally (`0.0001`); below it zeros are hard to count.
pub const SMALLEST_POSITIONAL: f64 = 1e-4;

/// `x` for a message: `0.5`, `1000000`, `1e300`, `2.5e-9`, `NaN`, `inf`, `-inf`.
pub fn number(x: f64) -> String {
    let positional = x.to_string();
    let tiny = x != 0.0 && x.abs() < SMALLEST_POSITIONAL;
    if !x.is_finite() || (positional.len() <= POSITIONAL_DIGITS && !tiny) {
        return positional;
    }
    let exponent = format!("{x:e}");
    if tiny || exponent.len() < positional.len() {
        exponent
    } else {
        positional
    }
}

#[cfg(test)]
mod tests {
    use super::number;

    #[test]
    fn large_and_small_numbers_read_as_typed() {
        assert_eq!(number(1e300), "1e300");
        assert_eq!(number(-1e300), "-1e300");
        assert_eq!(number(1e-300), "1e-300");
        assert_eq!(number(2.5e-9), "2.5e-9");
        assert_eq!(number(1e-9), "1e-9");
        assert_eq!(number(0.00012), "0.00012");
        assert_eq!(number(1e15), "1000000000000000");
        assert_eq!(number(1.5e20), "1.5e20");
        assert_eq!(number(614.4), "614.4");
        assert_eq!(number(1000000.0), "1000000");
        assert_eq!(number(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::INFINITY), "inf");
        assert_eq!(number(0.0), "0");
    }
}

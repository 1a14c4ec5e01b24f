//! Numbers in words, as every text railyard prints writes them: digit grouping, signed dollars,
//! ratios and counted nouns.

/// `1,234,567` with an explicit sign: `+$1,234` or `-$1,234`.
pub fn signed_usd(x: f64) -> String {
    let r = x.round();
    let sign = if r < 0.0 { "-" } else { "+" };
    format!("{sign}${}", thousands(r.abs()))
}

/// `1234567.8` -> `1,234,568`. Exact for any magnitude (no cast to a fixed-width integer that
/// would saturate); a non-finite value prints as Rust prints it.
pub fn thousands(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let digits = format!("{:.0}", x.abs().round());
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if x.round() < 0.0 {
        format!("-{out}")
    } else {
        out
    }
}

/// A down:up ratio: `1.5` -> `1.5:1`, `3` -> `3:1`.
pub fn ratio_text(x: f64) -> String {
    let s = format!("{x:.2}");
    format!("{}:1", s.trim_end_matches('0').trim_end_matches('.'))
}

/// `n` and its noun in the number it takes: `1 server`, `2 servers`, `1,024 servers`.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!(
        "{} {}",
        thousands(n as f64),
        if n == 1 { one } else { many }
    )
}

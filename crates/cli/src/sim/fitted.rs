//! `sim collective --fitted NAME=VALUE`: the model's fitted constants (sim's `fitted`)
//! replaced, as the validation's leave-one-source-out refits run them.

use crate::error::CliError;
use railyard_study::collective::Fitted;

/// The fitted constants `--fitted NAME=VALUE` gives (the shipped values for the rest).
pub(super) fn constants(given: &[String]) -> Result<Fitted, CliError> {
    let mut fitted = Fitted::default();
    let mut seen = std::collections::BTreeSet::new();
    for g in given {
        let Some((name, value)) = g.split_once('=') else {
            return Err(CliError::input(format!(
                "--fitted {g}: valid: NAME=VALUE with NAME one of {}",
                Fitted::replaceable_names().join(", ")
            )));
        };
        if !seen.insert(name) {
            return Err(CliError::input(format!(
                "--fitted {name} is given twice; give each constant once"
            )));
        }
        let v: f64 = value
            .parse()
            .map_err(|_| CliError::input(format!("--fitted {g}: `{value}` is not a number")))?;
        fitted
            .set(name, v)
            .map_err(|e| CliError::input(format!("--fitted: {e}")))?;
    }
    Ok(fitted)
}

/// The JSON key of the fitted constants `--fitted` replaced (given only when some are): name,
/// value and shipped value of each.
pub(super) fn replaced_key(fitted: &Fitted) -> Option<(&'static str, serde_json::Value)> {
    let replaced = fitted.replaced();
    (!replaced.is_empty()).then(|| {
        let list = replaced
            .iter()
            .map(|(n, v, s)| serde_json::json!({"name": n, "value": v, "shipped": s}))
            .collect();
        ("fitted_replaced", serde_json::Value::Array(list))
    })
}

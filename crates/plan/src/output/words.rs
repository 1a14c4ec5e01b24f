//! Numbers as the plan's texts print them: ratios (`1.5:1`, `-` for none), trimmed decimals, and
//! the singular of a kind of device.

pub(super) fn ratio(x: f64) -> String {
    if x == 0.0 {
        "-".to_string()
    } else {
        format!("{}:1", trim(x))
    }
}

pub(super) fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// One of a kind of attached device, as the networks name them in the plural (`server ports`,
/// `switches`, `PDUs`): `server port`, `switch`, `PDU`.
pub(super) fn singular(many: &str) -> String {
    let one = if many.ends_with("ches") {
        many.strip_suffix("es")
    } else {
        many.strip_suffix('s')
    };
    one.unwrap_or(many).to_string()
}

//! Every predicted figure with its error band (issue 36 item 4): the interval a measurement of the
//! figure may lie in, from the validation residuals of its kind of operation and scale. The
//! half-widths are data (crates/study/data/model-error.toml), each the 80th percentile of |error|
//! over named validation rows: collectives by issue 35's size bands (docs/validation.md, the
//! leave-one-source-out errors), training steps by the GPUs of the job (docs/validation-training.md,
//! the test runs only). `band_tests.rs` recomputes them from the pages, so they cannot drift from
//! the validation.
//!
//! A figure x predicted with half-width h carries [x / (1 + h), x / (1 - h)]: a prediction off by
//! at most h (relative to the measurement, as the pages score it) from any value in it. The
//! verdicts (`verdicts`) name a winner only where the best design's interval does not overlap the
//! next one's.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The table, compiled in.
const TABLE: &str = include_str!("../../data/model-error.toml");

/// The interval of one predicted figure and where its width comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBand {
    pub lo: f64,
    pub hi: f64,
    /// The half-width h, percent: the interval is [x / (1 + h), x / (1 - h)].
    pub half_width_percent: f64,
    /// The validation rows h comes from and the statistic taken of them.
    pub source: String,
}

impl ErrorBand {
    /// Whether the two intervals share a value: neither design is ahead beyond the model's error.
    pub fn overlaps(&self, other: &ErrorBand) -> bool {
        self.lo <= other.hi && other.lo <= self.hi
    }
}

/// What kind of prediction a figure is, for its band.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A collective's busbw or time at this message size, bytes.
    Collective { bytes: u64 },
    /// A training step (its time, tokens/s, a cost per token) of a job on this many GPUs.
    TrainingStep { gpus: u64 },
}

/// One row of the table: the largest size or scale it covers (`None`: no bound), the half-width,
/// percent, the rows it was read from (count) and the sentence naming them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Row {
    #[serde(alias = "band", alias = "scale")]
    pub name: String,
    #[serde(alias = "max_bytes", alias = "max_gpus")]
    pub max: Option<u64>,
    pub half_width_percent: f64,
    #[serde(alias = "rows", alias = "runs")]
    pub count: usize,
    pub source: String,
}

/// crates/study/data/model-error.toml.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Table {
    /// The percentile of |error| each half-width is (nearest rank).
    pub percentile: u32,
    /// By size band, smallest first.
    pub collective: Vec<Row>,
    /// By the job's GPUs, fewest first.
    pub training: Vec<Row>,
}

/// The table (parsed once; `band_tests.rs` holds it parsable and ordered).
pub fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| toml::from_str(TABLE).unwrap_or_else(|e| panic!("data/model-error.toml: {e}")))
}

/// The row of `kind`: the first whose bound covers it (the last has none).
pub fn row(kind: Kind) -> &'static Row {
    let t = table();
    let (rows, at) = match kind {
        Kind::Collective { bytes } => (&t.collective, bytes),
        Kind::TrainingStep { gpus } => (&t.training, gpus),
    };
    rows.iter()
        .find(|r| r.max.is_none_or(|m| at <= m))
        .unwrap_or_else(|| &rows[rows.len() - 1])
}

/// The band of `x`, a figure of `kind`.
pub fn band(x: f64, kind: Kind) -> ErrorBand {
    let r = row(kind);
    let h = r.half_width_percent / 100.0;
    ErrorBand {
        lo: x / (1.0 + h),
        hi: x / (1.0 - h),
        half_width_percent: r.half_width_percent,
        source: format!("{} ({})", r.source, r.name),
    }
}

/// The bands of a design's predicted figures, by their JSON keys: the busbw rows at `bytes`, the
/// training step's figures by the job's GPUs (`gpus`). Network cost and power are counted from
/// the catalog, not predicted: they have none.
pub fn bands_of(p: &super::Perf, bytes: u64, gpus: Option<u64>) -> BTreeMap<String, ErrorBand> {
    let mut out = BTreeMap::new();
    let busbw = Kind::Collective { bytes };
    for (key, x) in [
        ("allreduce_busbw_1g_gbs", p.allreduce_busbw_1g_gbs),
        ("alltoall_busbw_1g_gbs", p.alltoall_busbw_1g_gbs),
    ] {
        if let Some(x) = x {
            out.insert(key.to_string(), band(x, busbw));
        }
    }
    if let Some(gpus) = gpus {
        let step = Kind::TrainingStep { gpus };
        for (key, x) in [
            ("step_time_s", p.step_time_s),
            ("tokens_per_s", p.tokens_per_s),
            (
                "network_usd_per_million_tokens",
                p.network_usd_per_million_tokens,
            ),
            (
                "cluster_usd_per_million_tokens",
                p.cluster_usd_per_million_tokens,
            ),
        ] {
            if let Some(x) = x {
                out.insert(key.to_string(), band(x, step));
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "band_tests.rs"]
mod tests;

//! A comparison split over a job array (`compare --shard I/N -o DIR`) and merged back
//! (`railyard merge`): what a shard records of its designs and of the command's output, and the
//! one rendering of the comparison both the unsharded run and the merge print.

use super::{compare_table, compare_value, Compared};
use crate::shard::{self, MergeError};
use crate::tco::Assumptions;
use serde::{Deserialize, Serialize};

/// What the comparison's output needs beside its designs, as the command's flags gave it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Context {
    /// The model's name in the step rows (empty without one).
    pub model: String,
    /// The cost assumptions of the cost rows.
    pub costs: Assumptions,
    /// The line a calibration adds below the table (`calibrated by FILE (...)`).
    pub calibration_note: Option<String>,
    /// The `calibration` key it adds to the JSON.
    pub calibration_json: Option<serde_json::Value>,
    /// `--sharp` was given on the command line: refused when it changed no design.
    pub sharp_given: bool,
}

/// One design's result in a shard.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Evaluated {
    pub design: Compared,
    /// `--sharp on` reached this design and changed nothing it predicts.
    pub sharp_moot: bool,
}

/// The comparison as printed: the table fitted to `width` columns, or with `json` the JSON
/// object; the calibration said below the table or as the JSON's `calibration` key.
pub fn render(designs: &[Compared], c: &Context, json: bool, width: usize) -> String {
    if json {
        let mut v = compare_value(designs);
        if let (serde_json::Value::Object(m), Some(cal)) = (&mut v, &c.calibration_json) {
            m.insert("calibration".to_string(), cal.clone());
        }
        let mut text = serde_json::to_string_pretty(&v).unwrap_or_default();
        text.push('\n');
        return text;
    }
    let text = compare_table(designs, &c.model, &c.costs, width);
    match &c.calibration_note {
        Some(note) => format!("{text}{note}\n"),
        None => text,
    }
}

/// The refusal of `--sharp on` when it was given and changed no design it reached (`designs`:
/// each design's SHARP and whether SHARP was moot on it); `None` when it stands.
pub fn sharp_refusal(designs: &[(bool, bool)], sharp_given: bool) -> Option<&'static str> {
    let reached: Vec<&(bool, bool)> = designs.iter().filter(|(sharp, _)| *sharp).collect();
    (sharp_given && !reached.is_empty() && reached.iter().all(|(_, moot)| *moot)).then_some(
        "--sharp on has no effect on any design here: the predictions with SHARP off are \
         identical (NCCL runs none of the compared collectives on CollNet or NVLS across \
         servers: no all-reduce that spans servers picks them, and the all-gathers and \
         reduce-scatters have one GPU per server or no NVSwitch); leave it out, or compare \
         a layout whose data-parallel all-reduce spans servers with several GPUs on each \
         (--tp 1 --zero 0)",
    )
}

/// A shard's file: its designs (with their indexes among all `cases`) and the context.
pub fn shard_file(
    command: Vec<String>,
    at: shard::Shard,
    cases: usize,
    context: Context,
    results: Vec<shard::Case<Evaluated>>,
) -> String {
    shard::ShardFile::new(command, at, cases, context, results).to_text()
}

/// The shards of one comparison merged: the context and every design in order, or the refusal
/// the unsharded run would have given (`--sharp on` that changed no design).
pub fn merge(files: &[(String, String)]) -> Result<(Context, Vec<Compared>), MergeError> {
    let merged: shard::Merged<Context, Evaluated> = shard::merge(files)?;
    let moot: Vec<(bool, bool)> = merged
        .results
        .iter()
        .map(|e| (e.design.sharp, e.sharp_moot))
        .collect();
    if let Some(refusal) = sharp_refusal(&moot, merged.context.sharp_given) {
        return Err(MergeError(refusal.to_string()));
    }
    let designs = merged.results.into_iter().map(|e| e.design).collect();
    Ok((merged.context, designs))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--sharp on` is refused only when given and moot on every design it reached: a shard
    /// holding only moot designs cannot tell, the merge of all can.
    #[test]
    fn sharp_is_refused_only_when_moot_on_every_design_it_reached() {
        assert!(sharp_refusal(&[(true, true), (false, false)], true).is_some());
        assert!(sharp_refusal(&[(true, true), (true, false)], true).is_none());
        assert!(sharp_refusal(&[(true, true)], false).is_none());
        assert!(sharp_refusal(&[(false, false)], true).is_none());
    }
}

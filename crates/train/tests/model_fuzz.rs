//! Property-based fuzzing of the model-file parser (`--model-file`): whatever the numbers, `Model::parse`
//! returns a model whose parameter and FLOP arithmetic cannot overflow, or an error naming the file,
//! and never panics. The case count is bounded so the run stays short in CI; set PROPTEST_CASES to
//! fuzz longer. Failures are kept in model_fuzz.proptest-regressions beside this file.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use railyard_train::model::Model;

const MODELS: &[&str] = &[
    include_str!("../models/deepseek-v3-like.toml"),
    include_str!("../models/llama3-405b.toml"),
    include_str!("../models/mixtral-8x7b.toml"),
];

/// The numeric keys of a model file.
const KEYS: &[&str] = &[
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "ffn",
    "vocab",
    "seq",
    "experts",
    "shared_experts",
    "top_k",
    "expert_ffn",
    "dense_layers",
];

/// `text` with `key = ...` set to `value` (added when absent).
fn with_key(text: &str, key: &str, value: u64) -> String {
    let mut found = false;
    let mut out: Vec<String> = text
        .lines()
        .map(|l| {
            if l.split('=').next().map(str::trim) == Some(key) {
                found = true;
                format!("{key} = {value}")
            } else {
                l.to_string()
            }
        })
        .collect();
    if !found {
        out.insert(2, format!("{key} = {value}"));
    }
    out.join("\n")
}

fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..300,
        Just(1u64 << 10),
        Just((1u64 << 10) + 1),
        Just(1 << 17),
        Just(1 << 18),
        Just(1 << 20),
        Just(1 << 24),
        Just(u64::from(u32::MAX)),
        Just(i64::MAX as u64),
        any::<u64>().prop_map(|x| x >> 1),
    ]
}

fn check(text: &str) {
    if let Ok(m) = Model::parse(text, "m.toml") {
        // Debug builds check every product: any overflow panics here.
        let _ = m.params();
        let _ = m.routed_expert_params();
        let _ = m.active_matmul_params();
        assert!(m.train_flops_per_token(m.seq, true).is_finite());
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/model_fuzz.proptest-regressions",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn numbers_at_the_edges_never_overflow(
        base in 0..MODELS.len(),
        edits in prop::collection::vec((0..KEYS.len(), value()), 1..6),
    ) {
        let mut text = MODELS[base].to_string();
        for (k, v) in edits {
            text = with_key(&text, KEYS[k], v);
        }
        check(&text);
    }

    #[test]
    fn arbitrary_text_never_panics(s in any::<String>()) {
        check(&s);
    }
}

/// Every key at its largest accepted value at once.
#[test]
fn every_bound_at_once_stays_in_range() {
    let mut text = MODELS[0].to_string();
    for (k, v) in [
        ("layers", 1u64 << 10),
        ("hidden", 1 << 17),
        ("heads", 1),
        ("kv_heads", 1),
        ("ffn", 1 << 18),
        ("expert_ffn", 1 << 18),
        ("vocab", 1 << 24),
        ("seq", 1 << 20),
        ("experts", 1 << 10),
        ("shared_experts", 1 << 10),
        ("top_k", 1 << 10),
        ("dense_layers", 0),
    ] {
        text = with_key(&text, k, v);
    }
    let m = Model::parse(&text, "m.toml").unwrap();
    check(&text);
    assert!(m.params() < 1 << 60);
}

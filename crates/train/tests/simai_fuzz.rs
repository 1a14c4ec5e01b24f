//! Property-based fuzzing of the SimAI workload parser: whatever the text, `parse` returns a workload
//! or an error naming a line of the text and a field, and never panics. Bounded for CI; set
//! PROPTEST_CASES to fuzz longer.

use proptest::prelude::*;
use railyard_train::simai::parse;

/// A valid workload to mutate (the shapes AICB writes: tabs, `_EP` suffixes, sizes with NONE).
const VALID: &str = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 2 pp: 2 vpp: 1 ga: 2 all_gpus: 16 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 4096
3
grads\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tREDUCESCATTER_DP_EP\t8000\t100
attention\t-1\t2000\tALLGATHER\t1000\t4000\tREDUCESCATTER\t1000\t4000\tNONE\t0\t100
moe\t-1\t1\tALLTOALL_EP\t1000\t1\tALLTOALL_EP\t1000\t1\tALLREDUCE\t0\t100
";

fn check(text: &str) {
    match parse(text) {
        Ok(w) => {
            assert!(w.tp >= 1 && w.pp >= 1 && w.ga >= 1 && w.ep >= 1);
            let _ = w.dp();
        }
        Err(e) => {
            let lines = text.lines().count().max(1);
            assert!(
                e.line >= 1 && e.line <= lines.max(2),
                "line {} of {lines}: {e}",
                e.line
            );
            assert!(!e.field.is_empty() && !e.message.is_empty());
        }
    }
}

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("HYBRID_TRANSFORMER_FWD_IN_BCKWD".to_string()),
        Just("model_parallel_NPU_group:".to_string()),
        Just("checkpoints:".to_string()),
        Just("all_gpus:".to_string()),
        Just("pp_comm".to_string()),
        Just("ALLREDUCE_DP_EP".to_string()),
        Just("ALLTOALL".to_string()),
        Just("NONE".to_string()),
        Just("-1".to_string()),
        Just("\n".to_string()),
        Just("\t".to_string()),
        "[ -~]{0,12}",
        any::<u64>().prop_map(|n| n.to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in any::<String>()) {
        check(&s);
    }

    #[test]
    fn token_soup_never_panics(tokens in prop::collection::vec(token(), 0..60)) {
        check(&tokens.join(" "));
    }

    #[test]
    fn mutated_valid_input_never_panics(pos in 0usize..VALID.len(), byte in any::<u8>(), delete in any::<bool>()) {
        let mut bytes = VALID.as_bytes().to_vec();
        if delete {
            bytes.remove(pos);
        } else {
            bytes[pos] = byte;
        }
        check(&String::from_utf8_lossy(&bytes));
    }
}

#[test]
fn the_valid_sample_parses() {
    let w = parse(VALID).unwrap();
    assert_eq!(
        (w.tp, w.pp, w.ep, w.ga, w.dp(), w.pp_comm),
        (2, 2, 2, 2, 4, 4096)
    );
}

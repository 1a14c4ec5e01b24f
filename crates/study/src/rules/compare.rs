//! The rules of a comparison (`compare`, `report --compare`): a flag or a design's pair that
//! cannot change it, refused before any design is built, naming the flag (or the design and its
//! pair), what is missing and where it does matter. What each key reaches is the run keys'
//! table's ([`Reach`]): the training flags and layout pairs only the step of `--model`; `--algo`
//! only the all-reduce row of `--perf` (the step and the report's curves run NCCL's own choice);
//! routing, PXN, cables down and host memory only the simulations of `--perf` and `--model` (the
//! report's curves route D-mod-K with every cable up); SHARP and a calibration those and the
//! report's curves; `--seed` the cables `--fail-links` takes down and the ECMP hash of the busbw
//! rows (the step's ECMP hash has a fixed seed); queue pairs only that hash.

use super::{GivenKeys, NoEffect};
use railyard_spec::run::{
    Reach, RunKey, ALGO, CALIBRATION, FAIL_HOST_LINKS, FAIL_LINKS, HOST_MEMORY_GBS, PXN,
    QPS_PER_CONNECTION, ROUTING, SEED, SHARP, TRAINING_FLAGS,
};

/// One design of a comparison as its rules read it.
#[derive(Debug, Clone)]
pub struct DesignFacts {
    /// The design as the arguments named it (`dgx-h100-superpod:servers=4`).
    pub named: String,
    /// Its run pairs, each with its text (`routing=ecmp`).
    pub pairs: Vec<(&'static RunKey, String)>,
    /// Its busbw rows are routed by ECMP (its `routing=` pair's policy, else the flag's).
    pub ecmp: bool,
}

/// What a comparison's rules read: what it predicts, the flags' values the messages name, and
/// every design (the fabric as built, which takes the flags, among them without pairs).
#[derive(Debug, Clone)]
pub struct CompareFacts<'a> {
    /// `--model` or `--model-file`.
    pub model: bool,
    /// `--perf`.
    pub perf: bool,
    /// The report's busbw curves.
    pub curves: bool,
    /// The command has `--perf` (`compare`; `report --compare` has none), for the messages.
    pub offers_perf: bool,
    pub seed: u64,
    pub qps_per_connection: u32,
    /// `--fail-links` or `--fail-host-links` given a count.
    pub random_failures: bool,
    pub designs: &'a [DesignFacts],
}

impl CompareFacts<'_> {
    fn sims(&self) -> bool {
        self.perf || self.model
    }

    /// The designs whose busbw rows hash (ECMP).
    fn hashing(&self) -> impl Iterator<Item = &DesignFacts> {
        self.designs.iter().filter(|d| self.perf && d.ecmp)
    }

    fn own_qps(d: &DesignFacts) -> Option<&str> {
        d.pairs
            .iter()
            .find(|(k, _)| k.name == QPS_PER_CONNECTION.name)
            .map(|(_, text)| text.as_str())
    }

    fn ecmp_rows(&self) -> &'static str {
        if self.offers_perf {
            "the ECMP hash of --perf's busbw rows, on a design routed by ecmp (--routing ecmp or a routing=ecmp pair)"
        } else {
            "the ECMP hash of compare --perf's busbw rows (report --compare has none)"
        }
    }

    fn without_model(&self) -> &'static str {
        "has no effect without --model or --model-file: it lays out and prices the training step they predict"
    }

    fn without_perf(&self) -> &'static str {
        if self.offers_perf {
            "has no effect without --perf: it picks the algorithm of the all-reduce busbw row --perf simulates (a --model step runs NCCL's own choice per collective)"
        } else {
            "has no effect in report --compare: its busbw curves run NCCL's own choice of algorithm, as a --model step does per collective"
        }
    }

    fn without_sims(&self) -> &'static str {
        if self.offers_perf {
            "has no effect without --perf or --model: only their simulations route traffic, cross rails, take cables down or read host memory"
        } else {
            "has no effect in report --compare without --model: only the training step routes traffic, crosses rails, takes cables down or reads host memory (the busbw curves route D-mod-K with every cable up)"
        }
    }

    fn without_sharp(&self) -> &'static str {
        if self.offers_perf {
            "has no effect without --perf, --model or --html: only their simulations reduce in the switches or run calibrated"
        } else {
            "has no effect in report --compare without --model and with --no-sim: only the training step and the busbw curves reduce in the switches or run calibrated"
        }
    }
}

/// A rule of a comparison: `check` says why a flag given or a design's pair has no effect.
#[derive(Debug, Clone, Copy)]
pub struct CompareRule {
    pub name: &'static str,
    pub check: fn(&dyn GivenKeys, &CompareFacts) -> Option<NoEffect>,
}

/// Every rule of a comparison, in the order they are checked.
pub static COMPARE_RULES: [CompareRule; 11] = [
    CompareRule {
        name: "training-flag-without-model",
        check: |g, f| flags_without(g, &TRAINING_FLAGS.each(), !f.model, f.without_model()),
    },
    CompareRule {
        name: "layout-pair-without-model",
        check: |_, f| pair_without(f, Reach::TrainingStep, !f.model, f.without_model()),
    },
    CompareRule {
        name: "algo-without-perf",
        check: |g, f| flags_without(g, &[&ALGO], !f.perf, f.without_perf()),
    },
    CompareRule {
        name: "algo-pair-without-perf",
        check: |_, f| pair_without(f, Reach::AllReduceRow, !f.perf, f.without_perf()),
    },
    CompareRule {
        name: "simulation-flag-without-simulations",
        check: |g, f| {
            let keys = [
                &ROUTING,
                &PXN,
                &FAIL_LINKS,
                &FAIL_HOST_LINKS,
                &HOST_MEMORY_GBS,
            ];
            flags_without(g, &keys, !f.sims(), f.without_sims())
        },
    },
    CompareRule {
        name: "simulation-pair-without-simulations",
        check: |_, f| pair_without(f, Reach::Simulations, !f.sims(), f.without_sims()),
    },
    CompareRule {
        name: "sharp-or-calibration-without-simulations",
        check: |g, f| {
            let none = !f.sims() && !f.curves;
            flags_without(g, &[&SHARP, &CALIBRATION], none, f.without_sharp())
        },
    },
    CompareRule {
        name: "sharp-pair-without-simulations",
        check: |_, f| {
            let none = !f.sims() && !f.curves;
            pair_without(f, Reach::SimulationsAndCurves, none, f.without_sharp())
        },
    },
    CompareRule {
        name: "seed-without-randomness",
        check: seed_without_randomness,
    },
    CompareRule {
        name: "qps-per-connection-without-ecmp-rows",
        check: qps_without_ecmp_rows,
    },
    CompareRule {
        name: "qps-per-connection-pair-without-ecmp-rows",
        check: qps_pair_without_ecmp_rows,
    },
];

/// The keys of a table, by reference.
trait Each {
    fn each(&'static self) -> Vec<&'static RunKey>;
}

impl<const N: usize> Each for [RunKey; N] {
    fn each(&'static self) -> Vec<&'static RunKey> {
        self.iter().collect()
    }
}

/// The first of `keys` given, where `none` says nothing they reach runs.
fn flags_without(
    given: &dyn GivenKeys,
    keys: &[&'static RunKey],
    none: bool,
    why: &str,
) -> Option<NoEffect> {
    if !none {
        return None;
    }
    let key = keys.iter().find(|k| given.has(k))?;
    Some(NoEffect {
        key,
        message: format!("--{} {why}", key.name),
    })
}

/// A design's first run pair that reaches only `reach`, where `none` says nothing it reaches
/// runs, as the refusal names it.
fn pair_without(f: &CompareFacts, reach: Reach, none: bool, why: &str) -> Option<NoEffect> {
    if !none {
        return None;
    }
    f.designs.iter().find_map(|d| {
        let (key, text) = d.pairs.iter().find(|(k, _)| k.reach == reach)?;
        Some(NoEffect {
            key,
            message: format!("{text} (design {}) {why}", d.named),
        })
    })
}

fn seed_without_randomness(given: &dyn GivenKeys, f: &CompareFacts) -> Option<NoEffect> {
    (given.has(&SEED) && !f.random_failures && f.hashing().next().is_none()).then(|| NoEffect {
        key: &SEED,
        message: format!(
            "--seed {} has no effect here: it seeds the cables --fail-links and --fail-host-links take down and {}; no design here has either",
            f.seed,
            f.ecmp_rows()
        ),
    })
}

fn qps_without_ecmp_rows(given: &dyn GivenKeys, f: &CompareFacts) -> Option<NoEffect> {
    let all_own = f.hashing().all(|d| CompareFacts::own_qps(d).is_some());
    (given.has(&QPS_PER_CONNECTION) && all_own).then(|| NoEffect {
        key: &QPS_PER_CONNECTION,
        message: format!(
            "--qps-per-connection {} has no effect here: queue pairs matter only to {}, and no design here has such rows without its own qps-per-connection pair",
            f.qps_per_connection,
            f.ecmp_rows()
        ),
    })
}

fn qps_pair_without_ecmp_rows(_: &dyn GivenKeys, f: &CompareFacts) -> Option<NoEffect> {
    f.designs.iter().find_map(|d| {
        let text = CompareFacts::own_qps(d)?;
        (!(f.perf && d.ecmp)).then(|| NoEffect {
            key: &QPS_PER_CONNECTION,
            message: format!(
                "{text} (design {}) has no effect: queue pairs matter only to {}, and this design has none",
                d.named,
                f.ecmp_rows()
            ),
        })
    })
}

/// The first rule of a comparison that refuses a flag given or a design's pair.
pub fn compare_keys_in_effect(given: &dyn GivenKeys, facts: &CompareFacts) -> Result<(), NoEffect> {
    match COMPARE_RULES.iter().find_map(|r| (r.check)(given, facts)) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use railyard_spec::run::TP_FLAG;

    struct Keys(&'static [&'static str]);

    impl GivenKeys for Keys {
        fn has(&self, key: &RunKey) -> bool {
            self.0.contains(&key.name)
        }
    }

    fn facts(designs: &[DesignFacts]) -> CompareFacts<'_> {
        CompareFacts {
            model: false,
            perf: false,
            curves: false,
            offers_perf: true,
            seed: 7,
            qps_per_connection: 2,
            random_failures: false,
            designs,
        }
    }

    /// A flag is refused by its key where nothing it reaches runs, and not once it does; a pair
    /// by its own key, naming its design; a key no rule asks about is never refused.
    #[test]
    fn comparison_rules_refuse_by_key_where_nothing_reached_runs() {
        let none: [DesignFacts; 0] = [];
        let e = compare_keys_in_effect(&Keys(&["tp"]), &facts(&none)).unwrap_err();
        assert_eq!(e.key.name, TP_FLAG.name);
        assert!(
            e.message.starts_with("--tp has no effect without --model"),
            "{e}"
        );
        let modelled = CompareFacts {
            model: true,
            ..facts(&none)
        };
        assert_eq!(compare_keys_in_effect(&Keys(&["tp"]), &modelled), Ok(()));
        let designs = [DesignFacts {
            named: "a:routing=ecmp".into(),
            pairs: vec![(&ROUTING, "routing=ecmp".into())],
            ecmp: true,
        }];
        let e = compare_keys_in_effect(&Keys(&[]), &facts(&designs)).unwrap_err();
        assert_eq!(e.key.name, "routing");
        assert!(e
            .message
            .starts_with("routing=ecmp (design a:routing=ecmp) has no effect"));
        // With --perf the design's rows hash: the seed and queue pairs matter.
        let perf = CompareFacts {
            perf: true,
            ..facts(&designs)
        };
        assert_eq!(
            compare_keys_in_effect(&Keys(&["seed", "qps-per-connection"]), &perf),
            Ok(())
        );
        let e = compare_keys_in_effect(&Keys(&["seed"]), &facts(&none)).unwrap_err();
        assert!(e.message.starts_with("--seed 7 has no effect here"), "{e}");
        assert_eq!(compare_keys_in_effect(&Keys(&["width"]), &modelled), Ok(()));
    }
}

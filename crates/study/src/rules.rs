//! When a run key given cannot change the result: one table of rules ([`RULES`]), each naming
//! its key by the run keys' table ([`railyard_spec::run`], so a typo does not compile) and saying
//! from what it reads of the question why that key has no effect. Every front end asks the same
//! checker ([`step_keys_in_effect`], [`sharp_in_effect`]) with the keys it was given, so a key is
//! refused by the command line (`train --pxn on`) and by the web API (`{"pxn": "on"}`) with the
//! same message; each front end only names the key its own way around it (the CLI prints the
//! message, the web API answers `{"error": message, "field": key}`).
//!
//! The messages name the command line's flags (`--pxn`), the spelling the guide documents for
//! every key.

pub use railyard_spec::run::RunKey;
use railyard_spec::run::{PXN, SHARP};
use railyard_train::parallel::Parallelism;

/// A run key given where it cannot change the result: the key and why.
#[derive(Debug, Clone)]
pub struct NoEffect {
    pub key: &'static RunKey,
    pub message: String,
}

/// Alike when they name one key (a key is its name in the table) and say the same.
impl PartialEq for NoEffect {
    fn eq(&self, other: &NoEffect) -> bool {
        self.key.name == other.key.name && self.message == other.message
    }
}

impl std::fmt::Display for NoEffect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for NoEffect {}

/// Which run keys a front end was given (not defaulted): the CLI's flags on the command line,
/// the web API's keys in the request.
pub trait GivenKeys {
    fn has(&self, key: &RunKey) -> bool;
}

/// What a training step's rules read, known once the layout is resolved.
#[derive(Debug, Clone, Copy)]
pub struct StepFacts<'a> {
    /// The layout the step runs.
    pub par: &'a Parallelism,
    /// The layout was fitted to the GPU's memory (none was asked for), not given.
    pub fitted: bool,
    /// Compute NICs per server of the design.
    pub nics_per_server: u32,
}

/// What a rule reads: the step's layout and design before the step is simulated, or the step
/// simulated and whether SHARP changed it.
#[derive(Debug, Clone, Copy)]
pub enum When {
    /// Checked before the step runs, from its layout and design.
    Laid(fn(&StepFacts) -> Option<String>),
    /// Checked after the step ran with the key's value: the layout, and whether the same step
    /// with SHARP off differs.
    Stepped(fn(&Parallelism, bool) -> Option<String>),
}

/// A rule: given `key`, `when` says why it has no effect, if it has none.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub key: &'static RunKey,
    /// A short name for the rule, as tests and the guide list it.
    pub name: &'static str,
    pub when: When,
}

/// Every rule of the training step, in the order the front ends check them.
pub static RULES: [Rule; 3] = [
    Rule {
        key: &PXN,
        name: "pxn-without-cross-rail-traffic",
        when: When::Laid(pxn_without_cross_rail_traffic),
    },
    Rule {
        key: &PXN,
        name: "pxn-on-one-nic",
        when: When::Laid(pxn_on_one_nic),
    },
    Rule {
        key: &SHARP,
        name: "sharp-on-a-step-it-does-not-change",
        when: When::Stepped(sharp_does_not_change_the_step),
    },
];

/// `pxn` says how expert all-to-all and pipeline and context-parallel send/recv cross rails,
/// which a layout of EP 1, PP 1 and CP 1 has none of.
fn pxn_without_cross_rail_traffic(f: &StepFacts) -> Option<String> {
    let layout = if f.fitted {
        "the layout fitted to the GPU's memory"
    } else {
        "the layout given"
    };
    (f.par.ep <= 1 && f.par.pp <= 1 && f.par.cp <= 1).then(|| format!(
        "--pxn has no effect: {layout} (EP 1, PP 1, CP 1) has no expert all-to-all, pipeline or context-parallel send/recv, the traffic it routes across rails; give --ep, --pp or --cp"
    ))
}

/// One NIC per server: nothing crosses rails, so PXN relays nothing (a staged relay would only
/// serialise the transfers inside a server before those between servers).
fn pxn_on_one_nic(f: &StepFacts) -> Option<String> {
    (f.nics_per_server <= 1).then(|| {
        "--pxn has no effect on this design: it has one NIC per server, so no transfer crosses rails; give it with --nics-per-server 2 or more".to_string()
    })
}

/// `sharp` on where no collective of the step would reduce in the switches (the default ZeRO
/// layouts keep the all-reduce in a server and run one GPU per server in each data-parallel
/// all-gather and reduce-scatter): the same step with SHARP off is the test.
fn sharp_does_not_change_the_step(par: &Parallelism, changes: bool) -> Option<String> {
    (!changes).then(|| format!(
        "--sharp on has no effect on this step: NCCL runs none of its collectives on CollNet or NVLS across servers (TP {}, DP {}, ZeRO-{}: no all-reduce that spans servers picks them, and the all-gathers and reduce-scatters have one GPU per server or no NVSwitch); leave it out",
        par.tp, par.dp, par.zero
    ))
}

/// The first rule checked before the step runs that refuses a key given.
pub fn step_keys_in_effect(given: &dyn GivenKeys, facts: &StepFacts) -> Result<(), NoEffect> {
    for rule in &RULES {
        if let When::Laid(refuse) = rule.when {
            if given.has(rule.key) {
                if let Some(message) = refuse(facts) {
                    return Err(NoEffect {
                        key: rule.key,
                        message,
                    });
                }
            }
        }
    }
    Ok(())
}

/// The first rule checked after the step ran that refuses a key given: `sharp_on` says SHARP was
/// on, and `changes` (asked only then) whether the same step with SHARP off differs.
pub fn sharp_in_effect(
    given: &dyn GivenKeys,
    sharp_on: bool,
    par: &Parallelism,
    changes: &mut dyn FnMut() -> bool,
) -> Result<(), NoEffect> {
    if !sharp_on {
        return Ok(());
    }
    for rule in &RULES {
        if let When::Stepped(refuse) = rule.when {
            if given.has(rule.key) {
                if let Some(message) = refuse(par, changes()) {
                    return Err(NoEffect {
                        key: rule.key,
                        message,
                    });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Keys(&'static [&'static str]);

    impl GivenKeys for Keys {
        fn has(&self, key: &RunKey) -> bool {
            self.0.contains(&key.name)
        }
    }

    /// Llama 3 8B on 32 GPUs as `train` lays it out when asked nothing (EP 1, PP 1, CP 1), with
    /// `pp` pipeline stages.
    fn par(pp: u32) -> Parallelism {
        let model = railyard_train::model::Model::preset("llama3-8b").unwrap();
        let par = railyard_train::parallel::Layout::unasked()
            .resolve(32, 8, &model)
            .unwrap();
        assert_eq!((par.ep, par.pp, par.cp), (1, 1, 1));
        Parallelism { pp, ..par }
    }

    /// A key not given is never refused; given where the layout has no traffic for it, it is,
    /// and the one-NIC rule speaks after the layout's.
    #[test]
    fn pxn_is_refused_only_where_it_has_no_effect() {
        let p = par(1);
        let facts = StepFacts {
            par: &p,
            fitted: true,
            nics_per_server: 1,
        };
        assert_eq!(step_keys_in_effect(&Keys(&[]), &facts), Ok(()));
        let e = step_keys_in_effect(&Keys(&["pxn"]), &facts).unwrap_err();
        assert!(e.message.contains("the layout fitted"), "{e}");
        assert_eq!(e.key.name, "pxn");
        let p = par(2);
        let facts = StepFacts { par: &p, ..facts };
        let e = step_keys_in_effect(&Keys(&["pxn"]), &facts).unwrap_err();
        assert!(e.message.contains("one NIC per server"), "{e}");
        let facts = StepFacts {
            nics_per_server: 8,
            ..facts
        };
        assert_eq!(step_keys_in_effect(&Keys(&["pxn"]), &facts), Ok(()));
    }

    /// SHARP is tested only when on and given, and refused when the step does not change.
    #[test]
    fn sharp_is_refused_when_the_step_does_not_change() {
        let p = par(1);
        let mut asked = 0;
        let mut same = || {
            asked += 1;
            false
        };
        assert_eq!(
            sharp_in_effect(&Keys(&["sharp"]), false, &p, &mut same),
            Ok(())
        );
        assert_eq!(sharp_in_effect(&Keys(&[]), true, &p, &mut same), Ok(()));
        let e = sharp_in_effect(&Keys(&["sharp"]), true, &p, &mut same).unwrap_err();
        assert!(e.message.starts_with("--sharp on has no effect"), "{e}");
        assert_eq!(asked, 1);
        assert_eq!(
            sharp_in_effect(&Keys(&["sharp"]), true, &p, &mut || true),
            Ok(())
        );
    }
}

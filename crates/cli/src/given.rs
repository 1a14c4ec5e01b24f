//! Which flags the command line gave, as opposed to their defaults: a flag that cannot change a
//! command's result in the combination given (`--seed` with `--routing dmodk`, nothing random) is
//! refused by name, and a default is never refused.

use clap::parser::ValueSource;
use clap::ArgMatches;
use std::collections::BTreeSet;

/// The argument ids (clap's: a field's name, `qps_per_connection`) given on the command line.
#[derive(Debug, Clone, Default)]
pub struct Given(BTreeSet<String>);

impl Given {
    /// The ids `m` (the innermost subcommand's matches) holds from the command line.
    pub fn of(m: &ArgMatches) -> Given {
        Given(
            m.ids()
                .filter(|id| m.value_source(id.as_str()) == Some(ValueSource::CommandLine))
                .map(|id| id.as_str().to_string())
                .collect(),
        )
    }

    /// Whether the flag of argument id `id` was given.
    pub fn has(&self, id: &str) -> bool {
        self.0.contains(id)
    }
}

/// The matches of the innermost subcommand (`sim collective`'s, not `sim`'s).
pub fn innermost(m: &ArgMatches) -> &ArgMatches {
    match m.subcommand() {
        Some((_, sub)) => innermost(sub),
        None => m,
    }
}

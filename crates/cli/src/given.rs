//! Which flags the command line gave, as opposed to their defaults: a flag that cannot change a
//! command's result in the combination given (`--seed` with `--routing dmodk`, nothing random) is
//! refused by name, and a default is never refused.

use clap::parser::ValueSource;
use clap::ArgMatches;
use std::collections::{BTreeMap, BTreeSet};

/// A flag a rule asks about: clap's argument id (a field's name, `qps_per_connection`) and the
/// long flag a message names. Each is a const of [`flag`], so a misspelt flag in a rule does not
/// compile; a test holds every const to the argument clap has by that id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag {
    pub id: &'static str,
    pub long: &'static str,
}

macro_rules! flags {
    ($($name:ident = $id:literal, $long:literal;)*) => {
        $(pub const $name: Flag = Flag { id: $id, long: $long };)*
        /// Every flag a rule asks about.
        #[cfg(test)]
        pub const ALL: &[Flag] = &[$($name),*];
    };
}

/// The flags the "has no effect" rules of the commands ask about.
pub mod flag {
    use super::Flag;

    flags! {
        HOST_MEMORY_GBS = "host_memory_gbs", "--host-memory-gbs";
        SHARP = "sharp", "--sharp";
    }
}

/// The argument ids (clap's: a field's name, `qps_per_connection`) given on the command line, and
/// every argument's value as the command ran with it (given or clap's default), for the decision
/// report's run keys.
#[derive(Debug, Clone, Default)]
pub struct Given {
    ids: BTreeSet<String>,
    values: BTreeMap<String, Vec<String>>,
}

impl Given {
    /// The ids `m` (the innermost subcommand's matches) holds from the command line, and the
    /// values of every argument it holds.
    pub fn of(m: &ArgMatches) -> Given {
        let ids = m
            .ids()
            .filter(|id| m.value_source(id.as_str()) == Some(ValueSource::CommandLine))
            .map(|id| id.as_str().to_string())
            .collect();
        // `try_get_raw`: a group's id holds no values of its own and is skipped, not a panic.
        let values = m
            .ids()
            .filter_map(|id| {
                let raw = m.try_get_raw(id.as_str()).ok()??;
                let v = raw.map(|v| v.to_string_lossy().into_owned()).collect();
                Some((id.as_str().to_string(), v))
            })
            .collect();
        Given { ids, values }
    }

    /// The value(s) of the argument of id `id` as the command ran with it (given, or clap's
    /// default), space-separated; `None` where it is unset and has no default.
    pub fn value(&self, id: &str) -> Option<String> {
        self.values.get(id).map(|v| v.join(" "))
    }

    /// Whether `flag` was given.
    pub fn has(&self, flag: Flag) -> bool {
        self.ids.contains(flag.id)
    }

    /// Whether the argument of id `id` (as clap lists it) was given.
    pub fn has_id(&self, id: &str) -> bool {
        self.ids.contains(id)
    }
}

/// A run key is given when its flag is (clap's id is the key's name in snake_case, `pxn`,
/// `qps_per_connection`): study's rules ask by the key, so a typo does not compile.
impl railyard_study::rules::GivenKeys for Given {
    fn has(&self, key: &railyard_study::rules::RunKey) -> bool {
        self.ids.contains(&key.name.replace('-', "_"))
    }
}

/// The matches of the innermost subcommand (`sim collective`'s, not `sim`'s).
pub fn innermost(m: &ArgMatches) -> &ArgMatches {
    match m.subcommand() {
        Some((_, sub)) => innermost(sub),
        None => m,
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;
    use std::collections::BTreeMap;
    use std::path::Path;

    /// Every argument id of every (sub)command, with its long flag (`--NAME`) where it has one.
    fn ids(c: &clap::Command, out: &mut BTreeMap<String, Vec<Option<String>>>) {
        for a in c.get_arguments() {
            let long = a.get_long().map(|l| format!("--{l}"));
            out.entry(a.get_id().as_str().to_string())
                .or_default()
                .push(long);
        }
        for sub in c.get_subcommands() {
            ids(sub, out);
        }
    }

    /// Every flag the rules ask about is an argument of some command, by its id, with its long
    /// flag (a misspelt const name does not compile; a misspelt id or flag fails here).
    #[test]
    fn every_flag_asked_of_given_names_an_argument() {
        let mut known = BTreeMap::new();
        ids(&crate::Cli::command(), &mut known);
        for f in super::flag::ALL {
            let longs = known
                .get(f.id)
                .unwrap_or_else(|| panic!("{}: names no argument", f.id));
            assert!(
                longs.contains(&Some(f.long.to_string())),
                "the argument {} is not {}",
                f.id,
                f.long
            );
        }
        // No rule asks by a string any more.
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = vec![src];
        while let Some(p) = files.pop() {
            if p.is_dir() {
                files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else if p.extension().and_then(|e| e.to_str()) == Some("rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                let asked = ["has", "(\""].concat();
                assert!(
                    !text.contains(&asked),
                    "{}: asks Given by a string",
                    p.display()
                );
            }
        }
    }
}

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

/// A run key is given when its flag is (clap's id is the key's name in snake_case, `pxn`,
/// `qps_per_connection`): study's rules ask by the key, so a typo does not compile.
impl railyard_study::rules::GivenKeys for Given {
    fn has(&self, key: &railyard_study::rules::RunKey) -> bool {
        self.0.contains(&key.name.replace('-', "_"))
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

    /// The string literal opening `text`, if it is one (`"pp"` -> `pp`).
    fn literal(text: &str) -> Option<&str> {
        let rest = text.strip_prefix('"')?;
        Some(&rest[..rest.find('"')?])
    }

    /// `Given::has` takes clap's argument ids as strings, and a typo would pass silently (the flag
    /// never "given"): every literal id the sources ask about, `has(ID)`, names an argument, and
    /// every `(ID, FLAG)` pair of string literals the refusals list names an argument whose long
    /// flag is FLAG.
    #[test]
    fn every_id_asked_of_given_names_a_flag() {
        let mut known = BTreeMap::new();
        ids(&crate::Cli::command(), &mut known);
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = vec![src.clone()];
        let mut checked = 0;
        while let Some(p) = files.pop() {
            if p.is_dir() {
                files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            if p.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            for (i, _) in text.match_indices("has(\"") {
                let id = literal(&text[i + 4..]).unwrap();
                assert!(
                    known.contains_key(id),
                    "{}: has(\"{id}\") names no argument",
                    p.display()
                );
                checked += 1;
            }
            for (i, _) in text.match_indices("(\"") {
                let Some(id) = literal(&text[i + 1..]) else {
                    continue;
                };
                let after = &text[i + 1 + id.len() + 2..];
                let Some(flag) = after.strip_prefix(", ").and_then(literal) else {
                    continue;
                };
                if !flag.starts_with("--") || flag.contains(' ') || id.contains('-') {
                    continue;
                }
                let longs = known.get(id).unwrap_or_else(|| {
                    panic!("{}: (\"{id}\", \"{flag}\") names no argument", p.display())
                });
                assert!(
                    longs.contains(&Some(flag.to_string())),
                    "{}: the argument {id} is not {flag}",
                    p.display()
                );
                checked += 1;
            }
        }
        assert!(
            checked > 40,
            "only {checked} ids found: is the scan still reading the sources?"
        );
    }
}

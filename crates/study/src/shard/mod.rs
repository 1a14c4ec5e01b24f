//! Sweeps on a job array: a command's cases (a comparison's designs, say) split over N shards,
//! each run as one task of a scheduler's job array (`--shard I/N -o DIR`), and merged back
//! (`railyard merge DIR...`) into exactly what the unsharded run prints.
//!
//! A shard file records the whole command (every argument but `--shard` and `-o`), the shard's
//! index and count, a format version, how many cases the command has, what its output needs
//! beside the cases (the command's context), and each of its cases' results with the case's
//! index. Case `i` (0-based, in the order the unsharded run prints them) goes to shard
//! `i mod N + 1`, so a sweep's large designs spread over the shards rather than landing in one.
//!
//! [`merge`] refuses files of another format or version, commands that differ, shards missing
//! or given twice, and cases missing, given twice or in the wrong shard, each naming the file.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a shard file says it is (`format`).
pub const FORMAT: &str = "railyard-shard";

/// The version of the shard file this railyard writes and reads; bumped whenever a command's
/// results change form, so that shards of another railyard are refused rather than misread.
pub const VERSION: u32 = 1;

/// Shard `index` of `of` (1-based, as `--shard 2/4` and Slurm's `$SLURM_ARRAY_TASK_ID` from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub of: u32,
}

/// Most shards one sweep is split into.
pub const MAX_SHARDS: u32 = 100_000;

impl Shard {
    /// `I/N`, 1 <= I <= N <= [`MAX_SHARDS`].
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad =
            || format!("`{s}` is not I/N (shard I of N, 1 <= I <= N <= {MAX_SHARDS}), e.g. 2/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, of) = (
            i.trim().parse::<u32>().map_err(|_| bad())?,
            n.trim().parse::<u32>().map_err(|_| bad())?,
        );
        if index == 0 || of == 0 || index > of || of > MAX_SHARDS {
            return Err(bad());
        }
        Ok(Shard { index, of })
    }

    /// Whether case `case` (0-based) is this shard's.
    pub fn takes(&self, case: usize) -> bool {
        case % self.of as usize == (self.index - 1) as usize
    }

    /// The name of this shard's file for `command`: `compare-shard-2-of-4.json`.
    pub fn file_name(&self, command: &str) -> String {
        format!("{command}-shard-{}-of-{}.json", self.index, self.of)
    }

    /// Refuses a shard that would hold no case of `cases`, naming the largest count that works.
    pub fn check_cases(&self, cases: usize, what: &str) -> Result<(), String> {
        if (self.index as usize) > cases {
            return Err(format!(
                "--shard {}/{}: there are {cases} {what}, so shard {} of {} would have none; give N at most {cases}",
                self.index, self.of, self.index, self.of
            ));
        }
        Ok(())
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.of)
    }
}

/// One case's result, with its index among all the command's cases.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Case<R> {
    pub index: usize,
    pub result: R,
}

/// A shard file: the command, the shard, its context `C` and its cases' results `R`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardFile<C, R> {
    pub format: String,
    pub version: u32,
    /// The command as given, without `--shard` and `-o` (`["compare", "a", "b", "--model", ...]`).
    pub command: Vec<String>,
    pub shard: u32,
    pub of: u32,
    /// How many cases the whole command has.
    pub cases: usize,
    pub context: C,
    pub results: Vec<Case<R>>,
}

impl<C: Serialize, R: Serialize> ShardFile<C, R> {
    /// A shard's file of `command`'s `cases` cases.
    pub fn new(
        command: Vec<String>,
        shard: Shard,
        cases: usize,
        context: C,
        results: Vec<Case<R>>,
    ) -> Self {
        ShardFile {
            format: FORMAT.to_string(),
            version: VERSION,
            command,
            shard: shard.index,
            of: shard.of,
            cases,
            context,
            results,
        }
    }

    /// The file's text: JSON, keys in a fixed order, with a final newline.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// The command line as a shard records it: every argument but `--shard I/N` and `-o DIR` (in any
/// of clap's spellings: `--shard=I/N`, `--out DIR`, `--out=DIR`, `-oDIR`).
pub fn recorded_command(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut skip_next = false;
    for a in args {
        if skip_next {
            skip_next = false;
            continue;
        }
        match a.as_str() {
            "--shard" | "-o" | "--out" => skip_next = true,
            s if s.starts_with("--shard=") || s.starts_with("--out=") => {}
            s if s.starts_with("-o") && !s.starts_with("--") => {}
            _ => out.push(a.clone()),
        }
    }
    out
}

/// A shard file that cannot be merged, naming the file.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeError(pub String);

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The header every shard file starts with, read before its command's own parts.
#[derive(Deserialize)]
struct Header {
    format: Option<String>,
    version: Option<u32>,
}

/// The shards of one command, merged: its command, context (the first shard's) and every case's
/// result in the unsharded run's order.
#[derive(Debug, Clone)]
pub struct Merged<C, R> {
    pub command: Vec<String>,
    pub context: C,
    pub results: Vec<R>,
}

/// The command a shard file records (`compare`), read before its results are: to pick the
/// command that merges them.
pub fn command_of(name: &str, text: &str) -> Result<String, MergeError> {
    check_header(name, text)?;
    #[derive(Deserialize)]
    struct Command {
        command: Vec<String>,
    }
    let c: Command = serde_json::from_str(text)
        .map_err(|e| MergeError(format!("{name}: not a railyard shard file: {e}")))?;
    c.command
        .first()
        .cloned()
        .ok_or_else(|| MergeError(format!("{name}: the shard file records no command")))
}

fn check_header(name: &str, text: &str) -> Result<(), MergeError> {
    let h: Header = serde_json::from_str(text).map_err(|e| {
        MergeError(format!(
            "{name}: not a railyard shard file (JSON written by a command's --shard): {e}"
        ))
    })?;
    if h.format.as_deref() != Some(FORMAT) {
        return Err(MergeError(format!(
            "{name}: not a railyard shard file: its `format` is {}, not \"{FORMAT}\"",
            h.format
                .map_or("absent".to_string(), |f| format!("\"{f}\""))
        )));
    }
    match h.version {
        Some(VERSION) => Ok(()),
        v => Err(MergeError(format!(
            "{name}: shard file format version {}; this railyard reads version {VERSION}: rerun the shard with this railyard",
            v.map_or("absent".to_string(), |v| v.to_string())
        ))),
    }
}

/// Merges shard files (name, text), given in any order: every shard of one command, each once,
/// with every case once, in its own shard. The context is the first shard's (they are all one
/// command's, so all alike).
pub fn merge<C: DeserializeOwned, R: DeserializeOwned>(
    files: &[(String, String)],
) -> Result<Merged<C, R>, MergeError> {
    let mut read: Vec<(&str, ShardFile<C, R>)> = Vec::with_capacity(files.len());
    for (name, text) in files {
        check_header(name, text)?;
        let f: ShardFile<C, R> = serde_json::from_str(text)
            .map_err(|e| MergeError(format!("{name}: a damaged shard file: {e}")))?;
        read.push((name, f));
    }
    let Some((first_name, first)) = read.first() else {
        return Err(MergeError("no shard files to merge".into()));
    };
    let (command, of, cases) = (first.command.clone(), first.of, first.cases);
    for (name, f) in &read[1..] {
        if f.command != command {
            return Err(MergeError(format!(
                "{name} is a shard of another command than {first_name}:\n  {}\n  {}\nmerge the shards of one command",
                f.command.join(" "),
                command.join(" ")
            )));
        }
        if f.of != of || f.cases != cases {
            return Err(MergeError(format!(
                "{name} is shard {}/{} of {} cases, {first_name} shard {}/{of} of {cases}: merge the shards of one split",
                f.shard, f.of, f.cases, first.shard
            )));
        }
    }
    let mut by_shard: Vec<Option<&str>> = vec![None; of as usize];
    for (name, f) in &read {
        if f.shard == 0 || f.shard > of {
            return Err(MergeError(format!(
                "{name}: shard {} of {of} is no shard of the split",
                f.shard
            )));
        }
        if let Some(other) = by_shard[(f.shard - 1) as usize].replace(name) {
            return Err(MergeError(format!(
                "{name} and {other} are both shard {}/{of}: give each shard once",
                f.shard
            )));
        }
    }
    let missing: Vec<String> = (1..=of)
        .filter(|i| by_shard[(*i - 1) as usize].is_none())
        .map(|i| Shard { index: i, of }.file_name(&command[0]))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError(format!(
            "{} of {of} shards missing: {} (the shards given are {})",
            missing.len(),
            missing.join(", "),
            read.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        )));
    }
    let mut results: Vec<Option<R>> = (0..cases).map(|_| None).collect();
    let mut context = None;
    for (name, f) in read {
        let shard = Shard {
            index: f.shard,
            of: f.of,
        };
        for c in f.results {
            if c.index >= cases || !shard.takes(c.index) {
                return Err(MergeError(format!(
                    "{name}: case {} is not one of shard {shard}'s ({cases} cases): a damaged shard file",
                    c.index + 1
                )));
            }
            if results[c.index].replace(c.result).is_some() {
                return Err(MergeError(format!(
                    "{name}: case {} is given twice: a damaged shard file",
                    c.index + 1
                )));
            }
        }
        context.get_or_insert(f.context);
    }
    let results = results
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.ok_or_else(|| {
                MergeError(format!(
                    "{}: case {} of {cases} is missing: a damaged shard file",
                    by_shard[i % of as usize].unwrap_or_default(),
                    i + 1
                ))
            })
        })
        .collect::<Result<Vec<R>, _>>()?;
    Ok(Merged {
        command,
        // Some: there is at least one file.
        context: context.ok_or_else(|| MergeError("no shard files to merge".into()))?,
        results,
    })
}

#[cfg(test)]
mod tests;

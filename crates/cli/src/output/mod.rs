//! The output layer: one check every command's files pass through before any work, and files
//! that appear all together or not at all.
//!
//! Each command declares its path arguments ([`PathArgs`]: the inputs it reads, the files and
//! directories it writes, and the names a directory gets), and `main` checks them before the
//! command runs ([`PathArgs::check`]). The check resolves every path as the kernel does
//! ([`resolve::Place`]: `./x`, `d/../x`, symlinks, hard links) and refuses (exit 2, naming both
//! flags) an output that is one of the inputs or collides with another output (the same file, a
//! file inside another output's directory that it writes too, a directory inside an output file);
//! it also refuses an output that cannot be written where it is named (a directory where a file
//! goes, a file where a directory goes, a directory this user cannot write in). Only a checked
//! declaration hands out a [`Staging`], so a command cannot write a file the check did not see.
//!
//! Architecture invariant: no command writes over one of its inputs or one of its other outputs;
//! the check runs before any work, and the commit guards it again against every file read through
//! `io::read_input`.

pub mod resolve;
mod staging;

pub use staging::{commit_together, Staging};

use crate::error::CliError;
use resolve::Place;
use std::path::{Path, PathBuf};

/// The files a directory output writes into its directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Names {
    /// These (a run may write fewer of them).
    Exact(Vec<String>),
    /// Names known only from the work (`export lldp`: `DEVICE.json`, one per device): every name
    /// ending in `suffix`; `what` says them in messages.
    EndingIn {
        suffix: &'static str,
        what: &'static str,
    },
}

impl Names {
    /// [`Names::Exact`] of a fixed list.
    pub fn exact(names: &[&str]) -> Names {
        Names::Exact(names.iter().map(|n| n.to_string()).collect())
    }

    /// Whether a file of this name is one of them.
    pub fn allows(&self, name: &str) -> bool {
        match self {
            Names::Exact(names) => names.iter().any(|n| n == name),
            Names::EndingIn { suffix, .. } => ends_with(name, suffix),
        }
    }
}

/// A path argument as the command line gave it.
#[derive(Debug, Clone)]
struct Arg {
    /// The flag (`--out`) or argument (`LOG`) that named it.
    flag: String,
    path: PathBuf,
}

impl Arg {
    /// `--spec s.toml`: how a message names it.
    fn said(&self) -> String {
        format!("{} {}", self.flag, self.path.display())
    }
}

#[derive(Debug, Clone)]
enum Kind {
    File,
    Dir(Names),
}

#[derive(Debug, Clone)]
struct OutputArg {
    arg: Arg,
    kind: Kind,
}

/// A command's path arguments: what it reads and what it writes. Built by each command's
/// `paths()`, checked by `main` before the command runs.
#[derive(Debug, Clone, Default)]
pub struct PathArgs {
    inputs: Vec<Arg>,
    outputs: Vec<OutputArg>,
    /// Every output flag declared, given or not.
    declared: Vec<String>,
}

impl PathArgs {
    /// Inputs named by `flag` (one, an `Option`, or a list).
    pub fn inputs<P: AsRef<Path>>(
        mut self,
        flag: &str,
        paths: impl IntoIterator<Item = P>,
    ) -> Self {
        for p in paths {
            self.inputs.push(Arg {
                flag: flag.to_string(),
                path: p.as_ref().to_path_buf(),
            });
        }
        self
    }

    /// An output file named by `flag`, if given.
    pub fn output_file<P: AsRef<Path>>(self, flag: &str, path: Option<P>) -> Self {
        self.output(flag, path, Kind::File)
    }

    /// An output directory named by `flag`, if given, and the files it gets.
    pub fn output_dir<P: AsRef<Path>>(self, flag: &str, path: Option<P>, names: Names) -> Self {
        self.output(flag, path, Kind::Dir(names))
    }

    fn output<P: AsRef<Path>>(mut self, flag: &str, path: Option<P>, kind: Kind) -> Self {
        self.declared.push(flag.to_string());
        if let Some(p) = path {
            self.outputs.push(OutputArg {
                arg: Arg {
                    flag: flag.to_string(),
                    path: p.as_ref().to_path_buf(),
                },
                kind,
            });
        }
        self
    }

    /// The one check (see the module's docs): every output can be written where it is named, is
    /// none of the inputs and collides with no other output. Bad input (exit 2) naming both
    /// flags; nothing is read or written but a nameless probe file in each output's directory.
    pub fn check(self) -> Result<Outputs, CliError> {
        for o in &self.outputs {
            shape(o)?;
        }
        if !self.outputs.is_empty() {
            let inputs: Vec<(&Arg, Place)> = self
                .inputs
                .iter()
                .map(|a| (a, Place::followed(&a.path)))
                .collect();
            let claims: Vec<Claim> = self.outputs.iter().flat_map(claims_of).collect();
            for c in &claims {
                for (arg, place) in &inputs {
                    if let Some(m) = c.over_input(arg, place) {
                        return Err(CliError::input(m));
                    }
                }
            }
            for (i, a) in claims.iter().enumerate() {
                for b in &claims[i + 1..] {
                    if let Some(m) = a.collides(b).or_else(|| b.collides(a)) {
                        return Err(CliError::input(m));
                    }
                }
            }
        }
        Ok(Outputs {
            outputs: self.outputs,
            declared: self.declared,
        })
    }
}

/// What one output takes in the file system.
struct Claim<'a> {
    output: &'a OutputArg,
    place: Place,
    what: Claimed,
}

enum Claimed {
    /// The output file itself, or (`Some(name)`) a file its directory gets.
    File(Option<String>),
    /// The output directory.
    Dir,
    /// Every file of the output directory ending so.
    Ending(&'static str, &'static str),
}

fn claims_of(o: &OutputArg) -> Vec<Claim<'_>> {
    match &o.kind {
        Kind::File => vec![Claim {
            output: o,
            place: Place::entry(&o.arg.path),
            what: Claimed::File(None),
        }],
        Kind::Dir(names) => {
            let dir = Place::followed(&o.arg.path);
            // The directory first: a file output of its name is said to collide with it, not
            // with the files it gets.
            let mut out = vec![Claim {
                output: o,
                place: dir.clone(),
                what: Claimed::Dir,
            }];
            match names {
                Names::Exact(names) => {
                    for n in names {
                        out.push(Claim {
                            output: o,
                            place: dir.child(&o.arg.path, n),
                            what: Claimed::File(Some(n.clone())),
                        });
                    }
                }
                Names::EndingIn { suffix, what } => out.push(Claim {
                    output: o,
                    place: dir,
                    what: Claimed::Ending(suffix, what),
                }),
            }
            out
        }
    }
}

/// Whether `name` is `suffix` after something (`x.json`, not `.json`).
fn ends_with(name: &str, suffix: &str) -> bool {
    name.ends_with(suffix) && name.len() > suffix.len()
}

/// Whether `p` is a file directly in `dir` whose name ends in `suffix`.
fn ends_in(p: &Place, dir: &Place, suffix: &str) -> bool {
    p.path.parent() == Some(dir.path.as_path())
        && p.path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| ends_with(n, suffix))
}

impl Claim<'_> {
    /// How a message names the file claimed: `--out r.html`, `a file --png d writes
    /// (topology.png)`.
    fn file_said(&self) -> String {
        let arg = self.output.arg.said();
        match &self.what {
            Claimed::File(Some(name)) => format!("a file {arg} writes ({name})"),
            Claimed::Ending(_, what) => format!("a file {arg} writes ({what})"),
            Claimed::File(None) | Claimed::Dir => arg,
        }
    }

    /// The message when this output would write over input `arg` (at `place`).
    fn over_input(&self, arg: &Arg, place: &Place) -> Option<String> {
        let out = self.output.arg.said();
        let input = arg.said();
        let m = match &self.what {
            Claimed::File(None) if self.place.same_file(place) => {
                format!("{out} is also the input ({input})")
            }
            Claimed::File(Some(name)) if self.place.same_file(place) => {
                format!("{out} writes {name}, which is also the input ({input})")
            }
            Claimed::Ending(suffix, what) if ends_in(place, &self.place, suffix) => {
                format!("{out} writes {what}, and the input {input} has such a name")
            }
            _ => return None,
        };
        Some(format!("{m}; nothing was written: choose another output"))
    }

    /// The message when this output and `other` (of another flag) cannot both be written.
    fn collides(&self, other: &Claim) -> Option<String> {
        if std::ptr::eq(self.output, other.output) {
            return None;
        }
        let (a, b) = (self.file_said(), other.file_said());
        let m = match (&self.what, &other.what) {
            (Claimed::File(_), Claimed::File(_)) if self.place.same_file(&other.place) => {
                format!("{a} is also {b}")
            }
            (Claimed::File(_), Claimed::Ending(suffix, _))
                if ends_in(&self.place, &other.place, suffix) =>
            {
                format!("{a} is also {b}")
            }
            (Claimed::File(_), Claimed::Dir) if self.place.path == other.place.path => {
                format!("{a} is also the directory {b}")
            }
            (Claimed::File(_), _) if other.place.is_inside(&self.place) => {
                format!(
                    "{} lies inside {a}, which is a file",
                    other.output.arg.said()
                )
            }
            _ => return None,
        };
        Some(format!(
            "{m}: they cannot both be written; nothing was written (choose another output)"
        ))
    }
}

/// Refuses an output that cannot be written where it is named (see [`PathArgs::check`]).
fn shape(o: &OutputArg) -> Result<(), CliError> {
    let said = o.arg.said();
    let path = &o.arg.path;
    let dir = match &o.kind {
        Kind::File => {
            let (dir, _) =
                split_output(path).map_err(|e| CliError::input(format!("{said}: {e}")))?;
            place_takes_a_file(path).map_err(|m| CliError::input(format!("{said} {m}")))?;
            dir
        }
        Kind::Dir(names) => {
            if let Names::Exact(names) = names {
                for n in names {
                    place_takes_a_file(&path.join(n)).map_err(|m| {
                        CliError::input(format!("{said}: {} {m}", path.join(n).display()))
                    })?;
                }
            }
            path.clone()
        }
    };
    let existing = nearest_directory(&dir).map_err(|part| {
        let what = if matches!(o.kind, Kind::Dir(_)) && part == *path {
            format!("{said} exists")
        } else {
            format!("{said}: {} exists", part.display())
        };
        CliError::input(format!(
            "{what} and is not a directory; nothing was written (remove it or choose another output)"
        ))
    })?;
    // A nameless file (O_TMPFILE), gone when closed: whether this user may write here at all
    // (permissions, a read-only or immutable directory, a read-only file system).
    tempfile::tempfile_in(&existing).map_err(|e| {
        CliError::input(format!(
            "{said}: cannot write in {} ({e}); nothing was written",
            existing.display()
        ))
    })?;
    Ok(())
}

/// The nearest part of `dir` that exists, which must be a directory (or a link to one); `Err` with
/// the part that exists and is not one.
pub(crate) fn nearest_directory(dir: &Path) -> Result<PathBuf, PathBuf> {
    for part in dir.ancestors() {
        let part = if part.as_os_str().is_empty() {
            Path::new(".")
        } else {
            part
        };
        match std::fs::metadata(part) {
            Ok(meta) if meta.is_dir() => return Ok(part.to_path_buf()),
            Ok(_) => return Err(part.to_path_buf()),
            Err(_) => continue,
        }
    }
    Ok(PathBuf::from("."))
}

/// Whether a file can be renamed onto `path`: nothing is there, or a regular file, or a symlink
/// (replaced, not followed) that does not lead to something else. `Err` says what is in the way.
pub(crate) fn place_takes_a_file(path: &Path) -> Result<(), &'static str> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let regular = if meta.file_type().is_symlink() {
        std::fs::metadata(path).map_or(true, |m| m.is_file())
    } else {
        meta.is_file()
    };
    if regular {
        Ok(())
    } else {
        Err("exists and is not a regular file; nothing was written (remove it or choose another output)")
    }
}

/// The directory and file name of an output file (`dir/name` -> `dir`, `name`; a bare name is in
/// the working directory).
fn split_output(path: &Path) -> Result<(PathBuf, String), String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| "not a file name".to_string())?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name.to_string()))
}

/// The outputs of a command, checked; the only way to a [`Staging`].
#[derive(Debug, Default)]
pub struct Outputs {
    outputs: Vec<OutputArg>,
    declared: Vec<String>,
}

impl Outputs {
    fn find(&self, flag: &str) -> Option<&OutputArg> {
        // A flag the command never declared is a slip of its code, not an output left out.
        debug_assert!(
            self.declared.iter().any(|d| d == flag),
            "output {flag} was not declared in the command's paths()"
        );
        self.outputs.iter().find(|o| o.arg.flag == flag)
    }

    /// The staging of directory output `flag`; `None` when it was not given.
    pub fn dir(&self, flag: &str) -> Option<Staging> {
        let o = self.find(flag)?;
        match &o.kind {
            Kind::Dir(names) => Some(Staging::new(&o.arg.path, flag, names.clone())),
            Kind::File => None,
        }
    }

    /// Output file `flag`: a staging of its directory for that one name, and the name; `None` when
    /// it was not given.
    pub fn file(&self, flag: &str) -> Option<(Staging, String)> {
        let o = self.find(flag)?;
        let Kind::File = o.kind else { return None };
        // Checked in `shape`: the path has a file name.
        let (dir, name) = split_output(&o.arg.path).ok()?;
        Some((
            Staging::new(&dir, flag, Names::Exact(vec![name.clone()])),
            name,
        ))
    }

    /// Writes output file `flag` whole (see [`Staging`]); says on stderr that it did unless
    /// `quiet` (the command says so on stdout). Nothing when `flag` was not given.
    pub fn write_file(
        &self,
        flag: &str,
        bytes: impl Into<Vec<u8>>,
        quiet: bool,
    ) -> Result<(), CliError> {
        let Some((mut staging, name)) = self.file(flag) else {
            return Ok(());
        };
        staging.write(&name, bytes)?;
        if quiet {
            staging.commit_quietly()
        } else {
            staging.commit()
        }
    }
}

#[cfg(test)]
mod tests;

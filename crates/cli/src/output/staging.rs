//! Files that appear in their directory all together or not at all.

use super::resolve::Place;
use super::{nearest_directory, place_takes_a_file, Names};
use crate::error::CliError;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

/// Files that appear in their directory all together or not at all.
///
/// Until the commit nothing is in the output directory: files are held in memory, or (streamed,
/// [`Staging::create`]) in a nameless temporary file that vanishes with the process. The commit
/// writes them into a fresh hidden directory inside the output directory (same file system, so
/// renames are atomic), takes an exclusive lock on the output directory, so concurrent writers into
/// one directory commit one after the other and never mix, moves any previous outputs of the same
/// names aside, and renames every new file into place. If any step fails, the files already placed
/// are taken back and the previous outputs restored, so the directory holds the old set whole; if
/// taking back fails too (a second fault), no previous file is deleted: the message names where each
/// one is kept (`.railyard-previous-*`). A failed commit removes its hidden directory and any
/// output directory it created.
///
/// What is not covered: a process killed (SIGKILL, power loss) in the middle of the renames of a
/// commit can leave a mix; the staging directory (`.railyard-*`) it leaves says so.
pub struct Staging {
    dir: PathBuf,
    /// The flag of the output, for messages.
    flag: String,
    /// The names the output check saw this output write.
    names: Names,
    files: Vec<(String, Content)>,
}

enum Content {
    Bytes(Vec<u8>),
    /// Streamed into a nameless temporary file (cabling.csv is 45 MB at 131,072 GPUs).
    Spool(std::fs::File),
}

/// A rename, given so tests can make any one of them fail.
type Rename<'a> = dyn FnMut(&Path, &Path) -> std::io::Result<()> + 'a;

impl Staging {
    /// Only a checked declaration makes one (`Outputs::dir`, `Outputs::file`).
    pub(super) fn new(dir: &Path, flag: &str, names: Names) -> Staging {
        Staging {
            dir: dir.to_path_buf(),
            flag: flag.to_string(),
            names,
            files: Vec::new(),
        }
    }

    /// Refuses a name the output check did not see, or one staged twice: both are bugs, caught
    /// before anything is written.
    fn admit(&self, name: &str) -> Result<(), CliError> {
        let place = self.dir.join(name);
        if !self.names.allows(name) {
            return Err(CliError::failed(format!(
                "{} {} would write {}, which the output check did not see; nothing was written (a bug in railyard)",
                self.flag,
                self.dir.display(),
                place.display()
            )));
        }
        if self.files.iter().any(|(n, _)| n == name) {
            return Err(CliError::failed(format!(
                "{} is written twice; nothing was written (a bug in railyard)",
                place.display()
            )));
        }
        Ok(())
    }

    /// A file for `name` to stream into, empty and open for writing (a nameless temporary file
    /// until the commit); the path it will have, for messages.
    pub fn create(&mut self, name: &str) -> Result<(PathBuf, std::fs::File), CliError> {
        self.admit(name)?;
        let place = self.dir.join(name);
        let near = nearest_directory(&self.dir).unwrap_or_else(|_| PathBuf::from("."));
        let fail = |e: std::io::Error| {
            CliError::failed(format!("{}: {e}; nothing was changed", place.display()))
        };
        let spool = tempfile::tempfile_in(&near).map_err(fail)?;
        let handle = spool.try_clone().map_err(fail)?;
        self.files.push((name.to_string(), Content::Spool(spool)));
        Ok((place, handle))
    }

    /// Stages `name` with these bytes.
    pub fn write(&mut self, name: &str, bytes: impl Into<Vec<u8>>) -> Result<(), CliError> {
        self.admit(name)?;
        self.files
            .push((name.to_string(), Content::Bytes(bytes.into())));
        Ok(())
    }

    /// Puts every staged file in place, all or none (see [`Staging`]).
    /// Says on stderr what it wrote (`railyard: wrote out/bom.csv, out/cabling.csv`).
    pub fn commit(self) -> Result<(), CliError> {
        commit_together(vec![self], true)
    }

    /// [`Staging::commit`] for a command that says what it wrote on stdout itself.
    pub fn commit_quietly(self) -> Result<(), CliError> {
        commit_together(vec![self], false)
    }

    /// The paths the files will have, as the user named their directory.
    fn places(&self) -> Vec<String> {
        self.files
            .iter()
            .map(|(n, _)| {
                if self.dir == Path::new(".") {
                    n.clone()
                } else {
                    self.dir.join(n).display().to_string()
                }
            })
            .collect()
    }

    /// Moves the files staged in `other` (of the same directory) into this staging.
    fn absorb(&mut self, mut other: Staging) -> Result<(), CliError> {
        for (name, content) in std::mem::take(&mut other.files) {
            if self.files.iter().any(|(n, _)| *n == name) {
                return Err(CliError::failed(format!(
                    "{} is written by both {} and {}; nothing was written (a bug in railyard)",
                    self.dir.join(&name).display(),
                    self.flag,
                    other.flag
                )));
            }
            self.files.push((name, content));
        }
        Ok(())
    }

    /// Refuses, before anything is written, a file whose place is taken by something that is not a
    /// plain file (a directory of the same name: not ours to move aside), or that is a file this
    /// run read: the output check refuses that up front, and this guards every file read through
    /// `io::read_input`, declared or not.
    fn check_places(&self) -> Result<(), CliError> {
        let inputs = crate::io::inputs_read();
        for (name, _) in &self.files {
            let dest = self.dir.join(name);
            place_takes_a_file(&dest)
                .map_err(|m| CliError::input(format!("{} {m}", dest.display())))?;
            let place = Place::entry(&dest);
            if let Some(input) = inputs.iter().find(|i| i.place.same_file(&place)) {
                return Err(CliError::input(format!(
                    "{} {} would write {}, which is also the input ({} {}); nothing was written: choose another output",
                    self.flag,
                    self.dir.display(),
                    dest.display(),
                    input.flag,
                    input.path.display()
                )));
            }
        }
        Ok(())
    }
}

/// Commits files staged in several directories all together or not at all (`report -o r.html
/// --png DIR`): every destination is checked before anything moves, and if a later directory fails,
/// the earlier ones are taken back. Stagings of one directory are merged into one first (a
/// directory's lock is taken once), and directories are locked in a fixed order, so two writers
/// into the same directories cannot wait on each other. Says on stderr what it wrote if `say`.
pub fn commit_together(stagings: Vec<Staging>, say: bool) -> Result<(), CliError> {
    let written: Vec<String> = stagings.iter().flat_map(Staging::places).collect();
    commit_all_with(stagings, &mut |from, to| std::fs::rename(from, to))?;
    if say && !written.is_empty() {
        crate::io::say!("railyard: wrote {}", written.join(", "));
    }
    Ok(())
}

pub(super) fn commit_all_with(
    stagings: Vec<Staging>,
    rename: &mut Rename<'_>,
) -> Result<(), CliError> {
    // One staging per directory, in the order of their resolved paths.
    let mut by_dir: Vec<(PathBuf, Staging)> = Vec::new();
    for s in stagings {
        let key = Place::followed(&s.dir).path;
        match by_dir.iter_mut().find(|(k, _)| *k == key) {
            Some((_, first)) => first.absorb(s)?,
            None => by_dir.push((key, s)),
        }
    }
    by_dir.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, s) in &by_dir {
        s.check_places()?;
    }
    let mut prepared = Vec::new();
    for (_, s) in by_dir {
        prepared.push(Prepared::of(s)?);
    }
    let mut done: Vec<(&Prepared, Placed)> = Vec::new();
    for p in &prepared {
        match p.place(rename) {
            Ok(placed) => done.push((p, placed)),
            Err((error, mut problems)) => {
                for (p, placed) in done.into_iter().rev() {
                    problems.extend(p.undo(placed, rename));
                }
                return Err(if problems.is_empty() {
                    CliError::failed(format!("{error}; nothing was changed"))
                } else {
                    CliError::failed(format!(
                        "{error}; taking the commit back failed too: {}; every other file is as it was",
                        problems.join("; ")
                    ))
                });
            }
        }
    }
    // Dropping what was placed removes the previous outputs and releases the locks.
    drop(done);
    for p in &mut prepared {
        p.created.clear();
    }
    Ok(())
}

/// One directory's files written into its hidden staging directory, ready to be renamed in.
/// Dropped, it removes that directory and the output directories it created (if still empty).
struct Prepared {
    dir: PathBuf,
    names: Vec<String>,
    temp: Option<tempfile::TempDir>,
    /// Directories this commit created, outermost first.
    created: Vec<PathBuf>,
}

impl Prepared {
    fn of(s: Staging) -> Result<Prepared, CliError> {
        let unchanged = |path: &Path, e: std::io::Error| {
            CliError::failed(format!("{}: {e}; nothing was changed", path.display()))
        };
        let mut p = Prepared {
            dir: s.dir,
            names: Vec::new(),
            temp: None,
            created: Vec::new(),
        };
        // The directories missing on the way, outermost first, each created and remembered.
        let mut missing: Vec<&Path> = p
            .dir
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && std::fs::symlink_metadata(a).is_err())
            .collect();
        missing.reverse();
        let missing: Vec<PathBuf> = missing.into_iter().map(Path::to_path_buf).collect();
        for d in missing {
            std::fs::create_dir(&d).map_err(|e| unchanged(&d, e))?;
            p.created.push(d);
        }
        let temp = tempfile::Builder::new()
            .prefix(".railyard-staging-")
            .tempdir_in(&p.dir)
            .map_err(|e| unchanged(&p.dir, e))?;
        let at = temp.path().to_path_buf();
        p.temp = Some(temp);
        for (name, content) in s.files {
            let path = at.join(&name);
            let written = std::fs::File::create(&path).and_then(|mut f| match content {
                Content::Bytes(b) => f.write_all(&b),
                Content::Spool(mut spool) => {
                    spool.rewind()?;
                    std::io::copy(&mut spool, &mut f).map(|_| ())
                }
            });
            written.map_err(|e| unchanged(&p.dir.join(&name), e))?;
            p.names.push(name);
        }
        Ok(p)
    }

    fn temp_path(&self) -> &Path {
        // Invariant: `temp` is `Some` until `drop`.
        self.temp.as_ref().map_or(&self.dir, |t| t.path())
    }

    /// Moves the previous outputs aside and the staged files into place; on failure undoes its
    /// own steps and returns the error and what could not be undone.
    fn place(&self, rename: &mut Rename<'_>) -> Result<Placed, (String, Vec<String>)> {
        let at = |path: &Path, e: std::io::Error| (format!("{}: {e}", path.display()), Vec::new());
        // Writers into the same directory take turns from here on (an advisory lock on the
        // directory itself, released when `lock` closes).
        let lock = std::fs::File::open(&self.dir).map_err(|e| at(&self.dir, e))?;
        lock.lock().map_err(|e| at(&self.dir, e))?;
        let old = tempfile::Builder::new()
            .prefix(".railyard-previous-")
            .tempdir_in(&self.dir)
            .map_err(|e| at(&self.dir, e))?;
        let mut placed = Placed {
            old: Some(old),
            moved_aside: Vec::new(),
            placed: Vec::new(),
            _lock: lock,
        };
        let mut error = None;
        for name in &self.names {
            let dest = self.dir.join(name);
            // Whatever is there, a dangling symlink too, is moved aside to be put back.
            if std::fs::symlink_metadata(&dest).is_ok() {
                if let Err(e) = rename(&dest, &placed.old_path().join(name)) {
                    error = Some(format!("{}: {e}", dest.display()));
                    break;
                }
                placed.moved_aside.push(name.clone());
            }
        }
        if error.is_none() {
            for name in &self.names {
                let dest = self.dir.join(name);
                if let Err(e) = rename(&self.temp_path().join(name), &dest) {
                    error = Some(format!("{}: {e}", dest.display()));
                    break;
                }
                placed.placed.push(name.clone());
            }
        }
        match error {
            None => Ok(placed),
            Some(e) => Err((e, self.undo(placed, rename))),
        }
    }

    /// Takes back what [`Prepared::place`] did: the new files back into staging, the previous
    /// outputs back into place. What cannot be taken back is said, and a previous output that
    /// cannot be put back is kept where the message says, never deleted.
    fn undo(&self, mut p: Placed, rename: &mut Rename<'_>) -> Vec<String> {
        let mut problems = Vec::new();
        for name in p.placed.iter().rev() {
            let dest = self.dir.join(name);
            if let Err(e) = rename(&dest, &self.temp_path().join(name)) {
                // Where a previous output goes back, it replaces the new file; else the new file
                // is removed.
                if !p.moved_aside.contains(name) {
                    if let Err(e2) = std::fs::remove_file(&dest) {
                        problems.push(format!(
                            "the new {} could not be taken back ({e}) nor removed ({e2}) and stays",
                            dest.display()
                        ));
                    }
                }
            }
        }
        let mut keep = false;
        for name in p.moved_aside.iter().rev() {
            let dest = self.dir.join(name);
            let kept = p.old_path().join(name);
            if let Err(e) = rename(&kept, &dest) {
                keep = true;
                let now = if std::fs::symlink_metadata(&dest).is_ok() {
                    "holds the new file"
                } else {
                    "is missing"
                };
                problems.push(format!(
                    "the previous {} could not be put back ({e}) and is kept as {}; {} {now}",
                    dest.display(),
                    kept.display(),
                    dest.display()
                ));
            }
        }
        if keep {
            if let Some(old) = p.old.take() {
                let _kept = old.keep();
            }
        }
        problems
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let path = temp.path().to_path_buf();
            if let Err(e) = temp.close() {
                crate::io::say!(
                    "railyard: {} could not be removed ({e}); remove it by hand",
                    path.display()
                );
            }
        }
        // Emptied of what this run put there, a directory it created goes again (`remove_dir`
        // refuses a directory that is not empty).
        for d in self.created.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// What one directory's commit did, to undo it if a later directory fails. Dropping it removes
/// the previous outputs moved aside and releases the directory's lock.
struct Placed {
    /// Where the previous outputs were moved; `None` once kept after a failed undo.
    old: Option<tempfile::TempDir>,
    moved_aside: Vec<String>,
    placed: Vec<String>,
    _lock: std::fs::File,
}

impl Placed {
    fn old_path(&self) -> PathBuf {
        self.old
            .as_ref()
            .map(|t| t.path().to_path_buf())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;

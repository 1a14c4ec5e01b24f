//! Input files read whole up to a limit per kind; stdout that tolerates a closed pipe; files that
//! appear whole or not at all.

use crate::error::CliError;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// A kind of input file: the flag that names it and the most bytes railyard reads of it.
///
/// Every file the CLI reads goes through [`read_input`], so no input (`/dev/zero`, a runaway log) can
/// make railyard read without end or hold more than the limit in memory. Each limit is many times the
/// largest real file of its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Input {
    /// What the file is, for messages: `spec`, `flows file`.
    pub what: &'static str,
    /// The flag (or argument) that names it.
    pub flag: &'static str,
    /// Most bytes read.
    pub limit: u64,
}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

impl Input {
    /// Spec TOML (presets are about 1 KiB).
    pub const SPEC: Input = Input {
        what: "spec",
        flag: "--spec",
        limit: MIB,
    };
    /// Catalog overlay TOML (the whole built-in catalog is about 30 KiB).
    pub const CATALOG: Input = Input {
        what: "catalog file",
        flag: "--catalog",
        limit: 4 * MIB,
    };
    /// Prices TOML.
    pub const PRICES: Input = Input {
        what: "prices file",
        flag: "--prices",
        limit: MIB,
    };
    /// Model TOML (the presets are under 1 KiB).
    pub const MODEL: Input = Input {
        what: "model file",
        flag: "--model-file",
        limit: MIB,
    };
    /// `sim flows` flows: about 30 bytes a flow, so some 8 million flows.
    pub const FLOWS: Input = Input {
        what: "flows file",
        flag: "--flows",
        limit: 256 * MIB,
    };
    /// ibnetdiscover output. `railyard export ibnet` of the 131,072-GPU XDR design
    /// (crates/plan/benches/xdr-16k.toml) writes 55 MB; the per-port form (`-p`) is about twice that.
    pub const DISCOVERED: Input = Input {
        what: "ibnetdiscover output",
        flag: "--discovered",
        limit: 512 * MIB,
    };
    /// The site's names CSV of `verify --names`: one row per device (a 100,000-server site is a
    /// few MiB).
    pub const NAMES: Input = Input {
        what: "names CSV",
        flag: "--names",
        limit: 64 * MIB,
    };
    /// One device's LLDP neighbour table (`lldpcli -f json show neighbors`): about 1 KiB a neighbour.
    pub const LLDP: Input = Input {
        what: "LLDP neighbour table",
        flag: "--lldp",
        limit: 64 * MIB,
    };
    /// ibnetdiscover output given to `import ibnet` (as [`Input::DISCOVERED`]).
    pub const IMPORT: Input = Input {
        what: "ibnetdiscover output",
        flag: "import ibnet FILE",
        limit: 512 * MIB,
    };
    /// OpenSM LFT dump (`opensm-lfts.dump`): one line per LID per switch, so it grows with switches x
    /// hosts; 1 GiB holds the tables of a 2,048-switch fabric of 64k hosts.
    pub const LFTS: Input = Input {
        what: "OpenSM LFT dump",
        flag: "--routing opensm:FILE",
        limit: 1024 * MIB,
    };
    /// `--fabric FILE` (or `verify --plan FILE.json`): a fabric.json (9.5 MB for the 131,072-GPU
    /// XDR design, about 45 MB at the largest design railyard builds) or discovery output (as
    /// [`Input::DISCOVERED`]).
    pub const FABRIC: Input = Input {
        what: "fabric file",
        flag: "--fabric / --plan",
        limit: 512 * MIB,
    };
    /// `check DISCOVERED` (as [`Input::DISCOVERED`]).
    pub const CHECK: Input = Input {
        what: "ibnetdiscover output",
        flag: "check DISCOVERED",
        limit: 512 * MIB,
    };
    /// SimAI/AICB workload file (a few KiB per model).
    pub const WORKLOAD: Input = Input {
        what: "workload file",
        flag: "--workload",
        limit: 64 * MIB,
    };
    /// A flow-size CDF for `sim flows --generate cdf:file=PATH` (HPCC's are a dozen or two lines).
    pub const SIZE_CDF: Input = Input {
        what: "flow-size CDF",
        flag: "--generate cdf:file=",
        limit: MIB,
    };
    /// A calibration file from `railyard calibrate` (a few lines).
    pub const CALIBRATION: Input = Input {
        what: "calibration file",
        flag: "--calibration",
        limit: MIB,
    };
    /// nccl-tests output (`all_reduce_perf` and friends): a few KiB a run, more with `NCCL_DEBUG=INFO`.
    pub const NCCL_LOG: Input = Input {
        what: "nccl-tests log",
        flag: "LOG",
        limit: 64 * MIB,
    };
}

/// Bytes as people read them: `1 MiB`, `512 KiB`, `100 bytes`.
fn human(bytes: u64) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// Reads a whole input file as UTF-8 text, at most `input.limit` bytes of it. Only regular files are
/// read: a pipe, device (`/dev/zero`), socket or directory is refused before it is opened, and a file
/// past the limit is refused from its size, or after `limit + 1` bytes if it grows while being read.
/// Errors are bad input (exit 2) and name the file, the flag and the limit.
pub fn read_input(path: &Path, input: Input) -> Result<String, CliError> {
    use std::os::unix::fs::FileTypeExt;
    let name = path.display();
    let flag = input.flag;
    let bad = |m: String| CliError::input(format!("{name}: {m}"));
    let meta = std::fs::metadata(path).map_err(|e| bad(format!("{e} ({flag})")))?;
    let t = meta.file_type();
    if !t.is_file() {
        let kind = if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a pipe"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(bad(format!(
            "{kind}; {flag} takes a regular file ({} of at most {})",
            input.what,
            human(input.limit)
        )));
    }
    let too_big = |size: String| {
        bad(format!(
            "{size} is past the limit of {} for a {} ({flag}); railyard reads no more",
            human(input.limit),
            input.what
        ))
    };
    if meta.len() > input.limit {
        return Err(too_big(format!("{} bytes", meta.len())));
    }
    let file = std::fs::File::open(path).map_err(|e| bad(format!("{e} ({flag})")))?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(input.limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(format!("{e} ({flag})")))?;
    if bytes.len() as u64 > input.limit {
        return Err(too_big("the file grew while read and".to_string()));
    }
    String::from_utf8(bytes).map_err(|e| {
        bad(format!(
            "not UTF-8 text (byte {} is not valid UTF-8); {flag} takes a {} as text",
            e.utf8_error().valid_up_to(),
            input.what
        ))
    })
}

/// Prints to stdout. A closed pipe (`railyard plan | head`) ends the program quietly with status 0.
pub fn print(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(CliError::failed(format!("writing to stdout: {e}"))),
    }
}

/// Files that appear in their directory all together or not at all.
///
/// Each file is written into a fresh hidden directory inside the output directory (same file system, so
/// renames are atomic). [`Staging::commit`] then takes an exclusive lock on the output directory, so
/// concurrent writers into one directory commit one after the other and never mix, moves any previous
/// outputs of the same names aside, and renames every new file into place. If any step fails, the files
/// already placed are taken back and the previous outputs restored, so the directory holds the old set
/// whole. Dropped without a commit (an error on the way), the staging directory and everything in it
/// are removed, and an output directory this run created is removed again if it is still empty.
///
/// What is not covered: a process killed (SIGKILL, power loss) in the middle of the renames of a commit
/// can leave a mix; the staging directory (`.railyard-*`) it leaves says so.
pub struct Staging {
    dir: PathBuf,
    /// The hidden directory the files are written into; removed with everything in it when dropped.
    /// (An `Option` only so that `drop` can remove it before the output directory.)
    temp: Option<tempfile::TempDir>,
    /// The names staged, in the order they were created.
    names: Vec<String>,
    /// Whether this run created `dir` (removed again if nothing is committed and it is empty).
    created_dir: bool,
}

impl Staging {
    pub fn new(dir: &Path) -> Result<Staging, CliError> {
        check_output_dir(dir)?;
        let created_dir = !dir.exists();
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::failed(format!("{}: {e}", dir.display())))?;
        let temp = tempfile::Builder::new()
            .prefix(".railyard-staging-")
            .tempdir_in(dir)
            .map_err(|e| CliError::failed(format!("{}: {e}", dir.display())))?;
        Ok(Staging {
            dir: dir.to_path_buf(),
            temp: Some(temp),
            names: Vec::new(),
            created_dir,
        })
    }

    fn temp_path(&self) -> &Path {
        // Invariant: `temp` is `Some` until `drop`.
        self.temp.as_ref().map_or(&self.dir, |t| t.path())
    }

    /// A staged file for `name`, created empty and open for writing; its path is for error messages.
    pub fn create(&mut self, name: &str) -> Result<(PathBuf, std::fs::File), CliError> {
        if self.names.iter().any(|n| n == name) {
            return Err(CliError::failed(format!("{name} staged twice")));
        }
        let tmp = self.temp_path().join(name);
        let file = std::fs::File::create(&tmp)
            .map_err(|e| CliError::failed(format!("{}: {e}", tmp.display())))?;
        self.names.push(name.to_string());
        Ok((tmp, file))
    }

    /// Stages `name` with these bytes.
    pub fn write(&mut self, name: &str, bytes: &[u8]) -> Result<(), CliError> {
        let (tmp, mut file) = self.create(name)?;
        file.write_all(bytes)
            .map_err(|e| CliError::failed(format!("{}: {e}", tmp.display())))
    }

    /// Puts every staged file in place, all or none (see [`Staging`]).
    /// Says on stderr what it wrote (`railyard: wrote out/bom.csv, out/cabling.csv`).
    pub fn commit(self) -> Result<(), CliError> {
        self.commit_saying(true)
    }

    /// [`Staging::commit`] for a command that says what it wrote on stdout itself.
    pub fn commit_quietly(self) -> Result<(), CliError> {
        self.commit_saying(false)
    }

    fn commit_saying(self, say: bool) -> Result<(), CliError> {
        let written: Vec<String> = self
            .names
            .iter()
            .map(|n| {
                if self.dir == Path::new(".") {
                    n.clone()
                } else {
                    self.dir.join(n).display().to_string()
                }
            })
            .collect();
        self.commit_with(|from, to| std::fs::rename(from, to))?;
        if say && !written.is_empty() {
            eprintln!("railyard: wrote {}", written.join(", "));
        }
        Ok(())
    }

    /// [`Staging::commit`] with the rename given, so tests can make one fail.
    fn commit_with(
        self,
        rename: impl FnMut(&Path, &Path) -> std::io::Result<()>,
    ) -> Result<(), CliError> {
        commit_all_with(vec![self], rename)
    }

    /// Refuses, before anything moves, a staged name whose place is taken by something that is not a
    /// plain file (a directory of the same name, say): it is not ours to move aside.
    fn check_places(&self) -> Result<(), CliError> {
        for name in &self.names {
            let dest = self.dir.join(name);
            if let Ok(meta) = std::fs::symlink_metadata(&dest) {
                if !meta.is_file() {
                    return Err(CliError::input(format!(
                        "{} exists and is not a regular file; nothing was written (remove it or choose another output)",
                        dest.display()
                    )));
                }
            }
        }
        Ok(())
    }

    /// Moves the previous outputs aside and the staged files into place; on failure undoes its own
    /// steps. The returned [`Placed`] undoes the whole step later, or is dropped to keep it.
    fn place(
        &self,
        rename: &mut impl FnMut(&Path, &Path) -> std::io::Result<()>,
    ) -> Result<Placed, CliError> {
        let failed = |path: &Path, e: std::io::Error| {
            CliError::failed(format!("{}: {e}; nothing was changed", path.display()))
        };
        // Writers into the same directory take turns from here on (an advisory lock on the
        // directory itself, released when `lock` closes).
        let lock = std::fs::File::open(&self.dir).map_err(|e| failed(&self.dir, e))?;
        lock.lock().map_err(|e| failed(&self.dir, e))?;
        self.check_places()?;
        let old = tempfile::Builder::new()
            .prefix(".railyard-previous-")
            .tempdir_in(&self.dir)
            .map_err(|e| failed(&self.dir, e))?;
        let mut placed = Placed {
            old,
            moved_aside: Vec::new(),
            placed: Vec::new(),
            _lock: lock,
        };
        let mut result = Ok(());
        for name in &self.names {
            let dest = self.dir.join(name);
            if dest.exists() {
                if let Err(e) = rename(&dest, &placed.old.path().join(name)) {
                    result = Err(failed(&dest, e));
                    break;
                }
                placed.moved_aside.push(name.clone());
            }
        }
        if result.is_ok() {
            for name in &self.names {
                let dest = self.dir.join(name);
                if let Err(e) = rename(&self.temp_path().join(name), &dest) {
                    result = Err(failed(&dest, e));
                    break;
                }
                placed.placed.push(name.clone());
            }
        }
        match result {
            Ok(()) => Ok(placed),
            Err(e) => {
                self.undo(placed);
                Err(e)
            }
        }
    }

    /// Takes back what [`Staging::place`] did: the new files back into staging, the previous outputs
    /// back into place. Plain renames: the injected failure (tests) is for the forward path only.
    fn undo(&self, p: Placed) {
        for name in p.placed.iter().rev() {
            let _ = std::fs::rename(self.dir.join(name), self.temp_path().join(name));
        }
        for name in p.moved_aside.iter().rev() {
            let _ = std::fs::rename(p.old.path().join(name), self.dir.join(name));
        }
    }
}

/// What one directory's commit did, to undo it if a later directory fails. Dropping it removes the
/// previous outputs moved aside and releases the directory's lock.
struct Placed {
    old: tempfile::TempDir,
    moved_aside: Vec<String>,
    placed: Vec<String>,
    _lock: std::fs::File,
}

/// Commits files staged in several directories all together or not at all (`report -o r.html
/// --png DIR`): every destination is checked before anything moves, and if a later directory fails,
/// the earlier ones are taken back. Stagings of one directory are merged into one first (a
/// directory's lock is taken once), and directories are locked in a fixed order, so two writers
/// into the same directories cannot wait on each other.
pub fn commit_together(stagings: Vec<Staging>) -> Result<(), CliError> {
    let written: Vec<String> = stagings
        .iter()
        .flat_map(|s| {
            s.names.iter().map(|n| {
                if s.dir == Path::new(".") {
                    n.clone()
                } else {
                    s.dir.join(n).display().to_string()
                }
            })
        })
        .collect();
    commit_all_with(stagings, |from, to| std::fs::rename(from, to))?;
    if !written.is_empty() {
        eprintln!("railyard: wrote {}", written.join(", "));
    }
    Ok(())
}

fn commit_all_with(
    stagings: Vec<Staging>,
    mut rename: impl FnMut(&Path, &Path) -> std::io::Result<()>,
) -> Result<(), CliError> {
    // One staging per directory, in the order of their canonical paths.
    let mut by_dir: Vec<(PathBuf, Staging)> = Vec::new();
    for s in stagings {
        let key = std::fs::canonicalize(&s.dir).unwrap_or_else(|_| s.dir.clone());
        match by_dir.iter_mut().find(|(k, _)| *k == key) {
            Some((_, first)) => first.absorb(s)?,
            None => by_dir.push((key, s)),
        }
    }
    by_dir.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, s) in &by_dir {
        s.check_places()?;
    }
    let mut done: Vec<(&Staging, Placed)> = Vec::new();
    for (_, s) in &by_dir {
        match s.place(&mut rename) {
            Ok(p) => done.push((s, p)),
            Err(e) => {
                for (s, p) in done.into_iter().rev() {
                    s.undo(p);
                }
                return Err(e);
            }
        }
    }
    drop(done);
    for (_, s) in by_dir.iter_mut() {
        s.created_dir = false;
    }
    Ok(())
}

impl Staging {
    /// Moves the files staged in `other` (of the same directory) into this staging.
    fn absorb(&mut self, mut other: Staging) -> Result<(), CliError> {
        for name in std::mem::take(&mut other.names) {
            if self.names.contains(&name) {
                return Err(CliError::failed(format!("{name} staged twice")));
            }
            let from = other.temp_path().join(&name);
            let to = self.temp_path().join(&name);
            std::fs::rename(&from, &to)
                .map_err(|e| CliError::failed(format!("{}: {e}", to.display())))?;
            self.names.push(name);
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        drop(self.temp.take());
        // A directory this run created is removed again if it is empty (`remove_dir` refuses
        // otherwise): a failed run leaves nothing behind.
        if self.created_dir {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// Writes several files into `dir` so that none is half-written (see [`Staging`]).
pub fn write_files<N: AsRef<str>, B: AsRef<[u8]>>(
    dir: &Path,
    files: &[(N, B)],
) -> Result<(), CliError> {
    let mut staging = Staging::new(dir)?;
    for (name, bytes) in files {
        staging.write(name.as_ref(), bytes.as_ref())?;
    }
    staging.commit()
}

/// [`write_files`] for a command that says what it wrote on stdout itself.
pub fn write_files_quietly<N: AsRef<str>, B: AsRef<[u8]>>(
    dir: &Path,
    files: &[(N, B)],
) -> Result<(), CliError> {
    let mut staging = Staging::new(dir)?;
    for (name, bytes) in files {
        staging.write(name.as_ref(), bytes.as_ref())?;
    }
    staging.commit_quietly()
}

/// Refuses (exit 2) an output directory that is, or lies under, something that is not a directory
/// (`--png afile`), before anything is written.
pub fn check_output_dir(dir: &Path) -> Result<(), CliError> {
    // The nearest part of the path that exists must be a directory (or a link to one).
    for part in dir.ancestors().filter(|p| !p.as_os_str().is_empty()) {
        match std::fs::metadata(part) {
            Ok(meta) if meta.is_dir() => return Ok(()),
            Ok(_) => {
                let what = if part == dir {
                    part.display().to_string()
                } else {
                    format!("{}: {}", dir.display(), part.display())
                };
                return Err(CliError::input(format!(
                    "{what} exists and is not a directory; nothing was written (remove it or choose another output directory)"
                )));
            }
            Err(_) => continue,
        }
    }
    Ok(())
}

/// Refuses (exit 2) an output file whose place is taken by something that is not a regular file (a
/// directory of the same name), or whose directory cannot be one, before anything is written.
pub fn check_output_file(path: &Path) -> Result<(), CliError> {
    let (dir, _) = split_output(path)?;
    check_output_dir(&dir)?;
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.is_file() {
            return Err(CliError::input(format!(
                "{} exists and is not a regular file; nothing was written (remove it or choose another output)",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Refuses (exit 2) an output that is one of the command's inputs (`flag`: how the input was
/// given), before anything is written: writing it would replace the input with the output.
pub fn check_not_input(output: &Path, input: &Path, flag: &str) -> Result<(), CliError> {
    // The file as it resolves: an existing one by its canonical path, a new one by its directory's.
    let resolved = |p: &Path| -> Option<PathBuf> {
        std::fs::canonicalize(p).ok().or_else(|| {
            let (dir, name) = split_output(p).ok()?;
            Some(std::fs::canonicalize(dir).ok()?.join(name))
        })
    };
    match (resolved(output), resolved(input)) {
        (Some(o), Some(i)) if o == i => Err(CliError::input(format!(
            "{} is also the input ({flag}); nothing was written: choose another output",
            output.display()
        ))),
        _ => Ok(()),
    }
}

/// The directory and file name of an output path (`dir/name` -> `dir`, `name`; a bare name is in the
/// working directory), so the file can be written atomically beside its final place.
pub fn split_output(path: &Path) -> Result<(PathBuf, String), CliError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| CliError::input(format!("{}: not a file name", path.display())))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn read(dir: &Path, name: &str) -> String {
        std::fs::read_to_string(dir.join(name)).unwrap()
    }

    const SMALL: Input = Input {
        what: "spec",
        flag: "--spec",
        limit: 16,
    };

    /// Files within the limit are read whole; past it, or not regular files, they are refused with the
    /// file, the flag and the limit; `/dev/zero` is refused without being read.
    #[test]
    fn inputs_are_read_up_to_their_limit() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("ok.toml");
        std::fs::write(&ok, "0123456789abcdef").unwrap();
        assert_eq!(read_input(&ok, SMALL).unwrap(), "0123456789abcdef");
        let big = dir.path().join("big.toml");
        std::fs::write(&big, "0123456789abcdefX").unwrap();
        let e = read_input(&big, SMALL).unwrap_err();
        assert_eq!(e.status, 2);
        assert!(
            e.message.contains("big.toml")
                && e.message.contains("17 bytes")
                && e.message.contains("16 bytes")
                && e.message.contains("--spec"),
            "{e}"
        );
        for (path, kind) in [
            (Path::new("/dev/zero"), "a device"),
            (dir.path(), "a directory"),
        ] {
            let e = read_input(path, Input::SPEC).unwrap_err();
            assert!(
                e.message.contains(kind) && e.message.contains("1 MiB"),
                "{e}"
            );
        }
        let bin = dir.path().join("bin.toml");
        std::fs::write(&bin, b"ab\xffcd").unwrap();
        let e = read_input(&bin, SMALL).unwrap_err();
        assert!(e.message.contains("byte 2"), "{e}");
        let e = read_input(&dir.path().join("none.toml"), SMALL).unwrap_err();
        assert!(
            e.message.contains("none.toml") && e.message.contains("--spec"),
            "{e}"
        );
    }

    /// Staged files appear together on commit; an abandoned staging leaves nothing behind.
    #[test]
    fn staging_is_all_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Staging::new(dir.path()).unwrap();
        s.write("a.csv", b"a").unwrap();
        let (_, mut f) = s.create("b.csv").unwrap();
        f.write_all(b"b").unwrap();
        assert!(names(dir.path()).iter().all(|n| n.starts_with('.')));
        s.commit().unwrap();
        assert_eq!(names(dir.path()), ["a.csv", "b.csv"]);
        assert_eq!(std::fs::read(dir.path().join("b.csv")).unwrap(), b"b");

        let mut s = Staging::new(dir.path()).unwrap();
        s.write("c.csv", b"c").unwrap();
        drop(s);
        assert_eq!(names(dir.path()), ["a.csv", "b.csv"]);
    }

    /// Regression: a rename that failed halfway left a mix of new and old files and temp files.
    /// Whichever rename fails, the previous outputs stay whole and nothing else is left.
    #[test]
    fn a_failed_rename_leaves_the_previous_outputs_whole() {
        for fail_at in 0..6 {
            let dir = tempfile::tempdir().unwrap();
            let mut s = Staging::new(dir.path()).unwrap();
            for n in ["a", "b", "c"] {
                s.write(n, format!("old {n}").as_bytes()).unwrap();
            }
            s.commit().unwrap();
            // The new set adds a file the old one did not have.
            let mut s = Staging::new(dir.path()).unwrap();
            for n in ["a", "b", "c", "d"] {
                s.write(n, format!("new {n}").as_bytes()).unwrap();
            }
            let mut calls = 0;
            let err = s
                .commit_with(|from, to| {
                    calls += 1;
                    if calls > fail_at {
                        Err(std::io::Error::other("injected"))
                    } else {
                        std::fs::rename(from, to)
                    }
                })
                .unwrap_err();
            assert!(err.message.contains("nothing was changed"), "{err}");
            assert_eq!(
                names(dir.path()),
                ["a", "b", "c"],
                "failing rename {fail_at}"
            );
            for n in ["a", "b", "c"] {
                assert_eq!(read(dir.path(), n), format!("old {n}"));
            }
        }
    }

    /// Regression: `bom.csv` being a directory in the output directory made the commit fail halfway.
    #[test]
    fn an_output_name_taken_by_a_directory_is_refused_before_anything_moves() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.csv"), "old").unwrap();
        std::fs::create_dir(dir.path().join("b.csv")).unwrap();
        std::fs::write(dir.path().join("b.csv").join("keep"), "mine").unwrap();
        let mut s = Staging::new(dir.path()).unwrap();
        s.write("a.csv", b"new").unwrap();
        s.write("b.csv", b"new").unwrap();
        let err = s.commit().unwrap_err();
        assert!(err.message.contains("is not a regular file"), "{err}");
        assert_eq!(names(dir.path()), ["a.csv", "b.csv"]);
        assert_eq!(read(dir.path(), "a.csv"), "old");
        assert_eq!(read(&dir.path().join("b.csv"), "keep"), "mine");
    }

    /// Regression: `report -o r.html --png DIR` wrote r.html and then failed on DIR. Files staged in
    /// two directories appear together: whichever rename fails, both directories keep their previous
    /// outputs whole, and a directory this run created goes again.
    #[test]
    fn two_directories_commit_together_or_not_at_all() {
        for fail_at in 0..4 {
            let root = tempfile::tempdir().unwrap();
            let a = root.path().join("a");
            std::fs::create_dir(&a).unwrap();
            std::fs::write(a.join("r.html"), "old").unwrap();
            let b = root.path().join("b");
            let mut sa = Staging::new(&a).unwrap();
            sa.write("r.html", b"new").unwrap();
            let mut sb = Staging::new(&b).unwrap();
            sb.write("x.png", b"new").unwrap();
            sb.write("y.png", b"new").unwrap();
            let mut calls = 0;
            let err = commit_all_with(vec![sa, sb], |from, to| {
                calls += 1;
                if calls > fail_at {
                    Err(std::io::Error::other("injected"))
                } else {
                    std::fs::rename(from, to)
                }
            })
            .unwrap_err();
            assert!(err.message.contains("nothing was changed"), "{err}");
            assert_eq!(names(&a), ["r.html"], "failing rename {fail_at}");
            assert_eq!(read(&a, "r.html"), "old");
            assert!(!b.exists(), "failing rename {fail_at}");
        }
        // Without a failure both land; two stagings of one directory are one commit.
        let root = tempfile::tempdir().unwrap();
        let mut s1 = Staging::new(root.path()).unwrap();
        s1.write("r.html", b"r").unwrap();
        let mut s2 = Staging::new(root.path()).unwrap();
        s2.write("x.png", b"x").unwrap();
        commit_together(vec![s1, s2]).unwrap();
        assert_eq!(names(root.path()), ["r.html", "x.png"]);
    }

    /// An output directory that is a file, or lies under one, is bad input (exit 2).
    #[test]
    fn an_output_directory_that_is_a_file_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let f = root.path().join("afile");
        std::fs::write(&f, "x").unwrap();
        for dir in [f.clone(), f.join("sub")] {
            let e = Staging::new(&dir).err().unwrap();
            assert_eq!(e.status, 2);
            assert!(e.message.contains("exists and is not a directory"), "{e}");
        }
        assert_eq!(names(root.path()), ["afile"]);
    }

    /// A failed run into a directory that did not exist leaves no directory behind.
    #[test]
    fn a_created_output_directory_goes_again_when_nothing_is_committed() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("plan");
        let mut s = Staging::new(&dir).unwrap();
        s.write("a.csv", b"a").unwrap();
        drop(s);
        assert!(!dir.exists());
    }

    /// Regression: two writers into one directory gave a mixed set. Writers take turns at the
    /// commit, so the directory always holds one writer's whole set.
    #[test]
    fn concurrent_writers_never_mix() {
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..20 {
            std::thread::scope(|scope| {
                for writer in 0..4 {
                    let dir = dir.path();
                    scope.spawn(move || {
                        let mut s = Staging::new(dir).unwrap();
                        for n in ["a", "b", "c", "d", "e"] {
                            s.write(n, format!("{writer}").as_bytes()).unwrap();
                            std::thread::yield_now();
                        }
                        // Slow renames widen the window in which unlocked writers would mix.
                        s.commit_with(|from, to| {
                            std::thread::sleep(std::time::Duration::from_millis(1));
                            std::fs::rename(from, to)
                        })
                        .unwrap();
                    });
                }
            });
            let set: Vec<String> = ["a", "b", "c", "d", "e"]
                .iter()
                .map(|n| read(dir.path(), n))
                .collect();
            assert!(set.iter().all(|w| *w == set[0]), "mixed set: {set:?}");
            assert_eq!(names(dir.path()), ["a", "b", "c", "d", "e"]);
        }
    }
}

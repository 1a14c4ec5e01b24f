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
    /// SimAI/AICB workload file (a few KiB per model).
    pub const WORKLOAD: Input = Input {
        what: "workload file",
        flag: "--workload",
        limit: 64 * MIB,
    };
    /// fabric.json from `plan --out`: 9.5 MB for the 131,072-GPU XDR design, about 45 MB at the
    /// largest design railyard builds (`railyard_fabric::topo::MAX_PORTS`).
    pub const FABRIC_JSON: Input = Input {
        what: "fabric.json",
        flag: "--fabric / --plan",
        limit: 128 * MIB,
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

/// Prints a JSON value, pretty, with a final newline.
pub fn print_json(v: &serde_json::Value) -> Result<(), CliError> {
    let mut text = serde_json::to_string_pretty(v).map_err(|e| CliError::failed(e.to_string()))?;
    text.push('\n');
    print(&text)
}

/// Files staged beside their final places: each is written to a hidden temp file in the same
/// directory, and [`Staging::commit`] renames them all into place once every one is written. Dropped
/// without a commit (an error on the way), the temp files are removed, so nothing is half-written.
pub struct Staging {
    dir: PathBuf,
    /// (temp file, final path)
    temps: Vec<(PathBuf, PathBuf)>,
}

impl Staging {
    pub fn new(dir: &Path) -> Result<Staging, CliError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::failed(format!("{}: {e}", dir.display())))?;
        Ok(Staging {
            dir: dir.to_path_buf(),
            temps: Vec::new(),
        })
    }

    /// A temp file for `name`, created empty and open for writing.
    pub fn create(&mut self, name: &str) -> Result<(PathBuf, std::fs::File), CliError> {
        let tmp = self.dir.join(format!(".{name}.tmp-{}", std::process::id()));
        self.temps.push((tmp.clone(), self.dir.join(name)));
        let file = std::fs::File::create(&tmp)
            .map_err(|e| CliError::failed(format!("{}: {e}", tmp.display())))?;
        Ok((tmp, file))
    }

    /// Stages `name` with these bytes.
    pub fn write(&mut self, name: &str, bytes: &[u8]) -> Result<(), CliError> {
        let (tmp, mut file) = self.create(name)?;
        file.write_all(bytes)
            .map_err(|e| CliError::failed(format!("{}: {e}", tmp.display())))
    }

    /// Renames every staged file into place.
    pub fn commit(mut self) -> Result<(), CliError> {
        for (tmp, dest) in std::mem::take(&mut self.temps) {
            if let Err(e) = std::fs::rename(&tmp, &dest) {
                let _ = std::fs::remove_file(&tmp);
                return Err(CliError::failed(format!("{}: {e}", dest.display())));
            }
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        for (tmp, _) in &self.temps {
            let _ = std::fs::remove_file(tmp);
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
}

//! Input files read whole up to a limit per kind (and remembered, so no output is written over
//! one); stdout and stderr that never panic.

use crate::error::CliError;
use crate::output::resolve::Place;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

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
    /// A shard's results (`compare --shard`, read by `merge`): a few tens of KiB a design.
    pub const SHARD: Input = Input {
        what: "shard file",
        flag: "DIR",
        limit: 256 * MIB,
    };
    /// A job mix (`jobs --mix`): a few hundred bytes a job.
    pub const MIX: Input = Input {
        what: "job mix",
        flag: "--mix",
        limit: MIB,
    };
    /// A cluster trace (`jobs --replay`): some 30 bytes a job.
    pub const TRACE: Input = Input {
        what: "trace",
        flag: "--replay",
        limit: 256 * MIB,
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
    /// `verify --plan` / `check --plan` given a path: a fabric.json (as [`Input::FABRIC`]) or a
    /// spec (as [`Input::SPEC`]), checked to be a regular file before either reads it.
    pub const PLAN: Input = Input {
        what: "fabric.json or spec",
        flag: "--plan",
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

/// The metadata of `path` if it is a regular file; else bad input naming the file, what it is
/// (a pipe, a device such as `/dev/zero`, a directory, missing) and the flag that takes it.
pub fn regular_file(path: &Path, input: Input) -> Result<std::fs::Metadata, CliError> {
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
    Ok(meta)
}

/// Reads a whole input file as UTF-8 text, at most `input.limit` bytes of it. Only regular files are
/// read: a pipe, device (`/dev/zero`), socket or directory is refused before it is opened, and a file
/// past the limit is refused from its size, or after `limit + 1` bytes if it grows while being read.
/// Errors are bad input (exit 2) and name the file, the flag and the limit.
pub fn read_input(path: &Path, input: Input) -> Result<String, CliError> {
    let name = path.display();
    let flag = input.flag;
    let bad = |m: String| CliError::input(format!("{name}: {m}"));
    let meta = regular_file(path, input)?;
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
    remember(path, flag);
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

/// A file read through [`read_input`]: the commit refuses to write over it.
#[derive(Debug, Clone)]
pub struct InputRead {
    pub flag: &'static str,
    pub path: PathBuf,
    /// Where it is now (resolved when asked, so a file since removed holds no inode).
    pub place: Place,
}

/// Every input this process has read: the flag and the path as given.
static INPUTS_READ: Mutex<Vec<(&'static str, PathBuf)>> = Mutex::new(Vec::new());

fn remember(path: &Path, flag: &'static str) {
    let mut read = INPUTS_READ.lock().unwrap_or_else(|e| e.into_inner());
    if !read.iter().any(|(_, p)| p == path) {
        read.push((flag, path.to_path_buf()));
    }
}

/// The inputs read so far (see [`read_input`]).
pub fn inputs_read() -> Vec<InputRead> {
    let read = INPUTS_READ
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    read.into_iter()
        .map(|(flag, path)| InputRead {
            flag,
            place: Place::followed(&path),
            path,
        })
        .collect()
}

/// Set once stdout is a closed pipe: what follows is not printed.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Prints to stdout. A closed pipe (`railyard plan | head`) is no error: the rest of the output is
/// dropped and the command ends as it would have (status 0 after a successful run, as ripgrep
/// does). Any other error writing (`> /dev/full`) is a failure (exit 1).
pub fn print(text: &str) -> Result<(), CliError> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => Err(CliError::failed(format!("writing to stdout: {e}"))),
    }
}

/// Writes to stderr. A stderr that cannot be written (a closed pipe, `2>/dev/full`) loses the text;
/// it never ends or fails the run: stderr only carries messages about it.
pub fn to_stderr(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// `eprintln!` that never panics: a line to stderr through [`to_stderr`]. The crate denies
/// `eprintln!` and `println!` (clippy `print_stderr`, `print_stdout`), which panic when the stream
/// fails.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::io::to_stderr(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use say;

/// A command's JSON object with the keys the front end adds (the calibration applied, the cables
/// taken down, ...), pretty with a final newline; the object's keys stay in alphabetical order.
pub fn json_with<K: Into<String>>(
    mut v: serde_json::Value,
    keys: impl IntoIterator<Item = (K, serde_json::Value)>,
) -> String {
    if let serde_json::Value::Object(m) = &mut v {
        for (k, x) in keys {
            m.insert(k.into(), x);
        }
    }
    let mut text = serde_json::to_string_pretty(&v).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! Output: stdout that tolerates a closed pipe, and files that appear whole or not at all.

use crate::error::CliError;
use std::io::Write;
use std::path::{Path, PathBuf};

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

/// Writes several files into `dir` so that none is half-written: each goes to a hidden temp file in
/// the same directory first and is renamed into place once all are written.
pub fn write_files<N: AsRef<str>, B: AsRef<[u8]>>(
    dir: &Path,
    files: &[(N, B)],
) -> Result<(), CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::failed(format!("{}: {e}", dir.display())))?;
    let mut temps: Vec<(PathBuf, PathBuf)> = Vec::with_capacity(files.len());
    let result = (|| {
        for (name, text) in files {
            let name = name.as_ref();
            let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
            temps.push((tmp.clone(), dir.join(name)));
            std::fs::write(&tmp, text)
                .map_err(|e| CliError::failed(format!("{}: {e}", tmp.display())))?;
        }
        for (tmp, dest) in &temps {
            std::fs::rename(tmp, dest)
                .map_err(|e| CliError::failed(format!("{}: {e}", dest.display())))?;
        }
        Ok(())
    })();
    if result.is_err() {
        for (tmp, _) in &temps {
            let _ = std::fs::remove_file(tmp);
        }
    }
    result
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

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

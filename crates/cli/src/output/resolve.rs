//! Where a path leads: the one model of "the same file" that the output check, the commit's guard
//! and the inputs read share.
//!
//! Two paths name the same file when they resolve to the same place (`x`, `./x`, `d/../x`,
//! `/abs/x`, a path through a symlinked directory) or when the files there now are one file
//! (device and inode: a hard link, or a symlink to it).

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// A place in the file system, resolved as the kernel resolves a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// Absolute, every symlink of the part that exists followed and `.` and `..` resolved; the part
    /// that does not exist yet (a new output) appended as named.
    pub path: PathBuf,
    /// Device and inode of the file there now, symlinks followed, if there is one.
    pub id: Option<(u64, u64)>,
}

impl Place {
    /// What an input (or an output directory) names: followed through every symlink to the file
    /// or directory itself.
    pub fn followed(p: &Path) -> Place {
        Place {
            path: canonical(p),
            id: file_id(p),
        }
    }

    /// What an output file names: the entry in its directory. Railyard writes a file by renaming a
    /// new one onto its name, which replaces a symlink there instead of writing through it, so the
    /// last part is not followed; the id is still the file it points to now, so an output that is a
    /// link to an input is caught as that input.
    pub fn entry(p: &Path) -> Place {
        let path = match (p.parent(), p.file_name()) {
            (Some(dir), Some(name)) => {
                let dir = if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                };
                canonical(dir).join(name)
            }
            _ => canonical(p),
        };
        Place {
            path,
            id: file_id(p),
        }
    }

    /// File `name` in this directory (`dir` as given, to look at the file there now).
    pub fn child(&self, dir: &Path, name: &str) -> Place {
        Place {
            path: self.path.join(name),
            id: file_id(&dir.join(name)),
        }
    }

    /// Whether the two are one file: one place, or one file there now.
    pub fn same_file(&self, other: &Place) -> bool {
        self.path == other.path || (self.id.is_some() && self.id == other.id)
    }

    /// Whether this lies inside directory `dir` (at any depth), not `dir` itself.
    pub fn is_inside(&self, dir: &Place) -> bool {
        self.path != dir.path && self.path.starts_with(&dir.path)
    }
}

/// Device and inode of the file `p` names now (symlinks followed).
fn file_id(p: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

/// `p` made absolute and canonical as far as it exists, the rest appended with `.` and `..`
/// applied to the names (a part that does not exist has no symlinks to follow).
fn canonical(p: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(p) {
        return c;
    }
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    let parts: Vec<Component> = abs.components().collect();
    // The longest leading part that resolves; the root always does.
    let (mut out, rest) = (1..parts.len())
        .rev()
        .find_map(|k| {
            let head: PathBuf = parts[..k].iter().collect();
            std::fs::canonicalize(&head).ok().map(|c| (c, &parts[k..]))
        })
        .unwrap_or_else(|| {
            (
                parts.iter().take(1).collect(),
                parts.get(1..).unwrap_or(&[]),
            )
        });
    for part in rest {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every spelling of one file resolves to one place; a new file under a new directory too.
    #[test]
    fn spellings_of_one_file_are_one_place() {
        let root = tempfile::tempdir().unwrap();
        let r = std::fs::canonicalize(root.path()).unwrap();
        let d = r.join("d");
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("x"), "x").unwrap();
        std::os::unix::fs::symlink(&d, r.join("ld")).unwrap();
        std::os::unix::fs::symlink(d.join("x"), r.join("lx")).unwrap();
        std::fs::hard_link(d.join("x"), r.join("hx")).unwrap();
        let x = Place::followed(&d.join("x"));
        for p in [
            d.join("./x"),
            d.join("../d/x"),
            r.join("ld/x"),
            r.join("lx"),
            r.join("hx"),
            r.join("new/../d/x"),
        ] {
            assert!(Place::followed(&p).same_file(&x), "{}", p.display());
        }
        // The output `lx` is its own entry (a write replaces the link) but still the same file now.
        let lx = Place::entry(&r.join("lx"));
        assert_eq!(lx.path, r.join("lx"));
        assert!(lx.same_file(&x));
        // Not yet there: resolved through what exists.
        let new = Place::entry(&r.join("ld/new/./sub/../y"));
        assert_eq!(new.path, d.join("new/y"));
        assert!(!new.same_file(&x));
        assert!(new.is_inside(&Place::followed(&d)));
    }
}

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

/// A staging of `dir` that takes any name.
fn staging(dir: &Path) -> Staging {
    Staging::new(
        dir,
        "--out",
        Names::EndingIn {
            suffix: "",
            what: "any file",
        },
    )
}

/// A rename that fails (EIO, as `strace -e inject=rename:error=EIO` makes it) on the calls
/// numbered in `fail` (counted from 1).
fn failing_on(fail: &[usize]) -> impl FnMut(&Path, &Path) -> std::io::Result<()> + '_ {
    let mut calls = 0;
    move |from, to| {
        calls += 1;
        if fail.contains(&calls) {
            Err(std::io::Error::from_raw_os_error(5))
        } else {
            std::fs::rename(from, to)
        }
    }
}

/// Staged files appear together on commit; until then nothing is in the output directory, and an
/// abandoned staging leaves nothing behind.
#[test]
fn staging_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = staging(dir.path());
    s.write("a.csv", "a").unwrap();
    let (_, mut f) = s.create("b.csv").unwrap();
    f.write_all(b"b").unwrap();
    assert!(names(dir.path()).is_empty());
    s.commit().unwrap();
    assert_eq!(names(dir.path()), ["a.csv", "b.csv"]);
    assert_eq!(std::fs::read(dir.path().join("b.csv")).unwrap(), b"b");

    let mut s = staging(dir.path());
    s.write("c.csv", "c").unwrap();
    drop(s);
    assert_eq!(names(dir.path()), ["a.csv", "b.csv"]);
}

/// A name the output check did not see, or one staged twice, is refused before anything is
/// written.
#[test]
fn names_the_check_did_not_see_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Staging::new(dir.path(), "--png", Names::exact(&["topology.png"]));
    s.write("topology.png", "t").unwrap();
    let e = s.write("cost.png", "c").unwrap_err();
    assert!(e.message.contains("the output check did not see"), "{e}");
    let e = s.write("topology.png", "t").unwrap_err();
    assert!(e.message.contains("written twice"), "{e}");
    assert!(names(dir.path()).is_empty());
}

/// Three previous outputs and a staging of four new files (one the old set did not have).
fn old_and_new(dir: &Path) -> Staging {
    let mut s = staging(dir);
    for n in ["a", "b", "c"] {
        s.write(n, format!("old {n}")).unwrap();
    }
    s.commit().unwrap();
    let mut s = staging(dir);
    for n in ["a", "b", "c", "d"] {
        s.write(n, format!("new {n}")).unwrap();
    }
    s
}

/// Regression: a rename that failed halfway left a mix of new and old files and temp files.
/// Whichever rename fails, the previous outputs stay whole and nothing else is left.
#[test]
fn a_failed_rename_leaves_the_previous_outputs_whole() {
    for fail_at in 1..=7 {
        let dir = tempfile::tempdir().unwrap();
        let s = old_and_new(dir.path());
        let err = commit_all_with(vec![s], &mut failing_on(&[fail_at])).unwrap_err();
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

/// Regression (issue 33): when a rename of the commit failed and the rename that undid it failed
/// too (`strace -e inject=rename:error=EIO:when=5..6`), the previous file was deleted with the
/// staging while the message said nothing was changed. Whichever two renames fail, every previous
/// output is either back in place or kept where the message names it, and the message says what
/// happened.
#[test]
fn regression_a_failed_undo_deleted_the_previous_outputs() {
    for first in 1..=7 {
        for second in first + 1..=first + 7 {
            let dir = tempfile::tempdir().unwrap();
            let s = old_and_new(dir.path());
            let err = commit_all_with(vec![s], &mut failing_on(&[first, second])).unwrap_err();
            let m = &err.message;
            let case = format!("renames {first} and {second} fail: {m}");
            let mut whole = true;
            for n in ["a", "b", "c"] {
                let place = dir.path().join(n);
                if std::fs::read_to_string(&place).ok() == Some(format!("old {n}")) {
                    continue;
                }
                whole = false;
                // "the previous DIR/n could not be put back (...) and is kept as KEPT; ..."
                let said = format!("the previous {} could not be put back", place.display());
                let at = m.find(&said).unwrap_or_else(|| panic!("{case}"));
                let kept = m[at..]
                    .split("is kept as ")
                    .nth(1)
                    .and_then(|r| r.split(';').next())
                    .unwrap_or_else(|| panic!("{case}"));
                assert_eq!(
                    std::fs::read_to_string(kept).unwrap(),
                    format!("old {n}"),
                    "{case}"
                );
            }
            if std::fs::symlink_metadata(dir.path().join("d")).is_ok() {
                whole = false;
                assert!(m.contains("/d could not be taken back"), "{case}");
            }
            if whole {
                assert!(m.ends_with("nothing was changed"), "{case}");
                let left: Vec<String> = names(dir.path())
                    .into_iter()
                    .filter(|n| n.starts_with('.'))
                    .collect();
                assert!(left.is_empty(), "{case}: {left:?}");
            } else {
                assert!(m.contains("taking the commit back failed too"), "{case}");
            }
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
    let mut s = staging(dir.path());
    s.write("a.csv", "new").unwrap();
    s.write("b.csv", "new").unwrap();
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
    for fail_at in 1..=4 {
        let root = tempfile::tempdir().unwrap();
        let a = root.path().join("a");
        std::fs::create_dir(&a).unwrap();
        std::fs::write(a.join("r.html"), "old").unwrap();
        let b = root.path().join("b");
        let mut sa = staging(&a);
        sa.write("r.html", "new").unwrap();
        let mut sb = staging(&b);
        sb.write("x.png", "new").unwrap();
        sb.write("y.png", "new").unwrap();
        let err = commit_all_with(vec![sa, sb], &mut failing_on(&[fail_at])).unwrap_err();
        assert!(err.message.contains("nothing was changed"), "{err}");
        assert_eq!(names(&a), ["r.html"], "failing rename {fail_at}");
        assert_eq!(read(&a, "r.html"), "old");
        assert!(!b.exists(), "failing rename {fail_at}");
    }
    // Without a failure both land; two stagings of one directory are one commit.
    let root = tempfile::tempdir().unwrap();
    let mut s1 = staging(root.path());
    s1.write("r.html", "r").unwrap();
    let mut s2 = staging(root.path());
    s2.write("x.png", "x").unwrap();
    commit_together(vec![s1, s2], false).unwrap();
    assert_eq!(names(root.path()), ["r.html", "x.png"]);
}

/// A failed run into directories that did not exist leaves none of them behind; nothing is created
/// before the commit.
#[test]
fn created_output_directories_go_again_when_nothing_is_committed() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("plan/sub");
    let mut s = staging(&dir);
    s.write("a.csv", "a").unwrap();
    let (_, mut f) = s.create("b.csv").unwrap();
    f.write_all(b"b").unwrap();
    assert!(names(parent.path()).is_empty());
    commit_all_with(vec![s], &mut failing_on(&[1])).unwrap_err();
    assert!(names(parent.path()).is_empty());
}

/// Makes `dir` refuse new entries and removals, even to root: `chattr +i` (root; ext4 and most
/// file systems), else read-only permissions (a user). `false` when neither takes.
fn make_immutable(dir: &Path, on: bool) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let flag = if on { "+i" } else { "-i" };
    let chattr = std::process::Command::new("chattr")
        .arg(flag)
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success());
    let mode = if on { 0o555 } else { 0o755 };
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap_or_default();
    if chattr || !on {
        return chattr || !on;
    }
    // Whether the permissions hold (they do not for root): a file cannot be created.
    let probe = dir.join(".probe");
    let held = std::fs::File::create(&probe).is_err();
    let _ = std::fs::remove_file(&probe);
    held
}

/// Regression (issue 33): an output directory turned immutable (`chattr +i`, or read-only) while
/// the command worked left an empty `.railyard-staging-*` directory that could not be removed.
/// Nothing is in the output directory until the commit, so a directory that refuses the commit is
/// left exactly as it was.
#[test]
fn regression_an_empty_staging_directory_was_left_when_the_output_directory_turned_immutable() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("a.csv"), "old").unwrap();
    let mut s = staging(&out);
    s.write("a.csv", "new").unwrap();
    let (_, mut f) = s.create("cabling.csv").unwrap();
    f.write_all(b"streamed").unwrap();
    // Mid-way, before the commit.
    let held = make_immutable(&out, true);
    let result = s.commit();
    make_immutable(&out, false);
    if !held {
        assert!(
            std::env::var_os("CI").is_none(),
            "neither chattr +i nor permissions make a directory immutable here"
        );
        return;
    }
    let e = result.unwrap_err();
    assert!(e.message.contains("nothing was changed"), "{e}");
    assert_eq!(names(&out), ["a.csv"]);
    assert_eq!(read(&out, "a.csv"), "old");
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
                    let mut s = staging(dir);
                    for n in ["a", "b", "c", "d", "e"] {
                        s.write(n, format!("{writer}")).unwrap();
                        std::thread::yield_now();
                    }
                    // Slow renames widen the window in which unlocked writers would mix.
                    commit_all_with(vec![s], &mut |from, to| {
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

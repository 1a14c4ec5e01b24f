//! ARCHITECTURE.md's crate graph is drawn from `cargo metadata`, so it cannot drift from the
//! manifests: this test renders the workspace's normal (non-dev) dependencies between its own
//! crates and fails when the block between the `crate-graph` markers differs.
//! `RAILYARD_GOLDEN=update cargo test -p railyard --test crate_graph` rewrites the block.
//!
//! It also holds the layering the bird's-eye view promises: the core crates (catalog, spec,
//! fabric, plan, sim, ib, train, study, report) never depend on the CLI, the no-I/O model crates
//! never on the front-end crates (report, web, cli), and every crate has its entry in the code map
//! with a line for each of its modules. And it keeps the rooms small enough to hold: no production
//! file over [`MAX_FILE_LINES`] lines, no circle between the files of one crate. And the CLI only
//! parses, calls the application layer and prints: it imports no library crate but `study` (and
//! `web`, the front end `serve` hosts, and `report`, the pages' printer), beyond what
//! [`CLI_IMPORTS_LEFT`] still lists.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const BEGIN: &str =
    "<!-- crate-graph: drawn from `cargo metadata` by crates/cli/tests/crate_graph.rs -->";
const END: &str = "<!-- /crate-graph -->";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Workspace crates by folder name (crates/NAME) -> the folder names of the workspace crates it
/// depends on for building (dev-dependencies are test scaffolding, not architecture).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let packages = meta["packages"].as_array().expect("packages");
    // Package name -> folder name (the CLI's package is `railyard`, its folder `cli`).
    let folder: BTreeMap<String, String> = packages
        .iter()
        .map(|p| {
            let manifest = Path::new(p["manifest_path"].as_str().expect("manifest_path"));
            let dir = manifest
                .parent()
                .and_then(Path::file_name)
                .expect("crates/NAME/Cargo.toml");
            (
                p["name"].as_str().expect("name").to_string(),
                dir.to_string_lossy().into_owned(),
            )
        })
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| folder.get(d["name"].as_str()?).cloned())
                .collect();
            (folder[p["name"].as_str().expect("name")].clone(), deps)
        })
        .collect()
}

/// Crates in dependency order (each after everything it depends on; ties by name), one line each.
fn render(g: &BTreeMap<String, BTreeSet<String>>) -> String {
    let mut placed: Vec<&str> = Vec::new();
    while placed.len() < g.len() {
        let next = g
            .iter()
            .find(|(name, deps)| {
                !placed.contains(&name.as_str())
                    && deps.iter().all(|d| placed.contains(&d.as_str()))
            })
            .map(|(name, _)| name.as_str())
            .expect("the crate graph has no cycle");
        placed.push(next);
    }
    let width = placed.iter().map(|n| n.len()).max().unwrap_or(0);
    let mut s = String::from("```\n");
    for name in placed {
        let deps = &g[name];
        let rhs = if deps.is_empty() {
            "(no workspace dependencies)".to_string()
        } else {
            deps.iter().cloned().collect::<Vec<_>>().join(", ")
        };
        s += &format!("{name:<width$}  -> {rhs}\n");
    }
    s += "```\n";
    s
}

#[test]
fn architecture_md_draws_the_crate_graph_cargo_builds() {
    let g = graph();
    let path = root().join("ARCHITECTURE.md");
    let doc = std::fs::read_to_string(&path).expect("ARCHITECTURE.md");
    let start = doc
        .find(BEGIN)
        .expect("ARCHITECTURE.md has the crate-graph begin marker")
        + BEGIN.len();
    let end = doc[start..].find(END).expect("the crate-graph end marker") + start;
    let want = format!("\n{}", render(&g));
    if doc[start..end] != want {
        if std::env::var("RAILYARD_GOLDEN").as_deref() == Ok("update") {
            let new = format!("{}{}{}", &doc[..start], want, &doc[end..]);
            std::fs::write(&path, new).expect("ARCHITECTURE.md written");
        } else {
            panic!(
                "ARCHITECTURE.md's crate graph is stale; it should read:\n{want}\n\
                 (RAILYARD_GOLDEN=update cargo test -p railyard --test crate_graph rewrites it)"
            );
        }
    }
}

#[test]
fn layers_point_one_way() {
    let g = graph();
    let front_ends = ["report", "web", "cli"];
    for (name, deps) in &g {
        if name != "cli" {
            assert!(!deps.contains("cli"), "{name} depends on the CLI");
        }
        if !front_ends.contains(&name.as_str()) {
            for f in front_ends {
                assert!(
                    !deps.contains(f),
                    "{name} (a model crate) depends on the front end {f}"
                );
            }
        }
    }
    // The bottom of the graph: the catalog depends on nothing of ours; spec only on the catalog.
    assert!(g["catalog"].is_empty());
    assert_eq!(g["spec"], BTreeSet::from(["catalog".to_string()]));
}

#[test]
fn every_crate_has_its_entry_in_the_code_map() {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    for name in graph().keys() {
        assert!(
            doc.contains(&format!("\n  {name}/")),
            "ARCHITECTURE.md's code map has no `  {name}/` entry"
        );
    }
}

/// The code map's entries, by crate: the paths under the crate's folder that its lines name. An
/// entry is the first word of a line when it names a file (`lib.rs`) or a folder (`graph/`); a
/// file indented under a folder's line is in that folder (`graph/` then `fabric.rs`:
/// `graph/fabric.rs`). Prose lines name nothing.
fn code_map_entries(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let start = doc
        .find("## Code map")
        .expect("ARCHITECTURE.md has a code map");
    let block = &doc[start..];
    let open = block.find("```\n").expect("the code map's block") + 4;
    let close = block[open..].find("```").expect("the code map block's end") + open;
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut krate: Option<String> = None;
    let mut folders: Vec<(usize, String)> = Vec::new();
    for line in block[open..close].lines() {
        let indent = line.len() - line.trim_start().len();
        let token = line.split_whitespace().next().unwrap_or("");
        if indent <= 2 {
            // `  fabric/  ...` opens a crate's entries; anything else this far left closes them.
            krate = (indent == 2 && token.ends_with('/'))
                .then(|| token.trim_end_matches('/').to_string());
            folders.clear();
            continue;
        }
        let Some(k) = &krate else { continue };
        if !(token.ends_with(".rs") || token.ends_with('/')) {
            continue;
        }
        while folders.last().is_some_and(|(i, _)| *i >= indent) {
            folders.pop();
        }
        let path = format!("{}{token}", folders.last().map_or("", |(_, f)| f.as_str()));
        if token.ends_with('/') {
            folders.push((indent, path));
        } else {
            out.entry(k.clone()).or_default().insert(path);
        }
    }
    out
}

#[test]
fn every_module_has_its_line_in_the_code_map() {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let entries = code_map_entries(&doc);
    let mut problems = Vec::new();
    for name in graph().keys() {
        let krate = root().join("crates").join(name);
        let src = krate.join("src");
        let listed = entries.get(name).cloned().unwrap_or_default();
        for p in production_files(&src) {
            let rel = p
                .strip_prefix(&src)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            if !listed.contains(&rel) {
                problems.push(format!(
                    "crates/{name}/src/{rel} has no line of its own in ARCHITECTURE.md's code map"
                ));
            }
        }
        // And the map names no file that is gone (under src, or the crate's examples and tests).
        for l in &listed {
            if !src.join(l).exists() && !krate.join(l).exists() {
                problems.push(format!(
                    "ARCHITECTURE.md's code map lists {name}/{l}, which does not exist"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// [`code_map_entries`] on the shapes the map uses: files, folders and the files under them,
/// prose between, and the end of a crate's entries.
#[test]
fn code_map_entries_read_files_under_their_folders() {
    let doc = "## Code map

```
crates/
  a/   one crate:
               lib.rs    entry
               graph/    a folder:
                 mod.rs    its paths
                 x.rs      x, said over
                           two lines.rs
               y.rs      back out
  b/   another
             prose only
scripts/test   not a crate
```
";
    let e = code_map_entries(doc);
    let a: Vec<&str> = e["a"].iter().map(String::as_str).collect();
    assert_eq!(a, ["graph/mod.rs", "graph/x.rs", "lib.rs", "y.rs"]);
    assert!(!e.contains_key("b"));
}

/// Crates whose files still form circles, left to issue 34's split of the model crates into rooms
/// by responsibility; every other crate must have none. Take a crate off this list when its
/// circles are gone.
const CIRCLES_LEFT: [&str; 0] = [];

/// The most lines a production file may have (STYLE.md: about 800), counting the lines before a
/// trailing `#[cfg(test)] mod ...` (a test module in the file is test code, as a tests file is).
const MAX_FILE_LINES: usize = 800;

/// Files still over [`MAX_FILE_LINES`], left to issue 34's split of the CLI's compare command (its
/// owner is moving code out of it). This list may only shrink: a listed file
/// that is under the limit fails the test, so take it off when it is split.
const FILES_OVER_LIMIT: [&str; 0] = [];

/// Whether a file under src is test code: `tests.rs` or `*_tests.rs`.
fn is_test_file(p: &Path) -> bool {
    let stem = p.file_stem().and_then(|n| n.to_str()).unwrap_or("");
    stem == "tests" || stem.ends_with("_tests")
}

/// Every production `.rs` file under `dir`, in path order.
fn production_files(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("a source folder")
        .map(|e| e.expect("an entry").path())
        .collect();
    entries.sort();
    let mut out = Vec::new();
    for p in entries {
        if p.is_dir() {
            out.extend(production_files(&p));
        } else if p.extension().is_some_and(|e| e == "rs") && !is_test_file(&p) {
            out.push(p);
        }
    }
    out
}

/// A file's production lines: those before its first `#[cfg(test)]` that opens a module.
fn production_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .position(|w| w[0] == "#[cfg(test)]" && w[1].starts_with("mod "))
        .unwrap_or(lines.len())
}

#[test]
fn no_production_file_over_the_line_limit() {
    let mut problems = Vec::new();
    for name in graph().keys() {
        let src = root().join("crates").join(name).join("src");
        for p in production_files(&src) {
            let rel = format!(
                "{name}/src/{}",
                p.strip_prefix(&src).expect("under src").display()
            );
            let n = production_lines(&std::fs::read_to_string(&p).expect("a source file"));
            match (n > MAX_FILE_LINES, FILES_OVER_LIMIT.contains(&rel.as_str())) {
                (true, false) => problems.push(format!(
                    "crates/{rel} has {n} production lines, over {MAX_FILE_LINES}: split it by responsibility"
                )),
                (false, true) => problems.push(format!(
                    "crates/{rel} has {n} production lines, within {MAX_FILE_LINES}: take it off FILES_OVER_LIMIT"
                )),
                _ => {}
            }
        }
    }
    for listed in FILES_OVER_LIMIT {
        if !root().join("crates").join(listed).exists() {
            problems.push(format!(
                "crates/{listed} is gone: take it off FILES_OVER_LIMIT"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// [`production_lines`] stops at the first test module, whatever its name, and counts every line
/// of a file without one.
#[test]
fn production_lines_stop_at_the_test_module() {
    assert_eq!(production_lines("a\nb\n"), 2);
    assert_eq!(production_lines("a\n#[cfg(test)]\nmod tests;\n"), 1);
    assert_eq!(
        production_lines("a\nb\n#[cfg(test)]\nmod layout_tests {\n}\n"),
        2
    );
    // A cfg(test) item that is not a module (a test-only helper) is production's neighbour.
    assert_eq!(production_lines("#[cfg(test)]\nfn helper() {}\nb\n"), 3);
}

/// The production source files of a crate by module path (`a::b` for src/a/b.rs or src/a/b/mod.rs,
/// `` for lib.rs or main.rs); test files (`tests.rs`, `*_tests.rs`) are left out: a test may reach
/// anywhere.
fn modules(src: &Path) -> BTreeMap<String, String> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<String, String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("a source folder")
            .map(|e| e.expect("an entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, src, out);
                continue;
            }
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let Some(stem) = name.strip_suffix(".rs") else {
                continue;
            };
            if is_test_file(&p) {
                continue;
            }
            let rel = p
                .parent()
                .expect("a folder")
                .strip_prefix(src)
                .expect("under src");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if !["mod", "lib", "main"].contains(&stem) {
                parts.push(stem.to_string());
            }
            let text = std::fs::read_to_string(&p).expect("a source file");
            out.insert(parts.join("::"), text);
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// The modules a file uses by path: `crate::a::b::Item`, `use crate::{a, b::c}`, and the same
/// relative to the file's own module (`self::x`, `super::x`, `super::super::x`) name the longest
/// module prefix; a module's use of its own ancestors (which declare it) is no edge.
fn uses(module: &str, text: &str, all: &BTreeMap<String, String>) -> BTreeSet<String> {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
    let here: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
    let mut paths: Vec<String> = Vec::new();
    for (i, _) in text.match_indices("::") {
        // The path's first segment ends here: `crate`, `self` or a run of `super`s.
        let head_start = text[..i].rfind(|c: char| !ident(c)).map_or(0, |j| j + 1);
        if text[head_start..i].contains("::") {
            continue; // not the first `::` of its path
        }
        let base: Vec<&str> = match &text[head_start..i] {
            "crate" => Vec::new(),
            "self" => here.clone(),
            "super" => here[..here.len().saturating_sub(1)].to_vec(),
            _ => continue,
        };
        let mut rest = &text[i + 2..];
        let mut base = base;
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        let prefix = base.join("::");
        let join = |p: &str| {
            if prefix.is_empty() {
                p.to_string()
            } else {
                format!("{prefix}::{p}")
            }
        };
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                paths.push(join(
                    item.trim().split(|c: char| !ident(c)).next().unwrap_or(""),
                ));
            }
        } else {
            paths.push(join(rest.split(|c: char| !ident(c)).next().unwrap_or("")));
        }
    }
    let mut out = BTreeSet::new();
    for p in paths {
        let parts: Vec<&str> = p.split("::").filter(|s| !s.is_empty()).collect();
        let target = (1..=parts.len())
            .rev()
            .map(|n| parts[..n].join("::"))
            .find(|m| all.contains_key(m));
        if let Some(t) = target {
            let ancestor = module == t || module.starts_with(&format!("{t}::"));
            if !ancestor {
                out.insert(t);
            }
        }
    }
    out
}

/// A circle of modules reached from `start` back to itself, if any.
fn circle_from(start: &str, edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in &edges[&at] {
            if next == start {
                return Some(path.clone());
            }
            if seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.clone());
                stack.push((next.clone(), p));
            }
        }
    }
    None
}

#[test]
fn no_circle_between_files_of_one_crate() {
    let mut circles = Vec::new();
    for name in graph().keys() {
        let files = modules(&root().join("crates").join(name).join("src"));
        let edges: BTreeMap<String, BTreeSet<String>> = files
            .iter()
            .map(|(m, text)| (m.clone(), uses(m, text, &files)))
            .collect();
        let found = files.keys().find_map(|m| circle_from(m, &edges));
        match (found, CIRCLES_LEFT.contains(&name.as_str())) {
            (Some(c), false) => circles.push(format!("{name}: {}", c.join(" -> "))),
            (None, true) => circles.push(format!(
                "{name} has no circle left: take it off CIRCLES_LEFT"
            )),
            _ => {}
        }
    }
    assert!(circles.is_empty(), "{}", circles.join("\n"));
}

/// The parser of [`uses`] on the shapes that name modules.
#[test]
fn uses_reads_paths_and_groups() {
    let all: BTreeMap<String, String> = ["", "a", "a::b", "c", "d"]
        .iter()
        .map(|m| (m.to_string(), String::new()))
        .collect();
    let text = "use crate::a::b::Item;\nuse crate::{c::X, d};\nlet _ = crate::a::f();";
    assert_eq!(
        uses("c", text, &all),
        BTreeSet::from(["a".to_string(), "a::b".to_string(), "d".to_string()])
    );
    assert_eq!(uses("a::b", "crate::a::g()", &all), BTreeSet::new());
    // Relative paths: a sibling through `super::`, a child through `self::`, and `super::super::`
    // up two levels; `super::X` alone names the parent, an ancestor, so no edge.
    let all: BTreeMap<String, String> = ["", "a", "a::b", "a::c", "a::c::d", "e"]
        .iter()
        .map(|m| (m.to_string(), String::new()))
        .collect();
    let text = "use super::c::X;\nuse super::Y;\nlet _ = self::z();\nuse super::super::e::W;";
    assert_eq!(
        uses("a::b", text, &all),
        BTreeSet::from(["a::c".to_string(), "e".to_string()])
    );
    assert_eq!(
        uses("a::c", "use self::d::Q;\nuse super::{b::P, c};", &all),
        BTreeSet::from(["a::b".to_string(), "a::c::d".to_string()])
    );
}

/// The crates the CLI may import: the application layer (`study`), which the CLI parses for,
/// calls and prints; the web app (`web`), the other front end, which `railyard serve` hosts; and
/// `report`, the printer of HTML pages and PNG figures both front ends share: it renders study's
/// reports (a design's plan and curves, a comparison) and models nothing, so it sits above study
/// (it depends on study, study cannot re-export it) beside the front ends
/// ([`layers_point_one_way`]).
const CLI_MAY_IMPORT: [&str; 3] = ["report", "study", "web"];

/// Production files of the CLI that still import a library crate besides [`CLI_MAY_IMPORT`], with
/// those crates: left to issue 34's application layer (one `Scenario` and one function per
/// question in `study`, so the CLI only parses, calls and prints). This list may only shrink: a
/// file that imports a crate not listed for it fails the test, and so does a listed import the
/// file no longer has (take it off when it is gone).
const CLI_IMPORTS_LEFT: [(&str, &[&str]); 0] = [];

/// The workspace crates (by folder name) a production text names as `railyard_NAME`.
fn crates_named(text: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("railyard_") {
        let rest = &text[i + "railyard_".len()..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if names.contains(&rest[..end]) {
            out.insert(rest[..end].to_string());
        }
    }
    out
}

/// The CLI parses, calls the application layer and prints (issue 34): no production file of it
/// imports another library crate, but those [`CLI_IMPORTS_LEFT`] still lists.
#[test]
fn the_cli_imports_only_the_application_layer() {
    let names: BTreeSet<String> = graph().keys().cloned().collect();
    let src = root().join("crates/cli/src");
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for p in production_files(&src) {
        let rel = p
            .strip_prefix(&src)
            .expect("under src")
            .display()
            .to_string();
        let text = std::fs::read_to_string(&p).expect("a source file");
        let production: String = text
            .lines()
            .take(production_lines(&text))
            .collect::<Vec<_>>()
            .join("\n");
        let left: BTreeSet<String> = CLI_IMPORTS_LEFT
            .iter()
            .find(|(f, _)| *f == rel)
            .map(|(_, c)| c.iter().map(|c| c.to_string()).collect())
            .unwrap_or_default();
        let named = crates_named(&production, &names);
        for c in &named {
            if !CLI_MAY_IMPORT.contains(&c.as_str()) && !left.contains(c) {
                problems.push(format!(
                    "crates/cli/src/{rel} imports railyard_{c}: the CLI imports only the application layer (study); ask study for it"
                ));
            }
        }
        for c in left.difference(&named) {
            problems.push(format!(
                "crates/cli/src/{rel} no longer imports railyard_{c}: take it off CLI_IMPORTS_LEFT"
            ));
        }
        seen.insert(rel);
    }
    for (f, _) in CLI_IMPORTS_LEFT {
        if !seen.contains(f) {
            problems.push(format!(
                "CLI_IMPORTS_LEFT names crates/cli/src/{f}, which is gone: take it off"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

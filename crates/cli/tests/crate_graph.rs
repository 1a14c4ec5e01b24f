//! ARCHITECTURE.md's crate graph is drawn from `cargo metadata`, so it cannot drift from the
//! manifests: this test renders the workspace's normal (non-dev) dependencies between its own
//! crates and fails when the block between the `crate-graph` markers differs.
//! `RAILYARD_GOLDEN=update cargo test -p railyard --test crate_graph` rewrites the block.
//!
//! It also holds the layering the bird's-eye view promises: the core crates (catalog, spec,
//! fabric, plan, sim, ib, train, study, report) never depend on the CLI, the no-I/O model crates
//! never on the front-end crates (report, web, cli), and every crate has its entry in the code map.

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

/// Crates whose files still form circles, left to issue 34's split of sim, fabric and the other
/// model crates into rooms by responsibility; every other crate must have none. Take a crate off
/// this list when its circles are gone.
const CIRCLES_LEFT: [&str; 5] = ["fabric", "ib", "sim", "spec", "train"];

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
            if stem == "tests" || stem.ends_with("_tests") {
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

/// The modules a file uses by path: `crate::a::b::Item` and `use crate::{a, b::c}` name the longest
/// module prefix; a module's use of its own ancestors (which declare it) is no edge.
fn uses(module: &str, text: &str, all: &BTreeMap<String, String>) -> BTreeSet<String> {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
    let mut paths: Vec<String> = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                paths.push(
                    item.trim()
                        .split(|c: char| !ident(c))
                        .next()
                        .unwrap_or("")
                        .into(),
                );
            }
        } else {
            paths.push(rest.split(|c: char| !ident(c)).next().unwrap_or("").into());
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
}

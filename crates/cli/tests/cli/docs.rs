//! The documentation runs: every example command line in README.md and docs/guide/*.md is run with
//! the real binary, and every flag `railyard <command> --help` lists is in that command's guide page.
//!
//! The convention the examples follow (docs/guide/README.md, "How the examples are tested"):
//! - Examples are the lines of ```sh blocks. A line starting with `railyard ` runs (a trailing `\`
//!   continues it on the next line); `cargo run --release -- ARGS` runs as `railyard ARGS`, the
//!   same program. Each block runs in a fresh temporary directory, line after line, with `crates`
//!   and `docs` linking to the checkout's, so an example reads the repository's test data by its
//!   path from the checkout's root and reads files that earlier lines of its block wrote.
//! - `cat > FILE <<'EOF'` ... `EOF` writes FILE, for the lines after it.
//! - Each command must exit 0, or N where its trailing comment starts with `exit N`.
//! - A line whose trailing comment starts with `not run:` is not run, and must say why
//!   (`# not run: runs until stopped`); every other line must be one of the above.
//! - A ```text block right after a ```sh block (blank lines between at most) is the stdout of that
//!   block's last command, line for line (trailing blanks aside); a line `...` stands for any
//!   number of lines the page leaves out.

use crate::common::BIN;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The checkout's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One fenced code block: its language, first content line (1-based) and lines.
struct Fence {
    lang: String,
    line: usize,
    lines: Vec<String>,
    /// The ```text block that follows it directly, if any.
    shown: Option<Vec<String>>,
}

/// The fenced blocks of a Markdown page, each ```sh block with the output block after it.
fn fences(text: &str) -> Vec<Fence> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<Fence> = Vec::new();
    let mut i = 0;
    let mut last_end: Option<usize> = None;
    while i < lines.len() {
        let Some(lang) = lines[i].trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && lines[end].trim_start() != "```" {
            end += 1;
        }
        assert!(
            end < lines.len(),
            "a code block opened on line {i} is never closed"
        );
        let body: Vec<String> = lines[start..end].iter().map(|s| s.to_string()).collect();
        let directly_after =
            last_end.is_some_and(|e| lines[e + 1..i].iter().all(|l| l.trim().is_empty()));
        match out.last_mut() {
            Some(prev) if lang == "text" && prev.lang == "sh" && directly_after => {
                prev.shown = Some(body.clone())
            }
            _ => {}
        }
        out.push(Fence {
            lang: lang.trim().to_string(),
            line: start + 1,
            lines: body,
            shown: None,
        });
        last_end = Some(end);
        i = end + 1;
    }
    out
}

/// A step of an example block.
#[derive(Debug)]
enum Step {
    /// `cat > NAME <<'EOF'`: write the lines up to `EOF` into NAME.
    Write { name: String, text: String },
    /// Run the binary with these words (after `railyard`), expecting this exit status.
    Run {
        line: usize,
        words: Vec<Word>,
        status: i32,
    },
    /// Not run, for the reason given.
    NotRun,
}

/// A shell word, whether it holds an unquoted `*` to expand, and whether it holds shell syntax
/// the examples do not use (pipes, redirections, `;`, `&`, `$`).
#[derive(Debug, Default)]
struct Word {
    text: String,
    glob: bool,
    shell: bool,
}

/// Splits a command line as sh does for these examples: blanks between words, single and double
/// quotes, backslash escapes, and a `#` that starts a word starts the comment, which is returned.
fn split(line: &str) -> (Vec<Word>, Option<String>) {
    let mut words = Vec::new();
    let mut cur: Option<Word> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if let Some(w) = cur.take() {
                    words.push(w);
                }
            }
            '#' if cur.is_none() => {
                let comment: String = chars.collect();
                return (words, Some(comment.trim().to_string()));
            }
            '\'' | '"' => {
                let w = cur.get_or_insert_with(Word::default);
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some('\\') if c == '"' => w.text.extend(chars.next()),
                        Some(ch) => w.text.push(ch),
                        None => panic!("unclosed quote in `{line}`"),
                    }
                }
            }
            '\\' => cur
                .get_or_insert_with(Word::default)
                .text
                .extend(chars.next()),
            _ => {
                let w = cur.get_or_insert_with(Word::default);
                w.glob |= c == '*';
                w.shell |= "|<>;&$`".contains(c);
                w.text.push(c);
            }
        }
    }
    words.extend(cur);
    (words, None)
}

/// The steps of one ```sh block; `first` is the page line of its first line, `page` names the
/// page in messages.
fn steps(page: &str, first: usize, lines: &[String]) -> Vec<Step> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let at = first + i;
        let mut line = lines[i].trim().to_string();
        i += 1;
        while let Some(head) = line.strip_suffix('\\') {
            let next = lines
                .get(i)
                .unwrap_or_else(|| panic!("{page}:{at}: `\\` ends the block"));
            line = format!("{head} {}", next.trim());
            i += 1;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix("cat > ") {
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            assert!(
                tail == "<<'EOF'" || tail == "<<EOF",
                "{page}:{at}: write files as `cat > NAME <<'EOF'`"
            );
            let body = lines[i..]
                .iter()
                .position(|l| l == "EOF")
                .unwrap_or_else(|| panic!("{page}:{at}: no `EOF` line ends the file"));
            let text: String = lines[i..i + body]
                .iter()
                .map(|l| format!("{l}\n"))
                .collect();
            i += body + 1;
            out.push(Step::Write {
                name: name.to_string(),
                text,
            });
            continue;
        }
        out.push(command(&format!("{page}:{at}"), at, &line));
    }
    out
}

/// The step of one command line (`at` its page line, `place` the page and line for messages).
fn command(place: &str, at: usize, line: &str) -> Step {
    let (mut words, comment) = split(line);
    let comment = comment.unwrap_or_default();
    if let Some(reason) = comment.strip_prefix("not run:") {
        assert!(
            reason.trim().len() >= 8,
            "{place}: `# not run:` needs a reason: `{line}`"
        );
        return Step::NotRun;
    }
    let status = comment
        .strip_prefix("exit ")
        .map(|s| {
            let n: String = s.chars().take_while(char::is_ascii_digit).collect();
            n.parse()
                .unwrap_or_else(|_| panic!("{place}: `# exit N` needs a number"))
        })
        .unwrap_or(0);
    let head: Vec<&str> = words.iter().take(4).map(|w| w.text.as_str()).collect();
    let skip = match head.as_slice() {
        ["railyard", ..] => 1,
        ["cargo", "run", "--release", "--", ..] => 4,
        _ => panic!(
            "{place}: `{line}` is no railyard command: run it as one, or mark it \
             `# not run: REASON`"
        ),
    };
    words.drain(..skip);
    assert!(
        !words.iter().any(|w| w.shell),
        "{place}: `{line}` needs a shell (a pipe, redirection or variable): mark it \
         `# not run: REASON`"
    );
    let writes = [
        "-o",
        "--out",
        "--output",
        "--fct",
        "--html",
        "--png",
        "--opensm-dir",
    ];
    for pair in words.windows(2) {
        if writes.contains(&pair[0].text.as_str()) {
            assert!(
                !pair[1].text.starts_with("crates/") && !pair[1].text.starts_with("docs/"),
                "{place}: an example writes into the checkout: `{line}`"
            );
        }
    }
    Step::Run {
        line: at,
        words,
        status,
    }
}

/// The names in `dir` that match `pattern` (one path component; `*` matches any run).
fn glob(dir: &Path, pattern: &str) -> Vec<String> {
    let (parent, name) = pattern.rsplit_once('/').unwrap_or(("", pattern));
    assert!(
        !parent.contains('*'),
        "only a file name may hold `*`: {pattern}"
    );
    fn matches(p: &[u8], s: &[u8]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((b'*', rest)) => (0..=s.len()).any(|k| matches(rest, &s[k..])),
            Some((c, rest)) => s.first() == Some(c) && matches(rest, &s[1..]),
        }
    }
    let mut found: Vec<String> = std::fs::read_dir(dir.join(parent))
        .unwrap_or_else(|e| panic!("{pattern}: {e}"))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| matches(name.as_bytes(), n.as_bytes()))
        .map(|n| {
            if parent.is_empty() {
                n
            } else {
                format!("{parent}/{n}")
            }
        })
        .collect();
    found.sort();
    assert!(!found.is_empty(), "`{pattern}` matches no file");
    found
}

/// Whether `got` is `shown`, a `...` line of `shown` standing for any run of lines.
fn matches_shown(shown: &[String], got: &[&str]) -> bool {
    match shown.split_first() {
        None => got.is_empty(),
        Some((first, rest)) if first.trim() == "..." => {
            (0..=got.len()).any(|k| matches_shown(rest, &got[k..]))
        }
        Some((first, rest)) => got
            .split_first()
            .is_some_and(|(g, tail)| g.trim_end() == first.trim_end() && matches_shown(rest, tail)),
    }
}

/// Runs every example of `page` (a path from the checkout's root); returns the lines run and
/// the lines marked `not run`.
fn run_examples(page: &str) -> (usize, usize) {
    let text = std::fs::read_to_string(root().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
    let (mut ran, mut skipped) = (0, 0);
    for fence in fences(&text).into_iter().filter(|f| f.lang == "sh") {
        let steps = steps(page, fence.line, &fence.lines);
        skipped += steps.iter().filter(|s| matches!(s, Step::NotRun)).count();
        if !steps.iter().any(|s| matches!(s, Step::Run { .. })) {
            assert!(
                fence.shown.is_none(),
                "{page}:{}: output shown for no command",
                fence.line
            );
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        for link in ["crates", "docs"] {
            std::os::unix::fs::symlink(root().join(link), dir.path().join(link)).unwrap();
        }
        let mut last = None;
        for step in steps {
            match step {
                Step::Write { name, text } => std::fs::write(dir.path().join(name), text).unwrap(),
                Step::NotRun => {}
                Step::Run {
                    line,
                    words,
                    status,
                } => {
                    let args: Vec<String> = words
                        .iter()
                        .flat_map(|w| {
                            if w.glob {
                                glob(dir.path(), &w.text)
                            } else {
                                vec![w.text.clone()]
                            }
                        })
                        .collect();
                    let o = Command::new(BIN)
                        .args(&args)
                        .current_dir(dir.path())
                        .stdin(Stdio::null())
                        .output()
                        .unwrap();
                    assert_eq!(
                        o.status.code(),
                        Some(status),
                        "{page}:{line}: `railyard {}` exits {:?}, the page says {status}; \
                         stderr:\n{}",
                        args.join(" "),
                        o.status.code(),
                        String::from_utf8_lossy(&o.stderr)
                    );
                    ran += 1;
                    last = Some((line, args, String::from_utf8(o.stdout).unwrap()));
                }
            }
        }
        if let (Some(shown), Some((line, args, out))) = (&fence.shown, last) {
            let got: Vec<&str> = out.lines().collect();
            assert!(
                matches_shown(shown, &got),
                "{page}:{line}: `railyard {}` prints\n{out}\nwhere the page shows\n{}",
                args.join(" "),
                shown.join("\n")
            );
        }
    }
    (ran, skipped)
}

macro_rules! doc_pages {
    ($($test:ident => $page:literal,)*) => {
        /// The pages whose examples are run, each by its own test below.
        const PAGES: &[&str] = &[$($page),*];
        $(
            #[test]
            fn $test() {
                let (ran, skipped) = run_examples($page);
                eprintln!("{}: {ran} examples run, {skipped} marked not run", $page);
            }
        )*
    };
}

doc_pages! {
    readme_examples_run => "README.md",
    guide_index_examples_run => "docs/guide/README.md",
    guide_conventions_examples_run => "docs/guide/conventions.md",
    guide_spec_examples_run => "docs/guide/spec.md",
    guide_plan_examples_run => "docs/guide/plan.md",
    guide_presets_examples_run => "docs/guide/presets.md",
    guide_catalog_examples_run => "docs/guide/catalog.md",
    guide_compare_examples_run => "docs/guide/compare.md",
    guide_merge_examples_run => "docs/guide/merge.md",
    guide_export_examples_run => "docs/guide/export.md",
    guide_import_examples_run => "docs/guide/import.md",
    guide_verify_examples_run => "docs/guide/verify.md",
    guide_check_examples_run => "docs/guide/check.md",
    guide_sim_examples_run => "docs/guide/sim.md",
    guide_train_examples_run => "docs/guide/train.md",
    guide_jobs_examples_run => "docs/guide/jobs.md",
    guide_report_examples_run => "docs/guide/report.md",
    guide_calibrate_examples_run => "docs/guide/calibrate.md",
    guide_check_nccl_examples_run => "docs/guide/check-nccl.md",
    guide_serve_examples_run => "docs/guide/serve.md",
}

/// The README is a front door of one page (issue 34: at most 200 lines); reference prose
/// belongs in docs/guide/.
#[test]
fn readme_is_at_most_200_lines() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines, over 200: move reference prose to docs/guide/"
    );
}

/// Every page of docs/guide has its example test above, and the index links every page.
#[test]
fn every_guide_page_is_tested_and_indexed() {
    let mut pages: Vec<String> = std::fs::read_dir(root().join("docs/guide"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/guide/{n}"))
        .collect();
    pages.push("README.md".to_string());
    pages.sort();
    let mut tested: Vec<String> = PAGES.iter().map(|p| p.to_string()).collect();
    tested.sort();
    assert_eq!(
        pages, tested,
        "a page without its test in docs.rs, or a test without its page"
    );
    let index = std::fs::read_to_string(root().join("docs/guide/README.md")).unwrap();
    for page in PAGES.iter().filter_map(|p| p.strip_prefix("docs/guide/")) {
        if page != "README.md" {
            assert!(
                index.contains(&format!("({page}")),
                "docs/guide/README.md does not link {page}"
            );
        }
    }
}

/// `railyard ARGS --help`.
fn help(args: &[&str]) -> String {
    let o = Command::new(BIN).args(args).arg("--help").output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "railyard {} --help",
        args.join(" ")
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The subcommands a `--help` lists under `Commands:` (less `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The flags a `--help` lists: short, long and alias names (less `--help` and `--version`).
fn flags(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in help
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
    {
        let names = line.split("  ").next().unwrap_or("");
        for part in names.split(", ") {
            out.push(part.split([' ', '=']).next().unwrap_or("").to_string());
        }
        if let Some(aliases) = line
            .split("[alias: ")
            .nth(1)
            .or(line.split("[aliases: ").nth(1))
        {
            let list = aliases.split(']').next().unwrap_or("");
            out.extend(list.split(", ").map(str::to_string));
        }
    }
    out.retain(|f| !["-h", "--help", "-V", "--version"].contains(&f.as_str()));
    out
}

/// Whether `text` names `flag` as a word of its own (`--nic` is not in `--nic-ratio`).
fn names_flag(text: &str, flag: &str) -> bool {
    let part = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    text.match_indices(flag).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + flag.len()..].chars().next();
        !before.is_some_and(part) && !after.is_some_and(part)
    })
}

/// The part of a guide page that documents `command`: the whole page, or for a command with
/// subcommands (`export ibnet`) the section headed `## railyard export ibnet`.
fn section(command: &[String]) -> String {
    let page = format!("docs/guide/{}.md", command[0]);
    let text = std::fs::read_to_string(root().join(&page))
        .unwrap_or_else(|e| panic!("`railyard {}` has no guide page {page}: {e}", command[0]));
    if command.len() == 1 {
        return text;
    }
    let heading = format!("## railyard {}", command.join(" "));
    let start = text
        .lines()
        .position(|l| l.trim_end() == heading)
        .unwrap_or_else(|| panic!("{page} has no section `{heading}`"));
    text.lines()
        .skip(start)
        .enumerate()
        .take_while(|(i, l)| *i == 0 || !l.starts_with("## "))
        .map(|(_, l)| format!("{l}\n"))
        .collect()
}

/// docs/guide covers every command: each has its page (a subcommand its section), and every flag
/// its `--help` lists is named there.
#[test]
fn every_flag_of_every_command_is_in_its_guide_page() {
    let mut missing = Vec::new();
    let mut commands = 0;
    for top in subcommands(&help(&[])) {
        let subs = subcommands(&help(&[&top]));
        let leaves: Vec<Vec<String>> = if subs.is_empty() {
            vec![vec![top.clone()]]
        } else {
            subs.into_iter().map(|s| vec![top.clone(), s]).collect()
        };
        for command in leaves {
            commands += 1;
            let args: Vec<&str> = command.iter().map(String::as_str).collect();
            let text = section(&command);
            for flag in flags(&help(&args)) {
                if !names_flag(&text, &flag) {
                    missing.push(format!("railyard {} {flag}", command.join(" ")));
                }
            }
        }
    }
    assert!(commands >= 17, "{commands} commands");
    assert!(
        missing.is_empty(),
        "flags the guide does not name:\n{}",
        missing.join("\n")
    );
}

#[test]
fn example_lines_split_as_the_shell_splits_them() {
    let (w, c) = split(r#"railyard verify --plan "a b" --lldp t/*.json 'x#y' # exit 1: differs"#);
    let words: Vec<&str> = w.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(
        words,
        ["railyard", "verify", "--plan", "a b", "--lldp", "t/*.json", "x#y"]
    );
    assert!(w[5].glob && !w[3].glob);
    assert_eq!(c.as_deref(), Some("exit 1: differs"));
    let shown: Vec<String> = ["a", "...", "d"].iter().map(|s| s.to_string()).collect();
    assert!(matches_shown(&shown, &["a", "b", "c", "d"]));
    assert!(matches_shown(&shown, &["a", "d"]));
    assert!(!matches_shown(&shown, &["a", "b"]));
    assert_eq!(flags("  -o, --out <DIR>  Write [alias: --output]\n      --json  JSON\n  -h, --help  Print help"), ["-o", "--out", "--output", "--json"]);
    assert!(names_flag("`--nic MODEL`", "--nic") && !names_flag("`--nic-ratio`", "--nic"));
}

/// GitHub's anchor of a heading: lower case, punctuation dropped but `-` and `_`, blanks to `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every relative link of README.md and the guide names a file of the checkout, and every
/// `#anchor` a heading of the page it points to.
#[test]
fn every_link_of_the_docs_resolves() {
    let mut broken = Vec::new();
    for page in PAGES {
        let path = root().join(page);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut in_code = false;
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
            }
            if in_code {
                continue;
            }
            for (at, _) in line.match_indices("](") {
                let rest = &line[at + 2..];
                let target = &rest[..rest.find(')').unwrap_or(rest.len())];
                if target.starts_with("http") || target.is_empty() {
                    continue;
                }
                let (file, frag) = target.split_once('#').unwrap_or((target, ""));
                let file = if file.is_empty() {
                    path.clone()
                } else {
                    path.parent().unwrap().join(file)
                };
                if !file.exists() {
                    broken.push(format!("{page}: {target} (no such file)"));
                    continue;
                }
                if !frag.is_empty() {
                    let anchors: Vec<String> = std::fs::read_to_string(&file)
                        .unwrap()
                        .lines()
                        .filter_map(|l| l.strip_prefix('#'))
                        .map(|l| anchor(l.trim_start_matches('#')))
                        .collect();
                    if !anchors.iter().any(|a| a == frag) {
                        broken.push(format!("{page}: {target} (no such heading)"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

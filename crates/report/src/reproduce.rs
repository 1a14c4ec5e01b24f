//! What a decision report needs to reproduce itself (issue 36 item 5): the command line as typed,
//! shell-quoted so it can be pasted back, and every run key of the study with its value and
//! whether it was given or left at its default. The front end lists the keys (the CLI walks its
//! flags' struct, so a key added later is listed without anyone remembering it); this module
//! only prints them.

use crate::svg::esc;
use std::fmt::Write;

/// One run key of the study as the command ran it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunKeyRow {
    /// The flag, `--pxn`.
    pub key: String,
    /// Its value as the command line gave it or clap defaulted it; empty where the flag is unset
    /// and has no default value (`default` then says what the command does without it).
    pub value: String,
    /// Given on the command line (else defaulted or unset).
    pub given: bool,
    /// The flag's help: what it sets and, for an unset flag, its default behaviour.
    pub help: String,
}

/// What the report shows to be run again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Invocation {
    /// The arguments as typed, the program first.
    pub argv: Vec<String>,
    /// Every run key of the study, in the order the front end lists them.
    pub run_keys: Vec<RunKeyRow>,
}

/// `argv` as one shell line: an argument of only safe characters as is, any other in single
/// quotes (a quote inside as `'\''`), as POSIX sh reads them back (IEEE Std 1003.1, Shell Command
/// Language, 2.2.2 Single-Quotes).
pub fn shell_line(argv: &[String]) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./:=,+@%".contains(c);
    argv.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(safe) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The section: the command line and the table of run keys.
pub fn section(inv: &Invocation) -> String {
    let mut o = String::from(r#"<section id="reproduce"><h2>How this report was made</h2>"#);
    o.push_str(r#"<p class="muted">The command line as typed; run again with the same railyard version and files, it makes this page again. Below it, every run key of the study: its value, and whether the command line gave it or it took its default.</p>"#);
    let _ = write!(
        o,
        r#"<pre id="command-line"><code>{}</code></pre>"#,
        esc(&shell_line(&inv.argv))
    );
    o.push_str(r#"<div class="table-box"><table id="run-keys"><thead><tr><th>run key</th><th>value</th><th>from</th><th>what it sets</th></tr></thead><tbody>"#);
    for k in &inv.run_keys {
        let from = match (k.given, k.value.is_empty()) {
            (true, _) => "given",
            (false, false) => "default",
            (false, true) => "default (unset)",
        };
        let _ = write!(
            o,
            r#"<tr><td><code>{}</code></td><td>{}</td><td>{from}</td><td class="muted">{}</td></tr>"#,
            esc(&k.key),
            esc(&k.value),
            esc(&k.help)
        );
    }
    o.push_str("</tbody></table></div></section>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What sh reads back: safe words as is, others quoted, a quote inside closed and escaped.
    #[test]
    fn the_command_line_is_quoted_as_sh_reads_it() {
        let argv: Vec<String> = [
            "railyard",
            "report",
            "--compare",
            "dgx-h100-superpod:name=A B",
            "--model",
            "llama3-405b",
            "it's",
            "",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            shell_line(&argv),
            r#"railyard report --compare 'dgx-h100-superpod:name=A B' --model llama3-405b 'it'\''s' ''"#
        );
    }
}

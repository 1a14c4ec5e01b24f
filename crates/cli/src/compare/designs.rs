//! The designs a `compare` (or `report --compare`) names: each a preset or spec file with its
//! pairs (`dgx-h100-superpod:tech=roce-400g`), times every `--vary`'s values, labelled by what
//! differs; a sweep too large, a key set twice or two designs of one name are refused before
//! anything is built.

use super::Job;
use crate::design::{self, Pair, RunOverrides};
use crate::error::CliError;

/// One design to compare: its label, where it starts, and its pairs.
#[derive(Debug, Clone)]
pub struct Variant {
    pub label: String,
    pub base: Option<String>,
    pub pairs: Vec<Pair>,
}

fn split_kv(s: &str) -> Result<(String, String), CliError> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| CliError::input(format!("`{s}` is not KEY=VALUE")))?;
    Ok((k.trim().to_string(), v.trim().to_string()))
}

/// How many designs the arguments make, from the counts alone: the designs named (or the base one)
/// times the values of every --vary. Refused past --max-designs, before anything is built.
fn sweep_size(j: &Job) -> Result<u64, CliError> {
    let mut factors = vec![j.designs.len().max(1) as u64];
    for v in j.vary {
        let (_, values) = split_kv(v)?;
        factors.push(values.split(',').filter(|s| !s.is_empty()).count() as u64);
    }
    let total = factors
        .iter()
        .try_fold(1u64, |acc, &n| acc.checked_mul(n))
        .unwrap_or(u64::MAX);
    if total > j.max_designs {
        let how = factors
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(" x ");
        return Err(CliError::input(format!(
            "compare: {how} = {} designs (designs named x each --vary's values) is past --max-designs {}; sweep fewer values, or raise --max-designs to {} to plan them all",
            if total == u64::MAX { "more than 2^64".to_string() } else { total.to_string() },
            j.max_designs,
            if total == u64::MAX { "that many".to_string() } else { total.to_string() }
        )));
    }
    Ok(total)
}

/// A design's label, named by what differs: `name=` where given; the pairs alone
/// (`tech=roce-400g`) when every design starts from the same base; else `base:pairs`.
fn label_of(base: &str, pairs: &[Pair], same_base: bool) -> String {
    if let Some(name) = pairs.iter().rev().find_map(|p| match p {
        Pair::Name(n) => Some(n.clone()),
        _ => None,
    }) {
        return name;
    }
    let text: Vec<String> = pairs.iter().map(Pair::text).collect();
    match (text.is_empty(), same_base) {
        (true, _) => base.to_string(),
        (false, true) => text.join(","),
        (false, false) => format!("{base}:{}", text.join(",")),
    }
}

pub fn variants(j: &Job) -> Result<Vec<Variant>, CliError> {
    sweep_size(j)?;
    let mut out = Vec::new();
    if j.designs.is_empty() {
        out.push(Variant {
            label: j
                .design
                .spec
                .as_ref()
                .map_or(design::DEFAULT_PRESET.to_string(), |p| {
                    p.display().to_string()
                }),
            base: None,
            pairs: Vec::new(),
        });
    }
    let mut named = Vec::new();
    for d in j.designs {
        let (base, rest) = design_base(d);
        let pairs = match rest {
            Some(rest) => rest
                .split(',')
                .map(|pair| split_kv(pair).and_then(|(k, v)| design::parse_pair(&k, &v)))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        // A key given twice would silently take its last value.
        for (i, p) in pairs.iter().enumerate() {
            if let Some(q) = pairs[..i].iter().find(|q| q.key() == p.key()) {
                return Err(CliError::input(format!(
                    "{d}: {} is given twice ({} and {}); give it once",
                    p.key(),
                    q.text(),
                    p.text()
                )));
            }
        }
        named.push((base, pairs));
    }
    // A key swept twice, or swept and set in a design, would silently take the last value.
    let mut swept: Vec<(String, &String)> = Vec::new();
    for v in j.vary {
        let (key, _) = split_kv(v)?;
        let key = canonical_key(&key);
        if let Some((_, first)) = swept.iter().find(|(k, _)| *k == key) {
            return Err(CliError::input(format!(
                "--vary {first} and --vary {v} sweep the same key {key}; give all its values in one --vary"
            )));
        }
        if let Some((d, p)) = j
            .designs
            .iter()
            .zip(&named)
            .find_map(|(d, (_, pairs))| pairs.iter().find(|p| p.key() == key).map(|p| (d, p)))
        {
            return Err(CliError::input(format!(
                "--vary {v} sweeps {key}, which the design {d} sets ({}); set it in one place",
                p.text()
            )));
        }
        swept.push((key, v));
    }
    let same_base = named.windows(2).all(|w| w[0].0 == w[1].0);
    for (base, pairs) in named {
        out.push(Variant {
            label: label_of(&base, &pairs, same_base),
            base: Some(base),
            pairs,
        });
    }
    for v in j.vary {
        let (key, values) = split_kv(v)?;
        let values: Vec<&str> = values.split(',').filter(|s| !s.is_empty()).collect();
        if values.is_empty() {
            return Err(CliError::input(format!(
                "--vary {v}: give at least one value"
            )));
        }
        let parsed = values
            .iter()
            .map(|value| design::parse_pair(&key, value))
            .collect::<Result<Vec<_>, _>>()?;
        let mut next = Vec::with_capacity(out.len() * values.len());
        for base in &out {
            for pair in &parsed {
                let mut v = base.clone();
                let tag = pair.text();
                v.label = match pair {
                    Pair::Name(n) => n.clone(),
                    _ if j.designs.len() <= 1 && out.len() == 1 => tag,
                    _ => format!("{} {tag}", v.label),
                };
                v.pairs.push(pair.clone());
                next.push(v);
            }
        }
        out = next;
    }
    // Two designs of one name= could not be told apart in the table or the verdicts.
    for (i, v) in out.iter().enumerate() {
        let named_so = |v: &Variant| v.pairs.iter().any(|p| matches!(p, Pair::Name(_)));
        if let Some(w) = out[..i]
            .iter()
            .find(|w| w.label == v.label && (named_so(v) || named_so(w)))
        {
            return Err(CliError::input(format!(
                "name={} names two designs ({} and {}); give each design its own name",
                v.label,
                describe_variant(w),
                describe_variant(v)
            )));
        }
    }
    Ok(out)
}

/// The key of a `KEY=VALUE` pair as its table names it (`gpus_per_server` -> `gpus-per-server`),
/// or as given when no table knows it (parsing the pair says so).
fn canonical_key(key: &str) -> String {
    match design::parse_pair_key(key) {
        Some(k) => k.to_string(),
        None => key.to_string(),
    }
}

/// A design as the arguments named it: its base and its pairs (`dgx-h100-superpod:servers=4`).
pub fn describe_variant(v: &Variant) -> String {
    let base = v.base.as_deref().unwrap_or("the base design");
    let pairs: Vec<String> = v.pairs.iter().map(Pair::text).collect();
    if pairs.is_empty() {
        base.to_string()
    } else {
        format!("{base}:{}", pairs.join(","))
    }
}

/// What a design's run pairs set (`routing=ecmp,tp=4`).
pub fn run_overrides(v: &Variant) -> RunOverrides {
    RunOverrides::of_pairs(&v.pairs)
}

/// The spec files among the designs named (`s.toml`, `s.toml:servers=4`): what a design reads
/// as its base, as [`variants`] and `evaluate` take it.
pub fn design_files(designs: &[String]) -> Vec<std::path::PathBuf> {
    designs
        .iter()
        .map(|d| design_base(d).0)
        .filter(|b| std::path::Path::new(b).is_file() && !design::is_preset(b))
        .map(std::path::PathBuf::from)
        .collect()
}

/// A design's base (a preset or a spec file) and its pairs: `dgx-h100-superpod:servers=4`.
pub fn design_base(d: &str) -> (String, Option<&str>) {
    let is_base = |s: &str| design::is_preset(s) || std::path::Path::new(s).is_file();
    if is_base(d) {
        (d.to_string(), None)
    } else {
        match d.split_once(':') {
            Some((b, rest)) => (b.to_string(), Some(rest)),
            None => (d.to_string(), None),
        }
    }
}

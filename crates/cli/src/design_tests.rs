//! Every key of the one table in every front end: the design keys of `railyard_spec::keys` as the
//! flags of every command that takes a design, as `compare --vary` / `DESIGN:key=value` pairs, as
//! keys of the JSON API and as fields of the web form; the run keys as the flags of the commands
//! that simulate. Each front end takes exactly the table's keys, every valid example sets the same
//! override, and every invalid one is refused with the same message (`PROBLEM; valid: VALID`) after
//! the front end's own spelling of the key. crates/cli/tests/keys.rs does the same through the real
//! binary and server.

use super::*;
use crate::Command as Cmd;
use clap::{CommandFactory, Parser};
use railyard_spec::keys::Kind;
use railyard_spec::run::RUN_KEYS;
use railyard_web::{self as app, DesignRequest};
use serde_json::{json, Value as Json};

/// Every command that takes the design flags, as the words before them (with required arguments).
const DESIGN_COMMANDS: [&[&str]; 10] = [
    &["plan"],
    &["compare"],
    &["catalog"],
    &["sim", "collective", "allreduce"],
    &["train"],
    &["report", "-o", "r.html"],
    &["export", "ibnet", "-o", "t.topo"],
    &["export", "lldp", "-o", "tables"],
    &["export", "slurm"],
    &["verify", "--discovered", "d.txt"],
];

/// The design flags a parsed command line carries.
fn design_of(cmd: Cmd) -> DesignArgs {
    match cmd {
        Cmd::Plan(a) => a.design,
        Cmd::Compare(a) => a.design,
        Cmd::Catalog(a) => a.design,
        Cmd::Sim(a) => match a.command {
            crate::sim::SimCommand::Collective(c) => c.design,
            crate::sim::SimCommand::Flows(_) => panic!("sim flows takes no design"),
        },
        Cmd::Train(a) => a.design,
        Cmd::Report(a) => a.design,
        Cmd::Export(a) => match a.format {
            crate::interop::ExportFormat::Ibnet(a) => a.design,
            crate::interop::ExportFormat::Lldp(a) => a.design,
            crate::interop::ExportFormat::Slurm(a) => a.design,
        },
        Cmd::Verify(a) => a.design,
        other => panic!("{other:?} takes no design"),
    }
}

fn argv<'a>(prefix: &[&'a str], rest: &[&'a str]) -> Vec<String> {
    std::iter::once("railyard")
        .chain(prefix.iter().copied())
        .chain(rest.iter().copied())
        .map(str::to_string)
        .collect()
}

/// Parses a command line the way `railyard` does.
fn parse(prefix: &[&str], rest: &[&str]) -> Result<Cmd, clap::Error> {
    crate::Cli::try_parse_from(argv(prefix, rest)).map(|c| c.command)
}

/// The overrides a key sets from a text, through the table.
fn expected(k: &DesignKey, text: &str) -> Overrides {
    let mut o = Overrides::default();
    k.apply(&mut o, text).unwrap();
    o
}

/// The JSON values a request may carry for a text: the string, and the number or boolean it spells
/// where JSON writes that back as the same text.
fn json_values(text: &str) -> Vec<Json> {
    let mut v = vec![Json::String(text.to_string())];
    if let Ok(native @ (Json::Number(_) | Json::Bool(_))) = serde_json::from_str::<Json>(text) {
        // As JSON writes it (not `native == text`, which compares a JSON string's contents).
        let written = native.to_string();
        if written == text {
            v.push(native);
        }
    }
    v
}

/// The JSON API's answer to a design of one key.
fn post(json_name: &str, value: &Json) -> Result<DesignRequest, (u16, Json)> {
    let body = json!({ json_name: value }).to_string();
    DesignRequest::parse(body.as_bytes())
        .map_err(|r| (r.status, serde_json::from_slice(&r.body).unwrap()))
}

#[test]
fn every_design_key_is_a_flag_a_vary_key_and_a_json_key_with_the_same_validation() {
    let catalog = Catalog::builtin();
    for k in &DESIGN_KEYS {
        let (ok, bad) = k.examples(&catalog);
        let flag = format!("--{}", k.name);
        for text in &ok {
            let want = expected(k, text);
            if k.fronts.flag {
                for prefix in DESIGN_COMMANDS {
                    let cmd = parse(prefix, &[&format!("{flag}={text}")])
                        .unwrap_or_else(|e| panic!("{prefix:?} {flag}={text}: {e}"));
                    assert_eq!(design_of(cmd).overrides, want, "{prefix:?} {flag}={text}");
                }
            }
            if k.fronts.vary {
                let (key, v) = parse_kv(k.name, text).unwrap();
                let mut o = Overrides::default();
                (key.set)(&mut o, v);
                assert_eq!(o, want, "{}={text}", k.name);
            }
            if k.fronts.json {
                for value in json_values(text) {
                    let limit = app::REQUEST_LIMITS.iter().find(|(n, _)| *n == k.json);
                    let over = matches!((limit, k.parse(text)), (Some((_, max)), Ok(Value::Count(n))) if n > *max);
                    match post(k.json, &value) {
                        Ok(r) => {
                            assert!(!over, "{}: {value} is past the server's limit", k.json);
                            assert_eq!(r.overrides, want, "{}: {value}", k.json);
                            assert_eq!(r.given, [k.json]);
                        }
                        Err((status, e)) => {
                            assert!(over, "{}: {value}: {e}", k.json);
                            assert_eq!((status, e["field"].as_str()), (400, Some(k.json)));
                        }
                    }
                }
            }
        }
        for text in &bad {
            let error = k.parse(text).unwrap_err();
            let body = error.to_string();
            // The web API states the range it takes, which is narrower for keys it limits.
            let served = keys::KeyError {
                valid: app::valid_here(k),
                ..error
            };
            if k.fronts.flag {
                for prefix in DESIGN_COMMANDS {
                    let e = parse(prefix, &[&format!("{flag}={text}")]).unwrap_err();
                    assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
                    let shown = e.to_string();
                    assert!(
                        shown.contains(&format!("for '{flag} <{}>': {body}\n", k.value_name)),
                        "{prefix:?} {flag}={text}: {shown}"
                    );
                }
            }
            if k.fronts.vary {
                let e = parse_kv(k.name, text).unwrap_err();
                assert_eq!(e.status, 2);
                assert_eq!(e.message, format!("{}={text}: {body}", k.name));
            }
            if k.fronts.json {
                for value in json_values(text) {
                    let (status, e) = post(k.json, &value).unwrap_err();
                    assert_eq!(status, 400, "{}: {value}", k.json);
                    assert_eq!(e["field"], k.json);
                    assert_eq!(e["error"], format!("{}: {served}", k.json), "{value}");
                }
            }
        }
    }
}

#[test]
fn no_front_end_takes_a_key_outside_the_table() {
    // Flags: what the design flags add to a command is the spec, catalog and prices files and the
    // table's flag keys, nothing else.
    let cmd = <DesignArgs as clap::Args>::augment_args(clap::Command::new("t"));
    let mut flags: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
    flags.sort_unstable();
    let mut want = keys::names(&DESIGN_KEYS, Front::Flag);
    want.extend(["spec", "catalog", "prices"]);
    want.sort_unstable();
    assert_eq!(flags, want);
    for prefix in DESIGN_COMMANDS {
        let e = parse(prefix, &["--colour=red"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::UnknownArgument);
        // A JSON spelling is not a flag.
        assert!(parse(prefix, &["--gpus_per_server=8"]).is_err());
    }

    // --vary and DESIGN:key=value: the kebab names, nothing else.
    let vary = keys::names(&DESIGN_KEYS, Front::Vary);
    for name in ["colour", "gpus_per_server", "spec", "routing", "preset"] {
        let e = parse_kv(name, "1").unwrap_err();
        assert_eq!(
            e.message,
            format!("unknown key `{name}`; valid: {}", vary.join(", "))
        );
    }

    // JSON: `preset` and the snake_case names, then the run keys the API takes (`pxn`, `sharp`),
    // nothing else; an unknown key is named.
    let json_names = keys::names(&DESIGN_KEYS, Front::Json);
    let run_names = railyard_spec::run::names(Front::Json);
    for name in ["colour", "gpus-per-server", "catalog", "routing"] {
        let (status, e) = post(name, &json!(1)).unwrap_err();
        assert_eq!((status, e["field"].as_str()), (400, Some(name)));
        assert_eq!(
            e["error"],
            format!(
                "unknown key `{name}`; valid: preset, spec, model, {}, {}",
                json_names.join(", "),
                run_names.join(", ")
            )
        );
    }

    // The web form: the description the page is built from lists the JSON keys, marks the form's
    // fields, and gives each key's valid values (within the server's limits).
    let described = app::keys_json();
    let described = described["keys"].as_array().unwrap();
    let names: Vec<&str> = described
        .iter()
        .map(|k| k["json"].as_str().unwrap())
        .collect();
    assert_eq!(names, json_names);
    let form: Vec<&str> = described
        .iter()
        .filter(|k| k["form"] == true)
        .map(|k| k["json"].as_str().unwrap())
        .collect();
    assert_eq!(form, keys::names(&DESIGN_KEYS, Front::Form));
    for (info, k) in described
        .iter()
        .zip(DESIGN_KEYS.iter().filter(|k| k.fronts.json))
    {
        let limit = app::REQUEST_LIMITS.iter().find(|(n, _)| *n == k.json);
        match limit {
            None => assert_eq!(info["valid"], k.valid()),
            Some((_, l)) => assert!(info["valid"].as_str().unwrap().contains(&l.to_string())),
        }
        if let Kind::Count(b) = k.kind {
            let limit = limit.map_or(b.max, |(_, l)| b.max.min(*l));
            assert_eq!(
                (info["min"].as_u64(), info["max"].as_u64()),
                (Some(b.min.into()), Some(limit.into()))
            );
        }
        if let Kind::Choice { names, .. } = k.kind {
            assert_eq!(info["choices"], json!(names()));
        }
    }
    let page = app::page();
    assert!(page.contains(&format!("const KEYS = {};", app::keys_json())));
    // Every preset fills every field of the form.
    for p in app::presets_json()["presets"].as_array().unwrap() {
        for f in &form {
            assert!(!p[f].is_null(), "{}: {f}", p["name"]);
        }
    }
}

/// Commands that take a run key, as the words before it (with required arguments), and whether
/// they read `opensm:FILE`.
const ROUTING_COMMANDS: [(&[&str], bool); 5] = [
    (&["sim", "collective", "allreduce"], true),
    (
        &[
            "sim",
            "flows",
            "--hosts",
            "2",
            "--hosts-per-leaf",
            "1",
            "--spines",
            "1",
            "--link-gbps",
            "1",
            "--link-latency-ns",
            "1",
            "--flows",
            "f.txt",
        ],
        false,
    ),
    (&["train"], false),
    (&["compare"], false),
    (&["report", "--compare", "a", "b"], false),
];
const PXN_COMMANDS: [&[&str]; 4] = [
    &["sim", "collective", "allreduce"],
    &["train"],
    &["compare"],
    &["report", "--compare", "a", "b"],
];
const ALGO_COMMANDS: [&[&str]; 3] = [
    &["sim", "collective", "allreduce"],
    &["compare"],
    &["report", "--compare", "a", "b"],
];
/// Every command that takes `--qps-per-connection`: `sim flows` (its required flags first), `sim
/// collective`, `compare`, `report --compare`.
fn qps_commands() -> Vec<&'static [&'static str]> {
    let mut v: Vec<&'static [&'static str]> = ROUTING_COMMANDS
        .iter()
        .map(|c| c.0)
        .filter(|c| c[0] != "train")
        .collect();
    v.sort();
    v.dedup();
    v
}
const SHARP_COMMANDS: [&[&str]; 4] = PXN_COMMANDS;

/// The run key a parsed command line carries, as the run keys set it.
fn run_of(cmd: Cmd) -> RunOverrides {
    let mut r = RunOverrides::default();
    match cmd {
        Cmd::Sim(a) => match a.command {
            crate::sim::SimCommand::Collective(c) => {
                r.routing = c.routing;
                r.pxn = Some(c.pxn);
                r.algo = Some(c.algo);
                r.sharp = Some(c.sharp);
                r.qps_per_connection = Some(c.qps_per_connection);
            }
            crate::sim::SimCommand::Flows(f) => {
                r.routing = Some(RouteArg::Policy(f.routing));
                r.qps_per_connection = Some(f.qps_per_connection);
            }
        },
        Cmd::Train(a) => {
            r.routing = a.routing.map(RouteArg::Policy);
            r.pxn = Some(a.pxn);
            r.sharp = Some(a.sharp);
            r.qps_per_connection = Some(a.qps_per_connection);
        }
        Cmd::Compare(a) => {
            r.routing = a.study.routing.map(RouteArg::Policy);
            r.pxn = Some(a.study.pxn);
            r.sharp = Some(a.study.sharp);
            r.algo = Some(a.study.algo);
            r.qps_per_connection = Some(a.study.qps_per_connection);
        }
        Cmd::Report(a) => {
            r.routing = a.study.routing.map(RouteArg::Policy);
            r.pxn = Some(a.study.pxn);
            r.sharp = Some(a.study.sharp);
            r.algo = Some(a.study.algo);
            r.qps_per_connection = Some(a.study.qps_per_connection);
        }
        other => panic!("{other:?} takes no run keys"),
    }
    r
}

#[test]
fn every_run_key_is_parsed_by_the_table_in_every_command() {
    let catalog = Catalog::builtin();
    let commands = |k: &RunKey| -> Vec<(&'static [&'static str], bool)> {
        match k.name {
            "routing" => ROUTING_COMMANDS.to_vec(),
            "pxn" => PXN_COMMANDS.iter().map(|c| (*c, false)).collect(),
            "algo" => ALGO_COMMANDS.iter().map(|c| (*c, false)).collect(),
            "sharp" => SHARP_COMMANDS.iter().map(|c| (*c, false)).collect(),
            "qps-per-connection" => qps_commands().into_iter().map(|c| (c, false)).collect(),
            other => panic!("a run key no command takes: {other}"),
        }
    };
    // Routing, PXN, the algorithm, SHARP and the queue pairs are flags and `compare` pairs; the
    // layout keys pairs only.
    for k in &RUN_KEYS {
        let pair_only = !matches!(
            k.name,
            "routing" | "pxn" | "algo" | "sharp" | "qps-per-connection"
        );
        assert_eq!(k.fronts.flag, !pair_only, "{}", k.name);
        assert!(k.fronts.vary, "{}", k.name);
        // The web API takes PXN and SHARP, for the training step of its `model`.
        assert_eq!(
            k.fronts.json,
            matches!(k.name, "pxn" | "sharp"),
            "{}",
            k.name
        );
        assert!(!k.fronts.form, "{}", k.name);
    }
    for k in RUN_KEYS.iter().filter(|k| k.fronts.flag) {
        let flag = format!("--{}", k.name);
        let (ok, bad) = k.examples(&catalog);
        for (prefix, files) in commands(k) {
            // A command that reads no LFT dump takes the key without its file prefixes.
            let key = if files { k.key } else { k.without_files() };
            for text in ok.iter().chain(&bad) {
                let got = parse(prefix, &[&format!("{flag}={text}")]).map(run_of);
                match key.parse(text) {
                    Ok(_) => {
                        let mut want = railyard_spec::run::RunOverrides::default();
                        key.apply(&mut want, text).unwrap();
                        let want = RunOverrides::from(want);
                        let got = got.unwrap_or_else(|e| panic!("{prefix:?} {flag}={text}: {e}"));
                        let field = |r: &RunOverrides| match k.name {
                            "routing" => format!("{:?}", r.routing),
                            "pxn" => format!("{:?}", r.pxn),
                            "sharp" => format!("{:?}", r.sharp),
                            "qps-per-connection" => format!("{:?}", r.qps_per_connection),
                            _ => format!("{:?}", r.algo),
                        };
                        assert_eq!(field(&got), field(&want), "{prefix:?} {flag}={text}");
                    }
                    Err(e) => {
                        let shown = got.unwrap_err().to_string();
                        assert!(
                            shown.contains(&format!("for '{flag} <{}>': {e}\n", k.value_name)),
                            "{prefix:?} {flag}={text}: {shown}"
                        );
                    }
                }
            }
        }
    }
    // The names are the simulator's own.
    assert_eq!(ROUTING.valid(), "ecmp, dmodk, adaptive, opensm:FILE");
    assert_eq!(PXN.valid(), "auto, on, off, staged");
    assert_eq!(
        ALGO.valid(),
        "ring, tree, collnetdirect, collnetchain, nvls, nvlstree, pat, auto"
    );
    assert_eq!(
        parse_route("opensm:l.dump"),
        Ok(RouteArg::OpenSm("l.dump".into()))
    );
    assert_eq!(PxnArg::parse("pipelined"), Ok(PxnArg(Some(Relay::Pxn))));
    assert_eq!(PxnArg::parse("auto"), Ok(PxnArg(None)));
    assert_eq!(SHARP.valid(), "on, off");
    assert_eq!(SharpArg::parse("on"), Ok(SharpArg(true)));
    assert_eq!(SharpArg::parse("off"), Ok(SharpArg(false)));
}

#[test]
fn help_lists_every_design_flag_with_its_valid_values() {
    let mut cmd = crate::Cli::command();
    let plan = cmd.find_subcommand_mut("plan").unwrap();
    let help = plan.render_help().to_string();
    for k in DESIGN_KEYS.iter().filter(|k| k.fronts.flag) {
        assert!(
            help.contains(&format!("--{} <{}>", k.name, k.value_name)),
            "{help}"
        );
        assert!(help.contains(&format!("[valid: {}]", k.valid())), "{help}");
    }
}

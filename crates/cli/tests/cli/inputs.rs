//! Issue 33, inputs that contradict themselves or run past what the simulator holds: each test runs
//! the real binary on what once printed a wrong answer with exit status 0 and asserts the clear
//! error (exit 2, naming the flag, field or file) or the right answer. (The nccl-tests rows that
//! contradict themselves are in calibrate.rs, beside the other logs.)

use crate::common::{railyard, railyard_in};
use std::path::Path;
use std::process::Output;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Exit status 2, nothing on stdout, no panic, and every `needles` in the message.
fn refused(o: &Output, needles: &[&str]) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        o.stdout.is_empty(),
        "nothing printed on refusal: {}",
        stdout(o)
    );
    for n in needles {
        assert!(err.contains(n), "`{n}` not in: {err}");
    }
    err
}

/// No run of 17 or more digits: a number a message prints is read as typed, not in full.
fn no_long_numbers(text: &str) {
    let mut run = 0;
    for c in text.chars() {
        run = if c.is_ascii_digit() { run + 1 } else { 0 };
        assert!(run < 17, "a {run}-digit number in: {text}");
    }
}

const CLOCK: &str = "past the simulator's clock of 2^63 ps (106 days)";

/// Regression (issue 33): `sim collective --gpudirect off --host-memory-gbs 1e-9` printed times
/// past the 2^63 ps clock as if valid (9444732965739568 us at 8 GiB). A rate too low for the
/// largest message is refused for the flag before any work; one that passes that but still runs
/// the collective past the clock is refused naming the size, how long it would take, the resource
/// that held it back and the rates given.
#[test]
fn regression_sim_collective_printed_times_past_the_clock_as_valid() {
    let o = railyard([
        "sim",
        "collective",
        "allreduce",
        "--servers",
        "4",
        "--gpudirect",
        "off",
        "--host-memory-gbs",
        "1e-9",
    ]);
    refused(
        &o,
        &[&format!(
            "--host-memory-gbs 1e-9: the 8589934592-byte message (-e) would take 272 years, \
             {CLOCK}; valid: at least 9.4e-7 GB/s for it"
        )],
    );
    let o = railyard([
        "sim",
        "collective",
        "allreduce",
        "--servers",
        "4",
        "--gpudirect",
        "off",
        "--host-memory-gbs",
        "1e-6",
    ]);
    let e = refused(
        &o,
        &[
            "allreduce of ",
            CLOCK,
            "host memory, 5e-7 GB/s shared by",
            "(rates given: --host-memory-gbs 1e-6)",
        ],
    );
    no_long_numbers(&e);
    // The same flag at a rate the clock holds: times print.
    let o = railyard([
        "sim",
        "collective",
        "allreduce",
        "--servers",
        "4",
        "--gpudirect",
        "off",
        "--host-memory-gbs",
        "0.01",
        "-b",
        "1G",
        "-e",
        "1G",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("  1073741824 "), "{}", stdout(&o));
}

/// Regression (issue 33): a training step at `--efficiency 1e-300` printed a 300-digit step time.
/// It is refused, saying how long it would take and that the compute at that efficiency is why.
#[test]
fn regression_train_printed_a_step_past_the_clock() {
    let o = railyard([
        "train",
        "--model",
        "llama3-8b",
        "--servers",
        "2",
        "--efficiency",
        "1e-300",
    ]);
    let e = refused(
        &o,
        &[
            "a training step would take ",
            CLOCK,
            "at a compute efficiency of 1e-300 of the GPU's peak (--efficiency)",
        ],
    );
    no_long_numbers(&e);
}

/// Regression (issue 33): errors printed 300-digit numbers for `1e300`. Every one reads as typed.
#[test]
fn regression_errors_printed_300_digit_numbers_for_1e300() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["plan", "--oversubscription", "1e300", "-o", "out"],
            "1e300 is out of range; valid: 1 to 64",
        ),
        (
            &[
                "sim",
                "collective",
                "allreduce",
                "--gpudirect",
                "off",
                "--host-memory-gbs",
                "1e300",
            ],
            "--host-memory-gbs 1e300: must be a number of GB/s above zero, at most 1000000",
        ),
        (
            &["train", "--efficiency", "1e300"],
            "--efficiency 1e300: valid: above 0, at most 1",
        ),
        (
            &["train", "--pue", "1e300"],
            "1e300 is out of range; valid: 1 to 10",
        ),
    ];
    for (args, says) in cases {
        let e = refused(&railyard(args), &[says]);
        no_long_numbers(&e);
    }
}

/// A model file with every dimension 1.
const ONES: &str = "name = \"ones\"\ndescription = \"every dimension 1\"\nsource = \"test\"\n\
                    ffn_kind = \"gelu\"\ntied_embeddings = true\nlayers = 1\nhidden = 1\n\
                    heads = 1\nkv_heads = 1\nffn = 1\nvocab = 1\nseq = 1\n";

/// Regression (issue 33): `train --model-file` with every dimension 1 printed a 0.97 ps step and
/// 7984% link utilisation. It is refused naming the file, the field and the valid range; a model
/// at every minimum trains, at no more than 100% of any tier.
#[test]
fn regression_train_took_a_model_file_of_ones() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("ones.toml"), ONES).unwrap();
    refused(
        &railyard_in(d, ["train", "--model-file", "ones.toml", "--servers", "2"]),
        &["ones.toml: hidden 1 is out of range; valid: 64 to 131072 ("],
    );
    let least = ONES
        .replace("hidden = 1", "hidden = 64")
        .replace("ffn = 1", "ffn = 64")
        .replace("vocab = 1", "vocab = 256")
        .replace("seq = 1", "seq = 128");
    std::fs::write(d.join("least.toml"), least).unwrap();
    for servers in ["1", "2", "4"] {
        let o = railyard_in(
            d,
            [
                "train",
                "--model-file",
                "least.toml",
                "--servers",
                servers,
                "--json",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let step = v["step_time_s"].as_f64().unwrap();
        assert!(step > 1e-6, "a step of {step} s");
        for (tier, u) in v["network_utilisation"].as_object().unwrap() {
            let u = u.as_f64().unwrap();
            assert!((0.0..=1.0).contains(&u), "{servers} servers: {tier} at {u}");
        }
    }
    // `--seq` is held to the same least sequence.
    refused(
        &railyard(["train", "--model", "llama3-8b", "--seq", "1"]),
        &["--seq", "1 tokens; valid: 128 to 1048576"],
    );
}

/// The HDR100 plan the tests below verify against: 4 servers of ConnectX-6 at 100 Gb/s.
const HDR100: &str = "name = \"hdr100\"\n[servers]\ncount = 4\nnic = \"ConnectX-6\"\n[fabric]\n\
                      tech = \"ib-hdr\"\nport_gbps = 100\n[storage]\nfabric = \"none\"\n\
                      [management]\nin_band = \"none\"\nout_of_band = \"none\"\n";

/// Regression (issue 33): `4xHDR100` read as `4x???` (an unknown rate). A split mode's name is its
/// lanes of the speed, 2xHDR, as ibnetdiscover prints an HDR100 link: a discovery that names its
/// links so matches an HDR100 plan.
#[test]
fn regression_4xhdr100_was_shown_as_4x_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("hdr100.toml"), HDR100).unwrap();
    let o = railyard_in(
        d,
        ["export", "ibnet", "--spec", "hdr100.toml", "-o", "f.topo"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The export writes the 2x links as 4xHDR for ibsim; the site's tool names them HDR100.
    let topo = std::fs::read_to_string(d.join("f.topo")).unwrap();
    assert!(topo.contains("# 4xHDR"));
    std::fs::write(d.join("named.topo"), topo.replace("4xHDR", "4xHDR100")).unwrap();
    let o = railyard_in(
        d,
        [
            "verify",
            "--plan",
            "hdr100.toml",
            "--discovered",
            "named.topo",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).starts_with("match: 64 planned cables"),
        "{}",
        stdout(&o)
    );
    let o = railyard_in(d, ["check", "named.topo", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(!v.to_string().contains("???"), "{v}");
}

/// `d64.topo` in `d`: the ibsim export of a 64-server DGX H100 SuperPOD (NDR written as 4xHDR), and
/// `swap.topo`: the same with su2-srv12 hca1 and su2-srv13 hca1 swapped at su2-leaf1.
fn superpod_exports(d: &Path) {
    let o = railyard_in(
        d,
        [
            "export",
            "ibnet",
            "dgx-h100-superpod",
            "--servers",
            "64",
            "-o",
            "d64.topo",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let topo = std::fs::read_to_string(d.join("d64.topo")).unwrap();
    let mut header = "";
    let mut out = String::new();
    for line in topo.lines() {
        if line.starts_with("Switch") || line.starts_with("Ca") {
            header = line;
        }
        let on = |dev: &str| header.split('#').next().unwrap_or("").contains(dev);
        let swapped = match () {
            _ if on("\"su2-leaf1\"") && line.starts_with("[12]") => {
                line.replace("\"su2-srv12 hca1\"", "\"su2-srv13 hca1\"")
            }
            _ if on("\"su2-leaf1\"") && line.starts_with("[13]") => {
                line.replace("\"su2-srv13 hca1\"", "\"su2-srv12 hca1\"")
            }
            _ if on("\"su2-srv12 hca1\"") && line.starts_with("[1]") => {
                line.replace("\"su2-leaf1\"[12]", "\"su2-leaf1\"[13]")
            }
            _ if on("\"su2-srv13 hca1\"") && line.starts_with("[1]") => {
                line.replace("\"su2-leaf1\"[13]", "\"su2-leaf1\"[12]")
            }
            _ => line.to_string(),
        };
        out.push_str(&swapped);
        out.push('\n');
    }
    assert_ne!(out, topo);
    std::fs::write(d.join("swap.topo"), out).unwrap();
}

/// Regression (issue 33): verify named a device's place by its "slot" (its position in the rack,
/// su2-srv12 "slot 4") where cabling.csv names the rack unit (U25). Verify names both ends of
/// every cable as cabling.csv does: row, rack and lowest rack unit.
#[test]
fn regression_verify_named_a_slot_where_cabling_csv_names_a_rack_unit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    superpod_exports(d);
    let o = railyard_in(
        d,
        ["plan", "dgx-h100-superpod", "--servers", "64", "-o", "plan"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let csv = std::fs::read_to_string(d.join("plan/cabling.csv")).unwrap();
    // C0000345: su2-srv12 hca1 at row 3, rack 3, U25 (a_row, a_rack, a_u).
    let row = csv.lines().find(|l| l.starts_with("C0000345,")).unwrap();
    let cols: Vec<&str> = row.split(',').collect();
    assert_eq!((cols[5], cols[6]), ("su2-srv12", "hca1"), "{row}");
    assert_eq!((cols[12], cols[13], cols[14]), ("3", "3", "25"), "{row}");
    let verify = |json: &[&str]| {
        let args = [
            "verify",
            "--plan",
            "dgx-h100-superpod",
            "--servers",
            "64",
            "--ibsim",
            "--discovered",
            "swap.topo",
        ];
        railyard_in(d, [&args[..], json].concat())
    };
    let o = verify(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(
            "    C0000345 su2-leaf1[12] (row 3 rack 9 U1) - su2-srv12 hca1[1] (row 3 rack 3 U25)\n"
        ),
        "{text}"
    );
    assert!(!text.contains("slot"), "{text}");
    let o = verify(&["--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let at = &v["findings"][0]["cables"][0]["b_location"];
    assert_eq!(
        (at["row"].clone(), at["rack"].clone()),
        (3.into(), 3.into()),
        "{at}"
    );
    assert_eq!(
        (at["u"].clone(), at["height_u"].clone()),
        (25.into(), 8.into()),
        "{at}"
    );
}

/// Regression (issue 33): `check --plan` dropped the rack places and had no `--ibsim`, so an
/// ibsim rediscovery of an NDR plan showed a false wrong-rate finding for every cable. It takes
/// `--ibsim` as verify does and names the same places.
#[test]
fn regression_check_plan_dropped_rack_places_and_had_no_ibsim() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    superpod_exports(d);
    let plan = ["--plan", "dgx-h100-superpod", "--servers", "64"];
    let o = railyard_in(d, [&["check", "d64.topo"][..], &plan].concat());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("1024 cables run at 4xHDR, planned 4xNDR"),
        "{}",
        stdout(&o)
    );
    let o = railyard_in(
        d,
        [&["check", "d64.topo"][..], &plan, &["--ibsim"]].concat(),
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("match: 1024 planned cables"),
        "{}",
        stdout(&o)
    );
    // A swap: the same report, places and all, as verify's.
    let check = railyard_in(
        d,
        [&["check", "swap.topo"][..], &plan, &["--ibsim"]].concat(),
    );
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    let verify = railyard_in(
        d,
        [
            &["verify", "--discovered", "swap.topo", "--ibsim"][..],
            &plan,
        ]
        .concat(),
    );
    let verified = stdout(&verify);
    assert!(verified.contains("(row 3 rack 3 U25)"), "{verified}");
    assert!(stdout(&check).ends_with(&verified), "{}", stdout(&check));
    refused(
        &railyard_in(d, ["check", "d64.topo", "--ibsim"]),
        &["--ibsim", "--plan"],
    );
}

/// GPU names are matched without regard to case where a user types them: `--gpu h100` plans the
/// catalog's H100, byte for byte as `--gpu H100` does; a name that is no GPU in any case is
/// refused naming the valid ones.
#[test]
fn gpu_names_ignore_case() {
    let exact = railyard(["plan", "--gpu", "H100", "--servers", "32"]);
    let lower = railyard(["plan", "--gpu", "h100", "--servers", "32"]);
    assert!(exact.status.success(), "{}", stderr(&exact));
    assert!(lower.status.success(), "{}", stderr(&lower));
    assert_eq!(stdout(&exact), stdout(&lower));
    let err = refused(
        &railyard(["plan", "--gpu", "h1000", "--servers", "32"]),
        &["h1000", "valid:", "H100"],
    );
    no_long_numbers(&err);
}

//! `railyard jobs`, run as the real binary: a job mix on one fabric (a job alone is `train`'s
//! step, byte for byte; the issue's mix at a sixteenth of its size on the non-blocking, 2:1 and
//! rail-only designs; a discovered fabric), a trace replay, and bad input.

use serde_json::Value;

use crate::common::{railyard, railyard_in};

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn ok(args: &[&str]) -> String {
    let o = railyard(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&ok(args)).expect("--json prints JSON")
}

/// A job that takes every GPU of the design, alone, prints the breakdown `train --json` prints,
/// every number byte for byte, under every placement policy that keeps the servers in order.
#[test]
fn a_job_alone_is_train_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let mix = dir.path().join("one.toml");
    std::fs::write(
        &mix,
        "[[job]]\nname = \"all\"\nmodel = \"llama3-8b\"\ngpus = 128\n",
    )
    .unwrap();
    let mix = mix.display().to_string();
    let train = json(&["train", "--servers", "16", "--model", "llama3-8b", "--json"]);
    let jobs = json(&[
        "jobs",
        "--servers",
        "16",
        "--mix",
        &mix,
        "--placement",
        "topology,contiguous",
        "--json",
    ]);
    for run in jobs["runs"].as_array().unwrap() {
        let job = &run["jobs"][0];
        assert_eq!(
            job["alone"]["breakdown"], train["breakdown"],
            "{}",
            run["placement"]
        );
        assert_eq!(job["shared"]["breakdown"], train["breakdown"]);
        assert_eq!(job["slowdown"], 1.0);
        assert_eq!(job["shared_links"], 0);
    }
}

/// The issue's mix (two Llama 3 70B jobs and four MoE jobs on a 16,384-GPU design) at a
/// sixteenth of its size: docs/examples/jobs-1k.toml on 128 servers. Topology-aware placement
/// puts each Llama job in a scalable unit of its own and the MoE jobs in the last: their
/// rings and all-to-alls stay on rail leaves, no link is shared, every job runs as alone, on
/// every design. Scattered, the jobs cross the spines (of the rail-only design too: its rail
/// spines) and share them; no job runs faster than alone, and some slow down.
#[test]
fn the_issues_mix_at_a_sixteenth_topology_against_scattered() {
    let mix = root()
        .join("docs/examples/jobs-1k.toml")
        .display()
        .to_string();
    for design in [
        &[][..],
        &["--oversubscription", "2"],
        &["--topology", "rail-only"],
    ] {
        let mut args = vec!["jobs", "--servers", "128", "--mix", &mix, "--json"];
        args.extend(design);
        let v = json(&args);
        let runs = v["runs"].as_array().unwrap();
        assert_eq!(runs[0]["placement"], "topology");
        assert_eq!(runs[1]["placement"], "scattered");
        for job in runs[0]["jobs"].as_array().unwrap() {
            assert_eq!(job["shared_links"], 0, "{design:?} {job}");
            assert_eq!(job["slowdown"], 1.0, "{design:?}");
        }
        let scattered = runs[1]["jobs"].as_array().unwrap();
        let slow: Vec<f64> = scattered
            .iter()
            .map(|j| j["slowdown"].as_f64().unwrap())
            .collect();
        assert!(slow.iter().all(|&s| s >= 1.0), "{design:?} {slow:?}");
        assert!(slow.iter().any(|&s| s > 1.0), "{design:?} {slow:?}");
        assert!(scattered
            .iter()
            .any(|j| j["shared_links"].as_u64().unwrap() > 0));
    }
}

/// A discovered fabric (a real 2014 QDR/FDR10 ibnetdiscover output, its servers described by
/// the flags) runs a mix as a plan does: placed by the Slurm tree of the discovery.
#[test]
fn a_discovered_fabric_runs_a_mix() {
    let dir = tempfile::tempdir().unwrap();
    let mix = dir.path().join("two.toml");
    std::fs::write(
        &mix,
        "[[job]]\nname = \"a\"\nmodel = \"llama3-8b\"\ngpus = 128\n[[job]]\nname = \"b\"\ntraffic = \"allreduce\"\nbytes = \"1G\"\ngpus = 64\n",
    )
    .unwrap();
    let real = root().join("crates/ib/tests/data/real/sx6036-qdr-fdr10-2014.ibnetdiscover");
    let out = railyard_in(
        dir.path(),
        [
            "jobs",
            "--fabric",
            real.to_str().unwrap(),
            "--gpu",
            "H100",
            "--gpus-per-server",
            "8",
            "--mix",
            "two.toml",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(
            "railyard jobs: 2 jobs on sx6036-qdr-fdr10-2014.ibnetdiscover (144 servers, 1,152 GPUs"
        ),
        "{text}"
    );
    assert!(text.contains("allreduce 1 GiB"), "{text}");
}

/// A generated trace replays under every policy; contiguous placement leaves GPUs idle that no
/// placement fits (best fit and scattered never: any free servers of the one network fit), and
/// the same seed prints the same numbers.
#[test]
fn a_trace_replays_under_every_policy() {
    let args = [
        "jobs",
        "--servers",
        "64",
        "--generate",
        "150",
        "--load",
        "1.2",
        "--placement",
        "topology,contiguous,scattered",
        "--json",
    ];
    let a = ok(&args);
    assert_eq!(a, ok(&args), "same seed, same output");
    let v: Value = serde_json::from_str(&a).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    for r in runs {
        assert_eq!(r["jobs"], 150);
        assert!(
            r["unplaceable_gpu_h"].as_f64().unwrap() <= r["idle_waiting_gpu_h"].as_f64().unwrap()
        );
        assert!(r["slowdown_mean"].as_f64().unwrap() >= 1.0);
    }
    assert_eq!(runs[0]["unplaceable_gpu_h"], 0.0);
    assert_eq!(runs[2]["unplaceable_gpu_h"], 0.0);
}

/// Bad input: the error names the file, the job and the key, exit 2.
#[test]
fn bad_mixes_and_traces_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("odd.toml"),
        "[[job]]\nname = \"x\"\nmodel = \"llama3-8b\"\ngpus = 12\n",
    )
    .unwrap();
    std::fs::write(d.join("big.toml"), "[[job]]\nname = \"x\"\nmodel = \"llama3-8b\"\ngpus = 64\n[[job]]\nname = \"y\"\nmodel = \"llama3-8b\"\ngpus = 8\n").unwrap();
    std::fs::write(
        d.join("t.csv"),
        "submit_s,gpus,duration_s\n0,8,10\n0,x,10\n",
    )
    .unwrap();
    for (args, want) in [
        (
            &["--mix", "odd.toml"][..],
            "odd.toml: job `x`: gpus: 12 is not whole servers",
        ),
        (
            &["--mix", "big.toml"],
            "big.toml: job `y`: no topology placement of 1 servers fits",
        ),
        (
            &["--mix", "big.toml", "--placement", "nearest"],
            "--placement nearest: valid: topology, contiguous, scattered",
        ),
        (
            &["--mix", "big.toml", "--overlap", "some"],
            "--overlap some: valid: aligned, averaged",
        ),
        (&["--replay", "t.csv"], "t.csv: line 3: gpus `x`"),
        (
            &[
                "--mix",
                "big.toml",
                "--placement",
                "topology",
                "--seed",
                "3",
            ],
            "--seed 3 has no effect",
        ),
    ] {
        let mut all = vec!["jobs", "--servers", "8"];
        all.extend(args);
        let out = railyard_in(d, &all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(want), "{args:?}: {e}");
    }
}

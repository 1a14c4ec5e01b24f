//! Unit tests of many jobs on one fabric: a job alone is `train`'s step, placement policies, and
//! what sharing does.

use super::mix::{parse, Job};
use super::place::{policy, Contiguous, Placement, Scattered, Topology, TopologyBestFit};
use super::share::Overlap;
use super::{run_mix, MixRun};
use crate::train::{training_step, Pricing, StepSetup};
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_sim::collective::Relay;
use railyard_sim::fabric_net::NetConfig;
use railyard_sim::routing::RoutingKind;
use railyard_spec::{presets, ClusterSpec, Overrides};
use railyard_train::parallel::Layout;
use railyard_train::step::StepConfig;

fn fabric(o: Overrides) -> Fabric {
    let mut raw = presets::raw("dgx-h100-superpod").unwrap();
    o.apply(&mut raw).unwrap();
    let spec = ClusterSpec::from_raw(&raw, "test").unwrap();
    railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
}

fn servers(n: u32) -> Overrides {
    Overrides {
        servers: Some(n),
        ..Default::default()
    }
}

fn run(f: &Fabric, mix: &str, placement: &str, overlap: Overlap) -> MixRun {
    let catalog = Catalog::builtin();
    let net = NetConfig::default();
    let setup = StepSetup {
        fabric: f,
        catalog: &catalog,
        net: &net,
        routing: RoutingKind::DModK,
        relay: Relay::auto(f, &catalog),
        step: StepConfig::default(),
    };
    let jobs: Vec<Job> = parse(mix, "mix.toml").unwrap();
    let mut p = policy(placement, 7).unwrap();
    run_mix(&setup, &jobs, (p.as_mut(), None), overlap).unwrap()
}

const TWO_JOBS: &str = r#"
[[job]]
name = "a"
model = "llama3-8b"
gpus = 256
[[job]]
name = "b"
model = "llama3-8b"
gpus = 256
"#;

/// A job that takes every GPU of the design, alone, is the step `train` predicts, to the bit:
/// the same layout, the same timer, the same ranks on the same servers.
#[test]
fn a_job_alone_on_the_whole_design_is_trains_step() {
    let f = fabric(servers(16));
    let catalog = Catalog::builtin();
    let net = NetConfig::default();
    let setup = StepSetup {
        fabric: &f,
        catalog: &catalog,
        net: &net,
        routing: RoutingKind::DModK,
        relay: Relay::auto(&f, &catalog),
        step: StepConfig::default(),
    };
    let model = railyard_train::model::Model::preset("llama3-8b").unwrap();
    let assumptions = crate::tco::Assumptions::default();
    let pricing = Pricing {
        network_usd: 1.0,
        capex: None,
        assumptions: &assumptions,
    };
    let train = training_step(&setup, &model, &Layout::unasked(), &pricing).unwrap();
    for placement in ["topology", "contiguous", "scattered"] {
        let r = run(
            &f,
            "[[job]]\nmodel = \"llama3-8b\"\ngpus = 128\n",
            placement,
            Overlap::Aligned,
        );
        let job = &r.jobs[0];
        let mut servers = job.servers.clone();
        servers.sort_unstable();
        assert_eq!(servers, (0..16).collect::<Vec<_>>(), "{placement}");
        if placement != "scattered" {
            assert_eq!(job.alone.breakdown.as_ref(), Some(&train.breakdown));
        }
        assert_eq!(job.shared.load, job.alone, "alone, shared is alone");
        assert!(job.shared.contended.is_empty());
    }
}

/// Two jobs of one scalable unit each on a rail-optimized tree: topology-aware placement keeps
/// each job's rings on its unit's rail leaves, so no link is shared and both run as alone;
/// scattered over both units, their rings cross the spines. On a 2:1 tree the scattered jobs
/// share up-links and slow down; sharing never speeds a step, and the averaged overlap never
/// costs more than the aligned one.
#[test]
fn topology_placement_keeps_jobs_apart_where_scattered_ones_share_spines() {
    let nb = fabric(servers(64));
    let topo = run(&nb, TWO_JOBS, "topology", Overlap::Aligned);
    for j in &topo.jobs {
        assert_eq!(j.leaves, 1, "{}", j.name);
        assert!(j.shared.contended.is_empty());
        assert_eq!(j.slowdown(), 1.0);
    }
    let two_to_one = fabric(Overrides {
        servers: Some(64),
        topology: Some(railyard_spec::Topology::FatTree),
        oversubscription: Some(2.0),
        ..Default::default()
    });
    let aligned = run(&two_to_one, TWO_JOBS, "scattered", Overlap::Aligned);
    let averaged = run(&two_to_one, TWO_JOBS, "scattered", Overlap::Averaged);
    let mut slower = false;
    for (a, v) in aligned.jobs.iter().zip(&averaged.jobs) {
        assert!(a.leaves >= 2, "{}", a.name);
        assert!(a.slowdown() >= 1.0 - 1e-12, "{} {}", a.name, a.slowdown());
        assert!(v.slowdown() >= 1.0 - 1e-12);
        assert!(v.slowdown() <= a.slowdown() + 1e-12);
        slower |= a.slowdown() > 1.0 && !a.shared.contended.is_empty();
    }
    assert!(slower, "scattered on 2:1: some job slows down");
}

/// Jobs that start later are placed on what the earlier ones leave; a job that ends frees its
/// servers; each job reports its slowest phase.
#[test]
fn phases_follow_starts_and_ends() {
    let f = fabric(servers(64));
    let mix = r#"
[[job]]
name = "a"
model = "llama3-8b"
gpus = 256
end = 10
[[job]]
name = "b"
model = "llama3-8b"
gpus = 256
start = 5
[[job]]
name = "c"
model = "llama3-8b"
gpus = 256
start = 10
"#;
    let r = run(&f, mix, "contiguous", Overlap::Aligned);
    let phases: Vec<Vec<String>> = r.phases.iter().map(|p| p.jobs.clone()).collect();
    assert_eq!(phases, [vec!["a"], vec!["a", "b"], vec!["b", "c"]]);
    // c takes the unit a left.
    assert_eq!(r.jobs[2].servers, r.jobs[0].servers);
}

fn topo(f: &Fabric) -> Topology {
    Topology::of(f).unwrap()
}

/// Best fit takes the leaf group that fits a job most tightly; contiguous needs a run of free
/// servers and finds none in a fragmented unit; scattered draws the same servers for the same
/// seed and different ones for another.
#[test]
fn placement_policies() {
    let f = fabric(servers(64));
    let t = topo(&f);
    assert_eq!(t.switch_level.iter().filter(|&&l| l == 0).count(), 2);
    // Unit 1 has 4 free servers, unit 2 all 32: a 4-server job goes to unit 1.
    let mut free = vec![true; 64];
    for s in t.switch_servers[0].iter().skip(4) {
        free[*s] = false;
    }
    let got = TopologyBestFit.place(&t, &free, 4).unwrap();
    assert!(got.iter().all(|s| t.leaf_of[*s] == 0), "{got:?}");
    // 33 servers span both units: the whole free part of one and the rest of the other.
    let every = vec![true; 64];
    let big = TopologyBestFit.place(&t, &every, 33).unwrap();
    assert_eq!(t.leaves_spanned(&big), 2);
    // Every other server taken: no two consecutive free servers.
    let checker: Vec<bool> = (0..64).map(|s| s % 2 == 0).collect();
    assert_eq!(Contiguous.place(&t, &checker, 2), None);
    assert!(TopologyBestFit.place(&t, &checker, 2).is_some());
    let a = Scattered { state: 3 }.place(&t, &every, 8).unwrap();
    let b = Scattered { state: 3 }.place(&t, &every, 8).unwrap();
    let c = Scattered { state: 4 }.place(&t, &every, 8).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!(Scattered { state: 3 }.place(&t, &every, 65), None);
}

/// Explicit servers win over the policy and are checked: unknown names and servers another job
/// holds are errors naming the job.
#[test]
fn explicit_servers_are_checked() {
    let f = fabric(servers(16));
    let catalog = Catalog::builtin();
    let net = NetConfig::default();
    let setup = StepSetup {
        fabric: &f,
        catalog: &catalog,
        net: &net,
        routing: RoutingKind::DModK,
        relay: Relay::auto(&f, &catalog),
        step: StepConfig::default(),
    };
    let mix = |x: &str| {
        format!(
            "[[job]]\nname = \"x\"\nmodel = \"llama3-8b\"\ngpus = 16\nservers = \"{x}\"\n[[job]]\nname = \"y\"\nmodel = \"llama3-8b\"\ngpus = 16\n"
        )
    };
    let name = |s: usize| f.servers[s].name.clone();
    let ok = parse(&mix(&format!("{},{}", name(5), name(9))), "m").unwrap();
    let r = run_mix(&setup, &ok, (&mut TopologyBestFit, None), Overlap::Aligned).unwrap();
    assert_eq!(r.jobs[0].servers, vec![5, 9]);
    assert!(r.jobs[1].servers.iter().all(|s| ![5, 9].contains(s)));
    for (servers, want) in [
        ("nosuch[1-2]".to_string(), "no server `nosuch1`"),
        (format!("{},{}", name(1), name(1)), "listed twice"),
        (name(1), "1 servers listed for 16 GPUs"),
    ] {
        let jobs = parse(&mix(&servers), "m").unwrap();
        let e = run_mix(
            &setup,
            &jobs,
            (&mut TopologyBestFit, None),
            Overlap::Aligned,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains(want) && e.starts_with("job `x`"), "{e}");
    }
}

/// A replay by hand: a job of half the design runs 100 s; one of the whole design arrives at
/// 1 s and waits for it (first come, first served), starting at 100 s and ending at 110 s. While
/// it waits, half the GPUs idle (64 x 99 GPU-seconds), none of them unplaceable: the head job
/// asks for more GPUs than are free. Alone on the fabric neither job slows.
#[test]
fn a_replay_by_hand() {
    use super::replay::replay;
    use super::trace::TraceJob;
    let f = fabric(servers(16));
    let catalog = Catalog::builtin();
    let net = NetConfig::default();
    let setup = StepSetup {
        fabric: &f,
        catalog: &catalog,
        net: &net,
        routing: RoutingKind::DModK,
        relay: Relay::auto(&f, &catalog),
        step: StepConfig::default(),
    };
    let trace = [
        TraceJob {
            submit_s: 0.0,
            gpus: 64,
            duration_s: 100.0,
        },
        TraceJob {
            submit_s: 1.0,
            gpus: 128,
            duration_s: 10.0,
        },
    ];
    let r = replay(&setup, &trace, &mut TopologyBestFit, Overlap::Aligned).unwrap();
    assert_eq!((r.jobs[0].start_s, r.jobs[0].end_s), (0.0, 100.0));
    assert_eq!((r.jobs[1].start_s, r.jobs[1].end_s), (100.0, 110.0));
    assert_eq!(r.idle_waiting_gpu_s, 64.0 * 99.0);
    assert_eq!(r.unplaceable_gpu_s, 0.0);
    assert_eq!(r.makespan_s, 110.0);
    assert!(r.jobs.iter().all(|j| j.slowdown == 1.0));
    assert_eq!(r.alone_steps, 2);
}

/// Llama 3 70B on 32 DGX H100, a checkpoint every 100 steps: the same 988 GB either way (70.6e9
/// parameters x 14 bytes), the same host copy; written over the storage fabric, the step during
/// the write is the step alone; over the compute fabric (`storage=compute`), the write takes its
/// rate from the job's host links and leaf uplinks and the step during it is slower.
#[test]
fn checkpointing_slows_the_step_only_where_storage_shares_the_compute_fabric() {
    let mix =
        "[[job]]\nname = \"llama\"\nmodel = \"llama3-70b\"\ngpus = 256\ncheckpoint_every = 100\n";
    let catalog = Catalog::builtin();
    let net = NetConfig::default();
    let mut got = Vec::new();
    for planned in [true, false] {
        let mut raw = presets::raw("dgx-h100-superpod").unwrap();
        let o = Overrides {
            servers: Some(32),
            storage_on_compute: !planned,
            ..Default::default()
        };
        o.apply(&mut raw).unwrap();
        let spec = ClusterSpec::from_raw(&raw, "test").unwrap();
        let f = railyard_fabric::build(&spec, &catalog).unwrap();
        let setup = StepSetup {
            fabric: &f,
            catalog: &catalog,
            net: &net,
            routing: RoutingKind::DModK,
            relay: Relay::auto(&f, &catalog),
            step: StepConfig::default(),
        };
        let storage = super::checkpoint::Storage::of(&spec, &f, &catalog);
        let jobs = parse(mix, "mix.toml").unwrap();
        let r = run_mix(
            &setup,
            &jobs,
            (&mut TopologyBestFit, storage.as_ref()),
            Overlap::Aligned,
        )
        .unwrap();
        got.push(r.jobs[0].checkpoint.clone().expect("a checkpoint"));
    }
    let (own, shared) = (&got[0], &got[1]);
    let model = railyard_train::model::Model::preset("llama3-70b").unwrap();
    assert_eq!(own.bytes, model.params() as f64 * 14.0);
    assert!((9.8e11..9.95e11).contains(&own.bytes), "{}", own.bytes);
    assert_eq!(own.bytes, shared.bytes);
    assert_eq!(own.bytes_per_server, own.bytes / 32.0);
    assert_eq!(own.copy_s, shared.copy_s);
    assert!(own.copy_s > 0.0);
    assert_eq!(
        (own.network, shared.network),
        ("storage fabric", "compute fabric")
    );
    // 12 storage-system ports (3 per 8 servers) at 400 Gb/s, shared by 32 servers: 18.75 GB/s,
    // below a DGX H100's two storage ports (100 GB/s after the 4:3 leaves: 75 GB/s).
    assert!((own.write_gbs_per_server - 18.75).abs() < 1e-9, "{own:?}");
    assert!(
        (shared.write_gbs_per_server - 18.75).abs() < 1e-9,
        "{shared:?}"
    );
    for c in [own, shared] {
        assert!((c.write_s - c.bytes_per_server / (c.write_gbs_per_server * 1e9)).abs() < 1e-9);
        assert!((c.added_per_step_s - c.added_s / 100.0).abs() < 1e-12);
    }
    assert_eq!(own.step_during_write_s, own.step_s);
    assert!((own.added_s - own.copy_s).abs() < 1e-12);
    assert_eq!(own.step_s, shared.step_s);
    assert!(
        shared.step_during_write_s > shared.step_s,
        "the write on the compute fabric slows the step: {shared:?}"
    );
    assert!(shared.added_s > own.added_s);
}

/// Two Llama 3 8B jobs of 48 servers each on 96 DGX H100 (three units) without a storage fabric:
/// placed by topology both span the middle unit, so `a`'s checkpoint, written through the compute
/// fabric, takes its share of the uplinks `b` crosses too, and `b`'s step during the write is
/// slower than alone; with the storage fabric no other job is touched.
#[test]
fn a_checkpoint_on_the_compute_fabric_slows_the_jobs_that_share_its_links() {
    let mix = "[[job]]\nname = \"a\"\nmodel = \"llama3-8b\"\ngpus = 384\ncheckpoint_every = 50\n\
               [[job]]\nname = \"b\"\nmodel = \"llama3-8b\"\ngpus = 384\n";
    let catalog = Catalog::builtin();
    let net = NetConfig::default();
    for planned in [false, true] {
        let mut raw = presets::raw("dgx-h100-superpod").unwrap();
        let o = Overrides {
            servers: Some(96),
            storage_on_compute: !planned,
            ..Default::default()
        };
        o.apply(&mut raw).unwrap();
        let spec = ClusterSpec::from_raw(&raw, "test").unwrap();
        let f = railyard_fabric::build(&spec, &catalog).unwrap();
        let setup = StepSetup {
            fabric: &f,
            catalog: &catalog,
            net: &net,
            routing: RoutingKind::DModK,
            relay: Relay::auto(&f, &catalog),
            step: StepConfig::default(),
        };
        let storage = super::checkpoint::Storage::of(&spec, &f, &catalog);
        let jobs = parse(mix, "mix.toml").unwrap();
        let r = run_mix(
            &setup,
            &jobs,
            (&mut TopologyBestFit, storage.as_ref()),
            Overlap::Aligned,
        )
        .unwrap();
        let c = r.jobs[0].checkpoint.clone().expect("a checkpoints");
        assert!(r.jobs[1].checkpoint.is_none());
        if planned {
            assert!(c.others.is_empty(), "{c:?}");
        } else {
            assert_eq!(c.others.len(), 1, "{c:?}");
            let b = &c.others[0];
            assert_eq!(b.name, "b");
            assert_eq!(b.step_s, r.jobs[1].alone.step_s);
            assert!(b.step_during_write_s > b.step_s, "{b:?}");
        }
    }
}

/// A design with no storage network refuses a checkpointing job, naming it and the choices.
#[test]
fn a_checkpoint_needs_a_storage_network() {
    let catalog = Catalog::builtin();
    let mut raw = presets::raw("dgx-h100-superpod").unwrap();
    Overrides {
        servers: Some(4),
        storage: Some(false),
        ..Default::default()
    }
    .apply(&mut raw)
    .unwrap();
    let spec = ClusterSpec::from_raw(&raw, "test").unwrap();
    let f = railyard_fabric::build(&spec, &catalog).unwrap();
    assert_eq!(super::checkpoint::Storage::of(&spec, &f, &catalog), None);
    let net = NetConfig::default();
    let setup = StepSetup {
        fabric: &f,
        catalog: &catalog,
        net: &net,
        routing: RoutingKind::DModK,
        relay: Relay::auto(&f, &catalog),
        step: StepConfig::default(),
    };
    let jobs = parse(
        "[[job]]\nname = \"x\"\nmodel = \"llama3-8b\"\ngpus = 32\ncheckpoint_every = 10\n",
        "mix.toml",
    )
    .unwrap();
    let e = run_mix(
        &setup,
        &jobs,
        (&mut TopologyBestFit, None),
        Overlap::Aligned,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("`x`") && e.contains("--storage auto") && e.contains("--storage compute"),
        "{e}"
    );
}

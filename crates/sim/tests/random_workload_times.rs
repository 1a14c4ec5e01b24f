//! Finish times of random workloads (`sim flows --generate`), pinned by a hash of every flow's
//! finish time: an engine change that makes the simulator faster must leave every time as it was,
//! to the picosecond. The hashes were recorded with the engine of commit 27ac3a5 (before the
//! memory-layout work of issue 14 recorded in BENCHMARKS.md), whose incremental re-solves the
//! engine's own tests check, bit for bit, against water-filling from scratch. The 1,000,000-flow
//! benchmark run is checked the same way by `cargo run --release -p railyard-sim --example
//! flows_hash` (BENCHMARKS.md).

use railyard_sim::leafspine::{self, LeafSpine, LeafSpineConfig};
use railyard_sim::rates::INFINIBAND;
use railyard_sim::routing::{build, RoutingConfig, RoutingKind};
use railyard_sim::traffic::Generate;
use railyard_sim::Time;

/// FNV-1a (64 bits) of every flow's finish time in picoseconds, little-endian, in flow order: as
/// `examples/flows_hash.rs` prints it.
fn finish_hash(hosts: u32, per_leaf: u32, spines: u32, spec: &str) -> u64 {
    let net = LeafSpine::new(LeafSpineConfig {
        hosts,
        hosts_per_leaf: per_leaf,
        spines,
        link_gbps: 400.0,
        hop_latency: Time::from_ns(150),
        packet_format: Some(INFINIBAND),
    })
    .unwrap();
    let flows = Generate::parse(spec)
        .unwrap()
        .flows(net.hosts(), net.link_rate())
        .unwrap()
        .flows;
    let routing = build(RoutingKind::Ecmp, RoutingConfig::default());
    let run = leafspine::simulate(&net, routing.as_ref(), &flows).unwrap();
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for f in &run.flows {
        for b in f.finish.ps().to_le_bytes() {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// 20,000 flows arriving as a Poisson process at 60% load on 16,384 hosts: the benchmark's
/// workload, a fiftieth of its size (about 40,000 re-solves, a third of them with restarts).
#[test]
fn poisson_arrivals_finish_at_the_recorded_times() {
    let spec = "lognormal:flows=20000,median=1000000,sigma=2,arrivals=poisson,load=0.6,seed=2";
    assert_eq!(finish_hash(16_384, 64, 64, spec), 0x3f6a_9706_eb2d_f217);
}

/// 2,000 flows all starting at zero on 1,024 hosts: re-solves that touch many flows each, and one
/// that falls back to water-filling from scratch.
#[test]
fn flows_starting_together_finish_at_the_recorded_times() {
    let spec = "lognormal:flows=2000,median=1000000";
    assert_eq!(finish_hash(1_024, 32, 32, spec), 0x2b17_807e_617a_c1a5);
}

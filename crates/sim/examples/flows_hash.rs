//! Runs one `sim flows --generate SPEC` workload as `benches/flows.rs` does (ECMP, 400 Gb/s links
//! with InfiniBand headers, 150 ns per hop) and prints the wall time of generating, routing and
//! simulating it, the engine's counters, and an FNV-1a hash of every flow's finish time: the check
//! that an engine change leaves every finish time as it was (BENCHMARKS.md).
//!
//! `cargo run --release -p railyard-sim --example flows_hash -- HOSTS PER_LEAF SPINES SPEC`

use railyard_sim::leafspine::{self, LeafSpine, LeafSpineConfig};
use railyard_sim::rates::INFINIBAND;
use railyard_sim::routing::{build, RoutingConfig, RoutingKind};
use railyard_sim::traffic::Generate;
use railyard_sim::Time;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [hosts, per_leaf, spines, spec] = args.as_slice() else {
        eprintln!("usage: flows_hash HOSTS PER_LEAF SPINES SPEC");
        std::process::exit(2);
    };
    let number = |s: &str| -> u32 {
        s.parse().unwrap_or_else(|_| {
            eprintln!("not a number: {s}");
            std::process::exit(2)
        })
    };
    let net = LeafSpine::new(LeafSpineConfig {
        hosts: number(hosts),
        hosts_per_leaf: number(per_leaf),
        spines: number(spines),
        link_gbps: 400.0,
        hop_latency: Time::from_ns(150),
        packet_format: Some(INFINIBAND),
    })
    .unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let generate = Generate::parse(spec).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let clock = Instant::now();
    let flows = generate
        .flows(net.hosts(), net.link_rate())
        .unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(2)
        })
        .flows;
    let routing = build(RoutingKind::Ecmp, RoutingConfig::default());
    let run = leafspine::simulate(&net, routing.as_ref(), &flows).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let seconds = clock.elapsed().as_secs_f64();
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for f in &run.flows {
        for b in f.finish.ps().to_le_bytes() {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    // Little's law: flows in flight on average = total time in flight / span of the run.
    let busy: f64 = run
        .flows
        .iter()
        .map(|f| (f.finish.ps() - f.start.ps()) as f64)
        .sum();
    let end = run.flows.iter().map(|f| f.finish.ps()).max().unwrap_or(0);
    println!("flows {} wall {seconds:.2} s", run.flows.len());
    println!(
        "simulated {:.3} ms, {:.0} flows in flight on average",
        end as f64 / 1e9,
        busy / end.max(1) as f64
    );
    println!("{:?}", run.stats);
    println!("finish fnv1a64 {hash:016x}");
}

//! Tests of `domain.rs` (a training job on rack-scale NVLink domains), beside `lay_out`, which they
//! run.

use crate::domain::*;
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_sim::collective::Relay;
use railyard_sim::fabric_net::{NetConfig, RoutedNet};
use railyard_sim::routing::{RoutingConfig, RoutingKind};
use railyard_spec::{presets, ClusterSpec, Overrides};
use railyard_train::fabric_timer::FabricTimer;
use railyard_train::model::Model;
use railyard_train::parallel::Layout;
use railyard_train::parallel::Parallelism;
use railyard_train::step::{CommTimer, Op};

fn fabric(preset: &str, servers: u32) -> Fabric {
    let mut raw = presets::raw(preset).unwrap();
    Overrides {
        servers: Some(servers),
        ..Default::default()
    }
    .apply(&mut raw)
    .unwrap();
    let spec = ClusterSpec::from_raw(&raw, "test").unwrap();
    railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
}

/// The network bytes one expert all-to-all of `tp`, `ep` puts on the fabric (every tier), the
/// job laid out by `lay_out` and timed as `train` times it.
fn ep_network_bytes(f: &Fabric, tp: u32, ep: u32) -> (f64, Parallelism) {
    let catalog = Catalog::builtin();
    let model = Model::preset("deepseek-v3-like").unwrap();
    let layout = Layout {
        tp: Some(tp),
        ep,
        stage_layers: vec![31, 30],
        pp: 2,
        fit_to_memory: false,
        ..Layout::unasked()
    };
    let par = super::lay_out(f, &catalog, &[], &model, &layout)
        .unwrap()
        .par;
    let routed = RoutedNet::over_nvlink_domains(
        f,
        &catalog,
        &NetConfig::default(),
        RoutingKind::DModK,
        RoutingConfig::default(),
    )
    .unwrap();
    let ranks = domains_of(f, &catalog).ranks;
    let timer = FabricTimer::new(&routed.net, &routed.router, ranks, Relay::auto(f, &catalog));
    let bytes = timer
        .tier_bytes(Op::AllToAll, &par.groups().ep, 64 << 20)
        .unwrap();
    (bytes.values().sum(), par)
}

/// On two GB200 NVL72 racks a job takes 16 trays of each (128 GPUs), and an expert-parallel
/// all-to-all of EP 64 (TP 1) or of EP 8 with TP 8 puts not one byte on the trays' NICs: every
/// EP group is inside a rack. The same EP 64 on 8-GPU B200 servers crosses InfiniBand.
#[test]
fn expert_parallel_groups_of_an_nvl72_job_stay_inside_a_rack() {
    let catalog = Catalog::builtin();
    let racks = fabric("gb200-nvl72-superpod", 36);
    assert_eq!(job_gpus(&racks, &catalog, &[]), 128);
    for (tp, ep) in [(1, 64), (8, 8), (2, 32)] {
        let (bytes, par) = ep_network_bytes(&racks, tp, ep);
        assert_eq!(bytes, 0.0, "TP {tp} EP {ep}");
        let job = RackJob::of(&racks, &catalog, &par).unwrap();
        assert!(job.inside_a_rack.contains(&"expert-parallel"), "{job:?}");
        assert!(!job.across_racks.contains(&"expert-parallel"), "{job:?}");
        assert_eq!((job.job_trays, job.job_gpus), (16, 128));
    }
    let servers = fabric("b200-xdr", 16);
    let (bytes, par) = ep_network_bytes(&servers, 1, 64);
    assert!(bytes > 0.0);
    assert!(RackJob::of(&servers, &catalog, &par).is_none());
}

/// A drained tray takes its whole rack out of a job (one NCCL clique); the default TP on a
/// rack is at most 8 and splits the heads.
#[test]
fn a_drained_tray_takes_its_rack_and_the_default_tp_is_at_most_8() {
    let catalog = Catalog::builtin();
    let racks = fabric("gb200-nvl72-superpod", 36);
    assert_eq!(job_gpus(&racks, &catalog, &[20]), 64);
    assert_eq!(job_gpus(&racks, &catalog, &[0, 17]), 64);
    assert_eq!(job_gpus(&racks, &catalog, &[0, 18]), 0);
    assert_eq!(default_tp_on_a_rack(64, 128, 128), 8);
    assert_eq!(default_tp_on_a_rack(64, 40, 8), 8);
    assert_eq!(default_tp_on_a_rack(64, 12, 4), 4);
    assert_eq!(default_tp_on_a_rack(64, 6, 6), 2);
}

//! A training step on a design, with cables taken down (`railyard train --fail-links/--fail-cable`).

use railyard_catalog::Catalog;
use railyard_fabric::{Fabric, LinkId};
use railyard_sim::collective::Relay;
use railyard_sim::fabric_net::NetConfig;
use railyard_sim::routing::RoutingKind;
use railyard_train::fabric_timer::{simulate_step, TrainError};
use railyard_train::model::Model;
use railyard_train::parallel::Parallelism;
use railyard_train::step::{Breakdown, StepConfig};

/// One training step of `model` laid out as `par` on `fabric` with the network links `failed`
/// down: routes go around them (sim's tree routing), so the step's collectives share what is left.
/// With nothing failed this is [`simulate_step`].
#[allow(clippy::too_many_arguments)]
pub fn step_with_failures(
    fabric: &Fabric,
    catalog: &Catalog,
    net: &NetConfig,
    model: &Model,
    par: &Parallelism,
    cfg: &StepConfig,
    routing: RoutingKind,
    relay: Relay,
    failed: &[LinkId],
) -> Result<Breakdown, TrainError> {
    let config = NetConfig {
        failed: failed.to_vec(),
        ..net.clone()
    };
    simulate_step(fabric, catalog, &config, model, par, cfg, routing, relay)
}

#[cfg(test)]
mod tests {
    use super::*;
    use railyard_sim::fabric_net::random_network_links;
    use railyard_spec::{presets, ClusterSpec, Overrides};
    use railyard_train::parallel::Layout;

    fn fabric(servers: u32) -> Fabric {
        let mut raw = presets::raw("dgx-h100-superpod").unwrap();
        Overrides {
            servers: Some(servers),
            ..Default::default()
        }
        .apply(&mut raw)
        .unwrap();
        let spec = ClusterSpec::from_raw(&raw, "test").unwrap();
        railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
    }

    /// No failures is the step as `simulate_step` times it; failed leaf-spine links that the
    /// data-parallel all-reduce crosses make the step slower, never faster.
    #[test]
    fn failed_links_slow_the_step_they_carry() {
        let f = fabric(16);
        let catalog = Catalog::builtin();
        let model = Model::preset("llama3-8b").unwrap();
        let layout = Layout::unasked();
        let par = layout.resolve(128, 8, &model).unwrap();
        let cfg = StepConfig::default();
        let run = |failed: &[LinkId]| {
            step_with_failures(
                &f,
                &catalog,
                &NetConfig::default(),
                &model,
                &par,
                &cfg,
                RoutingKind::DModK,
                Relay::auto(&f),
                failed,
            )
            .unwrap()
        };
        let whole = run(&[]);
        let direct = simulate_step(
            &f,
            &catalog,
            &NetConfig::default(),
            &model,
            &par,
            &cfg,
            RoutingKind::DModK,
            Relay::auto(&f),
        )
        .unwrap();
        assert_eq!(whole, direct);
        let failed = random_network_links(&f, 24, 1);
        let degraded = run(&failed);
        assert!(
            degraded.data_parallel_total_s > whole.data_parallel_total_s,
            "{} vs {}",
            degraded.data_parallel_total_s,
            whole.data_parallel_total_s
        );
        assert!(degraded.step_time_s >= whole.step_time_s);
    }
}

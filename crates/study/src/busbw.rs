//! Predicted bus bandwidth for the report's plots, from the simulator (`railyard sim collective`'s
//! model: NCCL-style ring, double binary tree and all-to-all with PXN on this fabric, D-mod-K routing,
//! algorithm and protocol chosen per size as NCCL's tuner does).

use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_sim::calibration::Calibration;
use railyard_sim::collective::{self, CollectiveConfig, CollectiveError, Counting, Relay};
use railyard_sim::fabric_net::{FabricNet, FabricRouting, NetConfig, RoutedNet};
use railyard_sim::nccl::{self, Collective};
use railyard_sim::output::counted_note;
use railyard_sim::routing::{RoutingConfig, RoutingKind};
use railyard_sim::{Cancel, Cancelled};

/// Message sizes of the plots: 256 B to 8 GiB, doubling (as `nccl-tests -b 256 -e 8G -f 2`).
pub fn sizes() -> Vec<u64> {
    nccl::sweep(256, 8 << 30, 2).unwrap_or_default()
}

/// The collectives the report plots.
pub const COLLECTIVES: [Collective; 2] = [Collective::AllReduce, Collective::AllToAll];

/// One curve of a bus-bandwidth plot: a collective's name and (message bytes, busbw GB/s) points.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    pub collective: String,
    pub points: Vec<(u64, f64)>,
}

/// Curves that could be simulated, and a note for each that could not (too large, no route).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Busbw {
    pub curves: Vec<Curve>,
    pub notes: Vec<String>,
}

/// Simulates each of [`COLLECTIVES`] on `f` at [`sizes`], the network built as `config` says (a
/// calibration included); `progress` hears about each phase.
pub fn simulate(
    f: &Fabric,
    catalog: &Catalog,
    config: &NetConfig,
    progress: &mut dyn FnMut(&str),
) -> Busbw {
    // `Cancel::NEVER` is never set, so this is never the default.
    simulate_until(f, catalog, config, progress, Cancel::NEVER).unwrap_or_default()
}

/// The curves of `railyard report` on a design: simulated with `calibration` and SHARP as asked,
/// the rest of the network as NCCL runs by default. A calibration that cannot apply to the
/// design's NICs is refused (as in every command that simulates), not left to drop the curves.
pub fn report_curves(
    f: &Fabric,
    catalog: &Catalog,
    calibration: Calibration,
    sharp: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<Busbw, String> {
    railyard_sim::fabric_net::check_calibration(f, &calibration).map_err(|e| e.to_string())?;
    Ok(curves(f, catalog, calibration, sharp, progress))
}

/// The report's curves (`report`, `report --compare`) on a design with `calibration` and SHARP as
/// asked, the rest of the network as NCCL runs by default.
pub fn curves(
    f: &Fabric,
    catalog: &Catalog,
    calibration: Calibration,
    sharp: bool,
    progress: &mut dyn FnMut(&str),
) -> Busbw {
    let config = NetConfig {
        calibration,
        sharp,
        ..NetConfig::default()
    };
    simulate(f, catalog, &config, progress)
}

/// [`simulate`] that stops with [`Cancelled`] soon after `cancel` is set (between collectives, and
/// inside each as [`collective::run_until`] reads it).
pub fn simulate_until(
    f: &Fabric,
    catalog: &Catalog,
    config: &NetConfig,
    progress: &mut dyn FnMut(&str),
    cancel: Cancel<'_>,
) -> Result<Busbw, Cancelled> {
    let mut out = Busbw::default();
    let RoutedNet { net, router } = match RoutedNet::over_nvlink_domains(
        f,
        catalog,
        config,
        RoutingKind::DModK,
        RoutingConfig::default(),
    ) {
        Ok(routed) => routed,
        Err(e) => {
            out.notes.push(format!("not simulated: {e}"));
            return Ok(out);
        }
    };
    let sizes = sizes();
    for op in COLLECTIVES {
        cancel.check()?;
        let mut inner = |m: &str| progress(&format!("{op}: {m}"));
        let cfg = CollectiveConfig {
            relay: Relay::auto(f, catalog),
            collnet: net.sharp(),
            ..CollectiveConfig::new(op)
        };
        match curve(&net, &router, &cfg, &sizes, &mut inner, cancel) {
            Ok((c, counted)) => {
                if let Some(c) = counted {
                    out.notes.push(format!("{op}: {}", counted_note(&c)));
                }
                out.curves.push(c)
            }
            Err(CollectiveError::Cancelled) => return Err(Cancelled),
            Err(e) => out.notes.push(format!("{op} not simulated: {e}")),
        }
    }
    Ok(out)
}

/// The busbw curve of the collective `cfg` says on `net` at `sizes`: its algorithm (`Auto`:
/// algorithm and protocol per size as NCCL's tuner picks them), cross-rail transfers relayed as
/// its relay says; and, when a step had too many flows to simulate one by one, how the step
/// timed from flows counted per link stands to the simulation (`collective::Counting`).
pub(crate) fn curve(
    net: &FabricNet<'_>,
    router: &dyn FabricRouting,
    cfg: &CollectiveConfig,
    sizes: &[u64],
    progress: &mut dyn FnMut(&str),
    cancel: Cancel<'_>,
) -> Result<(Curve, Option<Counting>), CollectiveError> {
    let sweep = collective::run_until(net, router, cfg, sizes, progress, cancel)?;
    let counted = sweep
        .models
        .iter()
        .filter_map(|m| m.counted)
        .reduce(|a, b| Counting {
            exact: a.exact && b.exact,
        });
    Ok((
        Curve {
            collective: cfg.op.to_string(),
            points: sweep
                .rows
                .iter()
                .map(|r| (r.row.size_bytes, r.row.busbw_gbs))
                .collect(),
        },
        counted,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use railyard_spec::presets;

    fn design(name: &str) -> Fabric {
        let spec = presets::load(name).unwrap();
        railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
    }

    /// A set cancellation flag stops the simulation at the next point that reads it: while a step is
    /// laid out, at the engine's first event, between collectives; unset, the answer is `simulate`'s.
    #[test]
    fn busbw_simulation_stops_when_cancelled() {
        use railyard_sim::{Cancel, Cancelled};
        use std::sync::atomic::{AtomicBool, Ordering};
        let f = design("seed-leaf-spine");
        let catalog = Catalog::builtin();
        for at in [
            "allreduce: ring: laying out",
            "allreduce: ring: simulating",
            "allreduce: tree: simulating",
            // All-to-all relayed as NCCL does by default (`Relay::auto`).
            "alltoall: alltoall-pxn: laying out",
            "alltoall: alltoall-pxn: simulating",
        ] {
            let flag = AtomicBool::new(false);
            let mut heard = Vec::new();
            let out = simulate_until(
                &f,
                &catalog,
                &NetConfig::default(),
                &mut |m| {
                    heard.push(m.to_string());
                    if m.starts_with(at) {
                        flag.store(true, Ordering::Relaxed);
                    }
                },
                Cancel::new(&flag),
            );
            assert_eq!(out, Err(Cancelled), "cancelled at {at}");
            assert!(
                heard.last().unwrap().starts_with(at),
                "{at}: nothing after: {heard:?}"
            );
        }
        let flag = AtomicBool::new(false);
        let none = NetConfig::default();
        let whole = simulate_until(&f, &catalog, &none, &mut |_| {}, Cancel::new(&flag));
        assert_eq!(whole, Ok(simulate(&f, &catalog, &none, &mut |_| {})));
    }

    #[test]
    fn simulated_busbw_curves_rise_with_message_size() {
        let f = design("seed-leaf-spine");
        let b = simulate(&f, &Catalog::builtin(), &NetConfig::default(), &mut |_| {});
        assert!(b.notes.is_empty(), "{:?}", b.notes);
        let names: Vec<&str> = b.curves.iter().map(|c| c.collective.as_str()).collect();
        assert_eq!(names, ["allreduce", "alltoall"]);
        for c in &b.curves {
            assert_eq!(c.points.len(), sizes().len());
            let (first, last) = (c.points[0].1, c.points[c.points.len() - 1].1);
            assert!(
                last > 10.0 * first && last > 1.0,
                "{}: {first} -> {last}",
                c.collective
            );
        }
    }

    /// An all-to-all past the per-flow limit runs by symmetry on a designed fabric; with a cable
    /// down (no symmetry to lay it out by) it is timed from its flows counted per link, with a
    /// note saying so, and both curves stay.
    #[test]
    fn too_large_all_to_all_is_counted_with_a_note() {
        let mut raw = presets::raw("dgx-h100-superpod").unwrap();
        railyard_spec::Overrides {
            servers: Some(272),
            ..Default::default()
        }
        .apply(&mut raw)
        .unwrap();
        let spec = railyard_spec::ClusterSpec::from_raw(&raw, "test").unwrap();
        let catalog = Catalog::builtin();
        let f = railyard_fabric::build(&spec, &catalog).unwrap();
        let whole = simulate(&f, &catalog, &NetConfig::default(), &mut |_| {});
        let names: Vec<&str> = whole.curves.iter().map(|c| c.collective.as_str()).collect();
        assert_eq!(names, ["allreduce", "alltoall"]);
        assert!(whole.notes.is_empty(), "{:?}", whole.notes);
        let failed = NetConfig {
            failed: vec![f.cables()[3]],
            ..NetConfig::default()
        };
        let b = simulate(&f, &catalog, &failed, &mut |_| {});
        let names: Vec<&str> = b.curves.iter().map(|c| c.collective.as_str()).collect();
        assert_eq!(names, ["allreduce", "alltoall"]);
        assert_eq!(b.notes.len(), 1);
        assert!(
            b.notes[0].starts_with("alltoall: timed from the flows counted on each link instead of simulating each flow: exact"),
            "{}",
            b.notes[0]
        );
        // One cable down costs the all-to-all something, never more than the cable's share.
        let (x, y) = (
            whole.curves[1].points.last().unwrap().1,
            b.curves[1].points.last().unwrap().1,
        );
        assert!(y <= x && y > 0.4 * x, "{y} vs {x}");
    }
}

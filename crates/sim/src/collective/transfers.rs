//! Point-to-point transfers between GPUs, routed and simulated as one step.

use crate::cancel::Cancel;
use crate::collective::comm::shape_of;
use crate::collective::comm::Gpu;
use crate::collective::config::Relay;
use crate::collective::error::CollectiveError;
use crate::collective::step::StepBuilder;
use crate::engine;
use crate::net::fabric_net::FabricNet;
use crate::net::routes::FabricRouting;
use crate::time::Time;
/// The step of `pairs` (each `bytes`, crossing rails as `relay` says), routed; with `track`, per
/// phase the transfer each flow belongs to.
pub(super) fn transfer_step<'n, 'f>(
    net: &'n FabricNet<'f>,
    router: &'n dyn FabricRouting,
    pairs: &[(Gpu, Gpu)],
    relay: Relay,
    bytes: u64,
    track: bool,
) -> Result<(StepBuilder<'n, 'f>, Vec<Vec<usize>>), CollectiveError> {
    let mut b = StepBuilder::new(net, router, shape_of(net)?)?;
    let mut owner: Vec<Vec<usize>> = Vec::new();
    for (i, &(a, d)) in pairs.iter().enumerate() {
        if !track {
            b.send(a, d, relay, bytes)?;
            continue;
        }
        let before: Vec<usize> = b.phases.iter().map(|p| p.w.flows()).collect();
        b.send(a, d, relay, bytes)?;
        owner.resize(b.phases.len(), Vec::new());
        for (k, ph) in b.phases.iter().enumerate() {
            let from = before.get(k).copied().unwrap_or(0);
            owner[k].extend(std::iter::repeat_n(i, ph.w.flows() - from));
        }
    }
    if b.failure_count > 0 {
        return Err(CollectiveError::Routes {
            failures: b.failures,
            total: b.failure_count,
        });
    }
    Ok((b, owner))
}

/// How long a step of arbitrary GPU-to-GPU transfers takes (each `bytes`, crossing rails as `relay`
/// says; staged phases add), for the training model.
pub fn transfers_makespan(
    net: &FabricNet<'_>,
    router: &dyn FabricRouting,
    pairs: &[(Gpu, Gpu)],
    relay: Relay,
    bytes: u64,
) -> Result<Time, CollectiveError> {
    let (b, _) = transfer_step(net, router, pairs, relay, bytes, false)?;
    // By flow classes where the step would be (see `StepBuilder::finish`).
    let by_class = router.structural() && !net.any_failed();
    let mut t = Time::ZERO;
    for ph in b.phases.iter().filter(|p| p.w.flows() > 0) {
        let q = ph.quotient(by_class, Cancel::NEVER)?;
        t += ph.makespan_by(q.as_ref(), Cancel::NEVER)?;
    }
    Ok(t)
}

/// [`transfers_makespan`] and each transfer's rate with all active (for a staged relay, the rate
/// over both hops one after the other), for studies and tests.
pub fn simulate_transfers(
    net: &FabricNet<'_>,
    router: &dyn FabricRouting,
    pairs: &[(Gpu, Gpu)],
    relay: Relay,
    bytes: u64,
) -> Result<(Time, Vec<f64>), CollectiveError> {
    let (b, owner) = transfer_step(net, router, pairs, relay, bytes, true)?;
    let mut makespan = Time::ZERO;
    // Seconds per byte of each transfer, summed over the phases it takes part in.
    let mut spb = vec![0.0f64; pairs.len()];
    for (ph, owners) in b.phases.iter().zip(&owner) {
        if ph.w.flows() == 0 {
            continue;
        }
        makespan += ph.makespan();
        let rates = engine::max_min_rates(&ph.w);
        let mut per = vec![0.0f64; pairs.len()];
        for (f, &i) in owners.iter().enumerate() {
            per[i] += rates[f];
        }
        for (i, r) in per.into_iter().enumerate() {
            if r > 0.0 {
                spb[i] += 1.0 / r;
            }
        }
    }
    let per = spb
        .into_iter()
        .map(|x| if x > 0.0 { 1.0 / x } else { 0.0 })
        .collect();
    Ok((makespan, per))
}

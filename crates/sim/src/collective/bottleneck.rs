//! Which resource bounds a step: the slowest flow's limiting resource, per flow or folded.

use crate::collective::phase::Fold;
use crate::collective::phase::StepPhase;
use crate::collective::Bottleneck;
use crate::engine::Workload;
use crate::net::fabric_net::FabricNet;
pub(super) fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// [`bottleneck_at`] on a folded phase: loads per resource class (all members together), the
/// slowest representative flow's path named by its own resources.
pub(super) fn bottleneck_folded(
    net: &FabricNet<'_>,
    fold: &Fold<'_>,
    ph: &StepPhase,
    rates: &[f64],
) -> Option<Bottleneck> {
    let (r, flows) = bottleneck_folded_at(fold, ph, rates)?;
    Some(Bottleneck {
        resource: net.describe(r),
        capacity_gbs: net.capacity(r) / 1e9,
        flows,
    })
}

/// The resource on the slowest flow's path that holds it back: one that is full and where no flow
/// runs faster than it (max-min fairness freezes a flow at such a resource), the fullest such
/// one (the last among equals); where rounding leaves none, the fullest on the path. A full
/// resource whose other flows run faster is not what limits the flow: with a cable down, a
/// source's own full NIC link sits on the path of its slowest flow, whose limit is the
/// destination's link carrying twice the flows. `usage(r)` gives (utilisation, fastest rate).
pub(super) fn limiting(
    path: &[u32],
    slowest: f64,
    usage: impl Fn(u32) -> (f64, f64),
) -> Option<u32> {
    let util = |r: &u32| usage(*r).0;
    let holds = |r: &&u32| {
        let (u, fastest) = usage(**r);
        u >= 1.0 - 1e-9 && fastest <= slowest * (1.0 + 1e-9)
    };
    path.iter()
        .filter(holds)
        .max_by(|a, b| util(a).total_cmp(&util(b)))
        .or_else(|| path.iter().max_by(|a, b| util(a).total_cmp(&util(b))))
        .copied()
}

/// The network resource [`bottleneck_folded`] names, and the flows crossing it.
pub(super) fn bottleneck_folded_at(
    fold: &Fold<'_>,
    ph: &StepPhase,
    rates: &[f64],
) -> Option<(u32, u32)> {
    let w = &ph.w;
    // Compared per unit of weight: a sub-flow of a connection sprayed over fewer paths runs
    // faster by its weight without being ahead.
    let share = shares(w, rates);
    let slowest = (0..rates.len())
        .filter(|&f| rates[f].is_finite())
        .min_by(|&a, &b| share[a].total_cmp(&share[b]))?;
    let mut load = vec![0.0f64; w.resources()];
    let mut count = vec![0u64; w.resources()];
    let mut fastest = vec![0.0f64; w.resources()];
    for (f, &rate) in rates.iter().enumerate() {
        if !rate.is_finite() {
            continue;
        }
        let units = w.units_of(f);
        for e in w.path_range(f) {
            let c = w.path[e] as usize;
            let n = u64::from(w.width_of(e)) / units;
            load[c] += n as f64 * rate;
            count[c] += n;
            fastest[c] = fastest[c].max(share[f]);
        }
    }
    let sym = fold.sym;
    let path = &ph.paths[ph.offsets[slowest] as usize..ph.offsets[slowest + 1] as usize];
    let class = |r: u32| sym.resource_class[r as usize] as usize;
    let r = limiting(path, share[slowest], |r| {
        (load[class(r)] / w.capacity[class(r)], fastest[class(r)])
    })?;
    let c = sym.resource_class[r as usize] as usize;
    // Per member: the class's crossings (in units of `scale` flows, and of what the widths were
    // divided by) over its members.
    let divisor = ph.divisor.get(c).copied().unwrap_or(1).max(1);
    let flows = count[c] * divisor * u64::from(fold.scale) / u64::from(sym.class_size[c].max(1));
    Some((r, u32::try_from(flows).unwrap_or(u32::MAX)))
}

/// Every flow's rate per unit of its weight (`Workload::add_weighted_flow`): the fair share it
/// froze at, up to the workload's unit.
pub(super) fn shares(w: &Workload, rates: &[f64]) -> Vec<f64> {
    (0..rates.len())
        .map(|f| rates[f] / w.units_of(f) as f64)
        .collect()
}

/// The saturated resource on the slowest flow's path under max-min sharing with every flow active,
/// given every flow's max-min rate.
pub(super) fn bottleneck_at(
    net: &FabricNet<'_>,
    w: &Workload,
    rates: &[f64],
    paths: &[u32],
    offsets: &[u32],
) -> Option<Bottleneck> {
    let share = shares(w, rates);
    let slowest = (0..rates.len())
        .filter(|&f| rates[f].is_finite())
        .min_by(|&a, &b| share[a].total_cmp(&share[b]))?;
    let path = &paths[offsets[slowest] as usize..offsets[slowest + 1] as usize];
    let mut load = vec![0.0f64; net.resources()];
    let mut count = vec![0u32; net.resources()];
    let mut fastest = vec![0.0f64; net.resources()];
    for f in 0..rates.len() {
        if !rates[f].is_finite() {
            continue;
        }
        for &r in &paths[offsets[f] as usize..offsets[f + 1] as usize] {
            load[r as usize] += rates[f];
            count[r as usize] += 1;
            fastest[r as usize] = fastest[r as usize].max(share[f]);
        }
    }
    let r = limiting(path, share[slowest], |r| {
        (load[r as usize] / net.capacity(r), fastest[r as usize])
    })?;
    Some(Bottleneck {
        resource: net.describe(r),
        capacity_gbs: net.capacity(r) / 1e9,
        flows: count[r as usize],
    })
}

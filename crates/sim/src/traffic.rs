//! Traffic patterns between hosts, as (source, destination) pairs: the permutations and all-to-all
//! that flow-level simulators are compared on; and random workloads of flows with heavy-tailed
//! sizes and staggered arrivals ([`random_flows`]). Deterministic for a given seed, on every machine:
//! the random workloads use only SplitMix64 and IEEE arithmetic (their logarithm and exponential
//! are computed here, not by the platform's maths library, whose last bits differ between systems).

use crate::error::SimError;
use crate::leafspine::HostFlow;
use crate::routing::mix64;
use crate::time::Time;

/// Host i sends to host (i + shift) mod hosts.
pub fn shift(hosts: u32, shift: u32) -> Vec<(u32, u32)> {
    (0..hosts)
        .map(|i| {
            (
                i,
                ((u64::from(i) + u64::from(shift)) % u64::from(hosts.max(1))) as u32,
            )
        })
        .collect()
}

/// A uniformly random permutation with no host sending to itself (a derangement), by Fisher-Yates
/// shuffles drawn until one has no fixed point (about e = 2.7 draws on average). Host i sends to
/// host p(i). Needs at least 2 hosts; with fewer, returns no pairs.
pub fn permutation(hosts: u32, seed: u64) -> Vec<(u32, u32)> {
    if hosts < 2 {
        return Vec::new();
    }
    let mut state = seed;
    let mut p: Vec<u32> = (0..hosts).collect();
    loop {
        for i in (1..p.len()).rev() {
            let j = ((u128::from(mix64(&mut state)) * (i as u128 + 1)) >> 64) as usize;
            p.swap(i, j);
        }
        if p.iter().enumerate().all(|(i, &d)| i as u32 != d) {
            return p
                .into_iter()
                .enumerate()
                .map(|(i, d)| (i as u32, d))
                .collect();
        }
    }
}

/// Every host sends to every other host: hosts x (hosts - 1) pairs, source-major.
pub fn all_to_all(hosts: u32) -> Vec<(u32, u32)> {
    (0..hosts)
        .flat_map(|s| (0..hosts).filter(move |&d| d != s).map(move |d| (s, d)))
        .collect()
}

/// Flow sizes drawn from a log-normal distribution: `ln(bytes)` is normal with mean `ln(median)`
/// and standard deviation `sigma`: most flows small, most bytes in a few large ones (sigma 2: the
/// mean is e^2 = 7.4 times the median, and 2.5% of flows exceed 55 times it). Sizes are rounded to
/// whole bytes, at least 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogNormal {
    pub median_bytes: f64,
    pub sigma: f64,
}

impl LogNormal {
    /// The mean size: `median * exp(sigma^2 / 2)`.
    pub fn mean_bytes(&self) -> f64 {
        self.median_bytes * exp(self.sigma * self.sigma / 2.0)
    }
}

/// When flows start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrivals {
    /// Every flow at time zero.
    AllAtZero,
    /// A Poisson process of this many flows per second over the whole network (exponential gaps,
    /// the first flow one gap after zero).
    Poisson { flows_per_second: f64 },
}

impl Arrivals {
    /// The Poisson arrivals that load every host's link to `load` (0 to 1) on average: each host
    /// sends (and, with uniform destinations, receives) `load * link_bytes_per_second` bytes per
    /// second, so `flows_per_second = load * hosts * link_bytes_per_second / mean size`.
    pub fn poisson_at_load(
        load: f64,
        hosts: u32,
        link_bytes_per_second: f64,
        sizes: &LogNormal,
    ) -> Arrivals {
        Arrivals::Poisson {
            flows_per_second: load * f64::from(hosts) * link_bytes_per_second / sizes.mean_bytes(),
        }
    }
}

/// The largest size [`random_flows`] draws (larger draws are capped): 1 TB.
pub const MAX_RANDOM_FLOW_BYTES: u64 = 1_000_000_000_000;

/// `count` flows between uniformly random pairs of distinct hosts, sizes from `sizes`, start times
/// from `arrivals`, in order of start. The same arguments give the same flows on every machine.
pub fn random_flows(
    hosts: u32,
    count: usize,
    sizes: LogNormal,
    arrivals: Arrivals,
    seed: u64,
) -> Result<Vec<HostFlow>, SimError> {
    let bad = |what, message: &str| {
        Err(SimError::Config {
            what,
            message: message.to_string(),
        })
    };
    if hosts < 2 {
        return bad("hosts", "need at least 2 hosts");
    }
    if !(sizes.median_bytes.is_finite() && sizes.median_bytes >= 1.0) {
        return bad("median", "must be a number of bytes, at least 1");
    }
    if !(sizes.sigma.is_finite() && (0.0..=10.0).contains(&sizes.sigma)) {
        return bad("sigma", "must be a number from 0 to 10");
    }
    if let Arrivals::Poisson { flows_per_second } = arrivals {
        if !(flows_per_second.is_finite() && flows_per_second > 0.0) {
            return bad(
                "arrivals",
                "the Poisson rate must be above zero flows per second",
            );
        }
    }
    let mut state = seed;
    let mut flows = Vec::with_capacity(count);
    let mut clock_ps = 0.0_f64;
    let (mu, sigma) = (ln(sizes.median_bytes), sizes.sigma);
    for _ in 0..count {
        let src = below(&mut state, u64::from(hosts)) as u32;
        let mut dst = below(&mut state, u64::from(hosts) - 1) as u32;
        if dst >= src {
            dst += 1;
        }
        let drawn = exp(mu + sigma * normal(&mut state)).round();
        let bytes = if drawn >= MAX_RANDOM_FLOW_BYTES as f64 {
            MAX_RANDOM_FLOW_BYTES
        } else {
            (drawn as u64).max(1)
        };
        let start = match arrivals {
            Arrivals::AllAtZero => Time::ZERO,
            Arrivals::Poisson { flows_per_second } => {
                clock_ps += -ln(uniform(&mut state)) / flows_per_second * 1e12;
                // Past 2^63 ps (106 days) the clock stops: no simulation reaches there.
                Time::from_ps(clock_ps.round().min(9.2e18) as u64)
            }
        };
        flows.push(HostFlow {
            src,
            dst,
            bytes,
            start,
        });
    }
    Ok(flows)
}

/// The most flows [`Generate`] makes: about as many as the engine holds in 2 GB.
pub const MAX_GENERATED_FLOWS: usize = 10_000_000;

/// A random workload as `sim flows --generate` spells it:
/// `lognormal:flows=N,median=SIZE[,sigma=S][,arrivals=zero|poisson][,load=L][,seed=N]`.
///
/// - `flows`: how many flows (1 to [`MAX_GENERATED_FLOWS`]).
/// - `median`: the median size, a whole number of bytes with an optional K, M, G or T suffix (powers
///   of 1024, as `-b` and `-e` of `sim collective`).
/// - `sigma`: standard deviation of `ln(size)`, 0 to 10 (default 2: the mean is e^2 = 7.4 times the
///   median).
/// - `arrivals`: `zero` (every flow starts at time zero, the default) or `poisson`.
/// - `load`: with `arrivals=poisson`, the average load each Poisson process puts on every host's
///   link, above 0 and at most 1 (default 0.6); see [`Arrivals::poisson_at_load`].
/// - `seed`: the random seed (default 1).
///
/// Keys may come in any order, each at most once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Generate {
    pub flows: usize,
    pub sizes: LogNormal,
    /// `None`: every flow at time zero; `Some(load)`: Poisson arrivals at that load.
    pub poisson_load: Option<f64>,
    pub seed: u64,
}

/// The keys of `--generate`, for messages.
const GENERATE_KEYS: &str = "flows, median, sigma, arrivals, load, seed";

impl Generate {
    /// Parses the `--generate` text; errors name the field and its valid values.
    pub fn parse(text: &str) -> Result<Generate, String> {
        let Some((kind, rest)) = text.split_once(':') else {
            return Err(format!(
                "`{text}`: expected `lognormal:flows=N,median=SIZE[,sigma=S][,arrivals=zero|poisson][,load=L][,seed=N]`"
            ));
        };
        if kind != "lognormal" {
            return Err(format!("unknown distribution `{kind}`; valid: lognormal"));
        }
        let (mut flows, mut median, mut sigma, mut arrivals, mut load, mut seed) =
            (None, None, None, None, None, None);
        for item in rest.split(',') {
            let Some((key, value)) = item.split_once('=') else {
                return Err(format!(
                    "`{item}`: expected KEY=VALUE; valid keys: {GENERATE_KEYS}"
                ));
            };
            let (key, value) = (key.trim(), value.trim());
            let taken = match key {
                "flows" => flows.replace(value).is_some(),
                "median" => median.replace(value).is_some(),
                "sigma" => sigma.replace(value).is_some(),
                "arrivals" => arrivals.replace(value).is_some(),
                "load" => load.replace(value).is_some(),
                "seed" => seed.replace(value).is_some(),
                _ => return Err(format!("unknown key `{key}`; valid keys: {GENERATE_KEYS}")),
            };
            if taken {
                return Err(format!("`{key}` given twice"));
            }
        }
        let flows = match flows {
            None => return Err("`flows` is missing; valid: a count from 1 to 10000000".into()),
            Some(v) => v
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_GENERATED_FLOWS).contains(n))
                .ok_or_else(|| {
                    format!("flows=`{v}`: valid: a whole number from 1 to {MAX_GENERATED_FLOWS}")
                })?,
        };
        let median = match median {
            None => {
                return Err(
                    "`median` is missing; valid: a size such as 1M (1 MiB) or 1000000".into(),
                )
            }
            Some(v) => crate::nccl::parse_size(v)
                .ok()
                .filter(|&b| b >= 1)
                .ok_or_else(|| {
                    format!(
                        "median=`{v}`: valid: a whole number of bytes, at least 1, with an optional K, M, G or T suffix (1M = 1 MiB)"
                    )
                })?,
        };
        let sigma = match sigma {
            None => 2.0,
            Some(v) => v
                .parse::<f64>()
                .ok()
                .filter(|s| (0.0..=10.0).contains(s))
                .ok_or_else(|| format!("sigma=`{v}`: valid: a number from 0 to 10"))?,
        };
        let poisson = match arrivals {
            None | Some("zero") => false,
            Some("poisson") => true,
            Some(v) => return Err(format!("arrivals=`{v}`: valid: zero, poisson")),
        };
        let poisson_load = match (poisson, load) {
            (false, None) => None,
            (false, Some(_)) => return Err(
                "`load` needs arrivals=poisson (with arrivals=zero every flow starts at time zero)"
                    .into(),
            ),
            (true, None) => Some(0.6),
            (true, Some(v)) => Some(
                v.parse::<f64>()
                    .ok()
                    .filter(|l| *l > 0.0 && *l <= 1.0)
                    .ok_or_else(|| {
                        format!(
                            "load=`{v}`: valid: a fraction of the link rate above 0 and at most 1"
                        )
                    })?,
            ),
        };
        let seed = match seed {
            None => 1,
            Some(v) => v
                .parse::<u64>()
                .map_err(|_| format!("seed=`{v}`: valid: a whole number from 0 to {}", u64::MAX))?,
        };
        Ok(Generate {
            flows,
            sizes: LogNormal {
                median_bytes: median as f64,
                sigma,
            },
            poisson_load,
            seed,
        })
    }

    /// The flows on `hosts` hosts whose links carry `link_bytes_per_second` each (the Poisson rate
    /// is set from it, see [`Arrivals::poisson_at_load`]).
    pub fn flows(&self, hosts: u32, link_bytes_per_second: f64) -> Result<Vec<HostFlow>, SimError> {
        let arrivals = match self.poisson_load {
            None => Arrivals::AllAtZero,
            Some(load) => {
                Arrivals::poisson_at_load(load, hosts, link_bytes_per_second, &self.sizes)
            }
        };
        random_flows(hosts, self.flows, self.sizes, arrivals, self.seed)
    }
}

/// Uniform in `0..n` (n >= 1) by multiply-shift (Lemire 2019).
fn below(state: &mut u64, n: u64) -> u64 {
    ((u128::from(mix64(state)) * u128::from(n)) >> 64) as u64
}

/// Uniform in (0, 1): 53 random bits, offset by half a step so neither end is reached.
fn uniform(state: &mut u64) -> f64 {
    ((mix64(state) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A standard normal draw by Marsaglia's polar method (Marsaglia & Bray, "A convenient method for
/// generating normal variables", SIAM Review 6(3), 1964), which needs only a logarithm and a square
/// root (correctly rounded by IEEE 754), no sine or cosine.
fn normal(state: &mut u64) -> f64 {
    loop {
        let u = 2.0 * uniform(state) - 1.0;
        let v = 2.0 * uniform(state) - 1.0;
        let s = u * u + v * v;
        if s > 0.0 && s < 1.0 {
            return u * (-2.0 * ln(s) / s).sqrt();
        }
    }
}

/// Natural logarithm of a positive normal number from IEEE operations only: x = m * 2^e with m in
/// [sqrt(1/2), sqrt(2)), ln m = 2 atanh((m - 1) / (m + 1)) by its series (|t| < 0.172, so 12 terms
/// reach 1e-17). Agrees with the platform's `ln` to a few units in the last place.
fn ln(x: f64) -> f64 {
    debug_assert!(x.is_normal() && x > 0.0);
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    if m > std::f64::consts::SQRT_2 {
        m /= 2.0;
        e += 1;
    }
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let mut term = t;
    let mut sum = 0.0;
    for k in 0..12 {
        sum += term / f64::from(2 * k + 1);
        term *= t2;
    }
    e as f64 * std::f64::consts::LN_2 + 2.0 * sum
}

/// e^x from IEEE operations only: x = n ln 2 + r with |r| <= ln(2) / 2, e^r by its Taylor series
/// (22 terms reach 1e-17), times 2^n. Overflows to infinity past about 709, zero below -708.
fn exp(x: f64) -> f64 {
    if x > 709.0 {
        return f64::INFINITY;
    }
    if x < -708.0 {
        return 0.0;
    }
    let n = (x / std::f64::consts::LN_2).round();
    let r = x - n * std::f64::consts::LN_2;
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..22 {
        term *= r / f64::from(k);
        sum += term;
    }
    sum * f64::from_bits(((n as i64 + 1023) as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logarithm_and_exponential_match_the_platform() {
        let mut state = 5;
        for _ in 0..10_000 {
            let x = uniform(&mut state) * 1e6 + 1e-9;
            assert!(
                (ln(x) - x.ln()).abs() <= 1e-14 * x.ln().abs().max(1.0),
                "ln {x}"
            );
            let y = uniform(&mut state) * 80.0 - 40.0;
            assert!((exp(y) - y.exp()).abs() <= 1e-14 * y.exp(), "exp {y}");
        }
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn random_flows_have_the_asked_distribution() {
        let sizes = LogNormal {
            median_bytes: 1e6,
            sigma: 1.0,
        };
        let n = 100_000;
        let flows = random_flows(64, n, sizes, Arrivals::AllAtZero, 1).unwrap();
        assert_eq!(
            flows,
            random_flows(64, n, sizes, Arrivals::AllAtZero, 1).unwrap()
        );
        assert!(flows
            .iter()
            .all(|f| f.src != f.dst && f.dst < 64 && f.start == Time::ZERO));
        let mut bytes: Vec<u64> = flows.iter().map(|f| f.bytes).collect();
        bytes.sort_unstable();
        // Median within 2% (its standard error is about 0.4% here); ln(size) has sd 1.
        let median = bytes[n / 2] as f64;
        assert!((median / 1e6 - 1.0).abs() < 0.02, "median {median}");
        let logs: Vec<f64> = bytes.iter().map(|&b| (b as f64).ln()).collect();
        let mean = logs.iter().sum::<f64>() / n as f64;
        let sd = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!((sd - 1.0).abs() < 0.02, "sd {sd}");
        // Every host sends about n / 64 flows.
        let mut per_host = [0usize; 64];
        for f in &flows {
            per_host[f.src as usize] += 1;
        }
        assert!(
            per_host.iter().all(|&c| (1300..1850).contains(&c)),
            "{per_host:?}"
        );
    }

    #[test]
    fn poisson_arrivals_come_at_the_asked_rate() {
        let sizes = LogNormal {
            median_bytes: 1e6,
            sigma: 2.0,
        };
        // Mean size e^2 MB; 60% of 8 hosts x 50 GB/s.
        let arrivals = Arrivals::poisson_at_load(0.6, 8, 50e9, &sizes);
        let Arrivals::Poisson { flows_per_second } = arrivals else {
            unreachable!()
        };
        assert!((flows_per_second - 0.6 * 8.0 * 50e9 / (1e6 * 2f64.exp())).abs() < 1e-3);
        let n = 50_000;
        let flows = random_flows(8, n, sizes, arrivals, 2).unwrap();
        assert!(flows.windows(2).all(|w| w[0].start <= w[1].start));
        let span = flows[n - 1].start.as_secs_f64();
        let rate = n as f64 / span;
        assert!((rate / flows_per_second - 1.0).abs() < 0.03, "rate {rate}");
        // The offered load: bytes over span over capacity, within 10% (heavy tail).
        let bytes: f64 = flows.iter().map(|f| f.bytes as f64).sum();
        let load = bytes / span / (8.0 * 50e9);
        assert!((load - 0.6).abs() < 0.06, "load {load}");
    }

    #[test]
    fn random_flows_refuse_bad_parameters() {
        let ok = LogNormal {
            median_bytes: 1e6,
            sigma: 1.0,
        };
        assert!(random_flows(1, 1, ok, Arrivals::AllAtZero, 0).is_err());
        for (median_bytes, sigma) in [(0.5, 1.0), (f64::NAN, 1.0), (1e6, -1.0), (1e6, 11.0)] {
            let sizes = LogNormal {
                median_bytes,
                sigma,
            };
            assert!(random_flows(4, 1, sizes, Arrivals::AllAtZero, 0).is_err());
        }
        let stopped = Arrivals::Poisson {
            flows_per_second: 0.0,
        };
        assert!(random_flows(4, 1, ok, stopped, 0).is_err());
    }

    #[test]
    fn generate_reads_every_key_and_names_the_bad_one() {
        let g = Generate::parse("lognormal:flows=100000,median=1M").unwrap();
        assert_eq!(g.flows, 100_000);
        assert_eq!(g.sizes.median_bytes, 1_048_576.0);
        assert_eq!((g.sizes.sigma, g.poisson_load, g.seed), (2.0, None, 1));
        let g = Generate::parse(
            "lognormal:seed=7,load=0.5,arrivals=poisson,sigma=1.5,median=1000000,flows=10",
        )
        .unwrap();
        assert_eq!(g.sizes.median_bytes, 1e6);
        assert_eq!((g.sizes.sigma, g.poisson_load, g.seed), (1.5, Some(0.5), 7));
        let g = Generate::parse("lognormal:flows=1,median=1K,arrivals=poisson").unwrap();
        assert_eq!(g.poisson_load, Some(0.6));
        for (text, says) in [
            ("flows=1,median=1M", "expected `lognormal:"),
            ("pareto:flows=1,median=1M", "valid: lognormal"),
            ("lognormal:median=1M", "`flows` is missing"),
            ("lognormal:flows=1", "`median` is missing"),
            ("lognormal:flows=0,median=1M", "flows=`0`"),
            ("lognormal:flows=10000001,median=1M", "flows=`10000001`"),
            ("lognormal:flows=1,median=1Q", "median=`1Q`"),
            ("lognormal:flows=1,median=0", "median=`0`"),
            ("lognormal:flows=1,median=1M,sigma=11", "sigma=`11`"),
            ("lognormal:flows=1,median=1M,sigma=nan", "sigma=`nan`"),
            (
                "lognormal:flows=1,median=1M,arrivals=burst",
                "valid: zero, poisson",
            ),
            (
                "lognormal:flows=1,median=1M,load=0.5",
                "needs arrivals=poisson",
            ),
            (
                "lognormal:flows=1,median=1M,arrivals=poisson,load=1.5",
                "load=`1.5`",
            ),
            (
                "lognormal:flows=1,median=1M,arrivals=poisson,load=0",
                "load=`0`",
            ),
            ("lognormal:flows=1,median=1M,seed=-1", "seed=`-1`"),
            ("lognormal:flows=1,median=1M,size=3", "unknown key `size`"),
            ("lognormal:flows=1,flows=2,median=1M", "`flows` given twice"),
            ("lognormal:flows=1,median", "`median`: expected KEY=VALUE"),
        ] {
            let e = Generate::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn generated_flows_follow_the_spec() {
        let g = Generate::parse("lognormal:flows=1000,median=1M,arrivals=poisson,seed=3").unwrap();
        let flows = g.flows(16, 50e9).unwrap();
        let sizes = LogNormal {
            median_bytes: 1_048_576.0,
            sigma: 2.0,
        };
        let arrivals = Arrivals::poisson_at_load(0.6, 16, 50e9, &sizes);
        assert_eq!(flows, random_flows(16, 1000, sizes, arrivals, 3).unwrap());
    }

    #[test]
    fn patterns() {
        assert_eq!(shift(4, 2), [(0, 2), (1, 3), (2, 0), (3, 1)]);
        assert_eq!(all_to_all(3).len(), 6);
        let p = permutation(1000, 9);
        let mut dst: Vec<u32> = p.iter().map(|x| x.1).collect();
        assert!(p.iter().all(|(s, d)| s != d));
        dst.sort_unstable();
        assert_eq!(dst, (0..1000).collect::<Vec<_>>());
        assert_eq!(p, permutation(1000, 9));
        assert_ne!(p, permutation(1000, 10));
    }
}

//! Traffic patterns between hosts, as (source, destination) pairs: the permutations and all-to-all
//! that flow-level simulators are compared on; and random workloads of flows with heavy-tailed
//! sizes and staggered arrivals ([`random_flows`]). Deterministic for a given seed, on every machine:
//! the random workloads use only SplitMix64 and IEEE arithmetic (their logarithm and exponential
//! are computed here, not by the platform's maths library, whose last bits differ between systems).

use crate::error::SimError;
use crate::net::leafspine::HostFlow;
use crate::net::routing::mix64;
use crate::time::Time;

pub mod fct;
pub mod flows_file;

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

/// A flow-size distribution given as points of its CDF, as the traffic generators of the RDMA
/// congestion-control literature publish them (HPCC's `traffic_gen`, alibaba-edu/High-Precision-
/// Congestion-Control: web search from DCTCP, Hadoop from Facebook, Alibaba storage, Google RPC):
/// one `SIZE PERCENT` pair per line, sizes in bytes rising strictly, percentiles from 0 on the
/// first line to 100 on the last, rising strictly. Between points the CDF is linear, and a size is
/// drawn by inverting it (HPCC's `custom_rand.py` `getValueFromPercentile`), so the mean is the
/// trapezoid sum of the points ([`EmpiricalCdf::mean_bytes`]).
#[derive(Debug, Clone, PartialEq)]
pub struct EmpiricalCdf {
    /// (bytes, percent), both rising strictly; the first percent 0, the last 100.
    pub points: Vec<(f64, f64)>,
}

impl EmpiricalCdf {
    /// Reads the `SIZE PERCENT` lines (`#` starts a comment; blank lines are skipped). An error
    /// names its 1-based line (0: the file as a whole) and what is valid.
    pub fn parse(text: &str) -> Result<EmpiricalCdf, (usize, String)> {
        let mut points: Vec<(f64, f64)> = Vec::new();
        let mut last_line = 0;
        // A byte-order mark, as editors on Windows write one, is not part of the first size.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [size, percent] = fields[..] else {
                return Err((
                    n,
                    format!(
                        "`{line}`: expected two numbers, a size in bytes and the percentage of flows at most that size"
                    ),
                ));
            };
            let size = size
                .parse::<f64>()
                .ok()
                .filter(|b| b.is_finite() && (0.0..=MAX_RANDOM_FLOW_BYTES as f64).contains(b))
                .ok_or_else(|| {
                    (
                        n,
                        format!(
                            "size `{size}`: valid: a number of bytes from 0 to {MAX_RANDOM_FLOW_BYTES} (10^12)"
                        ),
                    )
                })?;
            let percent = percent
                .parse::<f64>()
                .ok()
                .filter(|p| (0.0..=100.0).contains(p))
                .ok_or_else(|| (n, format!("percentage `{percent}`: valid: 0 to 100")))?;
            if let Some(&(s0, p0)) = points.last() {
                if size <= s0 || percent <= p0 {
                    return Err((
                        n,
                        format!(
                            "{size} bytes at {percent}% after {s0} bytes at {p0}%: sizes and percentages must both rise from line to line"
                        ),
                    ));
                }
            } else if percent != 0.0 {
                return Err((
                    n,
                    format!("the first point is at {percent}%; a CDF starts at 0% (`0 0`, or the smallest size at 0%)"),
                ));
            }
            points.push((size, percent));
            last_line = n;
        }
        match points.last() {
            None => Err((
                0,
                "no points: expected `SIZE PERCENT` lines from 0% to 100%".into(),
            )),
            Some(_) if points.len() < 2 => Err((
                last_line,
                "one point: a CDF needs at least two, from 0% to 100%".into(),
            )),
            Some(&(_, p)) if p != 100.0 => Err((
                last_line,
                if p <= 1.0 {
                    format!(
                        "the last point is at {p}%; a CDF ends at 100% (percentages run from 0 to 100: fractions of 1 are percentages times 100)"
                    )
                } else {
                    format!("the last point is at {p}%; a CDF ends at 100%")
                },
            )),
            Some(_) => Ok(EmpiricalCdf { points }),
        }
    }

    /// The mean size: the area under the inverse CDF, by trapezoids between the points.
    pub fn mean_bytes(&self) -> f64 {
        self.points
            .windows(2)
            .map(|w| (w[0].0 + w[1].0) / 2.0 * (w[1].1 - w[0].1) / 100.0)
            .sum()
    }

    /// The size at percentile `y` (0 to 100): linear between the points around it (found by
    /// binary search: the first point at or above `y`).
    pub fn size_at(&self, y: f64) -> f64 {
        let i = self.points[1..].partition_point(|p| p.1 < y) + 1;
        match (self.points.get(i - 1), self.points.get(i)) {
            (Some(&(x0, y0)), Some(&(x1, y1))) => x0 + (x1 - x0) / (y1 - y0) * (y - y0),
            _ => self.points.last().map_or(0.0, |p| p.0),
        }
    }
}

/// Where flow sizes come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Sizes {
    LogNormal(LogNormal),
    Empirical(EmpiricalCdf),
    /// An empirical CDF still to be read from this file (`--generate cdf:file=PATH,...`): the front
    /// end reads it and puts [`Sizes::Empirical`] in its place ([`Generate::cdf_file`]).
    CdfFile(String),
}

impl From<LogNormal> for Sizes {
    fn from(l: LogNormal) -> Sizes {
        Sizes::LogNormal(l)
    }
}

impl Sizes {
    /// The mean size, bytes (0 for a CDF not yet read).
    pub fn mean_bytes(&self) -> f64 {
        match self {
            Sizes::LogNormal(l) => l.mean_bytes(),
            Sizes::Empirical(c) => c.mean_bytes(),
            Sizes::CdfFile(_) => 0.0,
        }
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
        mean_bytes: f64,
    ) -> Arrivals {
        Arrivals::Poisson {
            flows_per_second: load * f64::from(hosts) * link_bytes_per_second / mean_bytes,
        }
    }
}

/// The largest size [`random_flows`] draws: 10^12 bytes (1 TB). A larger draw from the tail is
/// capped at it and counted ([`RandomFlows::capped`]); a median above it is refused.
pub const MAX_RANDOM_FLOW_BYTES: u64 = 1_000_000_000_000;

/// The latest start [`random_flows`] gives a flow: 2^63 ps (106 days), as for a flows file
/// (`flows_file`). Poisson arrivals that would run past it are refused, not clamped.
pub const MAX_RANDOM_START_PS: u64 = Time::CLOCK.ps();

/// A random workload: its flows, in order of start, and how many of their sizes were capped.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomFlows {
    pub flows: Vec<HostFlow>,
    /// Flows whose drawn size was above [`MAX_RANDOM_FLOW_BYTES`] and was capped at it: the sizes
    /// above the cap are not log-normal, which a front end should say.
    pub capped: usize,
}

/// The flows drawn, with the sum of the Poisson gaps in units of the mean gap, kept to say which
/// rate would have kept arrivals within the clock when they ran past it.
struct Drawn {
    random: RandomFlows,
    /// The last arrival's time times the rate (0 with every flow at time zero): the same draws at
    /// another rate start the last flow at this over the rate, in seconds.
    unit_span: f64,
    /// Some arrival came after [`MAX_RANDOM_START_PS`].
    overrun: bool,
}

impl Drawn {
    /// The least Poisson rate that keeps the last of these arrivals within the clock, with a
    /// margin (10^-6) far above the rounding the clock accumulates over [`MAX_GENERATED_FLOWS`].
    fn least_rate(&self) -> f64 {
        self.unit_span * 1e12 / MAX_RANDOM_START_PS as f64 * (1.0 + 1e-6)
    }
}

/// `count` flows between uniformly random pairs of distinct hosts, sizes from `sizes`, start times
/// from `arrivals`, in order of start. The same arguments give the same flows on every machine.
/// Sizes drawn above [`MAX_RANDOM_FLOW_BYTES`] are capped and counted; Poisson arrivals that would
/// start a flow after [`MAX_RANDOM_START_PS`] are refused, naming the least rate that fits.
pub fn random_flows(
    hosts: u32,
    count: usize,
    sizes: impl Into<Sizes>,
    arrivals: Arrivals,
    seed: u64,
) -> Result<RandomFlows, SimError> {
    let sizes = sizes.into();
    if let Arrivals::Poisson { flows_per_second } = arrivals {
        if !(flows_per_second.is_finite() && flows_per_second > 0.0) {
            return Err(SimError::Config {
                what: "arrivals",
                message: "the Poisson rate must be above zero flows per second".to_string(),
            });
        }
    }
    let drawn = draw(hosts, count, &sizes, arrivals, seed)?;
    if drawn.overrun {
        let Arrivals::Poisson { flows_per_second } = arrivals else {
            unreachable!("flows at time zero never run past the clock")
        };
        return Err(SimError::Config {
            what: "arrivals",
            message: format!(
                "at {} flows per second the last of {count} flows would start after 2^63 ps (106 days), past the simulator's clock; valid: a rate of at least {} flows per second for these flows",
                short(flows_per_second),
                round_up_3(drawn.least_rate())
            ),
        });
    }
    Ok(drawn.random)
}

/// The drawing behind [`random_flows`], which it checks; a Poisson rate of zero runs past the
/// clock at the first flow.
fn draw(
    hosts: u32,
    count: usize,
    sizes: &Sizes,
    arrivals: Arrivals,
    seed: u64,
) -> Result<Drawn, SimError> {
    let bad = |what, message: String| Err(SimError::Config { what, message });
    if hosts < 2 {
        return bad("hosts", "need at least 2 hosts".into());
    }
    // A size from one or two uniform draws, before rounding.
    let lognormal = match sizes {
        Sizes::LogNormal(l) => {
            if !(l.median_bytes.is_finite()
                && (1.0..=MAX_RANDOM_FLOW_BYTES as f64).contains(&l.median_bytes))
            {
                return bad(
                    "median",
                    format!("must be a number of bytes from 1 to {MAX_RANDOM_FLOW_BYTES}"),
                );
            }
            if !(l.sigma.is_finite() && (0.0..=10.0).contains(&l.sigma)) {
                return bad("sigma", "must be a number from 0 to 10".into());
            }
            Some((ln(l.median_bytes), l.sigma))
        }
        Sizes::Empirical(c) => {
            if c.points.len() < 2 {
                return bad("cdf", "needs at least two points".into());
            }
            None
        }
        Sizes::CdfFile(path) => {
            return bad(
                "cdf",
                format!("the CDF in `{path}` was not read (the front end reads it)"),
            )
        }
    };
    let mut state = seed;
    let mut flows = Vec::with_capacity(count);
    let (mut capped, mut overrun) = (0, false);
    let (mut clock_ps, mut unit_span) = (0.0_f64, 0.0_f64);
    for _ in 0..count {
        let src = below(&mut state, u64::from(hosts)) as u32;
        let mut dst = below(&mut state, u64::from(hosts) - 1) as u32;
        if dst >= src {
            dst += 1;
        }
        let drawn = match (lognormal, sizes) {
            (Some((mu, sigma)), _) => exp(mu + sigma * normal(&mut state)).round(),
            (None, Sizes::Empirical(c)) => c.size_at(uniform(&mut state) * 100.0).round(),
            (None, _) => unreachable!("only an empirical CDF has no log-normal parameters"),
        };
        let bytes = if drawn > MAX_RANDOM_FLOW_BYTES as f64 {
            capped += 1;
            MAX_RANDOM_FLOW_BYTES
        } else {
            (drawn as u64).max(1)
        };
        let start = match arrivals {
            Arrivals::AllAtZero => Time::ZERO,
            Arrivals::Poisson { flows_per_second } => {
                let gap = -ln(uniform(&mut state));
                unit_span += gap;
                clock_ps += gap / flows_per_second * 1e12;
                let ps = clock_ps.round();
                // An infinite clock (a rate of zero, or one so small the gap overflows) is no
                // less than the limit either.
                if ps < MAX_RANDOM_START_PS as f64 {
                    Time::from_ps(ps as u64)
                } else {
                    overrun = true;
                    Time::MAX
                }
            }
        };
        flows.push(HostFlow {
            src,
            dst,
            bytes,
            start,
        });
    }
    Ok(Drawn {
        random: RandomFlows { flows, capped },
        unit_span,
        overrun,
    })
}

/// `x` (finite, above zero) rounded up to three significant digits, written as Rust parses it back
/// (`3.22e-8`, `0.0322`, `3.22`, `3.22e4`): by IEEE operations only, so the same on every machine.
fn round_up_3(x: f64) -> String {
    if !(x.is_finite() && x > 0.0) {
        return format!("{x}");
    }
    let (mut m, mut e) = (x, 0_i32);
    while m >= 1000.0 {
        m /= 10.0;
        e += 1;
    }
    while m < 100.0 {
        m *= 10.0;
        e -= 1;
    }
    let mut digits = m.ceil() as u32;
    if digits == 1000 {
        digits = 100;
        e += 1;
    }
    let mantissa = format!("{}.{:02}", digits / 100, digits % 100);
    let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
    match e + 2 {
        0 => mantissa.to_string(),
        exp @ -3..=-1 => {
            let digits = format!("{digits:03}");
            let zeros = "0".repeat((-exp - 1) as usize);
            format!("0.{zeros}{}", digits.trim_end_matches('0'))
        }
        exp => format!("{mantissa}e{exp}"),
    }
}

/// A number for a message: plain when moderate, else in scientific notation (`1e-12`, `3.21e-8`).
fn short(x: f64) -> String {
    if x == 0.0 || (1e-3..1e7).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// The most flows [`Generate`] makes: about as many as the engine holds in 2 GB.
pub const MAX_GENERATED_FLOWS: usize = 10_000_000;

/// A random workload as `sim flows --generate` spells it:
/// `lognormal:flows=N,median=SIZE[,sigma=S][,arrivals=zero|poisson][,load=L][,seed=N]`, or
/// `cdf:file=PATH,flows=N[,arrivals=zero|poisson][,load=L][,seed=N]`.
///
/// - `flows`: how many flows (1 to [`MAX_GENERATED_FLOWS`]).
/// - `median`: the median size, a whole number of bytes with an optional K, M, G or T suffix (powers
///   of 1024, as `-b` and `-e` of `sim collective`), at most [`MAX_RANDOM_FLOW_BYTES`]; sizes
///   drawn above that are capped and counted ([`RandomFlows::capped`]).
/// - `sigma`: standard deviation of `ln(size)`, 0 to 10 (default 2: the mean is e^2 = 7.4 times the
///   median).
/// - `file` (`cdf` only): a file of `SIZE PERCENT` lines, an [`EmpiricalCdf`]; the front end reads
///   it ([`Generate::cdf_file`]). The path cannot hold a comma (which separates the keys).
/// - `arrivals`: `zero` (every flow starts at time zero, the default) or `poisson`.
/// - `load`: with `arrivals=poisson`, the average load each Poisson process puts on every host's
///   link, above 0 and at most 1 (default 0.6); see [`Arrivals::poisson_at_load`]. A load so low
///   that the last flow would start past [`MAX_RANDOM_START_PS`] is refused by [`Generate::flows`].
/// - `seed`: the random seed (default 1).
///
/// Keys may come in any order, each at most once.
#[derive(Debug, Clone, PartialEq)]
pub struct Generate {
    pub flows: usize,
    pub sizes: Sizes,
    /// `None`: every flow at time zero; `Some(load)`: Poisson arrivals at that load.
    pub poisson_load: Option<f64>,
    pub seed: u64,
}

/// The keys of `--generate`, for messages.
const GENERATE_KEYS: &str = "flows, median, sigma, arrivals, load, seed";
const CDF_KEYS: &str = "file, flows, arrivals, load, seed";
const GENERATE_FORMS: &str = "`lognormal:flows=N,median=SIZE[,sigma=S][,arrivals=zero|poisson][,load=L][,seed=N]` or `cdf:file=PATH,flows=N[,arrivals=zero|poisson][,load=L][,seed=N]`";

impl Generate {
    /// Parses the `--generate` text; errors name the field and its valid values.
    pub fn parse(text: &str) -> Result<Generate, String> {
        let Some((kind, rest)) = text.split_once(':') else {
            return Err(format!("`{text}`: expected {GENERATE_FORMS}"));
        };
        let cdf = match kind {
            "lognormal" => false,
            "cdf" => true,
            _ => {
                return Err(format!(
                    "unknown distribution `{kind}`; valid: lognormal, cdf"
                ))
            }
        };
        let keys = if cdf { CDF_KEYS } else { GENERATE_KEYS };
        let (mut flows, mut median, mut sigma, mut arrivals, mut load, mut seed, mut file) =
            (None, None, None, None, None, None, None);
        for item in rest.split(',') {
            let Some((key, value)) = item.split_once('=') else {
                let hint = if file.is_some() {
                    " (a file path cannot hold a comma, which separates the keys)"
                } else {
                    ""
                };
                return Err(format!(
                    "`{item}`: expected KEY=VALUE; valid keys: {keys}{hint}"
                ));
            };
            let (key, value) = (key.trim(), value.trim());
            let taken = match key {
                "flows" => flows.replace(value).is_some(),
                "median" if !cdf => median.replace(value).is_some(),
                "sigma" if !cdf => sigma.replace(value).is_some(),
                "file" if cdf => file.replace(value).is_some(),
                "arrivals" => arrivals.replace(value).is_some(),
                "load" => load.replace(value).is_some(),
                "seed" => seed.replace(value).is_some(),
                "median" | "sigma" => {
                    return Err(format!(
                        "`{key}` is a log-normal parameter; a cdf takes its sizes from its file; valid keys: {keys}"
                    ))
                }
                _ => return Err(format!("unknown key `{key}`; valid keys: {keys}")),
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
        let sizes = if cdf {
            match file {
                None | Some("") => {
                    return Err(
                        "`file` is missing; valid: the path of a file of `SIZE PERCENT` lines (a flow-size CDF, as HPCC's traffic_gen publishes them)".into(),
                    )
                }
                Some(path) => Sizes::CdfFile(path.to_string()),
            }
        } else {
            let median = match median {
                None => {
                    return Err(
                        "`median` is missing; valid: a size such as 1M (1 MiB) or 1000000".into(),
                    )
                }
                Some(v) => crate::nccl::parse_size(v)
                    .ok()
                    .filter(|&b| (1..=MAX_RANDOM_FLOW_BYTES).contains(&b))
                    .ok_or_else(|| {
                        format!(
                            "median=`{v}`: valid: a whole number of bytes from 1 to {MAX_RANDOM_FLOW_BYTES} (10^12, the largest flow the generator draws; 931G), with an optional K, M, G or T suffix (1M = 1 MiB)"
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
            Sizes::LogNormal(LogNormal {
                median_bytes: median as f64,
                sigma,
            })
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
            sizes,
            poisson_load,
            seed,
        })
    }

    /// The file a `cdf:` workload takes its sizes from while it is unread: the front end reads it,
    /// parses it with [`EmpiricalCdf::parse`] and sets [`Generate::sizes`] to
    /// [`Sizes::Empirical`].
    pub fn cdf_file(&self) -> Option<&str> {
        match &self.sizes {
            Sizes::CdfFile(path) => Some(path),
            _ => None,
        }
    }

    /// The flows on `hosts` hosts whose links carry `link_bytes_per_second` each (the Poisson rate
    /// is set from it, see [`Arrivals::poisson_at_load`]), with how many sizes were capped. A load
    /// so low that the last flow would start past the clock is refused, naming the least load
    /// that fits.
    pub fn flows(&self, hosts: u32, link_bytes_per_second: f64) -> Result<RandomFlows, SimError> {
        let arrivals = match self.poisson_load {
            None => Arrivals::AllAtZero,
            Some(load) => Arrivals::poisson_at_load(
                load,
                hosts,
                link_bytes_per_second,
                self.sizes.mean_bytes(),
            ),
        };
        let drawn = draw(hosts, self.flows, &self.sizes, arrivals, self.seed)?;
        match (self.poisson_load, arrivals) {
            (Some(load), Arrivals::Poisson { flows_per_second }) if drawn.overrun => {
                // The load that gives the least rate (inverting `poisson_at_load`).
                let least = drawn.least_rate() * self.sizes.mean_bytes()
                    / (f64::from(hosts) * link_bytes_per_second);
                let valid = if least <= 1.0 {
                    format!(
                        "valid: a load from {} to 1 for these flows, or fewer flows",
                        round_up_3(least)
                    )
                } else {
                    "valid: fewer flows (even at load 1 they run past it)".to_string()
                };
                Err(SimError::Config {
                    what: "load",
                    message: format!(
                        "{} gives {:.3e} flows per second ({} flows on {hosts} hosts of {:.3} GB/s), which would start the last flow after 2^63 ps (106 days), past the simulator's clock; {valid}",
                        short(load),
                        flows_per_second,
                        self.flows,
                        link_bytes_per_second / 1e9,
                    ),
                })
            }
            _ => Ok(drawn.random),
        }
    }
}

/// The spec with every key, in the order the docs give them: `lognormal:flows=50,median=1048576,
/// sigma=2,arrivals=zero,seed=7` (the median in bytes), `cdf:file=web.txt,flows=...`. It parses
/// back to the same workload.
impl std::fmt::Display for Generate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.sizes {
            Sizes::LogNormal(l) => write!(
                f,
                "lognormal:flows={},median={},sigma={}",
                self.flows, l.median_bytes, l.sigma
            )?,
            Sizes::CdfFile(path) => write!(f, "cdf:file={path},flows={}", self.flows)?,
            Sizes::Empirical(_) => write!(f, "cdf:flows={}", self.flows)?,
        }
        match self.poisson_load {
            None => write!(f, ",arrivals=zero")?,
            Some(load) => write!(f, ",arrivals=poisson,load={load}")?,
        }
        write!(f, ",seed={}", self.seed)
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
mod tests;

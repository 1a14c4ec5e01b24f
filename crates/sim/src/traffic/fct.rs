//! Flow-completion-time (FCT) statistics over a run, as flow-level simulators report them.

use crate::net::leafspine::FlowResult;
use crate::time::Time;

/// The flow that fell furthest behind its lone-flow time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slowest {
    /// Index in the input.
    pub flow: usize,
    pub fct: Time,
    pub ideal: Time,
    /// fct / ideal.
    pub ratio: f64,
}

/// FCT statistics. Percentiles are nearest-rank (the smallest FCT with at least p% of flows at or
/// below it; Hyndman & Fan 1996 definition 1), so each is the FCT of an actual flow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FctSummary {
    pub flows: usize,
    /// Last finish minus first start.
    pub makespan: Time,
    /// Rounded to the nearest picosecond.
    pub mean: Time,
    pub p50: Time,
    pub p99: Time,
    pub max: Time,
    /// Largest fct / ideal (ties: the first flow); `None` without flows.
    pub slowest: Option<Slowest>,
}

pub fn summarize(results: &[FlowResult]) -> FctSummary {
    let n = results.len();
    let mut fcts: Vec<Time> = results.iter().map(FlowResult::fct).collect();
    fcts.sort_unstable();
    // Nearest rank: ceil(p/100 * n), 1-based.
    let rank = |p: usize| fcts[((p * n).div_ceil(100)).max(1) - 1];
    let total: u128 = fcts.iter().map(|t| u128::from(t.ps())).sum();
    let first = results.iter().map(|r| r.start).min().unwrap_or(Time::ZERO);
    let last = results.iter().map(|r| r.finish).max().unwrap_or(Time::ZERO);
    let mut slowest: Option<Slowest> = None;
    for (i, r) in results.iter().enumerate() {
        let ratio = if r.ideal == Time::ZERO {
            1.0
        } else {
            r.fct().ps() as f64 / r.ideal.ps() as f64
        };
        let better = match slowest {
            Some(s) => ratio > s.ratio,
            None => true,
        };
        if better {
            slowest = Some(Slowest {
                flow: i,
                fct: r.fct(),
                ideal: r.ideal,
                ratio,
            });
        }
    }
    if n == 0 {
        return FctSummary {
            flows: 0,
            makespan: Time::ZERO,
            mean: Time::ZERO,
            p50: Time::ZERO,
            p99: Time::ZERO,
            max: Time::ZERO,
            slowest: None,
        };
    }
    FctSummary {
        flows: n,
        makespan: last - first,
        // The mean of u64 values fits a u64.
        mean: Time::from_ps(((total + n as u128 / 2) / n as u128) as u64),
        p50: rank(50),
        p99: rank(99),
        max: fcts[n - 1],
        slowest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: u64, finish: u64, ideal: u64) -> FlowResult {
        FlowResult {
            start: Time::from_ps(start),
            finish: Time::from_ps(finish),
            ideal: Time::from_ps(ideal),
        }
    }

    #[test]
    fn nearest_rank_percentiles() {
        let results: Vec<FlowResult> = (1..=100).map(|i| r(0, i, i)).collect();
        let s = summarize(&results);
        assert_eq!(s.p50, Time::from_ps(50));
        assert_eq!(s.p99, Time::from_ps(99));
        assert_eq!(s.max, Time::from_ps(100));
        assert_eq!(s.mean, Time::from_ps(51)); // 50.5 rounds half up
        let s = summarize(&[r(10, 30, 5), r(0, 4, 4)]);
        assert_eq!(
            (s.p50, s.p99, s.makespan),
            (Time::from_ps(4), Time::from_ps(20), Time::from_ps(30))
        );
        let slow = s.slowest.unwrap();
        assert_eq!((slow.flow, slow.ratio), (0, 4.0));
        assert_eq!(summarize(&[]).slowest, None);
    }
}

//! The constants of the collective model that are fitted to published measurements rather than
//! taken from NCCL's code or a datasheet, each with the runs it was fitted on, the sources those
//! runs come from, the rule that gives its value from them, and its neutral value (the model
//! without the measurement).
//!
//! Issue 35 makes generalisation a rule: docs/validation.md scores every source's rows with a model
//! whose fitted constants were fitted without that source (leave one source out). For that the
//! constants the validation can reach are not only `const`s but also fields of [`Fitted`], which a
//! `CollectiveConfig` (the collective model's input) carries (`sim collective --fitted NAME=VALUE`): the
//! validation test refits each constant by its [`FittedConstant::rule`] on its runs less one
//! source and runs that source's rows with the refitted values. The shipped values are the `const`s
//! named in [`FITTED`]; [`Fitted::default`] is them.

use crate::net::fabric_net::HOST_STAGED_RECEIVE_GBS;

/// How much longer than NCCL's latency model (tuning.cc) an LL128 collective across servers takes
/// to start, measured: the median over six published healthy multi-node `all_reduce_perf` runs at
/// 1 MiB with NCCL's defaults, where NCCL runs LL128, of `1 + (measured time - railyard's time
/// without this factor) / NCCL's latency`. The runs (their logs and sources in
/// docs/validation/mid-size-survey, their parameters in `startup-runs.toml` there): OCI BM.GPU4.8
/// A100 over RoCE 1.36; H100 over InfiniBand from NVIDIA/nccl-tests issue 309, a VMware cluster of
/// 4 servers 1.01 and one cluster at 2, 4 and 8 servers 1.43, 1.18, 1.20; the vpbenchmarking
/// repository's 4 servers 1.16. When it was fitted none of these 1 MiB points was a row of
/// docs/validation.md; since issue 35 the VMware run's is, and docs/validation.md scores every
/// row of these three sources with the factor refitted without that source (leave one source out,
/// [`crate::nccl::fitted`]: 1.26 without issue 309, 1.18 without OCI, 1.21 without vpbenchmarking). At 8 bytes (LL) the same systems are within
/// about 8 us of NCCL's latency, and in the bandwidth regime the slope agrees within about 6% (the
/// survey's README): the excess is a start-up of the LL128 pipeline that NCCL's per-hop latencies
/// leave out, so it scales the latency only, and only where it was measured. NCCL's choice of
/// algorithm and protocol is made on NCCL's own model (`Tuning::select`), without it, as NCCL
/// makes it.
pub const LL128_NET_STARTUP_FACTOR: f64 = 1.19;

/// Host time of one nccl-tests iteration per GPU its thread drives, microseconds: with `-g N` one
/// thread issues the operation on N GPUs in turn (N calls in a group, N kernel launches: NCCL's
/// src/group.cc `doLaunches` launches each communicator's kernel in turn from the calling thread),
/// so the last GPU's kernel starts N times this after the first. Measured, not a datasheet figure: the 0-byte rows
/// of an 8 x A100 `nThread 1 nGpus 8` all-reduce log (microsoft/superbenchmark
/// `tests/data/nccl_allreduce.log`: 35.20, 34.05, 34.18 and 33.50 us; NCCL launches its kernel on
/// every GPU and moves nothing) average 34.23 us, 4.28 us per GPU; the same log's 0-byte
/// all-to-all, which launches nothing, takes 1.35 us, so the time is the launches, not the test
/// loop. The figure belongs to that host (AMD EPYC, 2021 NCCL): a faster host launches faster.
/// One process per GPU (`-g 1`, the MPI launch) hides it behind NCCL's own latency, which is
/// larger. A second source (issue 35): the Azure AI-benchmarking-guide's `-g 8` all-reduce rows at
/// 1 KiB (ND H100 v5 25.6 us, ND H200 v5 29.9 us, ND A100 v4 44.8 us from the published bus
/// bandwidth, rounded to two decimals: about +-8%), 3.2, 3.7 and 5.6 us per GPU, mean 4.18; the
/// constant is the mean of the two sources' means (4.28 and 4.18), so leaving either out moves it
/// by 0.05 us.
pub const NCCL_TESTS_HOST_US_PER_GPU: f64 = 4.23;

/// Host time of each point-to-point call nccl-tests makes (one `ncclSend` or `ncclRecv`: its
/// alltoall posts a send and a receive to every rank, itself included, src/alltoall.cu; sendrecv
/// one of each), microseconds, on top of [`NCCL_TESTS_HOST_US_PER_GPU`]. NCCL checks the
/// connection of every channel the peer may use and queues the call (enqueue.cc `ncclSaveP2p` of
/// 2.9-2.11) before a kernel is launched. Measured, not a datasheet figure: the all-to-all log of
/// the same superbenchmark host (`tests/data/nccl_alltoall.log`, `nThread 1 nGpus 8`) is flat at a
/// median 87.27 us from 32 B to 1 MiB, 10.91 us per GPU: 4.28 for the launch and 16 calls of
/// 0.417 us. A second source (issue 35): tinygrad/open-gpu-kernel-modules issue 17 (RTX 4090, a
/// 2.2x NCCL, `-g 2`, P2P disabled) gives a median 11.72 us for 8-32 B all-to-alls, 5.86 us per
/// GPU: 4.23 for the launch and 4 calls of 0.41 us (docs/validation/mid-size-survey has the
/// rows). The constant is the mean of the two sources' values.
pub const NCCL_TESTS_HOST_US_PER_P2P_CALL: f64 = 0.41;

/// Time every NVLS or NVLSTree chunk step costs besides moving its bytes, microseconds per step
/// (`crate::tuning::chunking`): the flag post and poll with which the kernel's warp groups hand a
/// chunk on (NCCL src/device/all_reduce.h, NVLS and NVLS_TREE `RunWorkColl`). NCCL's code has no
/// figure for it; measured, with [`NVLS_PIPELINE_FILL_STEPS`], on the published all-reduce sweeps
/// of docs/validation/mid-size-survey/nvls-runs.toml (one 8 x H100 server: NVIDIA/dgxc-benchmarking,
/// the Azure guide's ND H100 v5 and ND H200 v5; two and four H100 servers: NVIDIA/nccl-tests#309
/// and the vpbenchmarking repository), the rows of 4 to 128 MiB where NCCL runs NVLS or NVLSTree.
/// At the full chunk the step's time is what NCCL's bandwidth gives (large sizes keep NCCL's
/// model); with a 16-32 KiB chunk it is a visible part of each step. The rule (least squares of
/// the relative time error, [`FITTED`]) gives 0.2 us and 12 steps on the 42 rows; without any one
/// source 0.05-0.2 us and 12-13 steps (docs/validation.md lists each). The research note of issue
/// 35 found 0.3 us and 10 steps by hand on fewer rows.
pub const NVLS_CHUNK_STEP_US: f64 = 0.2;

/// Chunk steps it takes an NVLS or NVLSTree pipeline to fill and drain, each at the chunk's step
/// time (`crate::tuning::chunking`): the chunk passes scatter, multimem reduce, (network tree,)
/// multimem broadcast and gather warp groups in turn before the next can leave the last stage.
/// Fitted with [`NVLS_CHUNK_STEP_US`] on the same runs.
pub const NVLS_PIPELINE_FILL_STEPS: f64 = 12.0;

/// One fitted constant: what it is fitted on and how, as docs/validation.md lists it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FittedConstant {
    /// The constant's name in the code, and the `--fitted` name.
    pub name: &'static str,
    /// The shipped value.
    pub value: f64,
    /// The value that leaves the measurement out (the model as NCCL's own code has it).
    pub neutral: f64,
    /// The runs it was fitted on: a file of this repository and which of its rows.
    pub fitted_on: &'static str,
    /// The sources of those runs, as docs/validation.md keys sources (`owner/repo` or
    /// `owner/repo#issue` of the GitHub address).
    pub sources: &'static [&'static str],
    /// How the value follows from the runs.
    pub rule: &'static str,
    /// Whether `--fitted` can replace it (every constant whose sources give validation rows must:
    /// the validation test fails otherwise).
    pub replaceable: bool,
}

/// The sources of the NVLS pipeline's runs.
const NVLS_SOURCES: &[&str] = &[
    "NVIDIA/dgxc-benchmarking",
    "Azure/AI-benchmarking-guide",
    "NVIDIA/nccl-tests#309",
    "ZiyanIshani/vpbenchmarking",
];

/// Every fitted constant of the collective model.
pub const FITTED: [FittedConstant; 6] = [
    FittedConstant {
        name: "LL128_NET_STARTUP_FACTOR",
        value: LL128_NET_STARTUP_FACTOR,
        neutral: 1.0,
        fitted_on: "docs/validation/mid-size-survey/startup-runs.toml: six all_reduce_perf runs at 1 MiB, LL128 across servers",
        sources: &[
            "oracle-quickstart/oci-hpc-oke",
            "NVIDIA/nccl-tests#309",
            "ZiyanIshani/vpbenchmarking",
        ],
        rule: "median over the runs of 1 + (measured time - railyard's time without it) / NCCL's latency",
        replaceable: true,
    },
    FittedConstant {
        name: "NCCL_TESTS_HOST_US_PER_GPU",
        value: NCCL_TESTS_HOST_US_PER_GPU,
        neutral: 0.0,
        fitted_on: "crates/sim/tests/data/nccl-tests/superbench-a100-1node-all_reduce-2021.txt: the 0-byte rows (-g 8); docs/validation/measurements.toml: the Azure guide's -g 8 all-reduce rows at 1 KiB (azure-ndh100v5/ndh200v5/nda100v4-1srv-allreduce-1k)",
        sources: &["microsoft/superbenchmark", "Azure/AI-benchmarking-guide"],
        rule: "mean over sources of the mean of each row's time / the GPUs one thread drives",
        replaceable: true,
    },
    FittedConstant {
        name: "NCCL_TESTS_HOST_US_PER_P2P_CALL",
        value: NCCL_TESTS_HOST_US_PER_P2P_CALL,
        neutral: 0.0,
        fitted_on: "crates/sim/tests/data/nccl-tests/superbench-a100-1node-alltoall-2021.txt: the rows of 32 B to 1 MiB (-g 8); docs/validation/mid-size-survey/tinygrad17_rtx4090_alltoall_g2.txt: the rows of 8-32 B (-g 2)",
        sources: &["microsoft/superbenchmark", "tinygrad/open-gpu-kernel-modules#17"],
        rule: "mean over sources of (median of time / GPUs - NCCL_TESTS_HOST_US_PER_GPU) / (2 x ranks) calls",
        replaceable: true,
    },
    FittedConstant {
        name: "NVLS_CHUNK_STEP_US",
        value: NVLS_CHUNK_STEP_US,
        neutral: 0.0,
        fitted_on: "docs/validation/mid-size-survey/nvls-runs.toml: all_reduce_perf sweeps, rows of 4-128 MiB where NCCL runs NVLS or NVLSTree",
        sources: NVLS_SOURCES,
        rule: "with NVLS_PIPELINE_FILL_STEPS, least squares of the relative time error over the runs' rows (grid of 0.01 us and whole steps)",
        replaceable: true,
    },
    FittedConstant {
        name: "NVLS_PIPELINE_FILL_STEPS",
        value: NVLS_PIPELINE_FILL_STEPS,
        neutral: 0.0,
        fitted_on: "docs/validation/mid-size-survey/nvls-runs.toml: all_reduce_perf sweeps, rows of 4-128 MiB where NCCL runs NVLS or NVLSTree",
        sources: NVLS_SOURCES,
        rule: "with NVLS_CHUNK_STEP_US, least squares of the relative time error over the runs' rows (grid of 0.01 us and whole steps)",
        replaceable: true,
    },
    FittedConstant {
        name: "HOST_STAGED_RECEIVE_GBS",
        value: HOST_STAGED_RECEIVE_GBS,
        neutral: f64::INFINITY,
        fitted_on: "NVIDIA/nccl#412: the maintainer's 16 GB/s for a GPU receiving through host memory (the reporter's 15.3)",
        sources: &["NVIDIA/nccl#412"],
        rule: "the maintainer's figure as stated",
        replaceable: false,
    },
];

/// The values of the fitted constants a collective is priced with; the default is the shipped
/// values ([`FITTED`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fitted {
    /// [`LL128_NET_STARTUP_FACTOR`].
    pub ll128_net_startup_factor: f64,
    /// [`NCCL_TESTS_HOST_US_PER_GPU`], microseconds.
    pub nccl_tests_host_us_per_gpu: f64,
    /// [`NCCL_TESTS_HOST_US_PER_P2P_CALL`], microseconds.
    pub nccl_tests_host_us_per_p2p_call: f64,
    /// [`NVLS_CHUNK_STEP_US`], microseconds.
    pub nvls_chunk_step_us: f64,
    /// [`NVLS_PIPELINE_FILL_STEPS`].
    pub nvls_pipeline_fill_steps: f64,
}

impl Default for Fitted {
    fn default() -> Self {
        Fitted {
            ll128_net_startup_factor: LL128_NET_STARTUP_FACTOR,
            nccl_tests_host_us_per_gpu: NCCL_TESTS_HOST_US_PER_GPU,
            nccl_tests_host_us_per_p2p_call: NCCL_TESTS_HOST_US_PER_P2P_CALL,
            nvls_chunk_step_us: NVLS_CHUNK_STEP_US,
            nvls_pipeline_fill_steps: NVLS_PIPELINE_FILL_STEPS,
        }
    }
}

impl Fitted {
    /// The names `--fitted` takes, in [`FITTED`]'s order.
    pub fn replaceable_names() -> Vec<&'static str> {
        FITTED
            .iter()
            .filter(|c| c.replaceable)
            .map(|c| c.name)
            .collect()
    }

    /// Replaces constant `name` with `value`; an unknown or fixed name, or a value out of range,
    /// is an error naming the valid choices.
    pub fn set(&mut self, name: &str, value: f64) -> Result<(), String> {
        let (slot, range): (&mut f64, (f64, f64)) = match name {
            "LL128_NET_STARTUP_FACTOR" => (&mut self.ll128_net_startup_factor, (0.1, 100.0)),
            "NCCL_TESTS_HOST_US_PER_GPU" => (&mut self.nccl_tests_host_us_per_gpu, (0.0, 1000.0)),
            "NCCL_TESTS_HOST_US_PER_P2P_CALL" => {
                (&mut self.nccl_tests_host_us_per_p2p_call, (0.0, 1000.0))
            }
            "NVLS_CHUNK_STEP_US" => (&mut self.nvls_chunk_step_us, (0.0, 100.0)),
            "NVLS_PIPELINE_FILL_STEPS" => (&mut self.nvls_pipeline_fill_steps, (0.0, 1000.0)),
            _ => {
                return Err(format!(
                    "`{name}` is not a replaceable fitted constant; valid: {}",
                    Self::replaceable_names().join(", ")
                ))
            }
        };
        if !(value.is_finite() && (range.0..=range.1).contains(&value)) {
            return Err(format!(
                "{name}={value}: valid: a number from {} to {}",
                range.0, range.1
            ));
        }
        *slot = value;
        Ok(())
    }

    /// The constants that differ from the shipped values, as `(name, value, shipped)`, in
    /// [`FITTED`]'s order.
    pub fn replaced(&self) -> Vec<(&'static str, f64, f64)> {
        let shipped = Fitted::default();
        [
            (
                "LL128_NET_STARTUP_FACTOR",
                self.ll128_net_startup_factor,
                shipped.ll128_net_startup_factor,
            ),
            (
                "NCCL_TESTS_HOST_US_PER_GPU",
                self.nccl_tests_host_us_per_gpu,
                shipped.nccl_tests_host_us_per_gpu,
            ),
            (
                "NCCL_TESTS_HOST_US_PER_P2P_CALL",
                self.nccl_tests_host_us_per_p2p_call,
                shipped.nccl_tests_host_us_per_p2p_call,
            ),
            (
                "NVLS_CHUNK_STEP_US",
                self.nvls_chunk_step_us,
                shipped.nvls_chunk_step_us,
            ),
            (
                "NVLS_PIPELINE_FILL_STEPS",
                self.nvls_pipeline_fill_steps,
                shipped.nvls_pipeline_fill_steps,
            ),
        ]
        .into_iter()
        .filter(|(_, v, s)| v != s)
        .collect()
    }
}

#[cfg(test)]
#[path = "fitted_tests.rs"]
mod tests;

//! Unit tests of [`crate::parallel`].

use super::*;
use crate::fixtures::megatron;
use crate::model::Model;
use crate::schedule::Schedule;

/// Defaults on 16 servers of 8 GPUs: TP fills a server, DP takes every GPU left over the
/// stages, the model's sequence length, 8 micro-batches per data-parallel rank.
#[test]
fn layout_defaults_fill_the_cluster() {
    let model = Model::preset("llama3-70b").unwrap();
    let layout = Layout {
        pp: 4,
        ..Layout::unasked()
    };
    let p = layout.resolve(128, 8, &model).unwrap();
    assert_eq!((p.tp, p.pp, p.dp, p.seq), (8, 4, 4, model.seq));
    assert_eq!(p.global_batch, 4 * DEFAULT_MICROBATCHES_PER_RANK);
    // A given size wins, and is checked against the cluster.
    let e = Layout {
        tp: Some(16),
        ..layout.clone()
    }
    .resolve(128, 8, &model)
    .unwrap_err();
    assert_eq!(e.field, "tp");
}

/// 32 layers, no experts, 32 heads.
fn dense() -> Model {
    Model::preset("llama3-8b").unwrap()
}

/// 32 layers, 8 experts, 32 heads.
fn moe() -> Model {
    Model::preset("mixtral-8x7b").unwrap()
}

fn par(tp: u32, pp: u32, dp: u32, ep: u32) -> Parallelism {
    Parallelism {
        global_batch: u64::from(dp) * 8,
        ep,
        seq: 4096,
        ..megatron(tp, pp, dp)
    }
}

#[test]
fn megatron_order_keeps_tp_in_a_server_and_dp_on_a_rail() {
    let p = par(8, 2, 4, 1);
    let g = p.groups();
    assert_eq!(g.tp.len(), 8);
    assert_eq!(g.tp[0], (0..8).collect::<Vec<_>>());
    // DP peers: the same local GPU (rail) on consecutive servers.
    assert_eq!(g.dp[3], vec![3, 11, 19, 27]);
    // Pipeline stages are blocks of 4 servers.
    assert_eq!(g.pp[0], vec![0, 32]);
    let gpus_per_server = 8;
    for group in &g.dp {
        let rails: std::collections::BTreeSet<u32> =
            group.iter().map(|r| r % gpus_per_server).collect();
        assert_eq!(rails.len(), 1, "a DP group stays on one rail");
    }
}

#[test]
fn every_rank_is_in_exactly_one_group_of_each_kind() {
    let p = par(4, 2, 8, 4);
    let g = p.groups();
    for groups in [&g.tp, &g.dp, &g.pp, &g.ep, &g.edp] {
        let mut all: Vec<u32> = groups.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..64).collect::<Vec<_>>());
    }
    assert!(g.ep.iter().all(|e| e.len() == 4));
    // Expert replicas: one rank of each expert group, 8 / 4 = 2 of them.
    assert!(g.edp.iter().all(|e| e.len() == 2));
    assert_eq!(g.edp[0], vec![g.dp[0][0], g.dp[0][4]]);
}

#[test]
fn layouts_that_do_not_fit_name_the_flag() {
    assert_eq!(
        par(3, 1, 1, 1).check(8, 8, &dense()).unwrap_err().field,
        "tp"
    );
    assert_eq!(
        par(8, 3, 1, 1).check(64, 8, &dense()).unwrap_err().field,
        "pp"
    );
    assert_eq!(
        par(8, 1, 16, 1).check(64, 8, &dense()).unwrap_err().field,
        "dp"
    );
    assert_eq!(
        par(8, 1, 4, 3).check(64, 8, &moe()).unwrap_err().field,
        "ep"
    );
    assert!(par(8, 2, 4, 2).check(64, 8, &moe()).is_ok());
}

/// The flag at fault is named: a TP past the server is TP's fault (it once blamed --dp), a
/// zero micro-batch is the micro-batch's (it once blamed --global-batch), a zero sequence is
/// refused, and a PP past the cluster is PP's.
#[test]
fn each_error_names_the_flag_at_fault() {
    let field = |p: &Parallelism| p.check(64, 8, &moe()).unwrap_err().field;
    assert_eq!(field(&par(1_000_000_000, 1, 1, 1)), "tp");
    assert_eq!(field(&par(16, 1, 1, 1)), "tp");
    assert_eq!(field(&par(8, 16, 1, 1)), "pp");
    assert_eq!(field(&par(8, 2, 1_000_000, 1)), "dp");
    let mut p = par(8, 1, 8, 1);
    p.micro_batch = 0;
    assert_eq!(field(&p), "micro-batch");
    p.micro_batch = u64::MAX;
    assert_eq!(field(&p), "micro-batch");
    let mut p = par(8, 1, 8, 1);
    p.seq = 0;
    assert_eq!(field(&p), "seq");
    p.seq = u64::MAX;
    assert_eq!(field(&p), "seq");
    let mut p = par(8, 1, 8, 1);
    p.global_batch = u64::MAX;
    assert_eq!(field(&p), "global-batch");
    assert!(par(8, 1, 8, 1).check(64, 8, &moe()).is_ok());
}

/// Layers per stage: one count per stage, each at least 1, adding up to the model's; the
/// error names --stage-layers. The model's rule fills the split where the layers do not divide
/// (Llama 3 405B on 16 stages: 7, 8 x 14, 7, as the Llama 3 paper's section 3.3.2 has it) and
/// leaves even splits alone.
#[test]
fn stage_layers_are_checked_and_filled_from_the_model() {
    let model = Model::preset("llama3-405b").unwrap();
    let mut published = vec![8u64; 16];
    published[0] = 7;
    published[15] = 7;
    assert_eq!(model.uneven_stages(16), published);
    assert_eq!(model.uneven_stages(4), vec![31, 32, 32, 31]);
    assert!(model.uneven_stages(9).is_empty(), "126 layers split evenly");
    assert!(model.uneven_stages(1).is_empty());
    assert!(model.uneven_stages(5).is_empty(), "128 is no multiple of 5");
    let layout = Layout {
        tp: Some(8),
        pp: 16,
        ..Layout::unasked()
    };
    let p = layout.resolve(8192, 8, &model).unwrap();
    assert_eq!(p.stage_layers, published);
    assert_eq!(p.stages(126), published);
    assert!(!p.even_stages(126));
    // A split given wins; a wrong count or sum names the flag.
    let mut given = published.clone();
    given.swap(0, 1);
    let p = Layout {
        stage_layers: given.clone(),
        ..layout.clone()
    }
    .resolve(8192, 8, &model)
    .unwrap();
    assert_eq!(p.stage_layers, given);
    for bad in [vec![63, 63], vec![8; 16], {
        let mut z = published.clone();
        z[1] = 0;
        z[2] = 16;
        z
    }] {
        let e = Layout {
            stage_layers: bad,
            ..layout.clone()
        }
        .resolve(8192, 8, &model)
        .unwrap_err();
        assert_eq!(e.field, "stage-layers", "{e}");
    }
    // A model without the rule: an uneven pp is refused, naming --pp and --stage-layers.
    let e = Layout {
        pp: 3,
        ..layout.clone()
    }
    .resolve(8192, 8, &Model::preset("llama3-70b").unwrap())
    .unwrap_err();
    assert_eq!(e.field, "pp");
    assert!(e.message.contains("--stage-layers"), "{e}");
    // An even pp keeps the even split (no list).
    let p = Layout { pp: 9, ..layout }.resolve(8064, 8, &model).unwrap();
    assert!(p.stage_layers.is_empty() && p.even_stages(126));
}

/// DeepSeek-V3's first 3 layers are dense: on 3, 4 x 14, 2 layers the first stage has no MoE
/// layer and the others all theirs.
#[test]
fn moe_layers_follow_the_stages() {
    let model = Model::preset("deepseek-v3-like").unwrap();
    let mut stages = vec![4u64; 16];
    stages[0] = 3;
    stages[15] = 2;
    let mut moe = stages.clone();
    moe[0] = 0;
    assert_eq!(model.moe_layers_per_stage(&stages), moe);
    assert_eq!(model.moe_layers_per_stage(&[2, 59]), vec![0, 58]);
    assert_eq!(
        Model::preset("llama3-8b")
            .unwrap()
            .moe_layers_per_stage(&[16, 16]),
        vec![0, 0]
    );
}

/// Virtual stages must divide every stage's layers, need a pipeline, and the interleaved
/// schedule needs the micro-batches in groups of pp (Megatron-LM's rule).
#[test]
fn virtual_stages_are_checked() {
    let mut p = par(8, 4, 2, 1);
    p.global_batch = 8;
    p.vp = 4;
    assert!(p.check(64, 8, &dense()).is_ok());
    // 8 layers a stage in 3 chunks: 3, 3, 2 (uneven chunks, as Megatron-Core's layouts allow).
    p.vp = 3;
    assert!(p.check(64, 8, &dense()).is_ok());
    p.vp = 9;
    assert_eq!(p.check(64, 8, &dense()).unwrap_err().field, "vp");
    p.vp = 2;
    p.schedule = Schedule::ZeroBubble;
    assert_eq!(p.check(64, 8, &dense()).unwrap_err().field, "vp");
    p.vp = 1;
    p.schedule = Schedule::Dualpipe;
    assert!(p.check(64, 8, &dense()).is_ok());
    p.global_batch = 6;
    assert_eq!(p.check(64, 8, &dense()).unwrap_err().field, "global-batch");
    p.global_batch = 8;
    p.schedule = Schedule::OneFOneB;
    p.vp = 0;
    assert_eq!(p.check(64, 8, &dense()).unwrap_err().field, "vp");
    p.vp = 2;
    p.global_batch = 12;
    assert_eq!(p.check(64, 8, &dense()).unwrap_err().field, "global-batch");
    let mut q = par(8, 1, 8, 1);
    q.vp = 2;
    assert_eq!(q.check(64, 8, &dense()).unwrap_err().field, "vp");
}

#[test]
fn balanced_stages_put_the_extra_layers_in_the_middle() {
    assert_eq!(
        balanced_stages(61, 16),
        [vec![3], vec![4; 13], vec![3, 3]].concat()
    );
    assert_eq!(balanced_stages(20, 3), vec![6, 7, 7]);
    assert_eq!(balanced_stages(8, 4), vec![2; 4]);
    assert_eq!(balanced_stages(7, 1), vec![7]);
    for (layers, pp) in [(61, 2), (61, 7), (126, 16), (5, 5)] {
        let s = balanced_stages(layers, pp);
        assert_eq!(s.iter().sum::<u64>(), layers);
        assert!(s.iter().max().unwrap() - s.iter().min().unwrap() <= 1);
    }
}

/// With no layout asked for, a default whose model state and activations fit stays; one that
/// does not is replaced by the first layout that fits, using the most GPUs; an asked-for
/// layout is never replaced.
#[test]
fn an_unasked_layout_is_fitted_to_the_gpus_memory() {
    let held = |m: &Model, p: &Parallelism| crate::step::Memory::of(m, p).peak_bytes;
    // An H100's 80 GiB (`GpuModel::memory_bytes`).
    let mem = 80.0 * f64::from(1u32 << 30);
    let small = Model::preset("llama3-8b").unwrap();
    let r = Layout::unasked()
        .resolve_fitted(128, 8, &small, mem)
        .unwrap();
    assert_eq!(r.fitted, None);
    assert_eq!((r.par.tp, r.par.pp, r.par.dp, r.par.ep), (8, 1, 16, 1));

    let big = Model::preset("llama3-405b").unwrap();
    let r = Layout::unasked()
        .resolve_fitted(1016, 8, &big, mem)
        .unwrap();
    let f = r.fitted.clone().expect("405B does not fit on TP 8 alone");
    assert!(f.default_memory.peak_bytes > mem);
    assert!(held(&big, &r.par) <= mem);
    // The first stage holds a micro-batch in flight for each stage, so the activations stay
    // near all 126 layers' for one micro-batch however deep the pipeline (Korthikanti et al.,
    // section 4.2.3): the model state has to shrink to what is left.
    assert_eq!((r.par.tp, r.par.pp, r.par.dp), (8, 42, 3));
    // Every layout using more GPUs, or as many with fewer stages, does not fit.
    for pp in 1..=r.par.pp {
        let dp = (1016 / (8 * pp as u64)) as u32;
        let world = 8 * u64::from(pp) * u64::from(dp);
        if world < r.par.world() || (world == r.par.world() && pp >= r.par.pp) {
            continue;
        }
        let layers = if 126 % pp == 0 {
            Vec::new()
        } else {
            balanced_stages(126, u64::from(pp))
        };
        let q = Layout {
            tp: Some(8),
            pp,
            dp: Some(dp),
            stage_layers: layers,
            fit_to_memory: false,
            ..Layout::unasked()
        }
        .resolve(1016, 8, &big)
        .unwrap();
        assert!(held(&big, &q) > mem, "pp {pp} fits");
    }
    assert!(
        f.note(&r.par).contains("TP8 PP1 DP127"),
        "{}",
        f.note(&r.par)
    );

    // A mixture of experts takes expert parallelism too.
    let moe = Model::preset("deepseek-v3-like").unwrap();
    let r = Layout::unasked()
        .resolve_fitted(2048, 8, &moe, mem)
        .unwrap();
    assert!(r.fitted.is_some());
    assert!(r.par.ep > 1 && r.par.world() == 2048, "{:?}", r.par);
    assert!(held(&moe, &r.par) <= mem);

    // Asked for: kept, even when it does not fit.
    let asked = Layout {
        pp: 1,
        fit_to_memory: false,
        ..Layout::unasked()
    };
    let r = asked.resolve_fitted(1016, 8, &big, mem).unwrap();
    assert_eq!((r.par.pp, r.fitted), (1, None));
    // Nothing fits: the default stays.
    let r = Layout::unasked().resolve_fitted(8, 8, &big, mem).unwrap();
    assert_eq!((r.par.pp, r.par.dp, r.fitted), (1, 1, None));
}

/// The default global batch is the model's published one, to the nearest multiple of
/// dp x micro-batch; without one, 8 micro-batches per data-parallel rank.
#[test]
fn the_default_global_batch_is_the_published_one() {
    let m405 = Model::preset("llama3-405b").unwrap();
    assert_eq!(m405.global_batch, 2048);
    assert_eq!(default_global_batch(&m405, 42, 1), 2058);
    assert_eq!(default_global_batch(&m405, 64, 2), 2048);
    assert_eq!(default_global_batch(&m405, 4096, 1), 4096, "at least one");
    let ds = Model::preset("deepseek-v3-like").unwrap();
    assert_eq!(default_global_batch(&ds, 32, 1), 15360);
    let m70 = Model::preset("llama3-70b").unwrap();
    assert_eq!(m70.global_batch, 0);
    assert_eq!(
        default_global_batch(&m70, 16, 1),
        16 * DEFAULT_MICROBATCHES_PER_RANK
    );
    // Published batches name their source.
    let text = toml::to_string(&m405).unwrap().replace(
        &format!("global_batch_source = {:?}", m405.global_batch_source),
        "global_batch_source = \"\"",
    );
    let e = Model::parse(&text, "m.toml").unwrap_err();
    assert!(e.0.contains("global_batch_source"), "{e}");
}

/// Megatron-Core's order tp-cp-dp-pp: a context-parallel ring is the same TP rank of
/// consecutive TP groups; data-parallel gradients reduce over data and context ranks together;
/// every rank is in exactly one group of each kind.
#[test]
fn context_parallel_groups_sit_between_tensor_and_data() {
    let p = Parallelism {
        cp: 2,
        ..par(4, 2, 2, 1)
    };
    assert_eq!(p.world(), 32);
    let g = p.groups();
    assert_eq!(g.cp[0], vec![0, 4]);
    assert_eq!(g.tp[1], vec![4, 5, 6, 7]);
    assert_eq!(g.dp[0], vec![0, 4, 8, 12]);
    assert_eq!(g.pp[0], vec![0, 16]);
    for groups in [&g.tp, &g.dp, &g.pp, &g.cp] {
        let mut all: Vec<u32> = groups.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..32).collect::<Vec<_>>());
    }
    // The checks: 2 x cp divides the sequence; not with expert parallelism.
    let bad = Parallelism {
        seq: 4097,
        ..p.clone()
    };
    assert_eq!(bad.check(32, 8, &dense()).unwrap_err().field, "cp");
    let with_ep = Parallelism { ep: 2, ..p.clone() };
    assert_eq!(with_ep.check(32, 8, &moe()).unwrap_err().field, "cp");
    assert!(p.check(32, 8, &dense()).is_ok());
}

/// Virtual stages not given: the most that fit in memory, up to one layer a chunk, and the note
/// says so; given, they stay; no pipeline, none chosen.
#[test]
fn virtual_stages_are_chosen_where_not_given() {
    let model = dense();
    let layout = Layout {
        tp: Some(8),
        pp: 4,
        dp: Some(2),
        global_batch: Some(16),
        fit_to_memory: false,
        ..Layout::unasked()
    };
    let r = layout.resolve_fitted(64, 8, &model, 1e15).unwrap();
    assert_eq!(r.par.vp, 8);
    assert!(r.virtual_stages.unwrap().contains("8 a stage chosen"));
    // Little memory: fewer chunks hold more activations (p (1 + (p - 1)/(p v))), so none fit.
    let tight = crate::step::Memory::of(
        &model,
        &Parallelism {
            vp: 1,
            ..r.par.clone()
        },
    );
    let r = layout
        .resolve_fitted(64, 8, &model, tight.peak_bytes)
        .unwrap();
    assert_eq!((r.par.vp, r.virtual_stages), (1, None));
    let given = Layout {
        vp: Some(2),
        ..layout.clone()
    };
    assert_eq!(given.resolve_fitted(64, 8, &model, 1e15).unwrap().par.vp, 2);
    let flat = Layout {
        pp: 1,
        dp: Some(8),
        ..layout
    };
    assert_eq!(flat.resolve_fitted(64, 8, &model, 1e15).unwrap().par.vp, 1);
}

/// MoE parallel folding (Megatron-Core parallel_state.py, expert `RankGenerator` order
/// `tp-ep-dp` over the tp x cp x dp ranks): with TP 4, CP 2, DP 2 and ETP 1 an expert group of 8
/// is 8 consecutive ranks (it spans the tensor and context ranks of one data rank), and the ranks
/// holding the same expert are 8 apart.
#[test]
fn folding_forms_expert_groups_over_tp_cp_and_dp() {
    let p = Parallelism {
        cp: 2,
        etp: Some(1),
        ..par(4, 1, 2, 8)
    };
    p.check(16, 8, &moe()).unwrap();
    let g = p.groups();
    assert_eq!(
        g.ep,
        vec![(0..8).collect::<Vec<u32>>(), (8..16).collect::<Vec<u32>>()]
    );
    assert_eq!(g.edp.len(), 8);
    assert_eq!(g.edp[3], vec![3, 11]);
    assert!(
        g.etp.is_empty(),
        "ETP 1: no expert tensor-parallel collective"
    );
    // ETP 2: expert groups of ranks 2 apart, expert tensor groups of 2 consecutive ranks.
    let p2 = Parallelism {
        ep: 4,
        etp: Some(2),
        ..p.clone()
    };
    p2.check(16, 8, &moe()).unwrap();
    let g2 = p2.groups();
    assert_eq!(g2.ep[0], vec![0, 2, 4, 6]);
    assert_eq!(g2.ep[1], vec![8, 10, 12, 14]);
    assert_eq!(g2.etp[0], vec![0, 1]);
    assert_eq!(g2.etp.len(), 8);
}

/// `--etp` given as tp, without context parallelism, places the experts exactly as the default
/// (expert parallelism inside each tensor rank's data-parallel group).
#[test]
fn etp_equal_to_tp_is_the_default_placement() {
    let p = par(2, 2, 8, 4);
    let folded = Parallelism {
        etp: Some(2),
        ..p.clone()
    };
    assert_eq!(p.groups(), folded.groups());
    assert!(!folded.folded());
}

/// Context parallelism with expert parallelism needs folding; etp divides tp; ep x etp divides
/// tp x cp x dp. Each error names its flag and the valid values.
#[test]
fn folding_is_checked() {
    let p = Parallelism {
        cp: 2,
        ..par(4, 1, 2, 8)
    };
    let e = p.check(16, 8, &moe()).unwrap_err();
    assert_eq!(e.field, "cp");
    assert!(e.message.contains("--etp"), "{}", e.message);
    let e = Parallelism {
        etp: Some(3),
        ..p.clone()
    }
    .check(16, 8, &moe())
    .unwrap_err();
    assert_eq!(e.field, "etp");
    assert!(e.message.ends_with("valid: 1, 2, 4"), "{}", e.message);
    let e = Parallelism {
        etp: Some(4),
        ..p.clone()
    }
    .check(16, 8, &moe())
    .unwrap_err();
    assert_eq!(e.field, "ep");
    assert!(
        e.message.ends_with("valid ep with etp 4: 1, 2, 4"),
        "{}",
        e.message
    );
}

use super::*;

/// $1,000,000 of network over one year at 1,000,000 tokens/s: 31,557,600,000,000 tokens, so
/// $0.0317 per million.
#[test]
fn cost_per_million_tokens_spreads_the_network_over_the_years() {
    let x = usd_per_million_tokens(1e6, 1e6, 1.0);
    assert!((x - 1e6 / 31_557_600.0).abs() < 1e-12, "{x}");
    assert!((usd_per_million_tokens(1e6, 1e6, 4.0) - x / 4.0).abs() < 1e-15);
}

#[test]
fn short_labels_count_like_spreadsheet_columns() {
    let got: Vec<String> = [0, 1, 25, 26, 27, 51, 52, 701, 702]
        .iter()
        .map(|&i| short_label(i))
        .collect();
    assert_eq!(got, ["A", "B", "Z", "AA", "AB", "AZ", "BA", "ZZ", "AAA"]);
}

fn design(label: &str, cost: f64, tokens: Option<f64>) -> Compared {
    let spec = railyard_spec::presets::load("seed-two-switch").unwrap();
    let catalog = Catalog::builtin();
    let f = railyard_fabric::build(&spec, &catalog).unwrap();
    let mut summary = railyard_plan::Plan::new(&f, &catalog).summary;
    summary.cost_usd.total = cost;
    Compared {
        label: label.to_string(),
        summary,
        routing: "dmodk".to_string(),
        pxn: "off".to_string(),
        sharp: false,
        performance: Perf {
            tokens_per_s: tokens,
            ..Perf::default()
        },
    }
}

/// The winner of each axis and its margin come from the numbers: lowest cost $75 is 25% below
/// the next ($100); the highest throughput 1,200 tokens/s is 20% above 1,000; a tie names both.
#[test]
fn verdicts_name_the_best_design_and_its_margin() {
    let v = verdicts(&[
        design("A", 100.0, Some(1000.0)),
        design("B", 75.0, Some(1200.0)),
        design("C", 75.0, None),
    ]);
    let cost = v.iter().find(|x| x.axis == "network cost").unwrap();
    assert_eq!(cost.best, ["B", "C"]);
    assert_eq!(cost.next, Some(("A".to_string(), 100.0)));
    assert_eq!(cost.margin_percent, Some(25.0));
    assert_eq!(
        cost.text,
        "lowest network cost: B and C ($75), 25.0% below A ($100)"
    );
    let tps = v.iter().find(|x| x.axis == "training throughput").unwrap();
    assert_eq!(tps.best, ["B"]);
    assert!((tps.margin_percent.unwrap() - 20.0).abs() < 1e-9);
    // One design with a value is no comparison.
    assert!(v.iter().all(|x| x.axis != "training step time"));
}

/// Regression: `compare --vary tech=ib-ndr,roce-400g --perf --servers 16` read "highest
/// all-reduce busbw at 1 GiB: tech=ib-ndr (352.4 GB/s), 0.0% above tech=roce-400g (352.4
/// GB/s)": a win the table cannot show. Designs that print the same value tie; a lead that
/// shows but rounds to 0.0% reads "less than 0.1%".
#[test]
fn verdicts_tie_designs_the_table_shows_alike() {
    let step = |label: &str, s: f64| {
        let mut d = design(label, 100.0, None);
        d.performance.step_time_s = Some(s);
        d.performance.allreduce_busbw_1g_gbs = Some(s * 100.0);
        d
    };
    let v = verdicts(&[step("A", 9.38901), step("B", 9.38912), step("C", 9.5)]);
    let t = v.iter().find(|x| x.axis == "training step time").unwrap();
    assert_eq!(t.best, ["A", "B"]);
    assert_eq!(
        t.text,
        "lowest training step time: A and B (9.389 s), 1.2% below C (9.500 s)"
    );
    let v = verdicts(&[step("A", 9.38901), step("B", 9.38912)]);
    let t = v.iter().find(|x| x.axis == "training step time").unwrap();
    assert_eq!(t.text, "training step time: every design at 9.389 s");
    let v = verdicts(&[step("A", 9.3890), step("B", 9.3904)]);
    let t = v.iter().find(|x| x.axis == "training step time").unwrap();
    assert_eq!(
        t.text,
        "lowest training step time: A (9.389 s), less than 0.1% below B (9.390 s)"
    );
    let b = v
        .iter()
        .find(|x| x.axis == "all-reduce busbw at 1 GiB")
        .unwrap();
    assert_eq!(
        b.text,
        "highest all-reduce busbw at 1 GiB: B (939.0 GB/s), less than 0.1% above A (938.9 GB/s)"
    );
}

#[cfg(test)]
mod layout_tests {
    use super::*;

    /// An uneven stage split is part of the layout a comparison shows, by runs; an even one (given
    /// as a list or not) is not.
    #[test]
    fn an_uneven_stage_split_shows_by_runs() {
        let mut stages = vec![8u64; 16];
        stages[0] = 7;
        stages[15] = 7;
        let par = Parallelism {
            tp: 8,
            pp: 16,
            dp: 8,
            ep: 1,
            cp: 1,
            seq: 8192,
            micro_batch: 1,
            global_batch: 2048,
            zero: 1,
            recompute: false,
            grad_bf16: false,
            stage_layers: stages.clone(),
            vp: 1,
            schedule: Default::default(),
            recompute_modules: Default::default(),
            fp8_params: false,
            fp8_activations: false,
            bf16_moments: false,
        };
        let l = LayoutOut::of(&par);
        assert_eq!(l.stage_layers.as_deref(), Some(&stages[..]));
        assert_eq!(l.short(), "TP8 PP16 DP8, stages 7,8x14,7");
        let json = serde_json::to_value(&l).unwrap();
        assert_eq!(json["stage_layers"][0], 7);
        for even in [Vec::new(), vec![8u64; 16]] {
            let l = LayoutOut::of(&Parallelism {
                stage_layers: even,
                ..par.clone()
            });
            assert_eq!((l.short().as_str(), l.stage_layers), ("TP8 PP16 DP8", None));
        }
    }
}

use super::*;

fn file(command: &[&str], at: &str, cases: usize, results: &[(usize, u32)]) -> String {
    let at = Shard::parse(at).unwrap();
    ShardFile::new(
        command.iter().map(|s| s.to_string()).collect(),
        at,
        cases,
        "ctx".to_string(),
        results
            .iter()
            .map(|&(index, result)| Case { index, result })
            .collect(),
    )
    .to_text()
}

fn merged(files: &[(&str, String)]) -> Result<Merged<String, u32>, MergeError> {
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect();
    merge(&files)
}

#[test]
fn shards_parse_as_i_of_n_from_one() {
    assert_eq!(Shard::parse("2/4"), Ok(Shard { index: 2, of: 4 }));
    for bad in ["0/4", "5/4", "1/0", "4", "a/b", "1/100001", "-1/4"] {
        let e = Shard::parse(bad).unwrap_err();
        assert!(e.contains(bad) && e.contains("I/N"), "{e}");
    }
}

/// Every case goes to exactly one shard, round robin, and no shard of at most `cases` is empty.
#[test]
fn every_case_goes_to_one_shard() {
    for of in 1..=7u32 {
        for case in 0..30 {
            let takers = (1..=of)
                .filter(|&index| Shard { index, of }.takes(case))
                .count();
            assert_eq!(takers, 1, "case {case} of {of} shards");
        }
    }
    assert!(Shard { index: 4, of: 4 }.check_cases(4, "designs").is_ok());
    let e = Shard { index: 5, of: 5 }
        .check_cases(4, "designs")
        .unwrap_err();
    assert!(e.contains("4 designs") && e.contains("at most 4"), "{e}");
}

#[test]
fn the_recorded_command_leaves_out_only_shard_and_output() {
    let args: Vec<String> = [
        "compare",
        "a",
        "--shard",
        "1/4",
        "-o",
        "d",
        "--json",
        "--shard=2/4",
        "--out=x",
        "-oy",
        "--out",
        "z",
        "b",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(recorded_command(&args), ["compare", "a", "--json", "b"]);
}

/// Shards given in any order merge into the cases in order.
#[test]
fn shards_merge_in_case_order() {
    let cmd = ["compare", "a", "b", "c"];
    let m = merged(&[
        ("s2", file(&cmd, "2/2", 3, &[(1, 11)])),
        ("s1", file(&cmd, "1/2", 3, &[(0, 10), (2, 12)])),
    ])
    .unwrap();
    assert_eq!(m.results, [10, 11, 12]);
    assert_eq!(m.command, cmd);
    assert_eq!(m.context, "ctx");
}

/// Each refusal names the file at fault and what is wrong.
#[test]
fn merges_refuse_mixed_missing_duplicate_and_foreign_shards() {
    let cmd = ["compare", "a", "b"];
    let one = file(&cmd, "1/2", 2, &[(0, 1)]);
    let two = file(&cmd, "2/2", 2, &[(1, 2)]);
    let check = |files: &[(&str, String)], says: &[&str]| {
        let e = merged(files).unwrap_err().0;
        for s in says {
            assert!(e.contains(s), "{s} not in: {e}");
        }
    };
    let other = file(&["compare", "a", "c"], "2/2", 2, &[(1, 2)]);
    check(
        &[("s1", one.clone()), ("s2", other)],
        &["s2", "another command", "compare a c", "compare a b"],
    );
    check(
        &[("s1", one.clone())],
        &["1 of 2 shards missing", "compare-shard-2-of-2.json"],
    );
    check(
        &[
            ("s1", one.clone()),
            ("again", one.clone()),
            ("s2", two.clone()),
        ],
        &["again and s1 are both shard 1/2"],
    );
    let split = file(&cmd, "2/3", 2, &[(1, 2)]);
    check(&[("s1", one.clone()), ("s3", split)], &["s3", "one split"]);
    let old = two.replace("\"version\": 1", "\"version\": 0");
    check(
        &[("s1", one.clone()), ("old.json", old)],
        &["old.json", "version 0", "reads version 1"],
    );
    check(
        &[("x.json", "{}".into())],
        &["x.json", "not a railyard shard"],
    );
    check(
        &[("x.json", "not json".into())],
        &["x.json", "not a railyard shard"],
    );
    let stray = file(&cmd, "2/2", 2, &[(0, 2)]);
    check(
        &[("s1", one.clone()), ("s2", stray)],
        &["s2", "case 1 is not one of shard 2/2"],
    );
    let short = file(&cmd, "2/2", 2, &[]);
    check(
        &[("s1", one), ("s2", short)],
        &["s2", "case 2 of 2 is missing"],
    );
}

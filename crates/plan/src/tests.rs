use super::*;
use railyard_spec::{presets, ClusterSpec, Overrides};

fn plan(name: &str, o: Overrides) -> (Fabric, Plan) {
    let mut raw = presets::raw(name).unwrap();
    o.apply(&mut raw).unwrap();
    let spec = ClusterSpec::from_raw(&raw, name).unwrap();
    let catalog = Catalog::builtin();
    let f = railyard_fabric::build(&spec, &catalog).unwrap();
    let p = Plan::new(&f, &catalog);
    (f, p)
}

#[test]
fn summary_counts_match_the_reference_design() {
    let (_, p) = plan("dgx-h100-superpod", Overrides::default());
    let s = &p.summary;
    assert_eq!((s.servers, s.gpus, s.nics), (127, 1016, 1016));
    assert_eq!(
        (s.switches.leaf, s.switches.spine, s.switches.core),
        (32, 16, 0)
    );
    assert_eq!(
        (s.links.server_leaf, s.links.leaf_spine, s.links.spine_core),
        (1016, 1024, 0)
    );
    assert_eq!(s.oversubscription.leaf, 1.0);
    assert_eq!(s.oversubscription.spine, 1.0);
    assert_eq!(s.oversubscription.core, 0.0);
    assert_eq!(s.worst_case_switch_hops, 3);
    assert_eq!(s.cables_by_type.values().sum::<u64>(), s.links.total);
}

#[test]
fn cost_adds_up_to_the_bom() {
    let (_, p) = plan("dgx-h100-superpod", Overrides::default());
    let bom: f64 = p.bom.iter().map(|l| l.total_usd).sum();
    assert!((bom - p.summary.cost_usd.total).abs() < 1e-6);
    assert!((p.summary.cost_usd.per_gpu * 1016.0 - bom).abs() < 1e-6);
    assert!(p.summary.cost_usd.includes_estimates);
}

#[test]
fn oversubscribed_leaf_reports_its_ratio() {
    let (_, p) = plan(
        "seed-edr-fat-tree",
        Overrides {
            oversubscription: Some(2.0),
            ..Default::default()
        },
    );
    assert_eq!(p.summary.oversubscription.leaf, 2.0);
}

#[test]
fn cabling_names_ends_as_on_the_floor() {
    let (f, _) = plan("dgx-h100-superpod", Overrides::default());
    let csv = output::cabling_csv(&f, &Catalog::builtin(), None);
    let first = csv.lines().nth(1).unwrap();
    let cols: Vec<&str> = first.split(',').collect();
    assert_eq!(cols[5..9], ["su1-srv01", "hca1", "su1-leaf1", "p1"]);
    assert_eq!(csv.lines().count() as u64 - 1, 1016 + 1024);
}

#[test]
fn same_spec_same_bytes() {
    let (f1, p1) = plan("dgx-a100-superpod", Overrides::default());
    let (f2, p2) = plan("dgx-a100-superpod", Overrides::default());
    assert_eq!(
        output::cabling_csv(&f1, &Catalog::builtin(), None),
        output::cabling_csv(&f2, &Catalog::builtin(), None)
    );
    assert_eq!(output::bom_csv(&p1), output::bom_csv(&p2));
    assert_eq!(
        railyard_fabric::fabric_file::fabric_json(&f1),
        railyard_fabric::fabric_file::fabric_json(&f2)
    );
    assert_eq!(
        output::summary_json(&p1.summary),
        output::summary_json(&p2.summary)
    );
}

fn planned(name: &str, o: Overrides) -> Planned {
    let mut raw = presets::raw(name).unwrap();
    o.apply(&mut raw).unwrap();
    let spec = ClusterSpec::from_raw(&raw, name).unwrap();
    plan_design(&spec, &Catalog::builtin(), &SearchOptions::default()).unwrap()
}

/// `--storage compute`: storage traffic on the compute fabric, through the compute NICs. The summary
/// keeps the servers' storage NICs and says they carry none of it; no storage fabric is planned.
#[test]
fn storage_on_compute_leaves_the_storage_nics_unused() {
    let o = Overrides {
        storage_on_compute: true,
        ..Default::default()
    };
    let s = planned("dgx-h100-superpod", o).plan.summary;
    assert!(s.storage_on_compute && s.storage.is_none());
    assert_eq!(s.storage_nics, 254);
    let text = crate::output::summary_text(&s);
    let head = text.lines().nth(1).unwrap();
    assert_eq!(
        head,
        "  127 servers, 1,016 GPUs (H100), 1,016 compute NICs (ConnectX-7, NIC:GPU 1:1), storage through the compute NICs (254 storage NICs unused), GPUDirect RDMA on"
    );
    let auto = planned("dgx-h100-superpod", Overrides::default())
        .plan
        .summary;
    assert!(!auto.storage_on_compute);
    let text = crate::output::summary_text(&auto);
    assert!(text
        .lines()
        .nth(1)
        .unwrap()
        .contains("1:1), 254 storage NICs, GPUDirect"));
}

/// The default preset plans its storage fabric and management networks as NVIDIA's DGX SuperPOD H100
/// reference architecture lists them for 4 units, 127 DGX H100 (RA-11333-001 V11, Appendix A, Tables
/// 7 and 8). Differences, by design: railyard plans no UFM appliance ports on the fabrics (the
/// reference's 2 UFM-to-leaf storage cables and 2 UFM back-to-back OOB cables), and counts rack PDUs
/// from its own rack layout (112 here, the reference's 108 on 38 racks).
#[test]
fn storage_and_management_match_the_reference_architecture() {
    let p = planned("dgx-h100-superpod", Overrides::default());
    let s = &p.plan.summary;

    // Storage fabric: "Storage Fabric 16 ... NVIDIA Quantum QM9700" (Table 7); 494 NDR cables "DGX H100
    // systems to leaf, leaf to spine" = 254 + 240, and 48 storage cables (Table 8).
    let st = s.storage.as_ref().expect("the storage fabric is planned");
    assert_eq!(st.switch_model, "QM9700");
    assert_eq!(st.switches.total, 16);
    assert_eq!(st.endpoints["server ports"], 254);
    assert_eq!(st.endpoints["storage system ports"], 48);
    assert_eq!(st.links.server_leaf, 254 + 48);
    assert_eq!(st.links.leaf_spine, 240);
    assert_eq!(st.links.server_leaf - 48 + st.links.leaf_spine, 494);
    // Its cost per GPU is per GPU of the cluster (it was 0: the storage fabric holds no GPUs).
    assert!((st.cost_usd.per_gpu * 1016.0 - st.cost_usd.total).abs() < 1e-6);
    // Server leaves near 4:3 (32 + 24 ports), storage leaves 1:1 (24 + 24).
    assert!(
        (st.oversubscription.leaf - 4.0 / 3.0).abs() < 1e-9,
        "{:?}",
        st.oversubscription
    );

    // In-band: 8 SN4600C (Table 7); 254 DGX, 8 management-node, 8 NFS and 16 OOB-uplink cables, 6
    // inter-switch and 24 leaf-to-core cables, 4 uplinks to the data centre (Table 8).
    let m = s
        .management
        .as_ref()
        .expect("the management networks are planned");
    let ib = m.in_band.as_ref().unwrap();
    assert_eq!(ib.switch_model, "SN4600C");
    assert!((ib.cost_usd.per_gpu * 1016.0 - ib.cost_usd.total).abs() < 1e-6);
    assert_eq!(ib.switches.total, 8);
    assert_eq!(ib.endpoints["server ports"], 254);
    assert_eq!(ib.endpoints["management node ports"], 8);
    assert_eq!(ib.endpoints["user storage ports"], 8);
    assert_eq!(ib.endpoints["out-of-band switch uplinks"], 16);
    assert_eq!(ib.links.server_leaf, 254 + 8 + 8 + 16);
    assert_eq!(ib.links.inter_switch, 6);
    assert_eq!(ib.links.leaf_spine, 24);
    assert_eq!(ib.uplinks_outside, 4);

    // Out-of-band: 8 SN2201 (Table 7); cables to 127 DGX, 64 InfiniBand switches (48 compute + 16
    // storage), 8 in-band switches and 8 management/UFM nodes (Table 8).
    let oob = m.out_of_band.as_ref().unwrap();
    assert_eq!(oob.switch_model, "SN2201");
    assert_eq!(oob.switches.total, 8);
    assert_eq!(oob.endpoints["server BMCs"], 127);
    assert_eq!(oob.endpoints["switches"], 48 + 16 + 8);
    assert_eq!(
        oob.endpoints["management nodes"] + oob.endpoints["fabric managers"],
        8
    );
    assert_eq!(oob.endpoints["PDUs"], 112);

    // Every network has its own files' worth of parts, and costs add up.
    for (n, plan) in &p.networks {
        let bom: f64 = plan.bom.iter().map(|l| l.total_usd).sum();
        assert!(
            (bom - plan.summary.cost_usd.total).abs() < 1e-6,
            "{:?}",
            n.kind
        );
        n.fabric.check().unwrap();
    }
    assert!((m.cost_usd - ib.cost_usd.total - oob.cost_usd.total).abs() < 1e-6);
}

/// `--storage none --management none` (the overrides the flags will set) gives the compute fabric
/// alone, with the same numbers.
#[test]
fn networks_left_out_give_the_compute_fabric_alone() {
    let full = planned("dgx-h100-superpod", Overrides::default());
    let none = planned(
        "dgx-h100-superpod",
        Overrides {
            storage: Some(false),
            management: Some(false),
            ..Default::default()
        },
    );
    assert!(none.networks.is_empty());
    let (a, b) = (&full.plan.summary, &none.plan.summary);
    assert!(b.storage.is_none() && b.management.is_none());
    assert_eq!(a.cost_usd, b.cost_usd);
    assert_eq!(a.switches, b.switches);
    assert_eq!(a.links, b.links);
    assert!(full.fabric == none.fabric);
    // And the summary JSON keeps its compute keys for the compute fabric.
    let json: serde_json::Value = serde_json::from_str(&output::summary_json(b)).unwrap();
    assert_eq!(json["switches"]["leaf"], 32);
    assert!(json.get("storage").is_none());
}

/// A preset's storage spines are the reference's for its size: another size uses the fewest spines
/// that balance its leaves and says so.
#[test]
fn the_preset_storage_spines_give_way_at_other_sizes() {
    let p = planned(
        "dgx-h100-superpod",
        Overrides {
            servers: Some(512),
            ..Default::default()
        },
    );
    let st = p.plan.summary.storage.as_ref().unwrap();
    assert!(
        st.notes
            .iter()
            .any(|n| n.contains("the preset's 6 storage spines")),
        "{:?}",
        st.notes
    );
}

/// Every port is cabled once across all of a plan's cabling files (compute, storage, in-band and
/// out-of-band): a switch's management port is `mgmt`, a management node's or fabric manager's
/// BMC `bmc`, an out-of-band switch's uplinks its QSFP28 ports after the RJ45 ones (`p49`, `p50`
/// on the SN2201), none of them a port another file cables. They were `p1` and `p2`, which the
/// compute, storage and in-band files cable to hosts: 92 ports twice on the default design.
#[test]
fn no_port_is_cabled_twice_across_the_cabling_files() {
    for name in ["dgx-h100-superpod", "dgx-a100-superpod", "b200-xdr"] {
        let raw = presets::raw(name).unwrap();
        let spec = ClusterSpec::from_raw(&raw, name).unwrap();
        let catalog = Catalog::builtin();
        let p = plan_design(&spec, &catalog, &SearchOptions::default()).unwrap();
        // The files as `plan -o` writes them.
        let mut files = vec![output::cabling_csv(&p.fabric, &catalog, None)];
        files.extend(
            output::network_files(&p, &catalog)
                .into_iter()
                .filter(|(file, text)| file.ends_with("-cabling.csv") && text.lines().count() > 1)
                .map(|(_, text)| text),
        );
        // Compute, in-band and out-of-band at least (b200-xdr plans no storage fabric).
        assert!(files.len() >= 3, "{name}: {} files", files.len());
        let mut seen = std::collections::BTreeMap::new();
        // No two cables share a label either: every file's ids start with its own letters
        // (`C`, `SC`, `IC`, `OC`); they all began at C0000001.
        let mut ids = std::collections::BTreeSet::new();
        for (i, csv) in files.iter().enumerate() {
            for row in csv.lines().skip(1) {
                let c: Vec<&str> = row.split(',').collect();
                assert!(ids.insert(c[0].to_string()), "{name}: id {} twice", c[0]);
                assert!(
                    c[18].starts_with(&c[0][..c[0].len() - railyard_fabric::CABLE_ID_DIGITS]),
                    "{name}: {row}"
                );
                for (d, port) in [(c[5], c[6]), (c[7], c[8])] {
                    if let Some(first) =
                        seen.insert((d.to_string(), port.to_string()), (i, c[0].to_string()))
                    {
                        panic!(
                            "{name}: {d} {port} in file {} row {} and file {i} row {}",
                            first.0, first.1, c[0]
                        );
                    }
                }
            }
        }
        assert!(
            seen.contains_key(&("su1-leaf1".to_string(), "mgmt".to_string())),
            "{name}"
        );
    }
}

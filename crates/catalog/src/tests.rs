use super::*;

#[test]
fn builtin_catalog_loads() {
    let c = Catalog::builtin();
    for id in [
        "SB7800",
        "QM8700",
        "QM8790",
        "QM9700",
        "QM9790",
        "Q3400",
        "SN5600",
        "SN5400",
        "SN4600C",
        "TH5-64x800",
        "TH6-128x800",
    ] {
        assert!(c.switches.contains_key(id), "missing switch {id}");
    }
    for id in [
        "ConnectX-6",
        "ConnectX-7",
        "ConnectX-8",
        "ConnectX-8-2x400",
        "BlueField-3",
        "BlueField-3-SuperNIC",
        "Pollara-400",
        "Thor2",
    ] {
        assert!(c.nics.contains_key(id), "missing nic {id}");
    }
    for id in [
        "A100", "H100", "H200", "B200", "B300", "GB200", "GB300", "H20", "H800", "MI300X",
        "MI325X", "MI355X",
    ] {
        assert!(c.gpus.contains_key(id), "missing gpu {id}");
    }
    for id in [
        "GB200 NVL72 tray",
        "GB300 NVL72 tray",
        "DGX B300",
        "AMD MI300X platform",
        "AMD MI325X platform",
        "AMD MI355X platform",
    ] {
        assert!(c.servers.contains_key(id), "missing server {id}");
    }
    for id in ["GB200 NVL72", "GB300 NVL72"] {
        assert!(c.rack_systems.contains_key(id), "missing rack system {id}");
    }
}

#[test]
fn every_tech_is_described() {
    let c = Catalog::builtin();
    for t in Tech::DISCOVERED_ONLY {
        assert!(c.technology(t).is_none(), "{t} is plannable");
        assert!(t.as_str().parse::<Tech>().is_err(), "a spec can name {t}");
    }
    for t in Tech::ALL {
        let d = c.technology(t).unwrap();
        assert_eq!(d.id, t);
        assert!(!c.switches_for(t).is_empty(), "no switch carries {t}");
        assert!(!c.nics_for(t).is_empty(), "no nic runs {t}");
    }
}

#[test]
fn every_entry_names_a_source() {
    let c = Catalog::builtin();
    let sources = c
        .switches
        .values()
        .map(|s| (&s.id, &s.source))
        .chain(c.nics.values().map(|n| (&n.id, &n.source)))
        .chain(c.gpus.values().map(|g| (&g.id, &g.source)))
        .chain(c.servers.values().map(|x| (&x.id, &x.source)))
        .chain(c.rack_systems.values().map(|x| (&x.id, &x.source)))
        .chain(c.cables.values().map(|x| (&x.id, &x.source)))
        .chain(c.transceivers.values().map(|x| (&x.id, &x.source)))
        .chain(c.fibres.values().map(|x| (&x.id, &x.source)));
    for (id, source) in sources {
        assert!(source.len() > 10, "{id} has no real source: {source:?}");
    }
}

#[test]
fn ndr_switch_has_64_ports_on_32_cages_and_ndr200_split() {
    let c = Catalog::builtin();
    let q = &c.switches["QM9700"];
    let ndr = q.mode_for(Tech::IbNdr, None).unwrap();
    assert_eq!((ndr.ports, q.cages, q.ports_per_cage(ndr)), (64, 32, 2));
    let ndr200 = q.mode_for(Tech::IbNdr, Some(200)).unwrap();
    assert_eq!(ndr200.ports, 128);
    let hdr = &c.switches["QM8700"];
    assert_eq!(hdr.mode_for(Tech::IbHdr, Some(100)).unwrap().ports, 80);
}

/// SHARP as NCCL uses it (CollNet): Quantum (HDR) switches or newer and ConnectX-6 HDR HCAs or
/// newer; Switch-IB 2 (EDR, SHARPv1), Ethernet switches and Ethernet-only NICs not. Every builtin
/// switch and NIC says which, with the SHARP document as its source.
#[test]
fn sharp_support_follows_the_sharp_documentation() {
    let c = Catalog::builtin();
    let yes: Vec<&str> = c
        .switches
        .values()
        .filter(|s| Sharp::supported(&s.sharp))
        .map(|s| s.id.as_str())
        .collect();
    assert_eq!(yes, ["Q3400", "QM8700", "QM8790", "QM9700", "QM9790"]);
    let nics: Vec<&str> = c
        .nics
        .values()
        .filter(|n| Sharp::supported(&n.sharp))
        .map(|n| n.id.as_str())
        .collect();
    assert_eq!(
        nics,
        ["ConnectX-6", "ConnectX-7", "ConnectX-7-2p200", "ConnectX-8"]
    );
    for (id, sharp) in c
        .switches
        .values()
        .map(|s| (&s.id, &s.sharp))
        .chain(c.nics.values().map(|n| (&n.id, &n.sharp)))
    {
        let s = sharp
            .as_ref()
            .unwrap_or_else(|| panic!("{id} says nothing of SHARP"));
        assert!(s.source.contains("sharpltsv391"), "{id}: {}", s.source);
    }
    // An overlay that claims support must say where it comes from.
    let mut c = Catalog::builtin();
    let e = c
        .overlay(
            "[[nic]]\nid = \"X\"\nname = \"x\"\ntechs = [\"ib-ndr\"]\nports = 1\nport_gbps = 400\npcie_gen = 5\npcie_lanes = 16\npower_w = 1.0\nsharp = { supported = true, source = \"\" }\nprice = { usd = 1.0, estimate = true, source = \"s\" }\nsource = \"s\"\n",
            "user.toml",
        )
        .unwrap_err();
    assert!(e.message.contains("sharp needs a source"), "{e}");
}

#[test]
fn overlay_replaces_and_adds_by_id() {
    let mut c = Catalog::builtin();
    let text = r#"
[[gpu]]
id = "X1"
name = "Test GPU"
nvlink_gbs_per_link = 10.0
nvlink_links = 4
pcie_gen = 4
pcie_lanes = 16
memory_gb = 16
peak_tflops_bf16 = 100.0
power_w = 300.0
source = "test"
"#;
    c.overlay(text, "user.toml").unwrap();
    assert_eq!(c.gpus["X1"].nvlink_gbs(), 40.0);
    // A GPU that names no generation gets none (no per-generation NCCL caps).
    assert_eq!(c.gpus["X1"].generation, None);
}

/// Every built-in GPU carries its NCCL generation, the SM its source names; a user's GPU may name
/// one, from the same set.
#[test]
fn gpu_generations_are_data() {
    let c = Catalog::builtin();
    for (id, gen, sm) in [
        ("A100", GpuGeneration::Ampere, "SM80"),
        ("H100", GpuGeneration::Hopper, "SM90"),
        ("H200", GpuGeneration::Hopper, "SM90"),
        ("B200", GpuGeneration::Blackwell, "SM100"),
    ] {
        assert_eq!(c.gpus[id].generation, Some(gen), "{id}");
        assert!(
            c.gpus[id].source.contains(sm),
            "{id}: {}",
            c.gpus[id].source
        );
    }
    // Every NVIDIA GPU has one; AMD's are indexed by RCCL's tables (gfx942, gfx950), not NCCL's.
    for g in c.gpus.values() {
        assert_eq!(
            g.generation.is_some(),
            g.scale_up == ScaleUp::Nvswitch,
            "{}",
            g.id
        );
    }
    let gpu = |generation: &str| {
        format!(
            "[[gpu]]\nid = \"X2\"\nname = \"x\"\nnvlink_gbs_per_link = 10.0\nnvlink_links = 4\npcie_gen = 4\npcie_lanes = 16\nmemory_gb = 16\npeak_tflops_bf16 = 100.0\npower_w = 300.0\ngeneration = \"{generation}\"\nsource = \"test\"\n"
        )
    };
    let mut user = Catalog::builtin();
    user.overlay(&gpu("volta"), "user.toml").unwrap();
    assert_eq!(user.gpus["X2"].generation, Some(GpuGeneration::Volta));
    let e = Catalog::builtin()
        .overlay(&gpu("kepler"), "user.toml")
        .unwrap_err();
    assert!(
        e.message.contains("kepler") && e.message.contains("hopper"),
        "{e}"
    );
}

#[test]
fn overlay_rejects_unknown_keys_with_line() {
    let mut c = Catalog::builtin();
    let e = c
        .overlay("[[gpu]]\nid = \"X\"\nbogus = 1\n", "user.toml")
        .unwrap_err();
    assert_eq!(e.origin, "user.toml");
    assert!(e.message.contains("line 3"), "{e}");
    assert!(e.message.contains("bogus"), "{e}");
}

#[test]
fn bad_overlay_leaves_catalog_unchanged() {
    let mut c = Catalog::builtin();
    let before = c.switches.len();
    let bad = r#"
[[switch]]
id = "Broken"
name = "broken"
family = "infiniband"
cages = 0
latency_ns = 1
power_w = 1.0
rack_units = 1
managed = true
price = { usd = 1.0, estimate = true, source = "x" }
source = "x"
modes = [{ name = "NDR", techs = ["ib-ndr"], gbps = 400, lanes = 4, ports = 64 }]
"#;
    assert!(c.overlay(bad, "bad.toml").is_err());
    assert_eq!(c.switches.len(), before);
}

#[test]
fn prices_file_sets_prices_and_clears_estimate() {
    let mut c = Catalog::builtin();
    c.apply_prices(
        "source = \"quote 2026-11\"\n[price_usd]\nQM9700 = 25000\n",
        "p.toml",
    )
    .unwrap();
    let p = &c.switches["QM9700"].price;
    assert_eq!(
        (p.usd, p.estimate, p.source.as_str()),
        (25000.0, false, "quote 2026-11")
    );
    let e = c
        .apply_prices("[price_usd]\nNOPE = 1\n", "p.toml")
        .unwrap_err();
    assert!(
        e.message.contains("NOPE") && e.message.contains("QM9700"),
        "{e}"
    );
}

#[test]
fn cable_lengths_round_up_to_stock() {
    let c = Catalog::builtin();
    let dac = &c.cables["DAC-OSFP-400G"];
    assert_eq!(dac.length_for(1.2), Some(1.5));
    assert_eq!(dac.length_for(2.5), None);
    assert_eq!(dac.reach_m(), 2.0);
}

/// Prices past the bound, negative or not a number are refused with the id and the valid range, so
/// cost sums stay finite (a 1e308 price once printed $9,223,372,036,854,775,807).
#[test]
fn prices_out_of_range_are_refused() {
    for bad in ["1e308", "-1", "nan", "inf", "1000000001"] {
        let mut c = Catalog::builtin();
        let e = c
            .apply_prices(&format!("[price_usd]\nQM9700 = {bad}\n"), "p.toml")
            .unwrap_err();
        assert!(
            e.message.contains("price_usd.QM9700") && e.message.contains("valid: 0 to 1000000000"),
            "{bad}: {e}"
        );
        assert_eq!(c.switches["QM9700"], Catalog::builtin().switches["QM9700"]);
    }
    let mut c = Catalog::builtin();
    let e = c
        .apply_prices(
            "[price_usd]\n\"MPO12-OM4\" = { usd = 30, per_m_usd = 1e300 }\n",
            "p.toml",
        )
        .unwrap_err();
    assert!(e.message.contains("per_m_usd"), "{e}");
    c.apply_prices("[price_usd]\nQM9700 = 1e9\n", "p.toml")
        .unwrap();
}

/// Catalog overlays are bounded like prices: radix, power and lengths.
#[test]
fn overlay_numbers_out_of_range_are_refused() {
    let base = Catalog::builtin();
    let sw = base.switches["QM9700"].clone();
    let mut big = sw.clone();
    big.modes[0].ports = 1 << 20;
    big.cages = 1;
    let mut one = sw.clone();
    one.modes[0].ports = 1;
    one.cages = 1;
    let mut nan_power = sw.clone();
    nan_power.power_w = f64::NAN;
    let mut flat = sw;
    flat.rack_units = 0;
    for (s, what) in [
        (big, "valid: 2 to 2048"),
        (one, "valid: 2 to 2048"),
        (nan_power, "power_w"),
        (flat, "rack_units 0; valid: 1 to 58"),
    ] {
        #[derive(serde::Serialize)]
        struct File {
            switch: Vec<SwitchModel>,
        }
        let text = toml::to_string(&File { switch: vec![s] }).unwrap();
        let e = base.clone().overlay(&text, "c.toml").unwrap_err();
        assert!(e.message.contains(what), "{e}");
    }
}

/// Dense FP8 peaks: twice the dense BF16 on Hopper and Blackwell (datasheets print both with
/// sparsity), none on the A100; an FP8 peak needs its source, and a source needs its peak.
#[test]
fn fp8_peaks_are_twice_bf16_and_carry_a_source() {
    let c = Catalog::builtin();
    for id in ["H100", "H200", "B200"] {
        let g = &c.gpus[id];
        let fp8 = g.peak_tflops_fp8.unwrap();
        assert!((fp8 / g.peak_tflops_bf16 - 2.0).abs() < 0.002, "{id}");
        assert!(
            g.fp8_source.as_deref().is_some_and(|s| s.len() > 10),
            "{id}"
        );
    }
    assert_eq!(c.gpus["A100"].peak_tflops_fp8, None);
    let gpu = |extra: &str| {
        format!(
            "[[gpu]]\nid = \"X3\"\nname = \"x\"\nnvlink_gbs_per_link = 10.0\nnvlink_links = 4\npcie_gen = 4\npcie_lanes = 16\nmemory_gb = 16\npeak_tflops_bf16 = 100.0\n{extra}power_w = 300.0\nsource = \"test\"\n"
        )
    };
    let mut user = Catalog::builtin();
    user.overlay(
        &gpu("peak_tflops_fp8 = 200.0\nfp8_source = \"a datasheet\"\n"),
        "user.toml",
    )
    .unwrap();
    assert_eq!(user.gpus["X3"].peak_tflops_fp8, Some(200.0));
    for bad in [
        "peak_tflops_fp8 = 200.0\n",
        "fp8_source = \"a datasheet\"\n",
        "peak_tflops_fp8 = -1.0\nfp8_source = \"a datasheet\"\n",
    ] {
        let e = Catalog::builtin()
            .overlay(&gpu(bad), "user.toml")
            .unwrap_err();
        assert!(e.message.contains("fp8"), "{e}");
    }
}

/// A GPU's memory is what the device exposes where the catalog gives it (nvidia-smi's MiB), else
/// its datasheet GiB; an exposed total of 0 or above the datasheet's GiB is refused naming the GPU.
#[test]
fn gpu_memory_is_what_the_device_exposes() {
    let c = Catalog::builtin();
    assert_eq!(c.gpus["H100"].memory_bytes(), 81_559.0 * 1_048_576.0);
    for (id, gb) in [("A100", 80), ("H100", 80), ("H200", 141), ("B200", 180)] {
        let g = &c.gpus[id];
        assert_eq!(g.memory_gb, gb);
        // Within 1% below the datasheet's GiB.
        let gib = f64::from(gb) * f64::from(1u32 << 30);
        assert!(
            g.memory_bytes() <= gib && g.memory_bytes() > 0.99 * gib,
            "{id}"
        );
    }
    let gpu = |extra: &str| {
        format!(
            "[[gpu]]\nid = \"X4\"\nname = \"x\"\nnvlink_gbs_per_link = 10.0\nnvlink_links = 4\npcie_gen = 4\npcie_lanes = 16\nmemory_gb = 16\n{extra}peak_tflops_bf16 = 100.0\npower_w = 300.0\nsource = \"test\"\n"
        )
    };
    let mut user = Catalog::builtin();
    user.overlay(&gpu(""), "user.toml").unwrap();
    assert_eq!(user.gpus["X4"].memory_bytes(), 16.0 * 1_073_741_824.0);
    for bad in ["memory_mib = 0\n", "memory_mib = 16385\n"] {
        let e = Catalog::builtin()
            .overlay(&gpu(bad), "user.toml")
            .unwrap_err();
        assert!(
            e.message.contains("gpu X4: memory_mib") && e.message.contains("16384"),
            "{e}"
        );
    }
}

/// A server's height is optional (user catalogs written before it stay valid) and bounded; the
/// built-in servers all have one.
#[test]
fn server_heights_are_optional_and_bounded() {
    let base = Catalog::builtin();
    assert!(base.servers.values().all(|s| s.rack_units.is_some()));
    assert_eq!(base.servers["DGX H100"].rack_units, Some(8));
    #[derive(serde::Serialize)]
    struct File {
        server: Vec<ServerModel>,
    }
    let mut s = base.servers["DGX H100"].clone();
    s.id = "mine".into();
    s.rack_units = None;
    let text = toml::to_string(&File {
        server: vec![s.clone()],
    })
    .unwrap();
    assert!(!text.contains("rack_units"), "{text}");
    let mut c = base.clone();
    c.overlay(&text, "c.toml").unwrap();
    assert_eq!(c.servers["mine"].rack_units, None);
    s.rack_units = Some(59);
    let text = toml::to_string(&File { server: vec![s] }).unwrap();
    let e = base.clone().overlay(&text, "c.toml").unwrap_err();
    assert!(e.message.contains("rack_units 59; valid: 1 to 58"), "{e}");
}

/// A fibre or transceiver names one of the connectors the layout matches (SR8 takes MPO-16,
/// LR4 and FR4 duplex LC); anything else is refused with the valid names, and the built-in parts
/// carry the right ones.
#[test]
fn optical_connectors_are_checked() {
    let c = Catalog::builtin();
    assert_eq!(c.transceivers["OSFP-800G-SR8"].connector, "mpo-16");
    assert_eq!(c.transceivers["QSFP28-100G-LR4"].connector, "lc-duplex");
    assert_eq!(c.transceivers["QSFP56-200G-FR4"].connector, "lc-duplex");
    assert_eq!(c.transceivers["OSFP-400G-SR4"].connector, "mpo-12");
    assert_eq!(c.fibres["MPO16-OM4"].connector, "mpo-16");
    assert_eq!(c.fibres["LC-OS2"].connector, "lc-duplex");
    let mut user = Catalog::builtin();
    let e = user
        .overlay(
            "[[fibre]]\nid = \"F\"\nname = \"f\"\nkind = \"smf\"\nconnector = \"sc\"\nlengths_m = [1.0]\ndelay_ns_per_m = 5.0\nprice = { usd = 1.0, estimate = true, source = \"test\" }\nsource = \"test\"\n",
            "user.toml",
        )
        .unwrap_err();
    assert!(
        e.message
            .contains("connector `sc`; valid: mpo-12, mpo-16, lc-duplex"),
        "{e}"
    );
}

/// A multi-port cable's per-port rate is checked like every other number, and the built-in
/// splitters of HDR carry HDR100 legs only.
#[test]
fn port_gbps_is_range_checked_and_hdr_splitters_carry_hdr100() {
    let c = Catalog::builtin();
    let split = &c.cables["DACS-QSFP56-2x100G"];
    assert!(split.carries(Tech::IbHdr, 100) && !split.carries(Tech::IbHdr, 200));
    assert!(c.cables["DAC-QSFP28-100G"].carries(Tech::Roce100g, 100));
    let mut bad = split.clone();
    bad.port_gbps = Some(0);
    let e = bad.validate().unwrap_err();
    assert!(e.contains("port_gbps = 0; valid: 1 to 1600"), "{e}");
}

/// ConnectX-8 runs 800 Gb/s as XDR InfiniBand only: on Ethernet it is 2 x 400GbE, and NVIDIA's
/// firmware release notes say a single 800GbE port is not supported. The 800GbE NIC is Broadcom's
/// Thor Ultra.
#[test]
fn connectx8_runs_no_single_800gbe_port() {
    let c = Catalog::builtin();
    let cx8 = &c.nics["ConnectX-8"];
    assert!(!cx8.techs.contains(&Tech::Roce800g));
    assert!(cx8.techs.contains(&Tech::IbXdr) && cx8.techs.contains(&Tech::Roce400g));
    assert!(cx8.source.contains("not supported on a single port"));
    let ids: Vec<&str> = c
        .nics_for(Tech::Roce800g)
        .iter()
        .map(|n| n.id.as_str())
        .collect();
    assert_eq!(ids, ["Thor-Ultra"]);
}

/// Every price says whether it is an estimate, and an estimate says so in its source: the flag
/// reaches every cost it feeds ("includes estimated prices").
#[test]
fn estimated_prices_say_so_in_their_source() {
    let c = Catalog::builtin();
    let prices = c
        .switches
        .values()
        .map(|s| (&s.id, &s.price))
        .chain(c.nics.values().map(|n| (&n.id, &n.price)))
        .chain(
            c.gpus
                .values()
                .filter_map(|g| Some((&g.id, g.price.as_ref()?))),
        )
        .chain(c.servers.values().map(|s| (&s.id, &s.price)))
        .chain(c.rack_systems.values().map(|r| (&r.id, &r.price)));
    for (id, p) in prices {
        if p.estimate {
            assert!(p.source.contains("estimate"), "{id}: {}", p.source);
        }
    }
    for id in ["GB200", "GB300", "B300", "MI300X"] {
        assert!(c.gpus[id].price.as_ref().unwrap().estimate, "{id}");
    }
    for id in ["GB200 NVL72 tray", "DGX B300", "AMD MI355X platform"] {
        assert!(c.servers[id].price.estimate, "{id}");
    }
}

/// A GB200 NVL72 rack as RA-11338-001 ("Network Fabrics") builds it: 18 compute trays of 4 GPUs
/// (72 GPUs in one NVLink domain), 9 NVLink switch trays of 2 chips, every GPU with 18 NVLink 5
/// links (one per chip) at NCCL's 40.1 GB/s; 4 ConnectX-7 per tray (DGX GB200 User Guide). The
/// GB300 NVL72 alike with ConnectX-8, up to 142 kW (NVL72 AI Factory RA).
#[test]
fn nvl72_racks_are_as_the_reference_architectures_build_them() {
    let c = Catalog::builtin();
    for (id, tray_nic) in [("GB200 NVL72", "ConnectX-7"), ("GB300 NVL72", "ConnectX-8")] {
        let r = &c.rack_systems[id];
        let tray = &c.servers[&r.tray];
        assert_eq!((r.trays, tray.gpus, r.gpus(tray.gpus)), (18, 4, 72), "{id}");
        assert_eq!((r.nvlink_switch_trays, r.nvlink_switch_chips), (9, 18));
        let gpu = &c.gpus[&tray.gpu];
        assert_eq!(gpu.nvlink_links, r.nvlink_switch_chips, "one link per chip");
        assert!((gpu.nvlink_gbs() - 18.0 * 40.1).abs() < 1e-9);
        assert_eq!(tray.compute_nics, 4);
        assert!(tray.source.contains(tray_nic), "{id}");
        assert_eq!(c.rack_of(&tray.id).map(|x| &x.id), Some(&r.id));
        assert!(r.cooling.needs_liquid() && tray.cooling().needs_liquid());
        // The trays fit the rack's power; the rest is switch trays and power conversion.
        let overhead = r.overhead_w(tray.power_w);
        assert!((1000.0..10_000.0).contains(&overhead), "{id}: {overhead}");
    }
    assert_eq!(c.rack_systems["GB300 NVL72"].power_w, 142_000.0);
    assert_eq!(c.rack_of("DGX H100"), None);
    assert_eq!(c.servers["DGX H100"].cooling(), Cooling::Air);
}

/// A tray and its rack name each other, and the trays fit the rack's power; errors name both.
#[test]
fn rack_systems_and_trays_are_checked() {
    let tray = |rack: &str, power: f64| {
        format!(
            "[[server]]\nid = \"T\"\nname = \"t\"\ngpu = \"H100\"\ngpus = 4\npower_w = {power}\nincludes_compute_nics = false\nrack_system = \"{rack}\"\nprice = {{ usd = 1.0, estimate = true, source = \"estimate: test\" }}\nsource = \"test\"\n"
        )
    };
    let rack = "[[rack_system]]\nid = \"R\"\nname = \"r\"\ntray = \"T\"\ntrays = 18\nnvlink_switch_trays = 9\nnvlink_switch_chips = 18\nnvlink_switch_tray_units = 1\npower_w = 100000.0\ncooling = \"liquid\"\nprice = { usd = 0.0, estimate = true, source = \"estimate: test\" }\nsource = \"test\"\n";
    let mut ok = Catalog::builtin();
    ok.overlay(&format!("{}{rack}", tray("R", 5000.0)), "user.toml")
        .unwrap();
    assert_eq!(ok.rack_of("T").unwrap().id, "R");
    let e = Catalog::builtin()
        .overlay(&tray("nowhere", 5000.0), "user.toml")
        .unwrap_err();
    assert!(e.message.contains("unknown rack_system `nowhere`"), "{e}");
    let e = Catalog::builtin()
        .overlay(&format!("{}{rack}", tray("R", 6000.0)), "user.toml")
        .unwrap_err();
    assert!(e.message.contains("18 trays of 6000 W"), "{e}");
    let e = Catalog::builtin()
        .overlay(&rack.replace("chips = 18", "chips = 10"), "user.toml")
        .unwrap_err();
    assert!(e.message.contains("nvlink_switch_chips 10"), "{e}");
}

/// AMD Instinct GPUs join in a full mesh of 7 Infinity Fabric links (one per peer of 8), at the
/// 48 GB/s per link RCCL models (topo.h); NVIDIA's through NVLink switches.
#[test]
fn amd_instinct_gpus_are_a_full_mesh() {
    let c = Catalog::builtin();
    for id in ["MI300X", "MI325X", "MI355X"] {
        let g = &c.gpus[id];
        assert_eq!(g.scale_up, ScaleUp::Mesh, "{id}");
        assert_eq!((g.nvlink_links, g.nvlink_gbs_per_link), (7, 48.0), "{id}");
        assert!(g.source.contains("RCCL") || g.source.contains("topo.h"));
    }
    assert_eq!(c.gpus["H800"].nvlink_links, 8);
    assert_eq!(c.gpus["H100"].scale_up, ScaleUp::Nvswitch);
}

/// Tomahawk 5: 64 x 800G, 128 x 400G, 256 x 200G on 64 cages; ConnectX-8 as 2 x 400GbE is an
/// entry of its own, beside the 800G (XDR) one.
#[test]
fn tomahawk_and_connectx8_modes() {
    let c = Catalog::builtin();
    let th5 = &c.switches["TH5-64x800"];
    let ports = |t, g| th5.mode_for(t, Some(g)).unwrap().ports;
    assert_eq!(
        (
            ports(Tech::Roce800g, 800),
            ports(Tech::Roce400g, 400),
            ports(Tech::Roce200g, 200),
            th5.cages
        ),
        (64, 128, 256, 64)
    );
    assert_eq!(c.switches["TH6-128x800"].modes[0].ports, 128);
    let cx8 = &c.nics["ConnectX-8-2x400"];
    assert_eq!((cx8.ports, cx8.port_gbps), (2, 400));
    assert!(!cx8.techs.contains(&Tech::IbXdr));
    assert_eq!(c.nics["ConnectX-8"].port_gbps, 800);
}

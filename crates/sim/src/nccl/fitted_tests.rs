use super::*;

#[test]
fn the_default_is_the_shipped_values_and_set_names_the_choices() {
    let mut f = Fitted::default();
    assert!(f.replaced().is_empty());
    for c in FITTED.iter().filter(|c| c.replaceable) {
        f.set(c.name, c.neutral).unwrap();
    }
    assert_eq!(f.replaced().len(), 5);
    assert_eq!(f.ll128_net_startup_factor, 1.0);
    let e = f.set("HOST_STAGED_RECEIVE_GBS", 10.0).unwrap_err();
    assert!(e.contains("valid: LL128_NET_STARTUP_FACTOR, NCCL_TESTS_HOST_US_PER_GPU"));
    assert!(f
        .set("NCCL_TESTS_HOST_US_PER_GPU", -1.0)
        .unwrap_err()
        .contains("valid: a number from 0 to 1000"));
    assert!(f.set("LL128_NET_STARTUP_FACTOR", f64::NAN).is_err());
}

#[test]
fn every_constant_names_its_runs_and_sources() {
    for c in FITTED {
        assert!(!c.fitted_on.is_empty() && !c.sources.is_empty() && !c.rule.is_empty());
        assert_ne!(c.value, c.neutral, "{}", c.name);
    }
}

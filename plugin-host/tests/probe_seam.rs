//! The AGENT_RUNNER_TEST_PROBE seam. (A separate test binary because it changes this
//! process's environment.)

use agent_runner_plugin_host::common::probe::TEST_PROBE_ENV;
use agent_runner_plugin_host::{probe, Tier};

#[test]
fn forced_tiers_and_the_real_answer() {
    std::env::remove_var(TEST_PROBE_ENV);
    let real = probe();
    assert_eq!(real.tier(), Tier::LandlockSeccomp, "{real:?}");
    assert!(real.landlock_abi.unwrap() >= 6);

    for tier in Tier::ALL {
        std::env::set_var(TEST_PROBE_ENV, tier.as_str());
        let caps = probe();
        assert_eq!(caps.tier(), tier, "{caps:?}");
        assert_eq!(caps.landlock_abi.is_some(), tier.landlock());
        assert_eq!(caps.seccomp, tier.seccomp());
        if tier == Tier::LandlockSeccomp {
            assert_eq!(caps.unconfined_reason, None);
        } else {
            assert_eq!(
                caps.unconfined_reason.as_deref(),
                Some("forced by AGENT_RUNNER_TEST_PROBE")
            );
        }
    }
    std::env::set_var(TEST_PROBE_ENV, "bogus");
    assert_eq!(probe(), real);
    std::env::remove_var(TEST_PROBE_ENV);
}

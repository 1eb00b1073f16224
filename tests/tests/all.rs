//! The end-to-end tests as one test binary (issue 40): one build and one link of the support
//! library and its dependencies instead of one per file. The tests live in `suite/<kind>/`
//! (functional, confinement, real_clis, reference); run one kind with
//! `cargo test -p agent-runner-e2e --test all suite::<kind>`, one file with
//! `… suite::<kind>::<file>::`. tests/run.sh runs the kinds in turn.

mod kube_common;
mod operator_common;
mod suite;

//! The end-to-end tests, by kind: `cargo test -p agent-runner-e2e --test all suite::<kind>`.

mod functional;
mod confinement;
mod real_clis;
mod reference;

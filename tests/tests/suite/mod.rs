//! The end-to-end tests, by kind: `cargo test -p agent-runner-e2e --test all suite::<kind>`.

mod confinement;
mod functional;
mod real_clis;
mod reference;

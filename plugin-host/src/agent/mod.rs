//! The agent of a round (and the goal checks that run beside it): its policy as reviewed
//! data ([`policy`]: grants, withheld paths, the seccomp deny-list), its confinement
//! ([`confine`]: namespaces, the read-only mounts of [`protected`], an init of its own; the
//! credential stores by identity, [`withheld_files`], for the observer), and its way out
//! when egress is filtered ([`egress_bridge`]). Uses [`crate::common`], never
//! [`crate::host`].

pub mod confine;
pub mod egress_bridge;
pub mod policy;
pub mod protected;
pub mod shadow_home;
pub mod withheld_files;

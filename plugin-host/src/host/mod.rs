//! Plugin hosts: pinning their bytes ([`pin`], [`resolve`]), their policy as reviewed data
//! ([`policy`]: the filesystem grants and the system-call allow-list), their environment
//! allow-list ([`env`](mod@env)), the layers they get ([`layers`]), and starting one through
//! the `plugin-host` launcher ([`launch`]). Uses [`crate::common`], never [`crate::agent`].

pub mod env;
pub mod launch;
pub mod layers;
pub mod pin;
pub mod policy;
pub mod resolve;

//! The environment a host receives (`docs/protocol.md` §8).

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Names copied from the supervisor's environment when set (`docs/protocol.md` §8), besides `LC_*`.
const COPIED: [&str; 4] = ["PATH", "HOME", "LANG", "TZ"];

/// The complete environment of a host named `host_name` (`docs/protocol.md` §8): `PATH`, `HOME`,
/// `LANG`, every `LC_*` and `TZ` copied from the current process when set; `TMPDIR` set to
/// `tmp_dir`; `AGENT_RUNNER_HOST=<host_name>`; `AGENT_RUNNER_PROTOCOL=1`. Nothing else of
/// the supervisor's environment crosses.
///
/// Returned as `(name, value)` pairs in a stable order (copied variables in the supervisor's
/// order, then the three set ones).
pub fn host_environment(host_name: &str, tmp_dir: &Path) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| {
            let b = k.as_bytes();
            COPIED.iter().any(|c| c.as_bytes() == b) || b.starts_with(b"LC_")
        })
        .collect();
    out.push(("TMPDIR".into(), tmp_dir.as_os_str().to_owned()));
    out.push(("AGENT_RUNNER_HOST".into(), host_name.into()));
    out.push(("AGENT_RUNNER_PROTOCOL".into(), "1".into()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_allowlist() {
        let env = host_environment("h1", Path::new("/tmp/x"));
        for (k, _) in &env {
            let k = k.to_str().unwrap();
            assert!(
                COPIED.contains(&k)
                    || k.starts_with("LC_")
                    || ["TMPDIR", "AGENT_RUNNER_HOST", "AGENT_RUNNER_PROTOCOL"].contains(&k),
                "unexpected {k}"
            );
        }
        let get = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        assert_eq!(get("TMPDIR"), Some("/tmp/x".into()));
        assert_eq!(get("AGENT_RUNNER_HOST"), Some("h1".into()));
        assert_eq!(get("AGENT_RUNNER_PROTOCOL"), Some("1".into()));
        assert_eq!(get("PATH"), std::env::var_os("PATH"));
    }
}

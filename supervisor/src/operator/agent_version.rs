//! `doctor`'s `agent_version` check: the installed version of a preset's CLI (its
//! `--version`) against the version the preset was verified with
//! ([`crate::operator::init::Preset::verified_with`], docs/agent-clis.md). Inside the range
//! means the same major.minor series, no older patch; outside it is a warning (flags may
//! have changed), never a failure.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long `<cli> --version` may take (a CLI starting cold on a busy machine).
const VERSION_TIMEOUT: Duration = Duration::from_secs(20);

/// What `doctor` says of the installed version: `(within range, reason, how to fix)`;
/// `None` when the CLI is not a preset's, or prints no version in time. A preset never
/// verified against its real CLI (codewhale: not installable from a registry) is a
/// warning saying so.
pub(crate) fn check(executable: &Path, cli: &str) -> Option<(bool, String, String)> {
    let preset = crate::operator::init::PRESETS
        .iter()
        .find(|p| p.command[0] == cli)?;
    let Some(verified) = preset.verified_with else {
        let installed =
            installed_version(executable).unwrap_or_else(|| "(no version printed)".into());
        return Some((
            false,
            format!("{cli} {installed}: the {} preset is unverified, never run against a real {cli} (docs/agent-clis.md): its flags and the detector's reading of its output are the reference system's", preset.name),
            format!("run one round by hand (`agent-runner round`) and read its log before leaving {cli} unattended"),
        ));
    };
    let installed = installed_version(executable)?;
    if within(&installed, verified) {
        Some((
            true,
            format!(
                "{cli} {installed}: the preset was verified with {verified} (docs/agent-clis.md)"
            ),
            String::new(),
        ))
    } else {
        Some((
            false,
            format!("{cli} {installed} is outside the series the preset was verified with ({verified}): its flags or output may differ"),
            format!("install {cli} {verified} (or a later {} patch), or check the preset against docs/agent-clis.md", series(verified)),
        ))
    }
}

/// The first `x.y.z` `executable --version` prints within [`VERSION_TIMEOUT`].
fn installed_version(executable: &Path) -> Option<String> {
    let mut child = Command::new(executable)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < VERSION_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = String::new();
    child.stdout.take()?.read_to_string(&mut out).ok()?;
    first_version(&out)
}

fn first_version(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find(|w| parse(w).is_some())
        .map(str::to_owned)
}

fn parse(version: &str) -> Option<(u64, u64, u64)> {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().ok());
    let v = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(v)
}

fn series(version: &str) -> String {
    version
        .rsplit_once('.')
        .map_or(version, |(s, _)| s)
        .to_owned()
        + ".x"
}

/// Same major.minor as `verified`, patch not older.
fn within(installed: &str, verified: &str) -> bool {
    match (parse(installed), parse(verified)) {
        (Some((a, b, c)), Some((x, y, z))) => a == x && b == y && c >= z,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_ranges_versions() {
        assert_eq!(
            first_version("2.1.332 (Claude Code)\n").as_deref(),
            Some("2.1.332")
        );
        assert_eq!(
            first_version("codex-cli 0.171.0\n").as_deref(),
            Some("0.171.0")
        );
        assert_eq!(first_version("aider 0.86.2\n").as_deref(), Some("0.86.2"));
        assert_eq!(first_version("no version here 1.2"), None);
        assert!(within("2.1.332", "2.1.332"));
        assert!(within("2.1.340", "2.1.332"));
        assert!(!within("2.1.300", "2.1.332"));
        assert!(!within("2.2.0", "2.1.332"));
        assert!(!within("3.1.332", "2.1.332"));
        assert_eq!(series("0.171.0"), "0.171.x");
    }
}

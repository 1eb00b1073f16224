//! A CLI's own error reports, kept beside the round log (docs/agent-clis.md, "Error
//! reports"). Some CLIs write the whole of a failure to a file in their TMPDIR and print
//! only its path (gemini: `Full report available at: …/gemini-client-error-….json`); a
//! confined agent's TMPDIR is emptied before the next round, an unconfined one's is the
//! system's, cleaned by others. After each round the reports its CLI wrote during it are
//! copied next to the round log as `R<N>-<stamp>.<report's name>`, which round log
//! retention removes with the log.
//!
//! The TMPDIR is the agent's and so hostile ground: only regular files are copied (a link
//! is refused, never followed), named as the CLI names its reports, changed since the
//! round started, at most [`MAX_REPORTS`] of at most [`MAX_REPORT_BYTES`] each; nothing of
//! their content is read.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Reviewed data: the reports each CLI writes into its TMPDIR, by name (prefix, suffix).
pub(crate) const REPORTS: &[(&str, &str, &str)] = &[("gemini", "gemini-client-error-", ".json")];

/// Most reports kept per round.
pub(crate) const MAX_REPORTS: usize = 8;

/// Most bytes kept of one report (a longer one is cut there).
pub(crate) const MAX_REPORT_BYTES: u64 = 1 << 20;

/// Copies the reports `cli` wrote into `tmp_dir` since `since` next to `log_path`
/// (`R<N>-<stamp>.log` → `R<N>-<stamp>.<name>`); returns the copies. Nothing for a CLI
/// without reports; a file that cannot be read or written is skipped.
pub(crate) fn keep(
    cli: Option<&str>,
    tmp_dir: &Path,
    since: SystemTime,
    log_path: &Path,
) -> Vec<PathBuf> {
    use std::io::Read;
    let patterns: Vec<_> = REPORTS.iter().filter(|(c, _, _)| Some(*c) == cli).collect();
    if patterns.is_empty() {
        return Vec::new();
    }
    let (Some(dir), Some(stem)) = (
        log_path.parent(),
        log_path.file_stem().and_then(|s| s.to_str()),
    ) else {
        return Vec::new();
    };
    let mut kept = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(tmp_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e)))
        .filter(|(name, _)| {
            patterns
                .iter()
                .any(|(_, prefix, suffix)| name.starts_with(prefix) && name.ends_with(suffix))
        })
        .filter(|(_, e)| {
            e.metadata()
                .is_ok_and(|m| m.is_file() && m.modified().is_ok_and(|t| t >= since))
        })
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, entry) in entries.into_iter().take(MAX_REPORTS) {
        let Ok(file) =
            crate::tree_file::open_regular(&entry.path(), crate::tree_file::Symlink::Refuse)
        else {
            continue;
        };
        let mut bytes = Vec::new();
        if file.take(MAX_REPORT_BYTES).read_to_end(&mut bytes).is_err() {
            continue;
        }
        let copy = dir.join(format!("{stem}.{name}"));
        if std::fs::write(&copy, &bytes).is_ok() {
            kept.push(copy);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_s_reports_of_the_round_are_kept_beside_its_log_links_are_not() {
        let tmp = tempfile::tempdir().unwrap();
        let logs = tempfile::tempdir().unwrap();
        let log = logs.path().join("R3-20261202T050000.log");
        std::fs::write(&log, "").unwrap();
        let since = SystemTime::now() - std::time::Duration::from_secs(5);
        let report = "gemini-client-error-Turn.run-sendMessageStream-2026.json";
        std::fs::write(tmp.path().join(report), "{\"error\":1}").unwrap();
        std::fs::write(tmp.path().join("other.json"), "{}").unwrap();
        let secret = tmp.path().join("secret");
        std::fs::write(&secret, "s").unwrap();
        std::os::unix::fs::symlink(&secret, tmp.path().join("gemini-client-error-x.json")).unwrap();
        let kept = keep(Some("gemini"), tmp.path(), since, &log);
        assert_eq!(
            kept,
            [logs.path().join(format!("R3-20261202T050000.{report}"))]
        );
        assert_eq!(std::fs::read_to_string(&kept[0]).unwrap(), "{\"error\":1}");
        // Another CLI's round, or an old report, keeps nothing.
        assert!(keep(Some("claude"), tmp.path(), since, &log).is_empty());
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        assert!(keep(Some("gemini"), tmp.path(), later, &log).is_empty());
    }
}

//! Round log retention (`[runtime] round_log_retention`, `round_log_retention_bytes`): keep
//! the newest round logs (`<log_dir>/rounds/R<N>-<stamp>.log`, ordered by round number)
//! within a count and a total size, delete the older ones, with the files kept beside each
//! (`R<N>-<stamp>.<name>`: a CLI's error reports, `crate::runtime::agent::cli_reports`). 0 keeps
//! everything (the reference system's default).

use std::path::{Path, PathBuf};

/// Deletes round logs in `rounds_dir`, oldest round first, so that at most `keep` remain
/// and those left total at most `keep_bytes` (`None`: no such limit; `Some(0)` deletes
/// them all — the "keep all" meaning of the config's 0 is the caller's); returns the
/// deleted paths. Files not named like round logs are never touched.
///
/// Errors: the directory cannot be listed (a file that cannot be deleted is skipped).
pub(crate) fn prune(
    rounds_dir: &Path,
    keep: Option<u64>,
    keep_bytes: Option<u64>,
) -> std::io::Result<Vec<PathBuf>> {
    let mut logs: Vec<(u64, PathBuf, u64)> = Vec::new();
    for entry in std::fs::read_dir(rounds_dir)? {
        let entry = entry?;
        let path = entry.path();
        if let Some(num) = round_of(&path) {
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            logs.push((num, path, size));
        }
    }
    logs.sort();
    let (mut kept, mut total) = (0u64, 0u64);
    let mut deleted = Vec::new();
    for (_, path, size) in logs.into_iter().rev() {
        let fits = keep.is_none_or(|k| kept < k) && keep_bytes.is_none_or(|b| total + size <= b);
        if fits {
            kept += 1;
            total += size;
        } else if std::fs::remove_file(&path).is_ok() {
            remove_companions(rounds_dir, &path);
            deleted.push(path);
        }
    }
    deleted.reverse();
    Ok(deleted)
}

/// Deletes the files kept beside the round log `log` (`R<N>-<stamp>.<name>`).
fn remove_companions(rounds_dir: &Path, log: &Path) {
    let Some(stem) = log.file_stem().and_then(|s| s.to_str()) else {
        return;
    };
    let prefix = format!("{stem}.");
    for entry in std::fs::read_dir(rounds_dir)
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name();
        if name.to_str().is_some_and(|n| n.starts_with(&prefix)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The round number of a round log's file name (`R<N>-….log`); `None` for other files.
pub(crate) fn round_of(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix('R')?.strip_suffix(".log")?;
    rest.split('-').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_by_round_number() {
        let dir = tempfile::tempdir().unwrap();
        for n in [1, 2, 9, 10, 11] {
            std::fs::write(dir.path().join(format!("R{n}-20261129T000000.log")), "").unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), "").unwrap();
        // A CLI's error report kept beside round 1's log goes with it.
        std::fs::write(
            dir.path()
                .join("R1-20261129T000000.gemini-client-error-x.json"),
            "",
        )
        .unwrap();
        let deleted = prune(dir.path(), Some(2), None).unwrap();
        assert_eq!(deleted.len(), 3);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "R10-20261129T000000.log",
                "R11-20261129T000000.log",
                "notes.txt"
            ]
        );
    }

    #[test]
    fn keeps_the_newest_within_a_total_size() {
        let dir = tempfile::tempdir().unwrap();
        for (n, size) in [(1, 100), (2, 300), (3, 300), (4, 50)] {
            std::fs::write(dir.path().join(format!("R{n}-x.log")), vec![b'x'; size]).unwrap();
        }
        let deleted = prune(dir.path(), None, Some(700)).unwrap();
        let names: Vec<_> = deleted
            .iter()
            .map(|p| p.file_name().unwrap().to_owned())
            .collect();
        // R4 + R3 = 350, + R2 = 650 fits, + R1 = 750 does not.
        assert_eq!(names, ["R1-x.log"]);
        assert_eq!(prune(dir.path(), Some(1), Some(700)).unwrap().len(), 2);
    }
}

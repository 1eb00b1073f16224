//! Round log retention (`[runtime] round_log_retention`): keep the newest N round logs
//! (`<log_dir>/rounds/R<N>-<stamp>.log`, ordered by round number), delete the older ones.
//! 0 keeps everything (the reference system's default).

use std::path::{Path, PathBuf};

/// Deletes round logs in `rounds_dir` so that at most `keep` remain (0 deletes them all:
/// the "keep all" meaning of the config's 0 is the caller's), oldest round first; returns
/// the deleted paths. Files not named like round logs are never touched.
///
/// Errors: the directory cannot be listed (a file that cannot be deleted is skipped).
pub fn prune(rounds_dir: &Path, keep: u64) -> std::io::Result<Vec<PathBuf>> {
    let mut logs: Vec<(u64, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(rounds_dir)? {
        let path = entry?.path();
        if let Some(num) = round_of(&path) {
            logs.push((num, path));
        }
    }
    logs.sort();
    let excess = logs.len().saturating_sub(keep as usize);
    let mut deleted = Vec::new();
    for (_, path) in logs.into_iter().take(excess) {
        if std::fs::remove_file(&path).is_ok() {
            deleted.push(path);
        }
    }
    Ok(deleted)
}

/// The round number of a round log's file name (`R<N>-….log`); `None` for other files.
pub fn round_of(path: &Path) -> Option<u64> {
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
        let deleted = prune(dir.path(), 2).unwrap();
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
}

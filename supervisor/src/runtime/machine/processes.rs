//! The process table as `/proc` shows it: who is whose child (for the orphan reaper and
//! result grace).

/// The children of `parent` (pid, process group): the pids in every thread's
/// `/proc/<parent>/task/<tid>/children` (proc(5), Linux 3.5+), then each one's `stat` for
/// its parent and group, so the cost follows `parent`'s children, not the machine's process
/// count. Where those files are missing (a kernel without `CONFIG_PROC_CHILDREN`), every
/// `/proc/<pid>/stat`. A process gone meanwhile is left out; an unreadable `parent` gives
/// an empty list.
pub(crate) fn children_of(parent: u32) -> Vec<(u32, u32)> {
    let listed = || -> Option<Vec<u32>> {
        // The main thread's file says whether the kernel keeps these files at all.
        std::fs::metadata(format!("/proc/{parent}/task/{parent}/children")).ok()?;
        let mut pids = Vec::new();
        for task in std::fs::read_dir(format!("/proc/{parent}/task"))
            .ok()?
            .flatten()
        {
            // A thread that ended after the listing has no file any more, and no children
            // to report: skip it rather than fall back to scanning every process.
            if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
                pids.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<u32>().ok()),
                );
            }
        }
        Some(pids)
    };
    let candidates: Vec<u32> = match listed() {
        Some(pids) => pids,
        None => std::fs::read_dir("/proc")
            .map(|dir| {
                dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default(),
    };
    candidates
        .into_iter()
        .filter_map(|pid| {
            let (ppid, pgrp) = parent_and_group(pid)?;
            (ppid == parent).then_some((pid, pgrp))
        })
        .collect()
}

/// The children of this process (see [`children_of`]).
pub(crate) fn own_children() -> Vec<(u32, u32)> {
    children_of(std::process::id())
}

/// The parent and process group of `pid`, from `/proc/<pid>/stat`.
fn parent_and_group(pid: u32) -> Option<(u32, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command (which may hold spaces and parentheses).
    let mut fields = stat.get(stat.rfind(')')? + 2..)?.split(' ');
    let _state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((ppid, pgrp))
}

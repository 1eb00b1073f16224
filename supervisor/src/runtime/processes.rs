//! The process table as `/proc` shows it: who is whose child (for the orphan reaper and
//! result grace).

/// The children of `parent` (pid, process group), from `/proc/*/stat`.
pub fn children_of(parent: u32) -> Vec<(u32, u32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let name = entry.ok()?.file_name();
        let pid: u32 = name.to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Fields after the command (which may hold spaces and parentheses).
        let mut fields = stat.get(stat.rfind(')')? + 2..)?.split(' ');
        let _state = fields.next()?;
        let ppid: u32 = fields.next()?.parse().ok()?;
        let pgrp: u32 = fields.next()?.parse().ok()?;
        (ppid == parent).then_some((pid, pgrp))
    })
    .collect()
}

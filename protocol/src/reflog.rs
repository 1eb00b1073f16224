//! The supervisor's own commits as a host sees them in `.git` (docs/protocol.md §5.2, "The
//! supervisor's commits"). A confined host cannot run git, but it may read the work tree's
//! `.git`; every commit the supervisor makes for a dirty handler (the built-in `default`
//! or a host's) moves the branch with a reflog message of its own,
//! `agent-runner dirty handler <hook>: <subject>` (git's `GIT_REFLOG_ACTION`), where the
//! agent's commits read `commit: <subject>` and its other moves `merge …`, `reset: …`,
//! `rebase …`. The commit itself is left as the handler asked.

/// Every reflog message of a commit the supervisor made starts with this.
pub const SUPERVISOR_REFLOG_PREFIX: &str = "agent-runner dirty handler ";

/// The `GIT_REFLOG_ACTION` the supervisor commits with for dirty handler `hook`: git then
/// writes `<this>: <subject>` into the reflogs the commit moves.
pub fn reflog_action(hook: &str) -> String {
    format!("{SUPERVISOR_REFLOG_PREFIX}{hook}")
}

/// One reflog line: `<old sha> <new sha> <name> <<email>> <time> <zone>\t<message>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReflogEntry<'a> {
    /// The ref's value before.
    pub old: &'a str,
    /// Its value after.
    pub new: &'a str,
    /// What moved it (`commit: <subject>`, …).
    pub message: &'a str,
}

impl<'a> ReflogEntry<'a> {
    /// Parses one line (without its newline); `None` when it is not a reflog line.
    pub fn parse(line: &'a str) -> Option<ReflogEntry<'a>> {
        let (head, message) = line.split_once('\t').unwrap_or((line, ""));
        let mut words = head.splitn(3, ' ');
        let old = words.next()?;
        let new = words.next()?;
        let is_sha = |s: &str| s.len() >= 40 && s.bytes().all(|b| b.is_ascii_hexdigit());
        (is_sha(old) && is_sha(new)).then_some(ReflogEntry { old, new, message })
    }

    /// Whether the supervisor made this move (a commit for a dirty handler).
    pub fn by_supervisor(&self) -> bool {
        self.message.starts_with(SUPERVISOR_REFLOG_PREFIX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_the_supervisors_commits_from_the_agents() {
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let ours = format!(
            "{a} {b} agent-runner <agent-runner@localhost> 1796104224 +0000\t{}: wip: R3",
            reflog_action("wip_commit")
        );
        let entry = ReflogEntry::parse(&ours).unwrap();
        assert_eq!((entry.old, entry.new), (a.as_str(), b.as_str()));
        assert!(entry.by_supervisor());
        let theirs = format!("{b} {a} Dev <dev@x> 1796104224 +0000\tcommit: fix parser");
        assert!(!ReflogEntry::parse(&theirs).unwrap().by_supervisor());
        assert_eq!(ReflogEntry::parse("not a reflog line"), None);
    }
}

//! A host's stderr is bounded in the supervisor's log (docs/protocol.md §1): a 1 MiB line
//! becomes one record with a truncation mark, a flood of 16,384 short lines is cut to the
//! per-second rate with a "lines dropped" record, and neither the host's colour codes nor
//! our own reach a log that is not a terminal.

use agent_runner_e2e::{workspace_root, HostSpec, Project};

#[test]
fn host_stderr_is_capped_rate_limited_and_plain() {
    let p = Project::new();
    let body = std::fs::read_to_string(workspace_root().join("tests/runtimes/host.sh")).unwrap();
    let body = body.split_once('\n').unwrap().1;
    // Builtins only: a confined host cannot start programs.
    let flood = "#!/bin/sh\n\
        big='\\033[31mRED'; i=0\n\
        while [ $i -lt 20 ]; do big=\"$big$big\"; i=$((i+1)); done\n\
        printf '%b\\n' \"$big\" >&2\n\
        i=0\n\
        while [ $i -lt 16384 ]; do echo \"flood line $i\" >&2; i=$((i+1)); done\n";
    let host = p.tmp_dir().join("flood.sh");
    std::fs::write(&host, format!("{flood}{body}")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    p.write_config(
        &p.config()
            .sandbox("require")
            .host(HostSpec::new("flood", &host).provides(&["spawn_hook", "dirty_handler"])),
    );
    let out = p.run(&["round"]);
    let log = &out.stderr;
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a non-terminal log"
    );
    let big: Vec<&str> = log.lines().filter(|l| l.contains("REDRED")).collect();
    assert_eq!(big.len(), 1, "the 1 MiB line made {} records", big.len());
    // 2^20 copies of ESC[31mRED (8 bytes) → 8 MiB, plus nothing: the mark says how long.
    assert!(
        big[0].contains("… [line truncated: 8388608 bytes]"),
        "{}",
        &big[0][big[0].len().saturating_sub(200)..]
    );
    assert!(big[0].len() < 1500, "record of {} bytes", big[0].len());
    let copied = log.lines().filter(|l| l.contains("flood line ")).count();
    let dropped: u64 = log
        .lines()
        .filter_map(|l| {
            let at = l.find('[')?;
            let rest = &l[at + 1..];
            let n = rest.split(' ').next()?.parse::<u64>().ok()?;
            rest.contains("stderr lines dropped").then_some(n)
        })
        .sum();
    assert!(dropped > 0, "no dropped record:\n{log}");
    assert_eq!(
        copied as u64 + dropped + 1,
        16385,
        "copied {copied}, dropped {dropped}"
    );
    assert!(copied < 2000, "copied {copied} lines");
    // The host still served its round.
    out.assert_code(0);
    assert_eq!(
        p.log_subjects()[0],
        "wip sh: round 1",
        "{}",
        p.events_text()
    );
}

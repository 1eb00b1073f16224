//! The supervisor's git runs no program the repository configured (issue 27, item 4;
//! docs/security.md "The supervisor's git"): the repository's own config holds, from
//! before the round (what a round adds is reverted after it: `git_config_watch.rs`), every
//! kind of setting that makes git run a program — each one a recorder that notes its name
//! when run — and the agent plants `.gitattributes` and hooks, then leaves the tree dirty;
//! the supervisor's status, stash and commit must run none of them, and still stash or
//! commit. As root and as the unprivileged user.

use std::time::Duration;

use agent_runner_e2e::unprivileged::Operator;
use agent_runner_e2e::{ConfigBuilder, Project};

/// `git config` settings that run a program, each naming its recorder.
const PLANTED: &[(&str, &str)] = &[
    ("core.fsmonitor", "fsmonitor"),
    ("filter.planted.clean", "clean-filter"),
    ("filter.planted.smudge", "smudge-filter"),
    ("filter.procfilter.process", "process-filter"),
    ("diff.planted.textconv", "textconv"),
    ("diff.planted.command", "diff-driver"),
    ("diff.external", "external-diff"),
    ("merge.planted.driver", "merge-driver"),
    ("core.pager", "pager"),
    ("pager.status", "status-pager"),
    ("core.editor", "editor"),
    ("sequence.editor", "sequence-editor"),
    ("credential.helper", "credential-helper"),
    ("gpg.program", "gpg-program"),
    ("core.askPass", "askpass"),
    ("core.sshCommand", "ssh-command"),
];

const HOOKS: &[&str] = &[
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "post-index-change",
    "reference-transaction",
    "post-checkout",
    "pre-auto-gc",
];

#[test]
fn the_supervisors_git_runs_nothing_the_agent_configured() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        for action in ["auto_commit", "stash"] {
            one(operator, action);
        }
    }
}

fn one(operator: Operator, action: &str) {
    let what = format!("{operator:?} {action}");
    let p = Project::new_as(operator);
    let record = p.tmp_dir().join("ran");
    // A recorder notes its name, then passes stdin through (a clean or smudge filter must).
    let recorder = p.script(
        "recorder.sh",
        &format!("#!/bin/sh\necho \"$1\" >> '{}'\ncat\n", record.display()),
    );
    let hooks_dir = p.tmp_dir().join("planted-hooks");
    let mut agent = String::from("#!/bin/sh\nset -e\n");
    agent.push_str(&format!("mkdir -p '{}'\n", hooks_dir.display()));
    for hook in HOOKS {
        for dir in [p.dir().join(".git/hooks"), hooks_dir.clone()] {
            let path = dir.join(hook);
            agent.push_str(&format!(
                "printf '#!/bin/sh\\necho hook-{hook} >> {}\\n' > '{}'\nchmod +x '{}'\n",
                record.display(),
                path.display(),
                path.display()
            ));
        }
    }
    agent.push_str(
        "printf '*.txt filter=planted diff=planted merge=planted\\n*.bin filter=procfilter\\n' > .gitattributes\n\
         echo work > work.txt\necho data > data.bin\necho edit >> README.md\n",
    );
    let agent = p.script("planting-agent.sh", &agent);
    p.write_config(&ConfigBuilder::new(&agent).dirty_action(action));
    // Set after the config is committed (the harness's own git would run them). The
    // settings stand in the repository's config before the round: those an agent adds
    // during a round are reverted right after it (docs/security.md, "What runs later: the
    // watched tier"), so only settings already there when the round starts (an earlier
    // agent's under an older version, or the operator's own) reach the supervisor's git,
    // which must run none of them all the same.
    for (key, name) in PLANTED {
        p.git(&["config", key, &format!("{} {name}", recorder.display())]);
    }
    p.git(&["config", "filter.planted.required", "true"]);
    p.git(&["config", "core.hooksPath", &hooks_dir.display().to_string()]);
    p.spawn(&["round"])
        .wait(Duration::from_secs(60))
        .assert_code(0);
    let all = p.events_text();
    let ran = std::fs::read_to_string(&record).unwrap_or_default();
    assert_eq!(
        ran, "",
        "{what}: the supervisor's git ran planted programs: {all}"
    );
    let done = match action {
        "auto_commit" => "dirty_auto_committed",
        _ => "orphan_stashed",
    };
    assert_eq!(p.events_of(done).len(), 1, "{what}: {all}");
    // The settings there before the round are still the repository's: the supervisor
    // changed none of them.
    assert!(p
        .git(&["config", "--local", "--get", "core.fsmonitor"])
        .contains("fsmonitor"));
    // doctor and peek look at the tree too.
    p.run(&["doctor"]);
    p.run(&["peek"]).assert_code(0);
    let ran = std::fs::read_to_string(&record).unwrap_or_default();
    assert_eq!(ran, "", "{what}: doctor or peek ran planted programs");
}

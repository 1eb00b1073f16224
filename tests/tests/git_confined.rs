//! The supervisor's git runs no program the agent configured (issue 27, item 4;
//! docs/security.md "The supervisor's git"): the agent plants, in the repository's own
//! config, its `.gitattributes` and its hooks, every kind of setting that makes git run a
//! program — each one a recorder that notes its name when run — then leaves the tree dirty;
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
    for (key, name) in PLANTED {
        agent.push_str(&format!(
            "git config {key} '{} {name}'\n",
            recorder.display()
        ));
    }
    agent.push_str("git config filter.planted.required true\n");
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
    agent.push_str(&format!(
        "git config core.hooksPath '{}'\n",
        hooks_dir.display()
    ));
    agent.push_str(
        "printf '*.txt filter=planted diff=planted merge=planted\\n*.bin filter=procfilter\\n' > .gitattributes\n\
         echo work > work.txt\necho data > data.bin\necho edit >> README.md\n",
    );
    let agent = p.script("planting-agent.sh", &agent);
    p.write_config(&ConfigBuilder::new(&agent).dirty_action(action));
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
    // The planted settings are still the repository's: the supervisor changed no config.
    assert!(p
        .git(&["config", "--local", "--get", "core.fsmonitor"])
        .contains("fsmonitor"));
    // doctor and peek look at the tree too.
    p.run(&["doctor"]);
    p.run(&["peek"]).assert_code(0);
    let ran = std::fs::read_to_string(&record).unwrap_or_default();
    assert_eq!(ran, "", "{what}: doctor or peek ran planted programs");
}

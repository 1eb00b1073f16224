//! What one trivial `round` costs in processes (docs/performance.md, "Processes of one
//! round"), counted under `strace -f` on the real binaries: three git processes — the work
//! tree's discovery at boot, `git status` before and after the agent — once the state dir
//! keeps the last round's record of the repository's config (`git-config-seen.json`: a
//! config file whose bytes are unchanged is not listed again) and the last listing of the
//! whole config (`git-config-listing.json`, reused only while every file and variable it
//! came from is the same: otherwise `git config --list` runs at boot again); and the `plugin-host` launcher is executed for the agent only, its build read
//! from its file (`plugin-host/src/common/build_note.rs`), never by running it.

use agent_runner_e2e::{agent_runner_bin, ConfigBuilder, Project};
use std::process::Command;

/// The successful `execve` calls of one `round` under `strace -f`: one line each.
fn traced_round(p: &Project, name: &str) -> Vec<String> {
    let trace = p.tmp_dir().join(format!("{name}.strace"));
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-z", "-s", "256", "-e", "signal=none"])
        .args(["-e", "trace=execve,execveat", "-o"])
        .arg(&trace)
        .arg(agent_runner_bin())
        .arg("--config")
        .arg(p.config_path())
        .arg("round")
        .current_dir(p.dir())
        .env("HOME", p.home())
        .env_remove("XDG_STATE_HOME");
    p.run_with(cmd).assert_code(0);
    std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The git processes among `execs`: what each was asked, `-c` settings left out.
fn git_calls(execs: &[String]) -> Vec<String> {
    execs
        .iter()
        .filter(|l| l.contains("/git\", [\"git\""))
        .map(|l| {
            let argv = &l[l.find("[\"git\"").unwrap()..];
            let argv = &argv[..argv.find(']').unwrap_or(argv.len())];
            let words: Vec<&str> = argv
                .split("\", \"")
                .map(|w| w.trim_matches(|c| c == '[' || c == '"'))
                .collect();
            let mut asked = Vec::new();
            let mut i = 1;
            while i < words.len() {
                if words[i] == "-c" {
                    i += 2;
                    continue;
                }
                asked.push(words[i]);
                i += 1;
            }
            asked.join(" ")
        })
        .collect()
}

fn launcher_asked_for_its_build(execs: &[String]) -> usize {
    execs
        .iter()
        .filter(|l| l.contains("[\"plugin-host\", \"--build-id\"]"))
        .count()
}

/// Whether the whole config was listed (`git config --list` at boot).
fn lists_the_config(calls: &[String]) -> bool {
    calls.iter().any(|c| c.starts_with("config --list"))
}

fn lists_a_config_file(calls: &[String]) -> bool {
    calls.iter().any(|c| c.starts_with("config --file -"))
}

#[test]
fn a_trivial_round_runs_three_git_processes_and_never_runs_the_launcher_to_learn_its_build() {
    let p = Project::new();
    let agent = p.script("trivial-agent.sh", "#!/bin/sh\necho trivial\n");
    p.write_config(&ConfigBuilder::new(&agent).dirty_action("stash"));

    // The project's first round: no record of the config is kept yet, so its file is
    // listed once more (the control: the saving below is the record's).
    let first = git_calls(&traced_round(&p, "first"));
    assert!(lists_a_config_file(&first), "{first:#?}");
    assert_eq!(first.len(), 5, "{first:#?}");
    assert!(p.state_dir().join("git-config-seen.json").is_file());

    assert!(first.iter().any(|c| c.starts_with("config --list")));
    assert!(p.state_dir().join("git-config-listing.json").is_file());

    let execs = traced_round(&p, "second");
    let second = git_calls(&execs);
    assert_eq!(second.len(), 3, "{second:#?}");
    assert!(second[0].starts_with("rev-parse"), "{second:#?}");
    assert!(
        second[1..].iter().all(|c| c.contains(" status ")),
        "{second:#?}"
    );
    assert_eq!(launcher_asked_for_its_build(&execs), 0, "{execs:#?}");
    let launches = execs
        .iter()
        .filter(|l| l.contains("[\"plugin-host\", \"--plan-fd\""))
        .count();
    assert_eq!(launches, 1, "the agent's launch only: {execs:#?}");

    // The record is used only for the same bytes: a config the operator changed is listed
    // again, and so is every file when the record is gone.
    p.git(&["config", "bench.note", "changed between rounds"]);
    let changed = git_calls(&traced_round(&p, "changed"));
    assert!(lists_a_config_file(&changed), "{changed:#?}");
    assert!(lists_the_config(&changed), "{changed:#?}");
    let unchanged = git_calls(&traced_round(&p, "unchanged"));
    assert!(!lists_a_config_file(&unchanged), "{unchanged:#?}");
    assert!(!lists_the_config(&unchanged), "{unchanged:#?}");
    // The kept listing is stale when a file outside the repository changed: the operator's
    // global config (a key that names a program, which the overrides must see).
    std::fs::write(
        p.home().join(".gitconfig"),
        "[diff \"x\"]\n\ttextconv = \"cat\"\n",
    )
    .unwrap();
    let global = git_calls(&traced_round(&p, "global"));
    assert!(lists_the_config(&global), "{global:#?}");
    let again = git_calls(&traced_round(&p, "global-again"));
    assert!(!lists_the_config(&again), "{again:#?}");
    std::fs::remove_file(p.state_dir().join("git-config-listing.json")).unwrap();
    let listing_lost = git_calls(&traced_round(&p, "listing-lost"));
    assert!(lists_the_config(&listing_lost), "{listing_lost:#?}");
    std::fs::remove_file(p.state_dir().join("git-config-seen.json")).unwrap();
    let lost = git_calls(&traced_round(&p, "lost"));
    assert!(lists_a_config_file(&lost), "{lost:#?}");
}

/// A repository nested in the tree (a committed gitlink) costs no git process of its own
/// once the state dir keeps its config's record: it is found in process (the index read by
/// the supervisor), and its config is listed only when its bytes changed — by the agent
/// here, whose added key is then listed once after the round and once before the next.
#[test]
fn a_nested_repository_costs_a_git_process_only_when_its_config_changed() {
    let p = Project::new();
    let nested = p.dir().join("vendor/x");
    std::fs::create_dir_all(&nested).unwrap();
    for args in [
        &["init", "-q", "."][..],
        &[
            "-c",
            "user.name=n",
            "-c",
            "user.email=n@e2e.invalid",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
    ] {
        let out = Command::new("git")
            .args(args)
            .current_dir(&nested)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    p.git(&["add", "vendor/x"]);
    p.git(&["commit", "-qm", "a nested repository"]);
    let agent = p.script("trivial-agent.sh", "#!/bin/sh\necho trivial\n");
    p.write_config(&ConfigBuilder::new(&agent).dirty_action("stash"));
    let first = git_calls(&traced_round(&p, "first"));
    assert!(lists_a_config_file(&first), "{first:#?}");
    let second = git_calls(&traced_round(&p, "second"));
    assert_eq!(second.len(), 3, "{second:#?}");
    // The agent adds a key the watch leaves (not a program's): listed after its round.
    let agent = p.script(
        "note-agent.sh",
        "#!/bin/sh\ngit -C vendor/x config user.note changed\n",
    );
    p.write_config(&ConfigBuilder::new(&agent).dirty_action("stash"));
    let changed = git_calls(&traced_round(&p, "changed"));
    assert_eq!(
        changed
            .iter()
            .filter(|c| c.starts_with("config --file -"))
            .count(),
        1,
        "{changed:#?}"
    );
    let agent = p.script("trivial-agent.sh", "#!/bin/sh\necho trivial\n");
    p.write_config(&ConfigBuilder::new(&agent).dirty_action("stash"));
    let unchanged = git_calls(&traced_round(&p, "unchanged"));
    assert!(
        lists_a_config_file(&unchanged),
        "the record before it: {unchanged:#?}"
    );
    let steady = git_calls(&traced_round(&p, "steady"));
    assert_eq!(steady.len(), 3, "{steady:#?}");
}

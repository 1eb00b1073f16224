//! Session resume on real processes (docs/agent-clis.md, "Session resume"): an agent
//! named as a CLI that can resume (a shell script called `claude` or `codex`) gets the
//! words its CLI takes after `command`, and `AGENT_RUNNER_RESUME_FLAG` /
//! `AGENT_RUNNER_RESUME_SESSION_ID`; `serve` mints one id per phase and records
//! `session_resumed`; a failed round starts a new session; `round` alone appends nothing;
//! a static copy of the words is refused at load unless `session_resume = false`.
//! The real claude resuming its session is `real_clis.rs`.

use agent_runner_e2e::{ConfigBuilder, Project};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// An agent script called `name` appending, per round, one line to `$MARK`: its round,
/// the two variables and its arguments but the last (the prompt). It exits 1 in round
/// `$FAIL_ROUND`.
fn recording_agent(p: &Project, name: &str) -> PathBuf {
    let dir = p.tmp_dir().join(format!("bin-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(
        &path,
        "#!/bin/sh\n\
         n=$#; i=1; words=''\n\
         for a in \"$@\"; do [ $i -lt $n ] && words=\"$words $a\"; i=$((i+1)); done\n\
         echo \"$AGENT_RUNNER_ROUND_NUM|${AGENT_RUNNER_RESUME_FLAG-unset}|${AGENT_RUNNER_RESUME_SESSION_ID-unset}|${words# }\" >> \"$MARK\"\n\
         [ \"$AGENT_RUNNER_ROUND_NUM\" = \"${FAIL_ROUND:-0}\" ] && exit 1\n\
         exit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn config(p: &Project, agent: &std::path::Path, fail_round: u32) -> ConfigBuilder {
    ConfigBuilder::new(agent)
        .agent_env("MARK", &p.tmp_dir().join("mark.txt").display().to_string())
        .agent_env("FAIL_ROUND", &fail_round.to_string())
}

/// Each round's line: `[round, flag, id, args]`.
fn rounds(p: &Project) -> Vec<[String; 4]> {
    std::fs::read_to_string(p.tmp_dir().join("mark.txt"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let mut f = l.splitn(4, '|').map(str::to_owned);
            [(); 4].map(|_| f.next().unwrap_or_default())
        })
        .collect()
}

#[test]
fn serve_resumes_a_phases_session_and_a_failed_round_starts_a_new_one() {
    let p = Project::new();
    let agent = recording_agent(&p, "claude");
    p.write_config_text(&config(&p, &agent, 2).render());
    p.run(&["serve", "--max-rounds", "4"]).assert_code(0);
    let r = rounds(&p);
    assert_eq!(r.len(), 4, "{r:?}");
    let first = r[0][2].clone();
    assert_eq!(first.len(), 36, "a UUID: {r:?}");
    // Round 1 starts the session under serve's id, round 2 resumes it (and fails).
    assert_eq!(r[0][1], "--session-id");
    assert_eq!(r[0][3], format!("--session-id {first}"));
    assert_eq!(r[1][1..3], ["--resume".to_owned(), first.clone()]);
    assert_eq!(r[1][3], format!("--resume {first}"));
    // After the failed round: a new session, resumed by round 4.
    let second = r[2][2].clone();
    assert_ne!(second, first);
    assert_eq!(r[2][1], "--session-id");
    assert_eq!(r[3][1..3], ["--resume".to_owned(), second.clone()]);
    let resumed: Vec<(u64, String)> = p
        .events_of("session_resumed")
        .iter()
        .map(|e| {
            assert!(e.get("phase").is_none(), "no phases: {e}");
            (
                e["round_num"].as_u64().unwrap(),
                e["session_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(resumed, [(2, first), (4, second)]);
}

/// codex cannot be handed an id: nothing on the first round, `resume --last` after its
/// `exec [options]` on the next.
#[test]
fn codex_goes_on_with_its_last_session() {
    let p = Project::new();
    let agent = recording_agent(&p, "codex");
    let text = config(&p, &agent, 0).render().replacen(
        &format!("command = [\"{}\"]", agent.display()),
        &format!("command = [\"{}\", \"exec\", \"--json\"]", agent.display()),
        1,
    );
    p.write_config_text(&text);
    p.run(&["serve", "--max-rounds", "2"]).assert_code(0);
    let r = rounds(&p);
    assert_eq!(
        r[0][1..],
        ["unset", "unset", "exec --json"].map(String::from)
    );
    assert_eq!(r[1][1], "resume");
    assert_eq!(r[1][3], "exec --json resume --last");
    assert_eq!(p.events_of("session_resumed").len(), 1);
}

/// `round` alone (no serve to mint and keep an id) appends nothing, as the reference's
/// standalone round; nor does serve with `session_resume = false`.
#[test]
fn round_alone_never_resumes_and_the_switch_turns_it_off() {
    let p = Project::new();
    let agent = recording_agent(&p, "claude");
    p.write_config_text(&config(&p, &agent, 0).render());
    p.run(&["round"]).assert_code(0);
    p.run(&["round"]).assert_code(0);
    for line in &rounds(&p) {
        assert_eq!(line[1..], ["unset", "unset", ""].map(String::from));
    }
    assert!(p.events_of("session_resumed").is_empty());
    let off = config(&p, &agent, 0).render().replacen(
        "prompt_delivery = \"argv\"\n",
        "prompt_delivery = \"argv\"\nsession_resume = false\n",
        1,
    );
    p.write_config_text(&off);
    p.run(&["serve", "--max-rounds", "2"]).assert_code(0);
    let r = rounds(&p);
    for line in &r[2..] {
        assert_eq!(line[1..], ["unset", "unset", ""].map(String::from));
    }
}

/// The boot guard: a static copy of a word serve appends is refused (exit 78, naming the
/// key); with the switch off the same command loads.
#[test]
fn a_static_resume_flag_is_refused_unless_resume_is_off() {
    let p = Project::new();
    let agent = recording_agent(&p, "claude");
    let text = config(&p, &agent, 0).render().replacen(
        &format!("command = [\"{}\"]", agent.display()),
        &format!("command = [\"{}\", \"--resume\", \"abc\"]", agent.display()),
        1,
    );
    p.write_config_text(&text);
    let out = p.run(&["serve", "--max-rounds", "1"]);
    out.assert_code(78);
    assert!(
        out.stderr.contains("agent.command") && out.stderr.contains("\"--resume\""),
        "{out}"
    );
    assert!(rounds(&p).is_empty(), "no round ran");
    p.write_config_text(&text.replacen(
        "prompt_delivery = \"argv\"\n",
        "prompt_delivery = \"argv\"\nsession_resume = false\n",
        1,
    ));
    p.run(&["serve", "--max-rounds", "1"]).assert_code(0);
    assert_eq!(rounds(&p)[0][3], "--resume abc");
}

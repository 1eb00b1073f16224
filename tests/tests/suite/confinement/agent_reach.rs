//! What a confined agent can reach of the supervisor's own record (docs/security.md,
//! "Attacked again: codex's bypass, `upgrade`, what the agent reaches"): the memory-loop
//! counter (`mem-loops.json`, which ends `serve` for good at its third loop), the round
//! counter and the project lock live in the state dir, which must be out of the agent's
//! reach. With the default layout a hostile agent under `require` tries to forge the
//! counter and remove the lock, and is denied; a careless operator's `[runtime] state_dir`
//! inside the work tree (which the agent may write whole) is refused at boot (exit 78)
//! under `prefer` and `require`. Root and the unprivileged user `ar-e2e`.

use agent_runner_e2e::{ConfigBuilder, Operator, Project};

/// Tries to forge the memory-loop counter, reset the round counter and remove the lock in
/// `$STATE_DIR`; logs each outcome to `attempts.log` in the tree.
const FORGER: &str = r#"#!/bin/sh
try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name: succeeded" >> attempts.log; else echo "$name: denied" >> attempts.log; fi; }
try forge_mem_loops sh -c 'echo "{\"loops\":[]}" > "$STATE_DIR/mem-loops.json"'
try reset_round_counter sh -c 'echo "{}" > "$STATE_DIR/state.json"'
try remove_lock rm "$STATE_DIR/agent-runner.lock"
exit 0
"#;

fn forger_config(p: &Project, mode: &str, state_dir: Option<&str>) -> String {
    let agent = p.script("agent/forger.sh", FORGER);
    let state = state_dir.map_or(p.state_dir(), |s| p.dir().join(s.trim_start_matches("./")));
    let mut text = ConfigBuilder::new(&agent)
        .dirty_action("auto_commit")
        .agent_env("STATE_DIR", state.to_str().unwrap())
        .render()
        .replacen(
            "[runtime]\n",
            &format!("[agent.sandbox]\nmode = \"{mode}\"\n\n[runtime]\n"),
            1,
        );
    if let Some(dir) = state_dir {
        text = text.replacen(
            "[runtime]\n",
            &format!("[runtime]\nstate_dir = \"{dir}\"\n"),
            1,
        );
    }
    text
}

fn the_state_dir_is_out_of_the_confined_agent_s_reach(operator: Operator) {
    // The default layout: every attempt denied, the record intact.
    let p = Project::new_as(operator);
    p.write_config_text(&forger_config(&p, "require", None));
    let out = p.run(&["round"]);
    out.assert_code(0);
    let log = std::fs::read_to_string(p.dir().join("attempts.log"))
        .unwrap_or_else(|e| panic!("the agent did not run ({e}): {out}"));
    for name in ["forge_mem_loops", "reset_round_counter", "remove_lock"] {
        assert!(log.contains(&format!("{name}: denied")), "{name}: {log}");
    }
    assert!(p.state_dir().join("agent-runner.lock").exists());
    assert!(!p.state_dir().join("mem-loops.json").exists());

    // A careless operator's state dir inside the tree: refused before any agent runs,
    // under prefer and require, by serve, round and doctor; under off it boots.
    for mode in ["prefer", "require"] {
        let p = Project::new_as(operator);
        p.write_config_text(&forger_config(&p, mode, Some("./.ar-state")));
        for verb in [&["round"][..], &["serve", "--max-rounds", "1"], &["doctor"]] {
            let out = p.run(verb);
            out.assert_code(78);
            // doctor tells on stdout, serve and round on stderr.
            let told = format!("{}{}", out.stdout, out.stderr);
            assert!(
                told.contains("runtime.state_dir") && told.contains("work tree"),
                "{mode} {verb:?}: {out}"
            );
        }
        assert!(
            !p.dir().join("attempts.log").exists(),
            "{mode}: the agent ran"
        );
    }
    let p = Project::new_as(operator);
    p.write_config_text(&forger_config(&p, "off", Some("./.ar-state")));
    p.run(&["round"]).assert_code(0);
    let log = std::fs::read_to_string(p.dir().join("attempts.log")).unwrap();
    assert!(log.contains("forge_mem_loops: succeeded"), "{log}");
}

#[test]
fn the_state_dir_is_out_of_the_confined_agent_s_reach_as_root() {
    the_state_dir_is_out_of_the_confined_agent_s_reach(Operator::Root);
}

#[test]
fn the_state_dir_is_out_of_the_confined_agent_s_reach_as_unprivileged_user() {
    the_state_dir_is_out_of_the_confined_agent_s_reach(Operator::Unprivileged);
}

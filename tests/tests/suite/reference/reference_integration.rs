//! The facts the reference system's integration tests check (cli-agent-runner 0.3.2,
//! `tests/integration/` of its source distribution) that show from outside the process —
//! files, events, exit codes, stdout — checked here against our binary, in our own tests
//! (docs/reference-system.md, "The compatibility suite"). Each test names the reference
//! test file whose facts it checks; what we check differently, and why, is in the same
//! section's list.

use agent_runner_e2e::serde_json::Value;
use agent_runner_e2e::{ConfigBuilder, Project};
use std::time::Duration;

/// An agent that does nothing but print a line; from round `done_at` on, it also writes
/// `$AGENT_RUNNER_LOG_DIR/.agent-done` with `reason`.
fn done_agent(p: &Project, done_at: u64, reason: &str) -> ConfigBuilder {
    let agent = p.script(
        "agent/done-agent.sh",
        &format!(
            "#!/bin/sh\necho \"round $AGENT_RUNNER_ROUND_NUM\"\n\
             if [ \"$AGENT_RUNNER_ROUND_NUM\" -ge {done_at} ]; then\n\
             printf '%s' '{reason}' > \"$AGENT_RUNNER_LOG_DIR/.agent-done\"\nfi\n"
        ),
    );
    ConfigBuilder::new(&agent).dirty_action("ignore")
}

/// `test_serve_loop.py` (the self-termination sentinel, its runbook's contract): an agent
/// that writes `.agent-done` ends serve before the next round with exit 0 and
/// `agent_self_terminated` carrying the file's text; one left by an earlier run does not
/// stop a fresh serve.
#[test]
fn the_agents_done_file_ends_serve_with_exit_0_and_a_stale_one_is_cleared() {
    let p = Project::new();
    p.write_config(&done_agent(&p, 2, "converged: every check green"));
    std::fs::create_dir_all(p.log_dir()).unwrap();
    std::fs::write(p.log_dir().join(".agent-done"), "left by yesterday's run").unwrap();
    let out = p
        .spawn(&["serve", "--max-rounds", "5"])
        .wait(Duration::from_secs(60));
    out.assert_code(0);
    assert_eq!(p.events_of("round_end").len(), 2, "{}", p.events_text());
    let ended = p.events_of("agent_self_terminated");
    assert_eq!(ended.len(), 1, "{}", p.events_text());
    assert_eq!(ended[0]["reason"], "converged: every check green");
    assert_eq!(ended[0]["rounds_completed"], 2);
    assert!(
        p.events_of("max_rounds_reached").is_empty(),
        "{}",
        p.events_text()
    );
    // A reason is capped at 200 characters.
    let p = Project::new();
    let long = "x".repeat(300);
    p.write_config(&done_agent(&p, 1, &long));
    p.spawn(&["serve"])
        .wait(Duration::from_secs(60))
        .assert_code(0);
    let ended: Vec<Value> = p.events_of("agent_self_terminated");
    assert_eq!(ended[0]["reason"], "x".repeat(200), "{}", p.events_text());
    p.assert_events_whole();
}

/// The reference's warnings `doctor` gives, each where an operator switching from it would
/// trip (docs/reference-system.md, "Deviations"): none for a plain project; then a whole
/// unit file left by the reference's install, a live `serve.pid` that is not our lock
/// holder, a seeded metrics file and `transient_error_action = "stop"`, each named with
/// its deviation's number.
#[test]
fn doctor_names_the_deviations_an_operator_would_trip_on() {
    let deviations = |p: &Project, config_home: &std::path::Path| -> Vec<String> {
        let out = p.run_env(
            &["doctor", "--json"],
            &[("XDG_CONFIG_HOME", &config_home.display().to_string())],
        );
        let doc: Value = agent_runner_e2e::serde_json::from_str(out.stdout.trim())
            .unwrap_or_else(|e| panic!("doctor --json: {e}: {out}"));
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["name"] == "reference_deviation")
            .map(|w| {
                assert!(!w["how_to_fix"].as_str().unwrap().is_empty(), "{w}");
                w["reason"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    let p = Project::new();
    let config_home = p.tmp_dir().join("config");
    p.write_config(&p.config().dirty_action("ignore"));
    assert_eq!(deviations(&p, &config_home), Vec::<String>::new());

    let unit_dir = config_home.join("systemd/user");
    std::fs::create_dir_all(&unit_dir).unwrap();
    std::fs::write(
        unit_dir.join("agent-runner@project.service"),
        "[Service]\nExecStart=/usr/bin/agent-runner serve\n",
    )
    .unwrap();
    let mut stranger = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    std::fs::create_dir_all(p.log_dir()).unwrap();
    std::fs::write(
        p.log_dir().join("serve.pid"),
        format!("{}\n", stranger.id()),
    )
    .unwrap();
    std::fs::write(p.log_dir().join("metrics-2026-12.jsonl"), "{}\n").unwrap();
    let text = p.config().dirty_action("ignore").render().replace(
        "restart_delay_s = 1\n",
        "restart_delay_s = 1\ntransient_error_action = \"stop\"\n",
    );
    p.write_config_text(&text);
    let found = deviations(&p, &config_home);
    let _ = stranger.kill();
    let _ = stranger.wait();
    assert_eq!(found.len(), 4, "{found:#?}");
    for (number, words) in [
        (1, "agent-runner@project.service"),
        (4, &format!("process {}", stranger.id())),
        (2, "metrics-*.jsonl"),
        (5, "exit 75"),
    ] {
        assert!(
            found
                .iter()
                .any(|r| r.contains(words) && r.ends_with(&format!("\"Deviations\", {number})"))),
            "deviation {number} ({words}) not named: {found:#?}"
        );
    }
    // A pid file whose process is gone names nothing.
    assert_eq!(deviations(&p, &config_home).len(), 3);
}

/// `config` with `keys` (TOML lines) added to its `[runtime]` table.
fn with_runtime(config: &ConfigBuilder, keys: &str) -> String {
    let text = config.render().replace(
        "restart_delay_s = 1\n",
        &format!("restart_delay_s = 1\n{keys}\n"),
    );
    assert!(text.contains(keys), "{text}");
    text
}

/// An agent that records its environment's `AGENT_RUNNER_*` and `MY_FLAG` variables, one
/// line per round, in `<tmp>/env.log`, then exits with `$AR_EXIT` (0 by default).
fn recording_agent(p: &Project) -> ConfigBuilder {
    let log = p.tmp_dir().join("env.log");
    let agent = p.script(
        "agent/recording-agent.sh",
        &format!(
            "#!/bin/sh\necho \"round=$AGENT_RUNNER_ROUND_NUM fresh=$AGENT_RUNNER_FRESH_EYES phase=$AGENT_RUNNER_PHASE flag=$MY_FLAG\" >> '{}'\nexit \"${{AR_EXIT:-0}}\"\n",
            log.display()
        ),
    );
    ConfigBuilder::new(&agent).dirty_action("ignore")
}

fn recorded(p: &Project) -> Vec<String> {
    std::fs::read_to_string(p.tmp_dir().join("env.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `test_bounded_run.py`: `[runtime] max_rounds` ends serve with exit 0 and
/// `max_rounds_reached{rounds_completed, max_rounds}`; `--max-rounds` wins over the
/// config; the stop file ends serve with `stop_file_detected{stop_file, content}`.
#[test]
fn max_rounds_from_the_config_or_the_flag_and_the_stop_file_end_serve_with_exit_0() {
    let p = Project::new();
    p.write_config_text(&with_runtime(&recording_agent(&p), "max_rounds = 3"));
    p.spawn(&["serve"])
        .wait(Duration::from_secs(60))
        .assert_code(0);
    let reached = p.events_of("max_rounds_reached");
    assert_eq!(reached.len(), 1, "{}", p.events_text());
    assert_eq!(reached[0]["rounds_completed"], 3);
    assert_eq!(reached[0]["max_rounds"], 3);

    let p = Project::new();
    p.write_config_text(&with_runtime(&recording_agent(&p), "max_rounds = 5"));
    p.spawn(&["serve", "--max-rounds", "2"])
        .wait(Duration::from_secs(60))
        .assert_code(0);
    let reached = p.events_of("max_rounds_reached");
    assert_eq!(reached.len(), 1, "{}", p.events_text());
    assert_eq!(reached[0]["rounds_completed"], 2);
    assert_eq!(reached[0]["max_rounds"], 2);
    assert_eq!(recorded(&p).len(), 2);

    let p = Project::new();
    let stop = p.tmp_dir().join("STOP");
    std::fs::write(&stop, "stop test").unwrap();
    p.write_config_text(&with_runtime(
        &recording_agent(&p),
        &format!("stop_file = {:?}", stop.display().to_string()),
    ));
    p.spawn(&["serve", "--max-rounds", "5"])
        .wait(Duration::from_secs(60))
        .assert_code(0);
    let detected = p.events_of("stop_file_detected");
    assert_eq!(detected.len(), 1, "{}", p.events_text());
    assert_eq!(detected[0]["content"], "stop test");
    assert_eq!(detected[0]["stop_file"], stop.display().to_string());
    assert!(recorded(&p).is_empty(), "a round ran: {:?}", recorded(&p));
}

/// `test_serve_loop.py`: `serve --once` runs one round, exits 0 and leaves
/// `status.json` with `round_num` 1; a serve that wrote `serve.pid` exits 0 on SIGTERM.
/// (Its third check, overlapping phase windows refused with 78 before any round, is
/// `reference_config.rs`'s.)
#[test]
fn serve_once_leaves_status_json_and_sigterm_ends_serve_with_exit_0() {
    let p = Project::new();
    p.write_config(&recording_agent(&p));
    p.spawn(&["serve", "--once"])
        .wait(Duration::from_secs(60))
        .assert_code(0);
    let status: Value = agent_runner_e2e::serde_json::from_str(
        &std::fs::read_to_string(p.log_dir().join("status.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(status["round_num"], 1, "{status}");
    assert_eq!(recorded(&p).len(), 1);

    let p = Project::new();
    p.write_config(&recording_agent(&p).restart_delay_s(30));
    let serve = p.spawn(&["serve"]);
    agent_runner_e2e::wait_until("serve.pid", Duration::from_secs(30), || {
        p.log_dir().join("serve.pid").exists().then_some(())
    });
    serve.signal(15);
    serve.wait(Duration::from_secs(30)).assert_code(0);
    assert!(!p.log_dir().join("serve.pid").exists());
}

/// `test_run_one_round_with_fake_agent.py`, its checks visible from outside: a clean round
/// leaves `status.json` with `last_exit_code` 0; a dirty tree is stashed and the stash is
/// named by its SHA; a hung agent is killed at its budget (`round_timeout_kill`, `round`
/// exits 0) well within 30 s; a crashing agent's code is recorded as it is; a phase's
/// budget is the one the agent is spawned with; `[agent.env]` reaches the agent; a
/// `round` started from another directory with a relative `--config` works.
#[test]
fn one_round_status_stash_budget_crash_phase_budget_env_and_another_cwd() {
    let p = Project::new();
    p.write_config(&recording_agent(&p).agent_env("MY_FLAG", "passed-through"));
    p.run(&["round"]).assert_code(0);
    let status: Value = agent_runner_e2e::serde_json::from_str(
        &std::fs::read_to_string(p.log_dir().join("status.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(status["last_exit_code"], 0, "{status}");
    assert!(
        recorded(&p)[0].contains("flag=passed-through"),
        "{:?}",
        recorded(&p)
    );

    // The demo agent leaves the tree dirty: stashed, by SHA.
    let p = Project::new();
    p.write_config(&p.config().dirty_action("stash"));
    p.run(&["round"]).assert_code(0);
    let stashed = p.events_of("orphan_stashed");
    assert_eq!(stashed.len(), 1, "{}", p.events_text());
    let sha = stashed[0]["ref"].as_str().unwrap();
    assert!(
        sha.len() == 40 && sha.chars().all(|c| c.is_ascii_hexdigit()),
        "{sha}"
    );

    let p = Project::new();
    let hang = p.script("agent/hang.sh", "#!/bin/sh\nexec sleep 300\n");
    p.write_config(&ConfigBuilder::new(&hang).round_budget_s(2));
    let started = std::time::Instant::now();
    p.run(&["round"]).assert_code(0);
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(
        p.events_of("round_timeout_kill").len(),
        1,
        "{}",
        p.events_text()
    );
    assert_eq!(p.events_of("agent_exit")[0]["timed_out"], true);

    let p = Project::new();
    p.write_config(&recording_agent(&p).agent_env("AR_EXIT", "137"));
    p.run(&["round"]).assert_code(1);
    assert_eq!(p.events_of("agent_exit")[0]["exit_code"], 137);

    let p = Project::new();
    let text = recording_agent(&p).render()
        + "\n[phases]\nlist = [\"deep\"]\n[phases.deep]\nround_budget_s = 3600\n";
    p.write_config_text(&text);
    p.run(&["round", "--phase", "deep"]).assert_code(0);
    assert_eq!(
        p.events_of("agent_spawn")[0]["timeout_s"],
        3600,
        "{}",
        p.events_text()
    );
    assert!(recorded(&p)[0].contains("phase=deep"), "{:?}", recorded(&p));

    let p = Project::new();
    p.write_config(&recording_agent(&p));
    let mut cmd = p.command(&["round"]);
    // `--config agent-runner.toml` relative to a directory beside the project.
    let beside = p.tmp_dir().join("elsewhere");
    std::fs::create_dir_all(&beside).unwrap();
    let mut args: Vec<std::ffi::OsString> = cmd.get_args().map(|a| a.to_owned()).collect();
    args[1] = "../project/agent-runner.toml".into();
    let mut relative = std::process::Command::new(cmd.get_program());
    relative.args(&args).current_dir(&beside);
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => relative.env(key, value),
            None => relative.env_remove(key),
        };
    }
    cmd = relative;
    let out = p.run_with(cmd);
    out.assert_code(0);
    assert_eq!(recorded(&p).len(), 1, "{out}");
}

/// `test_fresh_eyes_signal.py`: with `fresh_eyes_every_n = 2`, round 2 of 3 is a
/// fresh-eyes round (`fresh_eyes_round_triggered{round_num 2, every_n 2}`,
/// `AGENT_RUNNER_FRESH_EYES` 1, 0 otherwise); without the key no such event and always 0.
#[test]
fn fresh_eyes_every_second_round_and_none_without_the_key() {
    let p = Project::new();
    p.write_config_text(&with_runtime(
        &recording_agent(&p),
        "fresh_eyes_every_n = 2",
    ));
    p.spawn(&["serve", "--max-rounds", "3"])
        .wait(Duration::from_secs(60))
        .assert_code(0);
    let fresh = p.events_of("fresh_eyes_round_triggered");
    assert_eq!(fresh.len(), 1, "{}", p.events_text());
    assert_eq!(fresh[0]["round_num"], 2);
    assert_eq!(fresh[0]["every_n"], 2);
    let seen: Vec<bool> = recorded(&p).iter().map(|l| l.contains("fresh=1")).collect();
    assert_eq!(seen, [false, true, false]);

    let p = Project::new();
    p.write_config(&recording_agent(&p));
    p.spawn(&["serve", "--max-rounds", "2"])
        .wait(Duration::from_secs(60))
        .assert_code(0);
    assert!(p.events_of("fresh_eyes_round_triggered").is_empty());
    assert!(
        recorded(&p).iter().all(|l| l.contains("fresh=0")),
        "{:?}",
        recorded(&p)
    );
}

/// `test_substrate_fingerprint.py`: one `round_substrate_before` and one `_after` per
/// round; `paths_hash` null without `substrate_fingerprint_paths`, 64 hex digits with
/// them; `git_head` a commit, and null in a directory without git (its first check).
#[test]
fn substrate_events_with_and_without_fingerprint_paths() {
    let p = Project::new();
    p.write_config(&recording_agent(&p));
    std::fs::rename(p.dir().join(".git"), p.tmp_dir().join("moved-git")).unwrap();
    p.spawn(&["serve", "--once"])
        .wait(Duration::from_secs(60))
        .assert_code(0);
    for kind in ["round_substrate_before", "round_substrate_after"] {
        let events = p.events_of(kind);
        assert_eq!(events.len(), 1, "{}", p.events_text());
        assert!(events[0]["git_head"].is_null(), "{}", events[0]);
    }

    let p = Project::new();
    p.write_config(&recording_agent(&p));
    p.spawn(&["serve", "--once"])
        .wait(Duration::from_secs(60))
        .assert_code(0);
    let before = p.events_of("round_substrate_before");
    assert_eq!(before.len(), 1, "{}", p.events_text());
    assert_eq!(p.events_of("round_substrate_after").len(), 1);
    assert!(before[0]["paths_hash"].is_null(), "{}", before[0]);
    assert!(
        before[0]["git_head"].as_str().unwrap().len() >= 7,
        "{}",
        before[0]
    );

    let p = Project::new();
    p.write("tracked.py", "x = 1\n");
    p.write_config_text(&with_runtime(
        &recording_agent(&p),
        "substrate_fingerprint_paths = [\"*.py\"]",
    ));
    p.spawn(&["serve", "--once"])
        .wait(Duration::from_secs(60))
        .assert_code(0);
    let before = p.events_of("round_substrate_before");
    let hash = before[0]["paths_hash"].as_str().unwrap();
    assert!(
        hash.len() == 64 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{hash}"
    );
}

/// An agent that writes its arguments and what it reads on stdin to `<tmp>/seen.txt`.
fn echoing_agent(p: &Project) -> ConfigBuilder {
    let seen = p.tmp_dir().join("seen.txt");
    let agent = p.script(
        "agent/echo.sh",
        &format!(
            "#!/bin/sh\n{{ echo \"ARGV:$*\"; printf 'STDIN:'; cat; echo; }} > '{}'\n",
            seen.display()
        ),
    );
    ConfigBuilder::new(&agent).dirty_action("ignore")
}

/// `config` delivering the prompt on stdin behind `template` instead of in argv.
fn on_stdin(config: &ConfigBuilder, template: &str) -> String {
    let text = config
        .render()
        .replace(
            "prompt_arg_template = [\"{prompt}\"]\n",
            &format!("prompt_arg_template = {template}\n"),
        )
        .replace("prompt_delivery = \"argv\"", "prompt_delivery = \"stdin\"");
    assert!(text.contains("\"stdin\""), "{text}");
    text
}

/// `test_prompt_delivery_stdin.py`: with stdin delivery the prompt reaches the agent on
/// stdin and not in its argv, a prompt larger than a pipe's buffer included; with argv
/// delivery it is in argv; a stdin template holding `{prompt}` is refused (exit 78), so
/// the prompt never lands in argv.
#[test]
fn the_prompt_goes_on_stdin_or_in_argv_as_configured() {
    let seen = |p: &Project| std::fs::read_to_string(p.tmp_dir().join("seen.txt")).unwrap();
    // What the agent wrote: `ARGV:<args>` (the prompt spans lines), then `STDIN:<stdin>`.
    let argv = |text: &str| text.split("STDIN:").next().unwrap_or_default().to_owned();
    let stdin = |text: &str| text.split_once("STDIN:").unwrap_or_default().1.to_owned();
    let p = Project::new();
    p.write("prompts/main.md", "MARKER-7f3a do the work\n");
    p.git(&["commit", "-qam", "prompt"]);
    p.write_config_text(&on_stdin(&echoing_agent(&p), "[\"-p\"]"));
    p.run(&["round"]).assert_code(0);
    let text = seen(&p);
    assert!(!argv(&text).contains("MARKER-7f3a"), "{text}");
    assert!(argv(&text).starts_with("ARGV:-p"), "{text}");
    assert!(stdin(&text).contains("MARKER-7f3a"), "{text}");

    let p = Project::new();
    let big = format!("{}\nMARKER-END\n", "x".repeat(256 * 1024));
    p.write("prompts/main.md", &big);
    p.git(&["commit", "-qam", "big prompt"]);
    p.write_config_text(&on_stdin(&echoing_agent(&p), "[\"-p\"]"));
    p.run(&["round"]).assert_code(0);
    assert!(
        stdin(&seen(&p)).contains("MARKER-END"),
        "the large prompt was cut"
    );
    assert_eq!(p.events_of("agent_exit")[0]["timed_out"], false);

    let p = Project::new();
    p.write("prompts/main.md", "MARKER-7f3a do the work\n");
    p.git(&["commit", "-qam", "prompt"]);
    p.write_config(&echoing_agent(&p));
    p.run(&["round"]).assert_code(0);
    assert!(argv(&seen(&p)).contains("MARKER-7f3a"), "{}", seen(&p));
    assert!(!stdin(&seen(&p)).contains("MARKER-7f3a"), "{}", seen(&p));

    let p = Project::new();
    p.write_config_text(&on_stdin(&echoing_agent(&p), "[\"-p\", \"{prompt}\"]"));
    let out = p.run(&["round"]);
    out.assert_code(78);
    assert!(out.stderr.contains("prompt_arg_template"), "{out}");
    assert!(!p.tmp_dir().join("seen.txt").exists());
}

/// `test_dirty_handler_seam.py`: `dirty_action = "auto_commit"` commits the round's dirt
/// (`dirty_auto_committed`, subject `agent-runner auto-commit: R1 …`).
#[test]
fn auto_commit_records_dirty_auto_committed() {
    let p = Project::new();
    p.write_config(&p.config().dirty_action("auto_commit"));
    p.run(&["round"]).assert_code(0);
    assert_eq!(
        p.events_of("dirty_auto_committed").len(),
        1,
        "{}",
        p.events_text()
    );
    assert!(
        p.log_subjects()
            .iter()
            .any(|s| s.starts_with("agent-runner auto-commit: R1")),
        "{:?}",
        p.log_subjects()
    );
}

/// `test_scaffold_presets.py`, the preset-specific fields (`init.rs` checks every preset
/// loads, the commit and `--force`): aider runs `aider` with no `[agent.env]`; claude
/// turns its auto-updater off through `[agent.env]`; gemini runs `gemini --yolo`; each
/// names its agent after the preset.
#[test]
fn init_presets_carry_their_clis_fields() {
    let p = Project::without_prompt();
    p.run(&["init", "--preset", "aider", "--no-commit"])
        .assert_code(0);
    let aider = std::fs::read_to_string(p.config_path()).unwrap();
    assert!(aider.contains("name = \"aider\""), "{aider}");
    assert!(aider.contains("command = [\"aider\""), "{aider}");
    assert!(!aider.contains("[agent.env]"), "{aider}");

    let p = Project::without_prompt();
    p.run(&["init", "--preset", "claude", "--no-commit"])
        .assert_code(0);
    let claude = std::fs::read_to_string(p.config_path()).unwrap();
    let env = claude
        .split("[agent.env]")
        .nth(1)
        .unwrap_or_else(|| panic!("no [agent.env]: {claude}"));
    assert!(
        env.lines()
            .take_while(|l| !l.starts_with('['))
            .any(|l| l.replace(' ', "") == "DISABLE_AUTOUPDATER=\"1\""),
        "{claude}"
    );

    let p = Project::without_prompt();
    p.run(&["init", "--preset", "gemini", "--no-commit"])
        .assert_code(0);
    let gemini = std::fs::read_to_string(p.config_path()).unwrap();
    assert!(gemini.contains("name = \"gemini\""), "{gemini}");
    let command = gemini.lines().find(|l| l.starts_with("command =")).unwrap();
    assert!(
        command.contains("\"gemini\"") && command.contains("\"--yolo\""),
        "{command}"
    );
}

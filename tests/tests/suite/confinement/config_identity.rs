//! A config reload applies a change only where the agent could not have made it (issue 36,
//! item 5; docs/security.md "The supervisor is not the agent's deputy"): the agent,
//! unconfined (no `[agent.sandbox]`: nothing but the reload's own rule stands in its way),
//! saves the in-tree config the way an editor does — a new file renamed over the old — and
//! `serve` records it as `config_untrusted` and keeps running the operator's config. The
//! control: the same rename-save made by the operator between rounds applies at the next
//! round (`config_reloaded`). As root and as the unprivileged user. (`dirty_action =
//! "ignore"`: a stash would take the agent's change to the tracked config away first.)

use std::time::Duration;

use agent_runner_e2e::{wait_until, ConfigBuilder, Operator, Project};

/// A rename-save of `config` turning `restart_delay_s = 1` into `= 2`.
fn rename_save(config: &std::path::Path) -> String {
    let c = config.display();
    format!("sed 's/^restart_delay_s = 1$/restart_delay_s = 2/' '{c}' > '{c}.new' && mv '{c}.new' '{c}'\n")
}

#[test]
fn a_config_the_agent_saved_is_untrusted_and_the_operators_applies() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        // The agent's save, during its round.
        let p = Project::new_as(operator);
        let agent = p.script(
            "saving-agent.sh",
            &format!("#!/bin/sh\nset -e\n{}", rename_save(&p.config_path())),
        );
        p.write_config(&ConfigBuilder::new(&agent).dirty_action("ignore"));
        p.spawn(&["serve", "--max-rounds", "2"])
            .wait(Duration::from_secs(60))
            .assert_code(0);
        let all = p.events_text();
        let what = format!("{operator:?} agent: {all}");
        let untrusted = p.events_of("config_untrusted");
        // Each round's save is its own attempt, each recorded.
        assert!(!untrusted.is_empty(), "{what}");
        assert!(
            untrusted[0]["reason"]
                .as_str()
                .unwrap()
                .contains("while the agent ran"),
            "{what}"
        );
        assert!(p.events_of("config_reloaded").is_empty(), "{what}");
        assert!(std::fs::read_to_string(p.config_path())
            .unwrap()
            .contains("restart_delay_s = 2"));

        // The control: the operator's save, between rounds, applies.
        let p = Project::new_as(operator);
        let agent = p.script("quiet-agent.sh", "#!/bin/sh\nsleep 1\n");
        p.write_config(&ConfigBuilder::new(&agent).restart_delay_s(3));
        let text = std::fs::read_to_string(p.config_path()).unwrap();
        let serve = p.spawn(&["serve", "--max-rounds", "2"]);
        wait_until("round 1 ends", Duration::from_secs(30), || {
            (!p.events_of("round_end").is_empty()).then_some(())
        });
        // Past the 20 ms the reload allows for the kernel's clock granularity around the
        // agent's run (`config_follow::within`): a save inside it counts as the agent's.
        std::thread::sleep(Duration::from_millis(100));
        let new = p.config_path().with_extension("toml.new");
        std::fs::write(
            &new,
            text.replace("restart_delay_s = 3", "restart_delay_s = 2"),
        )
        .unwrap();
        std::fs::rename(&new, p.config_path()).unwrap();
        serve.wait(Duration::from_secs(60)).assert_code(0);
        let all = p.events_text();
        let what = format!("{operator:?} operator: {all}");
        assert_eq!(p.events_of("config_reloaded").len(), 1, "{what}");
        assert!(p.events_of("config_untrusted").is_empty(), "{what}");
    }
}

/// `~/.ssh/id_rsa` in the project's home holding `text`, readable to the supervisor's user
/// (not to the confined agent); its path.
fn readable_key(p: &Project, text: &str) -> std::path::PathBuf {
    let key = p.home().join(".ssh/id_rsa");
    std::fs::create_dir_all(key.parent().unwrap()).unwrap();
    std::fs::write(&key, text).unwrap();
    let _ = std::process::Command::new("chmod")
        .arg("a+r")
        .arg(&key)
        .status();
    key
}

/// `~/.config/autostart` in the project's home, the home the `operator`'s: where a log dir
/// link of the agent's would have the supervisor write.
fn home_dir_of_the_operator(p: &Project, operator: Operator) -> std::path::PathBuf {
    let target = p.home().join(".config/autostart");
    std::fs::create_dir_all(&target).unwrap();
    if let Some(user) = operator.user() {
        user.own(p.home());
    }
    target
}

/// An agent that keeps the prompt it was given (`seen-R<n>` in the tree) and, in round 1,
/// replaces `prompts/main.md` with a link to `target`.
fn linking_agent(p: &Project, target: &std::path::Path) -> std::path::PathBuf {
    p.script(
        "linking-agent.sh",
        &format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > \"seen-R$AGENT_RUNNER_ROUND_NUM\"\n\
             if [ \"$AGENT_RUNNER_ROUND_NUM\" = 1 ]; then ln -sf '{}' prompts/main.md; fi\n",
            target.display()
        ),
    )
}

/// Item 4 (docs/security.md, the table's read row): a prompt file the agent replaced by a
/// link to the operator's key is refused at the next round, naming the file; the key never
/// reaches the agent. The control: the same link made by the operator before boot is
/// followed (its target's text is the prompt), so the test can fail. As root and as the
/// unprivileged user.
#[test]
fn a_prompt_link_the_agent_made_is_refused_one_the_operator_had_is_followed() {
    const KEY: &str = "PLANTED-SSH-KEY";
    for operator in [Operator::Root, Operator::Unprivileged] {
        let p = Project::new_as(operator);
        let key = readable_key(&p, KEY);
        let agent = linking_agent(&p, &key);
        p.write_config(&ConfigBuilder::new(&agent).dirty_action("ignore"));
        let _ = p
            .spawn(&["serve", "--max-rounds", "2"])
            .wait(Duration::from_secs(60));
        let all = p.events_text();
        let what = format!("{operator:?}: {all}");
        assert!(p.dir().join("seen-R1").exists(), "{what}");
        for round in ["seen-R1", "seen-R2"] {
            let seen = std::fs::read_to_string(p.dir().join(round)).unwrap_or_default();
            assert!(
                !seen.contains(KEY),
                "{what}: the key reached the agent in {round}"
            );
        }
        assert!(
            all.contains("prompts/main.md now leads to") && all.contains("never followed"),
            "{what}"
        );

        // The control: the operator's link, there at boot, is followed.
        let p = Project::new_as(operator);
        let shared = p.tmp_dir().join("shared-prompt.md");
        std::fs::write(&shared, format!("shared prompt {KEY}")).unwrap();
        let _ = std::process::Command::new("chmod")
            .arg("a+r")
            .arg(&shared)
            .status();
        let main = p.dir().join("prompts/main.md");
        std::fs::remove_file(&main).unwrap();
        std::os::unix::fs::symlink(&shared, &main).unwrap();
        let agent = linking_agent(&p, &shared);
        p.write_config(&ConfigBuilder::new(&agent).dirty_action("ignore"));
        p.spawn(&["serve", "--max-rounds", "2"])
            .wait(Duration::from_secs(60))
            .assert_code(0);
        let seen = std::fs::read_to_string(p.dir().join("seen-R2")).unwrap_or_default();
        assert!(seen.contains(KEY), "{operator:?} control: {seen}");
    }
}

/// Item 5 across boots: under `mode = "require"` the operator's `--config` is a link in the
/// tree (`agent-runner.toml -> conf/real.toml`); the agent re-points it at a config of its
/// own (`auto_commit` where the operator's says `ignore`). The next `agent-runner round`
/// (a boot) refuses the config as untrusted (exit 78, naming the round), and every boot
/// after it while nobody saved it; once the operator made the link again, rounds run. The
/// control: the operator's record of what the agent changed removed between the boots
/// loads the agent's config (its `auto_commit` commits). As root and as the unprivileged
/// user.
#[test]
fn a_config_link_the_agent_repointed_is_untrusted_at_the_next_boots_until_saved() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        for control in [false, true] {
            let what = format!("{operator:?}, control {control}");
            let p = Project::new_as(operator);
            let agent = p.script(
                "repointing-agent.sh",
                "#!/bin/sh
set -e
echo work > \"work-R$AGENT_RUNNER_ROUND_NUM\"
\
                 if [ \"$AGENT_RUNNER_ROUND_NUM\" = 1 ]; then
\
                 sed 's/^dirty_action = \"ignore\"$/dirty_action = \"auto_commit\"/' conf/real.toml > evil.toml
\
                 ln -sfn evil.toml agent-runner.toml
fi
",
            );
            p.write_config(
                &ConfigBuilder::new(&agent)
                    .dirty_action("ignore")
                    .extra("[agent.sandbox]\nmode = \"require\""),
            );
            std::fs::create_dir_all(p.dir().join("conf")).unwrap();
            std::fs::rename(p.config_path(), p.dir().join("conf/real.toml")).unwrap();
            std::os::unix::fs::symlink("conf/real.toml", p.config_path()).unwrap();
            if operator == Operator::Unprivileged {
                let _ = std::process::Command::new("chown")
                    .args(["-hR", "ar-e2e:"])
                    .arg(p.dir().join("conf"))
                    .arg(p.config_path())
                    .status();
            }
            p.run(&["round"]).assert_code(0);
            let link = std::fs::read_link(p.config_path()).unwrap();
            assert_eq!(
                link,
                std::path::Path::new("evil.toml"),
                "{what}: {}",
                p.events_text()
            );
            let record = p
                .home()
                .join(".local/state/agent-runner/agent-changes.json");
            assert!(record.exists(), "{what}");
            if control {
                std::fs::remove_file(&record).unwrap();
                p.run(&["round"]).assert_code(0);
                assert_eq!(
                    p.events_of("dirty_auto_committed").len(),
                    1,
                    "{what}: the control did not load the agent's config: {}",
                    p.events_text()
                );
                continue;
            }
            for _ in 0..2 {
                let out = p.run(&["round"]);
                out.assert_code(78);
                assert!(
                    out.stderr.contains("untrusted") && out.stderr.contains("round 1"),
                    "{what}: {out}"
                );
            }
            assert!(p.events_of("dirty_auto_committed").is_empty(), "{what}");
            // The operator makes their link again: the next boot loads it.
            std::fs::remove_file(p.config_path()).unwrap();
            std::os::unix::fs::symlink("conf/real.toml", p.config_path()).unwrap();
            p.run(&["round"]).assert_code(0);
        }
    }
}

/// Item 4 across boots: the prompt link the agent made in round 1 is refused by the next
/// `agent-runner round` (a boot of its own), and by every later one while the link is
/// unchanged, naming the file; once the operator replaced it, rounds run again. The
/// control: the same two rounds with the state dir's record of what the agent changed
/// removed in between hand the key to the agent. As root and as the unprivileged user,
/// under `mode = "require"`.
/// `doctor --json`'s `agent_changes` check.
fn doctor_agent_changes(p: &Project) -> agent_runner_e2e::serde_json::Value {
    let out = p.run(&["doctor", "--json"]);
    let report: agent_runner_e2e::serde_json::Value =
        agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
    agent_runner_e2e::doctor_check(&report, "agent_changes")
}

#[test]
fn a_prompt_link_the_agent_made_stays_refused_at_the_next_boots_until_replaced() {
    const KEY: &str = "PLANTED-SSH-KEY";
    for operator in [Operator::Root, Operator::Unprivileged] {
        for control in [false, true] {
            let what = format!("{operator:?}, control {control}");
            let p = Project::new_as(operator);
            let key = readable_key(&p, KEY);
            let agent = linking_agent(&p, &key);
            p.write_config(
                &ConfigBuilder::new(&agent)
                    .dirty_action("ignore")
                    .extra("[agent.sandbox]\nmode = \"require\""),
            );
            p.run(&["round"]).assert_code(0);
            let record = p.state_dir().join("agent-changes.json");
            assert!(record.exists(), "{what}: {}", p.events_text());
            if control {
                std::fs::remove_file(&record).unwrap();
                p.run(&["round"]);
                let seen = std::fs::read_to_string(p.dir().join("seen-R2")).unwrap_or_default();
                assert!(
                    seen.contains(KEY),
                    "{what}: the control did not show the harm"
                );
                continue;
            }
            for _ in 0..2 {
                let out = p.run(&["round"]);
                assert_ne!(out.code(), 0, "{what}: {out}");
                let all = format!("{out}{}", p.events_text());
                assert!(
                    all.contains("prompts/main.md leads elsewhere through a symbolic link an agent made in round 1"),
                    "{what}: {all}"
                );
            }
            for round in ["seen-R2", "seen-R3"] {
                let seen = std::fs::read_to_string(p.dir().join(round)).unwrap_or_default();
                assert!(
                    !seen.contains(KEY),
                    "{what}: the key reached the agent in {round}"
                );
            }
            // `doctor` names what is held, and fails on it.
            let held = doctor_agent_changes(&p);
            assert_eq!(held["ok"], false, "{what}: {held}");
            assert!(
                held["reason"].as_str().unwrap().contains("prompt_link ")
                    && held["reason"]
                        .as_str()
                        .unwrap()
                        .contains("prompts/main.md (round 1)"),
                "{what}: {held}"
            );
            // The operator replaces the link: the next boot runs with the new prompt.
            let main = p.dir().join("prompts/main.md");
            std::fs::remove_file(&main).unwrap();
            p.write("prompts/main.md", "the operator's new prompt");
            assert_eq!(doctor_agent_changes(&p)["ok"], true, "{what}");
            p.run(&["round"]).assert_code(0);
            let record_text = std::fs::read_to_string(&record).unwrap_or_default();
            assert!(!record_text.contains("main.md"), "{what}: {record_text}");
        }
    }
}

/// Item 4 for the log dir across boots: the link the agent put at `logs` in round 1 is
/// refused by the next `agent-runner round` too (a boot of its own), never followed;
/// the control, the record of what the agent changed removed between the boots, writes the
/// next round's log and views through the link into the operator's home. As root and as
/// the unprivileged user, under `mode = "require"`.
#[test]
fn a_log_dir_link_the_agent_made_stays_refused_at_the_next_boot() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        for control in [false, true] {
            let what = format!("{operator:?}, control {control}");
            let p = Project::new_as(operator);
            let target = home_dir_of_the_operator(&p, operator);
            let agent = p.script(
                "relinking-agent.sh",
                &format!(
                    "#!/bin/sh\nif [ \"$AGENT_RUNNER_ROUND_NUM\" = 1 ]; then mv logs logs.old && ln -s '{}' logs; fi\n",
                    target.display()
                ),
            );
            p.write_config(
                &ConfigBuilder::new(&agent)
                    .dirty_action("ignore")
                    .extra("[agent.sandbox]\nmode = \"require\""),
            );
            let _ = p.run(&["round"]);
            assert!(
                std::fs::symlink_metadata(p.log_dir())
                    .unwrap()
                    .file_type()
                    .is_symlink(),
                "{what}: {}",
                p.events_text()
            );
            if control {
                std::fs::remove_file(p.state_dir().join("agent-changes.json")).unwrap();
            }
            let out = p.run(&["round"]);
            let written: Vec<_> = std::fs::read_dir(&target)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            if control {
                assert!(
                    !written.is_empty(),
                    "{what}: the control did not show the harm"
                );
                continue;
            }
            assert!(
                written.is_empty(),
                "{what}: written through the link: {written:?}"
            );
            assert_ne!(out.code(), 0, "{what}: {out}");
            let all = format!("{out}{}", p.events_text());
            assert!(all.contains("logs is a symbolic link"), "{what}: {all}");
        }
    }
}

/// Item 4 for the log dir (docs/security.md, "The supervisor is not the agent's deputy"):
/// the agent moves the in-tree log dir away and puts a link to a directory of the operator's
/// home in its place. Nothing of the supervisor's is written through it — not the status
/// view, the round context, the next round log nor the record's month link — and the next
/// round fails with an error naming the link (an environmental failure: retried, then exit
/// 76). The control: a log dir the operator linked before boot is followed, its round logs
/// landing where the link leads. As root and as the unprivileged user.
#[test]
fn a_log_dir_link_the_agent_made_is_refused_one_the_operator_had_is_followed() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        let p = Project::new_as(operator);
        let target = home_dir_of_the_operator(&p, operator);
        let agent = p.script(
            "relinking-agent.sh",
            &format!(
                "#!/bin/sh\nmv logs logs.old && ln -s '{}' logs\n",
                target.display()
            ),
        );
        p.write_config(&ConfigBuilder::new(&agent).dirty_action("ignore"));
        let out = p
            .spawn(&["serve", "--max-rounds", "2"])
            .wait(Duration::from_secs(120));
        let all = p.events_text();
        let what = format!("{operator:?}: {out}\n{all}");
        let written: Vec<_> = std::fs::read_dir(&target)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(
            written.is_empty(),
            "{what}: written through the link: {written:?}"
        );
        out.assert_code(76);
        let error = &p.events_of("round_error")[0];
        assert!(
            error["error"]
                .as_str()
                .unwrap()
                .contains("logs is a symbolic link that was not there when the supervisor started"),
            "{what}"
        );
        assert!(p.dir().join("logs.old/rounds").is_dir(), "{what}");

        // The control: the operator's link, there at boot, is followed.
        let p = Project::new_as(operator);
        let elsewhere = p.tmp_dir().join("mnt-logs");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let _ = std::fs::remove_dir_all(p.log_dir());
        std::os::unix::fs::symlink(&elsewhere, p.log_dir()).unwrap();
        if let Some(user) = operator.user() {
            user.own(&elsewhere);
            user.own(&p.log_dir());
        }
        let agent = p.script("quiet-agent.sh", "#!/bin/sh\necho done\n");
        p.write_config(&ConfigBuilder::new(&agent).dirty_action("ignore"));
        p.spawn(&["serve", "--max-rounds", "1"])
            .wait(Duration::from_secs(60))
            .assert_code(0);
        let logs = std::fs::read_dir(elsewhere.join("rounds")).map_or(0, |d| d.count());
        assert!(logs >= 1, "{operator:?} control: {}", p.events_text());
        assert!(
            elsewhere.join("status.json").exists(),
            "{operator:?} control"
        );
    }
}

//! An agent started through a version manager's shim runs confined (docs/security.md,
//! "Shims"): under `[agent.sandbox] mode = "prefer"` (what `init` writes) the grants
//! follow what the shim runs — the manager's tree, read and executed — when that tree is
//! neither in the agent's home nor in the system (a pyenv root in another home, under
//! `/srv`). Each shim here lives in `<tmp>/managers`, outside the agent's home, the work
//! tree and the system trees; the real program it ends in writes `ran-by-shim.txt` in the
//! work tree. `doctor` names the manager and its grant (`agent_shim`).
//!
//! The control: the same shim, run by a wrapper script (so that `command[0]` is no shim),
//! gets no grant and fails as a confined agent did before: `Permission denied`, exit 126.
//! pyenv-, mise-, asdf- and volta-shaped trees, each laid out as the manager lays out its
//! own. As root and as the unprivileged operator `ar-e2e`; the real pyenv too where it is
//! installed for root (`/root/.pyenv`). The managers from the registries
//! (tests/setup.d/35-version-managers.sh: pipx from Debian, uv from PyPI, mise from npm):
//! a real mise shim (`mise link` + `mise reshim`, offline) and programs installed by
//! `pipx install` and `uv tool install`, each started confined from outside the agent's
//! home.

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::{doctor_check, ConfigBuilder, Operator, Project};
use std::path::{Path, PathBuf};

/// The real program behind every shim: says what ran it and leaves a file in the tree.
const REAL: &str = "#!/bin/sh\necho \"real program ran: $0\"\necho ran > ran-by-shim.txt\n";

/// A pyenv root shaped like pyenv's own (`shims/<program>` running `libexec/pyenv exec`,
/// which runs `versions/<v>/bin/<program>`); returns the shim.
fn pyenv_shaped(p: &Project) -> PathBuf {
    let root = p.tmp_dir().join("managers/pyenv");
    p.script("managers/pyenv/versions/3.12.0/bin/myagent", REAL);
    p.script(
        "managers/pyenv/libexec/pyenv",
        "#!/usr/bin/env bash\nset -e\n[ \"$1\" = exec ] && shift\nprogram=\"$1\"; shift\n\
         exec \"$PYENV_ROOT/versions/3.12.0/bin/$program\" \"$@\"\n",
    );
    p.script(
        "managers/pyenv/shims/myagent",
        &format!(
            "#!/usr/bin/env bash\nset -e\n[ -n \"$PYENV_DEBUG\" ] && set -x\n\nprogram=\"${{0##*/}}\"\n\n\
             export PYENV_ROOT=\"{root}\"\nexec \"{root}/libexec/pyenv\" exec \"$program\" \"$@\"\n",
            root = root.display()
        ),
    )
}

/// A mise data dir shaped like mise's own: `shims/<program>`, a link to the `mise`
/// executable, which runs the tool by the name it was called as.
fn mise_shaped(p: &Project) -> PathBuf {
    p.script("managers/mise/installs/tool/1.0/bin/myagent", REAL);
    let mise = p.script(
        "managers/mise-bin/mise",
        &format!(
            "#!/bin/sh\nexec {}/managers/mise/installs/tool/1.0/bin/\"${{0##*/}}\" \"$@\"\n",
            p.tmp_dir().display()
        ),
    );
    let shim = p.tmp_dir().join("managers/mise/shims/myagent");
    std::fs::create_dir_all(shim.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(mise, &shim).unwrap();
    shim
}

/// An asdf data dir shaped like asdf's own: `shims/<program>`, a script `exec`ing
/// `asdf exec <program>`, where `asdf` (in its own prefix's `bin/`, outside the data dir)
/// runs `installs/<tool>/<version>/bin/<program>`.
fn asdf_shaped(p: &Project) -> PathBuf {
    let data = p.tmp_dir().join("managers/asdf");
    p.script("managers/asdf/installs/tool/1.0/bin/myagent", REAL);
    let asdf = p.script(
        "managers/asdf-bin/bin/asdf",
        &format!(
            "#!/usr/bin/env bash\nset -e\n[ \"$1\" = exec ] && shift\nprogram=\"$1\"; shift\n\
             exec \"{}/installs/tool/1.0/bin/$program\" \"$@\"\n",
            data.display()
        ),
    );
    p.script(
        "managers/asdf/shims/myagent",
        &format!(
            "#!/usr/bin/env bash\n# asdf-plugin: tool 1.0\nexec {} exec \"myagent\" \"$@\"\n",
            asdf.display()
        ),
    )
}

/// A `VOLTA_HOME` shaped like volta's own: `bin/<program>`, a link to `volta-shim`, which
/// runs the tool its image holds by the name it was called as.
fn volta_shaped(p: &Project) -> PathBuf {
    p.script("managers/volta/tools/image/node/22/bin/myagent", REAL);
    let volta_shim = p.script(
        "managers/volta/bin/volta-shim",
        &format!(
            "#!/bin/sh\nexec {}/managers/volta/tools/image/node/22/bin/\"${{0##*/}}\" \"$@\"\n",
            p.tmp_dir().display()
        ),
    );
    let shim = p.tmp_dir().join("managers/volta/bin/myagent");
    std::os::unix::fs::symlink(volta_shim, &shim).unwrap();
    shim
}

fn config(p: &Project, command: &Path) {
    p.write_config(
        &ConfigBuilder::new(command)
            .dirty_action("ignore")
            .extra("[agent.sandbox]\nmode = \"prefer\""),
    );
}

fn doctor(p: &Project) -> Value {
    let out = p.run(&["doctor", "--json"]);
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("doctor --json: {e}: {out}"))
}

/// `shim` starts confined and its real program runs; doctor says `manager`.
fn starts_confined(p: &Project, shim: &Path, manager: &str) {
    config(p, shim);
    let line = doctor_check(&doctor(p), "agent_shim");
    assert!(
        line["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("a {manager} shim")),
        "{line}"
    );
    let out = p.run(&["round"]);
    assert_eq!(out.code(), 0, "{out}\n{}", p.agent_output());
    assert!(
        p.dir().join("ran-by-shim.txt").exists(),
        "{}",
        p.agent_output()
    );
    let _ = std::fs::remove_file(p.dir().join("ran-by-shim.txt"));
}

/// The control: the shim behind a wrapper gets no grant and is refused, as before.
fn refused_behind_a_wrapper(p: &Project, shim: &Path) {
    let wrapper = p.script(
        "wrappers/myagent",
        &format!("#!/bin/sh\nexec {} \"$@\"\n", shim.display()),
    );
    config(p, &wrapper);
    let out = p.run(&["round"]);
    assert_eq!(out.code(), 1, "{out}");
    let exit = &p.events_of("agent_exit").last().cloned().unwrap();
    assert_eq!(exit["exit_code"], 126, "{exit}");
    assert!(
        p.agent_output().contains("Permission denied"),
        "{}",
        p.agent_output()
    );
    assert!(!p.dir().join("ran-by-shim.txt").exists());
}

fn shims_start_confined(operator: Operator) {
    let p = Project::new_as(operator);
    let pyenv = pyenv_shaped(&p);
    let mise = mise_shaped(&p);
    let asdf = asdf_shaped(&p);
    let volta = volta_shaped(&p);
    if operator == Operator::Unprivileged {
        agent_runner_e2e::unprivileged::unprivileged_user().own(p.tmp_dir());
    }
    refused_behind_a_wrapper(&p, &pyenv);
    starts_confined(&p, &pyenv, "pyenv");
    starts_confined(&p, &mise, "mise");
    starts_confined(&p, &asdf, "asdf");
    starts_confined(&p, &volta, "volta");
    refused_behind_a_wrapper(&p, &volta);
}

#[test]
fn shims_start_confined_as_root() {
    shims_start_confined(Operator::Root);
}

#[test]
fn shims_start_confined_unprivileged() {
    shims_start_confined(Operator::Unprivileged);
}

/// The real pyenv, where root has one: its `python3` shim, run with the agent's home
/// elsewhere (the project's), starts confined.
#[test]
fn the_real_pyenv_s_shim_starts_confined() {
    let shim = Path::new("/root/.pyenv/shims/python3");
    if !shim.exists() || !nix_is_root() {
        eprintln!("no pyenv for root here: the pyenv-shaped shim above stands in for it");
        return;
    }
    let p = Project::new();
    let command = ConfigBuilder::new(shim)
        .dirty_action("ignore")
        .extra("[agent.sandbox]\nmode = \"prefer\"")
        .render()
        .replace(
            "prompt_arg_template = [\"{prompt}\"]\nprompt_delivery = \"argv\"",
            "prompt_arg_template = [\"-c\", \"open('ran-by-shim.txt', 'w').write('ran')\", \"{prompt}\"]\nprompt_delivery = \"argv\"",
        );
    p.write_config_text(&command);
    let line = doctor_check(&doctor(&p), "agent_shim");
    assert!(
        line["reason"].as_str().unwrap().contains("/root/.pyenv"),
        "{line}"
    );
    let out = p.run(&["round"]);
    assert_eq!(out.code(), 0, "{out}\n{}", p.agent_output());
    assert!(
        p.dir().join("ran-by-shim.txt").exists(),
        "{}",
        p.agent_output()
    );
}

/// tests/setup.d/35-version-managers.sh's installs.
fn managers() -> PathBuf {
    let dir = agent_runner_e2e::workspace_root().join("target/version-managers");
    assert!(
        dir.join("mise/node_modules/.bin/mise").exists()
            && dir.join("pipx/bin/cowsay").exists()
            && dir.join("uv-tools/bin/cowsay").exists(),
        "the version managers are missing: run tests/setup.d/35-version-managers.sh (as root)"
    );
    dir
}

/// A real mise data dir in `<tmp>/managers/mise-data` with one tool linked in (offline:
/// `mise link`, then `mise reshim`); returns the shim and the agent's environment for it.
fn real_mise(p: &Project) -> (PathBuf, Vec<(String, String)>) {
    let mise = managers().join("mise/node_modules/.bin/mise");
    p.script("managers/mise-tool/bin/myagent", REAL);
    let at = |name: &str| {
        p.tmp_dir()
            .join(format!("managers/mise-{name}"))
            .display()
            .to_string()
    };
    let env: Vec<(String, String)> = [
        ("MISE_DATA_DIR", at("data")),
        ("MISE_CONFIG_DIR", at("config")),
        ("MISE_CACHE_DIR", at("cache")),
        ("MISE_STATE_DIR", at("state")),
        ("MISE_NODE_VERSION", "20.0.0".to_owned()),
        ("MISE_YES", "1".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    for args in [
        vec!["link".to_owned(), "node@20.0.0".to_owned(), at("tool")],
        vec!["reshim".to_owned()],
    ] {
        let out = std::process::Command::new(&mise)
            .args(&args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("HOME", p.home())
            .output()
            .unwrap();
        assert!(out.status.success(), "mise {args:?}: {out:?}");
    }
    (p.tmp_dir().join("managers/mise-data/shims/myagent"), env)
}

/// `command` (with `args`, the prompt on stdin) under `prefer`, `env` in `[agent.env]`.
fn config_with(p: &Project, command: &Path, args: &[&str], env: &[(String, String)]) {
    let mut builder = ConfigBuilder::new(command)
        .dirty_action("ignore")
        .extra("[agent.sandbox]\nmode = \"prefer\"");
    for (k, v) in env {
        builder = builder.agent_env(k, v);
    }
    let words: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    p.write_config_text(&builder.render().replace(
        "prompt_arg_template = [\"{prompt}\"]\nprompt_delivery = \"argv\"",
        &format!(
            "prompt_arg_template = [{}]\nprompt_delivery = \"stdin\"",
            words.join(", ")
        ),
    ));
}

fn registry_managers_start_confined(operator: Operator) {
    let p = Project::new_as(operator);
    let (mise_shim, mise_env) = real_mise(&p);
    if operator == Operator::Unprivileged {
        agent_runner_e2e::unprivileged::unprivileged_user().own(p.tmp_dir());
    }
    config_with(&p, &mise_shim, &[], &mise_env);
    let line = doctor_check(&doctor(&p), "agent_shim");
    assert!(
        line["reason"].as_str().unwrap().contains("a mise shim"),
        "{line}"
    );
    let out = p.run(&["round"]);
    assert_eq!(out.code(), 0, "{out}\n{}", p.agent_output());
    assert!(
        p.dir().join("ran-by-shim.txt").exists(),
        "{}",
        p.agent_output()
    );
    for installed in ["pipx/bin/cowsay", "uv-tools/bin/cowsay"] {
        let said = format!("confined by {installed}");
        config_with(&p, &managers().join(installed), &["-t", &said], &[]);
        let out = p.run(&["round"]);
        assert_eq!(out.code(), 0, "{installed}: {out}\n{}", p.agent_output());
        assert!(
            p.agent_output().contains(&said),
            "{installed}: {}",
            p.agent_output()
        );
    }
}

#[test]
fn registry_managers_start_confined_as_root() {
    registry_managers_start_confined(Operator::Root);
}

#[test]
fn registry_managers_start_confined_unprivileged() {
    registry_managers_start_confined(Operator::Unprivileged);
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

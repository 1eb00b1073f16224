//! Issue 27, item 10: `~` in `command[0]` of `[agent]` and of a host expands to `HOME`, as
//! docs/configuration.md says of the config's paths (one place: `expand_home` in
//! `supervisor/src/config/resolve.rs`).

use agent_runner_e2e::{dirty_commit_host_bin, ConfigBuilder, HostSpec, Pin, Project};
use std::path::Path;

/// Copies `from` to `<HOME>/bin/<name>`, executable, and returns the copy's path.
fn install_in_home(p: &Project, from: &Path, name: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let to = p.home().join("bin").join(name);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, &to).unwrap();
    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755)).unwrap();
    to
}

#[test]
fn tilde_in_agent_and_host_command_expands_to_home() {
    let p = Project::new();
    let agent = p.script("leave-a-file.sh", "#!/bin/sh\necho made > made.txt\n");
    install_in_home(&p, &agent, "leave-a-file.sh");
    let host = install_in_home(&p, &dirty_commit_host_bin(), "wip-host");
    let config = ConfigBuilder::new(Path::new("~/bin/leave-a-file.sh"))
        .dirty_action("auto_commit")
        .host(
            HostSpec::new("wip", "~/bin/wip-host")
                .provides(&["dirty_handler"])
                .pin(Pin::OfFile(host)),
        );
    p.write_config(&config);
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    // The agent ran from ~/bin (it left its file) and the host from ~/bin committed it.
    let committed = p.wait_for_event("dirty_auto_committed");
    assert_eq!(committed["hook"], "wip_commit", "{all}");
    assert_eq!(committed["files"][0], "made.txt", "{all}");
}

#[test]
fn tilde_user_form_is_not_expanded() {
    // Only `~` and `~/…` are the home directory; `~nobody/…` is left as written and the
    // agent that does not exist there is reported, not run from somewhere else.
    let p = Project::new();
    p.write_config(&ConfigBuilder::new(Path::new("~nobody-here/bin/agent")));
    let out = p.run(&["round"]);
    assert_ne!(out.code(), 0, "{out}");
    assert!(out.stderr.contains("~nobody-here/bin/agent"), "{out}");
}

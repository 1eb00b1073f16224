//! Issue 17, case 5: a file name that is not UTF-8 (`caf\xe9.txt`, Latin-1) is carried
//! without loss: in events and to hosts in git's quoted form (docs/protocol.md, "Path
//! names"), and committed under its real bytes — by the built-in auto-commit and by a dirty
//! handler host that answers with the names it was given.

use agent_runner_e2e::{dirty_commit_host_bin, HostSpec, Project};
use std::os::unix::ffi::OsStrExt;

const NAME: &[u8] = b"caf\xe9.txt";
const TEXT_FORM: &str = "\"caf\\351.txt\"";

fn latin1_project(host: bool) -> Project {
    let p = Project::new();
    let agent = p.script(
        "latin1.sh",
        "#!/bin/sh\nprintf 'x\\n' > \"$(printf 'caf\\351.txt')\"\n",
    );
    let mut config = agent_runner_e2e::ConfigBuilder::new(&agent).dirty_action("auto_commit");
    if host {
        config =
            config.host(HostSpec::new("wip", dirty_commit_host_bin()).provides(&["dirty_handler"]));
    }
    p.write_config(&config);
    p
}

fn committed_names(p: &Project) -> Vec<Vec<u8>> {
    let out = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(p.dir())
        .output()
        .unwrap();
    out.stdout
        .split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

#[test]
fn a_latin1_name_is_committed_by_the_builtin() {
    let p = latin1_project(false);
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let detected = p.wait_for_event("dirty_detected");
    assert_eq!(detected["files"][0], TEXT_FORM, "{all}");
    let committed = p.wait_for_event("dirty_auto_committed");
    assert_eq!(committed["hook"], "default", "{all}");
    assert!(committed_names(&p).contains(&NAME.to_vec()), "{all}");
    assert!(p.dir().join(std::ffi::OsStr::from_bytes(NAME)).exists());
    assert!(p.events_of("dirty_commit_failed").is_empty(), "{all}");
}

#[test]
fn a_latin1_name_reaches_a_host_and_comes_back_intact() {
    let p = latin1_project(true);
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let committed = p.wait_for_event("dirty_auto_committed");
    assert_eq!(committed["hook"], "wip_commit", "{all}");
    assert_eq!(committed["files"][0], TEXT_FORM, "{all}");
    assert!(committed_names(&p).contains(&NAME.to_vec()), "{all}");
}

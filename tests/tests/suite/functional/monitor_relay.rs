//! `monitor --host ALIAS --mode events` over a real OpenSSH link: an sshd on 127.0.0.1
//! started by the test (host and client keys generated on the spot, `root` logs in with
//! the test's key), the system `ssh` client reached through PATH (a wrapper adding
//! `-F <the test's ssh config>`). The ssh client is killed twice while `serve` writes
//! rounds; every event of the remote record arrives exactly once, in order, and no remote
//! `events --tail` outlives its link.

use agent_runner_e2e::serde_json::Value;
use agent_runner_e2e::{agent_runner_bin, wait_until, Project};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Sshd {
    child: Child,
    /// A directory holding `ssh`, the wrapper to put first on PATH.
    bin: PathBuf,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .output()
        .expect("ssh-keygen (.ci/run installs openssh-client)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An sshd for alias `remote-box` whose sessions find `agent-runner` on PATH and have
/// `home` as `HOME` (the remote user's home, where a `./logs` project keeps its record:
/// docs/operations.md, "State dir").
fn start_sshd(dir: &Path, home: &Path) -> Sshd {
    std::fs::create_dir_all(dir).unwrap();
    // sshd's privilege separation directory.
    std::fs::create_dir_all("/run/sshd").unwrap();
    let host_key = dir.join("host_key");
    let client_key = dir.join("id_ed25519");
    keygen(&host_key);
    keygen(&client_key);
    std::fs::copy(dir.join("id_ed25519.pub"), dir.join("authorized_keys")).unwrap();
    let port = free_port();
    let remote_path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        agent_runner_bin().parent().unwrap().display()
    );
    let config = dir.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {host}\nPidFile {dir}/sshd.pid\n\
             AuthorizedKeysFile {dir}/authorized_keys\nPermitRootLogin prohibit-password\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             StrictModes no\nSetEnv PATH={remote_path} HOME={home}\n",
            host = host_key.display(),
            dir = dir.display(),
            home = home.display(),
        ),
    )
    .unwrap();
    let child = Command::new("/usr/sbin/sshd")
        .args(["-D", "-e", "-f"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(
            std::fs::File::create(dir.join("sshd.log")).unwrap(),
        ))
        .spawn()
        .expect("start /usr/sbin/sshd (.ci/run installs openssh-server)");
    let host_pub = std::fs::read_to_string(dir.join("host_key.pub")).unwrap();
    std::fs::write(
        dir.join("known_hosts"),
        format!("[127.0.0.1]:{port} {host_pub}"),
    )
    .unwrap();
    let ssh_config = dir.join("ssh_config");
    std::fs::write(
        &ssh_config,
        format!(
            "Host remote-box\n  HostName 127.0.0.1\n  Port {port}\n  User root\n  IdentityFile {key}\n\
             \x20 IdentitiesOnly yes\n  UserKnownHostsFile {dir}/known_hosts\n  StrictHostKeyChecking yes\n",
            key = client_key.display(),
            dir = dir.display(),
        ),
    )
    .unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let wrapper = bin.join("ssh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec /usr/bin/ssh -F {} \"$@\"\n",
            ssh_config.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sshd = Sshd { child, bin };
    wait_until(
        "sshd to accept connections",
        Duration::from_secs(20),
        || std::net::TcpStream::connect(("127.0.0.1", port)).ok(),
    );
    sshd
}

/// Children of `pid` whose command is `ssh`.
fn ssh_children(pid: u32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|child| {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            let Some((name, rest)) = stat.split_once(") ") else {
                return false;
            };
            let ppid = rest.split(' ').nth(1).and_then(|p| p.parse::<u32>().ok());
            name.ends_with("(ssh") && ppid == Some(pid)
        })
        .collect()
}

/// Whether an `agent-runner --config <config> events --tail` process runs (the remote end).
fn remote_follower_running(config: &str) -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| {
            let args = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = args.split(|b| *b == 0).collect();
            args.contains(&b"events".as_slice())
                && args.contains(&b"--tail".as_slice())
                && args.contains(&config.as_bytes())
        })
}

#[test]
fn relayed_events_survive_dropped_links_without_a_gap() {
    let remote = Project::new();
    remote.write_config(
        &remote
            .config()
            .dirty_action("ignore")
            .agent_env("DEMO_AGENT_SLEEP", "0.3"),
    );
    let local = Project::new();
    local.write_config(&local.config());
    let sshd = start_sshd(&local.tmp_dir().join("ssh"), remote.home());

    let path = format!(
        "{}:{}",
        sshd.bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let remote_config = remote.config_path().display().to_string();
    let mut cmd = local.command(&[
        "monitor",
        "--mode",
        "events",
        "--host",
        "remote-box",
        "--remote-config",
        &remote_config,
    ]);
    cmd.env("PATH", &path);
    let relay = local.spawn_with(cmd);
    // The first link streams events from when the remote `events --tail` starts: wait for
    // it before the remote writes anything.
    wait_until(
        "the remote `events --tail`",
        Duration::from_secs(30),
        || remote_follower_running(&remote_config).then_some(()),
    );
    let serve = remote.spawn(&["serve", "--max-rounds", "8"]);
    for drop_at in [2, 5] {
        wait_until("rounds to progress", Duration::from_secs(60), || {
            (remote.events_of("round_end").len() >= drop_at).then_some(())
        });
        let link = wait_until("a live ssh link", Duration::from_secs(30), || {
            ssh_children(relay.pid()).first().copied()
        });
        // SAFETY: kill(2) on a pid we just read as a child of our own relay.
        assert_eq!(unsafe { libc::kill(link, libc::SIGKILL) }, 0);
    }
    serve.wait(Duration::from_secs(120)).assert_code(0);
    let expected: Vec<String> = remote.events().iter().map(Value::to_string).collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let relayed = loop {
        let lines: Vec<String> = relay
            .stdout_so_far()
            .lines()
            .map(|l| {
                agent_runner_e2e::serde_json::from_str::<Value>(l)
                    .unwrap()
                    .to_string()
            })
            .collect();
        if lines.len() >= expected.len() {
            break lines;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} of {} events relayed\n--- relay stderr ---\n{}\n--- sshd ---\n{}",
            lines.len(),
            expected.len(),
            relay.stderr_so_far(),
            std::fs::read_to_string(local.tmp_dir().join("ssh/sshd.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    relay.signal(libc::SIGTERM);
    let out = relay.wait(Duration::from_secs(20));
    out.assert_code(0);
    assert_eq!(
        relayed, expected,
        "relayed stream differs from the remote record\n{}",
        out.stderr
    );
    // Every remote `events --tail` ended with its link: the two whose ssh client was
    // killed, and the last one once the relay stopped its ssh (nothing was written to any
    // of them after the drop).
    wait_until(
        "no remote `events --tail` left",
        Duration::from_secs(10),
        || (!remote_follower_running(&remote_config)).then_some(()),
    );
    let blips = local.events_of("monitor_remote_blip");
    assert_eq!(blips.len(), 2, "{}", local.events_text());
    assert_eq!(blips[0]["host"], "remote-box");
    assert_eq!(blips[0]["attempt"], 1);
}

#[test]
fn the_relay_gives_up_after_the_tolerance() {
    let local = Project::new();
    local.write_config(
        &local
            .config()
            .extra("[monitor]\nremote_failure_tolerance_s = 3"),
    );
    let sshd = start_sshd(&local.tmp_dir().join("ssh"), local.home());
    // A port nobody listens on.
    let dead = free_port();
    let path = format!(
        "{}:{}",
        sshd.bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = local.command(&[
        "monitor",
        "--mode",
        "events",
        "--host",
        &format!("ssh://root@127.0.0.1:{dead}"),
    ]);
    cmd.env("PATH", &path);
    let out = local.run_with(cmd);
    out.assert_code(1);
    assert!(out.stderr.contains("remote_failure_tolerance_s"), "{out}");
    let giveup = local.events_of("monitor_remote_giveup");
    assert_eq!(giveup.len(), 1, "{}", local.events_text());
    assert!(
        giveup[0]["total_attempts"].as_u64().unwrap() >= 2,
        "{}",
        giveup[0]
    );
    assert!(!local.events_of("monitor_remote_blip").is_empty());
}

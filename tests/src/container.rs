//! A real container engine for the image tests (`tests/tests/suite/confinement/container.rs`): rootful podman
//! from Debian's packages with storage of its own under `<target>/container/` (never the
//! machine's default store), the image built once per test process by
//! `deploy/build-image.sh` from the binaries cargo built, on the base
//! `deploy/base/build.sh` makes from Debian's packages (no image registry).
//!
//! The engine's settings for this machine go in a `containers.conf` of its own
//! (`CONTAINERS_CONF`): `runc` where cgroups are v1 or hybrid (crun refuses hybrid
//! hierarchies whose cgroup v2 half has controllers), and explicit `nofile`/`nproc`
//! limits no higher than this process's own (podman's defaults exceed them, and raising a
//! limit needs `CAP_SYS_RESOURCE`, which a root in a sandbox may lack).
//! docs/operations.md "Confinement in a container" says the same for operators.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use crate::{bin_dir, workspace_bin, workspace_root};

/// The uid and gid of the image's user `agent-runner` (deploy/Containerfile).
pub const IMAGE_UID: u32 = 10001;

/// The tag the tests build the image under.
pub const IMAGE: &str = "localhost/agent-runner:e2e";

/// Rootful podman with its own storage and settings.
pub struct Engine {
    root: PathBuf,
    runroot: PathBuf,
    conf: PathBuf,
}

/// The engine, set up once per test process. Panics, saying to run tests/setup.sh, when
/// podman is missing: the image tests never skip.
pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        for tool in ["podman", "mmdebstrap"] {
            let found = Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            assert!(
                found,
                "{tool} is missing: run tests/setup.sh (tests/setup.d/40-podman.sh installs it)"
            );
        }
        let dir = container_dir();
        let root = dir.join("storage");
        // The run root holds sockets, whose paths are limited to 108 bytes: under /run,
        // one per storage root.
        let runroot = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            root.hash(&mut h);
            PathBuf::from(format!("/run/ar-e2e-podman-{:016x}", h.finish()))
        };
        let conf = dir.join("containers.conf");
        std::fs::create_dir_all(&root).expect("mkdir storage");
        std::fs::write(&conf, containers_conf()).expect("write containers.conf");
        Engine {
            root,
            runroot,
            conf,
        }
    })
}

/// `<target>/container`: the base tarball, the build context, the engine's storage.
pub fn container_dir() -> PathBuf {
    bin_dir()
        .parent()
        .expect("profile dir has a parent")
        .join("container")
}

/// The `containers.conf` of [`Engine`] for this machine (module docs).
fn containers_conf() -> String {
    let hybrid_or_v1 = !Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let hard = |name: &str| -> Option<u64> {
        limits
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l[name.len()..].split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
    };
    let nofile = hard("Max open files").unwrap_or(1024).min(65536);
    let nproc = hard("Max processes").unwrap_or(4096).min(4096);
    let mut conf = format!(
        "[containers]\ndefault_ulimits = [\"nofile={nofile}:{nofile}\", \"nproc={nproc}:{nproc}\"]\n\n[engine]\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\n"
    );
    if hybrid_or_v1 {
        conf.push_str("runtime = \"runc\"\n");
    }
    conf
}

impl Engine {
    /// `podman` with this engine's storage and settings.
    pub fn podman(&self) -> Command {
        let mut cmd = Command::new("podman");
        cmd.arg("--root")
            .arg(&self.root)
            .arg("--runroot")
            .arg(&self.runroot)
            .env("CONTAINERS_CONF", &self.conf)
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `podman ARGS` to its end.
    pub fn run(&self, args: &[&str]) -> Output {
        self.podman()
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run podman {args:?}: {e}"))
    }

    /// Runs `podman ARGS`, panicking with its output when it fails; returns its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "podman {args:?} failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The engine's default seccomp profile (the one containers get unless told otherwise).
    pub fn default_seccomp_profile(&self) -> PathBuf {
        let path = self.ok(&["info", "--format", "{{.Host.Security.SECCOMPProfilePath}}"]);
        PathBuf::from(path.trim())
    }

    /// [`IMAGE`], built once per test process: the base from Debian's packages (cached
    /// under [`container_dir`] by its package list), then deploy/Containerfile with this
    /// profile's binaries. Panics with the scripts' output when a build fails.
    pub fn image(&self) -> &'static str {
        static BUILT: OnceLock<()> = OnceLock::new();
        BUILT.get_or_init(|| {
            for exe in [
                "agent-runner",
                "spawn-pause-file",
                "dirty-commit",
                "no-commit-detector",
            ] {
                workspace_bin(exe);
            }
            let profile = bin_dir()
                .file_name()
                .expect("profile dir")
                .to_string_lossy()
                .into_owned();
            let out = Command::new("bash")
                .arg(workspace_root().join("deploy/build-image.sh"))
                .arg(IMAGE)
                .env("PROFILE", profile)
                .env("BIN_DIR", bin_dir())
                .env("CACHE_DIR", container_dir())
                .env(
                    "ENGINE_OPTS",
                    format!(
                        "--root {} --runroot {}",
                        self.root.display(),
                        self.runroot.display()
                    ),
                )
                .env("CONTAINERS_CONF", &self.conf)
                .stdin(Stdio::null())
                .output()
                .expect("run deploy/build-image.sh");
            assert!(
                out.status.success(),
                "deploy/build-image.sh failed ({}):\n{}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        });
        IMAGE
    }
}

/// A container removed (with its anonymous volumes) when dropped.
pub struct Container {
    /// Its name.
    pub name: String,
}

impl Container {
    /// A name unique to this process, `what` and the call.
    pub fn named(what: &str) -> Container {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Container {
            name: format!("ar-e2e-{what}-{}-{n}", std::process::id()),
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = engine().run(&["rm", "--force", "--volumes", "--time", "0", &self.name]);
    }
}

//! `ar-e2e-hostile`: a spawn-hook host, written with the SDK, whose `before_spawn` does
//! what its config table says (`attempt`):
//!
//! * `"proceed"` (default): answers proceed;
//! * `"inet_socket"`: opens `socket(AF_INET, SOCK_STREAM)` and, if that returns, connects
//!   to `127.0.0.1:<port>` (config `port`), then answers proceed;
//! * `"crash"`: aborts the process in the middle of the call;
//! * `"hang"`: sleeps forever in the call.
//!
//! Config `hook` names the declared hook (default `hostile`). Test-only.

use agent_runner_sdk::{proceed, ConfigTable, HookError, Hooks, Host};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Clone, Copy)]
enum Attempt {
    Proceed,
    InetSocket { port: u16 },
    Crash,
    Hang,
}

fn attempt_inet(port: u16) -> Result<(), HookError> {
    // SAFETY: socket(2) takes integers only and returns a new descriptor or -1.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
    if fd < 0 {
        return Err(HookError::new(format!(
            "socket(AF_INET) failed: {}",
            std::io::Error::last_os_error()
        )));
    }
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: `addr` is a valid sockaddr_in that lives across the call and its size is
    // passed; `fd` is the socket created above.
    let rc = unsafe {
        libc::connect(
            fd,
            std::ptr::addr_of!(addr).cast::<libc::sockaddr>(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    eprintln!("ar-e2e-hostile: connect returned {rc}");
    // SAFETY: `fd` is ours and closed once.
    unsafe { libc::close(fd) };
    Ok(())
}

fn main() -> ExitCode {
    Host::new("ar-e2e-hostile", env!("CARGO_PKG_VERSION"))
        .setup(|init| {
            let config = ConfigTable::new(&init.config);
            config.expect_only(&["attempt", "port", "hook"])?;
            let hook = config.string_or("hook", "hostile")?;
            let attempt = match config.string_or("attempt", "proceed")?.as_str() {
                "proceed" => Attempt::Proceed,
                "inet_socket" => Attempt::InetSocket {
                    port: config.u64_or("port", 9, u64::from(u16::MAX))? as u16,
                },
                "crash" => Attempt::Crash,
                "hang" => Attempt::Hang,
                other => return Err(HookError::new(format!("unknown attempt {other:?}"))),
            };
            Ok(
                Hooks::new().spawn_hook(hook, move |_: &agent_runner_sdk::BeforeSpawnParams| {
                    match attempt {
                        Attempt::Proceed => {}
                        Attempt::InetSocket { port } => attempt_inet(port)?,
                        Attempt::Crash => std::process::abort(),
                        Attempt::Hang => loop {
                            std::thread::sleep(Duration::from_secs(3600));
                        },
                    }
                    Ok(proceed())
                }),
            )
        })
        .run()
}

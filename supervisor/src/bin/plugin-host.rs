//! `plugin-host`: the confinement launcher, installed beside `agent-runner` (its code and
//! docs live in the `agent-runner-plugin-host` crate, `plugin-host/src/launcher/`).

fn main() {
    agent_runner_plugin_host::launcher::main()
}

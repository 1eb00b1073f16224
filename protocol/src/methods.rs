//! JSON-RPC method names of protocol v1 (`docs/protocol.md` §3, §5).

/// `initialize`: the first request a host receives (`docs/protocol.md` §3).
pub const INITIALIZE: &str = "initialize";
/// `spawn_hook/before_spawn`: asks a spawn hook whether the agent may start (`docs/protocol.md` §5).
pub const BEFORE_SPAWN: &str = "spawn_hook/before_spawn";
/// `dirty_handler/handle_dirty`: asks a dirty handler what to do with a dirty tree (`docs/protocol.md` §5).
pub const HANDLE_DIRTY: &str = "dirty_handler/handle_dirty";
/// `shutdown`: the host finishes and then exits on stdin EOF (`docs/protocol.md` §5).
pub const SHUTDOWN: &str = "shutdown";

//! JSON-RPC method names of protocol v1 (`docs/protocol.md` §3, §5).

/// `initialize`: the first request a host receives (`docs/protocol.md` §3).
pub const INITIALIZE: &str = "initialize";
/// `spawn_hook/before_spawn`: asks a spawn hook whether the agent may start (`docs/protocol.md` §5).
pub const BEFORE_SPAWN: &str = "spawn_hook/before_spawn";
/// `dirty_handler/handle_dirty`: asks a dirty handler what to do with a dirty tree (`docs/protocol.md` §5).
pub const HANDLE_DIRTY: &str = "dirty_handler/handle_dirty";
/// `pre_round/before_round`: asks a pre-round hook whether this round runs (`docs/protocol.md` §5.3).
pub const BEFORE_ROUND: &str = "pre_round/before_round";
/// `context_enricher/enrich`: asks for an object to merge into the round context (`docs/protocol.md` §5.4).
pub const ENRICH: &str = "context_enricher/enrich";
/// `serve_startup/on_start`: called once when `serve` boots (`docs/protocol.md` §5.5).
pub const ON_START: &str = "serve_startup/on_start";
/// `detector/detect`: polls a detector with the project's state (`docs/protocol.md` §5.6).
pub const DETECT: &str = "detector/detect";
/// `shutdown`: the host finishes and then exits on stdin EOF (`docs/protocol.md` §5).
pub const SHUTDOWN: &str = "shutdown";
/// `post_round/after_round`: tells a post-round hook how a round ended (docs/protocol.md §5).
pub const AFTER_ROUND: &str = "post_round/after_round";
/// `output_watch/observe`: shows an output watch the next chunk of the running round's
/// log; it answers the usage of the model calls the chunk completed (docs/protocol.md §5.10).
pub const OBSERVE: &str = "output_watch/observe";

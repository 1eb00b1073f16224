//! Fuzzes the strict decoding of every message the supervisor or a host receives: bytes →
//! JSON → each result decoder (with its range and vocabulary rules) and each params type.
//! Decoding must return `Ok` or an `InvalidMessage`, never panic.

#![no_main]

use agent_runner_protocol::{
    decode, decode_dirty_result, decode_initialize_result, decode_spawn_decision,
    redact::redact_and_cap, BeforeSpawnParams, HandleDirtyParams, InitializeParams,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let _ = redact_and_cap(&String::from_utf8_lossy(data));
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let _ = decode_initialize_result(value.clone());
    let _ = decode_spawn_decision(value.clone());
    let dirty_files = ["notes/journal.md".to_owned(), "src/lib.rs".to_owned()];
    let _ = decode_dirty_result(value.clone(), &dirty_files);
    let _ = decode::<InitializeParams>(value.clone());
    let _ = decode::<BeforeSpawnParams>(value.clone());
    let _ = decode::<HandleDirtyParams>(value);
});

//! Fuzzes `agent-runner.toml` handling: bytes → `config::parse_str` (TOML parse, strict
//! keys, vocabulary and range checks, path resolution) against a scratch project directory
//! holding `prompts/main.md`. Bad input must give a `ConfigError`, never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

/// `<tmp>/ar-fuzz-config-<pid>/agent-runner.toml`, with the directory and the default
/// prompt file created once.
fn config_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("ar-fuzz-config-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("prompts")).expect("scratch dir");
        std::fs::write(dir.join("prompts/main.md"), "fuzz prompt\n").expect("prompt");
        dir.join("agent-runner.toml")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = agent_runner::config::parse_str(config_path(), text);
});

//! `watch [--interval S]`: `peek` redrawn in place every S seconds (cursor home, clear to
//! the end of the screen) until Ctrl-C, which exits 0 and leaves the last view on screen.
//! Read-only, like `peek`.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::exit::{self, CliError};
use crate::operator::interrupt::interrupt_signal;
use crate::operator::peek::{snapshot, PeekOptions};
use crate::operator::peek_render::{render, use_colour};

/// Default seconds between redraws.
pub(crate) const DEFAULT_INTERVAL_S: f64 = 2.0;

/// Redraws until interrupted. The config is re-read at each redraw, so an edit shows up.
///
/// Errors: 2 for an interval that is not a positive number; 78 when the config cannot be
/// loaded.
pub(crate) async fn run(config_path: &Path, interval_s: f64) -> Result<u8, CliError> {
    if !(interval_s.is_finite() && interval_s > 0.0) {
        return Err(CliError {
            code: exit::USAGE,
            message: format!(
                "watch: --interval expects a positive number of seconds, got {interval_s}"
            ),
        });
    }
    let interval = Duration::from_secs_f64(interval_s);
    let colour = use_colour();
    // Registered before the first frame, so an early Ctrl-C is a clean exit too.
    let mut interrupted = interrupt_signal()?;
    let mut clear = "\x1b[2J";
    loop {
        let config = crate::config::load(config_path)?;
        let doc = serde_json::to_value(snapshot(&config, &PeekOptions::default()).doc)
            .unwrap_or_default();
        let text = render(&doc, colour, false);
        let mut out = std::io::stdout().lock();
        // Cursor home, the view with each line cleared to its end, then clear below.
        let frame: String = text.lines().map(|l| format!("{l}\x1b[K\n")).collect();
        if write!(out, "{clear}\x1b[H{frame}\x1b[J")
            .and_then(|_| out.flush())
            .is_err()
        {
            return Ok(exit::OK);
        }
        drop(out);
        clear = "";
        tokio::select! {
            _ = interrupted.recv() => return Ok(exit::OK),
            _ = tokio::time::sleep(interval) => {}
        }
    }
}

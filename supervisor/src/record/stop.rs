//! Stop requests: SIGTERM/SIGINT (and later the control socket) raise the stop level that
//! every wait in the loop watches. First signal: graceful (no new round; the running round
//! finishes within its budget). Second signal: immediate (the running agent is terminated).

use tokio::sync::watch;

/// How hard the supervisor has been asked to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum StopLevel {
    /// Keep going.
    Run,
    /// Start no new round; let the running one finish.
    Graceful,
    /// Terminate the running agent now.
    Immediate,
}

/// The receiving side, cloned into every wait.
pub(crate) type StopWatch = watch::Receiver<StopLevel>;

/// The sending side: raises the level (signals, the control socket).
pub(crate) type StopSender = std::sync::Arc<watch::Sender<StopLevel>>;

/// Installs SIGTERM/SIGINT handlers that raise the level one step per signal; returns the
/// watch. Errors: the signal handlers could not be installed.
pub(crate) fn install_signal_handlers() -> std::io::Result<StopWatch> {
    install().map(|(_, rx)| rx)
}

/// [`install_signal_handlers`], also returning the sender for other stop sources.
///
/// Errors: the signal handlers could not be installed.
pub(crate) fn install() -> std::io::Result<(StopSender, StopWatch)> {
    use tokio::signal::unix::{signal, SignalKind};
    let (tx, rx) = watch::channel(StopLevel::Run);
    let tx = std::sync::Arc::new(tx);
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let signals = tx.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            let next = match *signals.borrow() {
                StopLevel::Run => StopLevel::Graceful,
                _ => StopLevel::Immediate,
            };
            tracing::info!(?next, "stop signal received");
            raise(&signals, next);
        }
    });
    Ok((tx, rx))
}

/// Raises the level to at least `level` (never lowers it).
pub(crate) fn raise(tx: &StopSender, level: StopLevel) {
    tx.send_if_modified(|current| {
        let raised = level > *current;
        if raised {
            *current = level;
        }
        raised
    });
}

/// Waits until the level is at least `level` (forever if the sender is gone).
pub(crate) async fn reached(stop: &mut StopWatch, level: StopLevel) {
    if stop.wait_for(|l| *l >= level).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Sleeps `duration` unless a stop of at least `level` arrives first; returns `true` when
/// interrupted.
pub(crate) async fn sleep_unless(
    stop: &mut StopWatch,
    level: StopLevel,
    duration: std::time::Duration,
) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(duration) => false,
        _ = reached(stop, level) => true,
    }
}

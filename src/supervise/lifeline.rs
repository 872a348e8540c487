//! The lifeline: when the caller (the Pi extension) dies abruptly, its end of our stdin pipe
//! closes. Reading stdin to EOF is how we notice, with no polling.

use tokio::io::AsyncReadExt;

/// Resolves when stdin reaches end-of-file (or fails). Whatever the caller writes is ignored.
pub async fn stdin_closed() {
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 1024];
    loop {
        match stdin.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Resolves when this process is asked to stop: SIGTERM, SIGINT or SIGHUP. Every face cancels its
/// dispatches on it, so a terminal's Ctrl-C, a host closing the session and a supervisor's
/// SIGTERM all take the same path. Pending forever if the handlers cannot be installed.
pub async fn stop_requested() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
        _ = hup.recv() => {}
    }
}

/// Cancel `cancel` when this process is asked to stop ([`stop_requested`]); abort the returned
/// task once the work is done.
pub fn cancel_on_stop(cancel: tokio_util::sync::CancellationToken) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        stop_requested().await;
        cancel.cancel();
    })
}

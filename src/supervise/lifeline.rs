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

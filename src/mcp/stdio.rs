//! The server's stdin, watched for end-of-file: the host closing our stdin means it is gone, and
//! every running dispatch must stop now, not after the SDK's grace period for pending replies.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

/// An [`AsyncRead`] that cancels `eof` when its inner reader reaches end-of-file or fails.
pub struct EofSignal<R> {
    inner: R,
    eof: CancellationToken,
}

impl<R> EofSignal<R> {
    pub fn new(inner: R, eof: CancellationToken) -> Self {
        Self { inner, eof }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for EofSignal<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let asked = buf.remaining() > 0;
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &polled {
            Poll::Ready(Ok(())) if asked && buf.filled().len() == before => self.eof.cancel(),
            Poll::Ready(Err(_)) => self.eof.cancel(),
            _ => {}
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn eof_cancels_data_does_not() {
        let eof = CancellationToken::new();
        let mut r = EofSignal::new(&b"abc"[..], eof.clone());
        let mut buf = [0u8; 2];
        assert_eq!(r.read(&mut buf).await.unwrap(), 2);
        assert!(!eof.is_cancelled());
        assert_eq!(r.read(&mut buf).await.unwrap(), 1);
        assert!(!eof.is_cancelled());
        assert_eq!(r.read(&mut buf).await.unwrap(), 0);
        assert!(eof.is_cancelled());
    }
}

//! What the server sends, and the deadline for a client to take it.
//!
//! An answer goes out a piece at a time: hyper asks for the next piece only once it has written
//! nearly all of the one before (its write buffer holds at most `MAX_HEAD` bytes beyond a piece),
//! so a client that reads slowly holds its own answer, never a copy of it, and the room the answer
//! has in its budget shrinks as it goes. [`WriteDeadline`] closes a connection whose client stops
//! taking its answer.

use super::work::Hold;
use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;
use tokio::time::{Instant, Sleep};

/// While the server waits to write, its client must take at least [`WRITE_PROGRESS`] bytes (or all
/// that was offered) within this long, or the connection is closed and its answer let go.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// See [`WRITE_TIMEOUT`]: 6.4 KB/s at the least, far below any real link.
pub const WRITE_PROGRESS: usize = 64 * 1024;

/// A response body: bytes built once and shared, an answer in pieces held in a budget, or a
/// simulation's lines as they come.
pub enum Out {
    Shared(Option<Bytes>),
    Pieces {
        pieces: VecDeque<Bytes>,
        /// Bytes not yet handed to hyper.
        left: usize,
        hold: Hold,
    },
    Stream {
        rx: mpsc::UnboundedReceiver<Bytes>,
        _cancel: super::CancelOnDrop,
    },
}

impl Out {
    /// An answer's pieces, `hold` its room in the budget.
    pub fn pieces(pieces: Vec<Vec<u8>>, hold: Hold) -> Out {
        let pieces: VecDeque<Bytes> = pieces
            .into_iter()
            .filter(|p| !p.is_empty())
            .map(Bytes::from)
            .collect();
        let left = pieces.iter().map(Bytes::len).sum();
        Out::Pieces { pieces, left, hold }
    }
}

impl Body for Out {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Out::Shared(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Out::Pieces { pieces, left, hold } => {
                // hyper asks for this piece once the one before is (nearly) written: its room goes
                // back now, and this piece's once the next is asked for or the body is dropped.
                hold.keep(*left);
                let next = pieces.pop_front();
                if let Some(p) = &next {
                    *left -= p.len();
                }
                Poll::Ready(next.map(|p| Ok(Frame::data(p))))
            }
            Out::Stream { rx, .. } => rx.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Out::Shared(b) => b.is_none(),
            Out::Pieces { pieces, .. } => pieces.is_empty(),
            Out::Stream { .. } => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Out::Shared(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            Out::Pieces { left, .. } => SizeHint::with_exact(*left as u64),
            Out::Stream { .. } => SizeHint::default(),
        }
    }
}

/// A connection whose writes fail once its client has taken less than [`WRITE_PROGRESS`] bytes
/// in [`WRITE_TIMEOUT`] while the server waited to write (hyper then closes it and drops the
/// answer). The clock starts when a write first has to wait and stops when a write takes all it
/// was offered (the client has caught up) or [`WRITE_PROGRESS`] bytes have gone since it started.
pub struct WriteDeadline<I> {
    io: I,
    sleep: Pin<Box<Sleep>>,
    /// Bytes written since the clock started; `None` while it is stopped.
    since: Option<usize>,
}

impl<I> WriteDeadline<I> {
    pub fn new(io: I) -> WriteDeadline<I> {
        WriteDeadline {
            io,
            sleep: Box::pin(tokio::time::sleep(WRITE_TIMEOUT)),
            since: None,
        }
    }

    /// After a write attempt of `offered` bytes.
    fn after(
        &mut self,
        offered: usize,
        r: Poll<io::Result<usize>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<usize>> {
        match r {
            Poll::Ready(Ok(n)) => {
                if let Some(since) = &mut self.since {
                    *since += n;
                    if n >= offered || *since >= WRITE_PROGRESS {
                        self.since = None;
                    }
                }
                Poll::Ready(Ok(n))
            }
            Poll::Pending => {
                if self.since.is_none() {
                    self.since = Some(0);
                    self.sleep.as_mut().reset(Instant::now() + WRITE_TIMEOUT);
                }
                match self.sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client did not take its answer",
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
            err => err,
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for WriteDeadline<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write(cx, buf);
        this.after(buf.len(), r, cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let offered = bufs.iter().map(|b| b.len()).sum();
        let r = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.after(offered, r, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

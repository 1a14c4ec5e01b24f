//! `railyard serve`: the web app over a small HTTP/1.1 server on std's sockets.
//!
//! The server binds loopback unless told otherwise, answers each connection once and closes it,
//! handles at most [`WORKERS`] connections at a time with at most [`QUEUE`] waiting (more get 503),
//! runs one simulation at a time with one more waiting (more get 503), reads at most [`MAX_HEAD`] bytes of request head
//! and [`app::MAX_BODY`] of body (413 beyond), times out slow clients, and never touches the file
//! system: every answer comes from `railyard_report::app`, which builds designs from the compiled-in
//! presets and catalog.

use crate::error::CliError;
use clap::Args;
use railyard_report::app::{self, Response};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Connections handled at once.
pub const WORKERS: usize = 4;
/// Accepted connections waiting for a worker; beyond this they are answered 503 at once.
pub const QUEUE: usize = 64;
/// Simulations running or waiting at most.
pub const SIMS: usize = 2;
/// Bytes of request line and headers at most.
pub const MAX_HEAD: usize = 8 * 1024;
/// A client has this long to send its whole request (head and body), however it trickles it.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Simulations in progress: how many run or wait, and the turn to run.
struct Sims {
    waiting: AtomicUsize,
    running: Mutex<()>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on; loopback by default. Port 0 picks a free port (printed on stdout).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,
}

pub fn run(a: &ServeArgs) -> Result<(), CliError> {
    let listener = TcpListener::bind(a.bind)
        .map_err(|e| CliError::failed(format!("--bind {}: {e}", a.bind)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| CliError::failed(e.to_string()))?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "railyard: warning: listening on {addr}, reachable from other machines; the app has no authentication"
        );
    }
    println!("railyard: serving http://{addr}/");
    let _ = std::io::stdout().flush();

    let (tx, rx) = sync_channel::<TcpStream>(QUEUE);
    let rx = Arc::new(Mutex::new(rx));
    let sims = Arc::new(Sims {
        waiting: AtomicUsize::new(0),
        running: Mutex::new(()),
    });
    for _ in 0..WORKERS {
        let rx = Arc::clone(&rx);
        let sims = Arc::clone(&sims);
        std::thread::spawn(move || worker(&rx, &sims));
    }
    for conn in listener.incoming() {
        let Ok(stream) = conn else { continue };
        match tx.try_send(stream) {
            Ok(()) => {}
            Err(TrySendError::Full(mut stream)) => {
                let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
                let _ = write_response(
                    &mut stream,
                    &Response::error(503, "server", "busy; try again shortly"),
                    false,
                );
            }
            Err(TrySendError::Disconnected(_)) => {
                return Err(CliError::failed("the request workers stopped"));
            }
        }
    }
    Ok(())
}

fn worker(rx: &Mutex<Receiver<TcpStream>>, sims: &Sims) {
    loop {
        let next = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(mut stream) = next else { return };
        let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
        let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
        // A panic in one request must not take a worker down.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            serve_one(&mut stream, sims)
        }));
    }
}

/// Reads from a socket until a deadline for the whole request, so a client trickling bytes cannot
/// hold a worker for long.
struct Deadline<'a> {
    stream: &'a TcpStream,
    until: Instant,
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        let mut s = self.stream;
        s.read(buf)
    }
}

/// A parsed request head.
struct Head {
    method: String,
    path: String,
    content_length: usize,
}

enum HeadError {
    /// Status and message.
    Bad(u16, &'static str, String),
    /// The client went away or timed out: answer nothing.
    Gone,
}

fn read_head(reader: &mut BufReader<Deadline<'_>>) -> Result<Head, HeadError> {
    let mut head = Vec::with_capacity(512);
    loop {
        let mut line = Vec::new();
        let n = reader
            .by_ref()
            .take((MAX_HEAD + 1 - head.len().min(MAX_HEAD)) as u64)
            .read_until(b'\n', &mut line)
            .map_err(|_| HeadError::Gone)?;
        if n == 0 {
            return Err(HeadError::Gone);
        }
        head.extend_from_slice(&line);
        if head.len() > MAX_HEAD {
            return Err(HeadError::Bad(
                431,
                "headers",
                format!("request head over {MAX_HEAD} bytes"),
            ));
        }
        if line == b"\r\n" || line == b"\n" {
            break;
        }
    }
    let text = String::from_utf8(head)
        .map_err(|_| HeadError::Bad(400, "headers", "request head is not UTF-8".into()))?;
    let mut lines = text.lines();
    let request = lines.next().unwrap_or_default();
    let mut parts = request.split(' ');
    let (Some(method), Some(path), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::Bad(
            400,
            "request",
            format!("malformed request line `{request}`"),
        ));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(HeadError::Bad(
            505,
            "request",
            format!("{version} is not supported"),
        ));
    }
    let mut content_length = 0usize;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("content-length") {
            content_length = value.parse().map_err(|_| {
                HeadError::Bad(400, "content-length", format!("`{value}` is not a length"))
            })?;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(HeadError::Bad(
                411,
                "transfer-encoding",
                "send a Content-Length instead of a chunked body".into(),
            ));
        }
    }
    Ok(Head {
        method: method.to_string(),
        path: path.to_string(),
        content_length,
    })
}

fn serve_one(stream: &mut TcpStream, sims: &Sims) {
    let mut reader = BufReader::new(Deadline {
        stream: &*stream,
        until: Instant::now() + READ_TIMEOUT,
    });
    let head = match read_head(&mut reader) {
        Ok(h) => h,
        Err(HeadError::Gone) => return,
        Err(HeadError::Bad(status, field, message)) => {
            drop(reader);
            let _ = write_response(stream, &Response::error(status, field, &message), false);
            return;
        }
    };
    if head.content_length > app::MAX_BODY {
        drop(reader);
        let answered = write_response(
            stream,
            &Response::error(
                413,
                "body",
                &format!(
                    "request body of {} bytes is over the limit of {} bytes",
                    head.content_length,
                    app::MAX_BODY
                ),
            ),
            false,
        );
        if answered.is_ok() {
            drain(stream);
        }
        return;
    }
    let mut body = vec![0u8; head.content_length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    drop(reader);
    let head_only = head.method == "HEAD";
    if head.method == "POST" && head.path.split('?').next() == Some("/api/sim") {
        sim(stream, &body, sims);
        return;
    }
    let resp = app::handle(&head.method, &head.path, &body);
    let _ = write_response(stream, &resp, head_only);
}

/// `POST /api/sim`: validate, then stream progress lines and the result (one simulation at a time).
fn sim(stream: &mut TcpStream, body: &[u8], sims: &Sims) {
    let (catalog, fabric) = match app::sim_check(body) {
        Ok(x) => x,
        Err(resp) => {
            let _ = write_response(stream, &resp, false);
            return;
        }
    };
    // One simulation runs at a time and one more may wait; beyond that, 503. So at least
    // WORKERS - SIMS workers stay free for pages and plans.
    if sims.waiting.fetch_add(1, Ordering::AcqRel) >= SIMS {
        sims.waiting.fetch_sub(1, Ordering::AcqRel);
        let _ = write_response(
            stream,
            &Response::error(503, "server", "simulations are queued; try again shortly"),
            false,
        );
        return;
    }
    // Counted down however this ends, a panic included.
    struct Queued<'a>(&'a AtomicUsize);
    impl Drop for Queued<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::AcqRel);
        }
    }
    let _queued = Queued(&sims.waiting);
    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n";
    let mut ok = stream.write_all(head.as_bytes()).is_ok();
    if sims.running.try_lock().is_err() {
        ok = ok
            && stream
                .write_all(b"{\"progress\":\"waiting for another simulation\"}\n")
                .is_ok();
    }
    // A panic in another simulation poisons the lock but leaves nothing half-done: go on.
    let _turn = sims.running.lock().unwrap_or_else(|e| e.into_inner());
    let mut emit = |line: &str| {
        if ok {
            ok = stream
                .write_all(line.as_bytes())
                .and_then(|()| stream.flush())
                .is_ok();
        }
    };
    let last = app::sim(&catalog, &fabric, &mut emit);
    emit(&last);
}

/// Reads and drops what the client still sends (a body over the limit), briefly, so that closing the
/// socket does not reset the connection before the client has read the answer.
fn drain(stream: &mut TcpStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut buf = [0u8; 16 * 1024];
    let mut total = 0usize;
    while total < 4 * 1024 * 1024 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => total += n,
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Error",
    }
}

fn write_response(stream: &mut TcpStream, r: &Response, head_only: bool) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
        r.status,
        reason(r.status),
        r.content_type,
        r.body.len()
    );
    stream.write_all(head.as_bytes())?;
    if !head_only {
        stream.write_all(&r.body)?;
    }
    stream.flush()?;
    // Let the client read the answer before the socket closes, even if it sent more than we read.
    let _ = stream.shutdown(std::net::Shutdown::Write);
    Ok(())
}

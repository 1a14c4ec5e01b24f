//! `railyard serve`: the web app over HTTP/1.1 (hyper on a tokio runtime).
//!
//! Connections are tasks, not threads: an idle or slow connection costs a few kilobytes, so many
//! clients that trickle their requests cannot hold the server. Each connection has a deadline for
//! its request head ([`HEAD_TIMEOUT`], which also ends idle keep-alive connections) and one for its
//! body ([`BODY_TIMEOUT`]); at most [`MAX_CONNECTIONS`] are open at once (more are answered 503 and
//! closed). The work runs on tokio's blocking pool, bounded: at most [`WORKERS`] plans (and
//! simulation checks) compute at once, the rest wait without holding a thread; one simulation runs
//! at a time with at most [`SIMS`] running or waiting (more get 503).
//!
//! A simulation stops soon after its client goes away (the response body is dropped, which sets its
//! cancellation flag; the simulator reads the flag between its steps), and a newer `/api/sim?client=ID`
//! supersedes an older one with the same id, running or waiting. The server binds loopback unless
//! told otherwise, reads at most [`MAX_HEAD`] bytes of request head (431 beyond) and
//! [`app::MAX_BODY`] of body (413 beyond), and never touches the file system: every answer comes
//! from `railyard_report::app`, which builds designs from the compiled-in presets and catalog.

use crate::error::CliError;
use bytes::Bytes;
use clap::Args;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONNECTION, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request};
use hyper_util::rt::{TokioIo, TokioTimer};
use railyard_report::app::{self, Response};
use railyard_sim::Cancel;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Notify, OwnedSemaphorePermit, Semaphore};

/// Plans (and simulation checks) computed at once; more wait for a turn without holding a thread.
pub const WORKERS: usize = 4;
/// Connections open at once; beyond this a new connection is answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 1024;
/// Simulations running or waiting at most (one runs at a time); more get 503.
pub const SIMS: usize = 2;
/// Bytes of request line and headers at most (hyper's smallest read buffer); more get 431.
pub const MAX_HEAD: usize = 8 * 1024;
/// A connection has this long to send a request head once the server waits for one (so an idle
/// keep-alive connection closes after it too).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// A request has this long to send its body after its head; then 408.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// After this a connection takes no new request: the one in progress finishes, then it closes.
const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
/// A connection still open this long after [`CONNECTION_LIFETIME`] (a client that does not read its
/// answer) is closed.
const CONNECTION_GRACE: Duration = Duration::from_secs(600);
/// What the server reads and drops of a body over the limit before answering 413, so that closing
/// does not reset the connection before the client reads the answer.
const DRAIN_BYTES: usize = 4 * 1024 * 1024;
const DRAIN_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on; loopback by default. Port 0 picks a free port (printed on stdout).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,
}

pub fn run(a: &ServeArgs) -> Result<(), CliError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Plans and simulation checks, the simulation, and one spare for a cancelled simulation
        // that has not yet noticed.
        .max_blocking_threads(WORKERS + 2)
        .build()
        .map_err(|e| CliError::failed(format!("starting the server's runtime: {e}")))?;
    rt.block_on(async {
        let listener = TcpListener::bind(a.bind)
            .await
            .map_err(|e| CliError::failed(format!("--bind {}: {e}", a.bind)))?;
        let addr = listener
            .local_addr()
            .map_err(|e| CliError::failed(e.to_string()))?;
        if !addr.ip().is_loopback() {
            crate::io::say!(
                "railyard: warning: listening on {addr}, reachable from other machines; the app has no authentication"
            );
        }
        // A stdout that is gone (a closed pipe) loses the line and the server goes on serving.
        crate::io::print(&format!("railyard: serving http://{addr}/\n"))?;
        accept_loop(listener, Arc::new(State::new())).await;
        Ok(())
    })
}

/// What every connection shares: the pages answered from memory, the turns to compute, the
/// simulations in progress.
struct State {
    /// `GET /` and `GET /api/presets`: pure functions of compiled-in data, built once.
    page: Response,
    presets: Response,
    workers: Arc<Semaphore>,
    connections: Arc<Semaphore>,
    sims: Sims,
}

impl State {
    fn new() -> State {
        State {
            page: app::handle("GET", "/", b""),
            presets: app::handle("GET", "/api/presets", b""),
            workers: Arc::new(Semaphore::new(WORKERS)),
            connections: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
            sims: Sims::new(),
        }
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of file descriptors or a connection reset before accept: wait a little.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        match Arc::clone(&state.connections).try_acquire_owned() {
            Ok(permit) => {
                let state = Arc::clone(&state);
                tokio::spawn(async move {
                    let _permit = permit;
                    connection(stream, state).await;
                });
            }
            Err(_) => {
                tokio::spawn(refuse(stream));
            }
        }
    }
}

/// Answers 503 to a connection over [`MAX_CONNECTIONS`], giving it a second to take the answer.
async fn refuse<S: AsyncWrite + Unpin>(mut stream: S) {
    let r = Response::error(503, "server", "too many connections; try again shortly");
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        r.content_type,
        r.body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(&r.body).await?;
        stream.shutdown().await
    })
    .await;
}

/// Serves one connection (HTTP/1.1 with keep-alive) until the client closes it or a deadline ends
/// it.
async fn connection<I>(io: I, state: Arc<State>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| {
        let state = Arc::clone(&state);
        async move { Ok::<_, Infallible>(handle(req, &state).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD)
        .serve_connection(TokioIo::new(io), service);
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = tokio::time::sleep(CONNECTION_LIFETIME) => conn.as_mut().graceful_shutdown(),
    }
    let _ = tokio::time::timeout(CONNECTION_GRACE, conn).await;
}

type Answer = hyper::Response<Out>;

/// An answer from the app, with the headers every answer carries.
fn answer(r: Response) -> Answer {
    let mut a = hyper::Response::new(Out::Full(Some(Bytes::from(r.body))));
    *a.status_mut() =
        hyper::StatusCode::from_u16(r.status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let h = a.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(r.content_type));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    a
}

/// An answer after which the connection closes (the request body was not read to its end).
fn closing(r: Response) -> Answer {
    let mut a = answer(r);
    a.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    a
}

async fn handle(req: Request<Incoming>, state: &State) -> Answer {
    let method = req.method().clone();
    let target = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string());
    let path = req.uri().path().to_string();
    let declared = req.body().size_hint().lower();
    let mut body = req.into_body();
    if declared > app::MAX_BODY as u64 {
        drain(&mut body).await;
        return closing(too_large(&format!("{declared} bytes")));
    }
    let read = tokio::time::timeout(BODY_TIMEOUT, Limited::new(body, app::MAX_BODY).collect());
    let body = match read.await {
        Ok(Ok(c)) => c.to_bytes(),
        Ok(Err(e)) if e.is::<LengthLimitError>() => {
            return closing(too_large(&format!("more than {} bytes", app::MAX_BODY)))
        }
        Ok(Err(e)) => {
            return closing(Response::error(
                400,
                "body",
                &format!("reading the request body: {e}"),
            ))
        }
        Err(_) => {
            return closing(Response::error(
                408,
                "body",
                &format!(
                    "the request body did not arrive within {} s",
                    BODY_TIMEOUT.as_secs()
                ),
            ))
        }
    };
    match (&method, path.as_str()) {
        (&Method::GET | &Method::HEAD, "/" | "/index.html") => answer(state.page.clone()),
        (&Method::GET | &Method::HEAD, "/api/presets") => answer(state.presets.clone()),
        (&Method::GET | &Method::HEAD, "/api/status") => answer(status(state)),
        (&Method::POST, "/api/sim") => sim(state, &target, body).await,
        (&Method::POST, "/api/plan") => {
            let r = compute(state, move || app::plan(&body)).await;
            answer(r.unwrap_or_else(|e| e))
        }
        // A design's files and the comparison's charts: planning work, on the same pool.
        (&Method::POST, "/api/report" | "/api/cabling" | "/api/compare") => {
            let path = path.clone();
            let r = compute(state, move || app::handle("POST", &path, &body)).await;
            answer(r.unwrap_or_else(|e| e))
        }
        (_, "/api/status") => answer(Response::error(
            405,
            "method",
            &format!("{method} is not allowed on /api/status"),
        )),
        // Everything else (404, 405) is cheap.
        _ => answer(app::handle(method.as_str(), &target, &body)),
    }
}

/// `GET /api/status`: open connections and simulations, for a look at a running server.
fn status(state: &State) -> Response {
    let admitted = state
        .sims
        .live
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .len();
    Response::json(
        200,
        &serde_json::json!({
            "connections": MAX_CONNECTIONS - state.connections.available_permits(),
            "simulations": {
                "computing": 1 - state.sims.turn.available_permits().min(1),
                "admitted": admitted,
            },
            "limits": {
                "connections": MAX_CONNECTIONS,
                "workers": WORKERS,
                "simulations": SIMS,
                "head_bytes": MAX_HEAD,
                "body_bytes": app::MAX_BODY,
                "head_timeout_s": HEAD_TIMEOUT.as_secs(),
                "body_timeout_s": BODY_TIMEOUT.as_secs(),
            },
        }),
    )
}

fn too_large(what: &str) -> Response {
    Response::error(
        413,
        "body",
        &format!(
            "request body of {what} is over the limit of {} bytes",
            app::MAX_BODY
        ),
    )
}

/// Reads and drops up to [`DRAIN_BYTES`] of a refused body, for at most [`DRAIN_TIMEOUT`].
async fn drain(body: &mut Incoming) {
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, async {
        let mut seen = 0usize;
        while seen < DRAIN_BYTES {
            match body.frame().await {
                Some(Ok(f)) => seen += f.data_ref().map_or(0, Bytes::len),
                _ => break,
            }
        }
    })
    .await;
}

/// Runs `f` on the blocking pool once one of the [`WORKERS`] turns is free. Waiting holds no
/// thread; the turn is held until `f` returns, even if the client has gone meanwhile.
async fn compute<T, F>(state: &State, f: F) -> Result<T, Response>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let failed = || Response::error(500, "server", "the request failed inside the server");
    let permit = Arc::clone(&state.workers)
        .acquire_owned()
        .await
        .map_err(|_| failed())?;
    tokio::task::spawn_blocking(move || {
        let _turn = permit;
        f()
    })
    .await
    .map_err(|_| failed())
}

/// Why a simulation was cancelled (its flag's reason).
const GONE: u8 = 1;
const SUPERSEDED: u8 = 2;

/// A simulation's cancellation flag: read by the simulator between steps, awaited by its driver
/// while it waits for its turn.
#[derive(Default)]
struct Flag {
    set: AtomicBool,
    reason: AtomicU8,
    notify: Notify,
}

impl Flag {
    fn cancel(&self, reason: u8) {
        let _ = self
            .reason
            .compare_exchange(0, reason, Ordering::AcqRel, Ordering::Acquire);
        self.set.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    async fn cancelled(&self) {
        loop {
            let notified = self.notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.is_set() {
                return;
            }
            notified.await;
        }
    }

    fn why(&self) -> &'static str {
        match self.reason.load(Ordering::Acquire) {
            SUPERSEDED => "superseded by a newer request from the same client",
            _ => "the client went away",
        }
    }
}

/// Simulations running or waiting: their client ids and flags, and the turn to run.
struct Sims {
    live: Arc<Mutex<Vec<Entry>>>,
    next: AtomicU64,
    turn: Arc<Semaphore>,
}

struct Entry {
    id: u64,
    client: Option<String>,
    flag: Arc<Flag>,
}

/// A simulation's place among the [`SIMS`]; given back when dropped.
struct Ticket {
    live: Arc<Mutex<Vec<Entry>>>,
    id: u64,
    flag: Arc<Flag>,
}

impl Sims {
    fn new() -> Sims {
        Sims {
            live: Arc::default(),
            next: AtomicU64::new(0),
            turn: Arc::new(Semaphore::new(1)),
        }
    }

    /// A place for a new simulation, after cancelling the same client's older ones (they leave at
    /// once, even if they take a moment to stop); `None` when [`SIMS`] are running or waiting.
    fn admit(&self, client: Option<String>) -> Option<Ticket> {
        // The list stays consistent whatever panicked while it was held: go on with it.
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = &client {
            live.retain(|e| {
                let same = e.client.as_ref() == Some(c);
                if same {
                    e.flag.cancel(SUPERSEDED);
                }
                !same
            });
        }
        if live.len() >= SIMS {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let flag = Arc::new(Flag::default());
        live.push(Entry {
            id,
            client,
            flag: Arc::clone(&flag),
        });
        Some(Ticket {
            live: Arc::clone(&self.live),
            id,
            flag,
        })
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|e| e.id != self.id);
    }
}

/// `POST /api/sim`: check the design, take a place, then stream progress lines and the result.
async fn sim(state: &State, target: &str, body: Bytes) -> Answer {
    let client = match app::client_id(target) {
        Ok(c) => c,
        Err(r) => return answer(r),
    };
    let (catalog, fabric) = match compute(state, move || app::sim_check(&body)).await {
        Ok(Ok(x)) => x,
        Ok(Err(r)) | Err(r) => return answer(r),
    };
    let Some(ticket) = state.sims.admit(client) else {
        return answer(Response::error(
            503,
            "server",
            "simulations are queued; try again shortly",
        ));
    };
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    let cancel = CancelOnDrop(Arc::clone(&ticket.flag));
    tokio::spawn(drive(
        ticket,
        Arc::clone(&state.sims.turn),
        tx,
        catalog,
        fabric,
    ));
    let mut a = answer(Response {
        status: 200,
        content_type: "application/x-ndjson",
        body: Vec::new(),
    });
    *a.body_mut() = Out::Stream {
        rx,
        _cancel: cancel,
    };
    a
}

/// Waits for the turn to run (or for cancellation), then simulates on the blocking pool, sending
/// each NDJSON line to the response as it comes.
async fn drive(
    ticket: Ticket,
    turn: Arc<Semaphore>,
    tx: mpsc::UnboundedSender<Bytes>,
    catalog: railyard_catalog::Catalog,
    fabric: railyard_fabric::Fabric,
) {
    let flag = Arc::clone(&ticket.flag);
    let send = move |line: &str| {
        // The receiver is gone only when the response body was dropped, which cancels already.
        let _ = tx.send(Bytes::copy_from_slice(line.as_bytes()));
    };
    let permit: OwnedSemaphorePermit = match Arc::clone(&turn).try_acquire_owned() {
        Ok(p) => p,
        Err(_) => {
            send("{\"progress\":\"waiting for another simulation\"}\n");
            tokio::select! {
                p = turn.acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => return,
                },
                () = flag.cancelled() => {
                    send(&app::cancelled_line(flag.why()));
                    return;
                }
            }
        }
    };
    let _ = tokio::task::spawn_blocking(move || {
        let _turn = permit;
        let _place = ticket;
        let mut emit = |line: &str| send(line);
        match app::sim_until(&catalog, &fabric, &mut emit, Cancel::new(&flag.set)) {
            Ok(last) => emit(&last),
            Err(_) => emit(&app::cancelled_line(flag.why())),
        }
    })
    .await;
}

/// Cancels a simulation when its response body is dropped: sent, or its client gone.
struct CancelOnDrop(Arc<Flag>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel(GONE);
    }
}

/// A response body: all at once, or a simulation's lines as they come.
enum Out {
    Full(Option<Bytes>),
    Stream {
        rx: mpsc::UnboundedReceiver<Bytes>,
        _cancel: CancelOnDrop,
    },
}

impl Body for Out {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Out::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Out::Stream { rx, .. } => rx.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Out::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Out::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Out::Full(None) => SizeHint::with_exact(0),
            Out::Stream { .. } => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The server's handling of request heads and bodies, over an in-memory connection with the
    //! clock paused (deadlines pass at once when nothing else is left to do). Property tests: no
    //! bytes a client sends make the server panic or answer anything but HTTP; failures found are
    //! kept in proptest-regressions/ and as the named cases below.

    use super::*;
    use proptest::prelude::*;
    use std::sync::LazyLock;
    use tokio::io::AsyncReadExt;

    static STATE: LazyLock<Arc<State>> = LazyLock::new(|| Arc::new(State::new()));

    /// Sends `bytes` on a fresh connection and returns everything the server wrote before it
    /// closed the connection; panics if the connection's task panicked.
    fn exchange(bytes: &[u8]) -> Vec<u8> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a test runtime");
        rt.block_on(async {
            let (client, server) = tokio::io::duplex(64 * 1024);
            let task = tokio::spawn(connection(server, Arc::clone(&STATE)));
            let (mut rd, mut wr) = tokio::io::split(client);
            let write = async {
                let _ = wr.write_all(bytes).await;
                // Keep the write side open: a closed one would cancel the request.
                wr
            };
            let mut out = Vec::new();
            let (wr, _) = tokio::join!(write, rd.read_to_end(&mut out));
            drop(wr);
            task.await.expect("the connection task panicked");
            out
        })
    }

    /// Every answer on the connection starts like an HTTP/1.x status line (the request's version);
    /// no 500 (a panic inside).
    fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
        let out = exchange(bytes);
        let text = String::from_utf8_lossy(&out);
        let short: String = text.chars().take(300).collect();
        prop_assert!(
            out.is_empty() || out.starts_with(b"HTTP/1.1 ") || out.starts_with(b"HTTP/1.0 "),
            "not HTTP: {short:?}"
        );
        prop_assert!(!text.contains(" 500 Internal"), "{short}");
        Ok(())
    }

    fn status(bytes: &[u8]) -> u16 {
        let out = exchange(bytes);
        let text = String::from_utf8_lossy(&out);
        text.split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status in {text:?}"))
    }

    /// A request head from parts the server treats specially, and nonsense beside them. Bodies
    /// never start a JSON object except the small two-switch design, so no test simulates a big
    /// fabric.
    fn request() -> impl Strategy<Value = Vec<u8>> {
        let method = prop::sample::select(vec![
            "GET", "POST", "HEAD", "PUT", "OPTIONS", "CONNECT", "DELETE", "get", "G\0T", "",
        ]);
        let path = prop_oneof![
            prop::sample::select(vec![
                "/",
                "/index.html",
                "/api/plan",
                "/api/sim",
                "/api/sim?client=a",
                "/api/sim?client=",
                "/api/sim?client=a&client=%20",
                "/api/presets",
                "/api/status",
                "*",
                "http://x/api/plan",
                "//",
            ])
            .prop_map(str::to_string),
            "[ -~]{0,40}",
            "\\PC{0,20}",
        ];
        let version = prop::sample::select(vec![
            "HTTP/1.1",
            "HTTP/1.0",
            "HTTP/2.0",
            "HTTP/9.9",
            "HTTP/1.1x",
            "",
            "http/1.1",
        ]);
        let name = prop_oneof![
            prop::sample::select(vec![
                "Host",
                "Connection",
                "Expect",
                "Content-Type",
                "Upgrade",
                "Accept"
            ])
            .prop_map(str::to_string),
            "[A-Za-z-]{1,20}",
            "[ -~]{0,10}",
        ];
        let value = prop_oneof![
            prop::sample::select(vec!["close", "keep-alive", "100-continue", "h2c", ""])
                .prop_map(str::to_string),
            "[ -~]{0,40}",
            "\\PC{0,10}",
        ];
        let headers = prop::collection::vec((name, value), 0..6);
        let body = prop_oneof![
            Just(br#"{"preset": "seed-two-switch"}"#.to_vec()),
            prop::collection::vec(any::<u8>(), 0..64).prop_map(|mut b| {
                b.insert(0, b'x');
                b
            }),
        ];
        // How the body's length is told: truly, falsely (never 0: an empty body is a default design),
        // chunked (well-formed or not), or not at all.
        let framing = prop_oneof![
            Just(None),
            Just(Some("true".to_string())),
            "[1-9][0-9]{0,25}|-1|1,1|0x10| 5|[ -~]{1,8}".prop_map(Some),
            Just(Some("chunked".to_string())),
            Just(Some("chunked-bad".to_string())),
        ];
        let eol = prop::sample::select(vec!["\r\n", "\n", "\r"]);
        (method, path, version, headers, body, framing, eol).prop_map(
            |(method, path, version, headers, body, framing, eol)| {
                let mut r = format!("{method} {path} {version}{eol}").into_bytes();
                for (k, v) in headers {
                    r.extend_from_slice(format!("{k}: {v}{eol}").as_bytes());
                }
                let body = match framing.as_deref() {
                    Some("true") => {
                        r.extend_from_slice(
                            format!("Content-Length: {}{eol}", body.len()).as_bytes(),
                        );
                        body
                    }
                    Some("chunked") => {
                        r.extend_from_slice(format!("Transfer-Encoding: chunked{eol}").as_bytes());
                        let mut c = format!("{:x}\r\n", body.len()).into_bytes();
                        c.extend_from_slice(&body);
                        c.extend_from_slice(b"\r\n0\r\n\r\n");
                        c
                    }
                    Some("chunked-bad") => {
                        r.extend_from_slice(format!("Transfer-Encoding: chunked{eol}").as_bytes());
                        let mut c = b"fffffffffffffffffff\r\n".to_vec();
                        c.extend_from_slice(&body);
                        c
                    }
                    Some(n) => {
                        r.extend_from_slice(format!("Content-Length: {n}{eol}").as_bytes());
                        body
                    }
                    None => body,
                };
                r.extend_from_slice(eol.as_bytes());
                r.extend_from_slice(&body);
                r
            },
        )
    }

    proptest! {
        // 128 cases in the suite; PROPTEST_CASES=N fuzzes longer.
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(128),
            ..ProptestConfig::default()
        })]

        #[test]
        fn any_bytes_get_http_or_nothing(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
            check(&bytes)?;
        }

        #[test]
        fn any_request_head_gets_http_or_nothing(r in request()) {
            check(&r)?;
        }

        #[test]
        fn client_ids_are_checked_not_trusted(q in "\\PC{0,80}") {
            let _ = app::client_id(&format!("/api/sim?{q}"));
        }
    }

    #[test]
    fn a_head_over_the_limit_answers_431() {
        let mut r = b"GET / HTTP/1.1\r\nX-Big: ".to_vec();
        r.resize(MAX_HEAD + 100, b'a');
        r.extend_from_slice(b"\r\n\r\n");
        assert_eq!(status(&r), 431);
    }

    #[test]
    fn bodies_over_the_limit_answer_413_told_or_chunked() {
        let told = format!(
            "POST /api/plan HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            app::MAX_BODY + 1
        );
        assert_eq!(status(told.as_bytes()), 413);
        let huge = "POST /api/plan HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n";
        assert_eq!(status(huge.as_bytes()), 400, "a length that overflows");
        // One chunk a byte over the limit.
        let over = app::MAX_BODY + 1;
        let mut chunked =
            format!("POST /api/plan HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{over:x}\r\n")
                .into_bytes();
        chunked.extend(std::iter::repeat_n(b' ', over));
        chunked.extend_from_slice(b"\r\n0\r\n\r\n");
        assert_eq!(status(&chunked), 413);
    }

    #[test]
    fn a_body_that_stops_coming_answers_408() {
        let r = "POST /api/plan HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"serv";
        assert_eq!(status(r.as_bytes()), 408);
    }

    #[test]
    fn a_head_that_stops_coming_gets_no_answer() {
        // The paused clock runs past HEAD_TIMEOUT; the server closes without answering.
        assert_eq!(exchange(b"GET / HTTP/1.1\r\nX-Slow: 1"), b"");
    }

    #[test]
    fn requests_on_one_connection_are_answered_in_turn() {
        let out = exchange(
            b"GET /api/status HTTP/1.1\r\n\r\nPOST /api/plan HTTP/1.1\r\nContent-Length: 29\r\n\r\n{\"preset\": \"seed-two-switch\"}GET /nope HTTP/1.1\r\n\r\n",
        );
        let text = String::from_utf8_lossy(&out);
        let statuses: Vec<&str> = text
            .match_indices("HTTP/1.1 ")
            .map(|(i, _)| &text[i + 9..i + 12])
            .collect();
        assert_eq!(statuses, ["200", "200", "404"], "{text}");
    }

    #[test]
    fn a_connection_over_the_limit_is_answered_503() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let out = rt.block_on(async {
            let (mut client, server) = tokio::io::duplex(4096);
            refuse(server).await;
            let mut out = Vec::new();
            client.read_to_end(&mut out).await.unwrap();
            out
        });
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 503 "), "{text}");
        assert!(text.ends_with(r#""field":"server"}"#), "{text}");
    }

    #[test]
    fn a_waiting_simulation_hears_its_cancellation() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let flag = Arc::new(Flag::default());
            let waiter = tokio::spawn({
                let flag = Arc::clone(&flag);
                async move { flag.cancelled().await }
            });
            tokio::task::yield_now().await;
            flag.cancel(GONE);
            tokio::time::timeout(Duration::from_secs(1), waiter)
                .await
                .expect("woken")
                .unwrap();
            assert_eq!(flag.why(), "the client went away");
            // Already set: returns at once.
            flag.cancelled().await;
        });
    }

    #[test]
    fn a_client_supersedes_its_own_older_simulation() {
        let sims = Sims::new();
        let a = sims.admit(Some("page-A".into())).unwrap();
        let b = sims.admit(Some("page-B".into())).unwrap();
        assert!(sims.admit(None).is_none(), "two are running or waiting");
        let a2 = sims
            .admit(Some("page-A".into()))
            .expect("replaces page-A's");
        assert!(a.flag.is_set() && a.flag.why().starts_with("superseded"));
        assert!(!b.flag.is_set() && !a2.flag.is_set());
        drop((a, b));
        assert!(sims.admit(None).is_some(), "page-B's place is free again");
    }
}

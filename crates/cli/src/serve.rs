//! `railyard serve`: the web app over HTTP/1.1 (hyper on a tokio runtime).
//!
//! Connections are tasks, not threads: an idle or slow connection costs a few kilobytes, so many
//! clients that trickle their requests cannot hold the server. Each connection has a deadline for
//! its request head ([`HEAD_TIMEOUT`], which also ends idle keep-alive connections), one for its
//! body ([`BODY_TIMEOUT`]) and one for taking its answer ([`body::WRITE_TIMEOUT`]: a client that
//! stops reading is closed and its answer let go); at most [`MAX_CONNECTIONS`] are open at once
//! (more are answered 503 and closed).
//!
//! Memory is bounded whatever the clients do ([`work`]): plans run on two lanes by the design's
//! size (at most [`WORKERS`] small ones at once, one big one at a time with at most
//! [`work::HEAVY_ADMITTED`] admitted), and every computed answer is held in a byte budget until its
//! client has taken it, a piece at a time ([`body::Out`]). Past a limit the answer is 503 with
//! `Retry-After`. One simulation runs at a time with at most [`SIMS`] running or waiting.
//!
//! A simulation stops soon after its client goes away (the response body is dropped, which sets its
//! cancellation flag; the simulator reads the flag between its steps), and a newer `/api/sim?client=ID`
//! supersedes an older one with the same id, running or waiting. The server binds loopback unless
//! told otherwise, reads at most [`MAX_HEAD`] bytes of request head (431 beyond) and
//! [`app::MAX_BODY`] of body (413 beyond), takes request bodies only as `application/json` (415
//! otherwise: [`app::check_content_type`]), and never touches the file system: every answer comes
//! from `railyard_web`, which builds designs from the compiled-in presets and catalog.

mod body;
mod work;

use crate::error::CliError;
use body::{Out, WriteDeadline};
use bytes::Bytes;
use clap::Args;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::{Body, Incoming};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONNECTION, CONTENT_TYPE, RETRY_AFTER};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request};
use hyper_util::rt::{TokioIo, TokioTimer};
use railyard_web::{self as app, Cancel, Response};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Notify, OwnedSemaphorePermit, Semaphore};
use work::{busy, Answers, Class, Lanes, RETRY_AFTER_S};

/// Small plans (and simulation checks) computed at once; more wait for a turn without holding a
/// thread. Big ones have their own lane ([`work`]).
pub const WORKERS: usize = 4;
/// Connections open at once; beyond this a new connection is answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 1024;
/// Simulations running or waiting at most (one runs at a time); more get 503.
pub const SIMS: usize = 2;
/// Bytes of request line and headers at most (hyper's smallest read buffer); more get 431. Also
/// what hyper buffers of an answer beyond the piece it is writing.
pub const MAX_HEAD: usize = 8 * 1024;
/// A connection has this long to send a request head once the server waits for one (so an idle
/// keep-alive connection closes after it too).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// A request has this long to send its body after its head; then 408.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// After this a connection takes no new request: the one in progress finishes, then it closes.
const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
/// A connection still open this long after [`CONNECTION_LIFETIME`] (a client that reads its answer
/// just fast enough for the write deadline) is closed.
const CONNECTION_GRACE: Duration = Duration::from_secs(120);
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
        // The light lane's plans and simulation checks, the simulation, and one spare for a
        // cancelled simulation that has not yet noticed (the heavy lane has its own thread).
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

/// What every connection shares: the pages answered from memory, the lanes and budgets of the
/// work, the simulations in progress.
struct State {
    /// `GET /` and `GET /api/presets`: pure functions of compiled-in data, built once and shared
    /// by every answer (no copy per request).
    page: Shared,
    presets: Shared,
    lanes: Lanes,
    answers: Answers,
    connections: Arc<Semaphore>,
    sims: Sims,
}

/// An answer built once.
struct Shared {
    status: u16,
    content_type: &'static str,
    body: Bytes,
}

impl Shared {
    fn of(r: Response) -> Shared {
        Shared {
            status: r.status,
            content_type: r.content_type,
            body: Bytes::from(r.body),
        }
    }
}

impl State {
    fn new() -> State {
        State {
            page: Shared::of(app::handle("GET", "/", b"")),
            presets: Shared::of(app::handle("GET", "/api/presets", b"")),
            lanes: Lanes::new(),
            answers: Answers::new(),
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
    let r = busy("too many connections; try again shortly");
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nRetry-After: {RETRY_AFTER_S}\r\nConnection: close\r\n\r\n",
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
        .serve_connection(TokioIo::new(WriteDeadline::new(io)), service);
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = tokio::time::sleep(CONNECTION_LIFETIME) => conn.as_mut().graceful_shutdown(),
    }
    let _ = tokio::time::timeout(CONNECTION_GRACE, conn).await;
}

type Answer = hyper::Response<Out>;

/// An answer with the headers every answer carries; a 503 also says when to try again.
fn respond(status: u16, content_type: &'static str, body: Out) -> Answer {
    let mut a = hyper::Response::new(body);
    *a.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let h = a.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    if status == 503 {
        h.insert(RETRY_AFTER, HeaderValue::from(RETRY_AFTER_S));
    }
    a
}

/// A small answer from the app, outside the budgets (an error, a status).
fn answer(r: Response) -> Answer {
    respond(
        r.status,
        r.content_type,
        Out::Shared(Some(Bytes::from(r.body))),
    )
}

/// A page built once.
fn shared(s: &Shared) -> Answer {
    respond(s.status, s.content_type, Out::Shared(Some(s.body.clone())))
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
    let content_type = req
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| v.as_bytes().to_vec());
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
    let posted = matches!(
        path.as_str(),
        "/api/sim" | "/api/plan" | "/api/report" | "/api/cabling" | "/api/compare"
    );
    if method == Method::POST && posted {
        if let Err(r) = app::check_content_type(content_type.as_deref(), body.len()) {
            return answer(r);
        }
    }
    match (&method, path.as_str()) {
        (&Method::GET | &Method::HEAD, "/" | "/index.html") => shared(&state.page),
        (&Method::GET | &Method::HEAD, "/api/presets") => shared(&state.presets),
        (&Method::GET | &Method::HEAD, "/api/status") => answer(status(state)),
        (&Method::POST, "/api/sim") => sim(state, &target, body).await,
        (&Method::POST, "/api/compare") => {
            // Charts of at most `app::MAX_COMPARED` points: small work, on the light lane.
            let size = app::Size::default();
            computed(state, size, move || {
                app::handle("POST", "/api/compare", &body).into()
            })
            .await
        }
        (&Method::POST, "/api/plan" | "/api/report" | "/api/cabling") => {
            // A design's plan, report.html or cabling.csv, checked before any work.
            match app::job(&path, &body) {
                Ok(job) => computed(state, job.size(), move || job.run()).await,
                Err(r) => answer(r),
            }
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

/// Runs `f` (a design of `size`) on its lane, holds its answer in the answer budget, and sends it
/// a piece at a time as the client takes it.
async fn computed<F>(state: &State, size: app::Size, f: F) -> Answer
where
    F: FnOnce() -> app::Answer + Send + 'static,
{
    let class = Class::of(size);
    let (a, turn) = match state.lanes.compute(class, f).await {
        Ok(x) => x,
        Err(r) => return answer(r),
    };
    // The lane's turn stays taken while the answer waits for room: back-pressure.
    let hold = match state.answers.hold(class, a.len()).await {
        Ok(h) => h,
        Err(r) => return answer(r),
    };
    drop(turn);
    respond(a.status, a.content_type, Out::pieces(a.pieces, hold))
}

/// `GET /api/status`: open connections, work and simulations, for a look at a running server.
fn status(state: &State) -> Response {
    let admitted = state
        .sims
        .live
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .len();
    let (heavy_computing, heavy_admitted) = state.lanes.heavy();
    let (heavy_held, light_held) = state.answers.held();
    Response::json(
        200,
        &serde_json::json!({
            "connections": MAX_CONNECTIONS - state.connections.available_permits(),
            "simulations": {
                "computing": 1 - state.sims.turn.available_permits().min(1),
                "admitted": admitted,
            },
            "plans": {
                "light_computing": state.lanes.light(),
                "heavy_computing": heavy_computing,
                "heavy_admitted": heavy_admitted,
            },
            "answers_held_bytes": {
                "heavy": heavy_held,
                "light": light_held,
            },
            "limits": {
                "connections": MAX_CONNECTIONS,
                "workers": WORKERS,
                "simulations": SIMS,
                "head_bytes": MAX_HEAD,
                "body_bytes": app::MAX_BODY,
                "head_timeout_s": HEAD_TIMEOUT.as_secs(),
                "body_timeout_s": BODY_TIMEOUT.as_secs(),
                "write_timeout_s": body::WRITE_TIMEOUT.as_secs(),
                "light_endpoints": work::LIGHT_ENDPOINTS,
                "light_train_gpus": work::LIGHT_TRAIN_GPUS,
                "heavy_admitted": work::HEAVY_ADMITTED,
                "heavy_answer_bytes": work::HEAVY_ANSWERS,
                "light_answer_bytes": work::LIGHT_ANSWERS,
                "plan_gpus": app::MAX_PLAN_GPUS,
                "plan_nics": app::MAX_PLAN_NICS,
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
    let job = match app::sim_job(&body) {
        Ok(job) => job,
        Err(r) => return answer(r),
    };
    let class = Class::of(job.size());
    let (catalog, fabric) = match state.lanes.compute(class, move || job.build()).await {
        Ok((Ok(x), _turn)) => x,
        Ok((Err(r), _)) | Err(r) => return answer(r),
    };
    let Some(ticket) = state.sims.admit(client) else {
        return answer(busy("simulations are queued; try again shortly"));
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
    respond(
        200,
        "application/x-ndjson",
        Out::Stream {
            rx,
            _cancel: cancel,
        },
    )
}

/// Waits for the turn to run (or for cancellation), then simulates on the blocking pool, sending
/// each NDJSON line to the response as it comes.
async fn drive(
    ticket: Ticket,
    turn: Arc<Semaphore>,
    tx: mpsc::UnboundedSender<Bytes>,
    catalog: app::SimCatalog,
    fabric: app::SimFabric,
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

#[cfg(test)]
mod tests;

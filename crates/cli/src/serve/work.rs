//! Who computes when, and how many bytes of answers the server holds for clients.
//!
//! Two lanes run the planning work. Designs of at most [`LIGHT_ENDPOINTS`] GPUs and NICs (the
//! presets, up to about 1,000 servers: tens of milliseconds and tens of megabytes each), with a
//! training step, if any, of at most [`LIGHT_TRAIN_GPUS`] GPUs, run on the light lane, [`WORKERS`]
//! at once. Bigger designs run on the heavy lane: one at a time on one
//! thread (a 131,072-GPU cabling plan takes about a second and 300 MB), at most [`HEAVY_ADMITTED`]
//! running or waiting; more are answered 503 with `Retry-After` at once. So heavy requests, however
//! many, never take the light lane's turns, and their memory is one plan's.
//!
//! Every computed answer is then held in the answer budget until its client has taken it: heavy
//! answers in at most [`HEAVY_ANSWERS`] bytes together, light ones in their own [`LIGHT_ANSWERS`],
//! so clients of big answers cannot crowd out small ones. An answer that does not fit waits for
//! room at most [`ANSWER_WAIT`] while its lane's turn stays taken (back-pressure: nothing more is
//! computed for answers that could not be held either), then is dropped and answered 503 with
//! `Retry-After`. Held bytes are given back piece by piece as the client takes them, and all at
//! once when the connection closes; a client that stops taking its answer is closed by the write
//! deadline (`body::WriteDeadline`). Together: the server holds at most one heavy plan, [`WORKERS`]
//! light ones and the two budgets, whatever its clients do.

use super::WORKERS;
use railyard_web::{self as app, Response};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

/// Designs of at most this many GPUs and NICs together run on the light lane: 1,024 servers of
/// 8 GPUs and 8 NICs, which plan in about 30 ms of CPU and 27 MB (measured on `railyard plan
/// b200-xdr --servers 1024`, 2026-12-07).
pub const LIGHT_ENDPOINTS: u64 = 16_384;
/// Designs whose training step is predicted on more than this many GPUs run on the heavy lane
/// whatever their endpoints: the step's time grows with the job's GPUs (its collectives are
/// simulated on the fabric), to seconds at 16,384 GPUs and more at 131,072 (BENCHMARKS.md, `train`
/// rows), so such steps wait their turn on the heavy lane and never hold the light lane's workers.
/// 4,096 GPUs: the most the app predicted a step for before every size was allowed (issue 36).
pub const LIGHT_TRAIN_GPUS: u64 = 4_096;
/// Heavy requests running or waiting at most; more are answered 503.
pub const HEAVY_ADMITTED: usize = 4;
/// Bytes of heavy answers held for their clients at most: one cabling plan of 131,072 GPUs (57 MB;
/// a bigger answer takes the whole budget). A second big answer waits until the first is taken
/// (under a second on a LAN) or let go, which keeps the server within one plan and one answer of
/// the 131,072-GPU design beside the light lane (BENCHMARKS.md: 500 MB with 30 clients that never
/// read).
pub const HEAVY_ANSWERS: usize = 64 << 20;
/// Bytes of light answers held for their clients at most (a light answer is at most about 2 MB).
pub const LIGHT_ANSWERS: usize = 16 << 20;
/// How long a computed answer waits for room in its budget before it is dropped and answered 503.
pub const ANSWER_WAIT: Duration = Duration::from_secs(10);
/// What a 503 tells the client to wait before trying again: about the write deadline, by which
/// answers their clients do not take are let go.
pub const RETRY_AFTER_S: u64 = 10;
/// The budgets count in units of this many bytes.
const UNIT: usize = 1024;

/// The lane a design runs on, by its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Light,
    Heavy,
}

impl Class {
    pub fn of(size: app::Size) -> Class {
        if size.endpoints() <= LIGHT_ENDPOINTS && size.train_gpus <= LIGHT_TRAIN_GPUS {
            Class::Light
        } else {
            Class::Heavy
        }
    }
}

/// A 503 the client should retry after [`RETRY_AFTER_S`]: the HTTP layer adds `Retry-After`.
pub fn busy(message: &str) -> Response {
    Response::error(503, "server", message)
}

type Task = Box<dyn FnOnce() + Send>;

/// The two lanes.
pub struct Lanes {
    light: Arc<Semaphore>,
    heavy_admitted: Arc<Semaphore>,
    heavy_turn: Arc<Semaphore>,
    heavy_thread: mpsc::Sender<Task>,
}

/// A lane's turn, held from before the work until its answer is in the budget.
pub struct Turn {
    _turn: OwnedSemaphorePermit,
    _admitted: Option<OwnedSemaphorePermit>,
}

impl Lanes {
    pub fn new() -> Lanes {
        let (tx, rx) = mpsc::channel::<Task>();
        // One thread for every heavy plan, so their memory is reused from one plan to the next
        // (the allocator keeps a pool per thread). A panicking plan leaves the thread running.
        std::thread::Builder::new()
            .name("railyard-heavy".into())
            .spawn(move || {
                while let Ok(task) = rx.recv() {
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task));
                }
            })
            .expect("the heavy lane's thread starts");
        Lanes {
            light: Arc::new(Semaphore::new(WORKERS)),
            heavy_admitted: Arc::new(Semaphore::new(HEAVY_ADMITTED)),
            heavy_turn: Arc::new(Semaphore::new(1)),
            heavy_thread: tx,
        }
    }

    /// Runs `f` on `class`'s lane once it has a turn (waiting holds no thread), and returns its
    /// value with the turn still held. A heavy request over [`HEAVY_ADMITTED`] is refused at once.
    /// The turn is held until `f` returns even if the client has gone meanwhile.
    pub async fn compute<T, F>(&self, class: Class, f: F) -> Result<(T, Turn), Response>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let failed = || Response::error(500, "server", "the request failed inside the server");
        match class {
            Class::Light => {
                let turn = Arc::clone(&self.light)
                    .acquire_owned()
                    .await
                    .map_err(|_| failed())?;
                // The turn goes with the work: given back when it ends if the client has gone.
                let (value, turn) = tokio::task::spawn_blocking(move || (f(), turn))
                    .await
                    .map_err(|_| failed())?;
                Ok((
                    value,
                    Turn {
                        _turn: turn,
                        _admitted: None,
                    },
                ))
            }
            Class::Heavy => {
                let admitted = Arc::clone(&self.heavy_admitted)
                    .try_acquire_owned()
                    .map_err(|_| {
                        busy(&format!(
                            "{HEAVY_ADMITTED} designs of more than {LIGHT_ENDPOINTS} GPUs and NICs are being planned or waiting; try again shortly"
                        ))
                    })?;
                let turn = Arc::clone(&self.heavy_turn)
                    .acquire_owned()
                    .await
                    .map_err(|_| failed())?;
                let (tx, rx) = oneshot::channel();
                self.heavy_thread
                    .send(Box::new(move || {
                        // The turn goes with the work, as on the light lane.
                        let _ = tx.send((f(), turn));
                    }))
                    .map_err(|_| failed())?;
                let (value, turn) = rx.await.map_err(|_| failed())?;
                Ok((
                    value,
                    Turn {
                        _turn: turn,
                        _admitted: Some(admitted),
                    },
                ))
            }
        }
    }

    /// Heavy requests computing (0 or 1) and admitted (computing or waiting).
    pub fn heavy(&self) -> (usize, usize) {
        (
            1 - self.heavy_turn.available_permits().min(1),
            HEAVY_ADMITTED - self.heavy_admitted.available_permits(),
        )
    }

    /// Light requests computing.
    pub fn light(&self) -> usize {
        WORKERS - self.light.available_permits()
    }
}

/// The answer budgets.
pub struct Answers {
    heavy: Arc<Semaphore>,
    light: Arc<Semaphore>,
}

impl Answers {
    pub fn new() -> Answers {
        Answers {
            heavy: Arc::new(Semaphore::new(HEAVY_ANSWERS / UNIT)),
            light: Arc::new(Semaphore::new(LIGHT_ANSWERS / UNIT)),
        }
    }

    fn budget(&self, class: Class) -> (&Arc<Semaphore>, usize) {
        match class {
            Class::Light => (&self.light, LIGHT_ANSWERS / UNIT),
            Class::Heavy => (&self.heavy, HEAVY_ANSWERS / UNIT),
        }
    }

    /// Room for an answer of `bytes` in `class`'s budget, waiting at most [`ANSWER_WAIT`]. An
    /// answer bigger than the whole budget takes all of it.
    pub async fn hold(&self, class: Class, bytes: usize) -> Result<Hold, Response> {
        let (budget, all) = self.budget(class);
        let units = bytes.div_ceil(UNIT).min(all);
        let units = u32::try_from(units).unwrap_or(u32::MAX);
        match tokio::time::timeout(ANSWER_WAIT, Arc::clone(budget).acquire_many_owned(units)).await
        {
            Ok(Ok(permit)) => Ok(Hold(permit)),
            Ok(Err(_)) => Err(Response::error(500, "server", "the answer budget closed")),
            Err(_) => Err(busy(&format!(
                "answers of {} MB wait for their clients to take them; try again shortly",
                match class {
                    Class::Light => LIGHT_ANSWERS,
                    Class::Heavy => HEAVY_ANSWERS,
                } >> 20
            ))),
        }
    }

    /// Bytes held now: heavy, light.
    pub fn held(&self) -> (usize, usize) {
        let used = |class| {
            let (b, all) = self.budget(class);
            (all - b.available_permits()) * UNIT
        };
        (used(Class::Heavy), used(Class::Light))
    }
}

/// Room held in an answer budget; given back as the answer is sent and when dropped.
pub struct Hold(OwnedSemaphorePermit);

impl Hold {
    /// Keeps room for `bytes` still to send and gives back the rest.
    pub fn keep(&mut self, bytes: usize) {
        let p = &mut self.0;
        let keep = bytes.div_ceil(UNIT);
        if p.num_permits() > keep {
            drop(p.split(p.num_permits() - keep));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A design of few endpoints runs on the heavy lane when its training step is predicted on more
    /// than [`LIGHT_TRAIN_GPUS`] GPUs (issue 36: steps at every size, none holding the light lane).
    #[test]
    fn big_training_steps_take_the_heavy_lane() {
        let size = |gpus: u64, train_gpus: u64| app::Size {
            servers: gpus / 8,
            gpus,
            nics: gpus / 8,
            train_gpus,
        };
        assert_eq!(Class::of(size(4_096, 0)), Class::Light);
        assert_eq!(Class::of(size(4_096, 4_096)), Class::Light);
        assert_eq!(Class::of(size(8_192, 0)), Class::Light, "9,216 endpoints");
        assert_eq!(Class::of(size(8_192, 8_192)), Class::Heavy);
        assert_eq!(Class::of(size(16_384, 0)), Class::Heavy, "18,432 endpoints");
    }
}

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
                    r.extend_from_slice(format!("Content-Length: {}{eol}", body.len()).as_bytes());
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
        b"GET /api/status HTTP/1.1\r\n\r\nPOST /api/plan HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 29\r\n\r\n{\"preset\": \"seed-two-switch\"}GET /nope HTTP/1.1\r\n\r\n",
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
    assert!(text.contains("\r\nRetry-After: 10\r\n"), "{text}");
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

/// A runtime whose clock runs ahead when every task waits.
fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a test runtime")
}

/// A client that takes none of its answer is cut off by the write deadline; one that reads slowly
/// but steadily (more than [`body::WRITE_PROGRESS`] per [`body::WRITE_TIMEOUT`]) gets all of it.
#[test]
fn a_client_that_stops_reading_is_cut_off_by_the_write_deadline() {
    paused().block_on(async {
        let (client, server) = tokio::io::duplex(16 * 1024);
        let mut w = WriteDeadline::new(server);
        let start = tokio::time::Instant::now();
        let e = w
            .write_all(&vec![b'x'; 1 << 20])
            .await
            .expect_err("the write fails");
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        let waited = start.elapsed();
        assert!(
            waited >= body::WRITE_TIMEOUT && waited < body::WRITE_TIMEOUT * 2,
            "{waited:?}"
        );
        drop(client);

        let (mut client, server) = tokio::io::duplex(16 * 1024);
        let mut w = WriteDeadline::new(server);
        let reader = tokio::spawn(async move {
            let mut got = 0usize;
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                // 128 KiB per WRITE_TIMEOUT: slow, but more than the least taken.
                tokio::time::sleep(body::WRITE_TIMEOUT / 8).await;
                match client.read(&mut buf).await {
                    Ok(0) | Err(_) => return got,
                    Ok(n) => got += n,
                }
            }
        });
        w.write_all(&vec![b'x'; 1 << 20])
            .await
            .expect("all written");
        drop(w);
        assert_eq!(reader.await.unwrap(), 1 << 20);
    });
}

/// An answer's room in the budget goes back piece by piece as hyper asks for the next one, and
/// the rest when the body is dropped half-way (its client gone).
#[test]
fn an_answer_gives_its_room_back_as_it_is_sent() {
    paused().block_on(async {
        let answers = Answers::new();
        let mb = 1 << 20;
        let hold = answers.hold(Class::Heavy, 3 * mb).await.unwrap();
        assert_eq!(answers.held(), (3 * mb, 0));
        let mut out = Out::pieces(vec![vec![1; mb], vec![2; mb], vec![3; mb]], hold);
        assert_eq!(out.size_hint().exact(), Some(3 * mb as u64));
        let mut held = Vec::new();
        for _ in 0..2 {
            let frame = out.frame().await.unwrap().unwrap();
            assert_eq!(frame.data_ref().unwrap().len(), mb);
            held.push(answers.held().0);
        }
        // The piece hyper writes stays counted until it asks for the next.
        assert_eq!(held, [3 * mb, 2 * mb]);
        drop(out);
        assert_eq!(answers.held(), (0, 0));
    });
}

/// When the budget is full an answer waits for room, then is refused 503 (with Retry-After, as
/// every 503 is); the light budget is separate, so small answers still fit.
#[test]
fn answers_past_the_budget_wait_then_are_refused() {
    paused().block_on(async {
        let answers = Answers::new();
        let all = answers
            .hold(Class::Heavy, work::HEAVY_ANSWERS)
            .await
            .unwrap();
        let start = tokio::time::Instant::now();
        let r = answers.hold(Class::Heavy, 1).await.err().expect("no room");
        assert_eq!(r.status, 503);
        assert!(start.elapsed() >= work::ANSWER_WAIT);
        let a = answer(r);
        assert_eq!(a.headers()[RETRY_AFTER], "10");
        assert!(answers.hold(Class::Light, 1 << 20).await.is_ok());
        // Room given back lets the next one in.
        drop(all);
        assert!(answers.hold(Class::Heavy, 1).await.is_ok());
    });
}

/// Heavy work takes its own lane: while it computes and more heavy requests wait, light work is
/// done at once; heavy requests past [`work::HEAVY_ADMITTED`] are refused 503 at once.
#[test]
fn heavy_work_leaves_the_light_lane_free() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let lanes = Arc::new(Lanes::new());
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let hold = Arc::new(Mutex::new(hold));
        let heavy: Vec<_> = (0..work::HEAVY_ADMITTED)
            .map(|_| {
                let (lanes, hold) = (Arc::clone(&lanes), Arc::clone(&hold));
                tokio::spawn(async move {
                    lanes
                        .compute(Class::Heavy, move || {
                            let _ = hold.lock().unwrap().recv();
                        })
                        .await
                        .map(|_| ())
                })
            })
            .collect();
        while lanes.heavy() != (1, work::HEAVY_ADMITTED) {
            tokio::task::yield_now().await;
        }
        let r = lanes
            .compute(Class::Heavy, || ())
            .await
            .err()
            .expect("refused");
        assert_eq!(r.status, 503);
        let (v, _turn) = lanes.compute(Class::Light, || 7).await.unwrap();
        assert_eq!(v, 7);
        for _ in 0..work::HEAVY_ADMITTED {
            release.send(()).unwrap();
        }
        for h in heavy {
            assert!(h.await.unwrap().is_ok());
        }
        assert_eq!(lanes.heavy(), (0, 0));
    });
}

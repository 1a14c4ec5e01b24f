//! `railyard serve` over HTTP on loopback: pages, the JSON API's answers to bad input and limits, a
//! bounded burst of concurrent requests, slow clients that do not hold the server, and simulations
//! that stop when their client goes or a newer one from the same client arrives. Deadlines here are
//! generous (a loaded 2-core CI machine runs this); the tight numbers are in the load test
//! (`cargo run --release --example serve_load`, see BENCHMARKS.md).

use crate::common::{answered, request, request_typed, server_status, stream, Server};
use serde_json::Value;
use std::time::{Duration, Instant};

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[test]
fn pages_api_errors_and_limits() {
    let s = Server::start();
    assert!(
        s.addr.starts_with("127.0.0.1:"),
        "binds loopback: {}",
        s.addr
    );

    let r = answered(&s.addr, "GET", "/", b"");
    assert!(r.body.contains("<form"));

    let r = answered(&s.addr, "GET", "/api/presets", b"");
    assert!(json(&r.body)["presets"][0]["name"].is_string());

    let r = request(&s.addr, "POST", "/api/plan", br#"{"servers": "many"}"#).unwrap();
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(json(&r.body)["field"], "servers", "{}", r.body);

    let r = answered(
        &s.addr,
        "POST",
        "/api/plan",
        br#"{"preset": "seed-two-switch"}"#,
    );
    let v = json(&r.body);
    assert_eq!(v["summary"]["switches"]["leaf"], 2);
    assert!(v["drawing_svg"].as_str().unwrap().contains("HCA 1,3,5,7"));

    // Over the body limit: 413, whether or not the client has finished sending.
    let big = vec![b' '; 1 << 20];
    let r = request(&s.addr, "POST", "/api/plan", &big).unwrap();
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(json(&r.body)["field"], "body");

    // Simulation streams progress lines, then the result.
    let r = answered(
        &s.addr,
        "POST",
        "/api/sim",
        br#"{"preset": "seed-two-switch"}"#,
    );
    let lines: Vec<Value> = r.body.lines().map(json).collect();
    assert!(
        lines.iter().any(|l| l["progress"].is_string()),
        "{}",
        r.body
    );
    let last = &lines[lines.len() - 1]["result"];
    assert_eq!(last["curves"].as_array().unwrap().len(), 2, "{}", r.body);
    let r = request(&s.addr, "POST", "/api/sim", br#"{"servers": 3000}"#).unwrap();
    assert_eq!(r.status, 400);
    assert_eq!(json(&r.body)["field"], "servers");
    let r = request(&s.addr, "POST", "/api/sim?client=a%20b", b"{}").unwrap();
    assert_eq!(r.status, 400);
    assert_eq!(json(&r.body)["field"], "client");

    let r = answered(&s.addr, "GET", "/api/status", b"");
    let v = json(&r.body);
    assert_eq!(v["limits"]["body_bytes"], 32 * 1024, "{}", r.body);
    assert_eq!(v["simulations"]["admitted"], 0, "{}", r.body);

    assert_eq!(request(&s.addr, "GET", "/nope", b"").unwrap().status, 404);
    assert_eq!(
        request(&s.addr, "PUT", "/api/plan", b"").unwrap().status,
        405
    );
}

/// A local load generator: 16 threads x 8 requests each (plans, pages, bad input) against loopback,
/// bounded in count and time. Every request is answered (200 or 400: waiting for a worker is not a
/// reason for 503 any more), and the server answers normally afterwards.
/// Regression: the API said `servers: 0 is out of range; valid: 1 to 1000000` (the key's range for
/// the CLI) while it plans at most 16384 servers per request, and `/api/compare` said only "expected
/// a number" of a negative cost and ignored a bad tokens/s. Every numeric design key `/api/keys`
/// describes is refused below its minimum, above its maximum and as a non-number with exactly the
/// range `/api/keys` states, and its maximum is not refused as out of range; every number of
/// `/api/compare` states the range it takes.
#[test]
fn every_range_the_api_states_is_the_one_it_enforces() {
    let s = Server::start();
    let post = |path: &str, body: &str| {
        let r = request(&s.addr, "POST", path, body.as_bytes()).unwrap();
        (r.status, json(&r.body))
    };
    let keys = json(&request(&s.addr, "GET", "/api/keys", b"").unwrap().body);
    let mut checked = Vec::new();
    for k in keys["keys"].as_array().unwrap() {
        let (name, kind) = (k["json"].as_str().unwrap(), k["kind"].as_str().unwrap());
        if kind != "count" && kind != "number" {
            continue;
        }
        let valid = format!("valid: {}", k["valid"].as_str().unwrap());
        let (min, max) = (k["min"].as_f64().unwrap(), k["max"].as_f64().unwrap());
        let (below, above) = if kind == "count" {
            (format!("{}", min as i64 - 1), format!("{}", max as i64 + 1))
        } else {
            (format!("{}", min - 0.5), format!("{}", max + 0.5))
        };
        for value in [below.as_str(), above.as_str(), "\"many\"", "1000000", "-1"] {
            let in_range = value
                .trim_matches('"')
                .parse::<f64>()
                .is_ok_and(|x| x >= min && x <= max);
            if in_range {
                continue;
            }
            let body = format!(r#"{{"preset": "seed-leaf-spine", "{name}": {value}}}"#);
            let (status, v) = post("/api/plan", &body);
            assert_eq!(status, 400, "{body}: {v}");
            assert_eq!(v["field"], name, "{body}: {v}");
            let error = v["error"].as_str().unwrap();
            assert!(error.ends_with(&valid), "{body}: {error} (stated: {valid})");
        }
        // The largest value stated is taken by the key (a design may still not build there, for
        // reasons the error names, but not as out of the key's range).
        let top = if kind == "count" {
            format!("{}", max as i64)
        } else {
            format!("{max}")
        };
        let body = format!(r#"{{"preset": "seed-leaf-spine", "{name}": {top}}}"#);
        let (status, v) = post("/api/plan", &body);
        if status != 200 {
            let error = v["error"].as_str().unwrap_or("");
            assert!(
                !error.contains("out of range") && !error.contains("more than this server plans"),
                "{body}: {v}"
            );
        }
        checked.push(name.to_string());
    }
    assert!(checked.contains(&"servers".to_string()), "{checked:?}");
    assert!(checked.len() >= 5, "{checked:?}");
    let (status, v) = post("/api/plan", r#"{"servers": 0}"#);
    assert_eq!(status, 400);
    assert_eq!(
        v["error"],
        "servers: 0 is out of range; valid: 1 to 16384 (use the CLI for more)"
    );

    // `/api/compare`: each number finite and at least 0, `cost_usd` required.
    for (design, needle) in [
        (
            r#"{"cost_usd": -5}"#,
            "designs[0].cost_usd: -5 is not a number from 0 up; valid: a number, at least 0",
        ),
        (
            r#"{"label": "a"}"#,
            "designs[0].cost_usd: missing; valid: a number, at least 0",
        ),
        (
            r#"{"cost_usd": 5, "tokens_per_s": -1}"#,
            "designs[0].tokens_per_s: -1 is not a number from 0 up",
        ),
        (
            r#"{"cost_usd": 5, "bisection_tbs": "wide"}"#,
            "designs[0].bisection_tbs: \"wide\" is not a number from 0 up",
        ),
        (
            r#"{"cost_usd": 5, "network_usd_per_million_tokens": -0.5}"#,
            "designs[0].network_usd_per_million_tokens: -0.5",
        ),
    ] {
        let (status, v) = post("/api/compare", &format!(r#"{{"designs": [{design}]}}"#));
        assert_eq!(status, 400, "{design}: {v}");
        assert_eq!(v["field"], "designs");
        assert!(
            v["error"].as_str().unwrap().contains(needle),
            "{design}: {v}"
        );
    }
    // Absent or null optional numbers are taken, as the page sends them.
    let (status, v) = post(
        "/api/compare",
        r#"{"designs": [{"label": "a", "cost_usd": 5, "bisection_tbs": 1.5, "tokens_per_s": null}]}"#,
    );
    assert_eq!(status, 200, "{v}");
}

#[test]
fn keeps_answering_after_a_burst_of_concurrent_requests() {
    let s = Server::start();
    let start = Instant::now();
    let deadline = start + Duration::from_secs(120);
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|t| {
                let addr = s.addr.clone();
                scope.spawn(move || {
                    let mut out = Vec::new();
                    for i in 0..8 {
                        if Instant::now() > deadline {
                            break;
                        }
                        let (method, path, body): (&str, &str, &[u8]) = match (t + i) % 4 {
                            0 => ("POST", "/api/plan", br#"{"preset": "seed-leaf-spine"}"#),
                            1 => ("GET", "/", b""),
                            2 => ("POST", "/api/plan", br#"{"servers": "many"}"#),
                            _ => ("GET", "/api/presets", b""),
                        };
                        match request(&addr, method, path, body) {
                            Ok(r) => out.push(r.status),
                            Err(e) => panic!("{method} {path}: {e}"),
                        }
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert_eq!(statuses.len(), 128, "every request was answered in time");
    assert!(
        statuses.iter().all(|s| [200, 400].contains(s)),
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|&&s| s == 200).count(),
        96,
        "{statuses:?}"
    );
    answered(&s.addr, "GET", "/", b"");
    answered(&s.addr, "POST", "/api/plan", b"{}");
}

/// A client that trickles its request is cut off after the request deadline, and others are served
/// meanwhile.
#[test]
fn slow_clients_are_cut_off() {
    use std::io::{Read, Write};
    let s = Server::start();
    let mut slow = std::net::TcpStream::connect(&s.addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    slow.write_all(b"GET / HTTP/1.1\r\n").unwrap();
    let start = Instant::now();
    assert_eq!(
        request(&s.addr, "GET", "/api/presets", b"").unwrap().status,
        200
    );
    for _ in 0..5 {
        std::thread::sleep(Duration::from_secs(2));
        if slow.write_all(b"X-Slow: 1\r\n").is_err() {
            break;
        }
    }
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(20), "held for {took:?}");
}

/// Clients that trickle a request head one byte at a time, more of them than there are workers, do
/// not hold the server: ordinary requests meanwhile are all answered, and each slow client is cut
/// off after the head deadline (10 s) without an answer.
#[test]
fn slow_clients_do_not_hold_the_server() {
    use std::io::{Read, Write};
    let s = Server::start();
    const SLOW: usize = 24;
    let start = Instant::now();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let slow: Vec<_> = (0..SLOW)
            .map(|_| {
                let addr = s.addr.clone();
                let stop = &stop;
                scope.spawn(move || {
                    let mut c = std::net::TcpStream::connect(&addr).unwrap();
                    c.set_read_timeout(Some(Duration::from_millis(200)))
                        .unwrap();
                    let head = b"GET /api/presets HTTP/1.1\r\nHost: x\r\nX-Slow: yes\r\n\r\n";
                    let mut got = Vec::new();
                    for &b in head.iter().cycle() {
                        if stop.load(std::sync::atomic::Ordering::Relaxed) {
                            return (None, got);
                        }
                        if c.write_all(&[b]).is_err() {
                            break;
                        }
                        let mut buf = [0u8; 256];
                        match c.read(&mut buf) {
                            Ok(0) => return (Some(start.elapsed()), got),
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                            Err(e)
                                if e.kind() == std::io::ErrorKind::WouldBlock
                                    || e.kind() == std::io::ErrorKind::TimedOut => {}
                            Err(_) => break,
                        }
                        // A byte every ~0.7 s: 50 bytes of head would take 35 s.
                        std::thread::sleep(Duration::from_millis(500));
                    }
                    (Some(start.elapsed()), got)
                })
            })
            .collect();
        // Let every slow client connect and start trickling, then ask normal questions.
        std::thread::sleep(Duration::from_secs(1));
        for i in 0..40 {
            let (method, path, body): (&str, &str, &[u8]) = match i % 3 {
                0 => ("GET", "/api/presets", b""),
                1 => ("POST", "/api/plan", br#"{"preset": "seed-two-switch"}"#),
                _ => ("GET", "/", b""),
            };
            let t = Instant::now();
            let r = request(&s.addr, method, path, body).unwrap();
            assert_eq!(r.status, 200, "{method} {path}: {}", r.body);
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "{method} {path} took {:?}",
                t.elapsed()
            );
        }
        let status = server_status(&s.addr);
        assert!(
            status["connections"].as_u64().unwrap() > SLOW as u64 / 2,
            "slow clients were still connected while others were served: {status}"
        );
        // Wait for the head deadline to cut them off (never later than 10 s after connecting,
        // plus slack for a loaded machine); stop the stragglers after a minute regardless.
        let watchdog = scope.spawn(|| {
            let until = Instant::now() + Duration::from_secs(60);
            while Instant::now() < until && !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        for h in slow {
            let (cut, got) = h.join().unwrap();
            let cut = cut.expect("a slow client was still connected after a minute");
            assert!(
                got.is_empty(),
                "a slow client got {:?}",
                String::from_utf8_lossy(&got)
            );
            assert!(cut >= Duration::from_secs(9), "cut off early, at {cut:?}");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        watchdog.join().unwrap();
    });
}

/// Progress lines of a simulation, read until the stream ends or `until` matches a line.
fn read_lines(l: &mut crate::common::Lines, until: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(line) = l.next_line().unwrap() {
        let v = json(&line);
        let stop = until(&v);
        out.push(v);
        if stop {
            break;
        }
    }
    out
}

/// A newer simulation with the same client id supersedes an older one still running: the older
/// stream ends with `{"cancelled": ...}` and no result, the newer one gets its result. Two clients
/// fill the simulation places; a third design without an id gets 503 meanwhile.
#[test]
fn a_newer_simulation_from_the_same_client_supersedes_the_older() {
    let s = Server::start();
    // The default design: 1,016 GPUs, tens of seconds of simulation in a debug build.
    let mut old = stream(&s.addr, "POST", "/api/sim?client=page-A", b"{}").unwrap();
    assert_eq!(old.status, 200);
    let first = read_lines(&mut old, |_| true);
    assert!(first[0]["progress"].is_string(), "{first:?}");
    let mut other = stream(&s.addr, "POST", "/api/sim?client=page-B", b"{}").unwrap();
    assert_eq!(other.status, 200);
    let r = request(&s.addr, "POST", "/api/sim", b"{}").unwrap();
    assert_eq!(
        r.status, 503,
        "two simulations are running or waiting: {}",
        r.body
    );
    assert_eq!(json(&r.body)["field"], "server");

    let mut new = stream(
        &s.addr,
        "POST",
        "/api/sim?client=page-A",
        br#"{"preset": "seed-two-switch"}"#,
    )
    .unwrap();
    assert_eq!(
        new.status, 200,
        "the newer request takes the older one's place"
    );
    let rest = read_lines(&mut old, |_| false);
    let last = rest.last().expect("the older stream ends with a line");
    assert_eq!(
        last["cancelled"], "superseded by a newer request from the same client",
        "{rest:?}"
    );
    assert!(rest.iter().all(|l| l.get("result").is_none()), "{rest:?}");
    drop(other.next_line());
    drop(other);
    let lines = read_lines(&mut new, |_| false);
    assert!(
        lines.last().unwrap()["result"]["curves"].is_array(),
        "{lines:?}"
    );
}

/// A simulation whose client goes away stops: the server's status shows no simulation computing
/// soon after, though the design would take far longer to simulate.
#[test]
fn a_simulation_stops_when_its_client_goes_away() {
    let s = Server::start();
    let status = || server_status(&s.addr);
    let mut sim = stream(&s.addr, "POST", "/api/sim", b"{}").unwrap();
    assert_eq!(sim.status, 200);
    read_lines(&mut sim, |_| true);
    assert_eq!(status()["simulations"]["computing"], 1, "{}", status());
    drop(sim);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = status();
        if v["simulations"]["computing"] == 0 && v["simulations"]["admitted"] == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still simulating after 20 s: {v}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // And the next simulation runs at once instead of waiting for a turn.
    let mut next = stream(
        &s.addr,
        "POST",
        "/api/sim",
        br#"{"preset": "seed-two-switch"}"#,
    )
    .unwrap();
    let lines = read_lines(&mut next, |_| false);
    assert!(
        lines
            .iter()
            .all(|l| l["progress"] != "waiting for another simulation"),
        "{lines:?}"
    );
    assert!(lines.last().unwrap()["result"].is_object());
}

/// The server's peak and current resident memory in kB (`VmHWM` and `VmRSS` of /proc/PID/status).
fn memory_kb(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {status}"))
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Regression (issue 33): 30 clients that POST `/api/cabling` for b200-xdr at 16,384 servers (a
/// 57 MB answer each) and never read held 2.4 GB (every answer whole in memory, up to 11 minutes a
/// connection), and a small `/api/plan` waited 13.7 s meanwhile. The load test of the suite: while
/// 30 such clients hang, small plans are answered (within 30 s each: generous, this is a loaded
/// 2-core machine and a debug build; the release binary's 1 s is in BENCHMARKS.md), the server's
/// peak memory stays within 500 MB, it does hold heavy answers for those clients meanwhile (the
/// case this is about), and it lets go of every one of those connections by itself.
#[test]
fn regression_clients_that_never_read_held_gigabytes() {
    use std::io::Write;
    const CLIENTS: usize = 30;
    const BOUND_KB: u64 = 500 * 1024;
    let s = Server::start();
    let status = || server_status(&s.addr);
    let heavy = br#"{"preset": "b200-xdr", "servers": 16384}"#;
    let hung: Vec<std::net::TcpStream> = (0..CLIENTS)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(&s.addr).unwrap();
            let head = format!(
                "POST /api/cabling HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                s.addr,
                heavy.len()
            );
            c.write_all(head.as_bytes()).unwrap();
            c.write_all(heavy).unwrap();
            c
        })
        .collect();
    let start = Instant::now();
    let mut held = 0u64;
    let mut small = 0;
    // At least 15 s, and until the server has held a heavy answer for a client that does not take
    // it; at most 3 minutes.
    while start.elapsed() < Duration::from_secs(15) || held < 50_000_000 {
        let v = status();
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "no heavy answer held within 3 minutes: {v}"
        );
        let t = Instant::now();
        answered(
            &s.addr,
            "POST",
            "/api/plan",
            br#"{"preset": "seed-two-switch"}"#,
        );
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "a small plan waited {:?} behind {CLIENTS} clients that never read: {v}",
            t.elapsed()
        );
        small += 1;
        held = held.max(v["answers_held_bytes"]["heavy"].as_u64().unwrap_or(0));
        let (peak, now) = memory_kb(s.pid());
        assert!(
            peak <= BOUND_KB,
            "peak RSS {} MB (now {} MB) with {CLIENTS} clients that never read: {v}",
            peak / 1024,
            now / 1024
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(small >= 10, "{small}");
    // Every hung connection is let go by the server (write deadline, or the idle deadline after a
    // 503) while its client still holds it open; 3 minutes at most.
    loop {
        let v = status();
        if v["connections"] == 1 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "hung clients still connected: {v}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let (peak, _) = memory_kb(s.pid());
    assert!(peak <= BOUND_KB, "peak RSS {} MB", peak / 1024);
    drop(hung);
}

/// Regression (issue 33): `{"servers": 16, "servers": 16384}` planned 16,384 servers (serde_json
/// keeps the last of a duplicated key; others keep the first). A duplicated key is refused, named
/// with its path, in a design request, a simulation request and the comparison's designs.
#[test]
fn regression_web_api_took_the_last_of_duplicate_keys() {
    let s = Server::start();
    for (path, body, field, named) in [
        (
            "/api/plan",
            r#"{"servers": 16, "preset": "seed-leaf-spine", "servers": 16384}"#,
            "servers",
            "servers: given more than once (line 1, column ",
        ),
        (
            "/api/cabling",
            r#"{"preset": "seed-two-switch", "preset": "b200-xdr"}"#,
            "preset",
            "preset: given more than once",
        ),
        (
            "/api/sim",
            r#"{"tech": "ib-ndr", "tech": "ib-hdr"}"#,
            "tech",
            "tech: given more than once",
        ),
        (
            "/api/compare",
            r#"{"designs": [{"cost_usd": 1}, {"cost_usd": 2, "cost_usd": 3}]}"#,
            "designs",
            "designs[1].cost_usd: given more than once",
        ),
    ] {
        let r = request(&s.addr, "POST", path, body.as_bytes()).unwrap();
        assert_eq!(r.status, 400, "{path} {body}: {}", r.body);
        let v = json(&r.body);
        assert_eq!(v["field"], field, "{v}");
        let error = v["error"].as_str().unwrap();
        assert!(error.starts_with(named), "{error}");
        assert!(error.ends_with("; valid: each key once"), "{error}");
    }
    // The same keys once each are taken.
    let r = answered(
        &s.addr,
        "POST",
        "/api/plan",
        br#"{"preset": "seed-leaf-spine", "servers": 16}"#,
    );
    assert_eq!(json(&r.body)["summary"]["servers"], 16);
}

/// Regression (issue 33): the API took a design sent as `text/plain` (what a page on another site
/// can make a browser send without a preflight). A body must come as `application/json`; anything
/// else is 415 naming the type sent and the one taken, before the body is read as a design.
#[test]
fn regression_web_api_took_a_text_plain_body() {
    let s = Server::start();
    let design = br#"{"preset": "seed-two-switch"}"#;
    for path in [
        "/api/plan",
        "/api/report",
        "/api/cabling",
        "/api/sim",
        "/api/compare",
    ] {
        for content_type in [
            Some("text/plain"),
            Some("text/plain;charset=UTF-8"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            None,
        ] {
            let r = request_typed(&s.addr, "POST", path, content_type, design).unwrap();
            let short: String = r.body.chars().take(200).collect();
            assert_eq!(r.status, 415, "{path} {content_type:?}: {short}");
            let v = json(&r.body);
            assert_eq!(v["field"], "content-type", "{v}");
            assert!(
                v["error"]
                    .as_str()
                    .unwrap()
                    .ends_with("valid: application/json (send the body as JSON with Content-Type: application/json)"),
                "{v}"
            );
        }
    }
    let r = request_typed(
        &s.addr,
        "POST",
        "/api/plan",
        Some("Application/JSON; charset=utf-8"),
        design,
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    // An empty body (the default design) has no type to give.
    let r = request_typed(&s.addr, "POST", "/api/plan", None, b"").unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Regression (issue 33): a request planned past the server's limit of 16,384 servers' worth of
/// fabric: 16,384 servers of 72 GPUs (1.2 million GPUs, 608 MB to plan), and an uploaded spec of
/// 60,000 servers was built (665 MB) before it was refused. Both are refused from the spec, before
/// anything is built, naming the key and the limit.
#[test]
fn regression_a_request_planned_past_the_servers_limit() {
    let s = Server::start();
    let spec = include_str!("../../../spec/presets/b200-xdr.toml");
    for (body, field, starts) in [
        (
            serde_json::json!({"preset": "b200-xdr", "servers": 16384, "gpus_per_server": 72}),
            "servers",
            "servers: 1179648 GPUs (16384 servers x 72) are more than this server plans per request; valid: at most 131072 GPUs",
        ),
        (
            serde_json::json!({"spec": spec.replace("count = 576", "count = 16384"), "nics_per_server": 16}),
            "nics_per_server",
            "nics_per_server: 262144 NICs (16384 servers x 16 compute + 0 storage) are more than this server plans per request; valid: at most 147456 NICs",
        ),
        (
            serde_json::json!({"spec": spec.replace("count = 576", "count = 60000")}),
            "spec",
            "spec: 60000 servers are more than this server plans per request; valid: 1 to 16384 servers",
        ),
    ] {
        let r = request(&s.addr, "POST", "/api/cabling", body.to_string().as_bytes()).unwrap();
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        let v = json(&r.body);
        assert_eq!(v["field"], field, "{v}");
        assert!(v["error"].as_str().unwrap().starts_with(starts), "{v}");
    }
    let (peak, _) = memory_kb(s.pid());
    assert!(
        peak < 200 * 1024,
        "built something: peak RSS {} MB",
        peak / 1024
    );
}

/// Issue 36: the app predicts a training step at every size it plans, past the 4,096 GPUs it
/// refused before ("the web app refuses training steps above 4,096 GPUs"). The step runs on the
/// heavy lane (`light_train_gpus`), so a small design asked while it runs is answered at once,
/// not after it.
#[test]
fn training_steps_run_past_4096_gpus_and_small_designs_are_answered_meanwhile() {
    let s = Server::start();
    let r = request(&s.addr, "GET", "/api/status", b"").unwrap();
    assert_eq!(json(&r.body)["limits"]["light_train_gpus"], 4096);
    // 16,384 H100 (2,048 DGX H100), Llama 3 8B: the step simulates its collectives on the fabric.
    let big = br#"{"preset": "dgx-h100-superpod", "servers": 2048, "model": "llama3-8b"}"#;
    let addr = s.addr.clone();
    let started = Instant::now();
    let h = std::thread::spawn(move || {
        let r = request(&addr, "POST", "/api/plan", big).unwrap();
        (r, started.elapsed())
    });
    // Once the step is on the heavy lane, a small design is planned beside it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut small = None;
    while Instant::now() < deadline && !h.is_finished() {
        let st = server_status(&s.addr);
        if st["plans"]["heavy_computing"] == 1 {
            let t = Instant::now();
            answered(
                &s.addr,
                "POST",
                "/api/plan",
                br#"{"preset": "seed-two-switch"}"#,
            );
            small = Some((t.elapsed(), h.is_finished()));
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (r, big_took) = h.join().unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let v = json(&r.body);
    assert_eq!(v["summary"]["gpus"], 16384, "{}", v["summary"]);
    let t = &v["train"];
    assert_eq!(t["model"], "llama3-8b");
    assert!(t["step_time_s"].as_f64().unwrap() > 0.0, "{t}");
    assert!(t["tokens_per_s"].as_f64().unwrap() > 0.0, "{t}");
    eprintln!(
        "16,384-GPU plan with its training step: {big_took:?}; small plan meanwhile: {small:?}"
    );
    if let Some((took, big_done)) = small {
        assert!(
            big_done || took < big_took,
            "the small design waited for the big step: {took:?} against {big_took:?}"
        );
    }
}

//! `railyard serve` over HTTP on loopback: pages, the JSON API's answers to bad input and limits, and
//! a bounded burst of concurrent requests after which the server still answers.

mod common;

use common::{request, Server};
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

    let r = request(&s.addr, "GET", "/", b"").unwrap();
    assert_eq!(r.status, 200);
    assert!(r.body.contains("<form"));

    let r = request(&s.addr, "GET", "/api/presets", b"").unwrap();
    assert_eq!(r.status, 200);
    assert!(json(&r.body)["presets"][0]["name"].is_string());

    let r = request(&s.addr, "POST", "/api/plan", br#"{"servers": "many"}"#).unwrap();
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(json(&r.body)["field"], "servers", "{}", r.body);

    let r = request(
        &s.addr,
        "POST",
        "/api/plan",
        br#"{"preset": "seed-two-switch"}"#,
    )
    .unwrap();
    assert_eq!(r.status, 200);
    let v = json(&r.body);
    assert_eq!(v["summary"]["switches"]["leaf"], 2);
    assert!(v["drawing_svg"].as_str().unwrap().contains("HCA 1,3,5,7"));

    // Over the body limit: 413, whether or not the client has finished sending.
    let big = vec![b' '; 1 << 20];
    let r = request(&s.addr, "POST", "/api/plan", &big).unwrap();
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(json(&r.body)["field"], "body");

    // Simulation streams progress lines, then the result.
    let r = request(
        &s.addr,
        "POST",
        "/api/sim",
        br#"{"preset": "seed-two-switch"}"#,
    )
    .unwrap();
    assert_eq!(r.status, 200);
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

    assert_eq!(request(&s.addr, "GET", "/nope", b"").unwrap().status, 404);
    assert_eq!(
        request(&s.addr, "PUT", "/api/plan", b"").unwrap().status,
        405
    );
}

/// A local load generator: 16 threads x 8 requests each (plans, pages, bad input) against loopback,
/// bounded in count and time. Every answer is HTTP (200, 400 or 503 when the queue is full), and the
/// server answers normally afterwards.
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
        statuses.iter().all(|s| [200, 400, 503].contains(s)),
        "{statuses:?}"
    );
    assert!(
        statuses.iter().filter(|&&s| s == 200).count() >= 64,
        "{statuses:?}"
    );
    let r = request(&s.addr, "GET", "/", b"").unwrap();
    assert_eq!(r.status, 200);
    let r = request(&s.addr, "POST", "/api/plan", b"{}").unwrap();
    assert_eq!(r.status, 200);
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

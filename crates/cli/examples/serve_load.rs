//! Load test for `railyard serve` (not run by CI): 100 slow clients that trickle a request head one
//! byte a second (reconnecting when the server cuts them off), and meanwhile 1,000 ordinary requests
//! (pages, presets, plans) from 10 client threads, each thread one request every 250 ms so the run
//! lasts about 25 s and the slow clients go through several head deadlines; every ordinary request
//! must be answered 200 within 1 s. Loopback only, bounded in count and time.
//!
//! ```sh
//! cargo build --release && cargo run --release --example serve_load
//! RAILYARD_ADDR=127.0.0.1:8080 cargo run --release --example serve_load   # a server already running
//! cargo run --release --example serve_load -- --with-sims   # and the default design simulated meanwhile
//! ```
//!
//! With `--with-sims` one more client simulates the default design (1,016 GPUs, seconds of work on
//! one core) over and over while the ordinary requests run, and abandons every other simulation
//! half-way (its connection closed), so the server also cancels work while it answers.
//!
//! With `--never-read` it runs the other load instead: [`NEVER_READ`] clients POST `/api/cabling`
//! for b200-xdr at 16,384 servers (a 57 MB answer each) and never read, and for [`NEVER_READ_FOR`]
//! one small plan every 250 ms must be answered 200 within 1 s while the server's peak resident
//! memory (`VmHWM` of /proc/PID/status, so the example must start the server itself) stays within
//! [`RSS_LIMIT_MB`].
//!
//! Without `RAILYARD_ADDR` it starts `target/release/railyard serve --bind 127.0.0.1:0` (the binary
//! beside this example's directory, or `RAILYARD_BIN`). Prints latency percentiles; exits 1 if any
//! ordinary request failed or took 1 s or more (or, with `--never-read`, the memory went past the
//! limit).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const SLOW_CLIENTS: usize = 100;
const NORMAL_THREADS: usize = 10;
const NORMAL_PER_THREAD: usize = 100;
const LIMIT: Duration = Duration::from_secs(1);
/// Between the starts of two requests of one client thread.
const PACE: Duration = Duration::from_millis(250);
/// The whole run stops by this, whatever happens.
const CAP: Duration = Duration::from_secs(300);
/// `--never-read`: clients that POST the heavy request and never read.
const NEVER_READ: usize = 30;
/// `--never-read`: how long small requests are timed while those clients hang.
const NEVER_READ_FOR: Duration = Duration::from_secs(40);
/// `--never-read`: the server's peak resident memory at most.
const RSS_LIMIT_MB: u64 = 500;

fn main() {
    let (addr, mut child) = match std::env::var("RAILYARD_ADDR") {
        Ok(a) => (a, None),
        Err(_) => {
            let (a, c) = start_server();
            (a, Some(c))
        }
    };
    let sims = std::env::args().any(|a| a == "--with-sims");
    let code = if std::env::args().any(|a| a == "--never-read") {
        match child.as_ref() {
            Some(c) => never_read(&addr, c.id()),
            None => {
                println!("--never-read reads the server's memory in /proc: let the example start it (no RAILYARD_ADDR)");
                2
            }
        }
    } else {
        run(&addr, sims)
    };
    if let Some(c) = child.as_mut() {
        let _ = c.kill();
        let _ = c.wait();
    }
    std::process::exit(code);
}

fn start_server() -> (String, Child) {
    let bin = std::env::var("RAILYARD_BIN").unwrap_or_else(|_| {
        let exe = std::env::current_exe().expect("the example's path");
        // target/release/examples/serve_load -> target/release/railyard
        let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
        dir.join("railyard").display().to_string()
    });
    let mut child = Command::new(&bin)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("{bin}: {e} (cargo build --release first, or set RAILYARD_BIN)")
        });
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("serve prints its address");
    let addr = line
        .trim()
        .strip_prefix("railyard: serving http://")
        .and_then(|s| s.strip_suffix('/'))
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .to_string();
    (addr, child)
}

fn run(addr: &str, with_sims: bool) -> i32 {
    let start = Instant::now();
    let done = AtomicBool::new(false);
    let slow_connected = AtomicUsize::new(0);
    let slow_cut = AtomicUsize::new(0);
    let sims_done = AtomicUsize::new(0);
    let sims_abandoned = AtomicUsize::new(0);
    let (latencies, failures, peak) = std::thread::scope(|scope| {
        for i in 0..SLOW_CLIENTS {
            let (done, connected, cut) = (&done, &slow_connected, &slow_cut);
            scope.spawn(move || slow_client(addr, i, done, connected, cut, start));
        }
        // Let the slow clients connect and start trickling.
        while slow_connected.load(Ordering::Relaxed) < SLOW_CLIENTS
            && start.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_secs(1));
        if with_sims {
            let (done, finished, abandoned) = (&done, &sims_done, &sims_abandoned);
            scope.spawn(move || simulate_meanwhile(addr, done, finished, abandoned, start));
        }
        let sampler = scope.spawn(|| {
            // The server's count of open connections, every second while the run lasts.
            let mut max = 0u64;
            while !done.load(Ordering::Relaxed) && start.elapsed() < CAP {
                max = max.max(status_connections(addr).parse().unwrap_or(0));
                std::thread::sleep(Duration::from_secs(1));
            }
            max
        });
        let workers: Vec<_> = (0..NORMAL_THREADS)
            .map(|t| scope.spawn(move || normal_client(addr, t, start)))
            .collect();
        let mut latencies = Vec::new();
        let mut failures = Vec::new();
        for w in workers {
            let (l, f) = w.join().expect("a client thread");
            latencies.extend(l);
            failures.extend(f);
        }
        done.store(true, Ordering::Relaxed);
        let peak = sampler.join().expect("the sampler");
        (latencies, failures, peak)
    });
    let mut ms: Vec<f64> = latencies.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    let pct = |p: f64| ms[((ms.len() as f64 - 1.0) * p).round() as usize];
    let over = ms
        .iter()
        .filter(|&&m| m >= LIMIT.as_secs_f64() * 1e3)
        .count();
    println!(
        "slow clients: {SLOW_CLIENTS} (cut off by the server and reconnected {} times); at most {peak} connections open at once, as the server counted them",
        slow_cut.load(Ordering::Relaxed)
    );
    if with_sims {
        println!(
            "simulations meanwhile: {} finished, {} abandoned half-way",
            sims_done.load(Ordering::Relaxed),
            sims_abandoned.load(Ordering::Relaxed)
        );
    }
    if ms.is_empty() {
        let busy = failures.iter().filter(|f| f.contains(": 503 ")).count();
        println!(
            "no ordinary request was answered 200: {} failed, {busy} of them with 503; first: {:?}",
            failures.len(),
            failures.first()
        );
        return 1;
    }
    println!(
        "ordinary requests: {} answered 200, {} failed; latency ms: p50 {:.1}, p90 {:.1}, p99 {:.1}, max {:.1}; {over} at or over {} ms; wall {:.1} s",
        ms.len(),
        failures.len(),
        pct(0.5),
        pct(0.9),
        pct(0.99),
        ms[ms.len() - 1],
        LIMIT.as_millis(),
        start.elapsed().as_secs_f64()
    );
    let busy = failures.iter().filter(|f| f.contains(": 503 ")).count();
    if busy > 0 {
        println!("  {busy} of the failures are 503");
    }
    for f in failures.iter().take(5) {
        println!("  failed: {f}");
    }
    if failures.is_empty() && over == 0 && ms.len() == NORMAL_THREADS * NORMAL_PER_THREAD {
        println!(
            "PASS: every ordinary request answered within {} ms",
            LIMIT.as_millis()
        );
        0
    } else {
        println!("FAIL");
        1
    }
}

/// Peak and current resident memory of process `pid`, in kB.
fn memory_kb(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// `--never-read`: [`NEVER_READ`] clients POST the 131,072-GPU cabling plan and never read; small
/// plans meanwhile must be answered within [`LIMIT`] and the server's peak memory stay within
/// [`RSS_LIMIT_MB`].
fn never_read(addr: &str, pid: u32) -> i32 {
    let body = br#"{"preset": "b200-xdr", "servers": 16384}"#;
    let head = format!(
        "POST /api/cabling HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let start = Instant::now();
    let mut hung = Vec::new();
    for _ in 0..NEVER_READ {
        match TcpStream::connect(addr) {
            Ok(mut s) => {
                let _ = s.write_all(head.as_bytes());
                let _ = s.write_all(body);
                hung.push(s);
            }
            Err(e) => println!("connect: {e}"),
        }
    }
    let mut ms = Vec::new();
    let mut failures = Vec::new();
    let mut held = 0u64;
    while start.elapsed() < NEVER_READ_FOR {
        let t0 = Instant::now();
        match request(
            addr,
            "POST",
            "/api/plan",
            br#"{"preset": "seed-two-switch"}"#,
        ) {
            Ok((200, _)) => ms.push(t0.elapsed().as_secs_f64() * 1e3),
            Ok((status, body)) => failures.push(format!("{status} {body}")),
            Err(e) => failures.push(e.to_string()),
        }
        if let Ok((200, b)) = request(addr, "GET", "/api/status", b"") {
            let v: serde_json::Value = serde_json::from_str(&b).unwrap_or_default();
            held = held.max(v["answers_held_bytes"]["heavy"].as_u64().unwrap_or(0));
        }
        std::thread::sleep(PACE.saturating_sub(t0.elapsed()));
    }
    let (peak, now) = memory_kb(pid);
    drop(hung);
    ms.sort_by(f64::total_cmp);
    let over = ms
        .iter()
        .filter(|&&m| m >= LIMIT.as_secs_f64() * 1e3)
        .count();
    let pct = |p: f64| {
        ms.get(((ms.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    println!(
        "{NEVER_READ} clients POST /api/cabling b200-xdr --servers 16384 and never read, for {:.0} s: server peak RSS {} MB (now {} MB); heavy answers held for those clients at most {} MiB",
        NEVER_READ_FOR.as_secs_f64(),
        peak / 1024,
        now / 1024,
        held >> 20
    );
    println!(
        "small plans meanwhile: {} answered 200, {} failed; latency ms: p50 {:.1}, p90 {:.1}, max {:.1}; {over} at or over {} ms",
        ms.len(),
        failures.len(),
        pct(0.5),
        pct(0.9),
        ms.last().copied().unwrap_or(f64::NAN),
        LIMIT.as_millis()
    );
    for f in failures.iter().take(5) {
        println!("  failed: {f}");
    }
    if failures.is_empty() && over == 0 && !ms.is_empty() && peak <= RSS_LIMIT_MB * 1024 {
        println!(
            "PASS: peak RSS within {RSS_LIMIT_MB} MB, every small plan within {} ms",
            LIMIT.as_millis()
        );
        0
    } else {
        println!("FAIL");
        1
    }
}

/// Trickles a request head one byte a second; reconnects when the server closes the connection.
fn slow_client(
    addr: &str,
    i: usize,
    done: &AtomicBool,
    connected: &AtomicUsize,
    cut: &AtomicUsize,
    start: Instant,
) {
    let head = format!(
        "GET /api/presets?slow={i} HTTP/1.1\r\nHost: {addr}\r\nX-Slow: one byte a second\r\n\r\n"
    );
    let mut first = true;
    while !done.load(Ordering::Relaxed) && start.elapsed() < CAP {
        let Ok(mut s) = TcpStream::connect(addr) else {
            std::thread::sleep(Duration::from_secs(1));
            continue;
        };
        if first {
            connected.fetch_add(1, Ordering::Relaxed);
            first = false;
        }
        let _ = s.set_read_timeout(Some(Duration::from_millis(1)));
        for b in head.bytes() {
            if done.load(Ordering::Relaxed) || start.elapsed() >= CAP {
                return;
            }
            if s.write_all(&[b]).is_err() {
                break;
            }
            let mut buf = [0u8; 64];
            if matches!(s.read(&mut buf), Ok(0)) {
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        cut.fetch_add(1, Ordering::Relaxed);
    }
}

/// Simulates the default design again and again until `done`; every other one is abandoned after
/// its first progress lines (the connection closed), which cancels it on the server.
fn simulate_meanwhile(
    addr: &str,
    done: &AtomicBool,
    finished: &AtomicUsize,
    abandoned: &AtomicUsize,
    start: Instant,
) {
    let mut n = 0usize;
    while !done.load(Ordering::Relaxed) && start.elapsed() < CAP {
        n += 1;
        let Ok(mut s) = TcpStream::connect(addr) else {
            return;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
        let head = format!(
            "POST /api/sim HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
        );
        if s.write_all(head.as_bytes()).is_err() {
            return;
        }
        let mut r = BufReader::new(s);
        let mut line = String::new();
        let mut lines = 0;
        loop {
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if line.contains("\"result\"") {
                finished.fetch_add(1, Ordering::Relaxed);
                break;
            }
            if line.contains("\"progress\"") {
                lines += 1;
            }
            // Abandon every other simulation in its all-to-all (the longest part).
            if n.is_multiple_of(2) && lines >= 5 {
                abandoned.fetch_add(1, Ordering::Relaxed);
                break;
            }
            if done.load(Ordering::Relaxed) {
                break;
            }
        }
    }
}

/// The server's count of open connections (`GET /api/status`).
fn status_connections(addr: &str) -> String {
    match request(addr, "GET", "/api/status", b"") {
        Ok((200, body)) => serde_json::from_str::<serde_json::Value>(&body)
            .map(|v| v["connections"].to_string())
            .unwrap_or_default(),
        _ => "?".into(),
    }
}

fn normal_client(addr: &str, t: usize, start: Instant) -> (Vec<Duration>, Vec<String>) {
    let mut lat = Vec::new();
    let mut fail = Vec::new();
    for i in 0..NORMAL_PER_THREAD {
        if start.elapsed() >= CAP {
            fail.push("stopped at the time cap".to_string());
            break;
        }
        let (method, path, body): (&str, &str, &[u8]) = match (t + i) % 4 {
            0 => ("GET", "/", b""),
            1 => ("GET", "/api/presets", b""),
            2 => ("POST", "/api/plan", br#"{"preset": "seed-leaf-spine"}"#),
            _ => ("POST", "/api/plan", b"{}"),
        };
        let t0 = Instant::now();
        match request(addr, method, path, body) {
            Ok((200, _)) => lat.push(t0.elapsed()),
            Ok((status, body)) => fail.push(format!("{method} {path}: {status} {body}")),
            Err(e) => fail.push(format!("{method} {path}: {e}")),
        }
        std::thread::sleep(PACE.saturating_sub(t0.elapsed()));
    }
    (lat, fail)
}

/// One request with `Connection: close`; the status and the body (as sent, chunked or not).
fn request(addr: &str, method: &str, path: &str, body: &[u8]) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    s.set_nodelay(true)?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut req = head.into_bytes();
    req.extend_from_slice(body);
    s.write_all(&req)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Ok((status, body))
}

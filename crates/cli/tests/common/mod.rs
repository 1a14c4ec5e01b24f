//! Helpers shared by the report and web-app tests: a `railyard serve` child process, a tiny HTTP
//! client, and a headless Chromium driven over the DevTools protocol.

#![allow(dead_code)]

pub mod chrome;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_railyard");

/// `railyard serve` on a free loopback port; killed (by its own id) when dropped.
pub struct Server {
    child: Child,
    pub addr: String,
}

impl Server {
    pub fn start() -> Server {
        let mut child = Command::new(BIN)
            .args(["serve", "--bind", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("railyard serve starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("serve prints its address");
        let addr = line
            .trim()
            .strip_prefix("railyard: serving http://")
            .and_then(|s| s.strip_suffix('/'))
            .unwrap_or_else(|| panic!("unexpected first line: {line}"))
            .to_string();
        Server { child, addr }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response: status and body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: String,
}

/// Sends one request (Connection: close) and reads the whole answer.
pub fn request(addr: &str, method: &str, path: &str, body: &[u8]) -> std::io::Result<Reply> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    s.set_write_timeout(Some(Duration::from_secs(10)))?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    // A server may answer (413) before reading a body it refuses; that is not an error here.
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {head:?}"));
    Ok(Reply {
        status,
        body: body.to_string(),
    })
}

/// Whether a test that needs `what` runs: present, or missing outside CI (skip with a message).
/// Under CI=true a missing tool fails the test.
pub fn need(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{what} is missing; scripts/test installs it (CI=true: not skipping)");
    }
    eprintln!("skipping: {what} is missing (scripts/test installs it)");
    false
}

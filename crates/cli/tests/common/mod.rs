//! Helpers shared by the CLI's integration tests: running the binary, a `railyard serve` child
//! process, a tiny HTTP client, and a headless Chromium driven over the DevTools protocol.

#![allow(dead_code)]

pub mod chrome;
pub mod ibsim;

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_railyard");

/// Runs `railyard ARGS` in `cwd` and waits for it.
pub fn railyard_in<I, S>(cwd: &Path, args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("railyard runs")
}

/// Runs `railyard ARGS` in a fresh, empty working directory (removed afterwards), so nothing it
/// writes by accident lands in the source tree.
pub fn railyard<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let cwd = tempfile::tempdir().expect("a temporary directory");
    railyard_in(cwd.path(), args)
}

/// Asserts that the run exited 0 (its stderr in the message if not) and returns its stdout.
pub fn succeeded(o: &Output) -> String {
    assert!(
        o.status.success(),
        "railyard failed ({}): {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

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

    /// The server's process id, to read its memory in `/proc`.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response: status and body (chunked bodies decoded).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: String,
}

/// The head of a request (`Connection: close`) with a JSON body of `len` bytes.
fn head(addr: &str, method: &str, path: &str, len: usize) -> String {
    typed_head(addr, method, path, Some("application/json"), len)
}

/// The head of a request (`Connection: close`) with a body of `len` bytes of `content_type`.
fn typed_head(
    addr: &str,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    len: usize,
) -> String {
    let typed = content_type.map_or(String::new(), |t| format!("Content-Type: {t}\r\n"));
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{typed}Content-Length: {len}\r\nConnection: close\r\n\r\n"
    )
}

/// Sends one request with a JSON body (Connection: close) and reads the whole answer.
pub fn request(addr: &str, method: &str, path: &str, body: &[u8]) -> std::io::Result<Reply> {
    request_typed(addr, method, path, Some("application/json"), body)
}

/// [`request`], which the server must answer 200 (its body in the message if not).
pub fn answered(addr: &str, method: &str, path: &str, body: &[u8]) -> Reply {
    let r = request(addr, method, path, body)
        .unwrap_or_else(|e| panic!("{method} {path}: no answer: {e}"));
    assert_eq!(r.status, 200, "{method} {path}: {}", r.body);
    r
}

/// The server's `GET /api/status`, parsed.
pub fn server_status(addr: &str) -> serde_json::Value {
    let r = answered(addr, "GET", "/api/status", b"");
    serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("{e}: {}", r.body))
}

/// [`request`] with the body's `Content-Type` given (`None`: no such header).
pub fn request_typed(
    addr: &str,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> std::io::Result<Reply> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    s.set_write_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(typed_head(addr, method, path, content_type, body.len()).as_bytes())?;
    // A server may answer (413) before reading a body it refuses; that is not an error here.
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(raw.len());
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let rest = raw.get(split + 4..).unwrap_or_default();
    let status = status_of(&head);
    let body = if is_chunked(&head) {
        let mut r = BufReader::new(rest);
        let mut out = Vec::new();
        while let Some(chunk) = read_chunk(&mut r)? {
            out.extend_from_slice(&chunk);
        }
        out
    } else {
        rest.to_vec()
    };
    Ok(Reply {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn status_of(head: &str) -> u16 {
    head.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {head:?}"))
}

fn is_chunked(head: &str) -> bool {
    head.lines().any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("transfer-encoding") && v.trim() == "chunked"
        })
    })
}

/// One chunk of a chunked body; `None` after the last.
fn read_chunk(r: &mut impl BufRead) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
        .map_err(|e| std::io::Error::other(format!("chunk size {line:?}: {e}")))?;
    if size == 0 {
        return Ok(None);
    }
    let mut data = vec![0u8; size + 2];
    r.read_exact(&mut data)?;
    data.truncate(size);
    Ok(Some(data))
}

/// A streamed answer (a simulation's NDJSON), read line by line as it comes.
pub struct Lines {
    pub status: u16,
    reader: BufReader<TcpStream>,
    chunked: bool,
    buf: Vec<u8>,
}

/// Sends one request and reads the answer's head, leaving its body to [`Lines::next_line`].
pub fn stream(addr: &str, method: &str, path: &str, body: &[u8]) -> std::io::Result<Lines> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    s.set_write_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(head(addr, method, path, body.len()).as_bytes())?;
    s.write_all(body)?;
    let mut reader = BufReader::new(s);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    Ok(Lines {
        status: status_of(&head),
        chunked: is_chunked(&head),
        reader,
        buf: Vec::new(),
    })
}

impl Lines {
    /// The next line of the body (without its newline), or `None` at its end.
    pub fn next_line(&mut self) -> std::io::Result<Option<String>> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return Ok(Some(
                    String::from_utf8_lossy(&line[..line.len() - 1]).into_owned(),
                ));
            }
            let more = if self.chunked {
                read_chunk(&mut self.reader)?
            } else {
                let mut v = Vec::new();
                self.reader.read_until(b'\n', &mut v)?;
                Some(v).filter(|v| !v.is_empty())
            };
            match more {
                Some(data) => self.buf.extend_from_slice(&data),
                None if self.buf.is_empty() => return Ok(None),
                None => {
                    let line = std::mem::take(&mut self.buf);
                    return Ok(Some(String::from_utf8_lossy(&line).into_owned()));
                }
            }
        }
    }
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

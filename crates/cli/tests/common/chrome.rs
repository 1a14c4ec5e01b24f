//! Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: the
//! browser reads NUL-terminated JSON commands on fd 3 and writes replies and events on fd 4), so the
//! tests need no WebSocket client and no network port.

use serde_json::{json, Value};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// The browser, from `RAILYARD_CHROMIUM` or Debian's package.
pub fn path() -> String {
    std::env::var("RAILYARD_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_string())
}

pub fn available() -> bool {
    std::path::Path::new(&path()).exists()
}

extern "C" {
    fn pipe(fds: *mut i32) -> i32;
    fn dup2(old: i32, new: i32) -> i32;
    fn close(fd: i32) -> i32;
}

fn make_pipe() -> (RawFd, RawFd) {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    let rc = unsafe { pipe(fds.as_mut_ptr()) };
    assert_eq!(rc, 0, "pipe(2) failed");
    (fds[0], fds[1])
}

/// A running browser with one page attached.
pub struct Chrome {
    child: Child,
    to_browser: File,
    from_browser: Receiver<Value>,
    next_id: u64,
    session: String,
    /// Every event seen so far on the page's session.
    pub events: Vec<Value>,
    _profile: tempfile::TempDir,
}

impl Chrome {
    /// Starts the browser and opens a blank page with Page, Runtime, Network and Log events on.
    pub fn launch(width: u32, height: u32) -> Chrome {
        let profile = tempfile::tempdir().unwrap();
        let (cmd_r, cmd_w) = make_pipe(); // we write commands, the browser reads fd 3
        let (out_r, out_w) = make_pipe(); // the browser writes fd 4, we read
        let mut cmd = Command::new(path());
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-default-apps",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
            "--remote-debugging-pipe",
            &format!("--window-size={width},{height}"),
            &format!("--user-data-dir={}", profile.path().display()),
            "about:blank",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: between fork and exec only async-signal-safe calls (dup2, close) run.
        unsafe {
            cmd.pre_exec(move || {
                if dup2(cmd_r, 3) < 0 || dup2(out_w, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                for fd in [cmd_r, cmd_w, out_r, out_w] {
                    if fd > 4 {
                        close(fd);
                    }
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("chromium starts");
        // SAFETY: the descriptors come from pipe(2) above and are owned by these files alone.
        let (to_browser, from) = unsafe {
            close(cmd_r);
            close(out_w);
            (File::from_raw_fd(cmd_w), File::from_raw_fd(out_r))
        };
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(from);
            loop {
                let mut buf = Vec::new();
                match r.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                buf.pop();
                if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                    if tx.send(v).is_err() {
                        return;
                    }
                }
            }
        });
        let mut c = Chrome {
            child,
            to_browser,
            from_browser: rx,
            next_id: 0,
            session: String::new(),
            events: Vec::new(),
            _profile: profile,
        };
        let target = c.call_browser("Target.createTarget", json!({ "url": "about:blank" }));
        let target_id = target["targetId"].as_str().unwrap().to_string();
        let attached = c.call_browser(
            "Target.attachToTarget",
            json!({ "targetId": target_id, "flatten": true }),
        );
        c.session = attached["sessionId"].as_str().unwrap().to_string();
        for domain in ["Page", "Runtime", "Network", "Log"] {
            c.call(&format!("{domain}.enable"), json!({}));
        }
        c.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        );
        c
    }

    fn send(&mut self, method: &str, params: Value, session: Option<String>) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = Value::String(s);
        }
        let mut bytes = msg.to_string().into_bytes();
        bytes.push(0);
        self.to_browser
            .write_all(&bytes)
            .expect("write to chromium");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .from_browser
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("chromium did not answer {method}"));
            if v["id"].as_u64() == Some(id) {
                if let Some(e) = v.get("error") {
                    panic!("{method}: {e}");
                }
                return v["result"].clone();
            }
            if v.get("method").is_some() {
                self.events.push(v);
            }
        }
    }

    fn call_browser(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None)
    }

    /// A command on the page.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let s = self.session.clone();
        self.send(method, params, Some(s))
    }

    /// Opens `url` and waits for its load event.
    pub fn open(&mut self, url: &str) {
        self.call("Page.navigate", json!({ "url": url }));
        self.wait_event("Page.loadEventFired", Duration::from_secs(60));
    }

    /// Waits for an event by name (also looking at those already seen since the last wait).
    pub fn wait_event(&mut self, name: &str, timeout: Duration) -> Value {
        if let Some(i) = self.events.iter().position(|e| e["method"] == name) {
            return self.events.remove(i);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .from_browser
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no {name} within {timeout:?}"));
            if v["method"] == name {
                return v;
            }
            if v.get("method").is_some() {
                self.events.push(v);
            }
        }
    }

    /// Evaluates a JavaScript expression (awaiting promises) and returns its value.
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expr, "returnByValue": true, "awaitPromise": true }),
        );
        if let Some(e) = r.get("exceptionDetails") {
            panic!("{expr}: {e}");
        }
        r["result"]["value"].clone()
    }

    /// Evaluates `expr` until it is true, or panics after `timeout`.
    pub fn wait_for(&mut self, expr: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.eval(expr) == Value::Bool(true) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("not true within {timeout:?}: {expr}");
    }

    /// PNG screenshot of the page (full page when `full`).
    pub fn screenshot(&mut self, full: bool) -> Vec<u8> {
        let r = self.call(
            "Page.captureScreenshot",
            json!({ "format": "png", "captureBeyondViewport": full }),
        );
        decode_base64(r["data"].as_str().unwrap())
    }

    /// Drains events that arrived without a command.
    pub fn pump(&mut self) {
        while let Ok(v) = self.from_browser.try_recv() {
            if v.get("method").is_some() {
                self.events.push(v);
            }
        }
    }

    /// Console errors, uncaught exceptions and error log entries seen so far.
    pub fn errors(&mut self) -> Vec<String> {
        self.pump();
        self.events
            .iter()
            .filter_map(|e| match e["method"].as_str()? {
                "Runtime.exceptionThrown" => Some(e["params"]["exceptionDetails"].to_string()),
                "Runtime.consoleAPICalled"
                    if matches!(e["params"]["type"].as_str(), Some("error" | "assert")) =>
                {
                    Some(e["params"]["args"].to_string())
                }
                "Log.entryAdded" if e["params"]["entry"]["level"] == "error" => {
                    Some(e["params"]["entry"].to_string())
                }
                _ => None,
            })
            .collect()
    }

    /// URL and HTTP status of every response the page received.
    pub fn responses(&mut self) -> Vec<(String, u64)> {
        self.pump();
        self.events
            .iter()
            .filter(|e| e["method"] == "Network.responseReceived")
            .filter_map(|e| {
                let r = &e["params"]["response"];
                Some((r["url"].as_str()?.to_string(), r["status"].as_u64()?))
            })
            .collect()
    }

    /// URLs of every request the page made.
    pub fn requests(&mut self) -> Vec<String> {
        self.pump();
        self.events
            .iter()
            .filter(|e| e["method"] == "Network.requestWillBeSent")
            .filter_map(|e| e["params"]["request"]["url"].as_str().map(str::to_string))
            .collect()
    }
}

impl Drop for Chrome {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn decode_base64(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => 0,
        }
    };
    let bytes: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for chunk in bytes.chunks(4) {
        let pad = chunk.iter().filter(|&&c| c == b'=').count();
        let n = chunk.iter().fold(0u32, |acc, &c| {
            (acc << 6) | if c == b'=' { 0 } else { val(c) }
        });
        let n = n << (6 * (4 - chunk.len()));
        let b = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&b[..3 - pad.min(2)]);
    }
    out
}

/// Whether a PNG screenshot shows something: distinct colours across its pixels. Decoding needs
/// no library: Chromium's PNGs are 8-bit RGBA or RGB, zlib-compressed; instead of inflating we
/// ask the page itself in [`Chrome::not_blank`]. This checks the container only.
pub fn is_png(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x89PNG\r\n\x1a\n")
}

impl Chrome {
    /// Asserts that a screenshot of the page is not blank and that every request the page made
    /// went to one of `origins` (URL prefixes) or was a `data:` URL.
    pub fn assert_drawn_from(&mut self, origins: &[&str]) {
        let png = self.screenshot(false);
        assert!(self.not_blank(&png), "screenshot is blank");
        for r in self.requests() {
            assert!(
                r.starts_with("data:") || origins.iter().any(|o| r.starts_with(o)),
                "the page loaded {r} from outside {origins:?}"
            );
        }
    }

    /// Asserts that the console shows no error but the ones the test itself causes (those holding
    /// one of `expected`).
    pub fn assert_no_console_errors(&mut self, expected: &[&str]) {
        let errors: Vec<String> = self
            .errors()
            .into_iter()
            .filter(|e| !expected.iter().any(|x| e.contains(x)))
            .collect();
        assert_eq!(errors, Vec::<String>::new(), "console errors");
    }
}

impl Chrome {
    /// Whether the screenshot is not blank: it is a PNG and, drawn onto a canvas in the page,
    /// has many distinct colours.
    pub fn not_blank(&mut self, png: &[u8]) -> bool {
        if !is_png(png) {
            return false;
        }
        let b64 = encode_base64(png);
        let expr = format!(
            r#"new Promise(ok => {{ const img = new Image(); img.onload = () => {{
                const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
                const g = c.getContext('2d'); g.drawImage(img, 0, 0);
                const d = g.getImageData(0, 0, c.width, c.height).data; const seen = new Set();
                for (let i = 0; i < d.length; i += 4 * 97) seen.add((d[i] << 16) | (d[i+1] << 8) | d[i+2]);
                ok(seen.size); }}; img.onerror = () => ok(0); img.src = 'data:image/png;base64,{b64}'; }})"#
        );
        self.eval(&expr).as_u64().unwrap_or(0) > 20
    }
}

fn encode_base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

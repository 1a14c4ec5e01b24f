//! A real ibsim for the integration tests: whether its tools are installed (a skip locally, a
//! failure under CI=true, where scripts/test installs them), and a simulator on its own socket.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Whether every tool is on the PATH, or a skip (a failure under CI=true).
pub fn tools_present(tools: &[&str]) -> bool {
    let ok = tools.iter().all(|t| {
        Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !ok && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("one of {tools:?} is missing; scripts/test installs them");
    }
    if !ok {
        eprintln!("skipping: one of {tools:?} is not installed (run scripts/test)");
    }
    ok
}

/// ibsim, ibsim-run, ibnetdiscover, iblinkinfo, ibportstate and timeout: what the ibsim tests run.
pub fn ib_tools_present() -> bool {
    tools_present(&[
        "ibsim",
        "ibsim-run",
        "ibnetdiscover",
        "iblinkinfo",
        "ibportstate",
        "timeout",
    ])
}

/// An ibsim on its own socket, killed (this child only) when dropped.
pub struct Ibsim {
    child: Child,
    pub sock: String,
}

impl Drop for Ibsim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Ibsim {
    /// ibsim on `dir/topo` with `flags` (what `export ibnet --opensm-dir` wrote to
    /// ibsim-flags.txt), logging to `dir/ibsim.log`; returns once its console is up.
    pub fn start(dir: &Path, topo: &str, flags: &str) -> Ibsim {
        // Tests run in parallel threads of one process: every ibsim needs a socket of its own.
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let sock = format!("railyard-test-{}-{n}", std::process::id());
        let log = std::fs::File::create(dir.join("ibsim.log")).unwrap();
        let child = Command::new("ibsim")
            .args(flags.split_whitespace())
            .arg("-s")
            .arg(dir.join(topo))
            .env("IBSIM_SOCKNAME", &sock)
            .stdin(Stdio::piped())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start ibsim");
        let sim = Ibsim { child, sock };
        let start = Instant::now();
        while !std::fs::read_to_string(dir.join("ibsim.log"))
            .unwrap_or_default()
            .contains("sim>")
        {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "ibsim did not come up"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        sim
    }

    /// ibsim on `dir/topo` with the flags `export ibnet --opensm-dir osm` wrote.
    pub fn start_exported(dir: &Path, topo: &str) -> Ibsim {
        let flags = std::fs::read_to_string(dir.join("osm/ibsim-flags.txt")).unwrap();
        Ibsim::start(dir, topo, &flags)
    }

    /// A tool's output, run against this simulator (bounded by `timeout`).
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("timeout")
            .arg("120")
            .arg("ibsim-run")
            .args(args)
            .env("IBSIM_SOCKNAME", &self.sock)
            .output()
            .expect("run ibsim-run");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

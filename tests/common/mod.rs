//! What the integration tests share: running the podnet binary and a fresh folder for the
//! files a test writes. Each test file uses the part it needs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What one run of the binary did.
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the podnet binary in `dir` with `args`. Whatever the input, podnet must never panic
/// or fail internally: a panic, a backtrace hint or an internal error on either stream fails
/// the calling test here.
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_podnet"))
        .current_dir(dir)
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run podnet");
    let output = Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    for text in [&output.stdout, &output.stderr] {
        assert!(
            !text.contains("panicked")
                && !text.contains("RUST_BACKTRACE")
                && !text.contains("internal error"),
            "podnet {args:?} panicked or failed internally:\n{text}"
        );
    }
    output
}

/// Runs the podnet binary in the crate's folder (so `scenarios/…` resolves).
pub fn run(args: &[&str]) -> Output {
    run_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// [`run`] as (exit code, stdout, stderr).
pub fn podnet(args: &[&str]) -> (i32, String, String) {
    let out = run(args);
    (out.code, out.stdout, out.stderr)
}

/// A fresh, empty folder under the target directory, unique to this call.
pub fn temp_dir(tag: &str) -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("podnet-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a temporary folder");
    dir
}

/// Writes `text` to `dir/name` and returns the path as text, for the command line.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write a test file");
    path.display().to_string()
}

/// A library scenario (`scenarios/<name>.yaml`) simulated in process: its report.json as
/// JSON, and its report.md.
pub fn library_report(name: &str) -> (serde_json::Value, String) {
    let path = format!("{}/scenarios/{name}.yaml", env!("CARGO_MANIFEST_DIR"));
    let yaml = std::fs::read_to_string(&path).expect("library scenario");
    let s = podnet::scenario::load_str(&path, &yaml).unwrap_or_else(|d| panic!("invalid:\n{d}"));
    let outcome = podnet::sim::Simulation::new(&s).run();
    let report = podnet::report::Report::new(&s, &outcome, Vec::new());
    let json = serde_json::from_str(&report.to_json()).expect("report.json");
    let md = podnet::report::markdown::render(&report, &[], None);
    (json, md)
}

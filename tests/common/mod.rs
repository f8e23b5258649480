//! What the integration tests share: running the podnet binary.

use std::process::Command;

/// Runs the podnet binary in the crate's folder with `args`: (exit code, stdout, stderr).
/// Whatever the input, podnet must never panic: a panic fails the calling test here.
pub fn podnet(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_podnet"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("run podnet");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !stderr.contains("panicked"),
        "podnet {args:?} panicked:\n{stderr}"
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

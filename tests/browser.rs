//! `report.html` as a browser shows it: headless Chromium renders the quick start's page to a
//! PNG and dumps its DOM. Skipped (and passing) when `/usr/bin/chromium` is not installed;
//! `.ci/run` installs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use podnet::report::charts::{self, ChartInputs};
use podnet::report::{Report, html};
use podnet::scenario;
use podnet::sim::Simulation;
use podnet::sim::expect::evaluate;

const CHROMIUM: &str = "/usr/bin/chromium";
/// A browser that has not answered by then is hung.
const TIMEOUT: Duration = Duration::from_secs(180);

/// A fresh folder for this test's files, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> TempDir {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir =
            std::env::temp_dir().join(format!("podnet-{label}-{}-{stamp}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create a temporary folder");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn quickstart_html() -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.yaml");
    let s = scenario::load(&file).unwrap_or_else(|d| panic!("quickstart does not load:\n{d}"));
    let outcome = Simulation::new(&s).run();
    let results = evaluate(&s.expectations, &outcome.snapshots, &outcome.last);
    let report = Report::new(&s, &outcome, results);
    let charts = charts::render(&ChartInputs::new(&report, &outcome.pool_usage));
    html::render(&report, &charts, None)
}

/// Runs headless Chromium on `url` with `extra` flags and a fresh profile, killing it after
/// [`TIMEOUT`].
fn chromium(work: &Path, profile: &str, extra: &[String], url: &str) -> Output {
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", work.join(profile).display()))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    // Read stdout on a thread so a large DOM cannot fill the pipe and block the browser.
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut buf);
        buf
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            break status;
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = Vec::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_end(&mut e, &mut stderr);
    }
    Output {
        status,
        stdout: reader.join().unwrap_or_default(),
        stderr,
    }
}

#[test]
#[ignore = "needs /usr/bin/chromium: .ci/run installs it and runs this with --ignored"]
fn the_quickstart_report_renders_in_a_browser() {
    // Run on purpose (`--ignored`), a missing browser is a failure, not a skip.
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is not installed: install chromium (.ci/run does) to run this test"
    );
    let work = TempDir::new("browser");
    let page = work.0.join("report.html");
    std::fs::write(&page, quickstart_html()).expect("write report.html");
    let url = format!("file://{}", page.display());

    let png = work.0.join("report.png");
    let shot = chromium(
        &work.0,
        "profile-screenshot",
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1280,2000".to_string(),
        ],
        &url,
    );
    let bytes = std::fs::read(&png).unwrap_or_else(|e| {
        panic!(
            "no screenshot ({e}); chromium exited {:?}:\n{}",
            shot.status,
            String::from_utf8_lossy(&shot.stderr)
        )
    });
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "the screenshot is not a PNG"
    );
    // A page of one colour compresses to a few KB; tables, text and charts do not.
    assert!(
        bytes.len() > 30_000,
        "the screenshot is suspiciously small ({} bytes): is the page blank?",
        bytes.len()
    );

    let dump = chromium(&work.0, "profile-dom", &["--dump-dom".to_string()], &url);
    let dom = String::from_utf8_lossy(&dump.stdout);
    for heading in [
        "podnet report: quickstart",
        ">Summary</h2>",
        ">Pools</h2>",
        ">Nodes</h2>",
        ">Pods</h2>",
        ">Expectations</h2>",
        ">Charts</h2>",
        ">Warnings</h2>",
    ] {
        assert!(
            dom.contains(heading),
            "the DOM lacks {heading:?}; chromium said:\n{}",
            String::from_utf8_lossy(&dump.stderr)
        );
    }
    let svgs: Vec<&str> = dom.split("<svg").skip(1).collect();
    assert!(!svgs.is_empty(), "no <svg> in the DOM");
    assert!(
        svgs.iter().any(|svg| {
            let svg = svg.split("</svg>").next().unwrap_or("");
            svg.contains("<rect") || svg.contains("<path") || svg.contains("<polyline")
        }),
        "the charts draw nothing"
    );
}

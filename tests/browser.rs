//! `report.html` as a browser shows it: headless Chromium renders the quick start's page to a
//! PNG and dumps its DOM, and measures every picture as laid out (a script added to the test's
//! copy of the page writes each SVG's box and drawn extent into the DOM). Skipped (and
//! passing) when `/usr/bin/chromium` is not installed; `.ci/run` installs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use podnet::report::{Report, html, run_charts};
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
    let charts = run_charts(&report, &outcome);
    html::render(&report, &charts, Some(&report.unreachable))
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

/// Written into the test's copy of the page: each figure's SVG gets `data-box="W H G T"`,
/// its laid-out width and height, how many shapes the browser drew with a non-empty extent and
/// how many texts it laid out with a non-zero width (so a font was found and used).
const MEASURE: &str = "<script>for (const s of document.querySelectorAll('figure svg')) {\
const r = s.getBoundingClientRect();\
const drawn = [...s.querySelectorAll('rect,path,line,polyline,circle')].filter(e => { const b = e.getBBox(); return b.width + b.height > 0; }).length;\
const texts = [...s.querySelectorAll('text')].filter(e => e.getBBox().width > 0).length;\
s.setAttribute('data-box', [r.width, r.height, drawn, texts].map(Math.round).join(' '));\
}</script>";

#[test]
fn every_picture_renders_with_a_sensible_size_and_is_not_empty() {
    if !Path::new(CHROMIUM).exists() {
        println!("skipped: {CHROMIUM} not installed (.ci/run installs it)");
        return;
    }
    let work = TempDir::new("pictures");
    let page = work.0.join("report.html");
    let html = quickstart_html().replace("</body>", &format!("{MEASURE}\n</body>"));
    std::fs::write(&page, html).expect("write report.html");
    let url = format!("file://{}", page.display());
    let dump = chromium(
        &work.0,
        "profile-measure",
        &[
            "--dump-dom".to_string(),
            "--window-size=1280,2000".to_string(),
        ],
        &url,
    );
    let dom = String::from_utf8_lossy(&dump.stdout);
    let figures: Vec<&str> = dom.split("<figure>").skip(1).collect();
    for file in [
        "topology.svg",
        "reachability.svg",
        "address-map.svg",
        "pool-utilisation.svg",
        "bgp-updates.svg",
    ] {
        let figure = figures
            .iter()
            .find(|f| f.contains(&format!("({file})</figcaption>")))
            .unwrap_or_else(|| {
                panic!(
                    "no figure for {file}; chromium said:\n{}",
                    String::from_utf8_lossy(&dump.stderr)
                )
            });
        let boxed = figure
            .split("data-box=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or_else(|| panic!("{file} was not measured: did the script run?"));
        let v: Vec<f64> = boxed
            .split(' ')
            .map(|x| x.parse().expect("a number"))
            .collect();
        let [w, h, shapes, texts] = v[..] else {
            panic!("{file}: {boxed}");
        };
        // Laid out at a readable size inside the page's 1,120-pixel column.
        assert!((300.0..=1100.0).contains(&w), "{file}: {w} px wide");
        assert!((150.0..=4000.0).contains(&h), "{file}: {h} px high");
        // And drawing shapes and text, not a blank canvas.
        assert!(shapes >= 10.0, "{file}: {shapes} shapes drawn");
        assert!(texts >= 5.0, "{file}: {texts} texts laid out");
    }
}

//! Determinism (SPEC §1, §3.1): the same scenario and seed give byte-identical output files,
//! through the binary and through the library.

use std::path::{Path, PathBuf};
use std::process::Command;

const QUICKSTART: &str = "scenarios/quickstart.yaml";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `podnet run quickstart --out DIR [extra...]` and returns the output folder.
fn run(name: &str, extra: &[&str]) -> PathBuf {
    run_with_threads(name, extra, None)
}

/// `run`, with rayon's thread count set (all-pairs reachability runs in parallel).
fn run_with_threads(name: &str, extra: &[&str], threads: Option<usize>) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("podnet-determinism-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut command = Command::new(env!("CARGO_BIN_EXE_podnet"));
    if let Some(n) = threads {
        command.env("RAYON_NUM_THREADS", n.to_string());
    }
    let out = command
        .args(["run", QUICKSTART, "--quiet", "--out", dir.to_str().unwrap()])
        .args(extra)
        .current_dir(root())
        .output()
        .expect("run podnet");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

fn read(dir: &Path, file: &str) -> Vec<u8> {
    std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{}/{file}: {e}", dir.display()))
}

#[test]
fn the_same_seed_gives_byte_identical_files() {
    let first = run("a", &[]);
    let second = run("b", &[]);
    for file in ["report.json", "events.jsonl"] {
        let (a, b) = (read(&first, file), read(&second, file));
        assert!(!a.is_empty(), "{file} is empty");
        assert!(a == b, "{file} differs between two runs with the same seed");
    }
    // An explicit --seed equal to the scenario's is the same run.
    let explicit = run("c", &["--seed", "1"]);
    assert!(read(&first, "report.json") == read(&explicit, "report.json"));
    for dir in [first, second, explicit] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn another_seed_still_runs() {
    let dir = run("seed2", &["--seed", "2"]);
    let report: serde_json::Value =
        serde_json::from_slice(&read(&dir, "report.json")).expect("report.json is JSON");
    assert_eq!(report["seed"], 2);
    assert!(!read(&dir, "events.jsonl").is_empty());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_library_gives_equal_event_logs() {
    let scenario = podnet::scenario::load(&root().join(QUICKSTART)).expect("quickstart loads");
    let first = podnet::sim::Simulation::new(&scenario).run();
    let second = podnet::sim::Simulation::new(&scenario).run();
    assert!(!first.log.is_empty());
    assert_eq!(first.log, second.log);
    assert_eq!(first.end, second.end);
    // Loading twice gives the same run too.
    let again = podnet::scenario::load(&root().join(QUICKSTART)).expect("quickstart loads");
    assert_eq!(podnet::sim::Simulation::new(&again).run().log, first.log);
}

#[test]
fn the_thread_count_changes_no_byte() {
    let one = run_with_threads("threads-1", &[], Some(1));
    let three = run_with_threads("threads-3", &[], Some(3));
    for file in ["report.json", "events.jsonl", "report.md"] {
        assert!(
            read(&one, file) == read(&three, file),
            "{file} differs between 1 and 3 threads"
        );
    }
    for dir in [one, three] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// `podnet check` keeps no per-UPDATE and per-route BGP log lines; everything else, the end
/// of the run and every expectation's verdict included, must be what the full run gives.
#[test]
fn a_quiet_bgp_log_changes_nothing_but_the_log() {
    use podnet::bgp::LogOptions;
    let quiet = LogOptions {
        updates: false,
        routes: false,
    };
    let dropped = ["update", "bestPathChanged", "routeRejected"];
    let mut compared = 0;
    for entry in std::fs::read_dir(root().join("scenarios")).expect("scenarios/") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let scenario = podnet::scenario::load(&path).expect("library scenarios load");
        let full = podnet::sim::Simulation::new(&scenario).run();
        let brief = podnet::sim::Simulation::with_bgp_log(&scenario, quiet).run();
        let name = path.display();
        assert_eq!(full.end, brief.end, "{name}: the run ends elsewhere");
        let kept: Vec<_> = full
            .log
            .iter()
            .filter(|e| !dropped.contains(&e.kind))
            .collect();
        assert_eq!(kept, brief.log.iter().collect::<Vec<_>>(), "{name}");
        let judge = |o: &podnet::sim::Outcome| {
            podnet::sim::expect::evaluate(&scenario.expectations, &o.snapshots, &o.last)
        };
        assert_eq!(judge(&full), judge(&brief), "{name}");
        compared += 1;
    }
    assert!(compared >= 19, "only {compared} scenarios");
}

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

/// `podnet run --events sessions` (its default) streams every line but the per-UPDATE and
/// per-route BGP ones, `--events all` every line, `podnet check` keeps none; everything else —
/// the end of the run, every expectation's verdict, the UPDATE chart's series — must be what
/// the full in-memory run gives, and a streamed file must be the bytes `events_jsonl` writes.
#[test]
fn the_event_level_changes_nothing_but_the_log() {
    use podnet::sim::events::{EventLevel, EventLog, ROUTE_KINDS};
    let mut compared = 0;
    for entry in std::fs::read_dir(root().join("scenarios")).expect("scenarios/") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let scenario = podnet::scenario::load(&path).expect("library scenarios load");
        let full = podnet::sim::Simulation::new(&scenario).run();
        let name = path.display();
        // The UPDATE series counted by the simulation is the one the full log shows.
        let mut from_log: Vec<(u64, u64)> = Vec::new();
        for e in full.log.iter().filter(|e| e.kind == "update") {
            match from_log.last_mut() {
                Some((t, n)) if *t == e.time_us => *n += 1,
                _ => from_log.push((e.time_us, 1)),
            }
        }
        assert_eq!(full.bgp_updates, from_log, "{name}");
        assert_eq!(full.events.lines, full.log.len(), "{name}");
        let judge = |o: &podnet::sim::Outcome| {
            podnet::sim::expect::evaluate(&scenario.expectations, &o.snapshots, &o.last)
        };
        for level in [EventLevel::None, EventLevel::Sessions, EventLevel::All] {
            let file = Shared::default();
            let log = EventLog::stream(level, Box::new(file.clone()));
            let streamed = podnet::sim::Simulation::with_event_log(&scenario, log).run();
            assert_eq!(
                full.end, streamed.end,
                "{name} {level:?}: the run ends elsewhere"
            );
            assert!(
                streamed.log.is_empty(),
                "{name}: a streamed log is not held"
            );
            assert_eq!(streamed.events.error, None);
            let kept: Vec<_> = full
                .log
                .iter()
                .filter(|e| match level {
                    EventLevel::None => false,
                    EventLevel::Sessions => !ROUTE_KINDS.contains(&e.kind),
                    EventLevel::All => true,
                })
                .cloned()
                .collect();
            assert_eq!(
                file.text(),
                podnet::report::events_jsonl(&kept),
                "{name} {level:?}"
            );
            assert_eq!(streamed.events.lines, kept.len(), "{name} {level:?}");
            assert_eq!(streamed.bgp_updates, full.bgp_updates, "{name} {level:?}");
            assert_eq!(judge(&full), judge(&streamed), "{name} {level:?}");
        }
        let dropped = podnet::sim::Simulation::with_event_log(&scenario, EventLog::discard()).run();
        assert_eq!(full.end, dropped.end, "{name}");
        assert_eq!(judge(&full), judge(&dropped), "{name}");
        compared += 1;
    }
    assert!(compared >= 19, "only {compared} scenarios");
}

/// A writer whose bytes the test reads afterwards.
#[derive(Clone, Default)]
struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().expect("not poisoned").clone()).expect("UTF-8")
    }
}

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

//! Every scenario in `scenarios/` loads, runs, and its expectations hold.

use std::path::Path;

use podnet::scenario;
use podnet::sim::Simulation;
use podnet::sim::expect::evaluate;

#[test]
fn every_library_scenario_passes_its_expectations() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("scenarios folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for file in files {
        let s = match scenario::load(&file) {
            Ok(s) => s,
            Err(d) => panic!("{} does not load:\n{d}", file.display()),
        };
        assert!(
            !s.description.is_empty(),
            "{} needs a description",
            file.display()
        );
        let outcome = Simulation::new(&s).run();
        let results = evaluate(&s.expectations, &outcome.snapshots, &outcome.last);
        assert!(
            !results.is_empty(),
            "{} has no expectations",
            file.display()
        );
        for r in &results {
            assert!(
                r.passed,
                "{}: {} expected {}, got {}",
                file.display(),
                r.name,
                r.expected,
                r.actual
            );
        }
    }
}

#[test]
fn the_embedded_quickstart_is_the_file() {
    let file = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.yaml"),
    )
    .expect("quickstart");
    assert_eq!(file, podnet::cli::QUICKSTART);
}

//! Load, then simulate small valid scenarios to the end and evaluate their expectations:
//! the simulation must never panic on anything the loader accepts. Large clusters are
//! skipped so each input runs in milliseconds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use podnet::sim::Simulation;
use podnet::sim::expect::evaluate;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(scenario) = podnet::scenario::load_str("fuzz.yaml", text) else {
        return;
    };
    let small = scenario.topology.nodes.len() <= 32
        && scenario.workloads.len() <= 8
        && scenario.actions.len() <= 32;
    if !small {
        return;
    }
    let outcome = Simulation::new(&scenario).run();
    let _ = evaluate(&scenario.expectations, &outcome.snapshots, &outcome.last);
});

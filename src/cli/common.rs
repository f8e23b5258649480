//! What several subcommands share: loading a scenario (or the built-in one), running it, and
//! evaluating its expectations, with errors printed once and mapped to exit codes.

use std::path::Path;

use super::exit;
use crate::bgp::LogOptions;
use crate::model::time::SimTime;
use crate::scenario::{self, Scenario};
use crate::sim::expect::{self, ExpectationResult};
use crate::sim::{Outcome, Simulation};

/// The built-in quick-start scenario (the same file as `scenarios/quickstart.yaml`).
pub const QUICKSTART: &str = include_str!("../../scenarios/quickstart.yaml");

/// A scenario after its run.
pub struct Ran {
    pub scenario: Scenario,
    pub outcome: Outcome,
    pub results: Vec<ExpectationResult>,
}

/// Loads `path` (or the quick start), applies overrides, runs it and evaluates expectations.
/// `bgp_log` chooses the BGP lines kept in the event log: `podnet check` writes no log, so it
/// keeps none of the per-UPDATE and per-route lines (millions in a large cluster).
/// Problems are printed on stderr; the error is the exit code.
pub fn load_and_run(
    path: Option<&Path>,
    seed: Option<u64>,
    until: Option<&str>,
    warn: bool,
    bgp_log: LogOptions,
) -> Result<Ran, i32> {
    let loaded = match path {
        Some(path) => scenario::load(path),
        None => scenario::load_str("scenarios/quickstart.yaml", QUICKSTART),
    };
    let mut scenario = loaded.map_err(|diags| {
        eprint!("{diags}");
        exit::INVALID
    })?;
    if let Some(seed) = seed {
        scenario.seed = seed;
    }
    if let Some(until) = until {
        let d = scenario::duration::parse_duration(until).map_err(|e| {
            eprintln!("--until: {e}");
            exit::INVALID
        })?;
        scenario.until = Some(SimTime::ZERO + d);
    }
    if warn {
        for line in scenario.warning_lines() {
            eprintln!("{line}");
        }
    }
    run_loaded(scenario, path, bgp_log)
}

/// Runs a loaded scenario (refused with exit 2 when it cannot fit this machine) and
/// evaluates its expectations; `path` names it in messages.
pub fn run_loaded(
    scenario: Scenario,
    path: Option<&Path>,
    bgp_log: LogOptions,
) -> Result<Ran, i32> {
    refuse_if_too_large(&scenario, path)?;
    let progress = long_run_progress(&scenario);
    let outcome = Simulation::with_bgp_log(&scenario, bgp_log).run();
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    let results = expect::evaluate(&scenario.expectations, &outcome.snapshots, &outcome.last);
    Ok(Ran {
        scenario,
        outcome,
        results,
    })
}

/// Refuses (exit 2) a scenario whose simulation cannot fit this machine's memory, before it
/// starts, instead of being killed half way (`scenario::footprint`).
pub fn refuse_if_too_large(scenario: &Scenario, path: Option<&Path>) -> Result<(), i32> {
    let Some(available) = scenario::footprint::machine_memory() else {
        return Ok(());
    };
    let footprint = scenario::footprint::estimate(scenario);
    match scenario::footprint::refusal(&footprint, available) {
        None => Ok(()),
        Some(why) => {
            let file = path.map_or("scenarios/quickstart.yaml".to_string(), |p| {
                p.display().to_string()
            });
            eprintln!("{file}: {why}");
            Err(exit::INVALID)
        }
    }
}

/// SPEC §1: a simulated cluster of 1,000 nodes or more shows progress on stderr when it is a
/// terminal, and nothing extra when it is not. The spinner ticks on its own thread and
/// never touches the simulation.
fn long_run_progress(scenario: &Scenario) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if scenario.topology.nodes.len() < 1_000 || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_message(format!(
        "simulating {} ({} nodes, {} workloads)",
        scenario.name,
        scenario.topology.nodes.len(),
        scenario.workloads.len()
    ));
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(bar)
}

/// Loads a scenario (exiting with 2 on invalid input), runs it to `at` (or to its end) and
/// hands the world and a snapshot of that instant to `f`.
pub fn with_state_at(
    path: &Path,
    at: Option<&str>,
    f: impl FnOnce(&Scenario, &crate::sim::World, &crate::sim::Snapshot) -> i32,
) -> i32 {
    let scenario = match scenario::load(path) {
        Ok(s) => s,
        Err(diags) => {
            eprint!("{diags}");
            return exit::INVALID;
        }
    };
    if let Err(code) = refuse_if_too_large(&scenario, Some(path)) {
        return code;
    }
    let at = match at.map(scenario::duration::parse_duration).transpose() {
        Ok(at) => at.map(|d| SimTime::ZERO + d),
        Err(e) => {
            eprintln!("--at: {e}");
            return exit::INVALID;
        }
    };
    match at {
        Some(t) => {
            let mut sim = Simulation::new(&scenario);
            sim.run_until(t);
            let snapshot = sim.snapshot();
            f(&scenario, sim.world(), &snapshot)
        }
        None => {
            let outcome = Simulation::new(&scenario).run();
            f(&scenario, &outcome.world, &outcome.last)
        }
    }
}

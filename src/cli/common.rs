//! What several subcommands share: loading a scenario (or the built-in one), running it, and
//! evaluating its expectations, with errors printed once and mapped to exit codes.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::exit;
use crate::model::time::SimTime;
use crate::scenario::{self, Scenario};
use crate::sim::events::EventLog;
use crate::sim::expect::{self, ExpectationResult};
use crate::sim::progress::{Phase, Progress, ProgressView};
use crate::sim::{Outcome, Simulation};

/// The built-in quick-start scenario (the same file as `scenarios/quickstart.yaml`).
pub const QUICKSTART: &str = include_str!("../../scenarios/quickstart.yaml");

/// A scenario after its run.
pub struct Ran {
    pub scenario: Scenario,
    pub outcome: Outcome,
    pub results: Vec<ExpectationResult>,
    /// The progress line, while the caller writes its outputs (`None` off a terminal).
    pub progress: Option<ProgressLine>,
}

/// Loads `path` (or the quick start), applies overrides, runs it with the event log `events`
/// makes for it (kept, streamed or dropped: `podnet check` keeps none, `podnet run` streams
/// the `--events` level to `events.jsonl`) and evaluates expectations. A progress line is
/// shown on a terminal for a long run; it stays up, at [`Phase::Reports`], while the caller
/// holds [`Ran::progress`]. Problems are printed on stderr; the error is the exit code.
pub fn load_and_run(
    path: Option<&Path>,
    seed: Option<u64>,
    until: Option<&str>,
    warn: bool,
    events: impl FnOnce(&Scenario) -> Result<EventLog, i32>,
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
    run_loaded(scenario, path, events)
}

/// Runs a loaded scenario (refused with exit 2 when it cannot fit this machine) and
/// evaluates its expectations; `path` names it in messages.
pub fn run_loaded(
    scenario: Scenario,
    path: Option<&Path>,
    events: impl FnOnce(&Scenario) -> Result<EventLog, i32>,
) -> Result<Ran, i32> {
    refuse_if_too_large(&scenario, path)?;
    let log = events(&scenario)?;
    let progress = ProgressLine::start(&scenario);
    if let Some(p) = &progress {
        p.state.set_phase(Phase::Setup);
    }
    let mut sim = Simulation::with_event_log(&scenario, log);
    if let Some(p) = &progress {
        sim.set_progress(Arc::clone(&p.state));
    }
    let outcome = sim.run();
    let results = expect::evaluate(&scenario.expectations, &outcome.snapshots, &outcome.last);
    if let Some(p) = &progress {
        p.state.set_phase(Phase::Reports);
    }
    Ok(Ran {
        scenario,
        outcome,
        results,
        progress,
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

/// SPEC §1: a long run — a simulated cluster of 1,000 nodes or more — shows a progress line
/// on stderr when it is a terminal, and nothing extra when it is not: the phase, the
/// simulated time reached, the events processed and the time elapsed. It is redrawn on its
/// own thread from [`Progress`], which the simulation only writes; dropping it clears it.
pub struct ProgressLine {
    pub state: Arc<Progress>,
    bar: indicatif::ProgressBar,
    stop: Arc<AtomicBool>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl ProgressLine {
    fn start(scenario: &Scenario) -> Option<ProgressLine> {
        use std::io::IsTerminal;
        if scenario.topology.nodes.len() < 1_000 || !std::io::stderr().is_terminal() {
            return None;
        }
        let state = Arc::new(Progress::default());
        let bar = indicatif::ProgressBar::new_spinner();
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} [{elapsed}] {msg}") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        let stop = Arc::new(AtomicBool::new(false));
        let title = format!(
            "{} ({} nodes)",
            scenario.name,
            scenario.topology.nodes.len()
        );
        let ticker = {
            let (state, bar, stop) = (Arc::clone(&state), bar.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    bar.set_message(progress_message(&title, state.view()));
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
            })
        };
        Some(ProgressLine {
            state,
            bar,
            stop,
            ticker: Some(ticker),
        })
    }
}

impl Drop for ProgressLine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        self.bar.finish_and_clear();
    }
}

/// `rr-5000 (5000 nodes): BGP, simulated 1m02s, 1,234,567 events`.
fn progress_message(title: &str, v: ProgressView) -> String {
    format!(
        "{title}: {}, simulated {}, {} events",
        v.phase.as_str(),
        SimTime::from_nanos(v.sim_time_us.saturating_mul(1000)),
        crate::report::sections::count(v.events)
    )
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
            let mut sim = Simulation::with_event_log(&scenario, EventLog::discard());
            sim.run_until(t);
            let snapshot = sim.snapshot();
            f(&scenario, sim.world(), &snapshot)
        }
        None => {
            let outcome = Simulation::with_event_log(&scenario, EventLog::discard()).run();
            f(&scenario, &outcome.world, &outcome.last)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::progress::Phase;

    #[test]
    fn the_progress_message_names_phase_time_and_events() {
        let v = ProgressView {
            phase: Phase::Bgp,
            sim_time_us: 62_000_000,
            events: 1_234_567,
        };
        assert_eq!(
            progress_message("rr-5000 (5000 nodes)", v),
            format!(
                "rr-5000 (5000 nodes): BGP, simulated {}, 1,234,567 events",
                SimTime::from_nanos(62_000_000_000)
            )
        );
    }
}

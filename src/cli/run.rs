//! `podnet run`: simulate one scenario, print a summary, write the output folder.

use std::path::{Path, PathBuf};

use super::{Format, RunArgs, exit};
use crate::model::time::SimTime;
use crate::report::{Report, events_jsonl};
use crate::scenario::{self, Scenario};
use crate::sim::Simulation;

/// The built-in quick-start scenario (the same file as `scenarios/quickstart.yaml`).
pub const QUICKSTART: &str = include_str!("../../scenarios/quickstart.yaml");

pub fn run(args: &RunArgs) -> i32 {
    let loaded = match &args.scenario {
        Some(path) => scenario::load(path),
        None => scenario::load_str("scenarios/quickstart.yaml", QUICKSTART),
    };
    let mut scenario = match loaded {
        Ok(s) => s,
        Err(diags) => {
            eprint!("{diags}");
            return exit::INVALID;
        }
    };
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    if let Some(until) = &args.until {
        match scenario::duration::parse_duration(until) {
            Ok(d) => scenario.until = Some(SimTime::ZERO + d),
            Err(e) => {
                eprintln!("--until: {e}");
                return exit::INVALID;
            }
        }
    }
    if !args.quiet {
        for line in scenario.warning_lines() {
            eprintln!("{line}");
        }
    }
    let outcome = Simulation::new(&scenario).run();
    let report = Report::new(&scenario, &outcome);
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("output").join(&scenario.name));
    if let Err(e) = write_outputs(&out_dir, &scenario, &report, &outcome.log) {
        eprintln!("cannot write the output folder {}: {e}", out_dir.display());
        return exit::INVALID;
    }
    if !args.quiet {
        match args.format {
            Format::Text => {
                print!("{}", report.summary_text());
                println!("wrote {}", out_dir.display());
            }
            Format::Json => print!("{}", report.to_json()),
        }
    }
    exit::OK
}

/// Writes the files of the output folder, replacing only those.
fn write_outputs(
    dir: &Path,
    _scenario: &Scenario,
    report: &Report,
    log: &[crate::sim::LogEntry],
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("report.json"), report.to_json())?;
    std::fs::write(dir.join("events.jsonl"), events_jsonl(log))?;
    Ok(())
}

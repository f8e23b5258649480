//! `podnet run`: simulate one scenario, print a summary, write the output folder.

use std::path::{Path, PathBuf};

use super::common::load_and_run;
use super::{Format, RunArgs, exit};
use crate::bgp::LogOptions;
use crate::report::{Report, dot, events_jsonl, html, markdown, run_charts};
use crate::sim::Outcome;

pub fn run(args: &RunArgs) -> i32 {
    let ran = match load_and_run(
        args.scenario.as_deref(),
        args.seed,
        args.until.as_deref(),
        !args.quiet,
        LogOptions::default(),
    ) {
        Ok(ran) => ran,
        Err(code) => return code,
    };
    let report = Report::new(&ran.scenario, &ran.outcome, ran.results);
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("output").join(&ran.scenario.name));
    if let Err(e) = write_outputs(&out_dir, &report, &ran.outcome) {
        eprintln!("cannot write the output folder {}: {e}", out_dir.display());
        return exit::INVALID;
    }
    if !args.quiet {
        match args.format {
            Format::Text => {
                out!("{}", report.summary_text());
                outln!("wrote {}", out_dir.display());
            }
            Format::Json => out!("{}", report.to_json()),
        }
    }
    exit::OK
}

/// Writes the files of the output folder (SPEC §6), replacing only those.
fn write_outputs(dir: &Path, report: &Report, outcome: &Outcome) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("report.json"), report.to_json())?;
    std::fs::write(dir.join("events.jsonl"), events_jsonl(&outcome.log))?;
    let charts = run_charts(report, outcome);
    std::fs::write(
        dir.join("report.md"),
        markdown::render(report, &charts, Some(&report.unreachable)),
    )?;
    std::fs::write(
        dir.join("report.html"),
        html::render(report, &charts, Some(&report.unreachable)),
    )?;
    std::fs::write(
        dir.join("topology.dot"),
        dot::render(&outcome.world.topology, &report.session_edges()),
    )?;
    for chart in &charts {
        std::fs::write(dir.join(chart.file), &chart.svg)?;
    }
    Ok(())
}

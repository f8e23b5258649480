//! `podnet run`: simulate one scenario, print a summary, write the output folder.
//!
//! The event log is streamed into `events.jsonl` while the simulation runs (at the
//! `--events` level), so a run holds no more than `podnet check` does plus the reports.

use std::path::{Path, PathBuf};

use super::common::load_and_run;
use super::{Format, RunArgs, exit};
use crate::report::{Report, dot, html, markdown, run_charts};
use crate::sim::Outcome;
use crate::sim::events::EventLog;

pub fn run(args: &RunArgs) -> i32 {
    let mut out_dir = None;
    let ran = match load_and_run(
        args.scenario.as_deref(),
        args.seed,
        args.until.as_deref(),
        !args.quiet,
        |scenario| {
            let dir = args
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from("output").join(&scenario.name));
            let log = open_events(&dir).map_err(|e| {
                eprintln!("cannot write the output folder {}: {e}", dir.display());
                exit::INVALID
            })?;
            out_dir = Some(dir);
            Ok(EventLog::stream(args.events.level(), Box::new(log)))
        },
    ) {
        Ok(ran) => ran,
        Err(code) => return code,
    };
    let Some(out_dir) = out_dir else {
        return exit::INTERNAL;
    };
    if let Some(e) = &ran.outcome.events.error {
        eprintln!(
            "cannot write {}: {e}",
            out_dir.join("events.jsonl").display()
        );
        return exit::INVALID;
    }
    let report = Report::new(&ran.scenario, &ran.outcome, ran.results);
    if let Err(e) = write_outputs(&out_dir, &report, &ran.outcome) {
        eprintln!("cannot write the output folder {}: {e}", out_dir.display());
        return exit::INVALID;
    }
    drop(ran.progress);
    if !args.quiet {
        match args.format {
            Format::Text => {
                out!("{}", report.summary_text());
                outln!("wrote {}", out_dir.display());
            }
            Format::Json => out!("{}", report.to_json()),
        }
    }
    // The process ends here: freeing a large cluster's world and report piece by piece
    // would only delay the exit (as `podnet check` does).
    std::mem::forget(report);
    std::mem::forget(ran.outcome);
    exit::OK
}

/// Creates the output folder and an empty `events.jsonl` in it, before the run writes to it.
fn open_events(dir: &Path) -> std::io::Result<std::fs::File> {
    std::fs::create_dir_all(dir)?;
    std::fs::File::create(dir.join("events.jsonl"))
}

/// Writes the other files of the output folder (SPEC §6), replacing only those;
/// `report.json` on a second thread while the pages and charts are drawn.
fn write_outputs(dir: &Path, report: &Report, outcome: &Outcome) -> std::io::Result<()> {
    std::thread::scope(|scope| {
        let json =
            scope.spawn(|| report.write_json(std::fs::File::create(dir.join("report.json"))?));
        let pages = write_pages(dir, report, outcome);
        json.join()
            .unwrap_or_else(|_| Err(std::io::Error::other("report.json: the writer stopped")))?;
        pages
    })
}

/// `report.md`, `report.html`, `topology.dot` and the charts.
fn write_pages(dir: &Path, report: &Report, outcome: &Outcome) -> std::io::Result<()> {
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

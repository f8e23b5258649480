//! `podnet check`: run scenarios and judge their expectations, for people and for CI.

use super::common::load_and_run;
use super::{CheckArgs, Format, exit};
use crate::report::junit::{self, Suite};
use crate::sim::events::EventLog;
use crate::sim::expect::ExpectationResult;

pub fn check(args: &CheckArgs) -> i32 {
    let mut code = exit::OK;
    let mut invalid = 0usize;
    let mut runs: Vec<(String, String, Vec<ExpectationResult>)> = Vec::new();
    for (i, path) in args.scenarios.iter().enumerate() {
        match load_and_run(Some(path), None, None, args.format == Format::Text, |_| {
            Ok(EventLog::discard())
        }) {
            Ok(ran) => {
                if ran.results.iter().any(ExpectationResult::failed) && code == exit::OK {
                    code = exit::FAILED;
                }
                runs.push((
                    ran.scenario.name.clone(),
                    path.display().to_string(),
                    ran.results,
                ));
                if i + 1 == args.scenarios.len() {
                    // The process ends after the report: freeing a large cluster's world
                    // (tens of millions of routes) piece by piece would only delay the exit.
                    std::mem::forget(ran.outcome);
                }
            }
            // Invalid input wins over failed expectations.
            Err(c) => {
                invalid += 1;
                code = c;
            }
        }
    }
    let passed: usize = runs
        .iter()
        .map(|(_, _, r)| r.iter().filter(|x| x.passed).count())
        .sum();
    let failed: usize = runs
        .iter()
        .map(|(_, _, r)| r.iter().filter(|x| x.failed()).count())
        .sum();
    let not_applicable: usize = runs
        .iter()
        .map(|(_, _, r)| r.iter().filter(|x| x.not_applicable.is_some()).count())
        .sum();
    // Expectations whose `when:` does not apply are neither passed nor failed; the closing
    // line names them only when there are some.
    let closing = if not_applicable == 0 {
        format!("{passed} passed, {failed} failed")
    } else {
        format!("{passed} passed, {failed} failed, {not_applicable} not applicable")
    };
    // The JUnit file first: a closed stdout ends the process at the first line printed.
    if let Some(junit_path) = &args.junit {
        let suites: Vec<Suite> = runs
            .iter()
            .map(|(name, file, results)| Suite {
                name,
                file,
                results,
            })
            .collect();
        if let Err(e) = std::fs::write(junit_path, junit::render(&suites)) {
            eprintln!("cannot write {}: {e}", junit_path.display());
            code = exit::INVALID;
        }
    }
    match args.format {
        Format::Text => {
            for (name, file, results) in &runs {
                if args.scenarios.len() > 1 {
                    outln!("{name} ({file})");
                }
                for r in results {
                    match &r.not_applicable {
                        Some(why) => outln!("N/A  {}: {why}", r.name),
                        None if r.passed => outln!("PASS {}: {}", r.name, r.actual),
                        None => {
                            outln!("FAIL {}: expected {}, got {}", r.name, r.expected, r.actual)
                        }
                    }
                }
            }
            if invalid > 0 {
                outln!(
                    "{closing}, {invalid} scenario file{} invalid",
                    if invalid == 1 { "" } else { "s" }
                );
            } else {
                outln!("{closing}");
            }
        }
        Format::Json => {
            let value = serde_json::json!({
                "scenarios": runs.iter().map(|(name, file, results)| serde_json::json!({
                    "scenario": name, "file": file, "expectations": results,
                })).collect::<Vec<_>>(),
                "passed": passed,
                "failed": failed,
                "notApplicable": not_applicable,
                "invalidFiles": invalid,
            });
            outln!(
                "{}",
                serde_json::to_string_pretty(&value).unwrap_or_default()
            );
        }
    }
    code
}

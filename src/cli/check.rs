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
                if ran.results.iter().any(|r| !r.passed) && code == exit::OK {
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
    let total: usize = runs.iter().map(|(_, _, r)| r.len()).sum();
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
                    if r.passed {
                        outln!("PASS {}: {}", r.name, r.actual);
                    } else {
                        outln!("FAIL {}: expected {}, got {}", r.name, r.expected, r.actual);
                    }
                }
            }
            if invalid > 0 {
                outln!(
                    "{passed} passed, {} failed, {invalid} scenario file{} invalid",
                    total - passed,
                    if invalid == 1 { "" } else { "s" }
                );
            } else {
                outln!("{passed} passed, {} failed", total - passed);
            }
        }
        Format::Json => {
            let value = serde_json::json!({
                "scenarios": runs.iter().map(|(name, file, results)| serde_json::json!({
                    "scenario": name, "file": file, "expectations": results,
                })).collect::<Vec<_>>(),
                "passed": passed,
                "failed": total - passed,
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

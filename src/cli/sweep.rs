//! `podnet sweep`: run the cross product of field variants in parallel and compare them.
//!
//! Each `--set PATH=V1,V2,...` multiplies the variants; every variant is the scenario file
//! with those fields replaced (`scenario::load_with_overrides`), loaded, validated and
//! simulated on its own. Variants run in parallel with rayon, but rows come out in the order
//! of the cross product (the first `--set` varies slowest), so the output does not depend on
//! the number of threads. Each variant reserves the memory its simulation needs
//! (`sweep_memory`): one that cannot fit the machine is refused as `check` refuses it, and
//! parallel variants wait rather than add up past the machine's memory.
//! Each variant is judged by the expectations that apply to it: one with `when:` applies only
//! to the variants whose swept fields hold those values (`scenario::load_variant`); the
//! others are counted as not applicable, neither passed nor failed, and do not change the
//! exit code.

use std::io::IsTerminal;
use std::sync::Arc;

use rayon::prelude::*;
use serde::Serialize;

use super::sweep_memory::MemoryShare;
use super::{SweepArgs, SweepCommand, SweepFormat, SweepShow, exit, sweep_job, sweep_shard};
use crate::forwarding::DataplaneMemo;
use crate::model::workload::PodStatus;
use crate::scenario;
use crate::sim::events::EventLog;
use crate::sim::expect::{ExpectationResult, evaluate};
use crate::sim::snapshot::ReachabilityMemo;
use crate::sim::{Outcome, Simulation};

/// One variant's results.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// The values set, in `--set` order.
    pub variant: Vec<(String, String)>,
    pub pods: usize,
    pub pods_pending: usize,
    pub allocation_failures: usize,
    pub blocks: usize,
    pub borrowed_ips: usize,
    pub max_rib_routes: Option<usize>,
    pub max_fib_routes: Option<usize>,
    pub bgp_updates: Option<u64>,
    /// In microseconds for programs (as report.json's `convergenceTimeUs`, SPEC §6.1).
    pub convergence_time_us: Option<u64>,
    /// The same time as it is written (`1.5s`, `250ms`), for people reading the JSON.
    #[serde(default)]
    pub convergence: Option<String>,
    pub reachable_pairs: u64,
    pub pod_pairs: u64,
    pub expectations_passed: usize,
    pub expectations_failed: usize,
    /// Expectations whose `when:` does not match this variant: neither passed nor failed.
    #[serde(default)]
    pub expectations_not_applicable: usize,
    pub expectations: Vec<ExpectationResult>,
}

pub fn sweep(args: &SweepArgs) -> i32 {
    if let Some(SweepCommand::Merge(merge)) = &args.command {
        return sweep_shard::merge(merge);
    }
    let (Some(scenario), false) = (&args.scenario, args.set.is_empty()) else {
        eprintln!("podnet sweep needs SCENARIO and at least one --set PATH=V1,V2,...");
        return exit::INVALID;
    };
    let axes = match parse_sets(&args.set) {
        Ok(axes) => axes,
        Err(message) => {
            eprintln!("--set: {message}");
            return exit::INVALID;
        }
    };
    let variants = cross_product(&axes);
    let common = common_overrides(&args.expect);
    if args.emit_job {
        // The Job's pods would all stop at a bad `when:` or value: said here, once.
        if let Err(diagnostics) = scenario::load_variant(scenario, &variants[0], &common) {
            eprint!("{diagnostics}");
            return exit::INVALID;
        }
        return sweep_job::emit(args, scenario, variants.len());
    }
    let shard = match args.shard.as_deref().map(sweep_shard::parse).transpose() {
        Ok(shard) => shard,
        Err(message) => {
            eprintln!("--shard: {message}");
            return exit::INVALID;
        }
    };
    let indices: Vec<usize> = match shard {
        Some(s) => sweep_shard::assign(scenario, &variants, s.count).swap_remove(s.index),
        None => (0..variants.len()).collect(),
    };
    let rows = match run_rows(scenario, &variants, &indices, &common, args.jobs) {
        Ok(rows) => rows,
        Err(code) => return code,
    };
    match shard {
        Some(s) => sweep_shard::write(args, scenario, s, variants.len(), indices, rows),
        None => report(&rows, &args.show, scenario),
    }
}

/// `--chart`, else `output/<file stem>/sweep.svg` beside `podnet run`'s output folders;
/// `None` with `--no-chart`.
fn chart_path(show: &SweepShow, scenario: &std::path::Path) -> Option<std::path::PathBuf> {
    if show.no_chart {
        return None;
    }
    Some(show.chart.clone().unwrap_or_else(|| {
        let stem = scenario
            .file_stem()
            .map_or_else(|| "sweep".into(), |s| s.to_string_lossy().into_owned());
        std::path::Path::new("output").join(stem).join("sweep.svg")
    }))
}

/// Runs the variants at `indices` (in that order) in parallel; invalid variants are printed
/// on stderr and make it exit 2.
fn run_rows(
    scenario: &std::path::Path,
    variants: &[Vec<(String, String)>],
    indices: &[usize],
    common: &[(String, String)],
    jobs: Option<usize>,
) -> Result<Vec<Row>, i32> {
    let variants: Vec<&Vec<(String, String)>> = indices.iter().map(|i| &variants[*i]).collect();
    let progress = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(variants.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} variants {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let memory = MemoryShare::of_machine();
    let shared = Shared::default();
    let run_one = |variant: &&Vec<(String, String)>| {
        let result = run_variant(scenario, variant, common, &memory, &shared);
        if let Some(bar) = &progress {
            bar.inc(1);
        }
        result
    };
    let jobs = jobs.unwrap_or(0);
    let results: Vec<Result<Row, String>> =
        match rayon::ThreadPoolBuilder::new().num_threads(jobs).build() {
            Ok(pool) => pool.install(|| variants.par_iter().map(run_one).collect()),
            Err(_) => variants.iter().map(run_one).collect(),
        };
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    let mut rows = Vec::new();
    let mut invalid: Vec<(String, String)> = Vec::new();
    for (variant, result) in variants.iter().zip(results) {
        match result {
            Ok(row) => rows.push(row),
            Err(diagnostics) => invalid.push((label(variant), diagnostics)),
        }
    }
    if invalid.is_empty() {
        return Ok(rows);
    }
    // A problem of the scenario itself (a bad `when:`) is the same in every variant: once.
    if invalid.len() == variants.len() && invalid.iter().all(|(_, d)| *d == invalid[0].1) {
        eprintln!("every variant:");
        eprint!("{}", invalid[0].1);
    } else {
        for (variant, diagnostics) in &invalid {
            eprintln!("variant {variant}:");
            eprint!("{diagnostics}");
        }
    }
    Err(exit::INVALID)
}

/// Prints the rows as `show` asks and writes the chart of the sweep of `scenario`; the exit
/// code of the sweep (SPEC §1).
pub(super) fn report(rows: &[Row], show: &SweepShow, scenario: &std::path::Path) -> i32 {
    // The chart first: a closed stdout ends the process at the first line printed.
    if let Some(path) = chart_path(show, scenario) {
        let written = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, chart(rows)));
        if let Err(e) = written {
            eprintln!("cannot write {}: {e}", path.display());
            return exit::INVALID;
        }
    }
    match show.format {
        SweepFormat::Table if show.verbose => out!("{}", table(rows)),
        SweepFormat::Table => out!("{}", compact_table(rows)),
        SweepFormat::Csv => out!("{}", csv(rows)),
        SweepFormat::Json => outln!("{}", serde_json::to_string_pretty(rows).unwrap_or_default()),
    }
    if rows.iter().any(|r| r.expectations_failed > 0) {
        exit::FAILED
    } else {
        exit::OK
    }
}

/// `PATH=V1,V2,...` into (path, values); commas inside brackets, braces or quotes belong to
/// the value (`network.bgp.bfd={interval: 100ms, multiplier: 3},false`).
fn parse_sets(sets: &[String]) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut axes = Vec::new();
    for set in sets {
        let (path, values) = set
            .split_once('=')
            .ok_or_else(|| format!("`{set}` is not PATH=V1,V2,..."))?;
        let values = split_values(values);
        if path.is_empty() || values.is_empty() || values.iter().any(String::is_empty) {
            return Err(format!("`{set}` is not PATH=V1,V2,..."));
        }
        axes.push((path.to_string(), values));
    }
    Ok(axes)
}

fn split_values(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut current = String::new();
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    out.push(current.trim().to_string());
    out
}

/// Every combination, the first axis varying slowest.
pub(super) fn cross_product(axes: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
    let mut variants: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (path, values) in axes {
        variants = variants
            .into_iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut next = prefix.clone();
                    next.push((path.clone(), v.clone()));
                    next
                })
            })
            .collect();
    }
    variants
}

/// `--expect` items as one override of the scenario's `expect:` list, for every variant.
pub(super) fn common_overrides(expect: &[String]) -> Vec<(String, String)> {
    if expect.is_empty() {
        return Vec::new();
    }
    vec![("expect".to_string(), format!("[{}]", expect.join(", ")))]
}

/// What the variants of one sweep share: variants that differ in `seed` alone usually end in
/// one forwarding state with the pods in other places, so a later one is given an earlier
/// one's routing (the FIBs) and all-pairs result rather than computing its own.
#[derive(Default)]
struct Shared {
    dataplanes: Arc<DataplaneMemo>,
    reach: ReachabilityMemo,
}

fn run_variant(
    path: &std::path::Path,
    variant: &[(String, String)],
    common: &[(String, String)],
    memory: &MemoryShare,
    shared: &Shared,
) -> Result<Row, String> {
    let s = scenario::load_variant(path, variant, common).map_err(|d| d.to_string())?;
    let _reservation = memory
        .reserve(&scenario::footprint::estimate(&s))
        .map_err(|why| format!("{}: {why}\n", path.display()))?;
    // Only the snapshots are judged and counted: the simulated world (pods, IPAM, every
    // speaker's RIBs) is freed here, before the all-pairs reachability the expectations
    // and the row ask for, so that it runs in the world's memory rather than beside it
    // (the sweep's peak, ten variants of rr-1000 two at a time: 193 → 166–179 MiB).
    let mut simulation = Simulation::with_event_log(&s, EventLog::discard());
    simulation.share_dataplanes(Arc::clone(&shared.dataplanes));
    let Outcome {
        snapshots, last, ..
    } = simulation.run();
    let reach = &shared.reach;
    reach.give(&last);
    let results = evaluate(&s.expectations, &snapshots, &last);
    let passed = results.iter().filter(|r| r.passed).count();
    let failed = results.iter().filter(|r| r.failed()).count();
    let pairs = last.reachability();
    reach.keep(&last);
    Ok(Row {
        max_rib_routes: last.nodes.iter().filter_map(|n| n.rib_routes).max(),
        max_fib_routes: last.nodes.iter().map(|n| n.fib_routes).max(),
        bgp_updates: last.bgp.as_ref().map(|b| b.updates),
        convergence_time_us: last.bgp.as_ref().map(|b| b.converged_within_us),
        convergence: last
            .bgp
            .as_ref()
            .map(|b| crate::report::sections::time(b.converged_within_us)),
        reachable_pairs: pairs.reachable,
        pod_pairs: pairs.pairs,
        variant: variant.to_vec(),
        pods: last.pods.len(),
        pods_pending: last.count(PodStatus::Pending),
        allocation_failures: last.allocation_failures(),
        blocks: last.blocks.len(),
        borrowed_ips: last.nodes.iter().map(|n| n.borrowed_ips).sum(),
        expectations_passed: passed,
        expectations_failed: failed,
        expectations_not_applicable: results.len() - passed - failed,
        expectations: results,
    })
}

fn label(variant: &[(String, String)]) -> String {
    variant
        .iter()
        .map(|(p, v)| format!("{p}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

const COLUMNS: [&str; 14] = [
    "pods",
    "pending",
    "allocFailures",
    "blocks",
    "borrowed",
    "maxRib",
    "maxFib",
    "bgpUpdates",
    "convergence",
    "reachablePairs",
    "podPairs",
    "passed",
    "failed",
    "notApplicable",
];

fn cells(r: &Row) -> [String; 14] {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".to_string());
    [
        r.pods.to_string(),
        r.pods_pending.to_string(),
        r.allocation_failures.to_string(),
        r.blocks.to_string(),
        r.borrowed_ips.to_string(),
        opt(r.max_rib_routes.map(|v| v.to_string())),
        opt(r.max_fib_routes.map(|v| v.to_string())),
        opt(r.bgp_updates.map(|v| v.to_string())),
        opt(r.convergence.clone()),
        r.reachable_pairs.to_string(),
        r.pod_pairs.to_string(),
        r.expectations_passed.to_string(),
        r.expectations_failed.to_string(),
        r.expectations_not_applicable.to_string(),
    ]
}

/// The full table (`--verbose`): every metric, then every failed expectation (those that do
/// not apply to a variant are counted in `notApplicable`, not listed).
fn table(rows: &[Row]) -> String {
    let mut out = grid_text(rows, &COLUMNS, |r| cells(r).to_vec());
    for r in rows.iter().filter(|r| r.expectations_failed > 0) {
        for e in r.expectations.iter().filter(|e| e.failed()) {
            out.push_str(&format!(
                "FAIL [{}] {}: expected {}, got {}\n",
                label(&r.variant),
                e.name,
                e.expected,
                e.actual
            ));
        }
    }
    out
}

const COMPACT_COLUMNS: [&str; 7] = [
    "pending",
    "allocFailures",
    "maxRib",
    "maxFib",
    "converged",
    "delivered",
    "expectations",
];

/// The default table: the varied fields and the metrics a layout is judged by, durations as
/// they are written, and the expectations as a count; a variant failing its expectations is a
/// finding, listed by `--verbose`.
fn compact_table(rows: &[Row]) -> String {
    use crate::report::sections::{count, percent, time};
    let opt = |v: Option<usize>| v.map_or_else(|| "-".to_string(), count);
    let mut out = grid_text(rows, &COMPACT_COLUMNS, |r| {
        vec![
            count(r.pods_pending),
            count(r.allocation_failures),
            opt(r.max_rib_routes),
            opt(r.max_fib_routes),
            r.convergence_time_us.map_or_else(|| "-".to_string(), time),
            percent(u128::from(r.reachable_pairs), u128::from(r.pod_pairs)),
            expectations_cell(r),
        ]
    });
    let failing = rows.iter().filter(|r| r.expectations_failed > 0).count();
    if failing > 0 {
        out.push_str(&format!(
            "{failing} of {} variants fail some expectations (--verbose lists them)\n",
            rows.len()
        ));
    }
    out
}

/// `2 of 3` (of those that apply), with `, 1 n/a` when some do not apply to the variant.
fn expectations_cell(r: &Row) -> String {
    let applicable = r.expectations_passed + r.expectations_failed;
    match r.expectations_not_applicable {
        0 => format!("{} of {applicable}", r.expectations_passed),
        n => format!("{} of {applicable}, {n} n/a", r.expectations_passed),
    }
}

/// Rows under a header of the varied fields and `columns`, aligned, with a rule.
fn grid_text(rows: &[Row], columns: &[&str], cells: impl Fn(&Row) -> Vec<String>) -> String {
    let paths: Vec<String> = rows
        .first()
        .map(|r| r.variant.iter().map(|(p, _)| p.clone()).collect())
        .unwrap_or_default();
    let mut grid: Vec<Vec<String>> = vec![
        paths
            .iter()
            .cloned()
            .chain(columns.iter().map(|c| c.to_string()))
            .collect(),
    ];
    for r in rows {
        grid.push(
            r.variant
                .iter()
                .map(|(_, v)| v.clone())
                .chain(cells(r))
                .collect(),
        );
    }
    let widths: Vec<usize> = (0..grid[0].len())
        .map(|c| {
            grid.iter()
                .map(|row| row[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, row) in grid.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            out.push_str(&rule.join("  "));
            out.push('\n');
        }
    }
    out
}

/// The trade-off chart of the rows (`report::charts::sweep_tradeoff`).
fn chart(rows: &[Row]) -> String {
    use crate::report::charts::{SweepPoint, sweep_tradeoff};
    let points: Vec<SweepPoint> = rows
        .iter()
        .map(|r| SweepPoint {
            label: r
                .variant
                .iter()
                .map(|(p, v)| format!("{}={v}", p.rsplit('.').next().unwrap_or(p)))
                .collect::<Vec<_>>()
                .join(" "),
            routes: r.max_fib_routes.unwrap_or(0) as u64,
            pending: r.pods_pending as u64,
            passed: r.expectations_failed == 0,
        })
        .collect();
    sweep_tradeoff(&points)
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn csv(rows: &[Row]) -> String {
    let paths: Vec<String> = rows
        .first()
        .map(|r| r.variant.iter().map(|(p, _)| p.clone()).collect())
        .unwrap_or_default();
    let mut out: Vec<String> = vec![
        paths
            .iter()
            .map(|p| csv_field(p))
            .chain(COLUMNS.iter().map(|c| c.to_string()))
            .collect::<Vec<_>>()
            .join(","),
    ];
    for r in rows {
        out.push(
            r.variant
                .iter()
                .map(|(_, v)| csv_field(v))
                .chain(cells(r))
                .collect::<Vec<_>>()
                .join(","),
        );
    }
    out.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_split_on_top_level_commas_only() {
        assert_eq!(split_values("26,28"), ["26", "28"]);
        assert_eq!(
            split_values("{interval: 1s, multiplier: 3}, false"),
            ["{interval: 1s, multiplier: 3}", "false"]
        );
        assert_eq!(split_values("'a,b',c"), ["'a,b'", "c"]);
    }

    #[test]
    fn the_first_axis_varies_slowest() {
        let axes = vec![
            ("a".to_string(), vec!["1".to_string(), "2".to_string()]),
            ("b".to_string(), vec!["x".to_string(), "y".to_string()]),
        ];
        let labels: Vec<String> = cross_product(&axes).iter().map(|v| label(v)).collect();
        assert_eq!(labels, ["a=1 b=x", "a=1 b=y", "a=2 b=x", "a=2 b=y"]);
    }

    /// Variants of the quick start that differ in `seed` alone end in one forwarding state
    /// with the web pods in other places; the later ones are given the first one's routing
    /// and all-pairs result, and every row is what the variant run on its own gives.
    #[test]
    fn seed_variants_share_the_all_pairs_result_and_report_what_they_would_alone() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.yaml");
        let memory = MemoryShare::of_machine();
        let shared = Shared::default();
        let seeds = ["1", "2", "3"];
        for seed in seeds {
            let variant = [("seed".to_string(), seed.to_string())];
            let row = run_variant(&path, &variant, &[], &memory, &shared).expect("valid");
            let alone =
                run_variant(&path, &variant, &[], &memory, &Shared::default()).expect("valid");
            assert_eq!(
                serde_json::to_string(&row).ok(),
                serde_json::to_string(&alone).ok(),
                "seed {seed}"
            );
        }
        assert_eq!(shared.reach.given(), seeds.len() - 1);
        // Each run snapshots two instants, at 1m (a2-w-1 down, the expectation `at: 1m`)
        // and at its end: each later variant is given both routings.
        assert_eq!(shared.dataplanes.given(), 2 * (seeds.len() - 1));
    }
}

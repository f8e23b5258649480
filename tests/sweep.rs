//! `podnet sweep`: rows in cross-product order whatever the thread count, located errors for
//! bad paths and values, exit codes.

use std::process::Command;

fn sweep(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_podnet"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("sweep")
        .args(args)
        .output()
        .expect("run podnet");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn rows_follow_the_cross_product_and_do_not_depend_on_threads() {
    let args = [
        "scenarios/block-limit.yaml",
        "--set",
        "resources[0].spec.blockSize=27,28",
        "--set",
        "resources[1].spec.maxBlocksPerHost=2,3",
        "--format",
        "csv",
    ];
    let (code, one, _) = sweep(&[&args[..], &["--jobs", "1"]].concat());
    let (code2, two, _) = sweep(&[&args[..], &["--jobs", "2"]].concat());
    assert_eq!(one, two);
    // Some variants break the scenario's expectations, so the sweep says so.
    assert_eq!((code, code2), (1, 1));
    let lines: Vec<&str> = one.lines().collect();
    assert_eq!(
        lines[0],
        "resources[0].spec.blockSize,resources[1].spec.maxBlocksPerHost,pods,pending,allocFailures,blocks,borrowed,maxRib,maxFib,bgpUpdates,convergence,reachablePairs,podPairs,passed,failed"
    );
    let variants: Vec<String> = lines[1..]
        .iter()
        .map(|l| l.split(',').take(2).collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(variants, ["27,2", "27,3", "28,2", "28,3"]);
    // The scenario as written (blockSize 28, limit 2) holds all its expectations.
    let cells: Vec<&str> = lines[3].split(',').collect();
    assert_eq!(&cells[2..7], ["40", "8", "8", "2", "0"], "{}", lines[3]);
    assert_eq!(&cells[cells.len() - 2..], ["4", "0"], "{}", lines[3]);
    // The convergence time is printed as durations are written (a number and a unit, SPEC
    // §1), never as bare microseconds.
    let convergence = cells[cells.len() - 5];
    let digits = convergence.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    assert!(
        ["s", "ms", "us", "ns"]
            .iter()
            .any(|u| convergence.ends_with(u))
            && !digits.is_empty()
            && digits
                .chars()
                .all(|c| c.is_ascii_digit() || "hm.".contains(c)),
        "{}",
        lines[3]
    );
}

#[test]
fn a_bad_path_or_value_is_a_located_error() {
    let (code, _, err) = sweep(&[
        "scenarios/block-limit.yaml",
        "--set",
        "resources[9].spec.blockSize=27",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains(
            "--set:1:1: resources[9].spec.blockSize: `resources` has 2 items; there is no [9]"
        ),
        "{err}"
    );
    let (code, _, err) = sweep(&[
        "scenarios/block-limit.yaml",
        "--set",
        "resources[0].spec.blockSize=33",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--set:1:1: resources[0].spec.blockSize: 33 is outside 20..32 for IPv4"),
        "{err}"
    );
    let (code, _, err) = sweep(&["scenarios/block-limit.yaml", "--set", "nonsense"]);
    assert_eq!(code, 2);
    assert!(err.contains("is not PATH=V1,V2"), "{err}");
}

#[test]
fn json_rows_carry_the_variant_and_the_verdicts() {
    let (code, out, _) = sweep(&[
        "scenarios/block-limit.yaml",
        "--set",
        "workloads[0].replicas=32",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1);
    let rows: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(rows.as_array().map(Vec::len), Some(1));
    assert_eq!(rows[0]["variant"][0][1], "32");
    assert_eq!(rows[0]["podsPending"], 0);
    // Programs read microseconds (as report.json's `convergenceTimeUs`); people read the
    // same time as it is written.
    let us = rows[0]["convergenceTimeUs"].as_u64().expect("a number");
    assert_eq!(
        rows[0]["convergence"],
        podnet::model::time::SimDuration::from_micros(us).to_string()
    );
    assert!(
        rows[0]["expectations"]
            .as_array()
            .is_some_and(|e| !e.is_empty())
    );
}

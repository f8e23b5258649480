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
        "resources[0].spec.blockSize,resources[1].spec.maxBlocksPerHost,pods,pending,allocFailures,blocks,borrowed,maxRib,maxFib,bgpUpdates,convergence,reachablePairs,podPairs,passed,failed,notApplicable"
    );
    let variants: Vec<String> = lines[1..]
        .iter()
        .map(|l| l.split(',').take(2).collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(variants, ["27,2", "27,3", "28,2", "28,3"]);
    // The scenario as written (blockSize 28, limit 2) holds all its expectations.
    let cells: Vec<&str> = lines[3].split(',').collect();
    assert_eq!(&cells[2..7], ["40", "8", "8", "2", "0"], "{}", lines[3]);
    assert_eq!(&cells[cells.len() - 3..], ["4", "0", "0"], "{}", lines[3]);
    // The convergence time is printed as durations are written (a number and a unit, SPEC
    // §1), never as bare microseconds.
    let convergence = cells[cells.len() - 6];
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

const PER_VARIANT: &str = "tests/fixtures/sweep/per-variant.yaml";

/// tests/fixtures/sweep/per-variant.yaml, swept over /27 and /28 (derivations in the file).
/// Its four expectations: (1) busy holds 2 blocks, always; (2) 8 Pending, when /28; (3) 0
/// Pending, when /27; (4) 1 block in the pool, when /27 (wrong on purpose: 2 blocks).
/// /27: (1) holds, (3) holds, (4) fails, (2) does not apply (it would fail: 0 Pending, not 8).
/// /28: (1) and (2) hold, (3) and (4) do not apply (both would fail: 8 Pending, 2 blocks).
/// So /27 fails one expectation that only it is judged by, /28 fails none, and the sweep
/// exits 1 because of /27 alone.
#[test]
fn each_variant_is_judged_by_the_expectations_that_apply_to_it() {
    let set = ["--set", "resources[0].spec.blockSize=27,28", "--no-chart"];
    let (code, out, err) = sweep(&[&[PER_VARIANT][..], &set, &["--format", "json"]].concat());
    assert_eq!(code, 1, "{err}");
    let rows: serde_json::Value = serde_json::from_str(&out).expect("json");
    let counts = |i: usize| {
        let r = &rows[i];
        (
            r["expectationsPassed"].as_u64(),
            r["expectationsFailed"].as_u64(),
            r["expectationsNotApplicable"].as_u64(),
        )
    };
    assert_eq!(counts(0), (Some(2), Some(1), Some(1)), "/27");
    assert_eq!(counts(1), (Some(2), Some(0), Some(2)), "/28");
    let verdicts = |i: usize| -> Vec<(String, bool, bool)> {
        rows[i]["expectations"]
            .as_array()
            .expect("list")
            .iter()
            .map(|e| {
                (
                    e["name"].as_str().unwrap_or("").to_string(),
                    e["passed"].as_bool().unwrap_or(false),
                    e.get("notApplicable").is_some(),
                )
            })
            .collect()
    };
    // Default names carry the condition, so two expectations alike but for `when:` differ.
    let names = [
        "node busy",
        "pods workload batch when resources[0].spec.blockSize=28",
        "pods workload batch when resources[0].spec.blockSize=27",
        "one block is enough at /27",
    ];
    let expected27 = [(true, false), (false, true), (true, false), (false, false)];
    let expected28 = [(true, false), (true, false), (false, true), (false, true)];
    for (i, expected) in [expected27, expected28].iter().enumerate() {
        let got = verdicts(i);
        let want: Vec<(String, bool, bool)> = names
            .iter()
            .zip(expected)
            .map(|(n, (p, na))| (n.to_string(), *p, *na))
            .collect();
        assert_eq!(got, want, "variant {i}");
    }
    assert_eq!(
        rows[1]["expectations"][2]["notApplicable"],
        "when resources[0].spec.blockSize=27; here resources[0].spec.blockSize=28"
    );
    // The table counts what applies and names the rest; --verbose lists only the failure.
    let (_, table, _) = sweep(&[&[PER_VARIANT][..], &set].concat());
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[2].ends_with("2 of 3, 1 n/a"), "{table}");
    assert!(lines[3].ends_with("2 of 2, 2 n/a"), "{table}");
    assert!(
        table.contains("1 of 2 variants fail some expectations"),
        "{table}"
    );
    let (_, verbose, _) = sweep(&[&[PER_VARIANT][..], &set, &["--verbose"]].concat());
    let fails: Vec<&str> = verbose.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(
        fails,
        [
            "FAIL [resources[0].spec.blockSize=27] one block is enough at /27: expected blocks 1, got blocks 2"
        ]
    );
    // CSV: passed, failed, notApplicable close each row.
    let (_, csv, _) = sweep(&[&[PER_VARIANT][..], &set, &["--format", "csv"]].concat());
    let csv: Vec<&str> = csv.lines().collect();
    assert!(
        csv[0].ends_with(",passed,failed,notApplicable"),
        "{}",
        csv[0]
    );
    assert!(
        csv[1].starts_with("27,") && csv[1].ends_with(",2,1,1"),
        "{}",
        csv[1]
    );
    assert!(
        csv[2].starts_with("28,") && csv[2].ends_with(",2,0,2"),
        "{}",
        csv[2]
    );
    // /28 alone: the expectations written for /27 do not apply, so nothing fails.
    let (code, _, err) = sweep(&[
        PER_VARIANT,
        "--set",
        "resources[0].spec.blockSize=28",
        "--no-chart",
    ]);
    assert_eq!(code, 0, "{err}");
}

/// `podnet check` judges the file as written (/28): (1) and (2) hold, (3) and (4) do not
/// apply; JUnit shows them as skipped, not failed.
#[test]
fn check_judges_the_scenario_as_written_and_junit_skips_the_rest() {
    let junit = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("per-variant.xml");
    let out = Command::new(env!("CARGO_BIN_EXE_podnet"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["check", PER_VARIANT, "--junit"])
        .arg(&junit)
        .output()
        .expect("run podnet");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains(
            "N/A  one block is enough at /27: when resources[0].spec.blockSize=27; here resources[0].spec.blockSize=28"
        ),
        "{text}"
    );
    assert_eq!(
        text.lines().last(),
        Some("2 passed, 0 failed, 2 not applicable")
    );
    let xml = std::fs::read_to_string(&junit).expect("junit");
    assert!(
        xml.contains("tests=\"4\" failures=\"0\" skipped=\"2\""),
        "{xml}"
    );
    assert!(xml.contains("<skipped message=\"not applicable: when resources[0].spec.blockSize=27; here resources[0].spec.blockSize=28\"/>"), "{xml}");
}

/// A scenario in a temporary file with `expect:` replaced by `expect`.
fn with_expect(name: &str, expect: &str) -> std::path::PathBuf {
    let text =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(PER_VARIANT))
            .expect("fixture");
    let head = &text[..text.find("expect:\n").expect("expect list")];
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, format!("{head}expect:\n{expect}")).expect("write");
    path
}

#[test]
fn a_bad_when_is_a_located_error() {
    let head_lines = {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(PER_VARIANT),
        )
        .expect("fixture");
        text[..text.find("expect:\n").expect("expect list")]
            .lines()
            .count()
    };
    // The first expectation is on the line after `expect:`.
    let line = head_lines + 2;
    let cases = [
        // A field that is not swept has one value in every variant.
        (
            "- pods: {of: all, pending: 0}\n  when:\n    resources[0].spec.blockSie: 27\n",
            format!(
                ":{}:5: expect[0].when.resources[0].spec.blockSie: `resources[0].spec.blockSie` is not swept (no --set resources[0].spec.blockSie=...), so it has one value in every variant; did you mean `resources[0].spec.blockSize`?",
                line + 2
            ),
        ),
        (
            "- pods: {of: all, pending: 0}\n  when: 27\n",
            format!(
                ":{}:9: expect[0].when: expected a mapping of field paths to values ({{network.blockSize: 26}}), found an integer",
                line + 1
            ),
        ),
        (
            "- pods: {of: all, pending: 0}\n  when: {a..b: 1}\n",
            format!(
                ":{}:10: expect[0].when.a..b: `a..b` is not a field path",
                line + 1
            ),
        ),
    ];
    for (i, (expect, message)) in cases.iter().enumerate() {
        let path = with_expect(&format!("bad-when-{i}.yaml"), expect);
        let (code, _, err) = sweep(&[
            path.to_str().expect("utf-8"),
            "--set",
            "resources[0].spec.blockSize=27,28",
            "--no-chart",
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(message.as_str()), "{message}\n{err}");
        // Once, not once per variant.
        assert_eq!(err.matches(message.as_str()).count(), 1, "{err}");
        // --emit-job says so too, before any pod would.
        let (code, _, err) = sweep(&[
            path.to_str().expect("utf-8"),
            "--set",
            "resources[0].spec.blockSize=27,28",
            "--emit-job",
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(message.as_str()), "{message}\n{err}");
    }
}

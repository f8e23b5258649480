//! The command line (SPEC §1): help, exit codes, what each subcommand prints and writes.
//!
//! Every test runs the built binary through [`podnet`], which also asserts that no output
//! ever shows a panic or a backtrace, whatever the input.

mod common;

use std::path::Path;
use std::process::Command;

use common::{Output, temp_dir, write};

/// Runs `podnet ARGS` in the crate's root (so `scenarios/quickstart.yaml` resolves).
fn podnet(args: &[&str]) -> Output {
    common::run(args)
}

const QUICKSTART: &str = "scenarios/quickstart.yaml";

/// The quick start with its first expectation made impossible (25 of 24 pods running).
fn failing_scenario(dir: &Path) -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(QUICKSTART))
        .expect("read quickstart");
    let bad = text.replace("running: 24, pending: 0", "running: 25, pending: 0");
    assert_ne!(bad, text, "the quick start's first expectation changed");
    write(dir, "failing.yaml", &bad)
}

const INVALID: &str = "name: bad\nfoo: 1\n";

#[test]
fn help_exits_0_and_shows_an_example() {
    let cases: &[&[&str]] = &[
        &["--help"],
        &["run", "--help"],
        &["check", "--help"],
        &["validate", "--help"],
        &["schema", "--help"],
    ];
    for args in cases {
        let out = podnet(args);
        assert_eq!(out.code, 0, "podnet {args:?}: {}", out.stderr);
        assert!(
            out.stdout.contains("Example") && out.stdout.contains("podnet "),
            "podnet {args:?} shows no example:\n{}",
            out.stdout
        );
    }
}

#[test]
fn an_unknown_subcommand_or_flag_exits_2() {
    assert_eq!(podnet(&["frobnicate"]).code, 2);
    assert_eq!(podnet(&["run", "--frobnicate"]).code, 2);
    assert_eq!(podnet(&[]).code, 2);
}

#[test]
fn run_without_a_scenario_runs_the_built_in_one() {
    let dir = temp_dir("cli");
    let out_dir = dir.join("out");
    let out = podnet(&["run", "--out", out_dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out_dir.join("events.jsonl").is_file());
    let report = std::fs::read_to_string(out_dir.join("report.json")).expect("report.json");
    let json: serde_json::Value = serde_json::from_str(&report).expect("report.json is JSON");
    for key in [
        "podnet",
        "scenario",
        "seed",
        "endTimeUs",
        "summary",
        "pools",
        "nodes",
        "pods",
        "expectations",
        "warnings",
    ] {
        assert!(json.get(key).is_some(), "report.json lacks `{key}`");
    }
    assert_eq!(json["scenario"], "quickstart");
    assert_eq!(json["seed"], 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_json_prints_the_report() {
    let dir = temp_dir("cli");
    let out_dir = dir.join("out");
    let out = podnet(&[
        "run",
        QUICKSTART,
        "--format",
        "json",
        "--seed",
        "3",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: serde_json::Value = serde_json::from_str(&out.stdout).expect("stdout is JSON");
    assert_eq!(json["seed"], 3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_until_without_a_unit_exits_2() {
    let dir = temp_dir("cli");
    let out = podnet(&["run", "--until", "10", "--out", dir.to_str().unwrap()]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("--until") && out.stderr.contains("unit"),
        "{}",
        out.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_of_an_invalid_or_missing_file_exits_2() {
    let dir = temp_dir("cli");
    let bad = write(&dir, "bad.yaml", INVALID);
    let out = podnet(&["run", &bad, "--out", dir.join("o").to_str().unwrap()]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains(&format!("{bad}:2:1: foo: unknown field `foo`")),
        "{}",
        out.stderr
    );
    let out = podnet(&["run", "no-such-file.yaml"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no-such-file.yaml"), "{}", out.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn validate_a_valid_file_exits_0() {
    let out = podnet(&["validate", QUICKSTART]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("valid"), "{}", out.stdout);
}

#[test]
fn validate_a_bad_file_prints_located_lines_and_exits_2() {
    let dir = temp_dir("cli");
    let bad = write(
        &dir,
        "bad.yaml",
        "name: Bad\ntopology:\n  zones:\n  - name: z\n    racks:\n    - {name: r, subnet: 10.0.0.5/24}\n",
    );
    let out = podnet(&["validate", &bad]);
    assert_eq!(out.code, 2);
    assert!(
        out.stdout
            .contains(&format!("{bad}:1:7: name: `Bad` must be")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(&format!(
            "{bad}:6:25: topology.zones[0].racks[0].subnet: `10.0.0.5/24` has host bits set; did you mean `10.0.0.0/24`?"
        )),
        "{}",
        out.stdout
    );
    // Every problem line has the FILE:LINE:COL: shape.
    let located = out
        .stdout
        .lines()
        .filter(|l| {
            let mut parts = l.strip_prefix(&bad).unwrap_or("").splitn(4, ':');
            parts.next() == Some("")
                && parts.next().is_some_and(|n| n.parse::<u32>().is_ok())
                && parts.next().is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .count();
    assert!(located >= 2, "{}", out.stdout);
    // Several files: each is validated, and any invalid one makes the exit code 2.
    let out = podnet(&["validate", QUICKSTART, &bad]);
    assert_eq!(out.code, 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn validate_a_missing_file_names_it_and_exits_2() {
    let out = podnet(&["validate", "no-such-file.yaml"]);
    assert_eq!(out.code, 2);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains("no-such-file.yaml:1:1: cannot read"), "{all}");
}

#[test]
fn check_of_the_quick_start_passes() {
    let out = podnet(&["check", QUICKSTART]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let last = out.stdout.lines().last().unwrap_or("");
    let (passed, rest) = last.split_once(" passed, ").expect("closing line");
    assert!(passed.parse::<u32>().unwrap() > 0, "{last}");
    assert_eq!(rest, "0 failed");
    assert!(!out.stdout.contains("FAIL"), "{}", out.stdout);
}

#[test]
fn check_of_a_failing_expectation_exits_1_and_shows_expected_and_actual() {
    let dir = temp_dir("cli");
    let failing = failing_scenario(&dir);
    let out = podnet(&["check", &failing]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let fail = out
        .stdout
        .lines()
        .find(|l| l.starts_with("FAIL "))
        .expect("a FAIL line");
    assert!(
        fail.contains("expected running 25") && fail.contains("got running 24"),
        "{fail}"
    );
    assert!(out.stdout.ends_with("1 failed\n"), "{}", out.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_invalid_input_wins_over_failed_expectations() {
    let dir = temp_dir("cli");
    let failing = failing_scenario(&dir);
    let bad = write(&dir, "bad.yaml", INVALID);
    assert_eq!(podnet(&["check", &failing, &bad]).code, 2);
    assert_eq!(podnet(&["check", &bad, &failing]).code, 2);
    assert_eq!(podnet(&["check", QUICKSTART, &failing]).code, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_junit_has_one_testcase_per_expectation() {
    let dir = temp_dir("cli");
    let failing = failing_scenario(&dir);
    let junit = dir.join("junit.xml");
    let out = podnet(&["check", &failing, "--junit", junit.to_str().unwrap()]);
    assert_eq!(out.code, 1);
    let xml = std::fs::read_to_string(&junit).expect("junit.xml written");
    assert!(xml.starts_with("<?xml"), "{xml}");
    let expectations = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("PASS ") || l.starts_with("FAIL "))
        .count();
    assert!(expectations > 0);
    assert_eq!(xml.matches("<testcase ").count(), expectations, "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
    assert_well_formed_xml(&xml);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A small XML well-formedness check (no XML crate needed): every element closes in order,
/// attributes are quoted, and `&` only starts an entity.
fn assert_well_formed_xml(xml: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = xml.trim_start();
    assert!(rest.starts_with("<?xml"), "no XML declaration");
    rest = &rest[rest.find("?>").expect("declaration closes") + 2..];
    while let Some(open) = rest.find('<') {
        let text = &rest[..open];
        assert!(!text.contains('>'), "stray `>` in text: {text:?}");
        let close = rest[open..].find('>').expect("tag closes") + open;
        let tag = &rest[open + 1..close];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.trim()),
                "mismatched </{name}>"
            );
        } else {
            let self_closing = tag.ends_with('/');
            let body = tag.trim_end_matches('/');
            let name = body
                .split_whitespace()
                .next()
                .expect("tag name")
                .to_string();
            let attrs = &body[name.len()..];
            assert_eq!(
                attrs.matches('"').count() % 2,
                0,
                "unbalanced quotes in <{tag}>"
            );
            if !self_closing {
                stack.push(name);
            }
        }
        rest = &rest[close + 1..];
    }
    assert!(stack.is_empty(), "unclosed elements: {stack:?}");
    for (i, _) in xml.match_indices('&') {
        let entity = &xml[i..xml[i..].find(';').map_or(xml.len(), |j| i + j + 1)];
        assert!(
            ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].contains(&entity),
            "bad entity {entity}"
        );
    }
}

#[test]
fn check_json_counts_passed_and_failed() {
    let dir = temp_dir("cli");
    let failing = failing_scenario(&dir);
    let out = podnet(&["check", &failing, "--format", "json"]);
    assert_eq!(out.code, 1);
    let json: serde_json::Value = serde_json::from_str(&out.stdout).expect("stdout is JSON");
    assert_eq!(json["failed"], 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `podnet run --events`: `none` writes an empty events.jsonl, `sessions` (the default) every
/// line but the per-UPDATE and per-route BGP ones, `all` every line; report.json counts the
/// lines written. The quick start is a BGP cluster (IPIP, node-to-node mesh), so its full log
/// has UPDATEs and best-path changes and its sessions come up.
#[test]
fn run_events_levels_choose_the_lines_of_events_jsonl() {
    let dir = temp_dir("cli");
    let kinds_at = |level: Option<&str>| -> (Vec<String>, u64) {
        let out_dir = dir.join(level.unwrap_or("default"));
        let mut args = vec![
            "run",
            QUICKSTART,
            "--out",
            out_dir.to_str().unwrap(),
            "--quiet",
        ];
        if let Some(level) = level {
            args.extend(["--events", level]);
        }
        let out = podnet(&args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let text = std::fs::read_to_string(out_dir.join("events.jsonl")).expect("events.jsonl");
        let kinds = text
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
                v["kind"].as_str().expect("a kind").to_string()
            })
            .collect();
        let report: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out_dir.join("report.json")).expect("report.json"),
        )
        .expect("JSON");
        (kinds, report["summary"]["events"].as_u64().expect("events"))
    };
    let route_kinds = ["update", "bestPathChanged", "routeRejected"];
    let (none, none_count) = kinds_at(Some("none"));
    assert!(none.is_empty());
    assert_eq!(none_count, 0);
    let (all, all_count) = kinds_at(Some("all"));
    assert_eq!(all.len() as u64, all_count);
    assert!(all.iter().any(|k| k == "update"));
    assert!(all.iter().any(|k| k == "bestPathChanged"));
    let (sessions, sessions_count) = kinds_at(Some("sessions"));
    assert_eq!(sessions.len() as u64, sessions_count);
    let without_routes: Vec<&String> = all
        .iter()
        .filter(|k| !route_kinds.contains(&k.as_str()))
        .collect();
    assert_eq!(sessions.iter().collect::<Vec<_>>(), without_routes);
    assert!(sessions.iter().any(|k| k == "sessionEstablished"));
    assert!(sessions.iter().any(|k| k == "podScheduled"));
    let (default, _) = kinds_at(None);
    assert_eq!(default, sessions, "the default level is sessions");
    assert_eq!(podnet(&["run", QUICKSTART, "--events", "some"]).code, 2);
}

/// The top-level keys of SPEC §2.
const TOP_LEVEL_KEYS: &[&str] = &[
    "name",
    "description",
    "seed",
    "until",
    "profile",
    "topology",
    "network",
    "resources",
    "workloads",
    "events",
    "expect",
    "manifests",
    "include",
];

#[test]
fn schema_lists_every_top_level_key() {
    let out = podnet(&["schema"]);
    assert_eq!(out.code, 0);
    let json: serde_json::Value = serde_json::from_str(&out.stdout).expect("schema is JSON");
    let props = json["properties"]
        .as_object()
        .expect("top-level properties");
    for key in TOP_LEVEL_KEYS {
        assert!(props.contains_key(*key), "schema lacks `{key}`");
    }
}

/// Hostile files through the binary: exit 2, a located message, never a panic.
#[test]
fn hostile_files_exit_2_without_panicking() {
    let dir = temp_dir("cli");
    let deep = write(
        &dir,
        "deep.yaml",
        &format!("name: t\ntopology: {}\n", "[".repeat(100_000)),
    );
    let huge = write(
        &dir,
        "huge.yaml",
        "name: t\ntopology: {zones: [{name: z, racks: [{name: r, subnet: 10.0.0.0/8, nodes: [{namePrefix: w, count: 1000000000}]}]}]}\n",
    );
    let binary = write(&dir, "binary.yaml", "name: t\n\u{0}\u{1}\u{2}");
    for file in [&deep, &huge, &binary] {
        for cmd in ["validate", "run", "check"] {
            let out = podnet(
                &[cmd, file, "--out", dir.join("o").to_str().unwrap()]
                    [..if cmd == "run" { 4 } else { 2 }],
            );
            assert_eq!(
                out.code, 2,
                "podnet {cmd} {file}: {}{}",
                out.stdout, out.stderr
            );
            let all = format!("{}{}", out.stdout, out.stderr);
            assert!(all.contains(&format!("{file}:")), "{all}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A library scenario with Windows nodes, for `export hns`.
const WINDOWS: &str = "scenarios/windows-hns-multi-subnet.yaml";

/// SPEC §1: a closed stdout (`podnet ... | head -1`) ends every command quietly with exit 0.
/// The reading end of the pipe is closed before the child has simulated anything, so its
/// first write meets a broken pipe (without the fix: exit 3, "internal error ... Broken pipe").
#[test]
fn a_closed_stdout_ends_every_command_quietly_with_exit_0() {
    use std::process::Stdio;
    let dir = temp_dir("cli");
    let out_dir = dir.join("out");
    let out = out_dir.to_str().unwrap();
    let junit = dir.join("junit.xml");
    let junit = junit.to_str().unwrap();
    let commands: &[&[&str]] = &[
        &["run", QUICKSTART, "--format", "json", "--out", out],
        &["run", QUICKSTART, "--out", out],
        &["check", QUICKSTART, "--junit", junit],
        &["check", QUICKSTART, "--format", "json"],
        &["validate", QUICKSTART],
        &["routes", QUICKSTART, "--node", "a1-w-1"],
        &["routes", QUICKSTART, "--node", "a1-w-1", "--table", "fib"],
        &["trace", QUICKSTART, "--from", "web-0", "--to", "web-5"],
        &["sweep", QUICKSTART, "--set", "seed=1,2", "--jobs", "1"],
        &["schema"],
        &["export", "bird", QUICKSTART, "--out", out],
        &["export", "hns", WINDOWS, "--out", out],
        &["export", "hns", WINDOWS, "--node", "win-1", "--changes"],
        &["policy", QUICKSTART, "--pod", "default/web-0"],
        &["diff", QUICKSTART, "--set", "seed=2"],
    ];
    for args in commands {
        let mut child = Command::new(env!("CARGO_BIN_EXE_podnet"))
            .args(*args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("RUST_BACKTRACE")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn podnet");
        drop(child.stdout.take());
        let output = child.wait_with_output().expect("wait for podnet");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "podnet {args:?}: {stderr}");
        assert!(
            !stderr.contains("internal error") && !stderr.contains("Broken pipe"),
            "podnet {args:?} was not quiet: {stderr}"
        );
    }
    // The JUnit file is written before anything is printed.
    assert!(std::fs::read_to_string(junit).is_ok_and(|x| x.contains("<testcase")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn export_bird_writes_one_file_per_node_and_router() {
    let dir = temp_dir("cli");
    let out = dir.join("bird");
    let o = podnet(&[
        "export",
        "bird",
        "scenarios/route-reflectors.yaml",
        "--at",
        "30s",
        "--out",
        &out.display().to_string(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let mut listed: Vec<&str> = o.stdout.lines().collect();
    listed.sort_unstable();
    let mut files: Vec<String> = std::fs::read_dir(&out)
        .expect("output folder")
        .map(|e| e.expect("entry").path().display().to_string())
        .collect();
    files.sort();
    assert_eq!(listed, files, "stdout lists exactly the files written");
    let reflector = std::fs::read_to_string(out.join("r1-rr.conf")).expect("a reflector's file");
    assert!(reflector.contains("Calico v3.30.7") && reflector.contains("rr client;"));
    let tor = std::fs::read_to_string(out.join("tor-rack-1.conf")).expect("a ToR's file");
    assert!(tor.contains("NOT rendered by Calico"));
    // --node keeps one file; the same run gives the same bytes.
    let one = dir.join("one");
    let o = podnet(&[
        "export",
        "bird",
        "scenarios/route-reflectors.yaml",
        "--at",
        "30s",
        "--node",
        "r1-rr",
        "--out",
        &one.display().to_string(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(std::fs::read_dir(&one).expect("folder").count(), 1);
    assert_eq!(
        std::fs::read_to_string(one.join("r1-rr.conf")).expect("file"),
        reflector
    );
}

#[test]
fn export_bird_refuses_an_unknown_node_a_missing_target_and_a_scenario_without_bird() {
    let dir = temp_dir("cli");
    let o = podnet(&[
        "export",
        "bird",
        QUICKSTART,
        "--node",
        "nope",
        "--out",
        &dir.display().to_string(),
    ]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("no node or router `nope`"),
        "{}",
        o.stderr
    );
    let o = podnet(&["export", "hns", QUICKSTART]);
    assert_eq!(o.code, 2, "only bird is exported");
    let o = podnet(&[
        "export",
        "bird",
        "scenarios/vxlan-backend.yaml",
        "--out",
        &dir.display().to_string(),
    ]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("nothing in this scenario runs BIRD"),
        "{}",
        o.stderr
    );
}

//! `podnet diff`: the semantic difference of two runs, its exit codes and its three formats.
//! Every expected number is derived by hand in a comment from the scenario files and SPEC.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Output, run_in, temp_dir};

fn podnet(args: &[&str]) -> Output {
    common::run(args)
}

fn json(args: &[&str]) -> (i32, serde_json::Value) {
    let out = podnet(&[args, &["--format", "json"]].concat());
    let value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    (out.code, value)
}

fn names(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_str().expect("a string").to_string())
        .collect()
}

/// block-limit: maxBlocksPerHost 2 and every pod on `busy`. With /28 blocks the node holds
/// 2 × 16 = 32 addresses (32 Running, 8 Pending); with /29 blocks 2 × 8 = 16: 16 more pods are
/// Pending (batch-16 … batch-31, the first 16 ordinals keep addresses), refused by IPAM.
/// Pending pods have no address, so reachable pairs shrink from 32·31 = 992 to 16·15 = 240
/// without any pair becoming unreachable.
#[test]
fn smaller_blocks_under_a_block_limit_leave_pods_pending() {
    let (code, d) = json(&[
        "diff",
        "scenarios/block-limit.yaml",
        "--set",
        "resources[0].spec.blockSize=29",
    ]);
    assert_eq!(code, 1, "Pending pods gained is a regression by default");
    assert_eq!(
        d["pods"]["pending"],
        serde_json::json!({"base": 8, "new": 24})
    );
    let pending: Vec<String> = d["pods"]["newlyPending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[0].as_str().unwrap().to_string())
        .collect();
    let mut expected: Vec<String> = (16..32).map(|i| format!("default/batch-{i}")).collect();
    expected.sort();
    assert_eq!(pending, expected);
    assert!(
        d["pods"]["newlyPending"][0][1]
            .as_str()
            .unwrap()
            .contains("limit of 2 blocks reached"),
        "the new reason is Calico's: {}",
        d["pods"]["newlyPending"][0]
    );
    assert_eq!(names(&d["pods"]["allocationFailuresGained"]).len(), 16);
    assert_eq!(
        d["reachability"]["delivered"],
        serde_json::json!({"base": 992, "new": 240})
    );
    assert_eq!(
        d["reachability"]["becameUnreachable"],
        serde_json::json!([])
    );
    // The pool: 32 → 16 addresses of 256, still 2 blocks; blocks are /29 now.
    let pool = &d["ipam"]["pools"][0];
    assert_eq!(
        pool["allocated"],
        serde_json::json!({"base": 32, "new": 16})
    );
    let appeared: Vec<&str> = d["bgp"]["prefixesAppeared"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["prefix"].as_str().unwrap())
        .collect();
    assert!(appeared.iter().all(|p| p.ends_with("/29")), "{appeared:?}");
    let kinds: Vec<&str> = d["regressions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    // The scenario's pods/allocationFailures/pool expectations were written for /28.
    assert_eq!(kinds, ["pending", "allocation-failures", "expectations"]);
    let failing: Vec<&str> = d["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(failing.len(), 3, "{failing:?}");
}

#[test]
fn fail_on_chooses_what_regresses() {
    let base = [
        "diff",
        "scenarios/block-limit.yaml",
        "--set",
        "resources[0].spec.blockSize=29",
    ];
    assert_eq!(
        podnet(&[&base[..], &["--fail-on", "none"]].concat()).code,
        0
    );
    // Nothing became unreachable (the lost pairs are Pending pods') and no session changed.
    assert_eq!(
        podnet(&[&base[..], &["--fail-on", "unreachable,sessions"]].concat()).code,
        0
    );
    assert_eq!(
        podnet(&[&base[..], &["--fail-on", "allocation-failures"]].concat()).code,
        1
    );
    assert_eq!(
        podnet(&[&base[..], &["--fail-on", "bogus"]].concat()).code,
        2
    );
}

#[test]
fn a_layout_against_itself_has_no_difference() {
    // blockSize 28 is what the file says: the same layout, the same seed, the same run.
    let out = podnet(&[
        "diff",
        "scenarios/block-limit.yaml",
        "--set",
        "resources[0].spec.blockSize=28",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout.lines().nth(1),
        Some("no difference"),
        "{}",
        out.stdout
    );
    // Two files that differ only in their seed are run with the base's seed.
    let dir = temp_dir("seed");
    let text = std::fs::read_to_string(repo("scenarios/quickstart.yaml")).unwrap();
    let other = dir.join("other.yaml");
    std::fs::write(&other, text.replace("seed: 1 ", "seed: 7 ")).unwrap();
    let out = podnet(&["diff", "scenarios/quickstart.yaml", other.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout.lines().nth(1),
        Some("no difference"),
        "{}",
        out.stdout
    );
}

/// crosssubnet-overlay has no BGP fabric: a pod route is known to the nodes (full mesh), never
/// to the routers. Both DaemonSets have 3 pods per rack; web's pool `overlay` crosses racks in
/// IPIP, and the pool of the destination decides the encapsulation (SPEC §3.5). With
/// `ipipMode: Never` the packet leaves natively and the source rack's ToR has no route: the
/// 2 × 3 × 3 = 18 cross-rack web → web pairs fail with `no-route`, and so do the 18 cross-rack
/// native/db → default/web pairs (the scenario's `path` db-r1-n-1 → web-r2-n-1 was IPIP).
/// Same-rack pairs stay on the segment; web → db across racks already failed.
#[test]
fn a_pool_without_tunnels_makes_cross_rack_pairs_unreachable() {
    let (code, d) = json(&[
        "diff",
        "scenarios/crosssubnet-overlay.yaml",
        "--set",
        "resources[0].spec.ipipMode=Never",
    ]);
    assert_eq!(code, 1);
    let lost = d["reachability"]["becameUnreachable"].as_array().unwrap();
    let cells: Vec<(String, String, u64)> = lost
        .iter()
        .map(|c| {
            (
                c["from"].as_str().unwrap().to_string(),
                c["to"].as_str().unwrap().to_string(),
                c["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        cells,
        [
            ("default/web".to_string(), "default/web".to_string(), 18),
            ("native/db".to_string(), "default/web".to_string(), 18),
        ]
    );
    for c in lost {
        for f in c["failures"].as_array().unwrap() {
            assert_eq!(f["reason"], "no-route", "{f}");
            assert!(
                f["stoppedAt"].as_str().unwrap().starts_with("tor-rack-"),
                "{f}"
            );
            // Examples name the pods with their rack and zone.
            assert!(f["example"][0].as_str().unwrap().contains("(rack-"), "{f}");
        }
    }
    assert_eq!(d["reachability"]["becameReachable"], serde_json::json!([]));
    assert_eq!(d["reachability"]["grouping"], "workload");
}

/// policy-default-deny-rollout: at the end web may send only to db on 5432 (web-egress-db)
/// and db admits web only on 5432 (web-to-db). Moving the ingress rule to 5433 denies 5432 at
/// db's ingress, and 5433 stays denied at web's egress: the 2 web → db pairs (web-0, web-1 →
/// db-0) deliver on no packet. Per packet only 5432/TCP changes (2 → 0).
#[test]
fn a_policy_port_change_is_reported_per_port() {
    let (code, d) = json(&[
        "diff",
        "scenarios/policy-default-deny-rollout.yaml",
        "--set",
        "events[2].apply.spec.ingress[0].ports[0].port=5433",
    ]);
    assert_eq!(code, 1);
    let lost = d["reachability"]["becameUnreachable"].as_array().unwrap();
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(
        (lost[0]["from"].as_str(), lost[0]["to"].as_str()),
        (Some("shop/web"), Some("shop/db"))
    );
    assert_eq!(lost[0]["count"], 2);
    let reason = lost[0]["failures"][0]["reason"].as_str().unwrap();
    // Grouped by the first packet's denial: TCP port 1, denied by web's egress (default deny).
    assert!(
        reason.starts_with("policy-denied (egress, tier default"),
        "{reason}"
    );
    assert_eq!(
        d["reachability"]["packets"],
        serde_json::json!([{"from": "shop/web", "to": "shop/db", "packet": "5432/TCP",
                            "delivered": {"base": 2, "new": 0}}])
    );
}

#[test]
fn markdown_puts_the_verdict_and_summary_before_collapsed_details() {
    let out = podnet(&[
        "diff",
        "scenarios/block-limit.yaml",
        "--set",
        "resources[0].spec.blockSize=29",
        "--format",
        "markdown",
    ]);
    assert_eq!(out.code, 1);
    let md = &out.stdout;
    assert!(
        md.starts_with("### ❌ REGRESSED: 16 pods became Pending"),
        "{md}"
    );
    let first_details = md.find("<details><summary>").expect("collapsed sections");
    assert!(
        md[..first_details].contains("- pods: 40 (32 → 16 running, 8 → 24 pending)"),
        "{md}"
    );
    assert_eq!(
        md.matches("<details>").count(),
        md.matches("</details>").count()
    );
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git")
        .status
        .success();
    assert!(ok, "git {args:?}");
}

/// `--base-ref` reads the committed file with `git show`, from any working directory.
#[test]
fn base_ref_compares_the_committed_file_with_the_working_copy() {
    let dir = temp_dir("git");
    git(&dir, &["init", "-q"]);
    std::fs::create_dir_all(dir.join("layouts")).unwrap();
    let file = dir.join("layouts/limit.yaml");
    let text = std::fs::read_to_string(repo("scenarios/block-limit.yaml")).unwrap();
    std::fs::write(&file, &text).unwrap();
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "base"]);
    std::fs::write(&file, text.replace("blockSize: 28", "blockSize: 29")).unwrap();
    let path = file.to_str().unwrap();
    let out = podnet(&["diff", path, "--base-ref", "HEAD", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let d: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(d["base"]["source"], format!("{path}@HEAD"));
    assert_eq!(
        d["pods"]["pending"],
        serde_json::json!({"base": 8, "new": 24})
    );
    // Relative to the working directory too.
    let out = run_in(&dir, &["diff", "layouts/limit.yaml", "--base-ref", "HEAD"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    // A revision without the file is invalid input.
    let out = podnet(&["diff", path, "--base-ref", "no-such-rev"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("--base-ref: git show no-such-rev:./limit.yaml"),
        "{}",
        out.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn invalid_input_exits_2() {
    // One file and nothing to compare it with.
    let out = podnet(&["diff", "scenarios/block-limit.yaml"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("needs two sides"), "{}", out.stderr);
    let out = podnet(&[
        "diff",
        "scenarios/block-limit.yaml",
        "scenarios/no-such.yaml",
    ]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no-such.yaml"), "{}", out.stderr);
    // A located error for a bad override, as sweep gives.
    let out = podnet(&[
        "diff",
        "scenarios/block-limit.yaml",
        "--set",
        "resources[0].spec.blockSize=40",
    ]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("blockSize"), "{}", out.stderr);
    assert_eq!(out.stdout, "");
}

//! `podnet trace` and `podnet routes` on the quick-start scenario: exit codes, hop lists,
//! birdc- and ip-route-style tables, JSON.

use std::process::Command;

fn podnet(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_podnet"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("run podnet");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const QS: &str = "scenarios/quickstart.yaml";

#[test]
fn a_delivered_trace_lists_every_hop_and_exits_0() {
    let (code, out, err) = podnet(&["trace", QS, "--from", "web-0", "--to", "web-5"]);
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("trace web-0 -> web-5"), "{out}");
    assert_eq!(lines.last(), Some(&"delivered"));
    assert!(lines.len() >= 3, "{out}");
}

#[test]
fn an_undelivered_trace_names_the_reason_and_exits_1() {
    let (code, out, _) = podnet(&["trace", QS, "--from", "web-0", "--to", "192.168.99.99"]);
    assert_eq!(code, 1);
    assert!(
        out.trim_end()
            .ends_with("not delivered: unallocated at b2-w-2")
            || out.contains("not delivered: unallocated at"),
        "{out}"
    );
}

#[test]
fn trace_json_carries_the_verdict_and_hops() {
    let (code, out, _) = podnet(&[
        "trace", QS, "--from", "web-0", "--to", "web-5", "--format", "json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["delivered"], true);
    assert!(v["hops"].as_array().is_some_and(|h| !h.is_empty()));
}

#[test]
fn bad_trace_arguments_exit_2() {
    assert_eq!(
        podnet(&["trace", QS, "--from", "nobody", "--to", "web-5"]).0,
        2
    );
    assert_eq!(
        podnet(&[
            "trace", QS, "--from", "web-0", "--to", "web-5", "--at", "10"
        ])
        .0,
        2
    );
    assert_eq!(
        podnet(&["trace", "missing.yaml", "--from", "a", "--to", "b"]).0,
        2
    );
}

#[test]
fn routes_show_the_rib_with_the_best_route_and_why() {
    let (code, out, err) = podnet(&["routes", QS, "--node", "a1-w-1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Table master of a1-w-1"), "{out}");
    assert!(out.contains("unicast [originated here] *"), "{out}");
    assert!(out.contains("best: only candidate"), "{out}");
    let (code, out, _) = podnet(&["routes", QS, "--node", "a1-w-1", "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert!(v.as_array().is_some_and(|r| !r.is_empty()));
}

#[test]
fn routes_show_the_fib_like_ip_route() {
    let (code, out, _) = podnet(&["routes", QS, "--node", "a1-w-1", "--table", "fib"]);
    assert_eq!(code, 0);
    assert!(
        out.lines()
            .any(|l| l.starts_with("default via 10.1.1.1 (tor-rack-a1)")),
        "{out}"
    );
    assert!(out.lines().any(|l| l.starts_with("blackhole ")), "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains("dev tunl0 onlink proto bird")),
        "{out}"
    );
}

#[test]
fn routes_of_an_unknown_node_exit_2_with_a_suggestion() {
    let (code, _, err) = podnet(&["routes", QS, "--node", "a1-w-9"]);
    assert_eq!(code, 2);
    assert!(err.contains("did you mean"), "{err}");
}

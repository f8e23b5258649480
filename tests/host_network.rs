//! Host-network pods on the command line: `podnet trace` to and from them and their rows in
//! report.json, on `scenarios/host-network-pods.yaml`.
//!
//! Expected values follow the scenario's derivation (its header comment; REFERENCE-policy
//! §1.6, §3.2, vector T24): node-agent-a1/-a2 are host-network pods on a1 (10.1.1.11) and a2
//! (10.1.1.12); store (on a1) admits pods only on 3306; the pool is native (no tunnels).

mod common;
use common::podnet;

const SCENARIO: &str = "scenarios/host-network-pods.yaml";

fn trace(from: &str, to: &str, port: &str) -> (i32, String) {
    let (code, out, err) = podnet(&[
        "trace", SCENARIO, "--from", from, "--to", to, "--port", port,
    ]);
    (code, format!("{out}{err}"))
}

#[test]
fn from_another_node_a_host_network_pod_is_the_node_address_and_store_denies_it() {
    let (code, out) = trace("infra/node-agent-a2", "shop/store", "3306");
    assert_eq!(code, 1, "{out}");
    // No workload endpoint at the sender: no egress check.
    assert!(
        out.contains("egress policy: none (the sender is not a workload endpoint)"),
        "{out}"
    );
    assert!(out.contains("ingress policy of shop/store:"), "{out}");
    // The walk leaves from a2 itself, over the segment to a1.
    assert!(out.contains("a2"), "{out}");
    assert!(
        out.contains(
            "not delivered: policy-denied (ingress of shop/store: end of tier default) at a1"
        ),
        "{out}"
    );
}

#[test]
fn host_to_local_pod_is_not_policed() {
    let (code, out) = trace("infra/node-agent-a1", "shop/store", "3306");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("ingress policy: none (not a workload endpoint, or host-to-local traffic)"),
        "{out}"
    );
    assert_eq!(out.lines().last(), Some("delivered"), "{out}");
}

#[test]
fn a_trace_to_a_host_network_pod_ends_at_its_node_address() {
    let (code, out) = trace("shop/store", "infra/node-agent-a2", "9100");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("trace shop/store -> infra/node-agent-a2 (10.1.1.12)"),
        "{out}"
    );
    assert!(out.contains("egress policy of shop/store:"), "{out}");
    assert!(
        out.contains("ingress policy: none (not a workload endpoint, or host-to-local traffic)"),
        "{out}"
    );
    assert_eq!(out.lines().last(), Some("delivered"), "{out}");
    // front's egress admits pods only, and a node address is none.
    let (code, out) = trace("shop/front", "infra/node-agent-a2", "9100");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("policy-denied (egress of shop/front"), "{out}");
}

#[test]
fn the_report_shows_the_node_address_and_no_ipam_allocation() {
    let dir = std::env::temp_dir().join(format!("podnet-host-network-{}", std::process::id()));
    let dir_text = dir.to_string_lossy().into_owned();
    let (code, out, err) = podnet(&["run", SCENARIO, "--out", &dir_text, "--quiet"]);
    assert_eq!(code, 0, "{out}{err}");
    let text = std::fs::read_to_string(dir.join("report.json")).expect("report.json");
    let _ = std::fs::remove_dir_all(&dir);
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let pods = v["pods"].as_array().expect("pods");
    let row = |name: &str| {
        pods.iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("no pod {name} in {pods:?}"))
            .clone()
    };
    for (name, node, ip) in [
        ("node-agent-a1", "a1", "10.1.1.11"),
        ("node-agent-a2", "a2", "10.1.1.12"),
    ] {
        let p = row(name);
        assert_eq!(p["node"], node, "{p}");
        assert_eq!(p["ip"], ip, "{p}");
        assert!(p["pool"].is_null(), "{p}");
        assert!(p["block"].is_null(), "{p}");
        assert_eq!(p["status"], "Running", "{p}");
    }
    // Only store and front hold addresses from the pool.
    let pool = &v["pools"][0];
    assert_eq!(pool["allocated"], 2, "{pool}");
    // The host-port conflict keeps exporter Pending.
    assert_eq!(row("exporter-0")["status"], "Pending");
}

#[test]
fn podnet_policy_says_a_host_network_pod_has_no_workload_endpoint() {
    let (code, _, err) = podnet(&["policy", SCENARIO, "--pod", "infra/node-agent-a1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a hostNetwork pod"), "{err}");
}

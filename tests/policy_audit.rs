//! report.json `policy` and `connectivity` (SPEC §7) on `scenarios/policy-audit.yaml`, and
//! `policy.windowsSkipped` on `scenarios/windows-policy-hns.yaml`: the expected values are the
//! derivations in those scenarios' header comments, not podnet's output.

use std::process::Command;

use serde_json::{Value, json};

/// report.json of `scenarios/policy-audit.yaml`, written to a folder of the test's own (`label`).
fn report(label: &str) -> Value {
    report_of("scenarios/policy-audit.yaml", label)
}

/// report.json of `scenario`, written to a folder of the test's own (`label`).
fn report_of(scenario: &str, label: &str) -> Value {
    let out_dir = std::env::temp_dir().join(format!(
        "podnet-policy-audit-{label}-{}",
        std::process::id()
    ));
    let out = Command::new(env!("CARGO_BIN_EXE_podnet"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", scenario, "--quiet", "--out"])
        .arg(&out_dir)
        .output()
        .expect("run podnet");
    let json = std::fs::read(out_dir.join("report.json"));
    let _ = std::fs::remove_dir_all(&out_dir);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&json.expect("report.json")).expect("report.json is JSON")
}

/// (policy, direction, rule index) → (actedPairs, matchingPairs, status)
fn rule(policy: &Value, direction: &str, index: u64) -> (u64, u64, String) {
    let r = policy["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .find(|r| r["direction"] == direction && r["index"] == index)
        .unwrap_or_else(|| panic!("{direction} rule {index} in {policy}"));
    (
        r["actedPairs"].as_u64().expect("actedPairs"),
        r["matchingPairs"].as_u64().expect("matchingPairs"),
        r["status"].as_str().expect("status").to_string(),
    )
}

#[test]
fn policies_rules_and_unselected_pods_are_audited() {
    let r = report("policy");
    let p = &r["policy"];
    let names: Vec<&str> = p["policies"]
        .as_array()
        .expect("policies")
        .iter()
        .map(|x| x["name"].as_str().expect("name"))
        .collect();
    // Order 100 before the Kubernetes policies' 1000, which tie-break by name.
    assert_eq!(
        names,
        [
            "shop/web-egress",
            "shop/knp.default.db-allow",
            "shop/knp.default.unused"
        ]
    );
    let (web, db, unused) = (&p["policies"][0], &p["policies"][1], &p["policies"][2]);
    assert_eq!(web["selectedPods"], 2);
    assert_eq!(db["selectedPods"], 1);
    assert_eq!(unused["selectedPods"], 0);
    // web-egress rule 0 acts for the 6 pairs whose sender is web; rule 1 would match the
    // same 6 on TCP 5432 but never acts.
    assert_eq!(rule(web, "egress", 0), (6, 6, "acts".into()));
    assert_eq!(rule(web, "egress", 1), (0, 6, "shadowed".into()));
    // db-allow rule 0 acts for web → db; rule 1's ipBlock holds no pod.
    assert_eq!(rule(db, "ingress", 0), (2, 2, "acts".into()));
    assert_eq!(rule(db, "ingress", 1), (0, 0, "unmatched".into()));
    assert_eq!(p["unusedPolicies"], json!(["shop/knp.default.unused"]));
    assert_eq!(
        p["shadowedRules"],
        json!([{"tier": "default", "policy": "shop/web-egress", "direction": "egress", "index": 1}])
    );
    assert_eq!(
        p["unmatchedRules"],
        json!([{"tier": "default", "policy": "shop/knp.default.db-allow", "direction": "ingress", "index": 1}])
    );
    assert_eq!(
        p["unselected"],
        json!([
            {"workload": "shop/db", "pods": 1, "noIngressPolicy": 0, "noEgressPolicy": 1},
            {"workload": "shop/web", "pods": 2, "noIngressPolicy": 2, "noEgressPolicy": 0},
            {"workload": "tools/debug", "pods": 1, "noIngressPolicy": 1, "noEgressPolicy": 1},
        ])
    );
    let db0 = p["pods"]
        .as_array()
        .expect("pods")
        .iter()
        .find(|x| x["pod"] == "shop/db-0")
        .expect("shop/db-0");
    assert_eq!(db0["ingress"], json!(["shop/knp.default.db-allow"]));
    assert_eq!(db0["egress"], json!([]));
}

#[test]
fn the_connectivity_table_lists_what_policy_allows_between_workloads() {
    let r = report("connectivity");
    let rows: Vec<(String, String, u64, String)> = r["connectivity"]
        .as_array()
        .expect("connectivity")
        .iter()
        .map(|c| {
            (
                c["from"].as_str().expect("from").to_string(),
                c["to"].as_str().expect("to").to_string(),
                c["pairs"].as_u64().expect("pairs"),
                c["allowed"].as_str().expect("allowed").to_string(),
            )
        })
        .collect();
    let row = |f: &str, t: &str, n: u64, a: &str| (f.to_string(), t.to_string(), n, a.to_string());
    assert_eq!(
        rows,
        [
            row("shop/db", "shop/web", 2, "all"),
            row("shop/db", "tools/debug", 1, "all"),
            row("shop/web", "shop/db", 2, "TCP 5432"),
            row("shop/web", "shop/web", 2, "all"),
            row("shop/web", "tools/debug", 2, "all"),
            row("tools/debug", "shop/db", 1, "none"),
            row("tools/debug", "shop/web", 2, "all"),
        ]
    );
    // Every ordered pair of the 4 pods appears once: 4 × 3.
    assert_eq!(rows.iter().map(|r| r.2).sum::<u64>(), 12);
}

#[test]
fn the_report_has_a_policy_section() {
    let out_dir = std::env::temp_dir().join(format!("podnet-policy-md-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_podnet"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", "scenarios/policy-audit.yaml", "--quiet", "--out"])
        .arg(&out_dir)
        .output()
        .expect("run podnet");
    assert_eq!(out.status.code(), Some(0));
    let md = std::fs::read_to_string(out_dir.join("report.md")).expect("report.md");
    let html = std::fs::read_to_string(out_dir.join("report.html")).expect("report.html");
    let _ = std::fs::remove_dir_all(&out_dir);
    for needle in [
        "## Network policy",
        "tier default: shop/web-egress egress rule 1 is shadowed: it never acts",
        "shop/knp.default.unused selects no pod",
        "| shop/web | shop/db | 2 | TCP 5432 |",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle:?}:\n{md}");
    }
    assert!(
        html.contains("id=\"policy\""),
        "report.html has no policy section"
    );
}

/// HNS skips rule 0 (an ICMP type) and rule 1 (a named port) of `shop/web-ingress` on the
/// Windows node that runs one of the pods it selects; rules 2 and 3 are programmed, and the
/// Linux nodes skip nothing. One warning line per skipped rule names the rule and the node.
#[test]
fn rules_hns_cannot_express_are_reported_per_windows_node() {
    let r = report_of("scenarios/windows-policy-hns.yaml", "windows");
    let tier_of = |skip: &Value| skip["tier"].clone();
    let skipped = r["policy"]["windowsSkipped"]
        .as_array()
        .expect("windowsSkipped");
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    for (skip, (index, action, why)) in skipped.iter().zip([
        (0, "Deny", "HNS cannot match an ICMP type or code"),
        (1, "Allow", "HNS cannot match a named port"),
    ]) {
        assert_eq!(tier_of(skip), json!("default"));
        assert_eq!(skip["policy"], json!("shop/web-ingress"));
        assert_eq!(skip["direction"], json!("ingress"));
        assert_eq!(skip["index"], json!(index));
        assert_eq!(skip["action"], json!(action));
        assert_eq!(skip["why"], json!(why));
        assert_eq!(skip["nodes"], json!(["win-1"]));
    }
    let warnings: Vec<&str> = r["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(Value::as_str)
        .filter(|w| w.contains("skipped on Windows"))
        .collect();
    assert_eq!(
        warnings,
        [
            "tier default: shop/web-ingress ingress rule 0 (Deny) is skipped on Windows node win-1: HNS cannot match an ICMP type or code",
            "tier default: shop/web-ingress ingress rule 1 (Allow) is skipped on Windows node win-1: HNS cannot match a named port",
        ]
    );
}

/// `scenarios/host-network-pods.yaml` (its header comment): node-agent is a host-network
/// DaemonSet on a1 (10.1.1.11, with store) and a2 (10.1.1.12, with front); exporter stays
/// Pending, so 4 pods and 12 ordered pairs. Host-network pods are audited as their node's host
/// traffic, as reachability sees them (REFERENCE-policy §1.6, §3.2).
#[test]
fn host_network_pods_are_audited_as_their_nodes_host_traffic() {
    let r = report_of("scenarios/host-network-pods.yaml", "host-network");
    let p = &r["policy"];
    let policy = |name: &str| {
        p["policies"]
            .as_array()
            .expect("policies")
            .iter()
            .find(|x| x["name"] == name)
            .unwrap_or_else(|| panic!("{name}"))
            .clone()
    };
    // front-from-nodes (TCP 8080 from 10.1.1.0/24): node-agent-a1 → front is host traffic
    // from another node, seen from 10.1.1.11, and matches; node-agent-a2 → front is host →
    // local pod, never policed; store's address is a pool address. 1 pair, no longer
    // "unmatched".
    assert_eq!(
        rule(&policy("shop/knp.default.front-from-nodes"), "ingress", 0),
        (1, 1, "acts".into())
    );
    // store-from-cluster (pods of any namespace on 3306): front → store only; node-agent-a2's
    // address is no pod, node-agent-a1 → store is not policed.
    assert_eq!(
        rule(&policy("shop/knp.default.store-from-cluster"), "ingress", 0),
        (1, 1, "acts".into())
    );
    // front-to-pods (to pods of any namespace): front → store; a node address is no pod.
    assert_eq!(
        rule(&policy("shop/knp.default.front-to-pods"), "egress", 0),
        (1, 1, "acts".into())
    );
    assert_eq!(p["unmatchedRules"], json!([]));
    // infra's default deny selects no pod: every infra pod is host-network.
    assert_eq!(p["unusedPolicies"], json!(["infra/knp.default.deny-all"]));
    // The host-network workload is in the connectivity table both ways. Packet classes: TCP
    // 1-3305, 3306, 3307-8079, 8080, 8081-65535 (3306 and 8080 are named by rules and
    // ports), UDP, SCTP, ICMP.
    let rows: Vec<Value> = r["connectivity"].as_array().expect("connectivity").clone();
    assert_eq!(
        rows,
        [
            // Host to host: no endpoint on either side.
            json!({"from": "infra/node-agent", "to": "infra/node-agent", "pairs": 2, "allowed": "all"}),
            // a1's agent is admitted on 8080 only; a2's is on front's node: not policed.
            json!({"from": "infra/node-agent", "to": "shop/front", "pairs": 2, "allowed": "TCP 8080",
                   "allowedForSome": "TCP 1-8079, 8081-65535; UDP; SCTP; ICMP"}),
            // a2's agent ends at store's end of tier; a1's is on store's node: not policed.
            json!({"from": "infra/node-agent", "to": "shop/store", "pairs": 2, "allowed": "none",
                   "allowedForSome": "all"}),
            // front's egress admits pods only.
            json!({"from": "shop/front", "to": "infra/node-agent", "pairs": 2, "allowed": "none"}),
            json!({"from": "shop/front", "to": "shop/store", "pairs": 1, "allowed": "TCP 3306"}),
            // store has no egress policy, and the agents no endpoint.
            json!({"from": "shop/store", "to": "infra/node-agent", "pairs": 2, "allowed": "all"}),
            json!({"from": "shop/store", "to": "shop/front", "pairs": 1, "allowed": "none"}),
        ]
    );
    // Every ordered pair of the 4 pods once, as podPairs counts them.
    let total: u64 = rows
        .iter()
        .map(|c| c["pairs"].as_u64().expect("pairs"))
        .sum();
    assert_eq!(total, 12);
    assert_eq!(r["summary"]["podPairs"], 12);
}

#[test]
fn a_destination_services_rule_is_audited_on_the_services_target_ports() {
    // scenarios/policy-services-rule.yaml: client's only egress rule allows
    // destination.services default/store (port 80 -> targetPort 8080, one store pod). Calico
    // matches such a rule on the Service's endpoints, address and target port (REFERENCE-policy
    // §2.4), so TCP 8080 is a packet class of its own (1-8079, 8080, 8081-65535): the rule
    // acts for client -> store on 8080 (1 pair) and is not "unmatched"; client -> other
    // matches nothing (other is no endpoint of store) and ends the tier.
    let r = report_of("scenarios/policy-services-rule.yaml", "services-rule");
    let p = &r["policy"];
    let policy = p["policies"]
        .as_array()
        .expect("policies")
        .iter()
        .find(|x| x["name"] == "default/client-egress")
        .unwrap_or_else(|| panic!("client-egress in {p}"))
        .clone();
    assert_eq!(rule(&policy, "egress", 0), (1, 1, "acts".into()));
    assert_eq!(p["unmatchedRules"], json!([]));
    let rows: Vec<Value> = r["connectivity"].as_array().expect("connectivity").clone();
    let client_to = |to: &str| {
        rows.iter()
            .find(|c| c["from"] == "default/client" && c["to"] == to)
            .unwrap_or_else(|| panic!("client -> {to} in {rows:?}"))
            .clone()
    };
    assert_eq!(client_to("default/store")["allowed"], "TCP 8080");
    assert_eq!(client_to("default/other")["allowed"], "none");
}

//! The HNS ACL lists of Windows pods (report.json `windows.nodes[].endpointAcls`, the ACL
//! table of report.md) over a whole run of `scenarios/windows-policy-hns.yaml`. Expected
//! values are derived by hand from the scenario (its header lists the policy) and Felix's
//! Windows dataplane (REFERENCE-policy §4; see `src/policy/hns_acl.rs`).

mod common;

use serde_json::{Value, json};

fn report(name: &str) -> (Value, String) {
    common::library_report(name)
}

#[allow(clippy::too_many_arguments)]
fn acl(
    id: &str,
    action: &str,
    direction: &str,
    protocol: u16,
    remote: &str,
    local_ports: &str,
    priority: u16,
    rule_type: &str,
    origin: &str,
) -> Value {
    json!({
        "id": id, "action": action, "direction": direction, "protocol": protocol,
        "localAddresses": "", "remoteAddresses": remote,
        "localPorts": local_ports, "remotePorts": "",
        "priority": priority, "ruleType": rule_type, "origin": origin,
    })
}

/// win-1 is the first node of rack-win (10.30.1.0/24, gateway .1): address 10.30.1.2.
/// `shop/web-ingress` (default tier, Ingress only) selects web-windows. In: the
/// host-to-endpoint Allow from 10.30.1.2/32 (900); rules 0 (ICMP type 8) and 1 (named port
/// `http`) are skipped; rule 2 Allow ICMP → protocol 1 (1000); rule 3 Allow TCP 8080 →
/// protocol 6, LocalPorts 8080 (1001); the default tier's end-of-tier Block (1002); the host
/// rule (Host, priority 0). Out: no egress policy → profile kns.shop Allow (1000), the
/// default Block (1001), the host rule.
#[test]
fn the_windows_pod_gets_the_programmable_rules_in_order_and_the_skipped_ones_are_named() {
    let (json, md) = report("windows-policy-hns");
    let nodes = json["windows"]["nodes"].as_array().expect("windows nodes");
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0]["name"], "win-1");
    let eps = nodes[0]["endpointAcls"].as_array().expect("endpointAcls");
    assert_eq!(eps.len(), 1, "only web-windows runs on win-1");
    assert_eq!(eps[0]["pod"], "shop/web-windows");
    let rule = |i: usize| format!("tier default: shop/web-ingress ingress rule {i}");
    let want = vec![
        acl(
            "allow-host-to-endpoint",
            "Allow",
            "In",
            256,
            "10.30.1.2/32",
            "",
            900,
            "Switch",
            "host-to-endpoint",
        ),
        acl(
            "policy-shop/web-ingress-ingress2-0",
            "Allow",
            "In",
            1,
            "",
            "",
            1000,
            "Switch",
            &rule(2),
        ),
        acl(
            "policy-shop/web-ingress-ingress3-0",
            "Allow",
            "In",
            6,
            "",
            "8080",
            1001,
            "Switch",
            &rule(3),
        ),
        acl(
            "",
            "Block",
            "In",
            256,
            "",
            "",
            1002,
            "Switch",
            "end of tier default",
        ),
        acl("", "Allow", "In", 256, "", "", 0, "Host", "host"),
        acl(
            "profile-kns.shop-0-0",
            "Allow",
            "Out",
            256,
            "",
            "",
            1000,
            "Switch",
            "profile kns.shop",
        ),
        acl("", "Block", "Out", 256, "", "", 1001, "Switch", "default"),
        acl("", "Allow", "Out", 256, "", "", 0, "Host", "host"),
    ];
    assert_eq!(eps[0]["acls"], Value::Array(want));
    let skipped: Vec<(u64, &str)> = eps[0]["skipped"]
        .as_array()
        .expect("skipped")
        .iter()
        .map(|s| (s["index"].as_u64().unwrap(), s["why"].as_str().unwrap()))
        .collect();
    assert_eq!(
        skipped,
        vec![
            (0, "HNS cannot match an ICMP type or code"),
            (1, "HNS cannot match a named port")
        ]
    );
    // The same rules are the policy.windowsSkipped entries naming win-1.
    let ws = json["policy"]["windowsSkipped"]
        .as_array()
        .expect("windowsSkipped");
    assert_eq!(ws.len(), 2);
    assert!(ws.iter().all(|w| w["nodes"] == json!(["win-1"])));
    assert!(
        md.contains("| shop/web-windows | policy-shop/web-ingress-ingress3-0 | Allow | In | 6 | — | — | 8080 | — | 1001 | Switch |"),
        "{md}"
    );
    assert!(md.contains("Left out of these lists: tier default: shop/web-ingress ingress rule 0"));
}

/// Without policy the key is there and empty.
#[test]
fn without_policy_a_windows_node_lists_no_acls() {
    let (json, _) = report("windows-micro-pools-per-host");
    let nodes = json["windows"]["nodes"].as_array().expect("windows nodes");
    assert!(!nodes.is_empty());
    for n in nodes {
        assert_eq!(n["endpointAcls"], json!([]), "{}", n["name"]);
    }
}

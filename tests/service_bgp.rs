//! Service addresses advertised over BGP and reached from outside the cluster (issue #18,
//! REFERENCE-policy §5): `trace --from EXTERNAL --to svc/NS/NAME`, `routes` and `export bird`
//! on `scenarios/service-etp-local.yaml`, whose comments derive every value checked here.

mod common;
use common::podnet;

const ETP: &str = "scenarios/service-etp-local.yaml";

fn trace(at: &str, to: &str, json: bool) -> (i32, String, String) {
    let mut args = vec![
        "trace", ETP, "--at", at, "--from", "internet", "--to", to, "--port", "80",
    ];
    if json {
        args.extend(["--format", "json"]);
    }
    podnet(&args)
}

#[test]
fn trace_from_an_external_follows_the_advertised_route_to_a_node_with_an_endpoint() {
    let (code, out, err) = trace("1m", "svc/default/web", false);
    assert_eq!(code, 0, "{out}{err}");
    for line in [
        "trace internet -> svc/default/web (loadBalancerIP 203.0.113.10 of Service default/web) at 1m",
        "from external internet (0.0.0.0/0, source 0.0.0.1) entering at spine-zone-a-1",
        "advertised as 203.0.113.10/32 by r1-n-1, r2-n-1",
        "dnat at r1-n-1 (externalTrafficPolicy Local): 203.0.113.10 -> ",
        "source 0.0.0.1 preserved",
        "reply towards spine-zone-a-1:",
    ] {
        assert!(out.contains(line), "`{line}` missing in:\n{out}");
    }
    let hops: Vec<&str> = out
        .lines()
        .take_while(|l| !l.starts_with("dnat"))
        .filter(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().nth(1).unwrap_or(""))
        .collect();
    assert_eq!(hops, ["spine-zone-a-1", "tor-rack-1", "r1-n-1"], "{out}");
    assert_eq!(out.lines().last(), Some("delivered"), "{out}");
    // Cluster policy: masqueraded to the node that received it (r1-n-1, 10.20.1.2).
    let (code, out, _) = trace("2m10s", "203.0.113.11", false);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("snat 0.0.0.1 -> 10.20.1.2 (kube-proxy masquerade)"),
        "{out}"
    );
}

#[test]
fn with_no_endpoint_left_or_no_route_learned_the_verdicts_say_why() {
    let (code, out, _) = trace("3m10s", "svc/default/web", false);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("advertised as 203.0.113.0/24 by r1-n-1, r1-n-2, r2-n-1"),
        "{out}"
    );
    assert_eq!(
        out.lines().last(),
        Some(
            "not delivered: no-endpoints at r1-n-1 (traffic policy Local: no ready endpoint on \
             this node)"
        ),
        "{out}"
    );
    let (code, out, _) = trace("1m", "svc/default/hidden", true);
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["reason"], "not-advertised");
    assert_eq!(v["stoppedAt"], "spine-zone-a-1");
    assert_eq!(v["address"], "198.51.100.5");
    assert_eq!(v["addressKind"], "externalIP");
    assert_eq!(v["advertised"], serde_json::Value::Null);
}

#[test]
fn routes_and_export_show_the_service_routes_as_calicos_static_routes() {
    let (code, out, err) = podnet(&["routes", ETP, "--node", "r1-n-1", "--at", "1m"]);
    assert_eq!(code, 0, "{err}");
    let at = out.find("203.0.113.10/32").expect(&out);
    assert!(
        out[at..].starts_with("203.0.113.10/32      unicast [static, originated here] * (200)"),
        "{out}"
    );
    // r1-n-2 has no endpoint: it only reflects the /32 it learned, and keeps it out of its FIB.
    let (_, fib, _) = podnet(&[
        "routes", ETP, "--node", "r1-n-2", "--at", "1m", "--table", "fib",
    ]);
    assert!(!fib.contains("203.0.113"), "{fib}");
    let dir = std::env::temp_dir().join(format!("podnet-service-bgp-{}", std::process::id()));
    let d = dir.to_string_lossy().into_owned();
    let (code, _, err) = podnet(&["export", "bird", ETP, "--at", "1m", "--out", &d]);
    assert_eq!(code, 0, "{err}");
    let conf = std::fs::read_to_string(dir.join("r1-n-1.conf")).expect("r1-n-1.conf");
    let _ = std::fs::remove_dir_all(&dir);
    for line in [
        "   route 10.96.0.0/12 blackhole;",
        "   route 203.0.113.10/32 blackhole;",
        "  if ( net ~ 203.0.113.10/32 ) then { accept; }",
        "  if ( net ~ 203.0.113.0/24 ) then { reject; }",
    ] {
        assert!(conf.contains(line), "`{line}` missing in:\n{conf}");
    }
}

#[test]
fn the_report_says_who_advertises_each_service_address_and_how_externals_fare() {
    // At the end (after 3m) no endpoint is left: only the CIDRs are advertised, by every
    // node; web's LoadBalancer IP and cluster IP fall back to them, hidden's external IP is in
    // no configured CIDR (not listed), and the external reaches neither web nor web-any.
    let dir = std::env::temp_dir().join(format!("podnet-service-bgp-run-{}", std::process::id()));
    let d = dir.to_string_lossy().into_owned();
    let (code, _, err) = podnet(&["run", ETP, "--out", &d, "--quiet"]);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap_or_default();
    let json = std::fs::read_to_string(dir.join("report.json")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("report.json");
    let service = |name: &str| {
        v["services"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()
            .clone()
    };
    let all = serde_json::json!(["r1-n-1", "r1-n-2", "r2-n-1"]);
    let web = service("web");
    assert_eq!(
        web["advertised"],
        serde_json::json!([
            {"address": "10.96.0.2", "kind": "clusterIP", "prefix": "10.96.0.0/12", "nodes": all},
            {"address": "203.0.113.10", "kind": "loadBalancerIP", "prefix": "203.0.113.0/24", "nodes": all},
        ])
    );
    let external = web["clients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["client"] == "external internet")
        .unwrap()
        .clone();
    assert_eq!(
        (
            external["port"].clone(),
            external["every"].clone(),
            external["none"].clone()
        ),
        (
            serde_json::json!("80/TCP"),
            serde_json::json!(0),
            serde_json::json!(1)
        )
    );
    let hidden = service("hidden");
    assert_eq!(
        hidden["advertised"].as_array().unwrap().len(),
        1,
        "{hidden}"
    );
    assert_eq!(hidden["advertised"][0]["kind"], "clusterIP");
    assert!(md.contains("\n## Services\n"), "{md}");
    assert!(
        md.contains("loadBalancerIP 203.0.113.10 as 203.0.113.0/24 by r1-n-1, r1-n-2, r2-n-1"),
        "{md}"
    );
}

//! `podnet trace` and `podnet routes` on the quick-start scenario: exit codes, hop lists,
//! birdc- and ip-route-style tables, JSON.

mod common;
use common::podnet;

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
    assert!(out.contains("unicast [static, originated here] *"), "{out}");
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

/// The routes JSON of `node` in `scenario`.
fn rib_json(scenario: &str, node: &str) -> Vec<serde_json::Value> {
    let (code, out, err) = podnet(&["routes", scenario, "--node", node, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    v.as_array().expect("a list of prefixes").clone()
}

fn routes_of<'a>(rib: &'a [serde_json::Value], prefix: &str) -> &'a [serde_json::Value] {
    rib.iter()
        .find(|e| e["prefix"] == prefix)
        .and_then(|e| e["routes"].as_array())
        .unwrap_or_else(|| panic!("no {prefix} in {rib:?}"))
}

#[test]
fn routes_show_birds_preference_not_local_pref_and_a_block_as_a_static_blackhole() {
    // REFERENCE §4.3: in `birdc show route` the number in parentheses is the preference:
    // static 200 (Calico's blackhole for an own block), BGP 100. LOCAL_PREF (100 by default)
    // is an attribute, shown as such.
    let (code, out, _) = podnet(&["routes", QS, "--node", "a1-w-1"]);
    assert_eq!(code, 0);
    let block = out
        .lines()
        .position(|l| l.contains("[static, originated here] * (200)"))
        .unwrap_or_else(|| panic!("a static blackhole line: {out}"));
    assert!(
        out.lines().nth(block + 1).unwrap().contains("\tblackhole"),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.contains(" ibgp] * (100)")),
        "a BGP route with preference 100: {out}"
    );
    assert!(out.contains("local-pref 100"), "{out}");
    let rib = rib_json(QS, "a1-w-1");
    let local: Vec<_> = rib
        .iter()
        .flat_map(|e| e["routes"].as_array().unwrap())
        .filter(|r| r["from"].is_null())
        .collect();
    assert!(!local.is_empty());
    for r in local {
        assert_eq!(r["type"], "blackhole");
        assert_eq!(r["protocol"], "static");
        assert_eq!(r["preference"], 200);
    }
}

#[test]
fn a_borrowed_address_is_a_kernel_route_to_the_pod_not_a_blackhole() {
    // borrowed-ip-blackhole.yaml: b-1 borrowed 10.70.0.4 from a-1's block. On b-1 that /32
    // is the route Felix programs to the pod's interface, which BIRD learns through its
    // kernel protocol (preference 10); a-1's block is its static blackhole (200).
    const S: &str = "scenarios/borrowed-ip-blackhole.yaml";
    let b1 = rib_json(S, "b-1");
    let own = routes_of(&b1, "10.70.0.4/32");
    assert_eq!(own.len(), 1);
    assert_eq!(own[0]["type"], "localPod");
    assert_eq!(own[0]["protocol"], "kernel");
    assert_eq!(own[0]["preference"], 10);
    let (_, out, _) = podnet(&["routes", S, "--node", "b-1"]);
    assert!(
        out.contains("10.70.0.4/32         unicast [kernel, local pod] * (10)"),
        "{out}"
    );
    assert!(out.contains("\tdev cali (local pod)"), "{out}");
    let a1 = rib_json(S, "a-1");
    let block = routes_of(&a1, "10.70.0.0/28");
    assert_eq!(block[0]["type"], "blackhole");
    assert_eq!(block[0]["preference"], 200);
    // A learned route is BGP, preference 100.
    let learned = routes_of(&a1, "10.70.0.1/32");
    assert_eq!(learned[0]["protocol"], "bgp");
    assert_eq!(learned[0]["preference"], 100);
}

#[test]
fn calico_v3_32_gives_every_ibgp_route_its_local_pref() {
    // REFERENCE §4.4: Calico's v3.32+ templates give every route a node sends over iBGP
    // local-pref 2147482623; v3.30 leaves BIRD's default 100. The quick start is iBGP only
    // (a mesh), so every learned route on a1-w-1 carries it under v3.32 and v3.33.
    let text = std::fs::read_to_string(QS).unwrap();
    assert!(
        !text.contains("\nprofile:"),
        "the quick start sets no profile"
    );
    for (version, expected) in [
        ("v3.30", 100),
        ("v3.32", 2147482623u64),
        ("v3.33", 2147482623),
    ] {
        let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("quickstart-{version}.yaml"));
        std::fs::write(&path, format!("{text}\nprofile: {{calico: {version}}}\n")).unwrap();
        let rib = rib_json(path.to_str().unwrap(), "a1-w-1");
        let learned: Vec<_> = rib
            .iter()
            .flat_map(|e| e["routes"].as_array().unwrap())
            .filter(|r| r["type"] == "ibgp")
            .collect();
        assert!(!learned.is_empty(), "{version}");
        for r in learned {
            assert_eq!(r["localPref"], expected, "{version}: {r}");
        }
    }
}

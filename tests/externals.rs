//! `externals:` (SPEC §7): decoding with located errors, and the expectations that name an
//! external (`from`/`to: {external: name}`).

mod common;
use common::podnet;

use podnet::scenario::{Diagnostic, load_str};

/// Two zones (so a `core` exists), one rack each: tor-ra, tor-rb, spine-za-1, spine-zb-1.
fn scenario(externals: &str, expect: &str) -> String {
    format!(
        "name: t\n\
         topology:\n\
         \x20 zones:\n\
         \x20 - name: za\n\
         \x20   racks: [{{name: ra, subnet: 10.6.0.0/24, nodes: [{{name: n1}}]}}]\n\
         \x20 - name: zb\n\
         \x20   racks: [{{name: rb, subnet: 10.7.0.0/24, nodes: [{{name: n2}}]}}]\n\
         workloads: [{{name: web, replicas: 1}}]\n\
         externals:\n\
         {externals}\
         expect:\n\
         {expect}"
    )
}

fn errors(externals: &str, expect: &str) -> Vec<Diagnostic> {
    match load_str("t.yaml", &scenario(externals, expect)) {
        Ok(_) => panic!("expected an error for:\n{externals}{expect}"),
        Err(d) => d.errors().cloned().collect(),
    }
}

const OK_EXPECT: &str = "- {pods: {of: all, running: 1}}\n";

#[test]
fn externals_decode_onto_the_topology() {
    let s = load_str(
        "t.yaml",
        &scenario(
            "- {name: internet, cidr: 0.0.0.0/0, attach: core}\n\
             - {name: lab, cidr: 192.0.2.0/24, attach: tor-rb}\n",
            "- {reachable: {from: {workload: web}, to: {external: internet}}}\n\
             - {isolated: {from: {external: lab}, to: all}}\n",
        ),
    )
    .unwrap_or_else(|d| panic!("{d}"));
    let x = &s.topology.externals;
    assert_eq!(x.len(), 2);
    assert_eq!(
        (x[0].name.as_str(), x[0].cidr.to_string()),
        ("internet", "0.0.0.0/0".to_string())
    );
    assert_eq!(s.topology.device(x[0].attach).name, "core");
    assert_eq!(x[1].cidr.to_string(), "192.0.2.0/24");
    assert_eq!(x[1].address().to_string(), "192.0.2.1");
    assert_eq!(s.topology.device(x[1].attach).name, "tor-rb");
}

#[test]
fn bad_externals_are_refused_at_their_field() {
    // (externals, expectations, path of an error, words of its message, its line).
    let cases: &[(&str, &str, &str, &str, u32)] = &[
        (
            "- {cidr: 0.0.0.0/0, attach: core}\n",
            OK_EXPECT,
            "externals[0]",
            "missing required field `name`",
            10,
        ),
        (
            "- {name: x, attach: core}\n",
            OK_EXPECT,
            "externals[0]",
            "missing required field `cidr`",
            10,
        ),
        (
            "- {name: x, cidr: 0.0.0.0/0}\n",
            OK_EXPECT,
            "externals[0]",
            "missing required field `attach`",
            10,
        ),
        (
            "- {name: x, cidr: 0.0.0.0/0, attach: n1}\n",
            OK_EXPECT,
            "externals[0].attach",
            "`n1` is a node, not a router",
            10,
        ),
        (
            "- {name: x, cidr: 0.0.0.0/0, attach: tor-rc}\n",
            OK_EXPECT,
            "externals[0].attach",
            "no router `tor-rc`; an external attaches to a router (",
            10,
        ),
        (
            "- {name: Internet, cidr: 0.0.0.0/0, attach: core}\n",
            OK_EXPECT,
            "externals[0].name",
            "not a valid external name",
            10,
        ),
        (
            "- {name: n1, cidr: 0.0.0.0/0, attach: core}\n",
            OK_EXPECT,
            "externals[0].name",
            "already the name of a node or router",
            10,
        ),
        (
            "- {name: x, cidr: 0.0.0.0/0, attach: core}\n- {name: x, cidr: 192.0.2.0/24, attach: core}\n",
            OK_EXPECT,
            "externals[1].name",
            "external `x` is already declared (externals[0])",
            11,
        ),
        (
            "- {name: x, cidr: 192.0.2.0/24, attach: core}\n- {name: y, cidr: 192.0.2.0/24, attach: tor-ra}\n",
            OK_EXPECT,
            "externals[1].cidr",
            "192.0.2.0/24 is already the CIDR of external `x`",
            11,
        ),
        (
            "- {name: x, cidr: 192.0.2.7/24, attach: core}\n",
            OK_EXPECT,
            "externals[0].cidr",
            "has host bits set",
            10,
        ),
        (
            "- {name: x, cidr: 0.0.0.0/0, attach: core}\n",
            "- {reachable: {from: all, to: {external: y}}}\n",
            "expect[0].reachable.to",
            "no external `y` in `externals:` (x)",
            12,
        ),
        (
            "- {name: x, cidr: 0.0.0.0/0, attach: core}\n",
            "- {pods: {of: {external: x}, running: 1}}\n",
            "expect[0].pods.of",
            "can only be the `from` or `to`",
            12,
        ),
        (
            "- {name: x, cidr: 0.0.0.0/0, attach: core}\n- {name: y, cidr: 192.0.2.0/24, attach: core}\n",
            "- {reachable: {from: {external: x}, to: {external: y}}}\n",
            "expect[0].reachable.to",
            "from an external, `to` must be pods",
            13,
        ),
    ];
    for (externals, expect, path, words, line) in cases {
        let errs = errors(externals, expect);
        let e = errs
            .iter()
            .find(|e| e.path == *path)
            .unwrap_or_else(|| panic!("no error at {path} for {externals}{expect}: {errs:?}"));
        assert!(
            e.message.contains(words),
            "{path}: `{}` lacks `{words}`",
            e.message
        );
        assert_eq!(e.pos.line, *line, "{path}: {}", e.message);
    }
}

#[test]
fn core_exists_only_with_two_zones() {
    let one_zone = "name: t\n\
         topology:\n\
         \x20 zones: [{name: za, racks: [{name: ra, subnet: 10.6.0.0/24, nodes: [{name: n1}]}]}]\n\
         externals: [{name: x, cidr: 0.0.0.0/0, attach: core}]\n";
    let Err(d) = load_str("t.yaml", one_zone) else {
        panic!("expected an error");
    };
    let e = d.errors().next().expect("an error");
    assert_eq!(e.path, "externals[0].attach");
    assert!(e.message.contains("there is no `core`"), "{}", e.message);
}

const NAT: &str = "scenarios/external-nat-outgoing.yaml";

#[test]
fn trace_to_an_external_shows_the_snat_on_the_first_hop_and_the_reply() {
    // Derivation in the scenario's comments: a natOutgoing pod is masqueraded by its node
    // (r1-n-1, 10.20.1.2: the first address after the gateway) and the reply comes back to
    // the node through the spine and the ToR.
    let (code, out, err) = podnet(&[
        "trace",
        NAT,
        "--at",
        "1m",
        "--from",
        "nat/web-r1-n-1",
        "--to",
        "internet",
        "--port",
        "443",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("trace nat/web-r1-n-1 -> internet (0.0.0.1)"),
        "{out}"
    );
    let first_hop = lines
        .iter()
        .find(|l| l.trim_start().starts_with("1  r1-n-1"))
        .unwrap();
    assert!(first_hop.contains("snat 10.48."), "{out}");
    assert!(
        first_hop.contains("-> 10.20.1.2 (natOutgoing pool 10.48.0.0/16)"),
        "{out}"
    );
    assert!(out.contains("reply to 10.20.1.2:"), "{out}");
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("delivered (natOutgoing: SNAT to the node address 10.20.1.2 at r1-n-1)"),
        "{out}"
    );
    // Without natOutgoing and a block the fabric never learned, the reply is lost at the
    // spine, where the external is attached.
    let (code, out, _) = podnet(&[
        "trace",
        NAT,
        "--at",
        "1m",
        "--from",
        "stranded/web-r1-n-1",
        "--to",
        "internet",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["delivered"], false);
    assert_eq!(v["reason"], "no-route");
    assert_eq!(v["stoppedAt"], "spine-zone-a-1");
    assert_eq!(v["snat"], serde_json::Value::Null);
    assert_eq!(v["reply"]["delivered"], false);
    assert_eq!(v["external"]["attach"], "spine-zone-a-1");
    // From an external: in through its ToR.
    let (code, out, err) = podnet(&[
        "trace",
        NAT,
        "--at",
        "1m",
        "--from",
        "lab",
        "--to",
        "routable/web-r1-n-1",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("entering at tor-rack-2"), "{out}");
}

/// report.json of `scenario` run until `until`, parsed. Its `expect:` list is left out, since
/// a run lasts until its latest expectation.
fn report_json(scenario: &str, until: &str) -> serde_json::Value {
    report_json_with(scenario, until, &|t| t.to_string())
}

/// [`report_json`] of the scenario's text changed by `edit`.
fn report_json_with(
    scenario: &str,
    until: &str,
    edit: &dyn Fn(&str) -> String,
) -> serde_json::Value {
    let dir = common::temp_dir("externals-report");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(scenario);
    let text = edit(&std::fs::read_to_string(path).expect("scenario"));
    let text = text.split("\nexpect:\n").next().unwrap_or_default();
    let file = common::write(&dir, "s.yaml", text);
    let out = dir.join("out").display().to_string();
    let (code, stdout, stderr) = podnet(&[
        "run", &file, "--until", until, "--format", "json", "--out", &out,
    ]);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).expect("report.json")
}

/// `(workload, pods, every, some, none, snat, snatTo, repliesLost)` of one flow.
type Flow = (String, u64, u64, u64, u64, u64, Vec<String>, u64);

/// The flows of one list of report.json's `externals[]`.
fn flows(v: &serde_json::Value) -> Vec<Flow> {
    let n = |f: &serde_json::Value, k: &str| f[k].as_u64().unwrap_or(u64::MAX);
    v.as_array()
        .expect("a list of flows")
        .iter()
        .map(|f| {
            (
                f["workload"].as_str().unwrap_or("?").to_string(),
                n(f, "pods"),
                n(f, "every"),
                n(f, "some"),
                n(f, "none"),
                n(f, "snat"),
                f["snatTo"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|s| s.as_str().unwrap_or("?").to_string())
                            .collect()
                    })
                    .unwrap_or_default(),
                n(f, "repliesLost"),
            )
        })
        .collect()
}

#[test]
fn the_report_says_per_workload_how_pods_reach_externals_and_are_reached_from_them() {
    // scenarios/external-nat-outgoing.yaml at 1m30s, before `stranded` gets natOutgoing at 2m
    // (the derivation is the scenario's own comment). Nodes: r1-n-1 10.20.1.2, r1-n-2
    // 10.20.1.3 (rack-1's ToR holds .1, nodes follow), r2-n-1 10.20.2.2; one pod per node
    // and namespace (DaemonSets), so 3 pods per workload.
    let v = report_json("scenarios/external-nat-outgoing.yaml", "1m30s");
    let x = v["externals"].as_array().expect("externals");
    assert_eq!(x.len(), 2);
    assert_eq!(
        (
            &x[0]["name"],
            &x[0]["cidr"],
            &x[0]["attach"],
            &x[0]["address"]
        ),
        (
            &"internet".into(),
            &"0.0.0.0/0".into(),
            &"spine-zone-a-1".into(),
            &"0.0.0.1".into()
        )
    );
    let nodes: Vec<String> = ["10.20.1.2", "10.20.1.3", "10.20.2.2"]
        .map(String::from)
        .to_vec();
    let row = |w: &str, every, none, snat, to: &[String], lost| {
        (w.to_string(), 3, every, 0, none, snat, to.to_vec(), lost)
    };
    // Out to the internet: nat masqueraded by every node (3 node addresses); routable
    // replies come back by the spine's learned blocks; stranded replies are lost at the
    // spine (no route for 10.50/16 but the way out).
    assert_eq!(
        flows(&x[0]["fromPods"]),
        vec![
            row("nat/web", 3, 0, 3, &nodes, 0),
            row("routable/web", 3, 0, 0, &[], 0),
            row("stranded/web", 0, 3, 0, &[], 3),
        ]
    );
    let stranded = &x[0]["fromPods"][2]["failures"][0];
    assert_eq!(
        (&stranded["reason"], &stranded["at"], &stranded["pods"]),
        (&"no-route".into(), &"spine-zone-a-1".into(), &3.into())
    );
    // The example is the first pod in key order (r1-n-1's): out by its ToR to the spine,
    // where the reply to 10.50.x stops at once.
    assert_eq!(
        stranded["path"],
        serde_json::json!(["r1-n-1", "tor-rack-1", "spine-zone-a-1"])
    );
    assert_eq!(stranded["replyPath"], serde_json::json!(["spine-zone-a-1"]));
    // In from the internet: only routable blocks are learned; nat and stranded addresses
    // reach the spine's way out and are never delivered.
    assert_eq!(
        flows(&x[0]["toPods"]),
        vec![
            row("nat/web", 0, 3, 0, &[], 0),
            row("routable/web", 3, 0, 0, &[], 0),
            row("stranded/web", 0, 3, 0, &[], 0),
        ]
    );
    // lab (192.0.2.1 on tor-rack-2): the same, the stranded replies going by tor-rack-2's
    // default route to the spine and lost there.
    assert_eq!(
        flows(&x[1]["fromPods"]),
        vec![
            row("nat/web", 3, 0, 3, &nodes, 0),
            row("routable/web", 3, 0, 0, &[], 0),
            row("stranded/web", 0, 3, 0, &[], 3),
        ]
    );
    assert_eq!(x[1]["fromPods"][2]["failures"][0]["at"], "spine-zone-a-1");
    assert_eq!(x[0]["toServices"], serde_json::json!([]));
    // From 2m stranded is masqueraded too: at the end every pod reaches both externals.
    let end = report_json("scenarios/external-nat-outgoing.yaml", "3m");
    assert_eq!(
        flows(&end["externals"][0]["fromPods"])[2],
        row("stranded/web", 3, 0, 3, &nodes, 0)
    );
}

#[test]
fn the_report_says_how_an_external_reaches_each_service_port() {
    // scenarios/service-etp-local.yaml (derivation in its comment): at 1m30s web (Local) and
    // web-any (Cluster) deliver on port 80 at their LoadBalancer IPs; hidden's external IP
    // 198.51.100.5 is in no configured CIDR, so the spine learned nothing for it.
    let v = report_json("scenarios/service-etp-local.yaml", "1m30s");
    let services = |v: &serde_json::Value| -> Vec<(String, String, String, String, String)> {
        v["externals"][0]["toServices"]
            .as_array()
            .expect("toServices")
            .iter()
            .map(|s| {
                let t = |k: &str| s[k].as_str().unwrap_or("?").to_string();
                (
                    t("service"),
                    t("port"),
                    t("address"),
                    t("kind"),
                    t("outcome"),
                )
            })
            .collect()
    };
    let row = |s: &str, a: &str, k: &str, o: &str| {
        (s.into(), "80/TCP".into(), a.into(), k.into(), o.into())
    };
    assert_eq!(
        services(&v),
        vec![
            row("default/hidden", "198.51.100.5", "externalIP", "none"),
            row("default/web", "203.0.113.10", "loadBalancerIP", "every"),
            row("default/web-any", "203.0.113.11", "loadBalancerIP", "every"),
        ]
    );
    let hidden = v["externals"][0]["toServices"][0]["failures"][0]
        .as_str()
        .unwrap_or("");
    assert!(
        hidden.starts_with("not-advertised at spine-zone-a-1"),
        "{hidden}"
    );
    // The pods' pool is exported and has no natOutgoing: one pod each, reached both ways
    // without SNAT.
    assert_eq!(
        flows(&v["externals"][0]["fromPods"]),
        vec![
            ("default/web-1".into(), 1, 1, 0, 0, 0, vec![], 0),
            ("default/web-2".into(), 1, 1, 0, 0, 0, vec![], 0),
        ]
    );
    // After 3m no endpoint is left: both LoadBalancer Services fail with no-endpoints at the
    // node the /24 leads to (r1-n-1), and no pod is left to connect.
    let end = report_json("scenarios/service-etp-local.yaml", "3m10s");
    assert_eq!(
        services(&end)[1..],
        [
            row("default/web", "203.0.113.10", "loadBalancerIP", "none"),
            row("default/web-any", "203.0.113.11", "loadBalancerIP", "none"),
        ]
    );
    let web = end["externals"][0]["toServices"][1]["failures"][0]
        .as_str()
        .unwrap_or("");
    assert!(web.starts_with("no-endpoints at r1-n-1"), "{web}");
    assert_eq!(end["externals"][0]["fromPods"], serde_json::json!([]));
}

#[test]
fn the_externals_key_is_an_empty_list_without_externals() {
    let v = report_json("scenarios/block-limit.yaml", "1m");
    assert_eq!(v["externals"], serde_json::json!([]));
}

/// `(service, outcome, paths, pathsDelivered, failures)` of an external's `toServices`.
type ServiceFlow = (String, String, u64, u64, Vec<String>);

fn service_flows(v: &serde_json::Value) -> Vec<ServiceFlow> {
    v["externals"][0]["toServices"]
        .as_array()
        .expect("toServices")
        .iter()
        .map(|s| {
            (
                s["service"].as_str().unwrap_or("?").to_string(),
                s["outcome"].as_str().unwrap_or("?").to_string(),
                s["paths"].as_u64().unwrap_or(0),
                s["pathsDelivered"].as_u64().unwrap_or(0),
                s["failures"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|f| f.as_str().unwrap_or("?").to_string())
                            .collect()
                    })
                    .unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn fabric_ecmp_spreads_an_external_over_every_advertising_node_and_judges_every_path() {
    // scenarios/service-ecmp.yaml (derivation in its comment): tor-rack-1 holds three
    // equal-cost paths (r1-n-1, r1-n-2, r1-n-3) for both Service CIDRs. local (its cluster IP,
    // internalTrafficPolicy Local) has its only endpoint on r1-n-2: delivered on 1 of 3 paths,
    // no-endpoints on the paths via r1-n-1 (path 1) and r1-n-3 (path 3). web (Cluster) delivers
    // on all three.
    let v = report_json("scenarios/service-ecmp.yaml", "1m");
    let local_words = |node: &str, path: u32| {
        format!(
            "no-endpoints at {node} (traffic policy Local: no ready endpoint on this node) on \
             ECMP path {path} of 3"
        )
    };
    assert_eq!(
        service_flows(&v),
        vec![
            (
                "default/local".into(),
                "some".into(),
                3,
                1,
                vec![local_words("r1-n-1", 1), local_words("r1-n-3", 3)]
            ),
            ("default/web".into(), "every".into(), 3, 3, vec![]),
        ]
    );
    // Without ECMP the ToR sends everything by its best route, r1-n-1's (lowest router ID),
    // where local has no endpoint: one path, delivering nothing.
    let single = report_json_with("scenarios/service-ecmp.yaml", "1m", &|t| {
        t.replace("ecmp: true", "ecmp: false")
    });
    assert_eq!(
        service_flows(&single),
        vec![
            (
                "default/local".into(),
                "none".into(),
                1,
                0,
                vec![
                    "no-endpoints at r1-n-1 (traffic policy Local: no ready endpoint on this node)"
                        .into()
                ]
            ),
            ("default/web".into(), "every".into(), 1, 1, vec![]),
        ]
    );
    // The trace names the fork, the branch the flow hash picks (the same on every run), and
    // every branch's verdict.
    let args = [
        "trace",
        "scenarios/service-ecmp.yaml",
        "--from",
        "internet",
        "--to",
        "svc/default/local",
        "--port",
        "80",
        "--at",
        "1m",
    ];
    let (code, text, stderr) = podnet(&args);
    assert!(code == 0 || code == 1, "{stderr}");
    assert!(
        text.contains(
            "ecmp at tor-rack-1: 3 equal-cost next hops r1-n-1, r1-n-2, r1-n-3; the flow hash picks r1-n-"
        ),
        "{text}"
    );
    assert!(text.contains("ecmp path 2 of 3 via r1-n-2"), "{text}");
    assert!(text.contains("delivered on 1 of 3 ECMP paths"), "{text}");
    assert_eq!(text.matches("(the flow hash's)").count(), 1, "{text}");
    // Delivered exactly when the hash picked r1-n-2.
    let picked_2 = text.contains("the flow hash picks r1-n-2");
    assert_eq!(code == 0, picked_2, "{text}");
    assert_eq!(podnet(&args).1, text);
}

#[test]
fn an_ecmp_fabric_exports_routers_that_merge_equal_paths() {
    // With topology.fabric.ecmp the ToR's kernel protocol merges equal-cost BGP paths (BIRD's
    // `merge paths on`); without it, one path per prefix, as before.
    let router = |scenario: &str| {
        let dir = common::temp_dir("externals-bird");
        let out = dir.display().to_string();
        let (code, _, stderr) = podnet(&[
            "export",
            "bird",
            scenario,
            "--node",
            "tor-rack-1",
            "--out",
            &out,
        ]);
        assert_eq!(code, 0, "{stderr}");
        std::fs::read_to_string(dir.join("tor-rack-1.conf")).expect("tor-rack-1.conf")
    };
    let ecmp = router("scenarios/service-ecmp.yaml");
    assert!(
        ecmp.contains("protocol kernel {\n  scan time 2;\n  merge paths on;\n"),
        "{ecmp}"
    );
    let single = router("scenarios/service-etp-local.yaml");
    assert!(!single.contains("merge paths"), "{single}");
    assert!(single.contains("(no ECMP)"), "{single}");
}

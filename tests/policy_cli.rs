//! `podnet trace` with network policy and `podnet policy`, on the default-deny rollout
//! scenario: the policy steps, the `policy-denied` verdict and its fields, exit codes.
//!
//! Expected values follow the scenario's derivation (its header comment): after 1m every shop
//! pod is isolated in both directions by `default-deny`; at 3m web may reach db on TCP 5432.

mod common;
use common::podnet;

const ROLLOUT: &str = "scenarios/policy-default-deny-rollout.yaml";

#[test]
fn an_allowed_connection_shows_both_checks_then_the_hops() {
    let (code, out, err) = podnet(&[
        "trace",
        ROLLOUT,
        "--from",
        "shop/web-0",
        "--to",
        "shop/db-0",
        "--port",
        "5432",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("packet: 5432/TCP"), "{out}");
    let egress = out
        .find("egress policy of shop/web-0:")
        .expect("egress section");
    let ingress = out
        .find("ingress policy of shop/db-0:")
        .expect("ingress section");
    assert!(egress < ingress, "{out}");
    assert!(
        out.contains("=> allowed by tier default: shop/knp.default.web-egress-db rule 0 (Allow)"),
        "{out}"
    );
    assert!(
        out.contains("=> allowed by tier default: shop/knp.default.web-to-db rule 0 (Allow)"),
        "{out}"
    );
    assert_eq!(out.lines().last(), Some("delivered"));
}

#[test]
fn a_denied_connection_names_side_tier_and_rule_and_exits_1() {
    // db's egress is isolated by default-deny and only allow-dns (UDP 53) has a rule.
    let (code, out, _) = podnet(&[
        "trace",
        ROLLOUT,
        "--from",
        "shop/db-0",
        "--to",
        "shop/web-0",
        "--port",
        "80",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("rule 0 (Allow): no match, protocol UDP"),
        "{out}"
    );
    assert!(out.contains("ingress policy: not reached"), "{out}");
    assert!(
        out.trim_end().ends_with(
            "not delivered: policy-denied (egress of shop/db-0: end of tier default) at a1-w-1"
        ) || out
            .contains("not delivered: policy-denied (egress of shop/db-0: end of tier default)"),
        "{out}"
    );
    let (code, out, _) = podnet(&[
        "trace",
        ROLLOUT,
        "--from",
        "shop/db-0",
        "--to",
        "shop/web-0",
        "--port",
        "80",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["reason"], "policy-denied");
    assert_eq!(v["side"], "egress");
    assert_eq!(v["tier"], "default");
    assert_eq!(v["rule"], "end-of-tier");
}

#[test]
fn before_the_rollout_a_trace_has_no_policy_section() {
    let (code, out, _) = podnet(&[
        "trace",
        ROLLOUT,
        "--from",
        "shop/web-0",
        "--to",
        "shop/db-0",
        "--port",
        "5432",
        "--at",
        "30s",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("policy"), "{out}");
}

#[test]
fn bad_probe_arguments_exit_2() {
    let icmp_port = podnet(&[
        "trace",
        ROLLOUT,
        "--from",
        "shop/web-0",
        "--to",
        "shop/db-0",
        "--port",
        "80",
        "--protocol",
        "ICMP",
    ]);
    assert_eq!(icmp_port.0, 2, "{icmp_port:?}");
    let unnamed = podnet(&[
        "trace",
        ROLLOUT,
        "--from",
        "shop/web-0",
        "--to",
        "shop/db-0",
        "--port",
        // db-0 declares one container port, `postgres`; no container of it is named `mysql`.
        "mysql",
    ]);
    assert_eq!(unnamed.0, 2, "{unnamed:?}");
}

#[test]
fn policy_lists_applying_policies_in_order_and_peer_rules() {
    let (code, out, err) = podnet(&["policy", ROLLOUT, "--pod", "shop/db-0"]);
    assert_eq!(code, 0, "{out}{err}");
    let expected_ingress = "ingress:\n  1. tier default  order 1000  shop/knp.default.default-deny\n  2. tier default  order 1000  shop/knp.default.web-to-db\n  then profiles: kns.shop (allows), ksa.shop.default (labels only)\n";
    assert!(out.contains(expected_ingress), "{out}");
    // web-egress-db's egress rule selects db as its destination.
    assert!(
        out.contains("tier default: shop/knp.default.web-egress-db egress rule 0 destination"),
        "{out}"
    );
    let (code, out, _) = podnet(&[
        "policy",
        ROLLOUT,
        "--pod",
        "shop/db-0",
        "--at",
        "30s",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["enforced"], false);
    assert_eq!(v["ingress"].as_array().map(Vec::len), Some(0));
    assert_eq!(podnet(&["policy", ROLLOUT, "--pod", "db-0"]).0, 2);
    assert_eq!(podnet(&["policy", ROLLOUT, "--pod", "shop/nobody"]).0, 2);
}

/// `path` runs policy as `trace` does (SPEC §2.6: `path` takes `port` and `protocol`): the
/// probe's packet through the sender's egress, routing and the receiver's ingress.
/// policy-cross-zone's derivation: ledger admits TCP 8443 from role=auditor only, after IPIP
/// across the fabric; payments is not an auditor; without a port the packet is an ICMP echo
/// request, which the policy's ports do not admit.
#[test]
fn a_path_expectation_runs_policy_for_its_probe() {
    let dir = std::env::temp_dir().join(format!("podnet-path-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let base = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/policy-cross-zone.yaml"),
    )
    .expect("scenario");
    let head = base.split("\nexpect:\n").next().expect("expect list");
    let file = dir.join("path.yaml");
    std::fs::write(
        &file,
        format!(
            "{head}\nexpect:\n\
             - {{path: {{from: payments/audit, to: ledger/ledger, port: 8443, encapsulation: ipip}}}}\n\
             - {{path: {{from: payments/payments, to: ledger/ledger, port: 8443}}}}\n\
             - {{path: {{from: payments/audit, to: ledger/ledger}}}}\n\
             - {{path: {{from: ledger/ledger, to: payments/payments, protocol: UDP, port: 53}}}}\n"
        ),
    )
    .expect("write scenario");
    let (code, out, err) = podnet(&["check", file.to_str().expect("utf-8 path")]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 1, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("PASS path"), "{out}");
    assert!(
        lines[1].starts_with("FAIL path")
            && lines[1].contains("policy-denied (ingress of ledger/ledger"),
        "{out}"
    );
    assert!(
        lines[2].starts_with("FAIL path") && lines[2].contains("policy-denied (ingress"),
        "{out}"
    );
    // ledger's egress is not policed: UDP 53 to payments is delivered.
    assert!(lines[3].starts_with("PASS path"), "{out}");
}

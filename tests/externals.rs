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

use super::*;
use crate::sim::Simulation;

/// Renders every file of a scenario given as text, at its end.
fn render_text(yaml: &str) -> BTreeMap<String, String> {
    let scenario = crate::scenario::load_str("t.yaml", yaml).expect("valid scenario");
    let outcome = Simulation::new(&scenario).run();
    render(&scenario, &outcome.world, &outcome.last, None)
        .expect("renders")
        .into_iter()
        .map(|c| (c.device, c.text))
        .collect()
}

/// Asserts that each expected line occurs in `text`, in order.
fn check_lines(text: &str, expected: &[&str]) {
    let mut rest = text;
    for line in expected {
        match rest.find(line) {
            Some(i) => rest = &rest[i + line.len()..],
            None => panic!("`{line}` missing (or out of order) in:\n{text}"),
        }
    }
}

const MESH: &str = "
name: t
topology:
  zones:
  - name: z
    racks:
    - name: r1
      subnet: 10.0.0.0/24
      nodes: [{name: n1, ip: 10.0.0.2}, {name: n2, ip: 10.0.0.10}, {name: n3, ip: 10.0.0.9}]
resources:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {name: pods}
  spec: {cidr: 10.244.0.0/16, blockSize: 26, ipipMode: Never}
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {name: private}
  spec: {cidr: 10.99.0.0/16, disableBGPExport: true, vxlanMode: Always}
workloads:
- {name: web, kind: DaemonSet}
";

#[test]
fn service_routes_are_static_routes_exported_and_kept_out_of_the_kernel() {
    // Calico's confd test `mesh/static-routes` (compiled_templates bird_aggr.cfg and
    // bird_ipam.cfg): serviceClusterIPs 10.101.0.0/16 and serviceLoadBalancerIPs
    // 80.15.0.0/24 become `route … blackhole;` under "# Static routes.", one
    // `if ( net ~ … ) then { accept; }` each under "# Export static routes." after
    // calico_aggr(), and `reject` lines in calico_kernel_programming; a Local Service's
    // /32 joins the static routes of the node with its endpoint only (its cluster IP
    // 10.101.0.2, the first after the `kubernetes` Service's 10.101.0.1), not the
    // rejected CIDRs. The IPv6 entry (fd00:96::/112) belongs to bird6.cfg, and the empty
    // `- {}` entries are skipped.
    let yaml = MESH.replace(
        "workloads:\n- {name: web, kind: DaemonSet}\n",
        "- apiVersion: projectcalico.org/v3
  kind: BGPConfiguration
  metadata: {name: default}
  spec:
    serviceClusterIPs: [{cidr: 10.101.0.0/16}, {}, {cidr: fd00:96::/112}]
    serviceLoadBalancerIPs: [{cidr: 80.15.0.0/24}, {}]
- apiVersion: v1
  kind: Service
  metadata: {name: web}
  spec:
    type: NodePort
    externalTrafficPolicy: Local
    selector: {app: web}
    ports: [{port: 80}]
network: {serviceClusterIPRange: 10.101.0.0/16}
workloads:
- {name: web, replicas: 1, labels: {app: web}, nodeSelector: {kubernetes.io/hostname: n2}}
",
    );
    let files = render_text(&yaml);
    check_lines(
        &files["n2"],
        &[
            "   # Static routes.",
            "   route 10.101.0.0/16 blackhole;",
            "   route 10.101.0.2/32 blackhole;",
            "   route 80.15.0.0/24 blackhole;",
            "  calico_aggr();",
            "  # Export static routes.",
            "  if ( net ~ 10.101.0.0/16 ) then { accept; }",
            "  if ( net ~ 10.101.0.2/32 ) then { accept; }",
            "  if ( net ~ 80.15.0.0/24 ) then { accept; }",
            "filter calico_kernel_programming {",
            "  # Don't program static routes into kernel.",
            "  if ( net ~ 10.101.0.0/16 ) then { reject; }",
            "  if ( net ~ 80.15.0.0/24 ) then { reject; }",
        ],
    );
    assert!(!files["n1"].contains("10.101.0.2/32"), "{}", files["n1"]);
    assert!(files["n1"].contains("   route 80.15.0.0/24 blackhole;"));
    assert!(!files["n2"].contains("fd00"));
    assert!(!files["n2"].contains("10.101.0.2/32 ) then { reject"));
}

#[test]
fn a_mesh_node_gets_calicos_sections_and_one_protocol_per_other_node() {
    let files = render_text(MESH);
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["n1", "n2", "n3", "spine-z-1", "tor-r1"],
        "one file per node and per router (a zone has one spine by default)"
    );
    let n1 = &files["n1"];
    check_lines(
        n1,
        &[
            "Calico v3.30.7",
            "protocol static {",
            "   # IP blocks for this host.",
            "function calico_aggr ()",
            "function reject_disabled_pools ()",
            "  if ( net ~ 10.99.0.0/16 ) then { reject; }",
            "function calico_export_to_bgp_peers(bool internal_peer) {",
            "  if ( net ~ 10.244.0.0/16 ) then {\n    accept;\n  }",
            "  # Skip 10.99.0.0/16 as BGP export is disabled for it",
            "filter calico_kernel_programming {",
            // pools in confd's key order: 10.244.0.0-16 sorts before 10.99.0.0-16
            "  if ( net ~ 10.244.0.0/16 ) then {",
            "  if ( net ~ 10.99.0.0/16 ) then {",
            "    reject;",
            "router id 10.0.0.2;",
            "protocol kernel {",
            "  learn;",
            "protocol device {",
            "protocol direct {",
            "template bgp bgp_template {",
            "  local as 64512;",
            "    gateway recursive;",
            "    add paths on;",
            "  graceful restart;",
            "  connect delay time 2;",
            "  connect retry time 5;",
            "  error wait time 5,30;",
            "# ------------- Node-to-node mesh -------------",
            // hosts in name order: n2, then n3
            "protocol bgp Mesh_10_0_0_10 from bgp_template {",
            "  neighbor 10.0.0.10 as 64512;",
            "  source address 10.0.0.2;",
            "      calico_export_to_bgp_peers(true);",
            "protocol bgp Mesh_10_0_0_9 from bgp_template {",
            "# No global peers configured.",
            "# No node-specific peers configured.",
        ],
    );
    // The template compares addresses as strings: "10.0.0.10" < "10.0.0.2" < "10.0.0.9",
    // so n1 connects to n2 and waits for n3.
    let block = |text: &str, name: &str| {
        text.split(&format!("protocol bgp {name} "))
            .nth(1)
            .and_then(|b| b.split("\n}\n").next())
            .map(str::to_string)
            .unwrap_or_default()
    };
    assert!(!block(n1, "Mesh_10_0_0_10").contains("passive on"));
    assert!(block(n1, "Mesh_10_0_0_9").contains("passive on"));
    assert!(
        !block(n1, "Mesh_10_0_0_9").contains("multihop"),
        "v3.30's mesh has none"
    );
    // n2 (10.0.0.10): "10.0.0.9" > "10.0.0.10" as strings, so n2 waits for n3, but
    // "10.0.0.2" > "10.0.0.10" too, so it also waits for n1.
    assert_eq!(files["n2"].matches("passive on;").count(), 2);
    // n3 (10.0.0.9) is the largest string: it connects to both.
    assert_eq!(files["n3"].matches("passive on;").count(), 0);
    // Each node blackholes exactly its own blocks: three blocks in total.
    let blackholes: usize = ["n1", "n2", "n3"]
        .iter()
        .map(|n| files[*n].matches(" blackhole;").count())
        .sum();
    assert_eq!(blackholes, 3);
    assert!(files["tor-r1"].contains("NOT rendered by Calico"));
    assert!(
        !files["tor-r1"].contains("protocol bgp"),
        "the fabric does not speak BGP"
    );
}

const REFLECTORS: &str = "
name: t
topology:
  zones:
  - name: z
    racks:
    - name: r1
      subnet: 10.0.0.0/24
      nodes:
      - {name: rr1, ip: 10.0.0.11, labels: {rr: 'yes'}, bgp: {routeReflectorClusterID: 244.0.0.1}}
      - {name: rr2, ip: 10.0.0.12, labels: {rr: 'yes'}, bgp: {routeReflectorClusterID: 244.0.0.1}}
      - {name: rr3, ip: 10.0.0.13, labels: {rr: 'yes'}, bgp: {routeReflectorClusterID: 244.0.0.2}}
      - {name: c1, ip: 10.0.0.21}
resources:
- apiVersion: projectcalico.org/v3
  kind: BGPConfiguration
  metadata: {name: default}
  spec: {nodeToNodeMeshEnabled: false}
- apiVersion: projectcalico.org/v3
  kind: BGPPeer
  metadata: {name: to-rrs}
  spec: {peerSelector: rr == 'yes'}
profile: {bgpTimers: frr-datacenter}
";

#[test]
fn reflectors_get_rr_client_exactly_where_calico_sets_it() {
    let files = render_text(REFLECTORS);
    let rr1 = &files["rr1"];
    check_lines(
        rr1,
        &[
            "hold time 9;",
            "keepalive time 3;",
            "configured as a route reflector with cluster ID 244.0.0.1",
            // rr2 shares the cluster ID: plain iBGP, a global peer (peerSelector matches it)
            "protocol bgp Global_10_0_0_12 from bgp_template {",
            "calico_export_to_bgp_peers(true);",
            "passive on;",
            "}",
            // rr3 has another cluster ID: Calico makes it a client
            "protocol bgp Global_10_0_0_13 from bgp_template {",
            "  rr client;\n  rr cluster id 244.0.0.1;",
            // c1 is reached by the reverse peering: node-specific, a client
            "protocol bgp Node_10_0_0_21 from bgp_template {",
            "  rr client;\n  rr cluster id 244.0.0.1;",
        ],
    );
    let rr2_block = rr1
        .split("protocol bgp Global_10_0_0_12")
        .nth(1)
        .and_then(|s| s.split("\n}\n").next())
        .expect("the block");
    assert!(!rr2_block.contains("rr client"), "{rr2_block}");
    // the client: three global peers, no rr client of its own, and no mesh.
    let c1 = &files["c1"];
    assert_eq!(c1.matches("protocol bgp Global_").count(), 3);
    assert!(!c1.contains("rr client"));
    assert!(c1.contains("# Node-to-node mesh disabled"));
}

#[test]
fn a_peer_ip_peering_makes_even_a_same_cluster_reflector_a_client() {
    // confd (v3.30.7 client.go) fills `rr_cluster_id` only for peerings it builds from a
    // node: rr1's own `peerIP` peering to rr2 has none, so the template's
    // `ne $data.rr_cluster_id $node_cluster_id` holds and rr1 says `rr client`; rr2's
    // automatic reverse peering is built from node rr1 and carries 244.0.0.1, rr2's own
    // cluster ID, so rr2 does not.
    let yaml = REFLECTORS.replace(
        "  metadata: {name: to-rrs}\n  spec: {peerSelector: rr == 'yes'}",
        "  metadata: {name: rr1-to-rr2}\n  spec: {node: rr1, peerIP: 10.0.0.12, asNumber: 64512}",
    );
    assert_ne!(yaml, REFLECTORS);
    let files = render_text(&yaml);
    let block = |file: &str, name: &str| {
        files[file]
            .split(&format!("protocol bgp {name} "))
            .nth(1)
            .and_then(|s| s.split("\n}\n").next())
            .unwrap_or_else(|| panic!("{name} in {file}"))
            .to_string()
    };
    assert!(block("rr1", "Node_10_0_0_12").contains("  rr client;\n  rr cluster id 244.0.0.1;"));
    assert!(!block("rr2", "Node_10_0_0_11").contains("rr client"));
}

#[test]
fn restart_times_are_rendered_in_whole_seconds_where_the_templates_put_them() {
    // v3.30.7: `graceful restart time` from nodeMeshMaxRestartTime on every Mesh_
    // protocol and from a BGPPeer's maxRestartTime on its protocols; confd rounds the
    // duration to whole seconds (`math.Round`): 1m30.4s → 90, 14.5s → 15.
    let mesh = MESH.replace(
        "workloads:",
        "- apiVersion: projectcalico.org/v3\n  kind: BGPConfiguration\n  \
             metadata: {name: default}\n  spec: {nodeMeshMaxRestartTime: 1m30.4s}\nworkloads:",
    );
    let files = render_text(&mesh);
    assert_eq!(files["n1"].matches("protocol bgp Mesh_").count(), 2);
    assert_eq!(
        files["n1"].matches("  graceful restart time 90;\n").count(),
        2
    );
    let peers = REFLECTORS.replace(
        "spec: {peerSelector: rr == 'yes'}",
        "spec: {peerSelector: rr == 'yes', maxRestartTime: 14.5s}",
    );
    let files = render_text(&peers);
    check_lines(
        &files["rr1"],
        &[
            "protocol bgp Global_10_0_0_12 from bgp_template {",
            "  passive on;",
            "  graceful restart time 15;\n}",
        ],
    );
    assert!(!render_text(MESH)["n1"].contains("graceful restart time"));
}

#[test]
fn a_bgp_peer_that_duplicates_a_mesh_session_is_a_second_protocol() {
    // confd keys mesh peers by node and BGPPeers by (node, peer IP): the template
    // renders both, on n1 (its own BGPPeer) and on n2 (the automatic reverse peering);
    // n3 is not concerned.
    let yaml = MESH.replace(
        "workloads:",
        "- apiVersion: projectcalico.org/v3\n  kind: BGPPeer\n  metadata: {name: n1-n2}\n  \
             spec: {node: n1, peerIP: 10.0.0.10, asNumber: 64512}\nworkloads:",
    );
    let files = render_text(&yaml);
    for (file, peer) in [("n1", "10_0_0_10"), ("n2", "10_0_0_2")] {
        check_lines(
            &files[file],
            &[
                &format!("protocol bgp Mesh_{peer} from bgp_template {{"),
                "# ------------- Node-specific peers -------------",
                "BGPPeer n1-n2",
                &format!("protocol bgp Node_{peer} from bgp_template {{"),
            ],
        );
    }
    assert!(!files["n3"].contains("protocol bgp Node_"));
}

#[test]
fn a_tor_reflects_for_its_rack_and_speaks_ebgp_to_its_spines() {
    let yaml = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/as-per-rack-fabric.yaml"
    ))
    .expect("scenario");
    let files = render_text(&yaml);
    let tor = &files["tor-rack-1"];
    check_lines(
        tor,
        &[
            "NOT rendered by Calico",
            "router id 10.20.1.1;",
            "protocol static fabric {",
            // at the end of the run the link to spine-zone-a-1 (100.127.0.1) is cut (2m):
            // rack-2 is reached through spine-zone-a-2
            "  route 10.20.2.0/24 via 100.127.0.2;",
            "filter fabric_bgp_export {",
            "protocol bgp r1_n_1 {",
            "  local 10.20.1.1 as 65101;",
            "  neighbor 10.20.1.2 as 65101;",
            "  rr client;\n  rr cluster id 10.20.1.1;",
            "    next hop self ebgp;",
            "protocol bgp spine_zone_a_1 {",
            "  neighbor 100.127.0.1 as 65100;",
        ],
    );
    let spine_block = tor
        .split("protocol bgp spine_zone_a_1")
        .nth(1)
        .expect("block");
    assert!(!spine_block.contains("rr client") && !spine_block.contains("next hop self"));
    // the node's side: a node-specific peer to its ToR, iBGP, no reflection of its own
    check_lines(
        &files["r1-n-1"],
        &[
            "# Node-to-node mesh disabled",
            "protocol bgp Node_10_20_1_1 from bgp_template {",
            "  neighbor 10.20.1.1 as 65101;",
            "calico_export_to_bgp_peers(true);",
        ],
    );
    assert!(
        !files["r1-n-1"].contains("passive on"),
        "the ToR is not a calico node"
    );
}

/// A BGPPeer's `peerIP` may carry a port (`ip:port`, Calico's BGPPeer reference); BIRD's
/// `neighbor` statement takes it as `neighbor <ip> port <n> as <asn>` (BIRD 2 user's guide,
/// BGP protocol options). Without a port the statement names none (179).
#[test]
fn a_peer_ip_with_a_port_keeps_its_port() {
    let yaml = "
name: t
topology:
  zones:
  - name: z
    racks:
    - name: r1
      subnet: 10.0.0.0/24
      nodes: [{name: n1, ip: 10.0.0.2}, {name: n2, ip: 10.0.0.10}]
resources:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {name: pods}
  spec: {cidr: 10.244.0.0/16, blockSize: 26, ipipMode: Never}
- apiVersion: projectcalico.org/v3
  kind: BGPPeer
  metadata: {name: upstream}
  spec: {peerIP: '10.0.0.200:1179', asNumber: 65000}
- apiVersion: projectcalico.org/v3
  kind: BGPPeer
  metadata: {name: plain}
  spec: {peerIP: 10.0.0.201, asNumber: 65000}
";
    let files = render_text(yaml);
    check_lines(
        &files["n1"],
        &[
            "  neighbor 10.0.0.200 port 1179 as 65000;",
            "  neighbor 10.0.0.201 as 65000;",
        ],
    );
}

#[test]
fn without_bird_there_is_nothing_to_export() {
    let scenario = crate::scenario::load_str(
            "t.yaml",
            "name: t\nnetwork: {calicoBackend: vxlan}\ntopology:\n  zones:\n  - name: z\n    racks:\n    - name: r\n      subnet: 10.0.0.0/24\n      nodes: [{name: n1}]\n",
        )
        .expect("valid");
    let outcome = Simulation::new(&scenario).run();
    assert_eq!(
        render(&scenario, &outcome.world, &outcome.last, None),
        Err(ExportError::NoBgp)
    );
}

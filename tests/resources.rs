//! The `resources:` rules of SPEC §2.3, one test per rule, each asserting the exact field
//! path, line, column and message of what podnet reports.
//!
//! Every scenario is the same small cluster (one rack, nodes `n1` and `n2`) with the
//! `network:` and `resources:` under test; resources start on line [`FIRST`].

use podnet::scenario::kinds::ResourceSpec;
use podnet::scenario::{Diagnostic, Scenario, load_str};

/// The line of the first character of the `resources` text given to [`scenario`].
const FIRST: u32 = 11;

fn scenario(network: &str, resources: &str) -> String {
    format!(
        "name: t\n\
         topology:\n\
         \x20 zones:\n\
         \x20 - name: z\n\
         \x20   racks:\n\
         \x20   - name: r\n\
         \x20     subnet: 10.6.0.0/24\n\
         \x20     nodes: [{{name: n1}}, {{name: n2}}]\n\
         network: {network}\n\
         resources:\n\
         {resources}"
    )
}

/// One diagnostic as (error?, line, column, path, message).
type Seen = (bool, u32, u32, String, String);

fn seen(d: &Diagnostic) -> Seen {
    (
        d.is_error(),
        d.pos.line,
        d.pos.col,
        d.path.clone(),
        d.message.clone(),
    )
}

/// Every diagnostic of loading the scenario, errors and warnings, in file order.
fn diagnostics(network: &str, resources: &str) -> Vec<Seen> {
    match load_str("t.yaml", &scenario(network, resources)) {
        Ok(s) => s.warnings.iter().map(seen).collect(),
        Err(d) => d.items.iter().map(seen).collect(),
    }
}

fn calico(resources: &str) -> Vec<Seen> {
    diagnostics("{cni: calico}", resources)
}

fn spiderpool(resources: &str) -> Vec<Seen> {
    diagnostics("{cni: spiderpool}", resources)
}

fn loaded(network: &str, resources: &str) -> Scenario {
    load_str("t.yaml", &scenario(network, resources))
        .unwrap_or_else(|d| panic!("expected the scenario to load:\n{d}"))
}

fn error(line: u32, col: u32, path: &str, message: &str) -> Seen {
    (
        true,
        FIRST + line,
        col,
        path.to_string(),
        message.to_string(),
    )
}

fn warning(line: u32, col: u32, path: &str, message: &str) -> Seen {
    (
        false,
        FIRST + line,
        col,
        path.to_string(),
        message.to_string(),
    )
}

fn pool(name: &str, spec: &str) -> String {
    format!(
        "- apiVersion: projectcalico.org/v3\n  kind: IPPool\n  metadata: {{name: {name}}}\n  spec: {spec}\n"
    )
}

#[test]
fn block_size_outside_the_ipv4_range() {
    assert_eq!(
        calico(&pool("p", "{cidr: 10.0.0.0/16, blockSize: 33}")),
        vec![error(
            3,
            40,
            "resources[0].spec.blockSize",
            "33 is outside 20..32 for IPv4"
        )]
    );
}

#[test]
fn block_size_outside_the_ipv6_range() {
    assert_eq!(
        calico(&pool("p", "{cidr: 'fd00::/64', blockSize: 115}")),
        vec![error(
            3,
            40,
            "resources[0].spec.blockSize",
            "115 is outside 116..128 for IPv6"
        )]
    );
}

#[test]
fn pool_smaller_than_its_blocks() {
    assert_eq!(
        calico(&pool("p", "{cidr: 10.0.0.0/28, blockSize: 26}")),
        vec![error(
            3,
            16,
            "resources[0].spec.cidr",
            "IP pool size is too small for use with Calico IPAM. It must be equal to or greater than the block size."
        )]
    );
}

#[test]
fn overlapping_pools_are_reported_on_both() {
    let resources = pool("a", "{cidr: 10.0.0.0/16}") + &pool("b", "{cidr: 10.0.128.0/17}");
    assert_eq!(
        calico(&resources),
        vec![
            error(
                3,
                16,
                "resources[0].spec.cidr",
                "IPPool(a) CIDR overlaps with IPPool(b) CIDR 10.0.128.0/17"
            ),
            error(
                7,
                16,
                "resources[1].spec.cidr",
                "IPPool(b) CIDR overlaps with IPPool(a) CIDR 10.0.0.0/16"
            ),
        ]
    );
}

#[test]
fn ipip_on_an_ipv6_pool() {
    assert_eq!(
        calico(&pool("p", "{cidr: 'fd00::/64', ipipMode: Always}")),
        vec![error(
            3,
            39,
            "resources[0].spec.ipipMode",
            "IPIP is not supported on IPv6 pools"
        )]
    );
}

#[test]
fn ipip_and_vxlan_together() {
    assert_eq!(
        calico(&pool(
            "p",
            "{cidr: 10.0.0.0/16, ipipMode: Always, vxlanMode: CrossSubnet}"
        )),
        vec![error(
            3,
            58,
            "resources[0].spec.vxlanMode",
            "ipipMode and vxlanMode cannot both be enabled"
        )]
    );
}

#[test]
fn ipip_with_the_vxlan_backend() {
    assert_eq!(
        diagnostics(
            "{cni: calico, calicoBackend: vxlan}",
            &pool("p", "{cidr: 10.0.0.0/16, ipipMode: CrossSubnet}")
        ),
        vec![error(
            3,
            39,
            "resources[0].spec.ipipMode",
            "IPIP needs BGP, and `network.calicoBackend: vxlan` runs none; use `vxlanMode` instead (or `calicoBackend: bird`)"
        )]
    );
    // The same pool with VXLAN is fine.
    loaded(
        "{cni: calico, calicoBackend: vxlan}",
        &pool("p", "{cidr: 10.0.0.0/16, vxlanMode: CrossSubnet}"),
    );
}

/// Only `calicoctl ipam configure` refuses this; the resource is accepted (Calico's own
/// reference sample has it), so it is a warning.
#[test]
fn max_blocks_per_host_without_strict_affinity() {
    let resources = "\
- apiVersion: projectcalico.org/v3
  kind: IPAMConfiguration
  metadata: {name: default}
  spec:
    maxBlocksPerHost: 4
";
    assert_eq!(
        calico(resources),
        vec![warning(
            4,
            23,
            "resources[0].spec.maxBlocksPerHost",
            "MaxBlocksPerHost requires StrictAffinity to be enabled: `calicoctl ipam configure` \
             refuses this, but the resource is accepted as written (the block limit then also \
             stops borrowing)"
        )]
    );
}

#[test]
fn ipam_configuration_is_named_default() {
    let resources = "\
- apiVersion: crd.projectcalico.org/v1
  kind: IPAMConfig
  metadata: {name: mine}
  spec: {strictAffinity: true}
";
    assert_eq!(
        calico(resources),
        vec![error(
            2,
            20,
            "resources[0].metadata.name",
            "IPAMConfig must be named `default` (Calico reads no other), not `mine`"
        )]
    );
}

#[test]
fn a_typo_names_the_nearest_field() {
    let resources = "\
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {name: p}
  spec:
    cidr: 10.0.0.0/16
    blokSize: 24
";
    assert_eq!(
        calico(resources),
        vec![error(
            5,
            5,
            "resources[0].spec.blokSize",
            "unknown field `blokSize`; did you mean `blockSize`?"
        )]
    );
}

#[test]
fn a_removed_field_is_an_error_with_its_note() {
    let d = calico(&pool("p", "{cidr: 10.0.0.0/16, ipip: {enabled: true}}"));
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].0, d[0].1, d[0].2), (true, FIRST + 3, 29));
    assert_eq!(d[0].3, "resources[0].spec.ipip");
    assert!(d[0].4.contains("use `ipipMode"), "{}", d[0].4);
}

#[test]
fn an_unmodelled_field_warns_once() {
    let resources = "\
- apiVersion: projectcalico.org/v3
  kind: BGPPeer
  metadata: {name: a}
  spec: {peerIP: 10.6.0.1, asNumber: 65001, sourceAddress: None, password: {secretKeyRef: {name: s, key: k}}}
- apiVersion: projectcalico.org/v3
  kind: BGPPeer
  metadata: {name: b}
  spec: {peerIP: 10.6.0.2, asNumber: 65001, sourceAddress: None}
";
    assert_eq!(
        calico(resources),
        vec![
            warning(
                3,
                45,
                "resources[0].spec.sourceAddress",
                "podnet does not model `spec.sourceAddress`; accepted and ignored (reported once for every BGPPeer)"
            ),
            warning(
                3,
                66,
                "resources[0].spec.password",
                "podnet does not model `spec.password`; accepted and ignored (reported once for every BGPPeer)"
            ),
        ]
    );
}

#[test]
fn server_populated_metadata_and_status_are_silent() {
    let resources = "\
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata:
    name: p
    uid: e3f30554-14cb-4f44-b49d-390ddf4148c0
    resourceVersion: \"611611\"
    creationTimestamp: \"2023-06-03T14:01:55Z\"
    managedFields:
    - {manager: kubectl, operation: Update, fieldsV1: {f:spec: {f:cidr: {}}}}
  spec: {cidr: 10.0.0.0/16}
  status: {anything: [1, 2]}
";
    assert_eq!(calico(resources), vec![]);
}

#[test]
fn an_unmodelled_kind_warns_once() {
    let filter = |name: &str| {
        format!(
            "- apiVersion: projectcalico.org/v3\n  kind: BGPFilter\n  metadata: {{name: {name}}}\n  spec: {{exportV4: [{{action: Accept}}]}}\n"
        )
    };
    let s = loaded("{cni: calico}", &(filter("f1") + &filter("f2")));
    assert_eq!(
        s.warnings.iter().map(seen).collect::<Vec<_>>(),
        vec![warning(
            1,
            9,
            "resources[0].kind",
            "podnet does not model `BGPFilter` resources; accepted and ignored (reported once for every `BGPFilter`)"
        )]
    );
    assert_eq!(
        s.specs,
        vec![Some(ResourceSpec::Ignored), Some(ResourceSpec::Ignored)]
    );
}

#[test]
fn an_invented_kind_is_an_error() {
    let resources = "\
- apiVersion: projectcalico.org/v3
  kind: IPPol
  metadata: {name: p}
";
    assert_eq!(
        calico(resources),
        vec![error(
            1,
            9,
            "resources[0].kind",
            "`projectcalico.org/v3` has no kind `IPPol`; did you mean `IPPool`?"
        )]
    );
    let node_in_crd_group = "\
- apiVersion: crd.projectcalico.org/v1
  kind: Node
  metadata: {name: n1}
";
    assert_eq!(
        calico(node_in_crd_group),
        vec![error(
            1,
            9,
            "resources[0].kind",
            "`crd.projectcalico.org/v1` has no kind `Node`; `Node` is served by `projectcalico.org/v3`, not by `crd.projectcalico.org/v1`"
        )]
    );
}

/// Issue #12, for the policy groups podnet now reads: `networking.k8s.io/v1` and
/// `policy.networking.k8s.io` serve a fixed set of kinds (the Kubernetes API reference,
/// network-policy-api v0.1.8/v0.2.0), so a misspelled one is refused with the nearest, and a
/// real kind podnet does not model (Ingress) stays a warning.
#[test]
fn a_misspelled_policy_kind_is_an_error() {
    let typos = "\
- apiVersion: networking.k8s.io/v1
  kind: NetworkPolicyy
  metadata: {name: p}
- apiVersion: policy.networking.k8s.io/v1alpha1
  kind: AdminNetworkPolicies
  metadata: {name: a}
";
    assert_eq!(
        calico(typos),
        vec![
            error(
                1,
                9,
                "resources[0].kind",
                "`networking.k8s.io/v1` has no kind `NetworkPolicyy`; did you mean `NetworkPolicy`?"
            ),
            error(
                4,
                9,
                "resources[1].kind",
                "`policy.networking.k8s.io/v1alpha1` has no kind `AdminNetworkPolicies`; did you mean `AdminNetworkPolicy`?"
            ),
        ]
    );
}

/// Issue #12: kubectl refuses `apps/v1` `Deploymnet` (the group serves no such kind); podnet
/// used to warn and drop the workload. The core group and `apps/v1` are groups podnet models,
/// so a kind they do not serve is an error with the nearest real kind, and a kind in the
/// other of the two groups is named; a real kind podnet does not model (ConfigMap, Secret,
/// ReplicaSet) is accepted with one warning per kind, at its `kind` line.
#[test]
fn a_misspelled_core_or_apps_kind_is_an_error_and_a_real_one_a_warning() {
    let typos = "\
- apiVersion: apps/v1
  kind: Deploymnet
  metadata: {name: web}
- apiVersion: v1
  kind: ConfigMapp
  metadata: {name: c}
- apiVersion: v1
  kind: StatefulSet
  metadata: {name: db}
";
    assert_eq!(
        calico(typos),
        vec![
            error(
                1,
                9,
                "resources[0].kind",
                "`apps/v1` has no kind `Deploymnet`; did you mean `Deployment`?"
            ),
            error(
                4,
                9,
                "resources[1].kind",
                "`v1` has no kind `ConfigMapp`; did you mean `ConfigMap`?"
            ),
            error(
                7,
                9,
                "resources[2].kind",
                "`v1` has no kind `StatefulSet`; `StatefulSet` is served by `apps/v1`, not by `v1`"
            ),
        ]
    );
    let real = "\
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: c}
  data: {a: b}
- apiVersion: v1
  kind: Secret
  metadata: {name: s}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: d}
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata: {name: r}
";
    let s = loaded("{cni: calico}", real);
    let once = |line, kind: &str, i| {
        warning(
            line,
            9,
            &format!("resources[{i}].kind"),
            &format!(
                "podnet does not model `{kind}` resources; accepted and ignored (reported once for every `{kind}`)"
            ),
        )
    };
    assert_eq!(
        s.warnings.iter().map(seen).collect::<Vec<_>>(),
        vec![
            once(1, "ConfigMap", 0),
            once(5, "Secret", 1),
            once(11, "ReplicaSet", 3)
        ]
    );
    assert_eq!(s.specs, vec![Some(ResourceSpec::Ignored); 4]);
}

#[test]
fn another_api_group_is_ignored_with_a_warning() {
    // `batch/v1` is a group podnet models nothing of (the policy groups are known groups now).
    let resources = "\
- apiVersion: batch/v1
  kind: Job
  metadata: {name: web}
  spec: {template: {}}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web}
  spec: {replicas: 2}
";
    assert_eq!(
        calico(resources),
        vec![warning(
            0,
            15,
            "resources[0].apiVersion",
            "podnet does not model `batch/v1` `Job`; accepted and ignored"
        )]
    );
}

#[test]
fn a_bad_selector_points_at_the_character() {
    // The value starts at column 19; the selector parser reports a byte offset inside it.
    let resources = "\
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {name: p}
  spec:
    cidr: 10.0.0.0/16
    nodeSelector: rack == 'a1' &&
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {name: q}
  spec:
    cidr: 10.1.0.0/16
    nodeSelector: rack = 'a1'
";
    let d = calico(resources);
    let at: Vec<(bool, u32, u32, &str)> = d.iter().map(|x| (x.0, x.1, x.2, x.3.as_str())).collect();
    assert_eq!(
        at,
        vec![
            // The expression ends after `&&` (offset 15).
            (true, FIRST + 5, 34, "resources[0].spec.nodeSelector"),
            // `=` at offset 5.
            (true, FIRST + 11, 24, "resources[1].spec.nodeSelector"),
        ]
    );
    assert!(
        d[0].4.starts_with("invalid selector `rack == 'a1' &&`: "),
        "{}",
        d[0].4
    );
}

#[test]
fn a_boolean_label_value_is_a_string_with_a_warning() {
    let resources = "\
- apiVersion: projectcalico.org/v3
  kind: Node
  metadata:
    name: n1
    labels:
      routeReflector: true
  spec:
    bgp: {ipv4Address: 10.6.0.2/24, routeReflectorClusterID: 244.0.0.1}
";
    let s = loaded("{cni: calico}", resources);
    assert_eq!(
        s.warnings.iter().map(seen).collect::<Vec<_>>(),
        vec![warning(
            5,
            23,
            "resources[0].metadata.labels.routeReflector",
            "value written as a boolean; taken as the string \"true\" (Kubernetes label and annotation values are strings)"
        )]
    );
    let Some(Some(ResourceSpec::CalicoNode(node))) = s.specs.first() else {
        panic!("{:?}", s.specs);
    };
    assert_eq!(node.labels["routeReflector"], "true");
    assert_eq!(
        node.ipv4_address.map(|a| a.to_string()),
        Some("10.6.0.2/24".to_string())
    );
    assert_eq!(
        node.route_reflector_cluster_id.map(|a| a.to_string()),
        Some("244.0.0.1".to_string())
    );
}

#[test]
fn a_node_the_topology_lacks_is_a_warning() {
    let resources = "\
- apiVersion: projectcalico.org/v3
  kind: BGPPeer
  metadata: {name: p}
  spec: {node: n9, peerIP: '10.6.0.1:179', asNumber: '1.10'}
";
    let s = loaded("{cni: calico}", resources);
    assert_eq!(
        s.warnings.iter().map(seen).collect::<Vec<_>>(),
        vec![warning(
            3,
            16,
            "resources[0].spec.node",
            "the topology has no node `n9`; this setting applies to no node"
        )]
    );
    let Some(Some(ResourceSpec::BgpPeer(peer))) = s.specs.first() else {
        panic!("{:?}", s.specs);
    };
    assert_eq!(peer.peer_ip.map(|a| a.to_string()), Some("10.6.0.1".into()));
    assert_eq!(peer.peer_port, Some(179));
    assert_eq!(peer.as_number, Some(65536 + 10));
}

#[test]
fn bad_as_numbers_and_peer_addresses() {
    let resources = "\
- apiVersion: projectcalico.org/v3
  kind: BGPPeer
  metadata: {name: p}
  spec:
    peerIP: 10.6.0.1:x
    asNumber: 0
- apiVersion: projectcalico.org/v3
  kind: BGPConfiguration
  metadata: {name: default}
  spec: {asNumber: 1.10}
";
    let d = calico(resources);
    let at: Vec<(u32, u32, &str)> = d.iter().map(|x| (x.1, x.2, x.3.as_str())).collect();
    assert_eq!(
        at,
        vec![
            (FIRST + 4, 13, "resources[0].spec.peerIP"),
            (FIRST + 5, 15, "resources[0].spec.asNumber"),
            (FIRST + 9, 20, "resources[1].spec.asNumber"),
        ]
    );
    assert!(d[2].4.contains("in quotes"), "{}", d[2].4);
}

#[test]
fn calico_resources_with_spiderpool_are_unused() {
    let d = spiderpool(&pool("p", "{cidr: 10.0.0.0/16}"));
    assert_eq!(
        d,
        vec![warning(
            1,
            9,
            "resources[0].kind",
            "IPPool `p` is unused: `network.cni` is spiderpool, whose IPAM does not read it"
        )]
    );
}

fn spider(name: &str, spec: &str) -> String {
    format!(
        "- apiVersion: spiderpool.spidernet.io/v2beta1\n  kind: SpiderIPPool\n  metadata: {{name: {name}}}\n  spec:\n{spec}"
    )
}

#[test]
fn spider_gateway_inside_ips_must_be_excluded() {
    let resources = spider(
        "p",
        "    subnet: 10.6.0.0/24\n    ips:\n    - 10.6.0.10-10.6.0.20\n    - 10.6.0.1-10.6.0.5\n    gateway: 10.6.0.1\n",
    );
    assert_eq!(
        spiderpool(&resources),
        vec![error(
            7,
            7,
            "resources[0].spec.ips[1]",
            "10.6.0.1-10.6.0.5: conflicts with 'spec.gateway' 10.6.0.1, add the gateway IP address to 'spec.excludeIPs' or remove it from 'spec.ips'"
        )]
    );
}

#[test]
fn spider_ips_outside_the_subnet() {
    let resources = spider(
        "p",
        "    subnet: 10.6.0.0/24\n    ips: [10.6.0.10, 10.7.0.10]\n",
    );
    assert_eq!(
        spiderpool(&resources),
        vec![error(
            5,
            22,
            "resources[0].spec.ips[1]",
            "10.7.0.10: not pertains to the 'spec.subnet' 10.6.0.0/24 of IPPool"
        )]
    );
}

#[test]
fn spider_gateway_outside_the_subnet_and_at_the_network_address() {
    let outside = spider(
        "p",
        "    subnet: 10.6.0.0/24\n    ips: [10.6.0.10]\n    gateway: 10.7.0.1\n",
    );
    assert_eq!(
        spiderpool(&outside),
        vec![error(
            6,
            14,
            "resources[0].spec.gateway",
            "10.7.0.1: not pertains to the 'spec.subnet' 10.6.0.0/24 of IPPool"
        )]
    );
    let network = spider(
        "p",
        "    subnet: 10.6.0.0/24\n    ips: [10.6.0.10]\n    gateway: 10.6.0.0\n",
    );
    assert_eq!(
        spiderpool(&network),
        vec![warning(
            6,
            14,
            "resources[0].spec.gateway",
            "10.6.0.0 is the network address of 'spec.subnet' 10.6.0.0/24; hosts rarely answer there"
        )]
    );
}

#[test]
fn overlapping_spider_pools() {
    let resources = spider("a", "    subnet: 10.6.0.0/24\n    ips: [10.6.0.10]\n")
        + &spider("b", "    subnet: 10.6.0.0/25\n    ips: [10.6.0.20]\n");
    assert_eq!(
        spiderpool(&resources),
        vec![error(
            10,
            13,
            "resources[1].spec.subnet",
            "overlap with IPPool a which 'spec.subnet' is 10.6.0.0/24"
        )]
    );
}

#[test]
fn a_bad_range_item_is_located() {
    let resources = spider(
        "p",
        "    subnet: 10.6.0.0/24\n    ips:\n    - 10.6.0.10\n    - 10.6.0.20-10.6.0.11\n",
    );
    assert_eq!(
        spiderpool(&resources),
        vec![error(
            7,
            7,
            "resources[0].spec.ips[1]",
            "invalid IP range format in IPv4 '10.6.0.20-10.6.0.11': the range must be ordered"
        )]
    );
}

#[test]
fn label_selector_problems_point_at_the_expression() {
    let resources = spider(
        "p",
        "    subnet: 10.6.0.0/24\n    ips: [10.6.0.10]\n    nodeAffinity:\n      matchExpressions:\n      - {key: rack, operator: In}\n",
    );
    assert_eq!(
        spiderpool(&resources),
        vec![error(
            8,
            9,
            "resources[0].spec.nodeAffinity.matchExpressions[0]",
            "values: must be specified when `operator` is 'In' or 'NotIn'"
        )]
    );
    let misspelt = spider(
        "p",
        "    subnet: 10.6.0.0/24\n    nodeAffinity:\n      matchExpressions:\n      - {key: rack, operator: Exist}\n",
    );
    assert_eq!(
        spiderpool(&misspelt),
        vec![error(
            7,
            31,
            "resources[0].spec.nodeAffinity.matchExpressions[0].operator",
            "`Exist` is not one of: In, NotIn, Exists, DoesNotExist; did you mean `Exists`?"
        )]
    );
}

#[test]
fn spider_node_names_the_topology_lacks() {
    let resources = spider("p", "    subnet: 10.6.0.0/24\n    nodeName: [n1, n7]\n");
    assert_eq!(
        spiderpool(&resources),
        vec![warning(
            5,
            20,
            "resources[0].spec.nodeName[1]",
            "the topology has no node `n7`; this setting applies to no node"
        )]
    );
}

#[test]
fn null_spec_and_empty_service_entries() {
    let resources = "\
- apiVersion: projectcalico.org/v3
  kind: BGPConfiguration
  metadata: {name: default}
  spec:
- apiVersion: projectcalico.org/v3
  kind: BGPConfiguration
  metadata: {name: node.n1}
  spec:
    serviceClusterIPs: [{cidr: 10.96.0.0/12}, {}, {cidr: 'fd00:96::/112'}]
- apiVersion: projectcalico.org/v3
  kind: IPReservation
  metadata: {name: r}
  spec: {reservedCIDRs: [192.168.2.3, 10.0.2.0/24, 'cafe:f00d::1']}
";
    let s = loaded("{cni: calico}", resources);
    let [
        Some(ResourceSpec::BgpConfiguration(a)),
        Some(ResourceSpec::BgpConfiguration(b)),
        Some(ResourceSpec::IpReservation(r)),
    ] = s.specs.as_slice()
    else {
        panic!("{:?}", s.specs);
    };
    assert_eq!((a.as_number, a.service_cluster_ips.len()), (None, 0));
    let services: Vec<String> = b
        .service_cluster_ips
        .iter()
        .map(|c| c.to_string())
        .collect();
    assert_eq!(services, vec!["10.96.0.0/12", "fd00:96::/112"]);
    let reserved: Vec<String> = r.reserved_cidrs.iter().map(|c| c.to_string()).collect();
    assert_eq!(
        reserved,
        vec!["192.168.2.3/32", "10.0.2.0/24", "cafe:f00d::1/128"]
    );
}

#[test]
fn pool_fields_decode_with_calicos_defaults() {
    let s = loaded(
        "{cni: calico}",
        &pool(
            "p",
            "{cidr: 10.0.0.0/16, allowedUses: [LoadBalancer], assignmentMode: Manual, natOutgoing: true}",
        ),
    );
    let Some(Some(ResourceSpec::IpPool(p))) = s.specs.first() else {
        panic!("{:?}", s.specs);
    };
    assert_eq!(p.block_size, 26);
    assert!(p.nat_outgoing && !p.disabled);
    assert_eq!(format!("{:?}", p.allowed_uses), "[LoadBalancer]");
    assert_eq!(format!("{:?}", p.assignment_mode), "Manual");
}

#[test]
fn a_wrong_word_suggests_the_right_one() {
    assert_eq!(
        calico(&pool("p", "{cidr: 10.0.0.0/16, ipipMode: always}")),
        vec![error(
            3,
            39,
            "resources[0].spec.ipipMode",
            "`always` is not one of: Never, Always, CrossSubnet; did you mean `Always`?"
        )]
    );
}

#[test]
fn manifest_files_are_located_in_themselves() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kinds");
    let d = match podnet::scenario::load(&dir.join("scenario.yaml")) {
        Ok(_) => panic!("the fixture has errors"),
        Err(d) => d,
    };
    let shown: Vec<(String, u32, u32, String, String)> = d
        .items
        .iter()
        .map(|x| {
            let file = d.sources.name(x.pos.file);
            let file = file.rsplit('/').next().unwrap_or_default().to_string();
            (
                file,
                x.pos.line,
                x.pos.col,
                x.path.clone(),
                x.message.clone(),
            )
        })
        .collect();
    let at = |line, col, path: &str, message: &str| {
        (
            "pools.yaml".to_string(),
            line,
            col,
            path.to_string(),
            message.to_string(),
        )
    };
    assert_eq!(
        shown,
        vec![
            at(
                9,
                11,
                "items[0].spec.cidr",
                "IPPool(good) CIDR overlaps with IPPool(overlap) CIDR 10.10.128.0/17"
            ),
            at(
                16,
                5,
                "items[1].spec.blokSize",
                "unknown field `blokSize`; did you mean `blockSize`?"
            ),
            at(
                23,
                9,
                "spec.cidr",
                "IPPool(overlap) CIDR overlaps with IPPool(good) CIDR 10.10.0.0/16"
            ),
        ]
    );
}

/// Resources applied by events are checked alone: whether they overlap depends on what
/// exists when they are applied, which only the simulation knows.
#[test]
fn applied_resources_are_checked_alone() {
    let text = scenario("{cni: calico}", &pool("a", "{cidr: 10.0.0.0/16}"))
        + "events:\n\
           - {at: 1m, delete: {kind: IPPool, name: a}}\n\
           - {at: 2m, apply: {apiVersion: projectcalico.org/v3, kind: IPPool, metadata: {name: b}, spec: {cidr: 10.0.0.0/17}}}\n\
           - {at: 3m, apply: {apiVersion: projectcalico.org/v3, kind: IPPool, metadata: {name: c}, spec: {cidr: 10.9.0.0/16, blockSize: 8}}}\n";
    let d = match load_str("t.yaml", &text) {
        Ok(_) => panic!("pool c is wrong"),
        Err(d) => d,
    };
    let shown: Vec<Seen> = d.items.iter().map(seen).collect();
    assert_eq!(
        shown,
        vec![error(
            7,
            126,
            "events[2].apply.spec.blockSize",
            "8 is outside 20..32 for IPv4"
        )]
    );
}

#[test]
fn bgp_peer_fields_that_exclude_each_other() {
    let resources = "\
- apiVersion: projectcalico.org/v3
  kind: BGPPeer
  metadata: {name: p}
  spec:
    node: n1
    nodeSelector: all()
    peerIP: 10.6.0.1
    asNumber: 65001
    peerSelector: has(rr)
";
    assert_eq!(
        calico(resources),
        vec![
            error(
                4,
                11,
                "resources[0].spec.node",
                "`node` must be empty when `nodeSelector` is specified"
            ),
            error(
                6,
                13,
                "resources[0].spec.peerIP",
                "`peerIP` must be empty when `peerSelector` is specified"
            ),
            error(
                7,
                15,
                "resources[0].spec.asNumber",
                "`asNumber` must be empty when `peerSelector` is specified"
            ),
        ]
    );
}

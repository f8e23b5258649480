//! Raw scenario types: a faithful mirror of the YAML (SPEC §2), nothing resolved yet.
//!
//! Every field is optional and located; defaults, required fields and cross-references are
//! the business of `build`. The JSON Schema printed by `podnet schema` is derived from these
//! types, so the schema and the decoder cannot disagree about which keys exist.

use std::net::IpAddr;

use schemars::{JsonSchema, Schema, SchemaGenerator};

use super::decode::{AnyNode, Cidr, Cx, Decode, LabelMap, Loc, StringMap, raw_struct};
use super::yaml::{Value, YamlNode};
use crate::model::expect::{
    Count, Encapsulation, PodSet, PortRef, ProbeProtocol, RouteTable, Verdict,
};
use crate::model::network::{
    CalicoBackend, CalicoProfile, Cni, PolicyMode, TimerProfile, WindowsHns, WindowsReservation,
};
use crate::model::time::SimDuration;
use crate::model::topology::Os;
use crate::model::workload::{PodStatus, PortProtocol, WorkloadKind};

raw_struct! {
    /// A podnet scenario: the cluster, its resources and workloads, the events to play and
    /// the expectations to check.
    pub struct RawScenario {
        /// Names the output folder: lowercase letters, digits and `-`.
        name: String = "name",
        description: String = "description",
        /// Seed of every random stream (default 1).
        seed: u64 = "seed",
        /// Stop at this simulated time (default: when no event is left, at most 24h).
        until: SimDuration = "until",
        profile: RawProfile = "profile",
        topology: RawTopology = "topology",
        network: RawNetwork = "network",
        /// Kubernetes, Calico and Spiderpool manifests, as `kubectl apply` takes them.
        resources: Vec<Loc<AnyNode>> = "resources",
        workloads: Vec<Loc<RawWorkload>> = "workloads",
        events: Vec<Loc<RawEvent>> = "events",
        expect: Vec<Loc<RawExpectation>> = "expect",
        /// Files or folders of real manifests, relative to this file.
        manifests: Vec<Loc<String>> = "manifests",
        /// Scenario fragments whose resources, workloads, events and expectations are appended.
        include: Vec<Loc<String>> = "include",
        /// Places outside the cluster attached to a router of the fabric (SPEC §7).
        externals: Vec<Loc<RawExternal>> = "externals",
    }
}

raw_struct! {
    /// `{name, cidr, attach}`: a place outside the cluster.
    pub struct RawExternal {
        name: String = "name",
        cidr: Cidr = "cidr",
        /// The router it is attached to: `core`, a spine or a ToR (`tor-RACK`).
        attach: String = "attach",
    }
}

raw_struct! {
    /// A fragment pulled in by `include:`.
    pub struct RawFragment {
        resources: Vec<Loc<AnyNode>> = "resources",
        workloads: Vec<Loc<RawWorkload>> = "workloads",
        events: Vec<Loc<RawEvent>> = "events",
        expect: Vec<Loc<RawExpectation>> = "expect",
        include: Vec<Loc<String>> = "include",
    }
}

raw_struct! {
    pub struct RawProfile {
        calico: CalicoProfile = "calico",
        bgp_timers: TimerProfile = "bgpTimers",
    }
}

raw_struct! {
    pub struct RawTopology {
        fabric: RawFabric = "fabric",
        zones: Vec<Loc<RawZone>> = "zones",
    }
}

raw_struct! {
    pub struct RawFabric {
        /// Every router is a BGP speaker (RFC 7938); otherwise routers route node subnets only.
        bgp: bool = "bgp",
        spines_per_zone: u32 = "spinesPerZone",
        latency: RawLatency = "latency",
        /// Fabric routers forward over every equal-cost BGP path (BIRD `merge paths on`).
        ecmp: bool = "ecmp",
    }
}

raw_struct! {
    /// One-way latency per link kind.
    pub struct RawLatency {
        access: SimDuration = "access",
        fabric: SimDuration = "fabric",
        inter_zone: SimDuration = "interZone",
    }
}

raw_struct! {
    pub struct RawZone {
        name: String = "name",
        labels: LabelMap = "labels",
        as_number: u32 = "asNumber",
        racks: Vec<Loc<RawRack>> = "racks",
    }
}

raw_struct! {
    pub struct RawRack {
        name: String = "name",
        /// The rack's L2 segment.
        subnet: Cidr = "subnet",
        /// The ToR's address on the segment (default: the subnet's first host address).
        gateway: IpAddr = "gateway",
        as_number: u32 = "asNumber",
        labels: LabelMap = "labels",
        bgp: RawNodeBgp = "bgp",
        nodes: Vec<Loc<RawNode>> = "nodes",
    }
}

raw_struct! {
    /// A node, or with `namePrefix` and `count` a generator of nodes.
    pub struct RawNode {
        name: String = "name",
        name_prefix: String = "namePrefix",
        count: u32 = "count",
        ip: IpAddr = "ip",
        os: Os = "os",
        max_pods: u32 = "maxPods",
        labels: LabelMap = "labels",
        bgp: RawNodeBgp = "bgp",
    }
}

raw_struct! {
    /// Calico Node `spec.bgp`.
    pub struct RawNodeBgp {
        as_number: u32 = "asNumber",
        route_reflector_cluster_id: IpAddr = "routeReflectorClusterID",
    }
}

raw_struct! {
    pub struct RawNetwork {
        cni: Cni = "cni",
        calico_backend: CalicoBackend = "calicoBackend",
        datastore_delay: SimDuration = "datastoreDelay",
        windows_use_single_network: bool = "windowsUseSingleNetwork",
        /// `single-network` | `network-per-block` | `multi-subnet` (HNS layout of Windows nodes).
        windows_hns: WindowsHns = "windowsHns",
        /// `per-block` (Calico's four per block, the default) | `per-host` | `per-pool` (the
        /// micro-pool proposal; needs `windowsHns: multi-subnet`).
        windows_reservation: WindowsReservation = "windowsReservation",
        /// Addresses reserved once per Windows host (`per-host`) or per pool (`per-pool`).
        windows_reserved_addresses: u32 = "windowsReservedAddresses",
        host_mtu: u32 = "hostMtu",
        bgp: RawNetworkBgp = "bgp",
        /// `enforce` (the default when any policy exists) or `ignore` (SPEC §7).
        policy: PolicyMode = "policy",
        /// Where Service cluster IPs are allocated from (default 10.96.0.0/12, SPEC §7).
        service_cluster_ip_range: Cidr = "serviceClusterIPRange",
    }
}

raw_struct! {
    pub struct RawNetworkBgp {
        processing_delay: SimDuration = "processingDelay",
        per_prefix_delay: SimDuration = "perPrefixDelay",
        bfd: RawBfd = "bfd",
    }
}

/// `bfd: true`, `bfd: false` or `bfd: {interval, multiplier}`.
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[serde(untagged)]
pub enum RawBfd {
    Enabled(bool),
    Timers(RawBfdTimers),
}

raw_struct! {
    pub struct RawBfdTimers {
        interval: SimDuration = "interval",
        multiplier: u32 = "multiplier",
    }
}

impl Decode for RawBfd {
    fn decode(node: &YamlNode, cx: &mut Cx) -> Option<RawBfd> {
        match node.value {
            Value::Bool(b) => Some(RawBfd::Enabled(b)),
            Value::Map(_) => RawBfdTimers::decode(node, cx).map(RawBfd::Timers),
            _ => {
                cx.error(
                    node.pos,
                    format!(
                        "expected true, false or {{interval, multiplier}}, found {}",
                        node.value.kind_name()
                    ),
                );
                None
            }
        }
    }
}

raw_struct! {
    pub struct RawWorkload {
        name: String = "name",
        namespace: String = "namespace",
        kind: WorkloadKind = "kind",
        replicas: u32 = "replicas",
        labels: LabelMap = "labels",
        annotations: StringMap = "annotations",
        node_selector: LabelMap = "nodeSelector",
        /// Container ports, for named ports in policies (SPEC §7).
        ports: Vec<Loc<RawContainerPort>> = "ports",
        service_account_name: String = "serviceAccountName",
        host_network: bool = "hostNetwork",
    }
}

raw_struct! {
    /// `{name: http, containerPort: 8080, protocol: TCP}`.
    pub struct RawContainerPort {
        name: String = "name",
        container_port: u32 = "containerPort",
        protocol: PortProtocol = "protocol",
    }
}

raw_struct! {
    /// Something that happens at `at:`; exactly one action key.
    pub struct RawEvent {
        at: SimDuration = "at",
        scale: RawScale = "scale",
        /// Crash a node: its pods stop, peers drop its sessions after hold time (or BFD).
        node_down: String = "nodeDown",
        node_up: String = "nodeUp",
        /// The node's BGP daemon restarts; its host keeps forwarding.
        restart_bgp: RawRestartBgp = "restartBgp",
        delete_node: String = "deleteNode",
        add_nodes: RawAddNodes = "addNodes",
        /// Two device names: the ends of the link.
        link_down: Vec<Loc<String>> = "linkDown",
        link_up: Vec<Loc<String>> = "linkUp",
        delete_pods: RawDeletePods = "deletePods",
        apply: AnyNode = "apply",
        delete: RawDeleteRef = "delete",
    }
}

impl RawEvent {
    /// The action keys, for "exactly one action" checks.
    pub const ACTIONS: &'static [&'static str] = &[
        "scale",
        "nodeDown",
        "nodeUp",
        "restartBgp",
        "deleteNode",
        "addNodes",
        "linkDown",
        "linkUp",
        "deletePods",
        "apply",
        "delete",
    ];
}

raw_struct! {
    /// `{node, downFor}`.
    pub struct RawRestartBgp {
        node: String = "node",
        down_for: SimDuration = "downFor",
    }
}

raw_struct! {
    pub struct RawScale {
        workload: String = "workload",
        namespace: String = "namespace",
        replicas: u32 = "replicas",
    }
}

raw_struct! {
    pub struct RawAddNodes {
        rack: String = "rack",
        name_prefix: String = "namePrefix",
        count: u32 = "count",
        os: Os = "os",
        max_pods: u32 = "maxPods",
        labels: LabelMap = "labels",
        bgp: RawNodeBgp = "bgp",
    }
}

raw_struct! {
    /// `{workload, count}` or `{pod}`.
    pub struct RawDeletePods {
        workload: String = "workload",
        namespace: String = "namespace",
        count: u32 = "count",
        pod: String = "pod",
    }
}

raw_struct! {
    pub struct RawDeleteRef {
        kind: String = "kind",
        name: String = "name",
    }
}

impl Decode for Count {
    fn decode(node: &YamlNode, cx: &mut Cx) -> Option<Count> {
        match &node.value {
            Value::Int(_) => u64::decode(node, cx).map(Count::Exactly),
            Value::Map(_) => {
                let entries = cx.mapping(node, &["atLeast", "atMost"])?;
                let at_least = cx.field::<u64>(entries, "atLeast").map(|l| l.value);
                let at_most = cx.field::<u64>(entries, "atMost").map(|l| l.value);
                if at_least.is_none() && at_most.is_none() {
                    cx.error(node.pos, "give `atLeast`, `atMost` or both");
                    return None;
                }
                if let (Some(lo), Some(hi)) = (at_least, at_most)
                    && lo > hi
                {
                    cx.error(node.pos, format!("atLeast {lo} is more than atMost {hi}"));
                    return None;
                }
                Some(Count::Bounded { at_least, at_most })
            }
            _ => {
                cx.error(
                    node.pos,
                    format!(
                        "expected a number or {{atLeast: N}} / {{atMost: N}}, found {}",
                        node.value.kind_name()
                    ),
                );
                None
            }
        }
    }
}

impl Decode for PodSet {
    fn decode(node: &YamlNode, cx: &mut Cx) -> Option<PodSet> {
        match &node.value {
            Value::Str(s) if s == "all" => Some(PodSet::All),
            Value::Str(s) => Some(PodSet::Pod(s.clone())),
            Value::Map(_) => {
                let entries = cx.mapping(
                    node,
                    &["workload", "namespace", "node", "service", "external"],
                )?;
                let workload = cx.field::<String>(entries, "workload").map(|l| l.value);
                let namespace = cx.field::<String>(entries, "namespace").map(|l| l.value);
                let on_node = cx.field::<String>(entries, "node").map(|l| l.value);
                let service = cx.field::<String>(entries, "service").map(|l| l.value);
                let external = cx.field::<String>(entries, "external").map(|l| l.value);
                match (workload, namespace, on_node, service, external) {
                    (Some(name), namespace, None, None, None) => {
                        Some(PodSet::Workload { name, namespace })
                    }
                    (None, Some(ns), None, None, None) => Some(PodSet::Namespace(ns)),
                    (None, None, Some(n), None, None) => Some(PodSet::Node(n)),
                    (None, None, None, None, Some(x)) => Some(PodSet::External(x)),
                    (None, None, None, Some(s), None) => {
                        let (namespace, name) = s.split_once('/').unwrap_or(("default", &s));
                        Some(PodSet::Service {
                            namespace: namespace.to_string(),
                            name: name.to_string(),
                        })
                    }
                    _ => {
                        cx.error(
                            node.pos,
                            "give one of `workload` (optionally with `namespace`), \
                             `namespace`, `node`, `service` or `external`",
                        );
                        None
                    }
                }
            }
            _ => {
                cx.error(
                    node.pos,
                    format!(
                        "expected `all`, a pod name or {{workload|namespace|node: ...}}, found {}",
                        node.value.kind_name()
                    ),
                );
                None
            }
        }
    }
}

impl JsonSchema for PodSet {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PodSet".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "`all`, a pod (`name` or `namespace/name`), or {workload|namespace|node}.",
            "oneOf": [
                {"type": "string"},
                {"type": "object", "additionalProperties": false,
                 "properties": {"workload": {"type": "string"}, "namespace": {"type": "string"},
                                "node": {"type": "string"},
                                "service": {"type": "string", "description": "`namespace/name` of a Service (only as `to`)"},
                                "external": {"type": "string", "description": "the name of an `externals:` entry (as `from` or `to`)"}}}
            ]
        })
    }
}

raw_struct! {
    /// One expectation: exactly one kind key, with an optional `name`, `at` and `when`.
    pub struct RawExpectation {
        name: String = "name",
        at: SimDuration = "at",
        /// Applies only where these fields hold these values (`{network.blockSize: 26}`).
        when: RawWhen = "when",
        pod: RawExpectPod = "pod",
        pods: RawExpectPods = "pods",
        pool: RawExpectPool = "pool",
        node: RawExpectNode = "node",
        block: RawExpectBlock = "block",
        route: RawExpectRoute = "route",
        reachable: RawExpectPair = "reachable",
        unreachable: RawExpectPair = "unreachable",
        isolated: RawExpectPair = "isolated",
        policy: RawExpectPolicy = "policy",
        path: RawExpectPath = "path",
        bgp: RawExpectBgp = "bgp",
        allocation_failures: Count = "allocationFailures",
    }
}

impl RawExpectation {
    pub const KINDS: &'static [&'static str] = &[
        "pod",
        "pods",
        "pool",
        "node",
        "block",
        "route",
        "reachable",
        "unreachable",
        "isolated",
        "policy",
        "path",
        "bgp",
        "allocationFailures",
    ];
}

raw_struct! {
    pub struct RawExpectPod {
        name: String = "name",
        ip: IpAddr = "ip",
        in_cidr: Cidr = "inCidr",
        node: String = "node",
        pool: String = "pool",
        borrowed: bool = "borrowed",
        status: PodStatus = "status",
    }
}

raw_struct! {
    pub struct RawExpectPods {
        of: PodSet = "of",
        running: Count = "running",
        pending: Count = "pending",
        unknown: Count = "unknown",
    }
}

raw_struct! {
    pub struct RawExpectPool {
        name: String = "name",
        allocated: Count = "allocated",
        blocks: Count = "blocks",
        free: Count = "free",
        reserved: Count = "reserved",
    }
}

raw_struct! {
    pub struct RawExpectNode {
        /// A node name, or `"*"` for every node.
        name: String = "name",
        blocks: Count = "blocks",
        borrowed_ips: Count = "borrowedIps",
        rib_routes: Count = "ribRoutes",
        fib_routes: Count = "fibRoutes",
    }
}

raw_struct! {
    pub struct RawExpectBlock {
        cidr: Cidr = "cidr",
        /// A node name, or `none` for a block without affinity.
        affinity: String = "affinity",
        allocated: Count = "allocated",
    }
}

raw_struct! {
    pub struct RawExpectRoute {
        node: String = "node",
        prefix: Cidr = "prefix",
        next_hop: String = "nextHop",
        present: bool = "present",
        table: RouteTable = "table",
    }
}

raw_struct! {
    pub struct RawExpectPair {
        from: PodSet = "from",
        to: PodSet = "to",
        reason: Verdict = "reason",
        port: PortRef = "port",
        protocol: ProbeProtocol = "protocol",
        icmp_type: u8 = "icmpType",
        icmp_code: u8 = "icmpCode",
    }
}

raw_struct! {
    pub struct RawExpectPolicy {
        pod: String = "pod",
        ingress: Vec<Loc<String>> = "ingress",
        egress: Vec<Loc<String>> = "egress",
    }
}

/// `when:` of an expectation: field paths (as `sweep --set` writes them) to the values they
/// must hold, each key located; the paths are checked when building.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawWhen(pub Vec<(Loc<String>, YamlNode)>);

impl Decode for RawWhen {
    fn decode(node: &YamlNode, cx: &mut Cx) -> Option<RawWhen> {
        let Value::Map(entries) = &node.value else {
            cx.error(
                node.pos,
                format!(
                    "expected a mapping of field paths to values ({{network.blockSize: 26}}), \
                     found {}",
                    node.value.kind_name()
                ),
            );
            return None;
        };
        Some(RawWhen(
            entries
                .iter()
                .map(|(k, v)| (Loc::new(k.text.clone(), k.pos), v.clone()))
                .collect(),
        ))
    }
}

impl JsonSchema for RawWhen {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "When".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "Field paths (as `sweep --set` writes them) to the values they must hold for the expectation to apply.",
            "type": "object",
            "additionalProperties": true
        })
    }
}

impl Decode for PortRef {
    fn decode(node: &YamlNode, cx: &mut Cx) -> Option<PortRef> {
        match &node.value {
            Value::Int(_) => match u16::decode(node, cx)? {
                0 => {
                    cx.error(node.pos, "port 0 is not a port; give 1..=65535");
                    None
                }
                n => Some(PortRef::Number(n)),
            },
            Value::Str(s) if !s.is_empty() => Some(PortRef::Name(s.clone())),
            _ => {
                cx.error(
                    node.pos,
                    format!(
                        "expected a port number or a container port name, found {}",
                        node.value.kind_name()
                    ),
                );
                None
            }
        }
    }
}

impl JsonSchema for PortRef {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PortRef".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "A port number, or a container port name of the destination pod.",
            "oneOf": [{"type": "integer", "minimum": 1, "maximum": 65535}, {"type": "string"}]
        })
    }
}

raw_struct! {
    pub struct RawExpectPath {
        from: String = "from",
        to: String = "to",
        via: Vec<Loc<String>> = "via",
        encapsulation: Encapsulation = "encapsulation",
        port: PortRef = "port",
        protocol: ProbeProtocol = "protocol",
        icmp_type: u8 = "icmpType",
        icmp_code: u8 = "icmpCode",
    }
}

raw_struct! {
    pub struct RawExpectBgp {
        sessions_established: Count = "sessionsEstablished",
        converged_within: SimDuration = "convergedWithin",
        updates: Count = "updates",
    }
}

/// JSON Schema of the scenario file, for editors (`podnet schema`).
pub fn scenario_schema() -> Schema {
    let mut schema = schemars::schema_for!(RawScenario);
    schema.insert(
        "$id".to_string(),
        serde_json::Value::String("https://podnet.dev/schema/scenario.json".to_string()),
    );
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_lists_the_top_level_keys_and_refuses_others() {
        let schema = serde_json::to_value(scenario_schema()).unwrap();
        let props = schema["properties"].as_object().unwrap();
        for key in RawScenario::KEYS {
            assert!(props.contains_key(*key), "schema lacks {key}");
        }
        assert_eq!(
            schema["additionalProperties"],
            serde_json::Value::Bool(false)
        );
    }
}

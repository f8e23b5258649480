//! Field tables of the network policy APIs, for strict manifest checking (the same
//! [`KindSchema`] machinery as [`super::api_fields`], kept apart so the policy kinds grow
//! without touching the IPAM and BGP tables).
//!
//! # Sources
//!
//! * `networking.k8s.io/v1` NetworkPolicy: `kubernetes/api` `networking/v1/types.go`
//!   (NetworkPolicySpec, NetworkPolicyIngressRule/EgressRule, NetworkPolicyPeer, IPBlock,
//!   NetworkPolicyPort); `v1` ServiceAccount: `core/v1/types.go`.
//! * `projectcalico.org/v3` (and the identical `crd.projectcalico.org/v1` CRDs)
//!   NetworkPolicy, GlobalNetworkPolicy, Staged*, Tier: `projectcalico/calico` @ `87c15906`
//!   `api/pkg/apis/projectcalico/v3/{policy_common,networkpolicy,globalnetworkpolicy,
//!   stagednetworkpolicy,stagedglobalnetworkpolicy,stagedkubernetesnetworkpolicy,tier}.go`
//!   (Rule, EntityRule, ICMPFields, ServiceAccountMatch, ServiceMatch, HTTPMatch).
//! * `policy.networking.k8s.io` v1alpha1 AdminNetworkPolicy / BaselineAdminNetworkPolicy
//!   (`kubernetes-sigs/network-policy-api` v0.1.8 `apis/v1alpha1`) and v1alpha2
//!   ClusterNetworkPolicy (v0.2.0 `apis/v1alpha2`).
//!
//! Fields podnet reads are [`Support::Modelled`](super::api_fields::Support::Modelled); the application-layer and host-endpoint
//! ones (`http`, `doNotTrack`, `preDNAT`, `applyOnForward`, `performanceHints`, rule
//! `metadata`, ANP `nodes` peers) are [`Support::Unmodelled`](super::api_fields::Support::Unmodelled) (one warning each).

use super::api_fields::{Field, KindSchema, LABEL_SELECTOR, S, SL, Shape, m, u};

pub const NETWORKING_V1: &str = "networking.k8s.io/v1";
pub const POLICY_V1ALPHA1: &str = "policy.networking.k8s.io/v1alpha1";
pub const POLICY_V1ALPHA2: &str = "policy.networking.k8s.io/v1alpha2";

// ----------------------------------------------------------------------------
// networking.k8s.io/v1 NetworkPolicy

const K8S_IP_BLOCK: &[Field] = &[m("cidr", S), m("except", SL)];
const K8S_PEER: &[Field] = &[
    m("podSelector", Shape::Object(LABEL_SELECTOR)),
    m("namespaceSelector", Shape::Object(LABEL_SELECTOR)),
    m("ipBlock", Shape::Object(K8S_IP_BLOCK)),
];
const K8S_PORT: &[Field] = &[m("protocol", S), m("port", S), m("endPort", S)];
const K8S_INGRESS_RULE: &[Field] = &[
    m("from", Shape::ObjectList(K8S_PEER)),
    m("ports", Shape::ObjectList(K8S_PORT)),
];
const K8S_EGRESS_RULE: &[Field] = &[
    m("to", Shape::ObjectList(K8S_PEER)),
    m("ports", Shape::ObjectList(K8S_PORT)),
];
const K8S_NETWORK_POLICY_SPEC: &[Field] = &[
    m("podSelector", Shape::Object(LABEL_SELECTOR)),
    m("policyTypes", SL),
    m("ingress", Shape::ObjectList(K8S_INGRESS_RULE)),
    m("egress", Shape::ObjectList(K8S_EGRESS_RULE)),
];

// ----------------------------------------------------------------------------
// projectcalico.org/v3

const CALICO_ICMP: &[Field] = &[m("type", S), m("code", S)];
const CALICO_SERVICE_ACCOUNTS: &[Field] = &[m("names", SL), m("selector", S)];
const CALICO_SERVICES: &[Field] = &[m("name", S), m("namespace", S)];
const CALICO_ENTITY: &[Field] = &[
    m("nets", SL),
    m("notNets", SL),
    m("selector", S),
    m("notSelector", S),
    m("namespaceSelector", S),
    m("ports", SL),
    m("notPorts", SL),
    m("serviceAccounts", Shape::Object(CALICO_SERVICE_ACCOUNTS)),
    m("services", Shape::Object(CALICO_SERVICES)),
];
const CALICO_HTTP_PATH: &[Field] = &[u("exact", S), u("prefix", S)];
const CALICO_HTTP: &[Field] = &[
    u("methods", SL),
    u("paths", Shape::ObjectList(CALICO_HTTP_PATH)),
];
const CALICO_RULE_METADATA: &[Field] = &[u("annotations", Shape::FreeMap)];
const CALICO_RULE: &[Field] = &[
    m("action", S),
    m("protocol", S),
    m("notProtocol", S),
    m("icmp", Shape::Object(CALICO_ICMP)),
    m("notICMP", Shape::Object(CALICO_ICMP)),
    m("ipVersion", S),
    m("source", Shape::Object(CALICO_ENTITY)),
    m("destination", Shape::Object(CALICO_ENTITY)),
    u("http", Shape::Object(CALICO_HTTP)),
    u("metadata", Shape::Object(CALICO_RULE_METADATA)),
];
const CALICO_NETWORK_POLICY_SPEC: &[Field] = &[
    m("tier", S),
    m("order", S),
    m("selector", S),
    m("serviceAccountSelector", S),
    m("types", SL),
    m("ingress", Shape::ObjectList(CALICO_RULE)),
    m("egress", Shape::ObjectList(CALICO_RULE)),
    u("performanceHints", SL),
];
const CALICO_GLOBAL_NETWORK_POLICY_SPEC: &[Field] = &[
    m("tier", S),
    m("order", S),
    m("selector", S),
    m("serviceAccountSelector", S),
    m("namespaceSelector", S),
    m("types", SL),
    m("ingress", Shape::ObjectList(CALICO_RULE)),
    m("egress", Shape::ObjectList(CALICO_RULE)),
    u("doNotTrack", S),
    u("preDNAT", S),
    u("applyOnForward", S),
    u("performanceHints", SL),
];
const CALICO_STAGED_NETWORK_POLICY_SPEC: &[Field] = &[
    m("stagedAction", S),
    m("tier", S),
    m("order", S),
    m("selector", S),
    m("serviceAccountSelector", S),
    m("types", SL),
    m("ingress", Shape::ObjectList(CALICO_RULE)),
    m("egress", Shape::ObjectList(CALICO_RULE)),
    u("performanceHints", SL),
];
const CALICO_STAGED_GLOBAL_NETWORK_POLICY_SPEC: &[Field] = &[
    m("stagedAction", S),
    m("tier", S),
    m("order", S),
    m("selector", S),
    m("serviceAccountSelector", S),
    m("namespaceSelector", S),
    m("types", SL),
    m("ingress", Shape::ObjectList(CALICO_RULE)),
    m("egress", Shape::ObjectList(CALICO_RULE)),
    u("doNotTrack", S),
    u("preDNAT", S),
    u("applyOnForward", S),
    u("performanceHints", SL),
];
const CALICO_STAGED_K8S_NETWORK_POLICY_SPEC: &[Field] = &[
    m("stagedAction", S),
    m("podSelector", Shape::Object(LABEL_SELECTOR)),
    m("policyTypes", SL),
    m("ingress", Shape::ObjectList(K8S_INGRESS_RULE)),
    m("egress", Shape::ObjectList(K8S_EGRESS_RULE)),
];
const CALICO_TIER_SPEC: &[Field] = &[m("order", S), m("defaultAction", S)];

// ----------------------------------------------------------------------------
// policy.networking.k8s.io

const NAMESPACED_POD: &[Field] = &[
    m("namespaceSelector", Shape::Object(LABEL_SELECTOR)),
    m("podSelector", Shape::Object(LABEL_SELECTOR)),
];
const ANP_SUBJECT: &[Field] = &[
    m("namespaces", Shape::Object(LABEL_SELECTOR)),
    m("pods", Shape::Object(NAMESPACED_POD)),
];
const ANP_INGRESS_PEER: &[Field] = &[
    m("namespaces", Shape::Object(LABEL_SELECTOR)),
    m("pods", Shape::Object(NAMESPACED_POD)),
];
const ANP_EGRESS_PEER: &[Field] = &[
    m("namespaces", Shape::Object(LABEL_SELECTOR)),
    m("pods", Shape::Object(NAMESPACED_POD)),
    u("nodes", Shape::Object(LABEL_SELECTOR)),
    m("networks", SL),
];
const ANP_PORT_NUMBER: &[Field] = &[m("protocol", S), m("port", S)];
const ANP_PORT_RANGE: &[Field] = &[m("protocol", S), m("start", S), m("end", S)];
const ANP_PORT: &[Field] = &[
    m("portNumber", Shape::Object(ANP_PORT_NUMBER)),
    m("namedPort", S),
    m("portRange", Shape::Object(ANP_PORT_RANGE)),
];
const ANP_INGRESS_RULE: &[Field] = &[
    m("name", S),
    m("action", S),
    m("from", Shape::ObjectList(ANP_INGRESS_PEER)),
    m("ports", Shape::ObjectList(ANP_PORT)),
];
const ANP_EGRESS_RULE: &[Field] = &[
    m("name", S),
    m("action", S),
    m("to", Shape::ObjectList(ANP_EGRESS_PEER)),
    m("ports", Shape::ObjectList(ANP_PORT)),
];
const ANP_SPEC: &[Field] = &[
    m("priority", S),
    m("subject", Shape::Object(ANP_SUBJECT)),
    m("ingress", Shape::ObjectList(ANP_INGRESS_RULE)),
    m("egress", Shape::ObjectList(ANP_EGRESS_RULE)),
];
const BANP_SPEC: &[Field] = &[
    m("subject", Shape::Object(ANP_SUBJECT)),
    m("ingress", Shape::ObjectList(ANP_INGRESS_RULE)),
    m("egress", Shape::ObjectList(ANP_EGRESS_RULE)),
];

const CNP_PORT_RANGE: &[Field] = &[m("start", S), m("end", S)];
const CNP_DESTINATION_PORT: &[Field] = &[m("number", S), m("range", Shape::Object(CNP_PORT_RANGE))];
const CNP_PROTOCOL_PORT: &[Field] = &[m("destinationPort", Shape::Object(CNP_DESTINATION_PORT))];
const CNP_PROTOCOL: &[Field] = &[
    m("tcp", Shape::Object(CNP_PROTOCOL_PORT)),
    m("udp", Shape::Object(CNP_PROTOCOL_PORT)),
    m("sctp", Shape::Object(CNP_PROTOCOL_PORT)),
    m("destinationNamedPort", S),
];
const CNP_INGRESS_RULE: &[Field] = &[
    m("name", S),
    m("action", S),
    m("from", Shape::ObjectList(ANP_INGRESS_PEER)),
    m("protocols", Shape::ObjectList(CNP_PROTOCOL)),
];
const CNP_EGRESS_RULE: &[Field] = &[
    m("name", S),
    m("action", S),
    m("to", Shape::ObjectList(ANP_EGRESS_PEER)),
    m("protocols", Shape::ObjectList(CNP_PROTOCOL)),
];
const CNP_SPEC: &[Field] = &[
    m("tier", S),
    m("priority", S),
    m("subject", Shape::Object(ANP_SUBJECT)),
    m("ingress", Shape::ObjectList(CNP_INGRESS_RULE)),
    m("egress", Shape::ObjectList(CNP_EGRESS_RULE)),
];

const SERVICE_ACCOUNT_TOP: &[Field] = &[];

const fn schema(
    api_version: &'static str,
    kind: &'static str,
    namespaced: bool,
    spec: &'static [Field],
) -> KindSchema {
    KindSchema {
        api_version,
        kind,
        modelled: true,
        namespaced,
        spec,
    }
}

/// The policy kinds podnet reads, with their spec tables.
pub static POLICY_SCHEMAS: &[KindSchema] = &[
    schema(
        NETWORKING_V1,
        "NetworkPolicy",
        true,
        K8S_NETWORK_POLICY_SPEC,
    ),
    schema("v1", "ServiceAccount", true, SERVICE_ACCOUNT_TOP),
    schema(
        super::api_fields::CALICO_V3,
        "NetworkPolicy",
        true,
        CALICO_NETWORK_POLICY_SPEC,
    ),
    schema(
        super::api_fields::CALICO_V3,
        "GlobalNetworkPolicy",
        false,
        CALICO_GLOBAL_NETWORK_POLICY_SPEC,
    ),
    schema(
        super::api_fields::CALICO_V3,
        "StagedNetworkPolicy",
        true,
        CALICO_STAGED_NETWORK_POLICY_SPEC,
    ),
    schema(
        super::api_fields::CALICO_V3,
        "StagedGlobalNetworkPolicy",
        false,
        CALICO_STAGED_GLOBAL_NETWORK_POLICY_SPEC,
    ),
    schema(
        super::api_fields::CALICO_V3,
        "StagedKubernetesNetworkPolicy",
        true,
        CALICO_STAGED_K8S_NETWORK_POLICY_SPEC,
    ),
    schema(
        super::api_fields::CALICO_V3,
        "Tier",
        false,
        CALICO_TIER_SPEC,
    ),
    schema(
        super::api_fields::CALICO_CRD_V1,
        "NetworkPolicy",
        true,
        CALICO_NETWORK_POLICY_SPEC,
    ),
    schema(
        super::api_fields::CALICO_CRD_V1,
        "GlobalNetworkPolicy",
        false,
        CALICO_GLOBAL_NETWORK_POLICY_SPEC,
    ),
    schema(
        super::api_fields::CALICO_CRD_V1,
        "StagedNetworkPolicy",
        true,
        CALICO_STAGED_NETWORK_POLICY_SPEC,
    ),
    schema(
        super::api_fields::CALICO_CRD_V1,
        "StagedGlobalNetworkPolicy",
        false,
        CALICO_STAGED_GLOBAL_NETWORK_POLICY_SPEC,
    ),
    schema(
        super::api_fields::CALICO_CRD_V1,
        "StagedKubernetesNetworkPolicy",
        true,
        CALICO_STAGED_K8S_NETWORK_POLICY_SPEC,
    ),
    schema(
        super::api_fields::CALICO_CRD_V1,
        "Tier",
        false,
        CALICO_TIER_SPEC,
    ),
    schema(POLICY_V1ALPHA1, "AdminNetworkPolicy", false, ANP_SPEC),
    schema(
        POLICY_V1ALPHA1,
        "BaselineAdminNetworkPolicy",
        false,
        BANP_SPEC,
    ),
    schema(POLICY_V1ALPHA2, "ClusterNetworkPolicy", false, CNP_SPEC),
];

/// The schema of a policy kind podnet reads, if `(api_version, kind)` is one.
pub fn policy_schema(api_version: &str, kind: &str) -> Option<&'static KindSchema> {
    POLICY_SCHEMAS
        .iter()
        .find(|s| s.api_version == api_version && s.kind == kind)
}

/// Every kind the policy API groups podnet reads serve, modelled or not, in byte order (the
/// Kubernetes API reference for `networking.k8s.io/v1`, network-policy-api v0.1.8 and v0.2.0
/// for `policy.networking.k8s.io`): a kind they do not serve is an error with a hint, as in
/// every group podnet models (`api_fields::known_kinds`).
pub fn policy_group_kinds(api_version: &str) -> &'static [&'static str] {
    match api_version {
        POLICY_V1ALPHA1 => &["AdminNetworkPolicy", "BaselineAdminNetworkPolicy"],
        POLICY_V1ALPHA2 => &["ClusterNetworkPolicy"],
        NETWORKING_V1 => &[
            "IPAddress",
            "Ingress",
            "IngressClass",
            "NetworkPolicy",
            "ServiceCIDR",
        ],
        _ => &[],
    }
}

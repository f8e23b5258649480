//! Field tables of the real Calico and Spiderpool APIs, for strict manifest checking.
//!
//! podnet reads manifests the way the API server does: every key inside a
//! Calico or Spiderpool object is one of
//!
//! * a field the real API has and podnet models ([`Support::Modelled`]): read it;
//! * a field the real API has but podnet ignores ([`Support::Unmodelled`]):
//!   accept it and warn once (per field path);
//! * a field the API used to have and has since dropped ([`Support::Removed`]):
//!   a located error that carries the note (what to write instead);
//! * no field at all (a typo): a located error naming the nearest valid
//!   field ([`nearest`]).
//!
//! The tables below are plain data: a [`KindSchema`] per kind with a tree of
//! [`Field`]s under `spec`, plus [`OBJECT_META`] for `metadata` and
//! [`known_kinds`] for every kind each API group serves (so that a real kind
//! podnet does not model gives a warning and an invented kind an error).
//! [`check_path`] / [`KindSchema::check`] walk a key path through them.
//!
//! # Sources
//!
//! Field names were read from the projects' own CRDs (openAPIV3Schema of each
//! kind's `spec`) and Go API types; the tables were written by hand from them.
//!
//! * `projectcalico/calico` @ `87c15906f20c4ca1fda55af92295e7678b0cc0b2`
//!   (`git describe`: v3.34.0-0.dev-67; the commit `shared/real-manifests/SOURCES.md` uses):
//!   - `api/config/crd/projectcalico.org_{ippools,ipamconfigurations,ipreservations,bgpconfigurations,bgppeers,bgpfilters}.yaml`
//!     (group `projectcalico.org/v3`);
//!   - `libcalico-go/config/crd/crd.projectcalico.org_{ippools,ipamconfigs,ipreservations,bgpconfigurations,bgppeers,bgpfilters}.yaml`
//!     (group `crd.projectcalico.org/v1`). At this commit their `spec` field
//!     trees are identical to the v3 ones, so both groups share one table per kind;
//!   - kinds: `api/pkg/apis/projectcalico/v3/register.go` (`AllKnownTypes`), the
//!     CRD file lists of both folders above, and `calicoctl/calicoctl/resourcemgr/*.go`
//!     (calicoctl also takes `Node` and `WorkloadEndpoint`, which have no CRD);
//!   - Calico `Node`: `libcalico-go/lib/apis/internalapi/node.go` (Go type only;
//!     same JSON fields as `libcalico-go/lib/apis/v3/node.go` at tag v3.30.0 plus
//!     `interfaces`);
//!   - removed IPPool fields `ipip` / `nat-outgoing`: present (and refused by
//!     Calico's validation: `mustBeNil` / `mustBeFalse`) in
//!     `api/pkg/apis/projectcalico/v3/ippool.go` and the v1 CRD up to tag v3.31.x,
//!     gone from v3.32.0 (commit d290f2d6c7).
//! * `spidernet-io/spiderpool` @ `a7fbd3b2968d13952572ab95092b2caf7aa08ea9`
//!   (`git describe`: v1.0.3-146):
//!   - `charts/spiderpool/crds/spiderpool.spidernet.io_{spiderippools,spiderreservedips,spidersubnets}.yaml`,
//!     cross-checked with `pkg/k8s/apis/spiderpool.spidernet.io/v2beta1/*_types.go`;
//!   - kinds: the `spiderpool.spidernet.io_*.yaml` CRDs in that folder;
//!   - removed: `spec.vlan` (SpiderIPPool, SpiderSubnet) and kind
//!     `SpiderClaimParameter`, both dropped from v2beta1 by commit 938eeb7e1
//!     (first in v1.0.0).
//! * `metadata`: Kubernetes `ObjectMeta`, `OwnerReference`, `ManagedFieldsEntry`
//!   (k8s.io/apimachinery `pkg/apis/meta/v1/types.go`, v0.30, as vendored by Spiderpool).
//!
//! The tables describe that newest API. Compared with tag v3.30.0 (podnet's
//! default profile), it adds IPPool `namespaceSelector`; IPAMConfiguration
//! `ipCooldownSeconds`, `kubeVirtVMAddressPersistence`; BGPConfiguration
//! `ipv4NormalRoutePriority`, `ipv6NormalRoutePriority`, `programClusterRoutes`,
//! `serviceLoadBalancerAggregation`; BGPPeer `keepaliveTime`, `localASNumber`,
//! `nextHopMode`, `reversePeering` — and drops IPPool `ipip`, `nat-outgoing`.
//! podnet accepts the newer fields under every profile.
//!
//! # Updating
//!
//! 1. Check out the new commits; list each CRD's `spec` properties recursively
//!    (objects with `properties` become [`Shape::Object`], arrays of such objects
//!    [`Shape::ObjectList`], arrays of scalars [`Shape::ScalarList`], objects with
//!    only `additionalProperties` [`Shape::FreeMap`]).
//! 2. Paste the flattened lists (`a`, `a.b`, `a[].b`, sorted, space separated)
//!    into the `CRD_*` constants of the tests below and run the tests: they fail on
//!    every field added to or missing from the tables.
//! 3. A field that disappeared upstream but may still appear in published
//!    manifests becomes [`Support::Removed`] with a note; a new field starts as
//!    [`Support::Unmodelled`].
//! 4. Flip [`Support::Modelled`] only together with SPEC §2.3's table.
//! 5. Update the commits above.

use super::policy_fields;

/// What podnet does with a field the API has (or had).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// podnet reads it (SPEC §2.3).
    Modelled,
    /// The real API has it; podnet ignores it with one warning.
    Unmodelled,
    /// The real API no longer has it (or never let it be set); the note says
    /// what to write instead. An error, as the API server would refuse it.
    Removed(&'static str),
}

/// The shape of a field's value.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    /// A string, number or boolean.
    Scalar,
    /// A list of scalars.
    ScalarList,
    /// A mapping with these known keys.
    Object(&'static [Field]),
    /// A list of mappings with these known keys.
    ObjectList(&'static [Field]),
    /// A mapping with any keys and scalar values (labels, annotations, matchLabels).
    FreeMap,
    /// Anything at all, not checked (managedFields[].fieldsV1, status).
    Any,
}

/// One field of a schema.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub shape: Shape,
    pub support: Support,
}

impl Field {
    pub const fn modelled(&self) -> bool {
        matches!(self.support, Support::Modelled)
    }
    /// The known keys below this field, if it is an object or a list of objects.
    pub const fn children(&self) -> Option<&'static [Field]> {
        match self.shape {
            Shape::Object(f) | Shape::ObjectList(f) => Some(f),
            _ => None,
        }
    }
}

/// The schema of one kind.
#[derive(Debug)]
pub struct KindSchema {
    /// `apiVersion` exactly as written in manifests (`group/version`).
    pub api_version: &'static str,
    pub kind: &'static str,
    /// Whether podnet models the kind at all (SPEC §2.3). A kind with
    /// `modelled: false` is accepted with one warning; its fields can still be
    /// checked for typos.
    pub modelled: bool,
    /// Namespaced (`metadata.namespace` meaningful) or cluster-scoped.
    pub namespaced: bool,
    /// The fields of `spec`.
    pub spec: &'static [Field],
}

// ----------------------------------------------------------------------------
// Table helpers.

pub(super) const S: Shape = Shape::Scalar;
pub(super) const SL: Shape = Shape::ScalarList;

pub(super) const fn m(name: &'static str, shape: Shape) -> Field {
    Field {
        name,
        shape,
        support: Support::Modelled,
    }
}
pub(super) const fn u(name: &'static str, shape: Shape) -> Field {
    Field {
        name,
        shape,
        support: Support::Unmodelled,
    }
}
const fn gone(name: &'static str, note: &'static str) -> Field {
    Field {
        name,
        shape: Shape::Any,
        support: Support::Removed(note),
    }
}

// ----------------------------------------------------------------------------
// Top level and metadata.

/// Keys allowed at the top of an object manifest. `status` is server-populated
/// (present in `kubectl get -o yaml` output) and is not checked.
pub const TOP_LEVEL: &[Field] = &[
    m("apiVersion", S),
    m("kind", S),
    m("metadata", Shape::Object(OBJECT_META)),
    m("spec", Shape::Any), // the kind's own table; see KindSchema::check
    u("status", Shape::Any),
];

const OWNER_REFERENCE: &[Field] = &[
    u("apiVersion", S),
    u("kind", S),
    u("name", S),
    u("uid", S),
    u("controller", S),
    u("blockOwnerDeletion", S),
];

const MANAGED_FIELDS_ENTRY: &[Field] = &[
    u("manager", S),
    u("operation", S),
    u("apiVersion", S),
    u("time", S),
    u("fieldsType", S),
    u("fieldsV1", Shape::Any),
    u("subresource", S),
];

/// Kubernetes `ObjectMeta`. `name`, `namespace`, `labels` and `annotations` are
/// the ones podnet reads (which of them matter depends on the kind); the rest
/// are mostly server-populated and only warned about.
pub const OBJECT_META: &[Field] = &[
    m("name", S),
    u("generateName", S),
    m("namespace", S),
    u("selfLink", S),
    u("uid", S),
    u("resourceVersion", S),
    u("generation", S),
    u("creationTimestamp", S),
    u("deletionTimestamp", S),
    u("deletionGracePeriodSeconds", S),
    m("labels", Shape::FreeMap),
    m("annotations", Shape::FreeMap),
    u("ownerReferences", Shape::ObjectList(OWNER_REFERENCE)),
    u("finalizers", SL),
    u("managedFields", Shape::ObjectList(MANAGED_FIELDS_ENTRY)),
];

// ----------------------------------------------------------------------------
// Calico: projectcalico.org/v3 and crd.projectcalico.org/v1 (same spec trees).

const IPPOOL_SPEC: &[Field] = &[
    m("cidr", S),
    m("blockSize", S),
    m("ipipMode", S),
    m("vxlanMode", S),
    m("natOutgoing", S),
    m("disabled", S),
    m("disableBGPExport", S),
    m("nodeSelector", S),
    m("namespaceSelector", S),
    m("allowedUses", SL),
    m("assignmentMode", S),
    gone(
        "ipip",
        "`ipip` is a Calico APIv1 leftover: Calico's validation refused to set it (up to \
         v3.31) and v3.32 removed it; use `ipipMode: Always | CrossSubnet | Never`",
    ),
    gone(
        "nat-outgoing",
        "`nat-outgoing` is a Calico APIv1 leftover: Calico's validation refused `true` (up to \
         v3.31) and v3.32 removed it; use `natOutgoing`",
    ),
];

const IPAMCONFIG_SPEC: &[Field] = &[
    m("strictAffinity", S),
    m("autoAllocateBlocks", S),
    m("maxBlocksPerHost", S),
    m("ipCooldownSeconds", S),
    u("kubeVirtVMAddressPersistence", S),
];

const IPRESERVATION_SPEC: &[Field] = &[m("reservedCIDRs", SL)];

const CIDR_MODELLED: &[Field] = &[m("cidr", S)];

const SECRET_KEY_REF: &[Field] = &[u("name", S), u("key", S), u("optional", S)];
const SECRET_SOURCE: &[Field] = &[u("secretKeyRef", Shape::Object(SECRET_KEY_REF))];

const COMMUNITY: &[Field] = &[u("name", S), u("value", S)];
const PREFIX_ADVERTISEMENT: &[Field] = &[u("cidr", S), u("communities", SL)];

const BGPCONFIG_SPEC: &[Field] = &[
    m("asNumber", S),
    m("nodeToNodeMeshEnabled", S),
    m("nodeMeshMaxRestartTime", S),
    m("serviceClusterIPs", Shape::ObjectList(CIDR_MODELLED)),
    m("serviceExternalIPs", Shape::ObjectList(CIDR_MODELLED)),
    m("serviceLoadBalancerIPs", Shape::ObjectList(CIDR_MODELLED)),
    u("bindMode", S),
    u("communities", Shape::ObjectList(COMMUNITY)),
    u("ignoredInterfaces", SL),
    u("ipv4NormalRoutePriority", S),
    u("ipv6NormalRoutePriority", S),
    u("listenPort", S),
    u("localWorkloadPeeringIPV4", S),
    u("localWorkloadPeeringIPV6", S),
    u("logSeverityScreen", S),
    u("nodeMeshPassword", Shape::Object(SECRET_SOURCE)),
    u(
        "prefixAdvertisements",
        Shape::ObjectList(PREFIX_ADVERTISEMENT),
    ),
    u("programClusterRoutes", S),
    u("serviceLoadBalancerAggregation", S),
];

const BGPPEER_SPEC: &[Field] = &[
    m("node", S),
    m("nodeSelector", S),
    m("peerIP", S),
    m("peerSelector", S),
    m("asNumber", S),
    m("keepOriginalNextHop", S),
    m("maxRestartTime", S),
    u("filters", SL),
    u("keepaliveTime", S),
    u("localASNumber", S),
    u("localWorkloadSelector", S),
    u("nextHopMode", S),
    u("numAllowedLocalASNumbers", S),
    u("password", Shape::Object(SECRET_SOURCE)),
    u("reachableBy", S),
    u("reversePeering", S),
    u("sourceAddress", S),
    u("ttlSecurity", S),
];

const NODE_BGP: &[Field] = &[
    m("ipv4Address", S),
    u("ipv6Address", S),
    u("ipv4IPIPTunnelAddr", S),
    m("asNumber", S),
    m("routeReflectorClusterID", S),
];
const NODE_ORCH_REF: &[Field] = &[u("nodeName", S), u("orchestrator", S)];
const NODE_WIREGUARD: &[Field] = &[u("interfaceIPv4Address", S), u("interfaceIPv6Address", S)];
const NODE_ADDRESS: &[Field] = &[u("address", S), u("type", S)];
const NODE_INTERFACE: &[Field] = &[u("name", S), u("addresses", SL)];

const NODE_SPEC: &[Field] = &[
    m("bgp", Shape::Object(NODE_BGP)),
    u("ipv4VXLANTunnelAddr", S),
    u("vxlanTunnelMACAddr", S),
    u("ipv6VXLANTunnelAddr", S),
    u("vxlanTunnelMACAddrV6", S),
    u("orchRefs", Shape::ObjectList(NODE_ORCH_REF)),
    u("wireguard", Shape::Object(NODE_WIREGUARD)),
    u("addresses", Shape::ObjectList(NODE_ADDRESS)),
    u("interfaces", Shape::ObjectList(NODE_INTERFACE)),
];

const BGPFILTER_COMMUNITIES: &[Field] = &[u("values", SL)];
const BGPFILTER_PREFIX_LENGTH: &[Field] = &[u("min", S), u("max", S)];
const BGPFILTER_VALUE: &[Field] = &[u("value", S)];
const BGPFILTER_PREPEND: &[Field] = &[u("prefix", SL)];
const BGPFILTER_OPERATION: &[Field] = &[
    u("addCommunity", Shape::Object(BGPFILTER_VALUE)),
    u("prependASPath", Shape::Object(BGPFILTER_PREPEND)),
    u("setPriority", Shape::Object(BGPFILTER_VALUE)),
];
const BGPFILTER_RULE: &[Field] = &[
    u("action", S),
    u("asPathPrefix", SL),
    u("cidr", S),
    u("communities", Shape::Object(BGPFILTER_COMMUNITIES)),
    u("interface", S),
    u("matchOperator", S),
    u("operations", Shape::ObjectList(BGPFILTER_OPERATION)),
    u("peerType", S),
    u("prefixLength", Shape::Object(BGPFILTER_PREFIX_LENGTH)),
    u("priority", S),
    u("source", S),
];
const BGPFILTER_SPEC: &[Field] = &[
    u("exportV4", Shape::ObjectList(BGPFILTER_RULE)),
    u("exportV6", Shape::ObjectList(BGPFILTER_RULE)),
    u("importV4", Shape::ObjectList(BGPFILTER_RULE)),
    u("importV6", Shape::ObjectList(BGPFILTER_RULE)),
];

// ----------------------------------------------------------------------------
// Spiderpool: spiderpool.spidernet.io/v2beta1.

pub(super) const LABEL_SELECTOR_REQUIREMENT: &[Field] =
    &[m("key", S), m("operator", S), m("values", SL)];
/// Kubernetes `LabelSelector` (as podnet reads it).
pub(super) const LABEL_SELECTOR: &[Field] = &[
    m("matchLabels", Shape::FreeMap),
    m(
        "matchExpressions",
        Shape::ObjectList(LABEL_SELECTOR_REQUIREMENT),
    ),
];

const SPIDER_ROUTE: &[Field] = &[u("dst", S), u("gw", S)];

const SPIDER_VLAN_NOTE: &str = "`vlan` was deprecated and removed from Spiderpool's v2beta1 API in v1.0; \
     set the VLAN on the SpiderMultusConfig (macvlan/ipvlan `vlanID`) instead";

const SPIDER_IPPOOL_SPEC: &[Field] = &[
    m("subnet", S),
    m("ips", SL),
    m("excludeIPs", SL),
    m("gateway", S),
    m("nodeName", SL),
    m("nodeAffinity", Shape::Object(LABEL_SELECTOR)),
    m("namespaceName", SL),
    m("namespaceAffinity", Shape::Object(LABEL_SELECTOR)),
    m("podAffinity", Shape::Object(LABEL_SELECTOR)),
    m("default", S),
    m("disable", S),
    u("ipVersion", S),
    u("routes", Shape::ObjectList(SPIDER_ROUTE)),
    u("multusName", SL),
    gone("vlan", SPIDER_VLAN_NOTE),
];

const SPIDER_RESERVEDIP_SPEC: &[Field] = &[m("ips", SL), u("ipVersion", S)];

const SPIDER_SUBNET_SPEC: &[Field] = &[
    u("subnet", S),
    u("ips", SL),
    u("excludeIPs", SL),
    u("gateway", S),
    u("ipVersion", S),
    u("routes", Shape::ObjectList(SPIDER_ROUTE)),
    gone("vlan", SPIDER_VLAN_NOTE),
];

// ----------------------------------------------------------------------------
// Kinds.

pub const CALICO_V3: &str = "projectcalico.org/v3";
pub const CALICO_CRD_V1: &str = "crd.projectcalico.org/v1";
pub const SPIDERPOOL_V2BETA1: &str = "spiderpool.spidernet.io/v2beta1";
/// Kubernetes' core group and `apps`: podnet models some of their kinds (Namespace, Pod and
/// the workload controllers), so a kind they do not serve is a typo, not a foreign resource.
pub const CORE_V1: &str = "v1";
pub const APPS_V1: &str = "apps/v1";

/// The API versions these tables cover.
pub const API_VERSIONS: &[&str] = &[
    CALICO_V3,
    CALICO_CRD_V1,
    SPIDERPOOL_V2BETA1,
    CORE_V1,
    APPS_V1,
    policy_fields::NETWORKING_V1,
    policy_fields::POLICY_V1ALPHA1,
    policy_fields::POLICY_V1ALPHA2,
];

const fn kind(
    api_version: &'static str,
    kind: &'static str,
    modelled: bool,
    spec: &'static [Field],
) -> KindSchema {
    KindSchema {
        api_version,
        kind,
        modelled,
        namespaced: false,
        spec,
    }
}

/// Every kind with a spec table. All of them are cluster-scoped.
pub const SCHEMAS: &[KindSchema] = &[
    kind(CALICO_V3, "IPPool", true, IPPOOL_SPEC),
    kind(CALICO_V3, "IPAMConfiguration", true, IPAMCONFIG_SPEC),
    kind(CALICO_V3, "IPReservation", true, IPRESERVATION_SPEC),
    kind(CALICO_V3, "BGPConfiguration", true, BGPCONFIG_SPEC),
    kind(CALICO_V3, "BGPPeer", true, BGPPEER_SPEC),
    kind(CALICO_V3, "Node", true, NODE_SPEC),
    kind(CALICO_V3, "BGPFilter", false, BGPFILTER_SPEC),
    kind(CALICO_CRD_V1, "IPPool", true, IPPOOL_SPEC),
    kind(CALICO_CRD_V1, "IPAMConfig", true, IPAMCONFIG_SPEC),
    kind(CALICO_CRD_V1, "IPReservation", true, IPRESERVATION_SPEC),
    kind(CALICO_CRD_V1, "BGPConfiguration", true, BGPCONFIG_SPEC),
    kind(CALICO_CRD_V1, "BGPPeer", true, BGPPEER_SPEC),
    kind(CALICO_CRD_V1, "BGPFilter", false, BGPFILTER_SPEC),
    kind(SPIDERPOOL_V2BETA1, "SpiderIPPool", true, SPIDER_IPPOOL_SPEC),
    kind(
        SPIDERPOOL_V2BETA1,
        "SpiderReservedIP",
        true,
        SPIDER_RESERVEDIP_SPEC,
    ),
    kind(
        SPIDERPOOL_V2BETA1,
        "SpiderSubnet",
        false,
        SPIDER_SUBNET_SPEC,
    ),
];

/// Kinds `projectcalico.org/v3` serves: the API server's `AllKnownTypes`
/// plus `Node` and `WorkloadEndpoint`, which calicoctl takes (no CRD; in
/// Kubernetes-datastore mode they are backed by Kubernetes Nodes and Pods).
const CALICO_V3_KINDS: &[&str] = &[
    "BGPConfiguration",
    "BGPFilter",
    "BGPPeer",
    "BlockAffinity",
    "CalicoNodeStatus",
    "ClusterInformation",
    "FelixConfiguration",
    "GlobalNetworkPolicy",
    "GlobalNetworkSet",
    "HostEndpoint",
    "IPAMBlock",
    "IPAMConfiguration",
    "IPAMHandle",
    "IPPool",
    "IPReservation",
    "KubeControllersConfiguration",
    "NetworkPolicy",
    "NetworkSet",
    "Node",
    "Profile",
    "StagedGlobalNetworkPolicy",
    "StagedKubernetesNetworkPolicy",
    "StagedNetworkPolicy",
    "Tier",
    "WorkloadEndpoint",
];

/// Kinds `crd.projectcalico.org/v1` serves (its CRDs): no `Node`, `Profile`
/// or `WorkloadEndpoint`, and `IPAMConfig` instead of `IPAMConfiguration`.
const CALICO_CRD_V1_KINDS: &[&str] = &[
    "BGPConfiguration",
    "BGPFilter",
    "BGPPeer",
    "BlockAffinity",
    "CalicoNodeStatus",
    "ClusterInformation",
    "FelixConfiguration",
    "GlobalNetworkPolicy",
    "GlobalNetworkSet",
    "HostEndpoint",
    "IPAMBlock",
    "IPAMConfig",
    "IPAMHandle",
    "IPPool",
    "IPReservation",
    "KubeControllersConfiguration",
    "NetworkPolicy",
    "NetworkSet",
    "StagedGlobalNetworkPolicy",
    "StagedKubernetesNetworkPolicy",
    "StagedNetworkPolicy",
    "Tier",
];

/// Kinds `spiderpool.spidernet.io/v2beta1` serves (its CRDs).
const SPIDERPOOL_V2BETA1_KINDS: &[&str] = &[
    "SpiderCoordinator",
    "SpiderEndpoint",
    "SpiderIPPool",
    "SpiderMultusConfig",
    "SpiderReservedIP",
    "SpiderSubnet",
];

/// Kinds the Kubernetes core group `v1` serves (the API reference; `List` forms aside).
/// podnet models Namespace and Pod; the others are real kinds it accepts and ignores.
const CORE_V1_KINDS: &[&str] = &[
    "Binding",
    "ComponentStatus",
    "ConfigMap",
    "Endpoints",
    "Event",
    "LimitRange",
    "Namespace",
    "Node",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Pod",
    "PodTemplate",
    "ReplicationController",
    "ResourceQuota",
    "Secret",
    "Service",
    "ServiceAccount",
];

/// Kinds `apps/v1` serves (the Kubernetes API reference).
const APPS_V1_KINDS: &[&str] = &[
    "ControllerRevision",
    "DaemonSet",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
];

/// Kinds a group no longer serves but that published manifests may still use:
/// `(api_version, kind, note)`. Refuse them with the note.
pub const REMOVED_KINDS: &[(&str, &str, &str)] = &[(
    SPIDERPOOL_V2BETA1,
    "SpiderClaimParameter",
    "SpiderClaimParameter (dynamic resource allocation) was removed from Spiderpool's v2beta1 API in v1.0",
)];

/// Every kind the real API group serves, modelled by podnet or not (without
/// the `…List` wrapper kinds). Empty for API versions these tables do not cover.
pub fn known_kinds(api_version: &str) -> &'static [&'static str] {
    match api_version {
        CALICO_V3 => CALICO_V3_KINDS,
        CALICO_CRD_V1 => CALICO_CRD_V1_KINDS,
        SPIDERPOOL_V2BETA1 => SPIDERPOOL_V2BETA1_KINDS,
        CORE_V1 => CORE_V1_KINDS,
        APPS_V1 => APPS_V1_KINDS,
        other => policy_fields::policy_group_kinds(other),
    }
}

/// A hint for a kind `api_version` does not serve: the kind is removed, is
/// spelled differently in this Calico group, exists only in the other Calico
/// group, or is a near miss of a served kind. `None` when nothing fits.
pub fn unknown_kind_hint(api_version: &str, kind: &str) -> Option<String> {
    if let Some((_, _, note)) = REMOVED_KINDS
        .iter()
        .find(|(g, k, _)| *g == api_version && *k == kind)
    {
        return Some(note.to_string());
    }
    let spelled = match (api_version, kind) {
        (CALICO_CRD_V1, "IPAMConfiguration") => Some("IPAMConfig"),
        (CALICO_V3, "IPAMConfig") => Some("IPAMConfiguration"),
        _ => None,
    };
    if let Some(right) = spelled {
        return Some(format!("`{api_version}` calls this kind `{right}`"));
    }
    let other = match api_version {
        CALICO_V3 => Some(CALICO_CRD_V1),
        CALICO_CRD_V1 => Some(CALICO_V3),
        CORE_V1 => Some(APPS_V1),
        APPS_V1 => Some(CORE_V1),
        _ => None,
    };
    if let Some(other) = other.filter(|o| known_kinds(o).contains(&kind)) {
        return Some(format!(
            "`{kind}` is served by `{other}`, not by `{api_version}`"
        ));
    }
    nearest(known_kinds(api_version).iter().copied(), kind).map(|k| format!("did you mean `{k}`?"))
}

/// The spec table of a kind, if podnet has one (exact, case-sensitive names).
pub fn kind_schema(api_version: &str, kind: &str) -> Option<&'static KindSchema> {
    SCHEMAS
        .iter()
        .find(|s| s.api_version == api_version && s.kind == kind)
}

/// Whether `kind` is a kind podnet models (reads) in `api_version`.
pub fn is_modelled_kind(api_version: &str, kind: &str) -> bool {
    kind_schema(api_version, kind).is_some_and(|s| s.modelled)
}

/// The field named `name` in `fields` (exact, case-sensitive).
pub fn find_field(fields: &'static [Field], name: &str) -> Option<&'static Field> {
    fields.iter().find(|f| f.name == name)
}

// ----------------------------------------------------------------------------
// Checking key paths.

/// The outcome of walking a key path through a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldCheck {
    /// Every key exists and the last one is modelled.
    Modelled,
    /// Every key exists; `path[depth]` is the first unmodelled one (warn about
    /// `path[..=depth]` once, not about each key below it).
    Unmodelled { depth: usize },
    /// `path[depth]` was removed from the API.
    Removed { depth: usize, note: &'static str },
    /// `path[depth]` does not exist; `nearest` is the closest valid name.
    Unknown {
        depth: usize,
        nearest: Option<&'static str>,
    },
    /// `path[depth]` holds a scalar (or a list of scalars, or a map of scalars)
    /// but the manifest puts a mapping under it.
    NotAnObject { depth: usize },
}

impl FieldCheck {
    /// True for the outcomes that are errors.
    pub fn is_error(&self) -> bool {
        matches!(
            self,
            FieldCheck::Removed { .. }
                | FieldCheck::Unknown { .. }
                | FieldCheck::NotAnObject { .. }
        )
    }
}

/// Walks `path` (mapping keys only; list elements are stepped into without a
/// segment, so `spec.routes[0].gw` is `["routes", "gw"]` relative to the spec
/// table) through `fields`. Keys below a [`Shape::FreeMap`] key take its
/// support (one level: the values are scalars); anything below [`Shape::Any`]
/// is accepted.
pub fn check_path(fields: &'static [Field], path: &[&str]) -> FieldCheck {
    check_from(fields, path, 0, None)
}

fn check_from(
    mut fields: &'static [Field],
    path: &[&str],
    start: usize,
    mut first_unmodelled: Option<usize>,
) -> FieldCheck {
    let mut depth = start;
    while depth < path.len() {
        let name = path[depth];
        let Some(field) = find_field(fields, name) else {
            return FieldCheck::Unknown {
                depth,
                nearest: nearest(fields.iter().map(|f| f.name), name),
            };
        };
        match field.support {
            Support::Removed(note) => return FieldCheck::Removed { depth, note },
            Support::Unmodelled => {
                first_unmodelled.get_or_insert(depth);
            }
            Support::Modelled => {}
        }
        let rest = path.len() - depth - 1;
        match field.shape {
            Shape::Object(f) | Shape::ObjectList(f) => fields = f,
            Shape::Any => break,
            Shape::FreeMap if rest <= 1 => break,
            Shape::FreeMap => return FieldCheck::NotAnObject { depth: depth + 1 },
            Shape::Scalar | Shape::ScalarList if rest == 0 => break,
            Shape::Scalar | Shape::ScalarList => return FieldCheck::NotAnObject { depth },
        }
        depth += 1;
    }
    match first_unmodelled {
        Some(depth) => FieldCheck::Unmodelled { depth },
        None => FieldCheck::Modelled,
    }
}

impl KindSchema {
    /// Walks a full document path (`["spec", "bgp", "asNumber"]`,
    /// `["metadata", "labels", "rack"]`, `["status", …]`) through
    /// [`TOP_LEVEL`], [`OBJECT_META`] and this kind's spec table.
    pub fn check(&self, path: &[&str]) -> FieldCheck {
        match path.first() {
            None => FieldCheck::Modelled,
            Some(&"spec") => check_from(self.spec, path, 1, None),
            Some(_) => check_path(TOP_LEVEL, path),
        }
    }
}

/// The candidate closest to `name`, if close enough to be a plausible typo:
/// an exact case-insensitive match first, else the smallest edit distance
/// (case-insensitive) of at most max(2, len/3). Ties go to the earlier candidate.
/// Failing that, a dashed name with a part left out: the candidate whose `-`-separated
/// parts contain all of `name`'s in order with the fewest extra (`tor-c1` → `tor-rack-c1`,
/// `spine-a-1` → `spine-zone-a-1`), when `name` has at least two parts.
pub fn nearest<'a>(candidates: impl IntoIterator<Item = &'a str>, name: &str) -> Option<&'a str> {
    if name.len() > crate::scenario::diag::MAX_SUGGESTED_LEN {
        return None;
    }
    let wanted = name.to_ascii_lowercase();
    let limit = (wanted.chars().count() / 3).max(2);
    let wanted_parts: Vec<&str> = wanted.split('-').collect();
    let mut best: Option<(usize, &'a str)> = None;
    let mut by_parts: Option<(usize, &'a str)> = None;
    for c in candidates {
        let lower = c.to_ascii_lowercase();
        let d = edit_distance(&wanted, &lower);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
        if wanted_parts.len() >= 2 {
            let parts: Vec<&str> = lower.split('-').collect();
            let mut rest = parts.iter();
            let contains = wanted_parts.iter().all(|w| rest.any(|p| p == w));
            let extra = parts.len() - wanted_parts.len().min(parts.len());
            if contains && by_parts.is_none_or(|(be, _)| extra < be) {
                by_parts = Some((extra, c));
            }
        }
    }
    best.or(by_parts).map(|(_, c)| c)
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Every field path of a table, flattened (`a`, `a.b`, `a[].b`), in table
/// order; removed fields are left out. For tests and debugging.
pub fn field_paths(fields: &'static [Field]) -> Vec<String> {
    fn walk(fields: &'static [Field], prefix: &str, out: &mut Vec<String>) {
        for f in fields {
            if matches!(f.support, Support::Removed(_)) {
                continue;
            }
            let path = format!("{prefix}{}", f.name);
            out.push(path.clone());
            match f.shape {
                Shape::Object(c) => walk(c, &format!("{path}."), out),
                Shape::ObjectList(c) => walk(c, &format!("{path}[]."), out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(fields, "", &mut out);
    out
}

#[cfg(test)]
mod tests;

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
pub enum Verdict {
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

impl Verdict {
    /// True for the outcomes that are errors.
    pub fn is_error(&self) -> bool {
        matches!(
            self,
            Verdict::Removed { .. } | Verdict::Unknown { .. } | Verdict::NotAnObject { .. }
        )
    }
}

/// Walks `path` (mapping keys only; list elements are stepped into without a
/// segment, so `spec.routes[0].gw` is `["routes", "gw"]` relative to the spec
/// table) through `fields`. Keys below a [`Shape::FreeMap`] key take its
/// support (one level: the values are scalars); anything below [`Shape::Any`]
/// is accepted.
pub fn check_path(fields: &'static [Field], path: &[&str]) -> Verdict {
    check_from(fields, path, 0, None)
}

fn check_from(
    mut fields: &'static [Field],
    path: &[&str],
    start: usize,
    mut first_unmodelled: Option<usize>,
) -> Verdict {
    let mut depth = start;
    while depth < path.len() {
        let name = path[depth];
        let Some(field) = find_field(fields, name) else {
            return Verdict::Unknown {
                depth,
                nearest: nearest(fields.iter().map(|f| f.name), name),
            };
        };
        match field.support {
            Support::Removed(note) => return Verdict::Removed { depth, note },
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
            Shape::FreeMap => return Verdict::NotAnObject { depth: depth + 1 },
            Shape::Scalar | Shape::ScalarList if rest == 0 => break,
            Shape::Scalar | Shape::ScalarList => return Verdict::NotAnObject { depth },
        }
        depth += 1;
    }
    match first_unmodelled {
        Some(depth) => Verdict::Unmodelled { depth },
        None => Verdict::Modelled,
    }
}

impl KindSchema {
    /// Walks a full document path (`["spec", "bgp", "asNumber"]`,
    /// `["metadata", "labels", "rack"]`, `["status", …]`) through
    /// [`TOP_LEVEL`], [`OBJECT_META`] and this kind's spec table.
    pub fn check(&self, path: &[&str]) -> Verdict {
        match path.first() {
            None => Verdict::Modelled,
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
mod tests {
    use super::*;

    fn spec(api_version: &str, kind: &str, path: &str) -> Verdict {
        let schema = kind_schema(api_version, kind)
            .unwrap_or_else(|| panic!("no schema {api_version} {kind}"));
        let segs: Vec<&str> = path.split('.').map(|s| s.trim_end_matches("[]")).collect();
        schema.check(&segs)
    }

    #[test]
    fn brief_examples() {
        for g in [CALICO_V3, CALICO_CRD_V1] {
            assert_eq!(spec(g, "IPPool", "spec.blockSize"), Verdict::Modelled);
            assert_eq!(spec(g, "IPPool", "spec.ipipMode"), Verdict::Modelled);
            assert_eq!(spec(g, "IPPool", "spec.vxlanMode"), Verdict::Modelled);
            assert_eq!(
                spec(g, "IPPool", "spec.blokSize"),
                Verdict::Unknown {
                    depth: 1,
                    nearest: Some("blockSize")
                }
            );
            assert_eq!(
                spec(g, "IPPool", "spec.natoutgoing"),
                Verdict::Unknown {
                    depth: 1,
                    nearest: Some("natOutgoing")
                }
            );
            assert!(matches!(
                spec(g, "IPPool", "spec.ipip.mode"),
                Verdict::Removed { depth: 1, .. }
            ));
            assert!(matches!(
                spec(g, "IPPool", "spec.nat-outgoing"),
                Verdict::Removed { depth: 1, .. }
            ));
            assert_eq!(
                spec(g, "BGPConfiguration", "spec.listenPort"),
                Verdict::Unmodelled { depth: 1 }
            );
            assert_eq!(
                spec(g, "BGPConfiguration", "spec.communities[].value"),
                Verdict::Unmodelled { depth: 1 }
            );
            assert_eq!(
                spec(g, "BGPConfiguration", "spec.prefixAdvertisements[].cidr"),
                Verdict::Unmodelled { depth: 1 }
            );
            assert_eq!(
                spec(g, "BGPConfiguration", "spec.serviceClusterIPs[].cidr"),
                Verdict::Modelled
            );
            assert_eq!(
                spec(g, "BGPConfiguration", "spec.communities[].valeu"),
                Verdict::Unknown {
                    depth: 2,
                    nearest: Some("value")
                }
            );
            assert_eq!(
                spec(g, "BGPPeer", "spec.keepOriginalNextHop"),
                Verdict::Modelled
            );
            assert_eq!(
                spec(g, "BGPPeer", "spec.password.secretKeyRef.key"),
                Verdict::Unmodelled { depth: 1 }
            );
        }
        assert_eq!(
            spec(CALICO_V3, "IPAMConfiguration", "spec.ipCooldownSeconds"),
            Verdict::Modelled
        );
        assert_eq!(
            spec(CALICO_CRD_V1, "IPAMConfig", "spec.strictAffinity"),
            Verdict::Modelled
        );
        assert!(kind_schema(CALICO_CRD_V1, "IPAMConfiguration").is_none());
        assert!(kind_schema(CALICO_V3, "IPAMConfig").is_none());
        assert!(kind_schema(CALICO_CRD_V1, "Node").is_none());

        assert_eq!(
            spec(CALICO_V3, "Node", "spec.bgp.ipv4Address"),
            Verdict::Modelled
        );
        assert_eq!(
            spec(CALICO_V3, "Node", "spec.bgp.ipv6Address"),
            Verdict::Unmodelled { depth: 2 }
        );
        assert_eq!(
            spec(CALICO_V3, "Node", "spec.orchRefs[].orchestrator"),
            Verdict::Unmodelled { depth: 1 }
        );
        assert_eq!(
            spec(CALICO_V3, "Node", "spec.bgp.routeReflectorClusterId"),
            Verdict::Unknown {
                depth: 2,
                nearest: Some("routeReflectorClusterID")
            }
        );
        // A mapping under a scalar.
        assert_eq!(
            spec(CALICO_V3, "Node", "spec.bgp.asNumber.x"),
            Verdict::NotAnObject { depth: 2 }
        );

        let sp = SPIDERPOOL_V2BETA1;
        assert_eq!(
            spec(sp, "SpiderIPPool", "spec.routes[].gw"),
            Verdict::Unmodelled { depth: 1 }
        );
        assert_eq!(
            spec(sp, "SpiderIPPool", "spec.nodeAffinity.matchLabels.rack"),
            Verdict::Modelled
        );
        assert_eq!(
            spec(
                sp,
                "SpiderIPPool",
                "spec.podAffinity.matchExpressions[].operator"
            ),
            Verdict::Modelled
        );
        assert_eq!(
            spec(sp, "SpiderIPPool", "spec.nodeAfinity"),
            Verdict::Unknown {
                depth: 1,
                nearest: Some("nodeAffinity")
            }
        );
        assert!(matches!(
            spec(sp, "SpiderIPPool", "spec.vlan"),
            Verdict::Removed { depth: 1, .. }
        ));
        assert_eq!(spec(sp, "SpiderReservedIP", "spec.ips"), Verdict::Modelled);
        assert_eq!(
            spec(sp, "SpiderReservedIP", "spec.ipVersion"),
            Verdict::Unmodelled { depth: 1 }
        );

        // Top level and metadata.
        assert_eq!(
            spec(CALICO_V3, "IPPool", "metadata.labels.anything"),
            Verdict::Modelled
        );
        assert_eq!(
            spec(
                CALICO_V3,
                "IPPool",
                "metadata.managedFields[].fieldsV1.f:spec"
            ),
            Verdict::Unmodelled { depth: 1 }
        );
        assert_eq!(
            spec(CALICO_V3, "IPPool", "status.conditions"),
            Verdict::Unmodelled { depth: 0 }
        );
        assert_eq!(
            spec(CALICO_V3, "IPPool", "metadata.nmae"),
            Verdict::Unknown {
                depth: 1,
                nearest: Some("name")
            }
        );
        assert_eq!(
            spec(CALICO_V3, "IPPool", "spce"),
            Verdict::Unknown {
                depth: 0,
                nearest: Some("spec")
            }
        );
        assert_eq!(
            spec(CALICO_V3, "IPPool", "metadata.labels.a.b"),
            Verdict::NotAnObject { depth: 2 }
        );
    }

    #[test]
    fn modelled_fields_match_spec_2_3() {
        let modelled = |api: &str, kind: &str| -> Vec<&str> {
            kind_schema(api, kind)
                .unwrap()
                .spec
                .iter()
                .filter(|f| f.modelled())
                .map(|f| f.name)
                .collect()
        };
        let ippool = [
            "cidr",
            "blockSize",
            "ipipMode",
            "vxlanMode",
            "natOutgoing",
            "disabled",
            "disableBGPExport",
            "nodeSelector",
            "namespaceSelector",
            "allowedUses",
            "assignmentMode",
        ];
        let ipam = [
            "strictAffinity",
            "autoAllocateBlocks",
            "maxBlocksPerHost",
            "ipCooldownSeconds",
        ];
        // The graceful-restart times (issue #21) are modelled beyond SPEC §2.3's table.
        let bgpconf = [
            "asNumber",
            "nodeToNodeMeshEnabled",
            "nodeMeshMaxRestartTime",
            "serviceClusterIPs",
            "serviceExternalIPs",
            "serviceLoadBalancerIPs",
        ];
        let peer = [
            "node",
            "nodeSelector",
            "peerIP",
            "peerSelector",
            "asNumber",
            "keepOriginalNextHop",
            "maxRestartTime",
        ];
        for g in [CALICO_V3, CALICO_CRD_V1] {
            assert_eq!(modelled(g, "IPPool"), ippool);
            assert_eq!(modelled(g, "IPReservation"), ["reservedCIDRs"]);
            assert_eq!(modelled(g, "BGPConfiguration"), bgpconf);
            assert_eq!(modelled(g, "BGPPeer"), peer);
        }
        assert_eq!(modelled(CALICO_V3, "IPAMConfiguration"), ipam);
        assert_eq!(modelled(CALICO_CRD_V1, "IPAMConfig"), ipam);
        assert_eq!(modelled(CALICO_V3, "Node"), ["bgp"]);
        let bgp = find_field(NODE_SPEC, "bgp").unwrap().children().unwrap();
        let node_bgp: Vec<_> = bgp
            .iter()
            .filter(|f| f.modelled())
            .map(|f| f.name)
            .collect();
        assert_eq!(
            node_bgp,
            ["ipv4Address", "asNumber", "routeReflectorClusterID"]
        );
        assert_eq!(
            modelled(SPIDERPOOL_V2BETA1, "SpiderIPPool"),
            [
                "subnet",
                "ips",
                "excludeIPs",
                "gateway",
                "nodeName",
                "nodeAffinity",
                "namespaceName",
                "namespaceAffinity",
                "podAffinity",
                "default",
                "disable",
            ]
        );
        assert_eq!(modelled(SPIDERPOOL_V2BETA1, "SpiderReservedIP"), ["ips"]);
        // Kinds with a table but not modelled, and modelled kinds.
        for s in SCHEMAS {
            let expect = !matches!(s.kind, "BGPFilter" | "SpiderSubnet");
            assert_eq!(s.modelled, expect, "{} {}", s.api_version, s.kind);
            assert!(
                known_kinds(s.api_version).contains(&s.kind),
                "{} {}",
                s.api_version,
                s.kind
            );
            // Children of an unmodelled field are unmodelled too.
            fn no_modelled_below_unmodelled(fields: &'static [Field], parent_unmodelled: bool) {
                for f in fields {
                    assert!(!(parent_unmodelled && f.modelled()), "{}", f.name);
                    if let Some(c) = f.children() {
                        no_modelled_below_unmodelled(c, parent_unmodelled || !f.modelled());
                    }
                }
            }
            no_modelled_below_unmodelled(s.spec, !s.modelled);
        }
    }

    #[test]
    fn known_kinds_per_group() {
        assert!(known_kinds(CALICO_V3).contains(&"Node"));
        assert!(known_kinds(CALICO_V3).contains(&"IPAMConfiguration"));
        assert!(!known_kinds(CALICO_V3).contains(&"IPAMConfig"));
        assert!(known_kinds(CALICO_CRD_V1).contains(&"IPAMConfig"));
        assert!(!known_kinds(CALICO_CRD_V1).contains(&"IPAMConfiguration"));
        assert!(!known_kinds(CALICO_CRD_V1).contains(&"Node"));
        assert!(known_kinds(SPIDERPOOL_V2BETA1).contains(&"SpiderSubnet"));
        assert!(!known_kinds(SPIDERPOOL_V2BETA1).contains(&"SpiderClaimParameter"));
        assert!(known_kinds(CORE_V1).contains(&"ConfigMap"));
        assert!(known_kinds(APPS_V1).contains(&"Deployment"));
        assert!(known_kinds("batch/v1").is_empty());
        assert_eq!(
            nearest(known_kinds(CALICO_V3).iter().copied(), "BGPPeers"),
            Some("BGPPeer")
        );
        assert_eq!(
            nearest(known_kinds(CALICO_V3).iter().copied(), "IpPool"),
            Some("IPPool")
        );
        let hint = |g, k| unknown_kind_hint(g, k).unwrap_or_default();
        assert_eq!(
            hint(CALICO_CRD_V1, "IPAMConfiguration"),
            "`crd.projectcalico.org/v1` calls this kind `IPAMConfig`"
        );
        assert_eq!(
            hint(CALICO_V3, "IPAMConfig"),
            "`projectcalico.org/v3` calls this kind `IPAMConfiguration`"
        );
        assert_eq!(
            hint(CALICO_CRD_V1, "Node"),
            "`Node` is served by `projectcalico.org/v3`, not by `crd.projectcalico.org/v1`"
        );
        assert_eq!(hint(CALICO_V3, "BGPPeers"), "did you mean `BGPPeer`?");
        assert_eq!(hint(APPS_V1, "Deploymnet"), "did you mean `Deployment`?");
        assert_eq!(hint(CORE_V1, "ConfigMaps"), "did you mean `ConfigMap`?");
        assert_eq!(
            hint(CORE_V1, "StatefulSet"),
            "`StatefulSet` is served by `apps/v1`, not by `v1`"
        );
        assert!(hint(SPIDERPOOL_V2BETA1, "SpiderClaimParameter").contains("removed"));
        assert_eq!(unknown_kind_hint(SPIDERPOOL_V2BETA1, "Frobnicator"), None);
        assert_eq!(
            nearest(API_VERSIONS.iter().copied(), "projectcalico.org/v1"),
            Some(CALICO_V3)
        );
        for g in API_VERSIONS {
            let kinds = known_kinds(g);
            assert!(
                kinds.windows(2).all(|w| w[0] < w[1]),
                "{g}: sorted, no duplicates"
            );
        }
        assert!(
            REMOVED_KINDS
                .iter()
                .all(|(g, k, _)| !known_kinds(g).contains(k))
        );
    }

    #[test]
    fn nearest_is_conservative() {
        let names = ["gw", "dst"];
        assert_eq!(nearest(names, "gateway"), None);
        assert_eq!(nearest(names, "GW"), Some("gw"));
        assert_eq!(
            nearest(["peerIP", "peerSelector"], "peerIp"),
            Some("peerIP")
        );
        assert_eq!(nearest(["asNumber"], "asn"), None);
        // A dashed name with a part left out finds the name that has them all.
        let devices = [
            "c1-w-1",
            "tor-rack-a1",
            "tor-rack-c1",
            "spine-zone-a-1",
            "core",
        ];
        assert_eq!(nearest(devices, "tor-c1"), Some("tor-rack-c1"));
        assert_eq!(nearest(devices, "spine-a-1"), Some("spine-zone-a-1"));
        assert_eq!(nearest(devices, "tor-d1"), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    // Flattened `spec` field lists of the CRDs at the commits in the module doc
    // (space separated, sorted). The projectcalico.org/v3 and crd.projectcalico.org/v1
    // CRDs have identical spec trees at that commit; Node has no CRD and its list is
    // taken from the Go type (libcalico-go/lib/apis/internalapi/node.go).
    const CRD_IPPOOL: &str = "allowedUses assignmentMode blockSize cidr disableBGPExport disabled ipipMode namespaceSelector natOutgoing nodeSelector vxlanMode";
    const CRD_IPAMCONFIG: &str = "autoAllocateBlocks ipCooldownSeconds kubeVirtVMAddressPersistence maxBlocksPerHost strictAffinity";
    const CRD_IPRESERVATION: &str = "reservedCIDRs";
    const CRD_BGPCONFIGURATION: &str = "asNumber bindMode communities communities[].name communities[].value ignoredInterfaces ipv4NormalRoutePriority ipv6NormalRoutePriority listenPort localWorkloadPeeringIPV4 localWorkloadPeeringIPV6 logSeverityScreen nodeMeshMaxRestartTime nodeMeshPassword nodeMeshPassword.secretKeyRef nodeMeshPassword.secretKeyRef.key nodeMeshPassword.secretKeyRef.name nodeMeshPassword.secretKeyRef.optional nodeToNodeMeshEnabled prefixAdvertisements prefixAdvertisements[].cidr prefixAdvertisements[].communities programClusterRoutes serviceClusterIPs serviceClusterIPs[].cidr serviceExternalIPs serviceExternalIPs[].cidr serviceLoadBalancerAggregation serviceLoadBalancerIPs serviceLoadBalancerIPs[].cidr";
    const CRD_BGPPEER: &str = "asNumber filters keepOriginalNextHop keepaliveTime localASNumber localWorkloadSelector maxRestartTime nextHopMode node nodeSelector numAllowedLocalASNumbers password password.secretKeyRef password.secretKeyRef.key password.secretKeyRef.name password.secretKeyRef.optional peerIP peerSelector reachableBy reversePeering sourceAddress ttlSecurity";
    const CRD_BGPFILTER_RULE: &str = "action asPathPrefix cidr communities communities.values interface matchOperator operations operations[].addCommunity operations[].addCommunity.value operations[].prependASPath operations[].prependASPath.prefix operations[].setPriority operations[].setPriority.value peerType prefixLength prefixLength.max prefixLength.min priority source";
    const GO_NODE: &str = "addresses addresses[].address addresses[].type bgp bgp.asNumber bgp.ipv4Address bgp.ipv4IPIPTunnelAddr bgp.ipv6Address bgp.routeReflectorClusterID interfaces interfaces[].addresses interfaces[].name ipv4VXLANTunnelAddr ipv6VXLANTunnelAddr orchRefs orchRefs[].nodeName orchRefs[].orchestrator vxlanTunnelMACAddr vxlanTunnelMACAddrV6 wireguard wireguard.interfaceIPv4Address wireguard.interfaceIPv6Address";
    const CRD_SPIDERIPPOOL: &str = "default disable excludeIPs gateway ipVersion ips multusName namespaceAffinity namespaceAffinity.matchExpressions namespaceAffinity.matchExpressions[].key namespaceAffinity.matchExpressions[].operator namespaceAffinity.matchExpressions[].values namespaceAffinity.matchLabels namespaceName nodeAffinity nodeAffinity.matchExpressions nodeAffinity.matchExpressions[].key nodeAffinity.matchExpressions[].operator nodeAffinity.matchExpressions[].values nodeAffinity.matchLabels nodeName podAffinity podAffinity.matchExpressions podAffinity.matchExpressions[].key podAffinity.matchExpressions[].operator podAffinity.matchExpressions[].values podAffinity.matchLabels routes routes[].dst routes[].gw subnet";
    const CRD_SPIDERRESERVEDIP: &str = "ipVersion ips";
    const CRD_SPIDERSUBNET: &str =
        "excludeIPs gateway ipVersion ips routes routes[].dst routes[].gw subnet";

    #[test]
    fn tables_match_the_crds() {
        let mut bgpfilter = Vec::new();
        for list in ["exportV4", "exportV6", "importV4", "importV6"] {
            bgpfilter.push(list.to_string());
            bgpfilter.extend(
                CRD_BGPFILTER_RULE
                    .split(' ')
                    .map(|p| format!("{list}[].{p}")),
            );
        }
        let bgpfilter = bgpfilter.join(" ");
        let mut expected: Vec<(&str, &str, &str)> = Vec::new();
        for g in [CALICO_V3, CALICO_CRD_V1] {
            expected.push((g, "IPPool", CRD_IPPOOL));
            expected.push((g, "IPReservation", CRD_IPRESERVATION));
            expected.push((g, "BGPConfiguration", CRD_BGPCONFIGURATION));
            expected.push((g, "BGPPeer", CRD_BGPPEER));
            expected.push((g, "BGPFilter", &bgpfilter));
        }
        expected.push((CALICO_V3, "IPAMConfiguration", CRD_IPAMCONFIG));
        expected.push((CALICO_CRD_V1, "IPAMConfig", CRD_IPAMCONFIG));
        expected.push((CALICO_V3, "Node", GO_NODE));
        expected.push((SPIDERPOOL_V2BETA1, "SpiderIPPool", CRD_SPIDERIPPOOL));
        expected.push((SPIDERPOOL_V2BETA1, "SpiderReservedIP", CRD_SPIDERRESERVEDIP));
        expected.push((SPIDERPOOL_V2BETA1, "SpiderSubnet", CRD_SPIDERSUBNET));
        assert_eq!(expected.len(), SCHEMAS.len());
        for (g, k, crd) in expected {
            let mut ours = field_paths(kind_schema(g, k).unwrap().spec);
            ours.sort();
            let mut theirs: Vec<String> = crd.split(' ').map(str::to_string).collect();
            theirs.sort();
            assert_eq!(ours, theirs, "{g} {k}");
        }
    }

    /// Every field path of every Calico/Spiderpool object in
    /// shared/real-manifests/ (List items included; label and annotation keys
    /// left out), listed by reading the files: `apiVersion kind path`.
    const REAL_MANIFEST_PATHS: &str = "
crd.projectcalico.org/v1 IPAMConfig metadata.name
crd.projectcalico.org/v1 IPAMConfig spec.autoAllocateBlocks
crd.projectcalico.org/v1 IPAMConfig spec.strictAffinity
crd.projectcalico.org/v1 IPPool metadata.name
crd.projectcalico.org/v1 IPPool spec.blockSize
crd.projectcalico.org/v1 IPPool spec.cidr
crd.projectcalico.org/v1 IPPool spec.disabled
crd.projectcalico.org/v1 IPPool spec.ipipMode
crd.projectcalico.org/v1 IPPool spec.natOutgoing
crd.projectcalico.org/v1 IPPool spec.nodeSelector
crd.projectcalico.org/v1 IPPool spec.vxlanMode
projectcalico.org/v3 BGPConfiguration metadata.name
projectcalico.org/v3 BGPConfiguration spec.asNumber
projectcalico.org/v3 BGPConfiguration spec.bindMode
projectcalico.org/v3 BGPConfiguration spec.communities
projectcalico.org/v3 BGPConfiguration spec.communities[].name
projectcalico.org/v3 BGPConfiguration spec.communities[].value
projectcalico.org/v3 BGPConfiguration spec.listenPort
projectcalico.org/v3 BGPConfiguration spec.logSeverityScreen
projectcalico.org/v3 BGPConfiguration spec.nodeMeshMaxRestartTime
projectcalico.org/v3 BGPConfiguration spec.nodeToNodeMeshEnabled
projectcalico.org/v3 BGPConfiguration spec.prefixAdvertisements
projectcalico.org/v3 BGPConfiguration spec.prefixAdvertisements[].cidr
projectcalico.org/v3 BGPConfiguration spec.prefixAdvertisements[].communities
projectcalico.org/v3 BGPConfiguration spec.serviceClusterIPs
projectcalico.org/v3 BGPConfiguration spec.serviceClusterIPs[].cidr
projectcalico.org/v3 BGPConfiguration spec.serviceExternalIPs
projectcalico.org/v3 BGPConfiguration spec.serviceExternalIPs[].cidr
projectcalico.org/v3 BGPConfiguration spec.serviceLoadBalancerIPs
projectcalico.org/v3 BGPConfiguration spec.serviceLoadBalancerIPs[].cidr
projectcalico.org/v3 BGPFilter metadata.name
projectcalico.org/v3 BGPFilter spec.exportV4
projectcalico.org/v3 BGPFilter spec.exportV4[].action
projectcalico.org/v3 BGPFilter spec.exportV4[].cidr
projectcalico.org/v3 BGPFilter spec.exportV4[].interface
projectcalico.org/v3 BGPFilter spec.exportV4[].matchOperator
projectcalico.org/v3 BGPFilter spec.exportV4[].source
projectcalico.org/v3 BGPFilter spec.exportV6
projectcalico.org/v3 BGPFilter spec.exportV6[].action
projectcalico.org/v3 BGPFilter spec.exportV6[].cidr
projectcalico.org/v3 BGPFilter spec.exportV6[].interface
projectcalico.org/v3 BGPFilter spec.exportV6[].matchOperator
projectcalico.org/v3 BGPFilter spec.exportV6[].source
projectcalico.org/v3 BGPPeer metadata.creationTimestamp
projectcalico.org/v3 BGPPeer metadata.managedFields
projectcalico.org/v3 BGPPeer metadata.managedFields[].apiVersion
projectcalico.org/v3 BGPPeer metadata.managedFields[].fieldsType
projectcalico.org/v3 BGPPeer metadata.managedFields[].fieldsV1
projectcalico.org/v3 BGPPeer metadata.managedFields[].fieldsV1.f:spec
projectcalico.org/v3 BGPPeer metadata.managedFields[].fieldsV1.f:spec.f:asNumber
projectcalico.org/v3 BGPPeer metadata.managedFields[].fieldsV1.f:spec.f:nodeSelector
projectcalico.org/v3 BGPPeer metadata.managedFields[].fieldsV1.f:spec.f:peerIP
projectcalico.org/v3 BGPPeer metadata.managedFields[].manager
projectcalico.org/v3 BGPPeer metadata.managedFields[].operation
projectcalico.org/v3 BGPPeer metadata.managedFields[].time
projectcalico.org/v3 BGPPeer metadata.name
projectcalico.org/v3 BGPPeer metadata.resourceVersion
projectcalico.org/v3 BGPPeer metadata.uid
projectcalico.org/v3 BGPPeer spec.asNumber
projectcalico.org/v3 BGPPeer spec.filters
projectcalico.org/v3 BGPPeer spec.keepOriginalNextHop
projectcalico.org/v3 BGPPeer spec.node
projectcalico.org/v3 BGPPeer spec.nodeSelector
projectcalico.org/v3 BGPPeer spec.peerIP
projectcalico.org/v3 BGPPeer spec.peerSelector
projectcalico.org/v3 BGPPeer spec.sourceAddress
projectcalico.org/v3 IPAMConfiguration metadata.name
projectcalico.org/v3 IPAMConfiguration spec.kubeVirtVMAddressPersistence
projectcalico.org/v3 IPAMConfiguration spec.maxBlocksPerHost
projectcalico.org/v3 IPAMConfiguration spec.strictAffinity
projectcalico.org/v3 IPPool metadata.creationTimestamp
projectcalico.org/v3 IPPool metadata.name
projectcalico.org/v3 IPPool metadata.resourceVersion
projectcalico.org/v3 IPPool metadata.uid
projectcalico.org/v3 IPPool spec.allowedUses
projectcalico.org/v3 IPPool spec.assignmentMode
projectcalico.org/v3 IPPool spec.blockSize
projectcalico.org/v3 IPPool spec.cidr
projectcalico.org/v3 IPPool spec.disableBGPExport
projectcalico.org/v3 IPPool spec.disabled
projectcalico.org/v3 IPPool spec.ipipMode
projectcalico.org/v3 IPPool spec.natOutgoing
projectcalico.org/v3 IPPool spec.nodeSelector
projectcalico.org/v3 IPPool spec.vxlanMode
projectcalico.org/v3 IPReservation metadata.name
projectcalico.org/v3 IPReservation spec.reservedCIDRs
projectcalico.org/v3 Node metadata.labels
projectcalico.org/v3 Node metadata.name
projectcalico.org/v3 Node spec.bgp
projectcalico.org/v3 Node spec.bgp.asNumber
projectcalico.org/v3 Node spec.bgp.ipv4Address
projectcalico.org/v3 Node spec.bgp.ipv4IPIPTunnelAddr
projectcalico.org/v3 Node spec.bgp.ipv6Address
projectcalico.org/v3 Node spec.bgp.routeReflectorClusterID
spiderpool.spidernet.io/v2beta1 SpiderIPPool metadata.labels
spiderpool.spidernet.io/v2beta1 SpiderIPPool metadata.name
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.default
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.disable
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.excludeIPs
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.gateway
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.ipVersion
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.ips
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.multusName
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.namespaceAffinity
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.namespaceAffinity.matchLabels
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.namespaceName
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.nodeAffinity
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.nodeAffinity.matchExpressions
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.nodeAffinity.matchExpressions[].key
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.nodeAffinity.matchExpressions[].operator
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.nodeAffinity.matchExpressions[].values
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.nodeName
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.podAffinity
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.podAffinity.matchLabels
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.routes
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.routes[].dst
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.routes[].gw
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.subnet
spiderpool.spidernet.io/v2beta1 SpiderReservedIP metadata.name
spiderpool.spidernet.io/v2beta1 SpiderReservedIP spec.ips
spiderpool.spidernet.io/v2beta1 SpiderSubnet metadata.name
spiderpool.spidernet.io/v2beta1 SpiderSubnet spec.gateway
spiderpool.spidernet.io/v2beta1 SpiderSubnet spec.ips
spiderpool.spidernet.io/v2beta1 SpiderSubnet spec.routes
spiderpool.spidernet.io/v2beta1 SpiderSubnet spec.routes[].dst
spiderpool.spidernet.io/v2beta1 SpiderSubnet spec.routes[].gw
spiderpool.spidernet.io/v2beta1 SpiderSubnet spec.subnet
";

    #[test]
    fn every_field_of_the_real_manifests_is_known() {
        let mut n = 0;
        for line in REAL_MANIFEST_PATHS.lines().filter(|l| !l.trim().is_empty()) {
            let mut it = line.split(' ');
            let (g, k, p) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
            assert!(known_kinds(g).contains(&k), "{line}");
            let v = spec(g, k, p);
            assert!(!v.is_error(), "{line}: {v:?}");
            n += 1;
        }
        assert!(n > 100);
    }
}

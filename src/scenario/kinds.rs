//! Decoding the resource kinds podnet models (SPEC §2.3) from their located trees.
//!
//! Each resource goes through three steps, all reporting into the shared [`Cx`] with the
//! resource's own path prefix (`resources[2].spec.blockSize`, or `spec.blockSize` for a
//! manifest file, whose positions point into that file):
//!
//! 1. **Classify** by `apiVersion` and `kind`: a modelled kind is decoded; a kind its API group
//!    serves but podnet does not model (`BGPFilter`, `SpiderSubnet`, `FelixConfiguration`…) and
//!    an API group podnet does not know are accepted as [`ResourceSpec::Ignored`] with one
//!    warning per kind; workload kinds (`Pod`, `Deployment`…) are `Ignored` silently because
//!    the workload loader reads them; a kind the group does not serve is an error with a hint
//!    (`apps/v1` `Deploymnet`: did you mean `Deployment`?). The groups podnet models a kind of
//!    (`v1`, `apps/v1`, Calico's two, Spiderpool's) list every real kind they serve, so only a
//!    true misspelling is refused: a `v1` ConfigMap is a real kind, accepted with a warning.
//!    The network policy kinds, Tiers and ServiceAccounts are checked against
//!    [`super::policy_fields`]' tables and decoded by [`super::policy_kinds`].
//! 2. **Check every key** against the field tables of [`super::api_fields`], as the API server
//!    would: a typo is an error naming the nearest field, a removed field an error with its
//!    note, a real field podnet does not model one warning (per kind and field, at its first
//!    occurrence). `metadata` fields the server fills in and `status` are accepted silently:
//!    they are what `kubectl get -o yaml` prints and users re-apply.
//! 3. **Decode** the modelled fields into the IPAM and BGP types, reporting malformed values
//!    at their own position.
//!
//! Then the rules that span resources run on the decoded values — Calico's pool validation
//! ([`crate::ipam::calico::validate`]) and Spiderpool's webhook checks
//! ([`crate::ipam::spiderpool::validate`]) — and their problems are mapped back to the field
//! (or list item) of the resource they concern.
//!
//! Invariants: the output is aligned with the input and an entry is `None` exactly when that
//! resource had an error; iteration is in input order, so diagnostics are deterministic.
//!
//! What this module does not do: it does not turn workload manifests into workloads, merge a
//! Calico `Node` into the topology or check that its `ipv4Address` holds the node's address
//! (the model layers do that with the decoded values), and it does not check overlaps that
//! only arise when events apply resources at run time (see [`cross_checked`]).

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;

use super::api_fields::{self, Field, KindSchema, Shape, Support, TOP_LEVEL, Verdict};
use super::decode::{Cidr, Cx, Decode, StringMap};
use super::diag::{Pos, nearest};
use super::resource::Resource;
use super::yaml::{Key, Node, Value};
use super::{policy_fields, policy_kinds, service_kind};
use crate::ipam::calico::{
    self, AllowedUse, AssignmentMode, EncapMode, IpPool, IpReservation, IpamConfig,
};
use crate::ipam::spiderpool::{self, IpRange, SpiderIpPool, SpiderReservedIp};
use crate::model::Labels;
use crate::model::network::{CalicoBackend, CalicoProfile, Cni, Network};
use crate::model::prefixes::Prefixes;
use crate::model::selector::{LabelOperator, LabelRequirement, LabelSelector, Selector};
use crate::model::time::SimDuration;
use crate::model::topology::Topology;
use crate::policy::model::PolicyResource;

/// A `v1` Namespace: only its labels and annotations matter.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Namespace {
    pub name: String,
    pub labels: Labels,
    pub annotations: Labels,
}

/// Calico's `Node` resource, merged into the topology node of the same name.
#[derive(Clone, Debug, PartialEq)]
pub struct CalicoNode {
    pub name: String,
    pub labels: Labels,
    /// `spec.bgp.ipv4Address` with its prefix length (the node's subnet for CrossSubnet).
    pub ipv4_address: Option<IpNet>,
    pub as_number: Option<u32>,
    pub route_reflector_cluster_id: Option<Ipv4Addr>,
}

/// The `default` BGPConfiguration (node-specific ones, `node.<name>`, are kept by name).
#[derive(Clone, Debug, PartialEq)]
pub struct BgpConfiguration {
    pub name: String,
    pub as_number: Option<u32>,
    pub node_to_node_mesh_enabled: Option<bool>,
    pub service_cluster_ips: Vec<IpNet>,
}

/// A Calico `BGPPeer`.
#[derive(Clone, Debug, PartialEq)]
pub struct BgpPeer {
    pub name: String,
    /// `spec.node`: the peering applies to this node only.
    pub node: Option<String>,
    pub node_selector: Option<Selector>,
    /// Without its port (`10.0.0.1:179` → 10.0.0.1); the port is kept separately.
    pub peer_ip: Option<IpAddr>,
    pub peer_port: Option<u16>,
    pub peer_selector: Option<Selector>,
    pub as_number: Option<u32>,
    pub keep_original_next_hop: bool,
}

/// What one resource means to podnet.
#[derive(Clone, Debug, PartialEq)]
pub enum ResourceSpec {
    IpPool(IpPool),
    IpamConfig(IpamConfig),
    IpReservation(IpReservation),
    SpiderIpPool(SpiderIpPool),
    SpiderReservedIp(SpiderReservedIp),
    Namespace(Namespace),
    CalicoNode(CalicoNode),
    BgpConfiguration(BgpConfiguration),
    BgpPeer(BgpPeer),
    /// A network policy kind, Tier or ServiceAccount, in the policy model's terms
    /// (decoded by [`super::policy_kinds`]).
    Policy(PolicyResource),
    /// A `v1` Service ([`super::service_kind`]).
    Service(crate::model::service::Service),
    /// A kind podnet accepts but does not model (reported once as a warning).
    Ignored,
}

/// Decodes every resource (those present from the start, then those applied by events, in
/// that order), reporting each problem at its place in its file, and checks the rules that
/// span resources. The result is aligned with the input: `out[i]` is `resources[i]`'s meaning
/// (`None` when it had errors).
pub fn decode_all(
    resources: &[&Resource],
    topology: &Topology,
    network: &Network,
    profile: CalicoProfile,
    cx: &mut Cx,
) -> Vec<Option<ResourceSpec>> {
    let mut d = Decoder {
        topology,
        network,
        profile,
        warned: BTreeSet::new(),
        rack_subnets: Prefixes::new(topology.racks.iter().map(|r| r.subnet)),
    };
    let mut out: Vec<Option<ResourceSpec>> = resources
        .iter()
        .map(|r| {
            let before = cx.diagnostics.len();
            let spec = cx.with_path_prefix(&r.path, |cx| d.resource(r, cx));
            let failed = cx.diagnostics[before..].iter().any(|x| x.is_error());
            spec.filter(|_| !failed)
        })
        .collect();
    let failed = cross_check(resources, &out, cx);
    for i in failed {
        out[i] = None;
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Classifying a resource by apiVersion and kind.

const V1: &str = api_fields::CORE_V1;
const APPS_V1: &str = api_fields::APPS_V1;

/// The kinds podnet reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Modelled {
    IpPool,
    IpamConfig,
    IpReservation,
    BgpConfiguration,
    BgpPeer,
    CalicoNode,
    SpiderIpPool,
    SpiderReservedIp,
    Namespace,
}

/// What podnet does with a resource of some apiVersion and kind.
enum Class {
    Modelled(Modelled, &'static KindSchema),
    /// A network policy kind, Tier or ServiceAccount ([`super::policy_kinds`]).
    Policy(&'static KindSchema),
    /// A `v1` Service ([`super::service_kind`]).
    Service,
    /// The workload loader reads these; nothing to say here.
    Workload,
    /// A real kind of a known group that podnet does not model (its schema, if podnet has
    /// one, still catches typos).
    Unmodelled(Option<&'static KindSchema>),
    /// An API group podnet knows nothing about.
    ForeignGroup,
    /// A kind the group does not serve: an error, with a hint when one fits.
    Invented(Option<String>),
}

/// `v1` Namespace: podnet reads its metadata; its spec holds only `finalizers`.
static NAMESPACE_SCHEMA: KindSchema = KindSchema {
    api_version: V1,
    kind: "Namespace",
    modelled: true,
    namespaced: false,
    spec: &[Field {
        name: "finalizers",
        shape: Shape::ScalarList,
        support: Support::Unmodelled,
    }],
};

fn classify(api_version: &str, kind: &str) -> Class {
    if let Some(schema) = policy_fields::policy_schema(api_version, kind) {
        return Class::Policy(schema);
    }
    match (api_version, kind) {
        (V1, "Namespace") => return Class::Modelled(Modelled::Namespace, &NAMESPACE_SCHEMA),
        (V1, "Service") => return Class::Service,
        (V1, "Pod") | (APPS_V1, "Deployment" | "StatefulSet" | "DaemonSet") => {
            return Class::Workload;
        }
        _ => {}
    }
    if api_fields::known_kinds(api_version).is_empty() {
        return Class::ForeignGroup;
    }
    let schema = api_fields::kind_schema(api_version, kind);
    let modelled = match kind {
        "IPPool" => Some(Modelled::IpPool),
        "IPAMConfiguration" | "IPAMConfig" => Some(Modelled::IpamConfig),
        "IPReservation" => Some(Modelled::IpReservation),
        "BGPConfiguration" => Some(Modelled::BgpConfiguration),
        "BGPPeer" => Some(Modelled::BgpPeer),
        "Node" => Some(Modelled::CalicoNode),
        "SpiderIPPool" => Some(Modelled::SpiderIpPool),
        "SpiderReservedIP" => Some(Modelled::SpiderReservedIp),
        _ => None,
    };
    match (schema, modelled) {
        // The schema tables decide which group serves which spelling (IPAMConfig in the CRD
        // group, IPAMConfiguration in v3; Node only in v3).
        (Some(s), Some(m)) if s.modelled => Class::Modelled(m, s),
        (schema, _) if api_fields::known_kinds(api_version).contains(&kind) => {
            Class::Unmodelled(schema)
        }
        _ => Class::Invented(api_fields::unknown_kind_hint(api_version, kind)),
    }
}

/// For a kind some modelled API group serves, written under an `apiVersion` podnet does not
/// know (`projectcalico.org/v33` `IPPool`): the nearest group serving it, or the only one.
fn api_version_hint(api_version: &str, kind: &str) -> Option<&'static str> {
    let serving: Vec<&'static str> = api_fields::API_VERSIONS
        .iter()
        .copied()
        .filter(|v| api_fields::known_kinds(v).contains(&kind))
        .collect();
    super::diag::nearest(api_version, serving.iter().copied()).or(match serving.as_slice() {
        [only] => Some(*only),
        _ => None,
    })
}

// ---------------------------------------------------------------------------------------------
// One resource.

/// Racks named in one pool's overlap warnings; the rest are counted in one more.
const MAX_RACKS_WARNED: usize = 10;

struct Decoder<'a> {
    topology: &'a Topology,
    network: &'a Network,
    /// Which Calico release's policy naming applies (admin tier names, name prefixes).
    profile: CalicoProfile,
    /// Warnings already given once: (kind or apiVersion, field path or kind).
    warned: BTreeSet<(String, String)>,
    /// The racks' subnets by rack index, so each pool finds the racks it overlaps without a
    /// scan of every rack.
    rack_subnets: Prefixes,
}

impl Decoder<'_> {
    fn resource(&mut self, r: &Resource, cx: &mut Cx) -> Option<ResourceSpec> {
        match classify(&r.api_version, &r.kind) {
            Class::Workload => Some(ResourceSpec::Ignored),
            Class::ForeignGroup => {
                self.warn_once(r, cx, "apiVersion", || {
                    format!(
                        "podnet does not model `{}` `{}`; accepted and ignored{}",
                        r.api_version,
                        r.kind,
                        api_version_hint(&r.api_version, &r.kind)
                            .map(|v| format!(" (did you mean `{v}`?)"))
                            .unwrap_or_default()
                    )
                });
                Some(ResourceSpec::Ignored)
            }
            Class::Unmodelled(schema) => {
                self.warn_once(r, cx, "kind", || {
                    format!(
                        "podnet does not model `{}` resources; accepted and ignored \
                         (reported once for every `{}`)",
                        r.kind, r.kind
                    )
                });
                if let Some(schema) = schema {
                    self.check_fields(r, schema, false, cx);
                }
                Some(ResourceSpec::Ignored)
            }
            Class::Invented(hint) => {
                let hint = hint.map(|h| format!("; {h}")).unwrap_or_default();
                let pos = r.locate(&["kind"]);
                cx.at_key("kind", |cx| {
                    cx.error(
                        pos,
                        format!("`{}` has no kind `{}`{hint}", r.api_version, r.kind),
                    )
                });
                None
            }
            Class::Policy(schema) => {
                let trimmed = policy_kinds::without_service_account_fields(r);
                self.check_fields(trimmed.as_ref().unwrap_or(r), schema, true, cx);
                let (labels, _) = metadata_maps(r, cx);
                policy_kinds::decode(r, schema, labels, self.profile, cx).map(ResourceSpec::Policy)
            }
            Class::Service => {
                self.check_fields(r, &service_kind::SERVICE_SCHEMA, true, cx);
                service_kind::decode(r, cx).map(ResourceSpec::Service)
            }
            Class::Modelled(kind, schema) => {
                self.check_fields(r, schema, true, cx);
                let meta = metadata_maps(r, cx);
                self.decode(kind, r, meta, cx)
            }
        }
    }

    /// One warning per (apiVersion, kind) at the resource's `at` key.
    fn warn_once(&mut self, r: &Resource, cx: &mut Cx, at: &str, message: impl FnOnce() -> String) {
        if self
            .warned
            .insert((r.api_version.clone(), format!("kind {}", r.kind)))
        {
            let pos = r.locate(&[at]);
            let message = message();
            cx.at_key(at, |cx| cx.warning(pos, message));
        }
    }

    fn decode(
        &mut self,
        kind: Modelled,
        r: &Resource,
        (labels, annotations): (Labels, Labels),
        cx: &mut Cx,
    ) -> Option<ResourceSpec> {
        if kind == Modelled::Namespace {
            // A Namespace's spec holds only finalizers, which the field check warned about.
            return Some(ResourceSpec::Namespace(Namespace {
                name: r.name.clone(),
                labels,
                annotations,
            }));
        }
        let spec = Spec::of(r, cx)?;
        self.warn_unused_ipam(kind, r, cx);
        cx.at_key("spec", |cx| match kind {
            Modelled::IpPool => self.ip_pool(r, &spec, cx).map(ResourceSpec::IpPool),
            Modelled::IpamConfig => ipam_config(r, &spec, cx).map(ResourceSpec::IpamConfig),
            Modelled::IpReservation => {
                ip_reservation(r, &spec, cx).map(ResourceSpec::IpReservation)
            }
            Modelled::BgpConfiguration => {
                bgp_configuration(r, &spec, cx).map(ResourceSpec::BgpConfiguration)
            }
            Modelled::BgpPeer => self.bgp_peer(r, &spec, cx).map(ResourceSpec::BgpPeer),
            Modelled::CalicoNode => self
                .calico_node(r, labels, &spec, cx)
                .map(ResourceSpec::CalicoNode),
            Modelled::SpiderIpPool => self
                .spider_ip_pool(r, &spec, cx)
                .map(ResourceSpec::SpiderIpPool),
            Modelled::SpiderReservedIp => {
                spider_reserved_ip(r, &spec, cx).map(ResourceSpec::SpiderReservedIp)
            }
            Modelled::Namespace => None,
        })
    }

    /// SPEC §2.3: resources of the IPAM that `network.cni` does not select are accepted and
    /// unused, with a warning.
    fn warn_unused_ipam(&self, kind: Modelled, r: &Resource, cx: &mut Cx) {
        let calico_ipam = matches!(
            kind,
            Modelled::IpPool | Modelled::IpamConfig | Modelled::IpReservation
        );
        let spider_ipam = matches!(kind, Modelled::SpiderIpPool | Modelled::SpiderReservedIp);
        let selected = match self.network.cni {
            Cni::Calico => "calico",
            Cni::Spiderpool => "spiderpool",
        };
        let unused = (calico_ipam && self.network.cni != Cni::Calico)
            || (spider_ipam && self.network.cni != Cni::Spiderpool);
        if unused {
            let pos = r.locate(&["kind"]);
            cx.at_key("kind", |cx| {
                cx.warning(
                    pos,
                    format!(
                        "{} `{}` is unused: `network.cni` is {selected}, whose IPAM does not read it",
                        r.kind, r.name
                    ),
                )
            });
        }
    }

    fn ip_pool(&self, r: &Resource, spec: &Spec, cx: &mut Cx) -> Option<IpPool> {
        let cidr = spec.required(cx, "cidr", pool_cidr);
        // Without a usable cidr the other fields are still decoded, so every problem shows.
        let mut pool = IpPool::with_defaults(&r.name, cidr.unwrap_or_default());
        let mut ok = cidr.is_some();
        let size = spec.get(cx, "blockSize", |n, cx| match cidr {
            Some(cidr) => block_size(n, cidr, cx),
            None => u8::decode(n, cx),
        });
        if let Some(size) = size {
            pool.block_size = size;
        }
        if let Some(mode) = spec.get(cx, "ipipMode", encap_mode) {
            pool.ipip_mode = mode;
        }
        if let Some(mode) = spec.get(cx, "vxlanMode", encap_mode) {
            pool.vxlan_mode = mode;
        }
        pool.nat_outgoing = spec.value(cx, "natOutgoing").unwrap_or(false);
        pool.disabled = spec.value(cx, "disabled").unwrap_or(false);
        pool.disable_bgp_export = spec.value(cx, "disableBGPExport").unwrap_or(false);
        if let Some(s) = spec.get(cx, "nodeSelector", calico_selector) {
            pool.node_selector = s;
        }
        if let Some(s) = spec.get(cx, "namespaceSelector", calico_selector) {
            pool.namespace_selector = s;
            pool.has_namespace_selector = true;
        }
        if let Some(uses) = spec.get(cx, "allowedUses", |n, cx| list(n, cx, allowed_use)) {
            pool.allowed_uses = uses;
        }
        if let Some(mode) = spec.get(cx, "assignmentMode", assignment_mode) {
            pool.assignment_mode = mode;
        }
        // SPEC §3.4: the VXLAN backend runs no BGP, so it cannot carry IPIP routes.
        let ipip = pool.ipip_mode != EncapMode::Never;
        let vxlan_backend = self.network.calico_backend == CalicoBackend::Vxlan;
        if ipip && vxlan_backend && self.network.cni == Cni::Calico {
            let pos = r.locate(&["spec", "ipipMode"]);
            cx.at_key("ipipMode", |cx| {
                cx.error(
                    pos,
                    "IPIP needs BGP, and `network.calicoBackend: vxlan` runs none; \
                     use `vxlanMode` instead (or `calicoBackend: bird`)",
                )
            });
            ok = false;
        }
        if let Some(cidr) = cidr {
            self.warn_rack_overlap(r, cidr, cx);
        }
        ok.then_some(pool)
    }

    /// Calico accepts a pool that overlaps a rack subnet, but its blocks can then hand a pod
    /// the address of a node or of the rack's gateway: one warning per rack, at `spec.cidr`.
    /// What such a pod gets is `duplicate-address` (ARCHITECTURE.md, choices).
    fn warn_rack_overlap(&self, r: &Resource, cidr: IpNet, cx: &mut Cx) {
        let pos = r.locate(&["spec", "cidr"]);
        let found = self.rack_subnets.overlapping(cidr, None, MAX_RACKS_WARNED);
        for &i in &found.first {
            let rack = &self.topology.racks[i];
            let message = format!(
                "IPPool `{}` {cidr} overlaps rack `{}` subnet {}; Calico accepts it, but a \
                 pod given the address of a node or of the gateway {} is not delivered \
                 (duplicate-address)",
                r.name, rack.name, rack.subnet, rack.gateway
            );
            cx.at_key("cidr", |cx| cx.warning(pos, message));
        }
        if found.total > found.first.len() {
            let message = format!(
                "IPPool `{}` {cidr} overlaps {} more racks' subnets",
                r.name,
                found.total - found.first.len()
            );
            cx.at_key("cidr", |cx| cx.warning(pos, message));
        }
    }

    fn bgp_peer(&self, r: &Resource, spec: &Spec, cx: &mut Cx) -> Option<BgpPeer> {
        let node: Option<String> = spec.value(cx, "node");
        if let Some(node) = &node {
            self.warn_unknown_node(node, spec.pos_of("node"), cx, "node");
        }
        let peer = spec.get(cx, "peerIP", peer_address);
        let peer_selector = spec.get(cx, "peerSelector", calico_selector);
        let node_selector = spec.get(cx, "nodeSelector", calico_selector);
        // Calico's validator (`validateBGPPeerSpec`) refuses these pairs, at the first field.
        for (field, other) in [
            ("node", "nodeSelector"),
            ("peerIP", "peerSelector"),
            ("asNumber", "peerSelector"),
        ] {
            if spec.has(field) && spec.has(other) {
                let pos = spec.pos_of(field);
                cx.at_key(field, |cx| {
                    cx.error(
                        pos,
                        format!("`{field}` must be empty when `{other}` is specified"),
                    )
                });
            }
        }
        Some(BgpPeer {
            name: r.name.clone(),
            node,
            node_selector,
            peer_ip: peer.map(|(ip, _)| ip),
            peer_port: peer.and_then(|(_, port)| port),
            peer_selector,
            as_number: spec.get(cx, "asNumber", as_number),
            keep_original_next_hop: spec.value(cx, "keepOriginalNextHop").unwrap_or(false),
        })
    }

    fn calico_node(
        &self,
        r: &Resource,
        labels: Labels,
        spec: &Spec,
        cx: &mut Cx,
    ) -> Option<CalicoNode> {
        let pos = r.locate(&["metadata", "name"]);
        cx.with_path_prefix(&r.path, |cx| {
            cx.at_key("metadata", |cx| {
                self.warn_unknown_node(&r.name, pos, cx, "name");
            })
        });
        let mut node = CalicoNode {
            name: r.name.clone(),
            labels,
            ipv4_address: None,
            as_number: None,
            route_reflector_cluster_id: None,
        };
        let Some(bgp) = spec.child(cx, "bgp") else {
            return Some(node);
        };
        cx.at_key("bgp", |cx| {
            node.ipv4_address = bgp.get(cx, "ipv4Address", node_address);
            node.as_number = bgp.get(cx, "asNumber", as_number);
            node.route_reflector_cluster_id = bgp.get(cx, "routeReflectorClusterID", ipv4);
        });
        Some(node)
    }

    fn spider_ip_pool(&self, r: &Resource, spec: &Spec, cx: &mut Cx) -> Option<SpiderIpPool> {
        let subnet = spec.required(cx, "subnet", |n, cx| {
            let text = String::decode(n, cx)?;
            spiderpool::parse_subnet(&text)
                .map_err(|e| cx.error(n.pos, e))
                .ok()
        });
        let ips = spec.get(cx, "ips", ip_ranges);
        let exclude_ips = spec.get(cx, "excludeIPs", ip_ranges);
        let gateway: Option<IpAddr> = spec.value(cx, "gateway");
        let node_name: Vec<String> = spec.get(cx, "nodeName", strings).unwrap_or_default();
        if let Some(list) = spec.node("nodeName").and_then(seq_items) {
            cx.at_key("nodeName", |cx| {
                for (i, item) in list.iter().enumerate() {
                    if let Value::Str(name) = &item.value {
                        cx.at_index(i, |cx| self.warn_unknown_node(name, item.pos, cx, ""));
                    }
                }
            });
        }
        // Without a usable subnet the other fields are still decoded, so every problem shows.
        let mut pool = SpiderIpPool::new(r.name.clone(), subnet.unwrap_or_default());
        pool.ips = ips.unwrap_or_default();
        pool.exclude_ips = exclude_ips.unwrap_or_default();
        pool.gateway = gateway;
        pool.node_name = node_name;
        pool.node_affinity = spec.get(cx, "nodeAffinity", label_selector);
        pool.namespace_name = spec.get(cx, "namespaceName", strings).unwrap_or_default();
        pool.namespace_affinity = spec.get(cx, "namespaceAffinity", label_selector);
        pool.pod_affinity = spec.get(cx, "podAffinity", label_selector);
        pool.default = spec.value(cx, "default").unwrap_or(false);
        pool.disable = spec.value(cx, "disable").unwrap_or(false);
        subnet.map(|_| pool)
    }

    /// SPEC §2.3: naming a node the topology lacks is accepted (the API server would accept
    /// it) with a warning. `key` is the path step below the current one (empty for none).
    fn warn_unknown_node(&self, name: &str, pos: Pos, cx: &mut Cx, key: &str) {
        if self.topology.node_by_name(name).is_some() {
            return;
        }
        let message = format!("the topology has no node `{name}`; this setting applies to no node");
        if key.is_empty() {
            cx.warning(pos, message);
        } else {
            cx.at_key(key, |cx| cx.warning(pos, message));
        }
    }
}

fn ipam_config(r: &Resource, spec: &Spec, cx: &mut Cx) -> Option<IpamConfig> {
    if r.name != "default" {
        let pos = r.locate(&["metadata", "name"]);
        cx.with_path_prefix(&r.path, |cx| {
            cx.at_key("metadata", |cx| {
                cx.at_key("name", |cx| {
                    cx.error(
                        pos,
                        format!(
                            "{} must be named `default` (Calico reads no other), not `{}`",
                            r.kind, r.name
                        ),
                    )
                })
            })
        });
    }
    let defaults = IpamConfig::default();
    let cooldown = spec.value::<u64>(cx, "ipCooldownSeconds");
    Some(IpamConfig {
        strict_affinity: spec
            .value(cx, "strictAffinity")
            .unwrap_or(defaults.strict_affinity),
        auto_allocate_blocks: spec
            .value(cx, "autoAllocateBlocks")
            .unwrap_or(defaults.auto_allocate_blocks),
        max_blocks_per_host: spec
            .value(cx, "maxBlocksPerHost")
            .unwrap_or(defaults.max_blocks_per_host),
        // Saturating: the range check (≤ 1200 s) is Calico's validation, run later.
        ip_cooldown: cooldown.map_or(defaults.ip_cooldown, |s| {
            SimDuration::from_secs(1).saturating_mul(s)
        }),
    })
}

fn ip_reservation(r: &Resource, spec: &Spec, cx: &mut Cx) -> Option<IpReservation> {
    let reserved_cidrs = spec
        .get(cx, "reservedCIDRs", |n, cx| list(n, cx, cidr_or_address))
        .unwrap_or_default();
    Some(IpReservation {
        name: r.name.clone(),
        reserved_cidrs,
    })
}

fn bgp_configuration(r: &Resource, spec: &Spec, cx: &mut Cx) -> Option<BgpConfiguration> {
    let service_cluster_ips = spec
        .get(cx, "serviceClusterIPs", service_cidrs)
        .unwrap_or_default();
    Some(BgpConfiguration {
        name: r.name.clone(),
        as_number: spec.get(cx, "asNumber", as_number),
        node_to_node_mesh_enabled: spec.value(cx, "nodeToNodeMeshEnabled"),
        service_cluster_ips,
    })
}

fn spider_reserved_ip(r: &Resource, spec: &Spec, cx: &mut Cx) -> Option<SpiderReservedIp> {
    Some(SpiderReservedIp {
        name: r.name.clone(),
        ips: spec.get(cx, "ips", ip_ranges).unwrap_or_default(),
    })
}

/// `metadata.labels` and `metadata.annotations` of any resource podnet reads: decoding them
/// everywhere gives the boolean-label warning of SPEC §2.3 wherever it occurs.
fn metadata_maps(r: &Resource, cx: &mut Cx) -> (Labels, Labels) {
    let Some(Value::Map(entries)) = r.body.get("metadata").map(|m| &m.value) else {
        return (Labels::new(), Labels::new());
    };
    cx.at_key("metadata", |cx| {
        let mut map = |key: &str| {
            cx.field::<StringMap>(entries, key)
                .map(|m| m.value.0)
                .unwrap_or_default()
        };
        (map("labels"), map("annotations"))
    })
}

// ---------------------------------------------------------------------------------------------
// Checking every key against the API's field tables.

impl Decoder<'_> {
    /// Walks the whole document of `r` through `schema`; `warn` is false for kinds that are
    /// ignored as a whole (their one warning already says so).
    fn check_fields(&mut self, r: &Resource, schema: &'static KindSchema, warn: bool, cx: &mut Cx) {
        let mut path = Vec::new();
        self.check_map(&r.body, schema, warn, &mut path, cx);
    }

    fn check_map(
        &mut self,
        node: &Node,
        schema: &'static KindSchema,
        warn: bool,
        path: &mut Vec<String>,
        cx: &mut Cx,
    ) {
        // A value of the wrong type is reported by the kind's decoder, not here.
        let Value::Map(entries) = &node.value else {
            return;
        };
        for (key, child) in entries {
            path.push(key.text.clone());
            cx.at_key(&key.text, |cx| {
                self.check_key(key, child, schema, warn, path, cx)
            });
            path.pop();
        }
    }

    fn check_key(
        &mut self,
        key: &Key,
        value: &Node,
        schema: &'static KindSchema,
        warn: bool,
        path: &mut Vec<String>,
        cx: &mut Cx,
    ) {
        let segments: Vec<&str> = path.iter().map(String::as_str).collect();
        let verdict = schema.check(&segments);
        let here = segments.len() - 1;
        match verdict {
            Verdict::Unknown { nearest, .. } => {
                let message = match nearest {
                    Some(n) => format!("unknown field `{}`; did you mean `{n}`?", key.text),
                    None => {
                        let names: Vec<&str> = siblings(schema, &segments[..here])
                            .iter()
                            .filter(|f| !matches!(f.support, Support::Removed(_)))
                            .map(|f| f.name)
                            .collect();
                        format!(
                            "unknown field `{}` in {}; expected one of: {}",
                            key.text,
                            schema.kind,
                            names.join(", ")
                        )
                    }
                };
                cx.error(key.pos, message);
                return;
            }
            Verdict::Removed { note, .. } => {
                cx.error(key.pos, note);
                return;
            }
            // The walk only descends into object-shaped fields, so a mapping under a scalar
            // never reaches here; the decoders report such values by type.
            Verdict::NotAnObject { .. } => return,
            Verdict::Unmodelled { depth } if depth == here && warn && segments[0] == "spec" => {
                let dotted = segments.join(".");
                if self
                    .warned
                    .insert((schema.kind.to_string(), dotted.clone()))
                {
                    cx.warning(
                        key.pos,
                        format!(
                            "podnet does not model `{dotted}`; accepted and ignored \
                             (reported once for every {})",
                            schema.kind
                        ),
                    );
                }
            }
            Verdict::Unmodelled { .. } | Verdict::Modelled => {}
        }
        let descend = segments == ["spec"]
            || field_at(schema, &segments).is_some_and(|f| f.children().is_some());
        drop(segments);
        if !descend {
            return;
        }
        match &value.value {
            Value::Map(_) => self.check_map(value, schema, warn, path, cx),
            Value::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    cx.at_index(i, |cx| self.check_map(item, schema, warn, path, cx));
                }
            }
            _ => {}
        }
    }
}

/// The fields a mapping at `parent` (a key path) may hold.
fn siblings(schema: &'static KindSchema, parent: &[&str]) -> &'static [Field] {
    match parent.split_first() {
        None => TOP_LEVEL,
        Some((&"spec", rest)) => walk_fields(schema.spec, rest).unwrap_or(&[]),
        Some(_) => walk_fields(TOP_LEVEL, parent).unwrap_or(&[]),
    }
}

fn walk_fields(mut fields: &'static [Field], path: &[&str]) -> Option<&'static [Field]> {
    for name in path {
        fields = api_fields::find_field(fields, name)?.children()?;
    }
    Some(fields)
}

/// The table entry of the field at `path`, if the tables have one.
fn field_at(schema: &'static KindSchema, path: &[&str]) -> Option<&'static Field> {
    let (last, parent) = path.split_last()?;
    api_fields::find_field(siblings(schema, parent), last)
}

// ---------------------------------------------------------------------------------------------
// A located mapping (a `spec`, or an object inside it) and its fields.

/// The entries of a mapping with the position of the mapping itself.
pub(super) struct Spec<'n> {
    entries: &'n [(Key, Node)],
    pub(super) pos: Pos,
}

impl<'n> Spec<'n> {
    /// The resource's `spec`; a missing or null `spec:` is an empty one.
    pub(super) fn of(r: &'n Resource, cx: &mut Cx) -> Option<Spec<'n>> {
        match r.body.get("spec") {
            None => Some(Spec {
                entries: &[],
                pos: r.body.pos,
            }),
            Some(node) => cx.at_key("spec", |cx| Spec::from_node(node, cx)),
        }
    }

    /// A mapping (null meaning an empty one); anything else is reported at the current path.
    pub(super) fn from_node(node: &'n Node, cx: &mut Cx) -> Option<Spec<'n>> {
        match &node.value {
            Value::Null => Some(Spec {
                entries: &[],
                pos: node.pos,
            }),
            Value::Map(entries) => Some(Spec {
                entries,
                pos: node.pos,
            }),
            other => {
                cx.error(
                    node.pos,
                    format!("expected a mapping, found {}", other.kind_name()),
                );
                None
            }
        }
    }

    /// The value of `key`, unless absent or null (null means "not set", as in Kubernetes).
    pub(super) fn node(&self, key: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|(k, _)| k.text == key)
            .map(|(_, v)| v)
            .filter(|v| !matches!(v.value, Value::Null))
    }

    pub(super) fn has(&self, key: &str) -> bool {
        self.node(key).is_some()
    }

    /// Where `key`'s value is, else where the mapping is.
    pub(super) fn pos_of(&self, key: &str) -> Pos {
        self.node(key).map_or(self.pos, |n| n.pos)
    }

    /// Decodes `key` with `decode`, under `key` in the path.
    pub(super) fn get<T>(
        &self,
        cx: &mut Cx,
        key: &str,
        decode: impl FnOnce(&Node, &mut Cx) -> Option<T>,
    ) -> Option<T> {
        let node = self.node(key)?;
        cx.at_key(key, |cx| decode(node, cx))
    }

    /// Like [`Spec::get`] with the type's own decoder.
    pub(super) fn value<T: Decode>(&self, cx: &mut Cx, key: &str) -> Option<T> {
        self.get(cx, key, T::decode)
    }

    /// Like [`Spec::get`], reporting a missing field at the mapping.
    pub(super) fn required<T>(
        &self,
        cx: &mut Cx,
        key: &str,
        decode: impl FnOnce(&Node, &mut Cx) -> Option<T>,
    ) -> Option<T> {
        if !self.has(key) {
            cx.error(self.pos, format!("missing required field `{key}`"));
            return None;
        }
        self.get(cx, key, decode)
    }

    /// A nested mapping such as `spec.bgp`.
    pub(super) fn child(&self, cx: &mut Cx, key: &str) -> Option<Spec<'n>> {
        let node = self.node(key)?;
        cx.at_key(key, |cx| Spec::from_node(node, cx))
    }
}

pub(super) fn seq_items(node: &Node) -> Option<&[Node]> {
    match &node.value {
        Value::Seq(items) => Some(items),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Values.

/// A list whose items each decode with `item`; every bad item is reported, at its index.
pub(super) fn list<T>(
    node: &Node,
    cx: &mut Cx,
    item: impl Fn(&Node, &mut Cx) -> Option<T>,
) -> Option<Vec<T>> {
    let Some(items) = seq_items(node) else {
        cx.error(
            node.pos,
            format!("expected a list, found {}", node.value.kind_name()),
        );
        return None;
    };
    let mut out = Vec::with_capacity(items.len());
    let mut ok = true;
    for (i, n) in items.iter().enumerate() {
        match cx.at_index(i, |cx| item(n, cx)) {
            Some(v) => out.push(v),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

pub(super) fn strings(node: &Node, cx: &mut Cx) -> Option<Vec<String>> {
    list(node, cx, String::decode)
}

/// A Kubernetes IntOrString port (`port`, `targetPort`): an integer goes to `number`, which
/// checks its range; a string must be a container port name (IANA_SVC_NAME).
pub(super) fn port_or_name<T>(
    node: &Node,
    cx: &mut Cx,
    number: impl FnOnce(&Node, &mut Cx) -> Option<T>,
    name: impl FnOnce(String) -> T,
) -> Option<T> {
    match &node.value {
        Value::Int(_) => number(node, cx),
        Value::Str(s) if crate::model::workload::ContainerPort::is_valid_name(s) => {
            Some(name(s.clone()))
        }
        Value::Str(s) => {
            cx.error(
                node.pos,
                format!(
                    "`{s}` is not a port name (at most 15 lowercase letters, digits and inner \
                     hyphens, at least one letter); write a number without quotes"
                ),
            );
            None
        }
        other => {
            cx.error(
                node.pos,
                format!(
                    "expected a port number or name, found {}",
                    other.kind_name()
                ),
            );
            None
        }
    }
}

/// One of a fixed set of words, with the nearest suggested for a near miss.
pub(super) fn word<T: Copy>(node: &Node, cx: &mut Cx, words: &[(&'static str, T)]) -> Option<T> {
    let text = String::decode(node, cx)?;
    if let Some((_, v)) = words.iter().find(|(w, _)| *w == text) {
        return Some(*v);
    }
    let names: Vec<&str> = words.iter().map(|(w, _)| *w).collect();
    let hint = nearest(&text, names.iter().copied())
        .map(|n| format!("; did you mean `{n}`?"))
        .unwrap_or_default();
    cx.error(
        node.pos,
        format!("`{text}` is not one of: {}{hint}", names.join(", ")),
    );
    None
}

fn encap_mode(node: &Node, cx: &mut Cx) -> Option<EncapMode> {
    word(
        node,
        cx,
        &[
            ("Never", EncapMode::Never),
            ("Always", EncapMode::Always),
            ("CrossSubnet", EncapMode::CrossSubnet),
        ],
    )
}

fn allowed_use(node: &Node, cx: &mut Cx) -> Option<AllowedUse> {
    word(
        node,
        cx,
        &[
            ("Workload", AllowedUse::Workload),
            ("Tunnel", AllowedUse::Tunnel),
            ("LoadBalancer", AllowedUse::LoadBalancer),
        ],
    )
}

fn assignment_mode(node: &Node, cx: &mut Cx) -> Option<AssignmentMode> {
    word(
        node,
        cx,
        &[
            ("Automatic", AssignmentMode::Automatic),
            ("Manual", AssignmentMode::Manual),
        ],
    )
}

/// An IPPool's `cidr`, kept as written: Calico's validation reports host bits ("must be
/// strictly masked") with the other pool rules.
fn pool_cidr(node: &Node, cx: &mut Cx) -> Option<IpNet> {
    let text = String::decode(node, cx)?;
    match text.trim().parse::<IpNet>() {
        Ok(net) => Some(net),
        Err(_) => {
            cx.error(
                node.pos,
                format!("`{text}` is not a CIDR such as 10.0.0.0/16"),
            );
            None
        }
    }
}

/// `blockSize`: 20..=32 for an IPv4 pool, 116..=128 for IPv6 (`clientv3/ippool.go`).
fn block_size(node: &Node, cidr: IpNet, cx: &mut Cx) -> Option<u8> {
    let (range, family) = match cidr {
        IpNet::V4(_) => (20..=32, "IPv4"),
        IpNet::V6(_) => (116..=128, "IPv6"),
    };
    let Value::Int(size) = node.value else {
        cx.error(
            node.pos,
            format!("expected an integer, found {}", node.value.kind_name()),
        );
        return None;
    };
    match u8::try_from(size) {
        Ok(s) if range.contains(&s) => Some(s),
        _ => {
            cx.error(
                node.pos,
                format!(
                    "{size} is outside {}..{} for {family}",
                    range.start(),
                    range.end()
                ),
            );
            None
        }
    }
}

/// A Calico selector expression; a syntax error points at the offending character.
pub(super) fn calico_selector(node: &Node, cx: &mut Cx) -> Option<Selector> {
    let text = String::decode(node, cx)?;
    match Selector::parse(&text) {
        Ok(s) => Some(s),
        Err(e) => {
            // The parser counts bytes; positions count characters.
            let chars = text.get(..e.offset).map_or(e.offset, |s| s.chars().count());
            cx.error(
                node.pos.advanced(chars),
                format!("invalid selector `{text}`: {}", e.message),
            );
            None
        }
    }
}

/// An AS number as Calico's `numorstring.ASNumber` reads it: an integer, or a string holding
/// an integer or the dotted `high.low` form (RFC 5396 asdot). AS 0 is reserved (RFC 7607).
fn as_number(node: &Node, cx: &mut Cx) -> Option<u32> {
    const RANGE: &str = "an AS number is 1..4294967295, or `high.low` in quotes";
    let parsed = match &node.value {
        Value::Int(i) => u32::try_from(*i).ok(),
        Value::Str(s) => parse_as_number(s.trim()),
        Value::Float(_) => {
            cx.error(
                node.pos,
                "write a dotted AS number in quotes (\"1.10\"): unquoted, YAML reads it as a \
                 decimal number and drops trailing zeros",
            );
            return None;
        }
        other => {
            cx.error(
                node.pos,
                format!("expected an AS number, found {}", other.kind_name()),
            );
            return None;
        }
    };
    match parsed {
        Some(n) if n > 0 => Some(n),
        _ => {
            let shown = node.scalar_text().unwrap_or_default();
            cx.error(
                node.pos,
                format!("`{shown}` is not a valid AS number: {RANGE}"),
            );
            None
        }
    }
}

fn parse_as_number(text: &str) -> Option<u32> {
    if let Ok(n) = text.parse::<u32>() {
        return Some(n);
    }
    let (high, low) = text.split_once('.')?;
    let high: u16 = high.parse().ok()?;
    let low: u16 = low.parse().ok()?;
    Some((u32::from(high) << 16) | u32::from(low))
}

/// `peerIP`: an address, `IPv4:port` or `[IPv6]:port`, as Calico's BGPPeer takes it.
fn peer_address(node: &Node, cx: &mut Cx) -> Option<(IpAddr, Option<u16>)> {
    let text = String::decode(node, cx)?;
    let parsed = parse_peer_address(text.trim());
    if parsed.is_none() {
        cx.error(
            node.pos,
            format!("`{text}` is not an IP address, `IPv4:port` or `[IPv6]:port`"),
        );
    }
    parsed
}

fn parse_peer_address(text: &str) -> Option<(IpAddr, Option<u16>)> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some((ip, None));
    }
    let (ip, port) = match text.strip_prefix('[') {
        Some(rest) => {
            let (ip, port) = rest.split_once("]:")?;
            (IpAddr::V6(ip.parse().ok()?), port)
        }
        None => {
            let (ip, port) = text.rsplit_once(':')?;
            (IpAddr::V4(ip.parse().ok()?), port)
        }
    };
    Some((ip, Some(port.parse().ok()?)))
}

/// A Calico Node's `ipv4Address`: `address/prefix`, keeping the address (the prefix is the
/// node's subnet for CrossSubnet); a bare address is a /32, as Calico reads it.
fn node_address(node: &Node, cx: &mut Cx) -> Option<IpNet> {
    let text = String::decode(node, cx)?;
    let text = text.trim();
    let net = text.parse::<IpNet>().ok().or_else(|| {
        text.parse::<Ipv4Addr>()
            .ok()
            .map(|a| IpNet::from(IpAddr::V4(a)))
    });
    match net {
        Some(net @ IpNet::V4(_)) => Some(net),
        _ => {
            cx.error(
                node.pos,
                format!("`{text}` is not an IPv4 address with its prefix, such as 10.0.0.5/24"),
            );
            None
        }
    }
}

fn ipv4(node: &Node, cx: &mut Cx) -> Option<Ipv4Addr> {
    let text = String::decode(node, cx)?;
    match text.trim().parse::<Ipv4Addr>() {
        Ok(a) => Some(a),
        Err(_) => {
            cx.error(node.pos, format!("`{text}` is not an IPv4 address"));
            None
        }
    }
}

/// An IPReservation entry: a CIDR, or a bare address meaning just that address.
fn cidr_or_address(node: &Node, cx: &mut Cx) -> Option<IpNet> {
    let text = String::decode(node, cx)?;
    let text = text.trim();
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(IpNet::from(ip));
    }
    match text.parse::<IpNet>() {
        Ok(net) if net.trunc() == net => Some(net),
        Ok(net) => {
            cx.error(
                node.pos,
                format!(
                    "`{text}` has host bits set; did you mean `{}`?",
                    net.trunc()
                ),
            );
            None
        }
        Err(_) => {
            cx.error(node.pos, format!("`{text}` is not a CIDR or an IP address"));
            None
        }
    }
}

/// `serviceClusterIPs: [{cidr: …}]`; empty `- {}` entries (as in Calico's own test data)
/// are skipped.
fn service_cidrs(node: &Node, cx: &mut Cx) -> Option<Vec<IpNet>> {
    let entries = list(node, cx, |item, cx| {
        let object = Spec::from_node(item, cx)?;
        Some(object.value::<Cidr>(cx, "cidr").map(|c| c.0))
    })?;
    Some(entries.into_iter().flatten().collect())
}

/// A Spiderpool `ips`-style list; each bad item is reported at its own position.
fn ip_ranges(node: &Node, cx: &mut Cx) -> Option<Vec<IpRange>> {
    list(node, cx, |item, cx| {
        let text = String::decode(item, cx)?;
        IpRange::parse(&text)
            .map_err(|e| cx.error(item.pos, e))
            .ok()
    })
}

/// A Kubernetes label selector (`matchLabels`, `matchExpressions`). Its semantic checks
/// (`LabelSelector::validate`) run with the pool checks, which locate them.
pub(super) fn label_selector(node: &Node, cx: &mut Cx) -> Option<LabelSelector> {
    let object = Spec::from_node(node, cx)?;
    let match_labels = object
        .value::<StringMap>(cx, "matchLabels")
        .map(|m| m.0)
        .unwrap_or_default();
    let match_expressions = object
        .get(cx, "matchExpressions", |n, cx| {
            list(n, cx, label_requirement)
        })
        .unwrap_or_default();
    Some(LabelSelector {
        match_labels,
        match_expressions,
    })
}

fn label_requirement(node: &Node, cx: &mut Cx) -> Option<LabelRequirement> {
    let object = Spec::from_node(node, cx)?;
    let key = object.required(cx, "key", String::decode);
    let operator = object.required(cx, "operator", |n, cx| {
        word(
            n,
            cx,
            &[
                ("In", LabelOperator::In),
                ("NotIn", LabelOperator::NotIn),
                ("Exists", LabelOperator::Exists),
                ("DoesNotExist", LabelOperator::DoesNotExist),
            ],
        )
    });
    let values = object.get(cx, "values", strings);
    Some(LabelRequirement {
        key: key?,
        operator: operator?,
        values: values.unwrap_or_default(),
    })
}

// ---------------------------------------------------------------------------------------------
// Rules that span resources.

/// Whether `r` takes part in the cross-resource checks. Resources applied by events
/// (`events[i].apply`) are checked alone: whether they overlap another pool depends on what
/// exists when they are applied (a pool may replace one deleted a minute earlier), which only
/// the simulation knows.
fn cross_checked(r: &Resource) -> bool {
    !r.path.starts_with("events[")
}

/// Runs Calico's and Spiderpool's validation and reports each problem at its field; returns
/// the indices of the resources found wrong.
fn cross_check(
    resources: &[&Resource],
    specs: &[Option<ResourceSpec>],
    cx: &mut Cx,
) -> BTreeSet<usize> {
    let mut failed = BTreeSet::new();
    let together: Vec<usize> = (0..resources.len())
        .filter(|&i| cross_checked(resources[i]))
        .collect();
    let mut groups = vec![together];
    groups.extend(
        (0..resources.len())
            .filter(|&i| !cross_checked(resources[i]))
            .map(|i| vec![i]),
    );
    for group in &groups {
        let config = ipam_config_of(resources, specs, group, cx, &mut failed);
        check_calico(resources, specs, group, config, cx, &mut failed);
        check_spiderpool(resources, specs, group, cx, &mut failed);
    }
    failed
}

/// The IPAMConfiguration of a group, with its index. A second one (an `IPAMConfig` of the CRD
/// group next to a v3 `IPAMConfiguration`: two kinds, one object) is an error.
fn ipam_config_of<'s>(
    resources: &[&Resource],
    specs: &'s [Option<ResourceSpec>],
    group: &[usize],
    cx: &mut Cx,
    failed: &mut BTreeSet<usize>,
) -> Option<(usize, &'s IpamConfig)> {
    let mut first: Option<(usize, &IpamConfig)> = None;
    for &i in group {
        let Some(ResourceSpec::IpamConfig(config)) = &specs[i] else {
            continue;
        };
        match first {
            None => first = Some((i, config)),
            Some((f, _)) => {
                let at = resources[f].locate(&["metadata", "name"]);
                let message = format!(
                    "a second IPAM configuration: {} `default` is already defined \
                     (line {}, column {})",
                    resources[f].kind, at.line, at.col
                );
                report(cx, resources[i], &["metadata", "name"], None, true, message);
                failed.insert(i);
            }
        }
    }
    first
}

fn check_calico(
    resources: &[&Resource],
    specs: &[Option<ResourceSpec>],
    group: &[usize],
    config: Option<(usize, &IpamConfig)>,
    cx: &mut Cx,
    failed: &mut BTreeSet<usize>,
) {
    let mut pools = Vec::new();
    let mut owners = Vec::new();
    for &i in group {
        if let Some(ResourceSpec::IpPool(p)) = &specs[i] {
            pools.push(p.clone());
            owners.push(i);
        }
    }
    if pools.is_empty() && config.is_none() {
        return;
    }
    let default = IpamConfig::default();
    let in_force = config.map_or(&default, |(_, c)| c);
    for problem in calico::validate(&pools, in_force) {
        let owner = match problem.pool_index {
            Some(p) => owners.get(p).copied(),
            None => config.map(|(i, _)| i),
        };
        let Some(i) = owner else { continue };
        let keys: Vec<&str> = problem.field.split('.').collect();
        if CONFIGURE_ONLY.contains(&problem.message.as_str()) {
            let message = format!(
                "{}: `calicoctl ipam configure` refuses this, but the resource is accepted as \
                 written (the block limit then also stops borrowing)",
                problem.message
            );
            report(cx, resources[i], &keys, None, false, message);
            continue;
        }
        report(cx, resources[i], &keys, None, true, problem.message);
        failed.insert(i);
    }
}

/// Rules of [`calico::validate`] that only `calicoctl ipam configure` enforces (`ipam.go`
/// SetIPAMConfig). Applying an IPAMConfiguration resource goes through `clientv3`, which checks
/// only the name and the CRD bounds, so a published manifest breaking them (Calico's own
/// reference sample: `strictAffinity: false` with `maxBlocksPerHost: 4`) is accepted: podnet
/// warns instead of refusing it.
const CONFIGURE_ONLY: &[&str] = &[
    "MaxBlocksPerHost requires StrictAffinity to be enabled",
    "Cannot disable 'StrictAffinity' and 'AutoAllocateBlocks' at the same time",
];

fn check_spiderpool(
    resources: &[&Resource],
    specs: &[Option<ResourceSpec>],
    group: &[usize],
    cx: &mut Cx,
    failed: &mut BTreeSet<usize>,
) {
    let mut pools = Vec::new();
    let mut owners = Vec::new();
    for &i in group {
        if let Some(ResourceSpec::SpiderIpPool(p)) = &specs[i] {
            pools.push(p.clone());
            owners.push(i);
        }
    }
    if let Some((at, message)) = spiderpool_over_limits(&pools) {
        report(cx, resources[owners[at]], &["spec"], None, true, message);
        failed.insert(owners[at]);
        return;
    }
    for problem in spiderpool::validate(&pools) {
        // Duplicate names are already reported, for every kind, by the name check.
        if problem.field == "metadata.name" {
            continue;
        }
        let Some(&i) = owners.get(problem.pool_index) else {
            continue;
        };
        let error = problem.severity == spiderpool::Severity::Error;
        let mut keys: Vec<&str> = problem.field.split('.').collect();
        let mut item = problem.item;
        let mut message = problem.message.as_str();
        // Label-selector problems name their place inside the selector: point there.
        if let Some((key, index, rest)) = selector_place(&problem.message) {
            keys.push(key);
            item = index;
            message = rest;
        }
        report(cx, resources[i], &keys, item, error, message.to_string());
        if error {
            failed.insert(i);
        }
    }
}

/// Splits a `LabelSelector::validate` message such as `matchExpressions[0].values: must be
/// specified…` into the key, the item index and the rest.
fn selector_place(message: &str) -> Option<(&'static str, Option<usize>, &str)> {
    if let Some(rest) = message.strip_prefix("matchExpressions[") {
        let (index, rest) = rest.split_once(']')?;
        let index = index.parse().ok()?;
        let rest = rest.strip_prefix('.').unwrap_or(rest);
        return Some(("matchExpressions", Some(index), rest));
    }
    message
        .starts_with("matchLabels")
        .then_some(("matchLabels", None, message))
}

/// Reports a problem at `keys` (and list `item`) of `r`, at the value written there or, if it
/// is missing, at its nearest written parent.
/// Spiderpool's own checks compare a pool's `ips` pairwise and the pools sharing a subnet
/// pairwise, as its webhook does. Bounded so validation stays within the README's time
/// (issue #19): entries of `ips` and `excludeIPs` of all pools together, and pools per
/// subnet. The pool at which a limit is passed, with the message.
fn spiderpool_over_limits(pools: &[spiderpool::SpiderIpPool]) -> Option<(usize, String)> {
    let mut entries = 0;
    let mut per_subnet: std::collections::BTreeMap<ipnet::IpNet, usize> = Default::default();
    for (i, p) in pools.iter().enumerate() {
        entries += p.ips.len() + p.exclude_ips.len();
        if entries > super::LIMITS.max_spiderpool_entries {
            return Some((
                i,
                format!(
                    "the SpiderIPPools' `ips` and `excludeIPs` have more than {} entries \
                     together; list ranges (`10.0.0.10-10.0.0.200`) instead of addresses",
                    super::LIMITS.max_spiderpool_entries
                ),
            ));
        }
        let same = per_subnet.entry(p.subnet.trunc()).or_default();
        *same += 1;
        if *same > super::LIMITS.max_spiderpools_per_subnet {
            return Some((
                i,
                format!(
                    "more than {} SpiderIPPools share the subnet {}",
                    super::LIMITS.max_spiderpools_per_subnet,
                    p.subnet.trunc()
                ),
            ));
        }
    }
    None
}

fn report(
    cx: &mut Cx,
    r: &Resource,
    keys: &[&str],
    item: Option<usize>,
    error: bool,
    message: String,
) {
    let mut node = &r.body;
    let mut depth = 0;
    for key in keys {
        match node.get(key) {
            Some(child) => {
                node = child;
                depth += 1;
            }
            None => break,
        }
    }
    let item_node = item
        .filter(|_| depth == keys.len())
        .and_then(|i| seq_items(node).and_then(|items| items.get(i)));
    let pos = item_node.map_or(node.pos, |n| n.pos);
    cx.with_path_prefix(&r.path, |cx| {
        at_keys(cx, keys, |cx| match item {
            Some(i) => cx.at_index(i, |cx| emit(cx, pos, error, message)),
            None => emit(cx, pos, error, message),
        })
    });
}

fn at_keys<R>(cx: &mut Cx, keys: &[&str], f: impl FnOnce(&mut Cx) -> R) -> R {
    match keys.split_first() {
        None => f(cx),
        Some((key, rest)) => cx.at_key(key, |cx| at_keys(cx, rest, f)),
    }
}

fn emit(cx: &mut Cx, pos: Pos, error: bool, message: String) {
    if error {
        cx.error(pos, message);
    } else {
        cx.warning(pos, message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::api_fields::{CALICO_CRD_V1, CALICO_V3, SPIDERPOOL_V2BETA1};

    #[test]
    fn peer_addresses_take_ports_in_both_families() {
        let v4: IpAddr = "10.192.0.1".parse().unwrap();
        let v6: IpAddr = "ac13::57".parse().unwrap();
        assert_eq!(parse_peer_address("10.192.0.1"), Some((v4, None)));
        assert_eq!(parse_peer_address("10.192.0.1:166"), Some((v4, Some(166))));
        assert_eq!(parse_peer_address("ac13::57"), Some((v6, None)));
        assert_eq!(parse_peer_address("[ac13::57]:50"), Some((v6, Some(50))));
        assert_eq!(parse_peer_address("ac13::57:50:x"), None);
        assert_eq!(parse_peer_address("10.0.0.1:99999"), None);
        assert_eq!(parse_peer_address("[10.0.0.1]:50"), None);
    }

    #[test]
    fn as_numbers_read_plain_and_dotted() {
        assert_eq!(parse_as_number("64512"), Some(64512));
        assert_eq!(parse_as_number("4294967295"), Some(u32::MAX));
        assert_eq!(parse_as_number("1.10"), Some(65536 + 10));
        assert_eq!(parse_as_number("65536.1"), None);
        assert_eq!(parse_as_number("1.2.3"), None);
    }

    #[test]
    fn classification_follows_the_groups() {
        assert!(matches!(
            classify(CALICO_CRD_V1, "IPAMConfig"),
            Class::Modelled(Modelled::IpamConfig, _)
        ));
        assert!(matches!(
            classify(CALICO_V3, "IPAMConfig"),
            Class::Invented(Some(_))
        ));
        assert!(matches!(
            classify(CALICO_CRD_V1, "Node"),
            Class::Invented(Some(_))
        ));
        assert!(matches!(
            classify(CALICO_V3, "FelixConfiguration"),
            Class::Unmodelled(None)
        ));
        assert!(matches!(
            classify(SPIDERPOOL_V2BETA1, "SpiderSubnet"),
            Class::Unmodelled(Some(_))
        ));
        assert!(matches!(classify(APPS_V1, "Deployment"), Class::Workload));
        // The core group and apps serve kinds podnet models, so they are known groups: a
        // real kind is accepted with a warning, a misspelled one refused.
        assert!(matches!(classify(V1, "ConfigMap"), Class::Unmodelled(None)));
        assert!(matches!(classify(V1, "Node"), Class::Unmodelled(None)));
        assert!(matches!(
            classify(APPS_V1, "ReplicaSet"),
            Class::Unmodelled(None)
        ));
        assert!(matches!(
            classify(APPS_V1, "Deploymnet"),
            Class::Invented(Some(_))
        ));
        assert!(matches!(classify(V1, "Secrett"), Class::Invented(Some(_))));
        assert!(matches!(classify("batch/v1", "Jobb"), Class::ForeignGroup));
        // Network policy kinds are decoded by `policy_kinds`.
        assert!(matches!(
            classify("networking.k8s.io/v1", "NetworkPolicy"),
            Class::Policy(_)
        ));
        assert!(matches!(
            classify(CALICO_CRD_V1, "GlobalNetworkPolicy"),
            Class::Policy(_)
        ));
        // The policy groups are known groups now: a real kind is a warning, a typo refused.
        assert!(matches!(
            classify("networking.k8s.io/v1", "Ingress"),
            Class::Unmodelled(None)
        ));
        assert!(matches!(
            classify("networking.k8s.io/v1", "NetworkPolicyy"),
            Class::Invented(Some(_))
        ));
    }

    #[test]
    fn selector_problems_name_their_item() {
        assert_eq!(
            selector_place("matchExpressions[2].values: must be specified"),
            Some(("matchExpressions", Some(2), "values: must be specified"))
        );
        assert_eq!(
            selector_place("matchLabels: key 'a b': bad"),
            Some(("matchLabels", None, "matchLabels: key 'a b': bad"))
        );
        assert_eq!(selector_place("empty podAffinity is invalid"), None);
    }
}

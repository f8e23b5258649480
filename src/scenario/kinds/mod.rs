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
//!
//! This file holds the decoded types, classification and the decoding of each kind; the
//! steps live beside it: `fields.rs` (step 2, and reading a located `spec`), `values.rs`
//! (the value decoders of step 3) and `cross.rs` (the rules that span resources).

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;

use super::api_fields::{self, Field, FieldCheck, KindSchema, Shape, Support, TOP_LEVEL};
use super::decode::{Cidr, Cx, Decode, StringMap};
use super::diag::{Pos, nearest};
use super::resource::Resource;
use super::yaml::{Key, Value, YamlNode};
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

mod cross;
mod fields;
mod values;

use cross::*;
pub(super) use fields::*;
pub(super) use values::*;

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
    pub node_mesh_max_restart_time: Option<SimDuration>,
    pub service_cluster_ips: Vec<IpNet>,
    /// `serviceExternalIPs` and `serviceLoadBalancerIPs` (REFERENCE-policy §5).
    pub service_external_ips: Vec<IpNet>,
    pub service_load_balancer_ips: Vec<IpNet>,
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
    /// A Calico `BGPPeer`, decoded straight into the BGP layer's type.
    BgpPeer(crate::bgp::Peer),
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
        let cidr = spec.required(cx, "cidr", cidr_as_written);
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

    fn bgp_peer(&self, r: &Resource, spec: &Spec, cx: &mut Cx) -> Option<crate::bgp::Peer> {
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
        Some(crate::bgp::Peer {
            name: r.name.clone(),
            node,
            node_selector,
            peer_ip: peer.map(|(ip, _)| ip),
            peer_port: peer.and_then(|(_, port)| port),
            peer_selector,
            as_number: spec.get(cx, "asNumber", as_number),
            keep_original_next_hop: spec.value(cx, "keepOriginalNextHop").unwrap_or(false),
            max_restart_time: spec
                .value(cx, "maxRestartTime")
                .map(crate::bgp::whole_seconds),
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
        r.error_at(
            cx,
            &["metadata", "name"],
            format!(
                "{} must be named `default` (Calico reads no other), not `{}`",
                r.kind, r.name
            ),
        );
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
    let service_external_ips = spec
        .get(cx, "serviceExternalIPs", service_cidrs)
        .unwrap_or_default();
    let service_load_balancer_ips = spec
        .get(cx, "serviceLoadBalancerIPs", service_cidrs)
        .unwrap_or_default();
    Some(BgpConfiguration {
        name: r.name.clone(),
        as_number: spec.get(cx, "asNumber", as_number),
        node_to_node_mesh_enabled: spec.value(cx, "nodeToNodeMeshEnabled"),
        node_mesh_max_restart_time: spec.value(cx, "nodeMeshMaxRestartTime"),
        service_cluster_ips,
        service_external_ips,
        service_load_balancer_ips,
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

//! The policy model: what Calico's Felix evaluates once every policy kind has been converted
//! to a Calico policy (REFERENCE-policy §2).
//!
//! A [`Policy`] is one Calico policy in one [`Tier`]: a Kubernetes NetworkPolicy is already
//! `knp.default.<name>` at order 1000 in tier `default` (§2.6), an AdminNetworkPolicy is a global
//! policy in the admin tier at `order = priority`, a BaselineAdminNetworkPolicy one in the
//! baseline tier at order 1000 (§2.7). `types` is already defaulted by the rules of the kind the
//! policy came from (Kubernetes `policyTypes` defaulting differs from Calico's `types`
//! defaulting, §1.1 and §2.3), so a consumer only asks [`Policy::applies`].
//!
//! [`PolicySet`] is the policy state in force at one instant: tiers (the fixed ones always
//! present), policies, namespace and service account labels. The scenario builds the initial
//! set; `apply`/`delete` events change it through [`PolicySet::apply`] and
//! [`PolicySet::delete`].
//!
//! Invariants: selectors are parsed, nets are CIDRs, port ranges have `first <= last`, a
//! numeric port only appears with a protocol that has ports (TCP, UDP, SCTP, UDPLite) or, for
//! Kubernetes-derived rules, with the protocol Kubernetes defaulted; maps are `BTreeMap`s, so
//! iteration is ordered and deterministic.
//!
//! What this is not: no matching of packets (the engine does that, with [`Selector::matches`]
//! on the labels this module assembles), no YAML (see `scenario::policy_kinds`).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

use ipnet::IpNet;

use crate::model::network::CalicoProfile;
use crate::model::selector::Selector;
use crate::model::{Labels, text_enum};

// ---------------------------------------------------------------------------------------------
// Words

text_enum! {
    /// A rule's action (Calico `action`; ANP's Allow/Deny/Pass and CNP's Accept map onto it).
    pub enum Action {
        Allow = "Allow",
        Deny = "Deny",
        /// Stop this tier; the next applicable tier (or the profiles) decide.
        Pass = "Pass",
        /// Log and go on with the next rule: never decides.
        Log = "Log",
    }
}

text_enum! {
    /// The direction a policy check runs in, at the endpoint it protects.
    pub enum Direction {
        Ingress = "Ingress",
        Egress = "Egress",
    }
}

text_enum! {
    /// What a tier does when its applicable policies decided nothing.
    pub enum TierAction {
        Deny = "Deny",
        Pass = "Pass",
    }
}

text_enum! {
    /// The resource a policy came from. Staged variants keep the kind they stage and set
    /// [`Policy::staged`].
    pub enum PolicyKind {
        /// `projectcalico.org/v3` NetworkPolicy (namespaced).
        CalicoNetworkPolicy = "NetworkPolicy",
        /// `projectcalico.org/v3` GlobalNetworkPolicy.
        GlobalNetworkPolicy = "GlobalNetworkPolicy",
        /// `networking.k8s.io/v1` NetworkPolicy, as Calico converts it.
        KubernetesNetworkPolicy = "KubernetesNetworkPolicy",
        /// `policy.networking.k8s.io/v1alpha1` AdminNetworkPolicy.
        AdminNetworkPolicy = "AdminNetworkPolicy",
        /// `policy.networking.k8s.io/v1alpha1` BaselineAdminNetworkPolicy.
        BaselineAdminNetworkPolicy = "BaselineAdminNetworkPolicy",
        /// `policy.networking.k8s.io/v1alpha2` ClusterNetworkPolicy.
        ClusterNetworkPolicy = "ClusterNetworkPolicy",
    }
}

impl PolicyKind {
    /// Whether policies of this kind live in a namespace.
    pub fn is_namespaced(self) -> bool {
        matches!(
            self,
            PolicyKind::CalicoNetworkPolicy | PolicyKind::KubernetesNetworkPolicy
        )
    }
}

/// An IP protocol by number, spelled as Calico spells the named ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Protocol(pub u8);

impl From<crate::model::workload::PortProtocol> for Protocol {
    /// A container or Service port's protocol as a policy protocol: the one conversion.
    fn from(p: crate::model::workload::PortProtocol) -> Protocol {
        use crate::model::workload::PortProtocol;
        match p {
            PortProtocol::Tcp => Protocol::TCP,
            PortProtocol::Udp => Protocol::UDP,
            PortProtocol::Sctp => Protocol::SCTP,
        }
    }
}

impl Protocol {
    /// A probe's protocol when it has ports (TCP, UDP, SCTP); `None` for ICMP, whose packets
    /// carry a type and code instead: the one conversion from expectations' and `trace`'s
    /// `protocol`.
    pub fn of_probe(p: crate::model::expect::ProbeProtocol) -> Option<Protocol> {
        use crate::model::expect::ProbeProtocol;
        match p {
            ProbeProtocol::Tcp => Some(Protocol::TCP),
            ProbeProtocol::Udp => Some(Protocol::UDP),
            ProbeProtocol::Sctp => Some(Protocol::SCTP),
            ProbeProtocol::Icmp => None,
        }
    }

    /// The port protocol this is, for the protocols a container or Service port can have
    /// (TCP, UDP, SCTP); `None` for the others.
    pub fn port_protocol(self) -> Option<crate::model::workload::PortProtocol> {
        use crate::model::workload::PortProtocol;
        [PortProtocol::Tcp, PortProtocol::Udp, PortProtocol::Sctp]
            .into_iter()
            .find(|&p| Protocol::from(p) == self)
    }

    pub const ICMP: Protocol = Protocol(1);
    pub const TCP: Protocol = Protocol(6);
    pub const UDP: Protocol = Protocol(17);
    pub const ICMPV6: Protocol = Protocol(58);
    pub const SCTP: Protocol = Protocol(132);
    pub const UDPLITE: Protocol = Protocol(136);

    /// Calico's protocol names (`numorstring.Protocol`), case as Calico accepts them.
    const NAMES: [(&'static str, Protocol); 6] = [
        ("TCP", Protocol::TCP),
        ("UDP", Protocol::UDP),
        ("ICMP", Protocol::ICMP),
        ("ICMPv6", Protocol::ICMPV6),
        ("SCTP", Protocol::SCTP),
        ("UDPLite", Protocol::UDPLITE),
    ];

    /// Parses a Calico protocol name (`TCP`, `UDP`, `ICMP`, `ICMPv6`, `SCTP`, `UDPLite`).
    pub fn from_name(name: &str) -> Option<Protocol> {
        Protocol::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, p)| p)
    }

    /// The accepted names, for "expected one of" messages.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Protocol::NAMES.iter().map(|(n, _)| *n)
    }

    /// Whether a rule may match ports of this protocol (Calico's validator: TCP, UDP, SCTP,
    /// UDPLite).
    pub fn has_ports(self) -> bool {
        matches!(
            self,
            Protocol::TCP | Protocol::UDP | Protocol::SCTP | Protocol::UDPLITE
        )
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Protocol::NAMES.iter().find(|(_, p)| p == self) {
            Some((name, _)) => f.write_str(name),
            None => write!(f, "{}", self.0),
        }
    }
}

impl serde::Serialize for Protocol {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

// ---------------------------------------------------------------------------------------------
// Rules

/// One `ports`/`notPorts` item.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PortMatch {
    /// `first..=last` (a single port has `first == last`).
    Range { first: u16, last: u16 },
    /// A container port name, resolved per endpoint with the rule's protocol (or the port
    /// definition's, when the rule has none).
    Named(String),
}

impl PortMatch {
    pub fn single(port: u16) -> PortMatch {
        PortMatch::Range {
            first: port,
            last: port,
        }
    }
}

impl fmt::Display for PortMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PortMatch::Range { first, last } if first == last => write!(f, "{first}"),
            PortMatch::Range { first, last } => write!(f, "{first}:{last}"),
            PortMatch::Named(name) => f.write_str(name),
        }
    }
}

/// `icmp` / `notICMP`: a type and optionally a code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcmpMatch {
    pub icmp_type: u8,
    pub code: Option<u8>,
}

/// `serviceAccounts`: names (OR) and a selector over service account labels, both must hold
/// when both are given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceAccountMatch {
    pub names: Vec<String>,
    pub selector: Option<Selector>,
}

/// `services`: a Kubernetes Service whose endpoints (pod IPs and target ports) the rule
/// matches. `namespace` is already resolved to the policy's own for a NetworkPolicy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceRef {
    pub name: String,
    pub namespace: String,
}

/// Which endpoints a rule's `selector`/`notSelector`/`serviceAccounts` look at
/// (calico:updateprocessors/rules.go getEndpointSelector; REFERENCE-policy §2.2 "Scope").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceScope {
    /// No `namespaceSelector` in a namespaced policy: the policy's own namespace.
    Own(String),
    /// `namespaceSelector` given: endpoints of the namespaces whose labels (plus
    /// `projectcalico.org/name`) match it.
    Selected(Selector),
    /// No `namespaceSelector` in a global policy: every endpoint.
    Any,
    /// `namespaceSelector: global()`: non-namespaced things only (host endpoints, global
    /// network sets), never a pod.
    NonNamespaced,
}

/// A rule's `source` or `destination` (Calico EntityRule). Every present criterion must match;
/// values inside one list are alternatives (`notNets`/`notPorts`: none may match).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EntityRule {
    pub nets: Vec<IpNet>,
    pub not_nets: Vec<IpNet>,
    pub selector: Option<Selector>,
    pub not_selector: Option<Selector>,
    /// As written; [`EntityRule::scope`] turns it into the scope the selectors apply in.
    pub namespace_selector: Option<Selector>,
    pub ports: Vec<PortMatch>,
    pub not_ports: Vec<PortMatch>,
    pub service_accounts: Option<ServiceAccountMatch>,
    pub services: Option<ServiceRef>,
}

impl EntityRule {
    /// Whether the entity selects endpoints (and so can never match an external address).
    pub fn selects_endpoints(&self) -> bool {
        self.selector.is_some()
            || self.not_selector.is_some()
            || self.namespace_selector.is_some()
            || self.service_accounts.is_some()
    }

    /// The namespaces the entity's endpoint criteria look in, for a rule of a policy in
    /// `policy_namespace` (`None` for a global policy); `None` when the entity has no
    /// endpoint criterion (only nets, ports or services: not namespace-limited).
    pub fn scope(&self, policy_namespace: Option<&str>) -> Option<NamespaceScope> {
        if !self.selects_endpoints() {
            return None;
        }
        Some(match (&self.namespace_selector, policy_namespace) {
            (Some(s), _) if s.is_global() => NamespaceScope::NonNamespaced,
            (Some(s), _) => NamespaceScope::Selected(s.clone()),
            (None, Some(ns)) => NamespaceScope::Own(ns.to_string()),
            (None, None) => NamespaceScope::Any,
        })
    }

    /// Whether the entity has no criterion at all (matches every packet).
    pub fn is_empty(&self) -> bool {
        *self == EntityRule::default()
    }
}

/// One Calico rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub action: Action,
    pub protocol: Option<Protocol>,
    pub not_protocol: Option<Protocol>,
    pub icmp: Option<IcmpMatch>,
    pub not_icmp: Option<IcmpMatch>,
    pub source: EntityRule,
    pub destination: EntityRule,
}

impl Rule {
    /// A rule with `action` and no criteria: matches everything.
    pub fn any(action: Action) -> Rule {
        Rule {
            action,
            protocol: None,
            not_protocol: None,
            icmp: None,
            not_icmp: None,
            source: EntityRule::default(),
            destination: EntityRule::default(),
        }
    }
}

impl fmt::Display for EntityRule {
    /// A compact one-line form for messages and tests:
    /// `nets=10.0.0.0/8 !nets=… selector=… !selector=… ns=… ports=80,http !ports=… sa=names|sel
    /// service=ns/name`, only the criteria present.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn join<T: fmt::Display>(items: &[T]) -> String {
            items.iter().map(T::to_string).collect::<Vec<_>>().join(",")
        }
        let mut parts = Vec::new();
        if !self.nets.is_empty() {
            parts.push(format!("nets={}", join(&self.nets)));
        }
        if !self.not_nets.is_empty() {
            parts.push(format!("!nets={}", join(&self.not_nets)));
        }
        if let Some(s) = &self.selector {
            parts.push(format!("selector={s}"));
        }
        if let Some(s) = &self.not_selector {
            parts.push(format!("!selector={s}"));
        }
        if let Some(s) = &self.namespace_selector {
            parts.push(format!("ns={s}"));
        }
        if !self.ports.is_empty() {
            parts.push(format!("ports={}", join(&self.ports)));
        }
        if !self.not_ports.is_empty() {
            parts.push(format!("!ports={}", join(&self.not_ports)));
        }
        if let Some(sa) = &self.service_accounts {
            let selector = sa.selector.as_ref().map(Selector::to_string);
            parts.push(format!(
                "sa={}|{}",
                sa.names.join(","),
                selector.unwrap_or_default()
            ));
        }
        if let Some(s) = &self.services {
            parts.push(format!("service={}/{}", s.namespace, s.name));
        }
        f.write_str(&parts.join(" "))
    }
}

impl fmt::Display for Rule {
    /// `Allow TCP from[…] to[…]`: the action, the protocol criteria, then the non-empty
    /// source and destination.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.action)?;
        if let Some(p) = self.protocol {
            write!(f, " {p}")?;
        }
        if let Some(p) = self.not_protocol {
            write!(f, " !{p}")?;
        }
        for (word, icmp) in [("icmp", self.icmp), ("!icmp", self.not_icmp)] {
            if let Some(i) = icmp {
                write!(f, " {word}={}", i.icmp_type)?;
                if let Some(code) = i.code {
                    write!(f, "/{code}")?;
                }
            }
        }
        if !self.source.is_empty() {
            write!(f, " from[{}]", self.source)?;
        }
        if !self.destination.is_empty() {
            write!(f, " to[{}]", self.destination)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Policies and tiers

/// The directions a policy takes part in (`types`, defaulted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PolicyTypes {
    pub ingress: bool,
    pub egress: bool,
}

impl PolicyTypes {
    pub fn contains(self, d: Direction) -> bool {
        match d {
            Direction::Ingress => self.ingress,
            Direction::Egress => self.egress,
        }
    }

    /// Calico's defaulting of an omitted `types` (calico:api/pkg/defaults/networkpolicy.go):
    /// Ingress unless there are egress rules and no ingress rules; Egress when there are
    /// egress rules.
    pub fn calico_default(has_ingress_rules: bool, has_egress_rules: bool) -> PolicyTypes {
        PolicyTypes {
            ingress: has_ingress_rules || !has_egress_rules,
            egress: has_egress_rules,
        }
    }

    /// The API server's defaulting of an omitted Kubernetes `policyTypes` (k8s-api
    /// NetworkPolicySpec.policyTypes): Ingress always, Egress iff egress rules exist.
    pub fn kubernetes_default(has_egress_rules: bool) -> PolicyTypes {
        PolicyTypes {
            ingress: true,
            egress: has_egress_rules,
        }
    }
}

/// What identifies a policy: deleting it, replacing it on apply.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PolicyKey {
    pub kind: PolicyKind,
    pub staged: bool,
    pub namespace: Option<String>,
    /// `metadata.name` as written.
    pub name: String,
}

/// One policy, converted to Calico's form.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub kind: PolicyKind,
    /// Staged policies are loaded and reported, never enforced (REFERENCE-policy §2.9).
    pub staged: bool,
    /// The namespace for namespaced kinds, `None` for global ones.
    pub namespace: Option<String>,
    /// `metadata.name` as written (with its tier prefix, if any).
    pub name: String,
    pub tier: String,
    /// `None` = after every ordered policy of the tier (+∞).
    pub order: Option<f64>,
    /// Which endpoints the policy applies to (within `namespace` for a namespaced policy).
    /// A Kubernetes policy's already carries `projectcalico.org/orchestrator == 'k8s'`.
    pub selector: Selector,
    /// ANDed with `selector`, over the endpoint's service account labels.
    pub service_account_selector: Option<Selector>,
    /// GlobalNetworkPolicy: limits `selector` to namespaces whose labels match.
    pub namespace_selector: Option<Selector>,
    pub types: PolicyTypes,
    pub ingress: Vec<Rule>,
    pub egress: Vec<Rule>,
}

impl Policy {
    /// A policy of `kind` named `name` (in `namespace` for a namespaced kind) in the default
    /// tier, unordered, selecting every endpoint, with no rules and no policy types: the
    /// caller fills in the rest.
    pub fn new(kind: PolicyKind, namespace: Option<&str>, name: &str) -> Policy {
        Policy {
            kind,
            staged: false,
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
            tier: DEFAULT_TIER.to_string(),
            order: None,
            selector: Selector::all(),
            service_account_selector: None,
            namespace_selector: None,
            types: PolicyTypes::default(),
            ingress: Vec::new(),
            egress: Vec::new(),
        }
    }

    pub fn key(&self) -> PolicyKey {
        PolicyKey {
            kind: self.kind,
            staged: self.staged,
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }

    /// Whether the policy takes part in direction `d` (staged policies never do).
    pub fn applies(&self, d: Direction) -> bool {
        !self.staged && self.types.contains(d)
    }

    pub fn rules(&self, d: Direction) -> &[Rule] {
        match d {
            Direction::Ingress => &self.ingress,
            Direction::Egress => &self.egress,
        }
    }

    /// The name Calico shows for the policy (v3.30–3.31 backend names): `knp.default.<name>`
    /// for a Kubernetes policy, `kanp.adminnetworkpolicy.<name>` and
    /// `kbanp.baselineadminnetworkpolicy.<name>` for the admin kinds, the written name
    /// otherwise, prefixed `staged:` when staged (calico:libcalico-go/lib/names/policy.go).
    pub fn calico_name(&self) -> String {
        let staged = if self.staged { "staged:" } else { "" };
        match self.kind {
            PolicyKind::KubernetesNetworkPolicy => format!("{staged}knp.default.{}", self.name),
            PolicyKind::AdminNetworkPolicy => format!("kanp.adminnetworkpolicy.{}", self.name),
            PolicyKind::BaselineAdminNetworkPolicy => {
                format!("kbanp.baselineadminnetworkpolicy.{}", self.name)
            }
            _ => format!("{staged}{}", self.name),
        }
    }

    /// `<namespace>/<calico name>` or `<calico name>`: how SPEC's `policy` expectation and
    /// reports name a policy.
    pub fn qualified_name(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.calico_name()),
            None => self.calico_name(),
        }
    }

    /// The string Calico breaks order ties with (REFERENCE-policy §2.3): v3.30–3.31 the
    /// backend name (`<ns>/<tier>.<name>` for a Calico NetworkPolicy, whose default-tier
    /// names get `default.` prepended, `<ns>/knp.default.<name>`, `<tier>.<name>` for a
    /// global one); v3.32+ `name/namespace/kind`.
    pub fn tie_break_key(&self, profile: CalicoProfile) -> String {
        if profile >= CalicoProfile::V3_32 {
            let kind = match self.kind {
                PolicyKind::CalicoNetworkPolicy => "NetworkPolicy",
                PolicyKind::KubernetesNetworkPolicy => "KubernetesNetworkPolicy",
                _ => "GlobalNetworkPolicy",
            };
            let ns = self.namespace.as_deref().unwrap_or("");
            return format!("{}/{ns}/{kind}", self.name);
        }
        let name = match self.kind {
            PolicyKind::CalicoNetworkPolicy | PolicyKind::GlobalNetworkPolicy => {
                tiered_name(&self.tier, &self.name)
            }
            _ => self.calico_name(),
        };
        match &self.namespace {
            Some(ns) => format!("{ns}/{name}"),
            None => name,
        }
    }

    /// Evaluation order within a tier: by order (missing = +∞), then by
    /// [`Policy::tie_break_key`].
    pub fn cmp_in_tier(&self, other: &Policy, profile: CalicoProfile) -> Ordering {
        cmp_order(self.order, other.order).then_with(|| {
            self.tie_break_key(profile)
                .cmp(&other.tie_break_key(profile))
        })
    }
}

/// `<tier>.<name>` unless the name already carries the tier prefix (v3.30 names.go
/// TieredPolicyName).
fn tiered_name(tier: &str, name: &str) -> String {
    match name.strip_prefix(tier).and_then(|r| r.strip_prefix('.')) {
        Some(_) => name.to_string(),
        None => format!("{tier}.{name}"),
    }
}

/// Orders two optional orders, a missing one last (Calico treats it as +∞).
pub fn cmp_order(a: Option<f64>, b: Option<f64>) -> Ordering {
    let key = |o: Option<f64>| o.unwrap_or(f64::INFINITY);
    key(a).total_cmp(&key(b))
}

/// A Calico Tier.
#[derive(Clone, Debug, PartialEq)]
pub struct Tier {
    pub name: String,
    /// `None` = after every ordered tier.
    pub order: Option<f64>,
    pub default_action: TierAction,
}

/// The tier every policy without `tier` and every Kubernetes NetworkPolicy goes to.
pub const DEFAULT_TIER: &str = "default";

impl Tier {
    /// `default`: order 1,000,000, Deny (fixed).
    pub fn default_tier() -> Tier {
        Tier {
            name: DEFAULT_TIER.to_string(),
            order: Some(1_000_000.0),
            default_action: TierAction::Deny,
        }
    }

    /// The tier AdminNetworkPolicy (ClusterNetworkPolicy `tier: Admin`) goes to: order 1,000,
    /// Pass (fixed).
    pub fn admin(profile: CalicoProfile) -> Tier {
        Tier {
            name: admin_tier_name(profile).to_string(),
            order: Some(1_000.0),
            default_action: TierAction::Pass,
        }
    }

    /// The tier BaselineAdminNetworkPolicy (ClusterNetworkPolicy `tier: Baseline`) goes to:
    /// order 10,000,000, Pass (fixed).
    pub fn baseline(profile: CalicoProfile) -> Tier {
        Tier {
            name: baseline_tier_name(profile).to_string(),
            order: Some(10_000_000.0),
            default_action: TierAction::Pass,
        }
    }

    /// The tiers that always exist in `profile`, in evaluation order.
    pub fn fixed(profile: CalicoProfile) -> [Tier; 3] {
        [
            Tier::admin(profile),
            Tier::default_tier(),
            Tier::baseline(profile),
        ]
    }

    /// Evaluation order: by order (missing last), then by name (policy_sorter.go TierLess).
    pub fn cmp_eval(&self, other: &Tier) -> Ordering {
        cmp_order(self.order, other.order).then_with(|| self.name.cmp(&other.name))
    }
}

/// `adminnetworkpolicy` up to v3.31, `kube-admin` from v3.32 (libcalico-go/lib/names).
pub fn admin_tier_name(profile: CalicoProfile) -> &'static str {
    if profile >= CalicoProfile::V3_32 {
        "kube-admin"
    } else {
        "adminnetworkpolicy"
    }
}

/// `baselineadminnetworkpolicy` up to v3.31, `kube-baseline` from v3.32.
pub fn baseline_tier_name(profile: CalicoProfile) -> &'static str {
    if profile >= CalicoProfile::V3_32 {
        "kube-baseline"
    } else {
        "baselineadminnetworkpolicy"
    }
}

// ---------------------------------------------------------------------------------------------
// Labels policy selectors see

/// Label keys Calico adds (REFERENCE-policy §2.2).
pub const LABEL_NAMESPACE: &str = "projectcalico.org/namespace";
pub const LABEL_ORCHESTRATOR: &str = "projectcalico.org/orchestrator";
pub const LABEL_SERVICE_ACCOUNT: &str = "projectcalico.org/serviceaccount";
pub const LABEL_NAME: &str = "projectcalico.org/name";
/// The label the API server puts on every namespace (k8s-docs, REFERENCE-policy §1.5).
pub const LABEL_METADATA_NAME: &str = "kubernetes.io/metadata.name";

/// The labels of a pod's workload endpoint as Calico sees them: the pod's own plus
/// `projectcalico.org/namespace`, `projectcalico.org/orchestrator=k8s` and
/// `projectcalico.org/serviceaccount` (workload_endpoint_default.go).
pub fn endpoint_labels(pod_labels: &Labels, namespace: &str, service_account: &str) -> Labels {
    let mut labels = pod_labels.clone();
    labels.insert(LABEL_NAMESPACE.to_string(), namespace.to_string());
    labels.insert(LABEL_ORCHESTRATOR.to_string(), "k8s".to_string());
    labels.insert(
        LABEL_SERVICE_ACCOUNT.to_string(),
        service_account.to_string(),
    );
    labels
}

// ---------------------------------------------------------------------------------------------
// The set in force

/// A change a resource makes to the policy state.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicyResource {
    Policy(Box<Policy>),
    Tier(Tier),
    /// A namespace and its labels as written (the automatic ones are added by the set).
    Namespace {
        name: String,
        labels: Labels,
    },
    ServiceAccount {
        namespace: String,
        name: String,
        labels: Labels,
    },
}

/// What a `delete` removes from the policy state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyDelete {
    Policy(PolicyKey),
    Tier(String),
    Namespace(String),
    ServiceAccount { namespace: String, name: String },
}

/// The policy state in force at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicySet {
    pub profile: CalicoProfile,
    /// User tiers by name; the fixed tiers ([`Tier::fixed`]) are not stored here and cannot be
    /// replaced.
    tiers: BTreeMap<String, Tier>,
    policies: BTreeMap<PolicyKey, Policy>,
    /// Namespace labels as the API server holds them (with `kubernetes.io/metadata.name`).
    namespaces: BTreeMap<String, Labels>,
    service_accounts: BTreeMap<(String, String), Labels>,
}

impl PolicySet {
    pub fn new(profile: CalicoProfile) -> PolicySet {
        PolicySet {
            profile,
            tiers: BTreeMap::new(),
            policies: BTreeMap::new(),
            namespaces: BTreeMap::new(),
            service_accounts: BTreeMap::new(),
        }
    }

    /// Applies a resource: creates it or replaces the one with the same identity.
    pub fn apply(&mut self, resource: &PolicyResource) {
        match resource {
            PolicyResource::Policy(p) => {
                self.policies.insert(p.key(), (**p).clone());
            }
            PolicyResource::Tier(t) => {
                if !self.is_fixed_tier(&t.name) {
                    self.tiers.insert(t.name.clone(), t.clone());
                }
            }
            PolicyResource::Namespace { name, labels } => {
                let mut labels = labels.clone();
                labels.insert(LABEL_METADATA_NAME.to_string(), name.clone());
                self.namespaces.insert(name.clone(), labels);
            }
            PolicyResource::ServiceAccount {
                namespace,
                name,
                labels,
            } => {
                self.service_accounts
                    .insert((namespace.clone(), name.clone()), labels.clone());
            }
        }
    }

    /// Removes what `what` names; returns whether it existed.
    pub fn delete(&mut self, what: &PolicyDelete) -> bool {
        match what {
            PolicyDelete::Policy(key) => self.policies.remove(key).is_some(),
            PolicyDelete::Tier(name) => self.tiers.remove(name).is_some(),
            PolicyDelete::Namespace(name) => self.namespaces.remove(name).is_some(),
            PolicyDelete::ServiceAccount { namespace, name } => self
                .service_accounts
                .remove(&(namespace.clone(), name.clone()))
                .is_some(),
        }
    }

    /// What SPEC §2.5's `delete: {kind, name}` removes: the policies of that resource kind
    /// (`NetworkPolicy` names both the Kubernetes and the Calico kind) named `name` or
    /// `namespace/name`, or the Tier, Namespace or ServiceAccount so named. Returns whether
    /// anything was removed; an unknown kind removes nothing.
    pub fn delete_named(&mut self, kind: &str, name: &str) -> bool {
        let (namespace, bare) = match name.split_once('/') {
            Some((ns, n)) => (Some(ns), n),
            None => (None, name),
        };
        let kinds: &[(PolicyKind, bool)] = match kind {
            "NetworkPolicy" => &[
                (PolicyKind::CalicoNetworkPolicy, false),
                (PolicyKind::KubernetesNetworkPolicy, false),
            ],
            "GlobalNetworkPolicy" => &[(PolicyKind::GlobalNetworkPolicy, false)],
            "StagedNetworkPolicy" => &[(PolicyKind::CalicoNetworkPolicy, true)],
            "StagedGlobalNetworkPolicy" => &[(PolicyKind::GlobalNetworkPolicy, true)],
            "StagedKubernetesNetworkPolicy" => &[(PolicyKind::KubernetesNetworkPolicy, true)],
            "AdminNetworkPolicy" => &[(PolicyKind::AdminNetworkPolicy, false)],
            "BaselineAdminNetworkPolicy" => &[(PolicyKind::BaselineAdminNetworkPolicy, false)],
            "ClusterNetworkPolicy" => &[(PolicyKind::ClusterNetworkPolicy, false)],
            "Tier" => return self.delete(&PolicyDelete::Tier(name.to_string())),
            "Namespace" => return self.delete(&PolicyDelete::Namespace(name.to_string())),
            "ServiceAccount" => {
                return self.delete(&PolicyDelete::ServiceAccount {
                    namespace: namespace.unwrap_or("default").to_string(),
                    name: bare.to_string(),
                });
            }
            _ => return false,
        };
        let before = self.policies.len();
        self.policies.retain(|key, _| {
            let hit = kinds.contains(&(key.kind, key.staged))
                && key.name == bare
                && namespace.is_none_or(|ns| key.namespace.as_deref() == Some(ns));
            !hit
        });
        self.policies.len() != before
    }

    fn is_fixed_tier(&self, name: &str) -> bool {
        Tier::fixed(self.profile).iter().any(|t| t.name == name)
    }

    /// Every tier (fixed and user), in evaluation order.
    pub fn tiers(&self) -> Vec<Tier> {
        let mut tiers: Vec<Tier> = Tier::fixed(self.profile).into();
        tiers.extend(self.tiers.values().cloned());
        tiers.sort_by(Tier::cmp_eval);
        tiers
    }

    /// The tiers Tier resources declared, by name (the fixed ones excluded).
    pub fn user_tiers(&self) -> impl Iterator<Item = &Tier> {
        self.tiers.values()
    }

    /// Every policy (staged included), by key.
    pub fn policies(&self) -> impl Iterator<Item = &Policy> {
        self.policies.values()
    }

    pub fn policy(&self, key: &PolicyKey) -> Option<&Policy> {
        self.policies.get(key)
    }

    /// The policies of `tier`, staged included, in evaluation order.
    pub fn policies_in_tier(&self, tier: &str) -> Vec<&Policy> {
        let mut out: Vec<&Policy> = self.policies.values().filter(|p| p.tier == tier).collect();
        out.sort_by(|a, b| a.cmp_in_tier(b, self.profile));
        out
    }

    /// Whether any non-staged policy exists (SPEC §7: `network.policy` defaults to
    /// `enforce` then).
    pub fn has_enforced_policy(&self) -> bool {
        self.policies.values().any(|p| !p.staged)
    }

    /// The known namespaces and their labels as Kubernetes holds them.
    pub fn namespaces(&self) -> &BTreeMap<String, Labels> {
        &self.namespaces
    }

    /// The labels a `namespaceSelector` sees for `namespace`: its Kubernetes labels (with
    /// `kubernetes.io/metadata.name`, present even for a namespace no manifest declares) plus
    /// `projectcalico.org/name` (conversion.go NamespaceToProfile).
    pub fn namespace_selector_labels(&self, namespace: &str) -> Labels {
        let mut labels = self.namespaces.get(namespace).cloned().unwrap_or_default();
        labels.insert(LABEL_METADATA_NAME.to_string(), namespace.to_string());
        labels.insert(LABEL_NAME.to_string(), namespace.to_string());
        labels
    }

    /// The labels a `serviceAccountSelector` sees for a service account: its labels plus
    /// `projectcalico.org/name` (conversion.go ServiceAccountToProfile).
    pub fn service_account_selector_labels(&self, namespace: &str, name: &str) -> Labels {
        let mut labels = self
            .service_accounts
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
            .unwrap_or_default();
        labels.insert(LABEL_NAME.to_string(), name.to_string());
        labels
    }
}

#[cfg(test)]
mod tests;

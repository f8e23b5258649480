//! Network policy as Calico's dataplane sees it (REFERENCE-policy §2): tiers, policies and
//! rules after every kind (Kubernetes NetworkPolicy, Calico NetworkPolicy and
//! GlobalNetworkPolicy, AdminNetworkPolicy, BaselineAdminNetworkPolicy, ClusterNetworkPolicy,
//! the Staged kinds) has been normalised to one Calico form, plus the namespace and service
//! account labels policy selectors see.
//!
//! Layering: `policy` is `model`-level data. It uses only [`crate::model`] (labels, selectors,
//! the Calico profile) and sits below `forwarding`; `scenario` builds its values from manifests
//! and the evaluation engine consumes them.
//!
//! - [`model`]: the typed, validated policy model (`Tier`, `Policy`, `Rule`, `EntityRule`…)
//!   and [`model::PolicySet`], the policy state in force at one instant, which `apply`/`delete`
//!   events change.
//! - [`hns_acl`]: the HNS ACL lists Calico for Windows programs on a pod's HNS endpoint.
//! - [`eval`]: the evaluation engine: per endpoint and direction, REFERENCE-policy §2.5's walk
//!   over tiers, policies and rules, with the deciding rule and a step-by-step explanation.
//!
//! Invariants: every value here is validated (selectors parsed, CIDRs well formed, port ranges
//! ordered, types defaulted by the rules of the kind it came from); iteration is ordered.
//! What this module is not: it does not decode YAML (`scenario` does) and it does not decide
//! whether a packet is allowed (the evaluation engine does).

pub mod audit;
pub mod eval;
pub mod hns_acl;
pub mod model;

pub use model::{
    Action, Direction, EntityRule, IcmpMatch, NamespaceScope, Policy, PolicyDelete, PolicyKey,
    PolicyKind, PolicyResource, PolicySet, PolicyTypes, PortMatch, Protocol, Rule,
    ServiceAccountMatch, ServiceRef, Tier, TierAction,
};

//! Decoding the network policy kinds (SPEC §7) into [`crate::policy::model`], converting each
//! to the Calico policy Felix would evaluate (REFERENCE-policy §2.6, §2.7).
//!
//! Kinds: `networking.k8s.io/v1` NetworkPolicy; `projectcalico.org/v3` (and
//! `crd.projectcalico.org/v1`) NetworkPolicy, GlobalNetworkPolicy, Tier and the three Staged
//! kinds; `policy.networking.k8s.io` v1alpha1 AdminNetworkPolicy, BaselineAdminNetworkPolicy
//! and v1alpha2 ClusterNetworkPolicy; `v1` ServiceAccount. The field check (typos, unmodelled
//! fields) is [`crate::scenario::kinds`]'s, run with [`crate::scenario::policy_fields`]' tables
//! before this.
//!
//! Validation is the API server's: Kubernetes' `ValidateNetworkPolicy` (peers, `ipBlock`
//! `except` a strict subset, ports and `endPort`, label selectors), Calico's validator (rule
//! actions, protocols, ports only with a protocol that has ports, `icmp` only with ICMP,
//! `services` placement, the v3.30–3.31 tier name prefix), the network-policy-api CRDs'
//! (priority 0–1000, exactly one subject and peer kind, BaselineAdminNetworkPolicy named
//! `default`). Every problem is reported at its field; decoding never stops at the first.
//!
//! Conversion is Calico's (conversion.go K8sNetworkPolicyToCalico,
//! K8sAdminNetworkPolicyToCalico): Kubernetes `policyTypes` are defaulted the Kubernetes way
//! before conversion, Calico `types` the Calico way; a Kubernetes rule becomes one Allow rule
//! per peer and protocol; an admin rule that cannot be converted (a `nodes` peer) fails
//! closed: Deny and Pass rules become "Deny everything", Allow rules are dropped, each with a
//! warning.
//!
//! What this module does not do: it does not check that a namespace, tier or service named by
//! a policy exists (a warning at most: events may create them later) and it never evaluates.
//!
//! This file dispatches by kind and builds the `PolicySet`; each family of kinds has its file
//! (`kubernetes.rs`, `calico.rs`, `admin.rs`) and `values.rs` holds the value decoders.

use std::collections::BTreeMap;

use ipnet::IpNet;

use crate::model::Labels;
use crate::model::network::CalicoProfile;
use crate::model::selector::{LabelSelector, Selector};
use crate::policy::model::{
    Action, DEFAULT_TIER, Direction, EntityRule, IcmpMatch, LABEL_ORCHESTRATOR, Policy, PolicyKind,
    PolicyResource, PolicySet, PolicyTypes, PortMatch, Protocol, Rule, ServiceAccountMatch,
    ServiceRef, Tier, TierAction, admin_tier_name, baseline_tier_name,
};
use crate::scenario::api_fields::KindSchema;
use crate::scenario::decode::{Cx, Decode};
use crate::scenario::diag::nearest;
use crate::scenario::kinds::{
    ResourceSpec, Spec, calico_selector, cidr_as_written, label_selector, list, port_or_name,
    seq_items, strings, word,
};
use crate::scenario::resource::Resource;
use crate::scenario::yaml::{Value, YamlNode};

mod admin;
mod calico;
mod kubernetes;
mod values;

use admin::AdminFlavour;
use kubernetes::k8s_pods;
use values::*;

/// Decodes one policy-kind resource whose fields were already checked against `schema`.
pub(super) fn decode(
    r: &Resource,
    schema: &'static KindSchema,
    labels: Labels,
    profile: CalicoProfile,
    cx: &mut Cx,
) -> Option<PolicyResource> {
    let namespace = r.namespace.clone().unwrap_or_else(|| "default".to_string());
    if schema.kind == "ServiceAccount" {
        return Some(PolicyResource::ServiceAccount {
            namespace,
            name: r.name.clone(),
            labels,
        });
    }
    let spec = Spec::of(r, cx)?;
    let d = PolicyDecoder {
        r,
        profile,
        namespace: schema.namespaced.then_some(namespace),
    };
    cx.at_key("spec", |cx| match schema.kind {
        "Tier" => d.tier(&spec, cx).map(PolicyResource::Tier),
        "NetworkPolicy" if schema.api_version == super::policy_fields::NETWORKING_V1 => {
            d.kubernetes(&spec, false, cx)
        }
        "StagedKubernetesNetworkPolicy" => d.kubernetes(&spec, true, cx),
        "NetworkPolicy" | "GlobalNetworkPolicy" => d.calico(&spec, false, cx),
        "StagedNetworkPolicy" | "StagedGlobalNetworkPolicy" => d.calico(&spec, true, cx),
        "AdminNetworkPolicy" => d.admin(&spec, AdminFlavour::Anp, cx),
        "BaselineAdminNetworkPolicy" => d.admin(&spec, AdminFlavour::Banp, cx),
        "ClusterNetworkPolicy" => d.admin(&spec, AdminFlavour::Cnp, cx),
        _ => None,
    })
}

/// A ServiceAccount has top-level fields besides `metadata` (k8s-api core/v1 ServiceAccount);
/// podnet reads only its labels, so the copy returned has them removed for the field check
/// (`None` for every other kind, or when there is nothing to remove).
pub(super) fn without_service_account_fields(r: &Resource) -> Option<Resource> {
    const FIELDS: [&str; 3] = [
        "secrets",
        "imagePullSecrets",
        "automountServiceAccountToken",
    ];
    if r.api_version != "v1" || r.kind != "ServiceAccount" {
        return None;
    }
    let Value::Map(entries) = &r.body.value else {
        return None;
    };
    if !entries
        .iter()
        .any(|(k, _)| FIELDS.contains(&k.text.as_str()))
    {
        return None;
    }
    let mut trimmed = r.clone();
    trimmed.body.value = Value::Map(
        entries
            .iter()
            .filter(|(k, _)| !FIELDS.contains(&k.text.as_str()))
            .cloned()
            .collect(),
    );
    Some(trimmed)
}

/// The policy state the decoded `resources` make at time zero, with their namespaces'
/// labels. A policy in a tier that no Tier declares (neither here nor in an `apply` event) is
/// kept with a warning: Calico's API server refuses it, but an event may create the tier, and
/// until one does the engine finds no such tier and the policy never applies.
pub(super) fn policy_set(
    profile: CalicoProfile,
    resources: &[Resource],
    specs: &[Option<ResourceSpec>],
    applied_specs: &[Option<ResourceSpec>],
    cx: &mut Cx,
) -> PolicySet {
    let mut set = PolicySet::new(profile);
    for spec in specs.iter().flatten() {
        match spec {
            ResourceSpec::Policy(p) => set.apply(p),
            ResourceSpec::Namespace(ns) => set.apply(&PolicyResource::Namespace {
                name: ns.name.clone(),
                labels: ns.labels.clone(),
            }),
            _ => {}
        }
    }
    let mut tiers: Vec<String> = Tier::fixed(profile).map(|t| t.name).into();
    for spec in specs.iter().chain(applied_specs).flatten() {
        if let ResourceSpec::Policy(PolicyResource::Tier(t)) = spec {
            tiers.push(t.name.clone());
        }
    }
    for (r, spec) in resources.iter().zip(specs) {
        let Some(ResourceSpec::Policy(PolicyResource::Policy(p))) = spec else {
            continue;
        };
        if tiers.contains(&p.tier) {
            continue;
        }
        r.report(
            cx,
            &["spec", "tier"],
            None,
            false,
            format!(
                "no Tier `{}` is declared; Calico refuses a policy in a missing tier, and podnet \
                 applies this one only once the tier exists",
                p.tier
            ),
        );
    }
    set
}

struct PolicyDecoder<'r> {
    r: &'r Resource,
    profile: CalicoProfile,
    /// The policy's namespace for namespaced kinds.
    namespace: Option<String>,
}

impl PolicyDecoder<'_> {
    fn policy(&self, kind: PolicyKind, staged: bool, tier: String) -> Policy {
        Policy {
            staged,
            tier,
            ..Policy::new(kind, self.namespace.as_deref(), &self.r.name)
        }
    }

    // -----------------------------------------------------------------------------------------
    // Calico Tier

    fn tier(&self, spec: &Spec, cx: &mut Cx) -> Option<Tier> {
        let order = spec.get(cx, "order", order);
        let default_action = spec
            .get(cx, "defaultAction", |n, cx| {
                word(
                    n,
                    cx,
                    &[("Deny", TierAction::Deny), ("Pass", TierAction::Pass)],
                )
            })
            .unwrap_or(TierAction::Deny);
        let fixed = Tier::fixed(self.profile);
        if let Some(t) = fixed.iter().find(|t| t.name == self.r.name) {
            // Calico's validator fixes these tiers' order and default action.
            if order.is_some_and(|o| Some(o) != t.order) || default_action != t.default_action {
                let pos = spec.pos;
                cx.error(
                    pos,
                    format!(
                        "tier `{}` has a fixed order {} and defaultAction {}",
                        t.name,
                        t.order.unwrap_or_default(),
                        t.default_action
                    ),
                );
                return None;
            }
        }
        Some(Tier {
            name: self.r.name.clone(),
            order,
            default_action,
        })
    }

    // -----------------------------------------------------------------------------------------
    // Kubernetes NetworkPolicy

    // -----------------------------------------------------------------------------------------
    // Calico NetworkPolicy / GlobalNetworkPolicy (and their Staged kinds)

    // -----------------------------------------------------------------------------------------
    // AdminNetworkPolicy, BaselineAdminNetworkPolicy, ClusterNetworkPolicy
}

// ---------------------------------------------------------------------------------------------
// Values

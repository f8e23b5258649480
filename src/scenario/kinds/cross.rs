//! Rules that span resources: Calico's pool validation and Spiderpool's webhook checks run on
//! the decoded values, and their problems are mapped back to the field (or list item) of the
//! resource they concern.

use super::*;

/// Whether `r` takes part in the cross-resource checks. Resources applied by events
/// (`events[i].apply`) are checked alone: whether they overlap another pool depends on what
/// exists when they are applied (a pool may replace one deleted a minute earlier), which only
/// the simulation knows.
pub(super) fn cross_checked(r: &Resource) -> bool {
    !r.path.starts_with("events[")
}

/// Runs Calico's and Spiderpool's validation and reports each problem at its field; returns
/// the indices of the resources found wrong.
pub(super) fn cross_check(
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
pub(super) fn ipam_config_of<'s>(
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
                     ({})",
                    resources[f].kind,
                    at.place()
                );
                resources[i].report(cx, &["metadata", "name"], None, true, message);
                failed.insert(i);
            }
        }
    }
    first
}

pub(super) fn check_calico(
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
            resources[i].report(cx, &keys, None, false, message);
            continue;
        }
        resources[i].report(cx, &keys, None, true, problem.message);
        failed.insert(i);
    }
}

/// Rules of [`calico::validate`] that only `calicoctl ipam configure` enforces (`ipam.go`
/// SetIPAMConfig). Applying an IPAMConfiguration resource goes through `clientv3`, which checks
/// only the name and the CRD bounds, so a published manifest breaking them (Calico's own
/// reference sample: `strictAffinity: false` with `maxBlocksPerHost: 4`) is accepted: podnet
/// warns instead of refusing it.
pub(super) const CONFIGURE_ONLY: &[&str] = &[
    "MaxBlocksPerHost requires StrictAffinity to be enabled",
    "Cannot disable 'StrictAffinity' and 'AutoAllocateBlocks' at the same time",
];

pub(super) fn check_spiderpool(
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
        resources[owners[at]].report(cx, &["spec"], None, true, message);
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
        resources[i].report(cx, &keys, item, error, message.to_string());
        if error {
            failed.insert(i);
        }
    }
}

/// Splits a `LabelSelector::validate` message such as `matchExpressions[0].values: must be
/// specified…` into the key, the item index and the rest.
pub(super) fn selector_place(message: &str) -> Option<(&'static str, Option<usize>, &str)> {
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

/// Spiderpool's own checks compare a pool's `ips` pairwise and the pools sharing a subnet
/// pairwise, as its webhook does. Bounded so validation stays within the README's time
/// (issue #19): entries of `ips` and `excludeIPs` of all pools together, and pools per
/// subnet. The pool at which a limit is passed, with the message.
fn spiderpool_over_limits(pools: &[spiderpool::SpiderIpPool]) -> Option<(usize, String)> {
    let mut entries = 0;
    let mut per_subnet: std::collections::BTreeMap<ipnet::IpNet, usize> = Default::default();
    for (i, p) in pools.iter().enumerate() {
        entries += p.ips.len() + p.exclude_ips.len();
        if entries > crate::scenario::LIMITS.max_spiderpool_entries {
            return Some((
                i,
                format!(
                    "the SpiderIPPools' `ips` and `excludeIPs` have more than {} entries \
                     together; list ranges (`10.0.0.10-10.0.0.200`) instead of addresses",
                    crate::scenario::LIMITS.max_spiderpool_entries
                ),
            ));
        }
        let same = per_subnet.entry(p.subnet.trunc()).or_default();
        *same += 1;
        if *same > crate::scenario::LIMITS.max_spiderpools_per_subnet {
            return Some((
                i,
                format!(
                    "more than {} SpiderIPPools share the subnet {}",
                    crate::scenario::LIMITS.max_spiderpools_per_subnet,
                    p.subnet.trunc()
                ),
            ));
        }
    }
    None
}

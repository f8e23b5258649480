//! Which pools a pod may draw from, in which order: Spiderpool's candidate sources, its
//! pre-checks, its filters and its affinity sort (`pkg/ipam/pool_selections.go`,
//! `pkg/ipam/allocate.go` precheckPoolCandidates / filterPoolCandidates / selectByPod /
//! sortPoolCandidates, `pkg/ippoolmanager/utils.go` ByPoolPriority, `pkg/ipam/utils.go`
//! validateAndMutateMultipleNICAnnotations). Error texts are Spiderpool's; where Spiderpool
//! wraps a Go JSON error podnet puts serde_json's message in its place.
//!
//! Invariant: everything here is a pure function of the request and the pools; malformed
//! annotations become `SpiderError`s, never panics.
//! This module does not model SpiderSubnet auto-pools, wildcard pool names, CNI-config pools,
//! Multus `multusName` matching, or NICs other than the first.

use std::collections::BTreeMap;

use serde_json::Value;

use super::SpiderError;
use super::error::go_list;
use super::pool::{IpFamily, SpiderIpPool};
use crate::model::Labels;

pub const ANNO_POD_IPPOOLS: &str = "ipam.spidernet.io/ippools";
pub const ANNO_POD_IPPOOL: &str = "ipam.spidernet.io/ippool";
pub const ANNO_NS_DEFAULT_V4: &str = "ipam.spidernet.io/default-ipv4-ippool";
pub const ANNO_NS_DEFAULT_V6: &str = "ipam.spidernet.io/default-ipv6-ippool";

/// The first NIC's name, as Spiderpool's messages print it.
pub const DEFAULT_NIC: &str = "eth0";

/// Where a pod's candidate pools came from (first that exists wins).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CandidateSource {
    PodIpPools,
    PodIpPool,
    Namespace,
    ClusterDefault,
}

/// The pool names to try for one family, in the order the source gave them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FamilyCandidates {
    pub family: IpFamily,
    pub pools: Vec<String>,
}

/// The outcome of candidate selection for the pod's first NIC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidates {
    pub source: CandidateSource,
    /// The NIC name used in messages: `eth0`, or `0` for an unnamed first `ippools` entry.
    pub nic: String,
    /// IPv4 first, then IPv6; only families with at least one pool.
    pub families: Vec<FamilyCandidates>,
}

/// What the pod looks like to the pool filters.
pub struct PodView<'a> {
    pub namespace: &'a str,
    pub pod_labels: &'a Labels,
    pub namespace_labels: &'a Labels,
    pub node_name: &'a str,
    pub node_labels: &'a Labels,
}

/// A pool as the filters see it: its spec and whether it is being deleted.
pub struct PoolView<'a> {
    pub spec: &'a SpiderIpPool,
    pub terminating: bool,
}

fn wrong_pod_annotation(key: &'static str, detail: impl std::fmt::Display) -> SpiderError {
    SpiderError::PodAnnotation {
        key,
        detail: detail.to_string(),
    }
}

/// A JSON list of pool names; `null` or absent is empty, as Go's decoder treats it.
fn name_list(v: Option<&Value>, field: &str) -> Result<Vec<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!(
                    "'{field}' must list IPPool names as strings, found {other}"
                )),
            })
            .collect(),
        Some(other) => Err(format!(
            "'{field}' must be a list of IPPool names, found {other}"
        )),
    }
}

fn families(v4: Vec<String>, v6: Vec<String>) -> Vec<FamilyCandidates> {
    [(IpFamily::V4, v4), (IpFamily::V6, v6)]
        .into_iter()
        .filter(|(_, pools)| !pools.is_empty())
        .map(|(family, pools)| FamilyCandidates { family, pools })
        .collect()
}

/// `ipam.spidernet.io/ippools`: a list of `{interface, ipv4, ipv6, cleangateway}`; podnet
/// takes the entry of the first NIC.
fn from_pod_ippools(text: &str) -> Result<Candidates, SpiderError> {
    let bad = |d: String| wrong_pod_annotation(ANNO_POD_IPPOOLS, d);
    let value: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    let items = match value {
        Value::Array(items) => items,
        Value::Null => Vec::new(),
        other => {
            return Err(bad(format!(
                "expected a list of NIC entries, found {other}"
            )));
        }
    };
    if items.is_empty() {
        return Err(bad("value requires at least one item".into()));
    }
    let mut entries = Vec::new();
    for item in &items {
        let Value::Object(map) = item else {
            return Err(bad(format!(
                "expected each entry to be an object, found {item}"
            )));
        };
        let nic = match map.get("interface") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => return Err(bad(format!("'interface' must be a string, found {other}"))),
        };
        let v4 = name_list(map.get("ipv4"), "ipv4").map_err(bad)?;
        let v6 = name_list(map.get("ipv6"), "ipv6").map_err(bad)?;
        entries.push((nic, v4, v6));
    }
    let named = !entries[0].0.is_empty();
    let mut seen = std::collections::BTreeSet::new();
    for (index, (nic, _, _)) in entries.iter_mut().enumerate() {
        if nic.is_empty() == named {
            return Err(bad(
                "NIC should be either all specified or all unspecified".into()
            ));
        }
        if nic.is_empty() {
            // Spiderpool names unnamed entries by their index.
            *nic = index.to_string();
        }
        if !seen.insert(nic.clone()) {
            return Err(bad(format!("duplicate interface {nic}")));
        }
    }
    let wanted = if named { DEFAULT_NIC } else { "0" };
    let Some((nic, v4, v6)) = entries.into_iter().find(|(nic, _, _)| nic == wanted) else {
        return Err(bad(format!("interface {DEFAULT_NIC} must be specified")));
    };
    let families = families(v4, v6);
    if families.is_empty() {
        // Spiderpool would allocate nothing and the CNI call would fail later; podnet says so.
        return Err(bad(format!(
            "the entry of NIC {nic} names no IPv4 or IPv6 IPPool"
        )));
    }
    Ok(Candidates {
        source: CandidateSource::PodIpPools,
        nic,
        families,
    })
}

/// `ipam.spidernet.io/ippool`: `{"ipv4": [...], "ipv6": [...]}`.
fn from_pod_ippool(text: &str) -> Result<Candidates, SpiderError> {
    let bad = |d: String| wrong_pod_annotation(ANNO_POD_IPPOOL, d);
    let value: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    let map = match value {
        Value::Object(map) => map,
        Value::Null => Default::default(),
        other => {
            return Err(bad(format!(
                "expected an object with 'ipv4'/'ipv6' lists, found {other}"
            )));
        }
    };
    let v4 = name_list(map.get("ipv4"), "ipv4").map_err(bad)?;
    let v6 = name_list(map.get("ipv6"), "ipv6").map_err(bad)?;
    let families = families(v4, v6);
    if families.is_empty() {
        return Err(bad("names no IPv4 or IPv6 IPPool".into()));
    }
    Ok(Candidates {
        source: CandidateSource::PodIpPool,
        nic: DEFAULT_NIC.into(),
        families,
    })
}

/// The namespace's default pools, if it names any.
fn from_namespace(
    annotations: &BTreeMap<String, String>,
) -> Result<Option<Candidates>, SpiderError> {
    let list = |key: &'static str| -> Result<Vec<String>, SpiderError> {
        let Some(text) = annotations.get(key) else {
            return Ok(Vec::new());
        };
        let bad = |detail: String| SpiderError::NamespaceAnnotation { key, detail };
        let value: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        name_list(Some(&value), "value").map_err(bad)
    };
    let families = families(list(ANNO_NS_DEFAULT_V4)?, list(ANNO_NS_DEFAULT_V6)?);
    Ok((!families.is_empty()).then(|| Candidates {
        source: CandidateSource::Namespace,
        nic: DEFAULT_NIC.into(),
        families,
    }))
}

/// Candidate pools from the first source that exists (`getPoolCandidates`).
pub fn pool_candidates<'a>(
    pod_annotations: &BTreeMap<String, String>,
    namespace_annotations: &BTreeMap<String, String>,
    pools: impl Iterator<Item = &'a SpiderIpPool>,
) -> Result<Candidates, SpiderError> {
    if let Some(text) = pod_annotations.get(ANNO_POD_IPPOOLS) {
        return from_pod_ippools(text);
    }
    if let Some(text) = pod_annotations.get(ANNO_POD_IPPOOL) {
        return from_pod_ippool(text);
    }
    if let Some(c) = from_namespace(namespace_annotations)? {
        return Ok(c);
    }
    // Cluster default pools; `pools` iterates in name order, which is the order podnet keeps.
    let (mut v4, mut v6) = (Vec::new(), Vec::new());
    for p in pools.filter(|p| p.default) {
        match p.family() {
            IpFamily::V4 => v4.push(p.name.clone()),
            IpFamily::V6 => v6.push(p.name.clone()),
        }
    }
    let families = families(v4, v6);
    if families.is_empty() {
        return Err(SpiderError::NoSelectionRules);
    }
    Ok(Candidates {
        source: CandidateSource::ClusterDefault,
        nic: DEFAULT_NIC.into(),
        families,
    })
}

/// Refuses duplicate and unknown names (`precheckPoolCandidates`), in list order.
pub fn precheck(c: &Candidates, exists: impl Fn(&str) -> bool) -> Result<(), SpiderError> {
    for fc in &c.families {
        let mut seen = std::collections::BTreeSet::new();
        for name in &fc.pools {
            if !seen.insert(name.as_str()) {
                return Err(SpiderError::DuplicatePool {
                    name: name.clone(),
                    nic: c.nic.clone(),
                });
            }
            if !exists(name) {
                return Err(SpiderError::OriginalPoolNotFound { name: name.clone() });
            }
        }
    }
    Ok(())
}

/// Why `pool` may not serve the pod, in `selectByPod`'s order, or `None` if it may.
pub fn rejection(family: IpFamily, pool: &PoolView<'_>, pod: &PodView<'_>) -> Option<String> {
    let spec = pool.spec;
    let name = &spec.name;
    if pool.terminating {
        return Some(format!("terminating IPPool {name}"));
    }
    if spec.disable {
        return Some(format!("disabled IPPool {name}"));
    }
    if spec.family() != family {
        return Some(format!(
            "expect an IPv{} IPPool, but the version of the IPPool {name} is IPv{}",
            family.version(),
            spec.family().version()
        ));
    }
    // nodeName, when set, decides alone.
    if !spec.node_name.is_empty() {
        if !spec.node_name.iter().any(|n| n == pod.node_name) {
            return Some(format!("unmatched Node name of IPPool {name}"));
        }
    } else if let Some(sel) = &spec.node_affinity
        && !sel.matches(pod.node_labels)
    {
        return Some(format!("unmatched Node affinity of IPPool {name}"));
    }
    if !spec.namespace_name.is_empty() {
        if !spec.namespace_name.iter().any(|n| n == pod.namespace) {
            return Some(format!("unmatched Namespace name of IPPool {name}"));
        }
    } else if let Some(sel) = &spec.namespace_affinity
        && !sel.matches(pod.namespace_labels)
    {
        return Some(format!("unmatched Namespace affinity of IPPool {name}"));
    }
    if let Some(sel) = &spec.pod_affinity
        && !sel.matches(pod.pod_labels)
    {
        return Some(format!("unmatched Pod affinity of IPPool {name}"));
    }
    None
}

/// ByPoolPriority as a key: set-before-unset for podAffinity, nodeName, nodeAffinity,
/// namespaceName, namespaceAffinity (multusName is not modelled). Smaller sorts first.
fn priority(p: &SpiderIpPool) -> [bool; 5] {
    [
        p.pod_affinity.is_none(),
        p.node_name.is_empty(),
        p.node_affinity.is_none(),
        p.namespace_name.is_empty(),
        p.namespace_affinity.is_none(),
    ]
}

/// Sorts surviving pools by affinity priority, keeping the source order among equals, and
/// returns one warning per group of equals that Spiderpool would order at random.
pub fn sort_by_priority(
    pools: &mut [&SpiderIpPool],
    source: CandidateSource,
    nic: &str,
) -> Vec<String> {
    pools.sort_by_key(|p| priority(p));
    let order = match source {
        CandidateSource::ClusterDefault => "name order",
        _ => "annotation order",
    };
    let mut warnings = Vec::new();
    for group in pools.chunk_by(|a, b| priority(a) == priority(b)) {
        if group.len() > 1 {
            let names: Vec<String> = group.iter().map(|p| p.name.clone()).collect();
            warnings.push(format!(
                "IPPools {} of {nic} have equal affinity priority: Spiderpool leaves their order \
                 to map iteration (random since v0.7.0); podnet tries them in {order}",
                go_list(&names)
            ));
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::selector::{LabelOperator, LabelRequirement, LabelSelector};

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn pool(name: &str) -> SpiderIpPool {
        SpiderIpPool::new(
            name,
            "10.0.0.0/24".parse().unwrap_or_else(|_| unreachable!()),
        )
    }

    fn candidates(
        pod: &[(&str, &str)],
        ns: &[(&str, &str)],
        pools: &[SpiderIpPool],
    ) -> Result<Candidates, String> {
        pool_candidates(&annotations(pod), &annotations(ns), pools.iter())
            .map_err(|e| e.to_string())
    }

    fn v4(c: &Candidates) -> Vec<&str> {
        c.families
            .iter()
            .filter(|f| f.family == IpFamily::V4)
            .flat_map(|f| f.pools.iter().map(String::as_str))
            .collect()
    }

    #[test]
    fn sources_are_tried_in_spiderpool_order() {
        let mut d1 = pool("d1");
        d1.default = true;
        let mut d0 = pool("d0");
        d0.default = true;
        // Pools arrive in name order, as the engine's BTreeMap yields them.
        let pools = [d0, d1, pool("x")];
        let ns = [(ANNO_NS_DEFAULT_V4, "[\"n1\"]")];
        let c = candidates(
            &[
                (
                    ANNO_POD_IPPOOLS,
                    r#"[{"interface":"eth0","ipv4":["a"]},{"interface":"net1","ipv4":["b"]}]"#,
                ),
                (ANNO_POD_IPPOOL, r#"{"ipv4":["c"]}"#),
            ],
            &ns,
            &pools,
        );
        assert_eq!(
            c.as_ref().map(|c| (c.source, v4(c))),
            Ok((CandidateSource::PodIpPools, vec!["a"]))
        );
        let c = candidates(&[(ANNO_POD_IPPOOL, r#"{"ipv4":["c","e"]}"#)], &ns, &pools);
        assert_eq!(
            c.as_ref().map(|c| (c.source, v4(c))),
            Ok((CandidateSource::PodIpPool, vec!["c", "e"]))
        );
        let c = candidates(&[], &ns, &pools);
        assert_eq!(
            c.as_ref().map(|c| (c.source, v4(c))),
            Ok((CandidateSource::Namespace, vec!["n1"]))
        );
        let c = candidates(&[], &[], &pools);
        assert_eq!(
            c.as_ref().map(|c| (c.source, v4(c))),
            Ok((CandidateSource::ClusterDefault, vec!["d0", "d1"]))
        );
        assert_eq!(
            candidates(&[], &[], &[pool("x")]),
            Err(
                "no IPPool available, no pool selection rules of any type are specified"
                    .to_string()
            )
        );
        // Unnamed multi-NIC entries: the first is NIC "0".
        let c = candidates(
            &[(ANNO_POD_IPPOOLS, r#"[{"ipv4":["a"]},{"ipv4":["b"]}]"#)],
            &[],
            &[],
        );
        assert_eq!(c.map(|c| c.nic), Ok("0".to_string()));
    }

    #[test]
    fn malformed_annotations_are_errors() {
        let err = |pod: &[(&str, &str)], ns: &[(&str, &str)]| {
            candidates(pod, ns, &[]).err().unwrap_or_default()
        };
        assert!(err(&[(ANNO_POD_IPPOOL, "{not json")], &[]).starts_with(
            "wrong input, invalid format of Pod annotation 'ipam.spidernet.io/ippool': "
        ));
        assert!(err(&[(ANNO_POD_IPPOOL, r#"{"ipv4":"a"}"#)], &[]).contains("must be a list"));
        assert!(err(&[(ANNO_POD_IPPOOL, r#"{"ipv4":[1]}"#)], &[]).contains("as strings"));
        assert!(err(&[(ANNO_POD_IPPOOL, r#"{}"#)], &[]).contains("names no IPv4 or IPv6 IPPool"));
        assert!(
            err(&[(ANNO_POD_IPPOOLS, "[]")], &[]).ends_with("value requires at least one item")
        );
        assert!(
            err(
                &[(
                    ANNO_POD_IPPOOLS,
                    r#"[{"interface":"eth0","ipv4":["a"]},{"ipv4":["b"]}]"#
                )],
                &[]
            )
            .ends_with("NIC should be either all specified or all unspecified")
        );
        assert!(
            err(
                &[(
                    ANNO_POD_IPPOOLS,
                    r#"[{"interface":"eth0","ipv4":["a"]},{"interface":"eth0","ipv4":["b"]}]"#
                )],
                &[]
            )
            .ends_with("duplicate interface eth0")
        );
        assert!(
            err(
                &[(ANNO_POD_IPPOOLS, r#"[{"interface":"net1","ipv4":["a"]}]"#)],
                &[]
            )
            .ends_with("interface eth0 must be specified")
        );
        assert!(err(&[], &[(ANNO_NS_DEFAULT_V4, "p1")]).starts_with(
            "invalid format of Namespace annotation 'ipam.spidernet.io/default-ipv4-ippool'"
        ));
    }

    #[test]
    fn precheck_refuses_duplicates_and_unknown_pools() {
        let c = |names: &[&str]| Candidates {
            source: CandidateSource::PodIpPool,
            nic: "eth0".into(),
            families: vec![FamilyCandidates {
                family: IpFamily::V4,
                pools: names.iter().map(|s| s.to_string()).collect(),
            }],
        };
        let exists = |n: &str| n != "ghost";
        assert_eq!(precheck(&c(&["a", "b"]), exists), Ok(()));
        assert_eq!(
            precheck(&c(&["a", "a"]), exists),
            Err(SpiderError::DuplicatePool {
                name: "a".into(),
                nic: "eth0".into()
            })
        );
        assert_eq!(
            precheck(&c(&["a", "ghost"]), exists),
            Err(SpiderError::OriginalPoolNotFound {
                name: "ghost".into()
            })
        );
    }

    #[test]
    fn filters_run_in_spiderpool_order() {
        let empty = Labels::new();
        let node_labels: Labels = [("zone".to_string(), "a".to_string())].into();
        let pod = PodView {
            namespace: "ns1",
            pod_labels: &empty,
            namespace_labels: &empty,
            node_name: "n1",
            node_labels: &node_labels,
        };
        let zone_b = LabelSelector {
            match_labels: [("zone".to_string(), "b".to_string())].into(),
            match_expressions: vec![],
        };
        let reason = |p: &SpiderIpPool, terminating| {
            rejection(
                IpFamily::V4,
                &PoolView {
                    spec: p,
                    terminating,
                },
                &pod,
            )
        };
        let mut p = pool("p");
        assert_eq!(reason(&p, false), None);
        assert_eq!(reason(&p, true).as_deref(), Some("terminating IPPool p"));
        p.disable = true;
        p.node_name = vec!["n9".into()];
        assert_eq!(reason(&p, false).as_deref(), Some("disabled IPPool p"));
        p.disable = false;
        assert_eq!(
            reason(&p, false).as_deref(),
            Some("unmatched Node name of IPPool p")
        );
        // nodeName decides alone: a matching name wins over a failing affinity.
        p.node_name = vec!["n1".into()];
        p.node_affinity = Some(zone_b.clone());
        assert_eq!(reason(&p, false), None);
        p.node_name.clear();
        assert_eq!(
            reason(&p, false).as_deref(),
            Some("unmatched Node affinity of IPPool p")
        );
        p.node_affinity = None;
        p.namespace_name = vec!["other".into()];
        assert_eq!(
            reason(&p, false).as_deref(),
            Some("unmatched Namespace name of IPPool p")
        );
        p.namespace_name.clear();
        p.namespace_affinity = Some(zone_b.clone());
        assert_eq!(
            reason(&p, false).as_deref(),
            Some("unmatched Namespace affinity of IPPool p")
        );
        p.namespace_affinity = None;
        p.pod_affinity = Some(LabelSelector {
            match_labels: BTreeMap::new(),
            match_expressions: vec![LabelRequirement {
                key: "app".into(),
                operator: LabelOperator::Exists,
                values: vec![],
            }],
        });
        assert_eq!(
            reason(&p, false).as_deref(),
            Some("unmatched Pod affinity of IPPool p")
        );
        let v6 = SpiderIpPool::new(
            "six",
            "fd00::/64".parse().unwrap_or_else(|_| unreachable!()),
        );
        assert_eq!(
            reason(&v6, false).as_deref(),
            Some("expect an IPv4 IPPool, but the version of the IPPool six is IPv6")
        );
    }

    #[test]
    fn sort_puts_set_affinities_first_and_warns_on_ties() {
        let mut a = pool("a");
        a.namespace_name = vec!["x".into()];
        let mut b = pool("b");
        b.node_name = vec!["n".into()];
        let c = pool("c");
        let d = pool("d");
        let mut e = pool("e");
        e.pod_affinity = Some(LabelSelector::default());
        let mut pools = vec![&c, &a, &d, &b, &e];
        let warnings = sort_by_priority(&mut pools, CandidateSource::PodIpPool, "eth0");
        let names: Vec<&str> = pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["e", "b", "a", "c", "d"]);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with("IPPools [c d] of eth0 have equal affinity priority"),
            "{}",
            warnings[0]
        );
        let mut distinct = vec![&a, &b];
        assert!(sort_by_priority(&mut distinct, CandidateSource::PodIpPool, "eth0").is_empty());
    }
}

//! Evaluating expectations (SPEC §2.6) on snapshots.
//!
//! Each expectation is checked against the snapshot at its `at:` (or the last one) and gives
//! PASS or FAIL with the expected and actual values in words. Naming something that does not
//! exist (a pod, node or pool) is an input error, not a failure: the caller exits with 2.
//! Expectations about routes, reachability, paths and BGP need layers podnet does not have
//! yet; they fail and say so rather than pass silently.

use std::net::IpAddr;

use serde::Serialize;

use super::snapshot::{PodRow, Snapshot};
use crate::model::TextEnum;
use crate::model::expect::{Check, Count, Expectation, PodSet};
use crate::model::time::SimTime;
use crate::model::workload::PodStatus;

/// The verdict on one expectation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectationResult {
    pub name: String,
    pub passed: bool,
    pub expected: String,
    pub actual: String,
    pub at_us: u64,
}

/// Evaluates every expectation; `Err` lists the names that do not exist.
pub fn evaluate(
    expectations: &[Expectation],
    snapshots: &[Snapshot],
    last: &Snapshot,
) -> Result<Vec<ExpectationResult>, Vec<String>> {
    let mut results = Vec::new();
    let mut missing = Vec::new();
    for e in expectations {
        let snap = match e.at {
            Some(at) => snapshots
                .iter()
                .find(|s| s.time_us == at.as_micros())
                .unwrap_or(last),
            None => last,
        };
        match check(&e.check, snap) {
            Ok((passed, expected, actual)) => results.push(ExpectationResult {
                name: e.name.clone(),
                passed,
                expected,
                actual,
                at_us: e
                    .at
                    .unwrap_or(SimTime::from_nanos(snap.time_us * 1000))
                    .as_micros(),
            }),
            Err(what) => missing.push(format!("{}: {what}", e.name)),
        }
    }
    if missing.is_empty() {
        Ok(results)
    } else {
        Err(missing)
    }
}

/// Compares counts, collecting the rendering of what was expected and what was found.
#[derive(Default)]
struct Compare {
    passed: bool,
    expected: Vec<String>,
    actual: Vec<String>,
}

impl Compare {
    fn new() -> Compare {
        Compare {
            passed: true,
            ..Compare::default()
        }
    }

    fn count(&mut self, field: &str, want: Option<Count>, got: u64) {
        if let Some(want) = want {
            self.passed &= want.holds(got);
            self.expected.push(format!("{field} {want}"));
            self.actual.push(format!("{field} {got}"));
        }
    }

    fn value<T: PartialEq + std::fmt::Display>(
        &mut self,
        field: &str,
        want: Option<T>,
        got: Option<T>,
    ) {
        if let Some(want) = want {
            self.passed &= got.as_ref() == Some(&want);
            self.expected.push(format!("{field} {want}"));
            self.actual.push(format!(
                "{field} {}",
                got.map_or("none".to_string(), |g| g.to_string())
            ));
        }
    }

    fn finish(self) -> (bool, String, String) {
        (
            self.passed,
            self.expected.join(", "),
            self.actual.join(", "),
        )
    }
}

fn find_pod<'a>(snap: &'a Snapshot, reference: &str) -> Option<&'a PodRow> {
    match reference.split_once('/') {
        Some((ns, name)) => snap
            .pods
            .iter()
            .find(|p| p.namespace == ns && p.name == name),
        None => snap.pods.iter().find(|p| p.name == reference),
    }
}

/// The pods a set names; `Err` when it names a pod or node that does not exist.
fn select<'a>(snap: &'a Snapshot, set: &PodSet) -> Result<Vec<&'a PodRow>, String> {
    Ok(match set {
        PodSet::All => snap.pods.iter().collect(),
        PodSet::Pod(reference) => {
            vec![find_pod(snap, reference).ok_or_else(|| format!("no pod `{reference}`"))?]
        }
        PodSet::Workload { name, namespace } => {
            let ns = namespace.as_deref().unwrap_or("default");
            snap.pods
                .iter()
                .filter(|p| &p.workload == name && p.namespace == ns)
                .collect()
        }
        PodSet::Namespace(ns) => snap.pods.iter().filter(|p| &p.namespace == ns).collect(),
        PodSet::Node(node) => {
            if !snap.nodes.iter().any(|n| &n.name == node) {
                return Err(format!("no node `{node}`"));
            }
            snap.pods
                .iter()
                .filter(|p| p.node.as_ref() == Some(node))
                .collect()
        }
    })
}

fn not_simulated(kind: &str) -> (bool, String, String) {
    (
        false,
        format!("a `{kind}` verdict"),
        format!(
            "not evaluated: `{kind}` needs BGP and forwarding, which this podnet version does not simulate yet"
        ),
    )
}

fn check(c: &Check, snap: &Snapshot) -> Result<(bool, String, String), String> {
    let mut cmp = Compare::new();
    match c {
        Check::Pod {
            name,
            ip,
            in_cidr,
            node,
            pool,
            borrowed,
            status,
        } => {
            let pod = find_pod(snap, name).ok_or_else(|| format!("no pod `{name}`"))?;
            let pod_ip: Option<IpAddr> = pod.ip.as_deref().and_then(|s| s.parse().ok());
            cmp.value("ip", *ip, pod_ip);
            if let Some(cidr) = in_cidr {
                let inside = pod_ip.is_some_and(|a| cidr.contains(&a));
                cmp.passed &= inside;
                cmp.expected.push(format!("ip in {cidr}"));
                cmp.actual
                    .push(format!("ip {}", pod.ip.as_deref().unwrap_or("none")));
            }
            cmp.value("node", node.clone(), pod.node.clone());
            cmp.value("pool", pool.clone(), pod.pool.clone());
            cmp.value("borrowed", *borrowed, Some(pod.borrowed));
            cmp.value(
                "status",
                status.map(|s| s.as_str()),
                Some(pod.status.as_str()),
            );
            if !cmp.passed
                && let Some(reason) = &pod.reason
            {
                cmp.actual.push(format!("reason: {reason}"));
            }
        }
        Check::Pods {
            of,
            running,
            pending,
            unknown,
        } => {
            let pods = select(snap, of)?;
            let count = |s: PodStatus| pods.iter().filter(|p| p.status == s).count() as u64;
            cmp.count("running", *running, count(PodStatus::Running));
            cmp.count("pending", *pending, count(PodStatus::Pending));
            cmp.count("unknown", *unknown, count(PodStatus::Unknown));
        }
        Check::Pool {
            name,
            allocated,
            blocks,
            free,
            reserved,
        } => {
            let pool = snap
                .pools
                .iter()
                .find(|p| &p.name == name)
                .ok_or_else(|| format!("no pool `{name}`"))?;
            cmp.count("allocated", *allocated, pool.allocated);
            cmp.count("blocks", *blocks, u64::from(pool.blocks));
            cmp.count("free", *free, u64::try_from(pool.free).unwrap_or(u64::MAX));
            cmp.count("reserved", *reserved, pool.reserved);
        }
        Check::Node {
            name,
            blocks,
            borrowed_ips,
            rib_routes,
            fib_routes,
        } => {
            if rib_routes.is_some() || fib_routes.is_some() {
                return Ok(not_simulated("node.ribRoutes/fibRoutes"));
            }
            let nodes: Vec<_> = if name == "*" {
                snap.nodes.iter().collect()
            } else {
                vec![
                    snap.nodes
                        .iter()
                        .find(|n| &n.name == name)
                        .ok_or_else(|| format!("no node `{name}`"))?,
                ]
            };
            for n in nodes {
                let mut one = Compare::new();
                one.count("blocks", *blocks, n.blocks.len() as u64);
                one.count("borrowedIps", *borrowed_ips, n.borrowed_ips as u64);
                if !one.passed || name != "*" {
                    cmp.passed &= one.passed;
                    let prefix = if name == "*" {
                        format!("{}: ", n.name)
                    } else {
                        String::new()
                    };
                    cmp.expected
                        .push(format!("{prefix}{}", one.expected.join(", ")));
                    cmp.actual
                        .push(format!("{prefix}{}", one.actual.join(", ")));
                }
                if !cmp.passed && name == "*" {
                    break;
                }
            }
            if name == "*" && cmp.passed {
                cmp.expected.push("every node as given".to_string());
                cmp.actual
                    .push(format!("all {} nodes match", snap.nodes.len()));
            }
        }
        Check::Block {
            cidr,
            affinity,
            allocated,
        } => {
            let text = cidr.to_string();
            let Some(block) = snap.blocks.iter().find(|b| b.cidr == text) else {
                return Ok((
                    false,
                    format!("block {cidr}"),
                    format!("no block {cidr} exists"),
                ));
            };
            cmp.value(
                "affinity",
                affinity.clone(),
                Some(block.affinity.clone().unwrap_or_else(|| "none".to_string())),
            );
            cmp.count("allocated", *allocated, u64::from(block.allocated));
        }
        Check::AllocationFailures(want) => {
            cmp.count(
                "allocationFailures",
                Some(*want),
                snap.allocation_failures() as u64,
            );
        }
        Check::Route { .. } => return Ok(not_simulated("route")),
        Check::Reachable { .. } => return Ok(not_simulated("reachable")),
        Check::Unreachable { .. } => return Ok(not_simulated("unreachable")),
        Check::Path { .. } => return Ok(not_simulated("path")),
        Check::Bgp { .. } => return Ok(not_simulated("bgp")),
    }
    Ok(cmp.finish())
}

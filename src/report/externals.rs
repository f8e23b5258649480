//! The `externals` section of `report.json` (SPEC §7 `externals:`): per external its CIDR and
//! attachment router, then how traffic crosses the edge of the cluster at the end of the run:
//! - pods to it, per workload (`namespace/workload`): how many pods deliver on every
//!   connection (first packet and reply), on some, on none; how many natOutgoing masquerades
//!   and to which node addresses; how many lose the reply; the failures grouped by verdict,
//!   each with one example pod and the paths of its packet and reply;
//! - it to pods, per workload, the same (no SNAT: natOutgoing never applies inbound);
//! - it to each Service port, at the address it reaches the Service at (LoadBalancer IP,
//!   else external IP, else cluster IP): whether every endpoint a connection can reach
//!   delivers, some, or none, the ECMP branches when the fabric has several equal paths, and
//!   the failures in words.
//!
//! [`section`] is the Externals section of `report.md` and `report.html`: counts first, then
//! the workloads that do not deliver everywhere, then one example per failure cause.
//!
//! Plain data built from the last snapshot with the same functions the expectations use
//! (`sim::external_expect::pod_connections`, `sim::service_entry_expect::entry_port`), so a
//! report and an expectation cannot disagree. The list is empty when the scenario has no
//! external.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use serde::Serialize;

use super::Report;
use super::sections::{Block, LIST_LIMIT, Section, Table, Tone, count, noun};
use crate::forwarding::PodKey;
use crate::forwarding::connect::Policing;
use crate::forwarding::external::ExternalConnection;
use crate::forwarding::service_entry::entry_address;
use crate::forwarding::walk::Trace;
use crate::model::topology::DeviceId;
use crate::sim::Snapshot;
use crate::sim::external_expect::{pod_connections, words};
use crate::sim::service_entry_expect::entry_port;
use crate::sim::service_expect::{PortOutcome, service_ports};

/// One external and the traffic crossing the cluster's edge with it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalRow {
    pub name: String,
    pub cidr: String,
    /// The router it is attached to.
    pub attach: String,
    /// The address traces, expectations and this section use for it.
    pub address: String,
    /// Pods connecting to it, per workload.
    pub from_pods: Vec<FlowRow>,
    /// It connecting to pods, per workload.
    pub to_pods: Vec<FlowRow>,
    /// It connecting to each Service port.
    pub to_services: Vec<ServiceFlowRow>,
}

/// The pods of one workload connecting to an external, or connected from it.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowRow {
    /// `namespace/workload`.
    pub workload: String,
    /// Its pods with an address.
    pub pods: u64,
    /// Pods whose every connection (every packet class with policy) works, reply included.
    pub every: u64,
    pub some: u64,
    pub none: u64,
    /// Pods natOutgoing masquerades to their node's address (outbound only).
    pub snat: u64,
    /// The node addresses they are masqueraded to, in address order.
    pub snat_to: Vec<String>,
    /// Pods with a connection whose first packet arrived and whose reply was lost.
    pub replies_lost: u64,
    /// Failures by verdict, most pods first.
    pub failures: Vec<FailureRow>,
}

/// One failure cause of a workload's connections, with an example.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureRow {
    /// The verdict word (`no-route`, `policy-denied`, ...).
    pub reason: String,
    /// Where it happened.
    pub at: String,
    /// The verdict in words, as `trace` and expectations give it.
    pub verdict: String,
    /// Pods with at least one connection failing so.
    pub pods: u64,
    /// `namespace/name` of the first such pod.
    pub example: String,
    /// The devices its first packet visited.
    pub path: Vec<String>,
    /// The devices its reply visited (empty when the first packet never arrived).
    pub reply_path: Vec<String>,
}

/// The external connecting to one Service port.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceFlowRow {
    /// `namespace/name`.
    pub service: String,
    /// `port/PROTOCOL`.
    pub port: String,
    /// The address it reaches the Service at, and which kind it is.
    pub address: String,
    pub kind: &'static str,
    /// `every`, `some` or `none`: whether every endpoint a connection can reach delivers,
    /// over every ECMP path.
    pub outcome: &'static str,
    /// The fabric's equal-cost paths in (1 without ECMP), and on how many of them every
    /// reachable endpoint delivers.
    pub paths: usize,
    pub paths_delivered: usize,
    /// The failures in words, each once.
    pub failures: Vec<String>,
}

/// The rows of every external of `last`, in the scenario's order.
pub fn rows(last: &Snapshot) -> Vec<ExternalRow> {
    if last.externals.is_empty() {
        return Vec::new();
    }
    let policing = last.policy.as_deref().map(Policing::new);
    let mut groups: BTreeMap<(String, String), Vec<PodKey>> = BTreeMap::new();
    for p in last.pods.iter().filter(|p| p.ip.is_some()) {
        groups
            .entry((p.namespace.to_string(), p.workload.to_string()))
            .or_default()
            .push(p.key);
    }
    last.externals
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let flows = |outward: bool| -> Vec<FlowRow> {
                groups
                    .iter()
                    .map(|((ns, w), keys)| {
                        let tries = pod_connections(
                            last,
                            policing.as_ref(),
                            keys,
                            (i, x.address()),
                            outward,
                            None,
                        );
                        flow(last, format!("{ns}/{w}"), &tries)
                    })
                    .collect()
            };
            ExternalRow {
                name: x.name.clone(),
                cidr: x.cidr.to_string(),
                attach: device(last, x.attach),
                address: x.address().to_string(),
                from_pods: flows(true),
                to_pods: flows(false),
                to_services: services(last, policing.as_ref(), (i, x.address())),
            }
        })
        .collect()
}

fn device(last: &Snapshot, d: DeviceId) -> String {
    last.devices.get(d.index()).cloned().unwrap_or_default()
}

fn path(last: &Snapshot, t: Option<&Trace>) -> Vec<String> {
    t.map_or_else(Vec::new, |t| {
        t.path().into_iter().map(|d| device(last, d)).collect()
    })
}

/// Counts one workload's connections (`tries`, as `pod_connections` gives them).
fn flow(
    last: &Snapshot,
    workload: String,
    tries: &[crate::sim::external_expect::PodConnections],
) -> FlowRow {
    let mut row = FlowRow {
        workload,
        pods: tries.len() as u64,
        ..FlowRow::default()
    };
    let mut snat_to: BTreeSet<IpAddr> = BTreeSet::new();
    // verdict words → (pods, example, first failure's row)
    let mut failures: BTreeMap<String, FailureRow> = BTreeMap::new();
    for (key, conns) in tries {
        let pod = last.pods.iter().find(|p| p.key == *key).map_or_else(
            || "?".to_string(),
            |p| format!("{}/{}", p.namespace, p.name),
        );
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut fail = |words: String, c: Option<&ExternalConnection>| {
            if !seen.insert(words.clone()) {
                return;
            }
            let verdict = c.map(ExternalConnection::verdict);
            failures
                .entry(words.clone())
                .or_insert_with(|| FailureRow {
                    reason: verdict
                        .as_ref()
                        .and_then(|v| v.reason())
                        .unwrap_or("no-packet")
                        .to_string(),
                    at: verdict
                        .as_ref()
                        .and_then(|v| v.stopped_at())
                        .map_or_else(String::new, |d| device(last, d)),
                    verdict: words,
                    pods: 0,
                    example: pod.clone(),
                    path: path(last, c.and_then(|c| c.connection.trace.as_ref())),
                    reply_path: path(last, c.and_then(|c| c.reply.as_ref())),
                })
                .pods += 1;
        };
        let conns = match conns {
            Ok(c) => c,
            Err(e) => {
                row.none += 1;
                fail(e.clone(), None);
                continue;
            }
        };
        let (mut delivered, mut snat, mut lost) = (0usize, false, false);
        for conn in conns {
            match conn {
                Ok(c) => {
                    if let Some(s) = c.snat {
                        snat = true;
                        snat_to.insert(s.to);
                    }
                    lost |= c.reply_failed();
                    if c.delivered() {
                        delivered += 1;
                    } else {
                        fail(words(last, c), Some(c));
                    }
                }
                Err(e) => fail(e.clone(), None),
            }
        }
        match delivered {
            0 => row.none += 1,
            n if n == conns.len() => row.every += 1,
            _ => row.some += 1,
        }
        row.snat += u64::from(snat);
        row.replies_lost += u64::from(lost);
    }
    row.snat_to = snat_to.iter().map(ToString::to_string).collect();
    let mut failures: Vec<FailureRow> = failures.into_values().collect();
    failures.sort_by(|a, b| b.pods.cmp(&a.pods).then_with(|| a.verdict.cmp(&b.verdict)));
    row.failures = failures;
    row
}

/// The external `from` (its index and address) connecting to every port of every Service
/// that has an address, in (namespace, name) and port order.
fn services(
    last: &Snapshot,
    policing: Option<&Policing<'_>>,
    from: (usize, IpAddr),
) -> Vec<ServiceFlowRow> {
    let mut out = Vec::new();
    for v in &last.services.services {
        let Some((kind, address)) = entry_address(v) else {
            continue;
        };
        for port in service_ports(v, None) {
            let mut failures = Vec::new();
            let (outcome, paths, paths_delivered) =
                match entry_port(last, policing, from, address, port, &mut failures) {
                    Ok(p) => (
                        match p.outcome {
                            PortOutcome::Every => "every",
                            PortOutcome::Some { .. } => "some",
                            PortOutcome::None => "none",
                        },
                        p.paths,
                        p.delivered,
                    ),
                    Err(e) => {
                        failures.push(e);
                        ("none", 0, 0)
                    }
                };
            let mut unique = BTreeSet::new();
            failures.retain(|f| unique.insert(f.clone()));
            out.push(ServiceFlowRow {
                service: format!("{}/{}", v.service.namespace, v.service.name),
                port: format!("{}/{}", port.0, port.1),
                address: address.to_string(),
                kind: kind.as_str(),
                outcome,
                paths,
                paths_delivered,
                failures,
            });
        }
    }
    out
}

/// The Externals section of `report.md` and `report.html`, when the scenario has externals.
pub fn section(report: &Report) -> Option<Section> {
    if report.externals.is_empty() {
        return None;
    }
    let mut blocks = vec![Block::Paragraph(
        "Traffic crossing the edge of the cluster at the end of the run. A pod delivers when \
         its connection's first packet and its reply both arrive (with policy, on every \
         packet class); natOutgoing masquerades a pod to its node's address, otherwise the \
         reply is addressed to the pod and must be routed back from the external's router. \
         Service ports are reached at the Service's LoadBalancer IP, else its external IP, \
         else its cluster IP."
            .to_string(),
    )];
    let mut summary = Table::new(&[
        ("external", false),
        ("CIDR", false),
        ("attached to", false),
        ("pods → it", true),
        ("masqueraded", true),
        ("replies lost", true),
        ("it → pods", true),
        ("it → Service ports", true),
    ]);
    let sum = |flows: &[FlowRow], f: fn(&FlowRow) -> u64| flows.iter().map(f).sum::<u64>();
    for x in &report.externals {
        let out_ok = sum(&x.from_pods, |f| f.every);
        let out_all = sum(&x.from_pods, |f| f.pods);
        let in_ok = sum(&x.to_pods, |f| f.every);
        let in_all = sum(&x.to_pods, |f| f.pods);
        let svc_ok = x
            .to_services
            .iter()
            .filter(|s| s.outcome == "every")
            .count();
        let tone = if out_ok < out_all || svc_ok < x.to_services.len() {
            Tone::Bad
        } else {
            Tone::Plain
        };
        summary.push_toned(
            vec![
                x.name.clone(),
                x.cidr.clone(),
                x.attach.clone(),
                format!("{} of {}", count(out_ok), count(out_all)),
                count(sum(&x.from_pods, |f| f.snat)),
                count(sum(&x.from_pods, |f| f.replies_lost)),
                format!("{} of {}", count(in_ok), count(in_all)),
                format!("{} of {}", count(svc_ok), count(x.to_services.len())),
            ],
            tone,
        );
    }
    blocks.push(Block::Table(summary));

    // Workloads that do not deliver everywhere, and those masqueraded.
    let mut workloads = Table::new(&[
        ("way", false),
        ("workload", false),
        ("pods", true),
        ("every", true),
        ("some", true),
        ("none", true),
        ("SNAT to", false),
    ]);
    let mut rows = 0usize;
    for x in &report.externals {
        let ways = [
            (format!("→ {}", x.name), &x.from_pods),
            (format!("{} →", x.name), &x.to_pods),
        ];
        for (way, flows) in ways {
            for f in flows.iter().filter(|f| f.every < f.pods || f.snat > 0) {
                rows += 1;
                if rows > LIST_LIMIT {
                    continue;
                }
                let tone = if f.every < f.pods {
                    Tone::Bad
                } else {
                    Tone::Plain
                };
                workloads.push_toned(
                    vec![
                        way.clone(),
                        f.workload.clone(),
                        count(f.pods),
                        count(f.every),
                        count(f.some),
                        count(f.none),
                        snat_text(f),
                    ],
                    tone,
                );
            }
        }
    }
    if rows > 0 {
        blocks.push(Block::Subheading("Workloads".to_string()));
        blocks.push(Block::Table(workloads));
        if rows > LIST_LIMIT {
            blocks.push(Block::Paragraph(format!(
                "… {} more in report.json",
                count(rows - LIST_LIMIT)
            )));
        }
    }

    // One example per failure cause, over every external and workload.
    let mut causes: BTreeMap<String, (u64, &str, String)> = BTreeMap::new();
    for x in &report.externals {
        for (out, flows) in [(true, &x.from_pods), (false, &x.to_pods)] {
            for f in flows {
                for fail in &f.failures {
                    let (way, key) = if out {
                        (format!("{} → {}", fail.example, x.name), "→")
                    } else {
                        (format!("{} → {}", x.name, fail.example), "←")
                    };
                    let e = causes
                        .entry(format!("{} {key} {}", fail.verdict, x.name))
                        .or_insert_with(|| (0, "pod", example_text(&way, fail)));
                    e.0 += fail.pods;
                }
            }
        }
        for s in &x.to_services {
            for fail in &s.failures {
                let e = causes
                    .entry(format!("{fail} {} → {}", x.name, s.service))
                    .or_insert_with(|| {
                        (
                            0,
                            "Service port",
                            format!(
                                "{} → service {} {} port {}{}: {fail}",
                                x.name,
                                s.service,
                                s.address,
                                s.port,
                                if s.paths > 1 {
                                    format!(
                                        " (delivered on {} of {} ECMP paths)",
                                        s.paths_delivered, s.paths
                                    )
                                } else {
                                    String::new()
                                }
                            ),
                        )
                    });
                e.0 += 1;
            }
        }
    }
    if !causes.is_empty() {
        blocks.push(Block::Subheading("Failures by cause".to_string()));
        let mut list: Vec<(u64, &str, String)> = causes.into_values().collect();
        list.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.2.cmp(&b.2)));
        blocks.push(Block::List(
            list.into_iter()
                .take(LIST_LIMIT)
                .map(|(n, unit, text)| format!("{}: {text}", noun(n, unit)))
                .collect(),
        ));
    }
    Some(Section {
        title: "Externals",
        id: "externals",
        blocks,
    })
}

fn snat_text(f: &FlowRow) -> String {
    match f.snat_to.len() {
        0 => "—".to_string(),
        n if n <= 3 => f.snat_to.join(", "),
        n => format!("{}, … ({n} node addresses)", f.snat_to[..3].join(", ")),
    }
}

/// `EXAMPLE: VERDICT; path a → b → c; reply c → d`.
fn example_text(way: &str, f: &FailureRow) -> String {
    let mut out = format!("{way}: {}", f.verdict);
    if !f.path.is_empty() {
        out.push_str(&format!("; path {}", f.path.join(" → ")));
    }
    if !f.reply_path.is_empty() {
        out.push_str(&format!("; reply {}", f.reply_path.join(" → ")));
    }
    out
}

//! The `services` section of `report.json` (SPEC §7): each Service at the end of the run with
//! its cluster IP, ports, the EndpointSlice the control plane derived (every endpoint with its
//! readiness and resolved ports), its endpoint counts over the run, and which client
//! workloads reach it on which ports at the end.
//!
//! Also which nodes advertise each of its addresses over BGP (BGPConfiguration Service
//! CIDRs, `forwarding::advertise`), and, when some node advertises Service routes, how each
//! external reaches it. [`section`] is the Services section of `report.md` and
//! `report.html`.
//!
//! Plain data built from the last snapshot and the run's endpoint series; absent from the
//! report when the scenario has no Service.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Report;
use super::sections::{Block, Section, Table, Tone, count, time};
use crate::forwarding::advertise::{advertisers, service_ips};
use crate::forwarding::connect::Policing;
use crate::forwarding::service_entry::entry_address;
use crate::sim::service_entry_expect::entry_port;
use crate::sim::service_expect::{PortOutcome, client_port, service_ports};

use crate::forwarding::service::ServiceView;
use crate::model::TextEnum;
use crate::sim::Snapshot;
use crate::sim::services::{EndpointSample, EndpointSeries};

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServicePortRow {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub port: u16,
    pub protocol: &'static str,
    pub target_port: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointPortRow {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub port: u16,
    pub protocol: &'static str,
}

/// One endpoint of the Service's EndpointSlice (`discovery.k8s.io/v1`).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointRow {
    pub pod: String,
    pub ip: String,
    pub node: String,
    pub ready: bool,
    pub ports: Vec<EndpointPortRow>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceRow {
    pub namespace: String,
    pub name: String,
    #[serde(rename = "type")]
    pub service_type: &'static str,
    /// `None` for a headless Service.
    #[serde(rename = "clusterIP")]
    pub cluster_ip: Option<String>,
    pub ports: Vec<ServicePortRow>,
    pub session_affinity: &'static str,
    pub internal_traffic_policy: &'static str,
    pub external_traffic_policy: &'static str,
    pub endpoints: Vec<EndpointRow>,
    pub endpoints_over_time: Vec<EndpointSample>,
    /// Which client workloads reach it on which ports at the end of the run (and which
    /// externals, `external NAME`, when Service addresses are advertised).
    pub clients: Vec<ClientRow>,
    /// Its addresses some node advertises over BGP, with the most specific advertised prefix
    /// covering each and the nodes advertising that prefix.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub advertised: Vec<AdvertisedRow>,
}

/// One Service address and who advertises it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdvertisedRow {
    pub address: String,
    /// `clusterIP`, `externalIP` or `loadBalancerIP`.
    pub kind: &'static str,
    pub prefix: String,
    pub nodes: Vec<String>,
}

/// How the pods of one workload fare on one Service port: how many deliver on every
/// connection, on some (the endpoints disagree), on none.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientRow {
    /// `namespace/workload`.
    pub client: String,
    /// `port/PROTOCOL` of the Service.
    pub port: String,
    pub every: u64,
    pub some: u64,
    pub none: u64,
}

/// The rows of every Service of `last`, in (namespace, name) order.
pub fn rows(last: &Snapshot, series: &EndpointSeries) -> Vec<ServiceRow> {
    last.services
        .services
        .iter()
        .map(|v| row(last, v, series))
        .collect()
}

fn row(last: &Snapshot, v: &ServiceView, series: &EndpointSeries) -> ServiceRow {
    let s = &v.service;
    let key = format!("{}/{}", s.namespace, s.name);
    ServiceRow {
        namespace: s.namespace.clone(),
        name: s.name.clone(),
        service_type: s.service_type.as_str(),
        cluster_ip: v.cluster_ip.map(|ip| ip.to_string()),
        ports: s
            .ports
            .iter()
            .map(|p| ServicePortRow {
                name: p.name.clone(),
                port: p.port,
                protocol: p.protocol.as_str(),
                target_port: p.target_port.to_string(),
            })
            .collect(),
        session_affinity: s.session_affinity.as_str(),
        internal_traffic_policy: s.internal_traffic_policy.as_str(),
        external_traffic_policy: s.external_traffic_policy.as_str(),
        endpoints: v
            .backends
            .iter()
            .map(|b| EndpointRow {
                pod: b.name.clone(),
                ip: b.ip.to_string(),
                node: last
                    .devices
                    .get(b.node.index())
                    .cloned()
                    .unwrap_or_default(),
                ready: b.ready,
                ports: s
                    .ports
                    .iter()
                    .zip(&b.target_ports)
                    .filter_map(|(p, t)| {
                        Some(EndpointPortRow {
                            name: p.name.clone(),
                            port: (*t)?,
                            protocol: p.protocol.as_str(),
                        })
                    })
                    .collect(),
            })
            .collect(),
        endpoints_over_time: series.by_service.get(&key).cloned().unwrap_or_default(),
        clients: clients(last, v),
        advertised: service_ips(v)
            .into_iter()
            .filter_map(|(kind, ip)| {
                let (prefix, nodes) = advertisers(&last.service_routes, ip)?;
                Some(AdvertisedRow {
                    address: ip.to_string(),
                    kind: kind.as_str(),
                    prefix: prefix.to_string(),
                    nodes: nodes
                        .iter()
                        .map(|d| last.devices.get(d.index()).cloned().unwrap_or_default())
                        .collect(),
                })
            })
            .collect(),
    }
}

fn clients(last: &Snapshot, v: &ServiceView) -> Vec<ClientRow> {
    let policing = last.policy.as_deref().map(Policing::new);
    let mut rows: BTreeMap<(String, usize), ClientRow> = BTreeMap::new();
    let ports = service_ports(v, None);
    for pod in last.pods.iter().filter(|p| p.ip.is_some()) {
        let client = format!("{}/{}", pod.namespace, pod.workload);
        for (i, &port) in ports.iter().enumerate() {
            let outcome = client_port(last, policing.as_ref(), v, pod.key, port, &mut Vec::new());
            let row = rows
                .entry((client.clone(), i))
                .or_insert_with(|| ClientRow {
                    client: client.clone(),
                    port: format!("{}/{}", port.0, port.1),
                    every: 0,
                    some: 0,
                    none: 0,
                });
            match outcome {
                PortOutcome::Every => row.every += 1,
                PortOutcome::Some { .. } => row.some += 1,
                PortOutcome::None => row.none += 1,
            }
        }
    }
    let mut out: Vec<ClientRow> = rows.into_values().collect();
    // Externals, when Service addresses are advertised at all: each from its address to the
    // one it reaches the Service at.
    if let Some((_, address)) = entry_address(v).filter(|_| !last.service_routes.is_empty()) {
        for (i, x) in last.externals.iter().enumerate() {
            for &port in &ports {
                let outcome = entry_port(
                    last,
                    policing.as_ref(),
                    (i, x.address()),
                    address,
                    port,
                    &mut Vec::new(),
                )
                .map(|p| p.outcome);
                let (every, some, none) = match outcome {
                    Ok(PortOutcome::Every) => (1, 0, 0),
                    Ok(PortOutcome::Some { .. }) => (0, 1, 0),
                    Ok(PortOutcome::None) | Err(_) => (0, 0, 1),
                };
                out.push(ClientRow {
                    client: format!("external {}", x.name),
                    port: format!("{}/{}", port.0, port.1),
                    every,
                    some,
                    none,
                });
            }
        }
    }
    out
}

/// The Services section of `report.md` and `report.html`: one row per Service (addresses,
/// ports, endpoints, who advertises it), then per Service its endpoints over time and its
/// clients per port.
pub fn section(report: &Report) -> Option<Section> {
    if report.services.is_empty() {
        return None;
    }
    let mut blocks = vec![Block::Paragraph(
        "Each Service at the end of the run: its cluster IP and ports, its EndpointSlice \
         (ready endpoints of all), and the nodes advertising its addresses over BGP \
         (BGPConfiguration serviceClusterIPs, serviceExternalIPs, serviceLoadBalancerIPs). \
         Clients count pods (or externals) that deliver on every connection, on some \
         (endpoints disagree), on none."
            .to_string(),
    )];
    let mut table = Table::new(&[
        ("service", false),
        ("type", false),
        ("cluster IP", false),
        ("ports", false),
        ("ready", true),
        ("endpoints", true),
        ("advertised", false),
    ]);
    for s in &report.services {
        let ready = s.endpoints.iter().filter(|e| e.ready).count();
        let tone = if ready == 0 { Tone::Bad } else { Tone::Plain };
        table.push_toned(
            vec![
                format!("{}/{}", s.namespace, s.name),
                s.service_type.to_string(),
                s.cluster_ip.clone().unwrap_or_else(|| "None".to_string()),
                s.ports
                    .iter()
                    .map(|p| format!("{}/{} → {}", p.port, p.protocol, p.target_port))
                    .collect::<Vec<_>>()
                    .join(", "),
                count(ready),
                count(s.endpoints.len()),
                if s.advertised.is_empty() {
                    "—".to_string()
                } else {
                    s.advertised
                        .iter()
                        .map(|a| {
                            format!(
                                "{} {} as {} by {}",
                                a.kind,
                                a.address,
                                a.prefix,
                                a.nodes.join(", ")
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                },
            ],
            tone,
        );
    }
    blocks.push(Block::Table(table));
    for s in &report.services {
        blocks.push(Block::Subheading(format!("{}/{}", s.namespace, s.name)));
        let over_time: Vec<String> = s
            .endpoints_over_time
            .iter()
            .map(|e| format!("{}: {} ready of {}", time(e.time_us), e.ready, e.endpoints))
            .collect();
        if !over_time.is_empty() {
            blocks.push(Block::Paragraph(format!(
                "Endpoints over time: {}.",
                over_time.join("; ")
            )));
        }
        if s.clients.is_empty() {
            blocks.push(Block::Paragraph("No clients.".to_string()));
            continue;
        }
        let mut clients = Table::new(&[
            ("client", false),
            ("port", false),
            ("every", true),
            ("some", true),
            ("none", true),
        ]);
        for c in &s.clients {
            let tone = if c.every + c.some == 0 {
                Tone::Bad
            } else {
                Tone::Plain
            };
            clients.push_toned(
                vec![
                    c.client.clone(),
                    c.port.clone(),
                    count(c.every),
                    count(c.some),
                    count(c.none),
                ],
                tone,
            );
        }
        blocks.push(Block::Table(clients));
    }
    Some(Section {
        title: "Services",
        id: "services",
        blocks,
    })
}

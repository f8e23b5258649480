//! The `services` section of `report.json` (SPEC §7): each Service at the end of the run with
//! its cluster IP, ports, the EndpointSlice the control plane derived (every endpoint with its
//! readiness and resolved ports), its endpoint counts over the run, and which client
//! workloads reach it on which ports at the end.
//!
//! Plain data built from the last snapshot and the run's endpoint series; absent from the
//! report when the scenario has no Service.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::forwarding::connect::Policing;
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
    /// Which client workloads reach it on which ports at the end of the run.
    pub clients: Vec<ClientRow>,
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
    rows.into_values().collect()
}

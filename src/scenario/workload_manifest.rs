//! Workload manifests (SPEC §2.3, §2.4): `apps/v1` Deployment, StatefulSet and DaemonSet and
//! `v1` Pod resources become workloads, as if written in `workloads:`.
//!
//! Taken: `metadata.name` and `namespace`, `spec.replicas`, and the pod template's labels,
//! annotations, `nodeSelector`, `serviceAccountName`, `hostNetwork` and the containers'
//! `ports` (for a Pod, its own). The rest (containers, volumes,
//! selectors, affinity…) is ignored silently, as SPEC says. Problems are located in the
//! manifest's own file.

use super::decode::{Cx, Decode, LabelMap, Loc, StringMap};
use super::raw::{RawContainerPort, RawWorkload};
use super::resource::Resource;
use super::yaml::{Value, YamlNode};
use crate::model::TextEnum;
use crate::model::workload::{PortProtocol, WorkloadKind};

/// The workloads the resources describe, each with its field path.
pub fn workloads(resources: &[Resource], cx: &mut Cx) -> Vec<(String, Loc<RawWorkload>)> {
    let mut out = Vec::new();
    for r in resources {
        let kind = match (r.api_version.as_str(), r.kind.as_str()) {
            ("apps/v1", "Deployment" | "StatefulSet" | "DaemonSet") | ("v1", "Pod") => {
                WorkloadKind::from_text(&r.kind)
            }
            _ => None,
        };
        let Some(kind) = kind else { continue };
        let workload = cx.with_path_prefix(&r.path, |cx| from_manifest(r, kind, cx));
        if let Some(w) = workload {
            out.push((r.path.clone(), Loc::new(w, r.body.pos)));
        }
    }
    out
}

fn from_manifest(r: &Resource, kind: WorkloadKind, cx: &mut Cx) -> Option<RawWorkload> {
    let body = &r.body;
    let metadata = body.get("metadata");
    let spec = body.get("spec");
    // A Pod's labels and annotations are its own; a controller's come from its template.
    let (pod_meta, pod_spec, meta_path, spec_path) = if kind == WorkloadKind::Pod {
        (metadata, spec, "metadata", "spec")
    } else {
        let template = spec.and_then(|s| s.get("template"));
        (
            template.and_then(|t| t.get("metadata")),
            template.and_then(|t| t.get("spec")),
            "spec.template.metadata",
            "spec.template.spec",
        )
    };
    let mut w = RawWorkload {
        name: Some(Loc::new(r.name.clone(), field_pos(metadata, "name", body))),
        kind: Some(Loc::new(kind, body.get("kind").map_or(body.pos, |k| k.pos))),
        pos: body.pos,
        ..RawWorkload::default()
    };
    if let Some(ns) = &r.namespace {
        w.namespace = Some(Loc::new(ns.clone(), field_pos(metadata, "namespace", body)));
    }
    if matches!(kind, WorkloadKind::Deployment | WorkloadKind::StatefulSet)
        && let Some(replicas) = spec.and_then(|s| s.get("replicas"))
        && !matches!(replicas.value, Value::Null)
    {
        w.replicas = cx.at_key("spec", |cx| {
            cx.at_key("replicas", |cx| {
                u32::decode(replicas, cx).map(|v| Loc::new(v, replicas.pos))
            })
        });
    }
    w.labels = decode_at::<LabelMap>(pod_meta, "labels", meta_path, cx);
    w.annotations = decode_at::<StringMap>(pod_meta, "annotations", meta_path, cx);
    w.node_selector = decode_at::<LabelMap>(pod_spec, "nodeSelector", spec_path, cx);
    // `serviceAccount` is the deprecated alias the API server still copies over.
    w.service_account_name = decode_at::<String>(pod_spec, "serviceAccountName", spec_path, cx)
        .or_else(|| decode_at::<String>(pod_spec, "serviceAccount", spec_path, cx));
    w.host_network = decode_at::<bool>(pod_spec, "hostNetwork", spec_path, cx);
    w.ports = container_ports(pod_spec, spec_path, cx);
    Some(w)
}

/// Every container's `ports` (name, containerPort, protocol; hostPort and hostIP are
/// ignored), in container order.
fn container_ports(
    pod_spec: Option<&YamlNode>,
    spec_path: &str,
    cx: &mut Cx,
) -> Option<Loc<Vec<Loc<RawContainerPort>>>> {
    let Some(Value::Seq(containers)) = pod_spec?.get("containers").map(|n| &n.value) else {
        return None;
    };
    let mut out = Vec::new();
    for (i, c) in containers.iter().enumerate() {
        let Some(Value::Seq(ports)) = c.get("ports").map(|n| &n.value) else {
            continue;
        };
        for (j, p) in ports.iter().enumerate() {
            let path = format!("{spec_path}.containers[{i}].ports[{j}]");
            let at = |key: &str| p.get(key).filter(|n| !matches!(n.value, Value::Null));
            let mut raw = RawContainerPort {
                pos: p.pos,
                ..RawContainerPort::default()
            };
            let segments: Vec<&str> = path.split('.').collect();
            with_keys(cx, &segments, |cx| {
                if let Some(n) = at("name") {
                    raw.name = cx.at_key("name", |cx| {
                        String::decode(n, cx).map(|v| Loc::new(v, n.pos))
                    });
                }
                if let Some(n) = at("containerPort") {
                    raw.container_port = cx.at_key("containerPort", |cx| {
                        u32::decode(n, cx).map(|v| Loc::new(v, n.pos))
                    });
                }
                if let Some(n) = at("protocol") {
                    raw.protocol = cx.at_key("protocol", |cx| {
                        PortProtocol::decode(n, cx).map(|v| Loc::new(v, n.pos))
                    });
                }
            });
            out.push(Loc::new(raw, p.pos));
        }
    }
    Some(Loc::new(out, pod_spec?.pos))
}

/// Decodes `parent.key` (if present) with `parent_path` pushed onto the path.
fn decode_at<T: Decode>(
    parent: Option<&YamlNode>,
    key: &str,
    parent_path: &str,
    cx: &mut Cx,
) -> Option<Loc<T>> {
    let node = parent?.get(key)?;
    if matches!(node.value, Value::Null) {
        return None;
    }
    let mut segments = parent_path.split('.').collect::<Vec<_>>();
    segments.push(key);
    with_keys(cx, &segments, |cx| T::decode(node, cx)).map(|v| Loc::new(v, node.pos))
}

fn with_keys<R>(cx: &mut Cx, keys: &[&str], f: impl FnOnce(&mut Cx) -> R) -> R {
    match keys.split_first() {
        None => f(cx),
        Some((first, rest)) => cx.at_key(first, |cx| with_keys(cx, rest, f)),
    }
}

fn field_pos(parent: Option<&YamlNode>, key: &str, fallback: &YamlNode) -> super::diag::Pos {
    parent
        .and_then(|p| p.get(key))
        .map_or(fallback.pos, |n| n.pos)
}

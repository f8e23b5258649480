//! `externals:` (SPEC §7): places outside the cluster, each a name, a CIDR and the router it
//! is attached to, validated with located errors into [`External`]s on the topology.
//!
//! Validated: `name`, `cidr` and `attach` are required; the name is a DNS label (it is
//! written in expectations and `trace --to`), unique, and no device's name; no two externals
//! share a CIDR; `attach` names a router (`core` exists with two or more zones, spines are
//! `spine-ZONE-N`, ToRs `tor-RACK`).
//! What this is not: no check against IP pools — an address in a Calico pool is never an
//! external destination (`forwarding::Dataplane::is_external_destination`), whatever the
//! CIDRs say, so `0.0.0.0/0` ("the internet") is the common case.

use std::collections::BTreeMap;

use super::decode::{Cx, Loc};
use super::raw::RawExternal;
use crate::model::external::External;
use crate::model::topology::Topology;

/// The externals of `raw` (errors reported on `cx`, under the caller's `externals` key).
pub fn build(raw: &[Loc<RawExternal>], topology: &Topology, cx: &mut Cx) -> Vec<External> {
    let mut out = Vec::new();
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    let mut cidrs: BTreeMap<ipnet::IpNet, String> = BTreeMap::new();
    for (i, e) in raw.iter().enumerate() {
        cx.at_index(i, |cx| {
            let r = &e.value;
            let missing = |cx: &mut Cx, present: bool, key: &str| {
                if !present && !cx.has_error_under(key) {
                    cx.error(e.pos, format!("missing required field `{key}`"));
                }
            };
            missing(cx, r.name.is_some(), "name");
            missing(cx, r.cidr.is_some(), "cidr");
            missing(cx, r.attach.is_some(), "attach");
            let name = r.name.as_ref().and_then(|n| {
                cx.at_key("name", |cx| {
                    if !super::service_kind::is_dns_label(&n.value) {
                        cx.error(
                            n.pos,
                            format!(
                                "`{}` is not a valid external name: at most 63 lowercase \
                                 letters, digits and inner `-`",
                                n.value
                            ),
                        );
                        return None;
                    }
                    if let Some(first) = names.get(&n.value) {
                        cx.error(
                            n.pos,
                            format!(
                                "external `{}` is already declared (externals[{first}])",
                                n.value
                            ),
                        );
                        return None;
                    }
                    if topology.device_by_name(&n.value).is_some() {
                        cx.error(
                            n.pos,
                            format!("`{}` is already the name of a node or router", n.value),
                        );
                        return None;
                    }
                    names.insert(n.value.clone(), i);
                    Some(n.value.clone())
                })
            });
            let cidr = r.cidr.as_ref().and_then(|c| {
                let net = c.value.0.trunc();
                cx.at_key("cidr", |cx| match cidrs.get(&net) {
                    Some(other) => {
                        cx.error(
                            c.pos,
                            format!("{net} is already the CIDR of external `{other}`"),
                        );
                        None
                    }
                    None => Some(net),
                })
            });
            let attach = r.attach.as_ref().and_then(|a| {
                cx.at_key("attach", |cx| match topology.device_by_name(&a.value) {
                    Some(d) if topology.device(d).is_router() => Some(d),
                    found => {
                        let routers: Vec<&str> = topology
                            .devices
                            .iter()
                            .filter(|d| d.is_router())
                            .map(|d| d.name.as_str())
                            .collect();
                        let what = if found.is_some() {
                            format!("`{}` is a node, not a router", a.value)
                        } else if a.value == "core" {
                            "there is no `core`: a core router exists with two or more zones"
                                .to_string()
                        } else {
                            format!("no router `{}`", a.value)
                        };
                        cx.error(
                            a.pos,
                            format!(
                                "{what}; an external attaches to a router ({})",
                                routers.join(", ")
                            ),
                        );
                        None
                    }
                })
            });
            if let (Some(name), Some(cidr), Some(attach)) = (name, cidr, attach) {
                cidrs.insert(cidr, name.clone());
                out.push(External { name, cidr, attach });
            }
        });
    }
    out
}

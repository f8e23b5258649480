//! The value decoders of the policy kinds: directions, orders and priorities, selectors,
//! CIDRs, protocols, ICMP matches and ports in each kind's spelling.

use super::*;

pub(super) fn direction(node: &YamlNode, cx: &mut Cx) -> Option<Direction> {
    word(
        node,
        cx,
        &[
            ("Ingress", Direction::Ingress),
            ("Egress", Direction::Egress),
        ],
    )
}

pub(super) fn staged_action(node: &YamlNode, cx: &mut Cx) -> Option<()> {
    word(node, cx, &[("Set", ()), ("Delete", ())])
}

/// A Calico `order`: any number.
pub(super) fn order(node: &YamlNode, cx: &mut Cx) -> Option<f64> {
    match node.value {
        Value::Int(i) => Some(i as f64),
        Value::Float(f) if f.is_finite() => Some(f),
        _ => {
            cx.error(
                node.pos,
                format!("expected a number, found {}", node.value.kind_name()),
            );
            None
        }
    }
}

/// An admin policy's `priority`: 0..=1000.
pub(super) fn priority(node: &YamlNode, cx: &mut Cx) -> Option<f64> {
    let p = u32::decode(node, cx)?;
    if p > 1000 {
        cx.error(node.pos, format!("{p} is outside 0..1000"));
        return None;
    }
    Some(f64::from(p))
}

/// A label selector with Kubernetes' own checks (`ValidateLabelSelector`).
pub(super) fn checked_label_selector(node: &YamlNode, cx: &mut Cx) -> Option<LabelSelector> {
    let s = label_selector(node, cx)?;
    let problems = s.validate();
    for p in &problems {
        cx.error(node.pos, p.clone());
    }
    problems.is_empty().then_some(s)
}

/// `pods: {namespaceSelector, podSelector}` as (pod selector, namespace selector); both are
/// required.
pub(super) fn namespaced_pods(node: &YamlNode, cx: &mut Cx) -> Option<(Selector, Selector)> {
    let object = Spec::from_node(node, cx)?;
    let namespaces = object.required(cx, "namespaceSelector", checked_label_selector);
    let pods = object.required(cx, "podSelector", checked_label_selector);
    Some((k8s_pods(Some(&pods?)), Selector::from(&namespaces?)))
}

/// `ipBlock`: a CIDR and the ranges it excepts, each a strict subset of it
/// (k8s-validation ValidateIPBlock).
pub(super) fn ip_block(node: &YamlNode, cx: &mut Cx) -> Option<(IpNet, Vec<IpNet>)> {
    let object = Spec::from_node(node, cx)?;
    let cidr = object.required(cx, "cidr", cidr_as_written);
    let except = object
        .get(cx, "except", |n, cx| {
            let items = seq_items(n).unwrap_or_default();
            let nets = list(n, cx, cidr_as_written)?;
            let mut ok = true;
            if let Some(cidr) = cidr {
                for (i, (net, item)) in nets.iter().zip(items).enumerate() {
                    let inside = net.prefix_len() > cidr.prefix_len()
                        && cidr.contains(&net.network())
                        && std::mem::discriminant(net) == std::mem::discriminant(&cidr);
                    if !inside {
                        cx.at_index(i, |cx| {
                            cx.error(
                                item.pos,
                                format!("must be a strict subset of `cidr` {cidr}"),
                            )
                        });
                        ok = false;
                    }
                }
            }
            ok.then_some(nets)
        })
        .unwrap_or_default();
    Some((
        cidr?.trunc(),
        except.into_iter().map(|n| n.trunc()).collect(),
    ))
}

/// An admin `networks` entry: a CIDR (the CRD's `format: cidr`).
pub(super) fn network_cidr(node: &YamlNode, cx: &mut Cx) -> Option<IpNet> {
    cidr_as_written(node, cx).map(|n| n.trunc())
}

/// A Calico `nets` entry: a CIDR or a bare address (a /32 or /128).
pub(super) fn calico_net(node: &YamlNode, cx: &mut Cx) -> Option<IpNet> {
    let text = String::decode(node, cx)?;
    let t = text.trim();
    if let Ok(ip) = t.parse::<std::net::IpAddr>() {
        return Some(IpNet::from(ip));
    }
    match t.parse::<IpNet>() {
        Ok(net) => Some(net.trunc()),
        Err(_) => {
            cx.error(
                node.pos,
                format!("`{text}` is not a CIDR such as 10.0.0.0/16"),
            );
            None
        }
    }
}

/// A Calico protocol: a name or a number 1..=255.
pub(super) fn protocol(node: &YamlNode, cx: &mut Cx) -> Option<Protocol> {
    match &node.value {
        Value::Int(i) => match u8::try_from(*i) {
            Ok(p) if p > 0 => Some(Protocol(p)),
            _ => {
                cx.error(node.pos, format!("protocol {i} is outside 1..255"));
                None
            }
        },
        Value::Str(s) => {
            if let Some(p) = Protocol::from_name(s) {
                return Some(p);
            }
            if let Ok(n) = s.parse::<u8>()
                && n > 0
            {
                return Some(Protocol(n));
            }
            let names: Vec<&str> = Protocol::names().collect();
            let hint = nearest(s, names.iter().copied())
                .map(|n| format!("; did you mean `{n}`?"))
                .unwrap_or_default();
            cx.error(
                node.pos,
                format!(
                    "`{s}` is not a protocol: one of {} or a number 1..255{hint}",
                    names.join(", ")
                ),
            );
            None
        }
        other => {
            cx.error(
                node.pos,
                format!("expected a protocol, found {}", other.kind_name()),
            );
            None
        }
    }
}

pub(super) fn icmp(node: &YamlNode, cx: &mut Cx) -> Option<IcmpMatch> {
    let object = Spec::from_node(node, cx)?;
    let icmp_type = object.get(cx, "type", |n, cx| {
        u8::decode(n, cx).filter(|t| {
            if *t == 255 {
                cx.error(n.pos, "ICMP type 255 is reserved (0..254)");
            }
            *t < 255
        })
    });
    let code = object.value::<u8>(cx, "code");
    if code.is_some() && !object.has("type") {
        cx.error(object.pos, "`code` needs `type`");
        return None;
    }
    Some(IcmpMatch {
        icmp_type: icmp_type?,
        code,
    })
}

/// A Calico port: a number, `"first:last"`, a numeric string or a port name.
pub(super) fn calico_port(node: &YamlNode, cx: &mut Cx) -> Option<PortMatch> {
    match &node.value {
        Value::Int(i) => port_number(*i, node, cx).map(PortMatch::single),
        Value::Str(s) => {
            let t = s.trim();
            if let Some((a, b)) = t.split_once(':') {
                let (first, last) = match (a.parse::<u16>(), b.parse::<u16>()) {
                    (Ok(a), Ok(b)) => (a, b),
                    _ => {
                        cx.error(node.pos, format!("`{s}` is not a port range `first:last`"));
                        return None;
                    }
                };
                if first == 0 || first > last {
                    cx.error(
                        node.pos,
                        format!("port range `{s}` must have 1 <= first <= last <= 65535"),
                    );
                    return None;
                }
                return Some(PortMatch::Range { first, last });
            }
            if let Ok(n) = t.parse::<i128>() {
                return port_number(n, node, cx).map(PortMatch::single);
            }
            if t.is_empty() || t.len() > 15 {
                cx.error(
                    node.pos,
                    format!("`{s}` is not a port number, range or name"),
                );
                return None;
            }
            Some(PortMatch::Named(t.to_string()))
        }
        other => {
            cx.error(
                node.pos,
                format!("expected a port, found {}", other.kind_name()),
            );
            None
        }
    }
}

pub(super) fn port_number(i: i128, node: &YamlNode, cx: &mut Cx) -> Option<u16> {
    match u16::try_from(i) {
        Ok(p) if p > 0 => Some(p),
        _ => {
            cx.error(node.pos, format!("port {i} is outside 1..65535"));
            None
        }
    }
}

/// A NetworkPolicyPort as (protocol, port): protocol TCP by default; `None` port = every
/// port of the protocol (k8s-validation ValidateNetworkPolicyPort).
pub(super) fn k8s_port(node: &YamlNode, cx: &mut Cx) -> Option<(Protocol, Option<PortMatch>)> {
    let object = Spec::from_node(node, cx)?;
    let protocol = object
        .get(cx, "protocol", |n, cx| {
            word(
                n,
                cx,
                &[
                    ("TCP", Protocol::TCP),
                    ("UDP", Protocol::UDP),
                    ("SCTP", Protocol::SCTP),
                ],
            )
        })
        .or_else(|| (!object.has("protocol")).then_some(Protocol::TCP));
    let port = object.get(cx, "port", |n, cx| {
        port_or_name(
            n,
            cx,
            |n: &YamlNode, cx: &mut Cx| match &n.value {
                Value::Int(i) => port_number(*i, n, cx).map(|p| (Some(p), None)),
                _ => None,
            },
            |name| (None, Some(name)),
        )
    });
    let end_port = object.value::<u16>(cx, "endPort");
    let mut ok = protocol.is_some() && (port.is_some() || !object.has("port"));
    let port_match = match (port.clone(), end_port) {
        (None, None) => None,
        (Some((Some(p), _)), None) => Some(PortMatch::single(p)),
        (Some((None, Some(name))), None) => Some(PortMatch::Named(name)),
        (Some((Some(p), _)), Some(end)) if end >= p => Some(PortMatch::Range {
            first: p,
            last: end,
        }),
        (_, Some(_)) => {
            let pos = object.pos_of("endPort");
            let message = match port {
                Some((Some(p), _)) => format!("must be greater than or equal to `port` {p}"),
                Some((None, Some(_))) => "may not be specified when `port` is a name".into(),
                _ => "may not be specified without a numeric `port`".into(),
            };
            if object.has("port") && port.is_none() {
                // The port itself was already reported.
            } else {
                cx.at_key("endPort", |cx| cx.error(pos, message));
            }
            ok = false;
            None
        }
        _ => None,
    };
    ok.then(|| (protocol.unwrap_or(Protocol::TCP), port_match))
}

/// An AdminNetworkPolicyPort: exactly one of `portNumber`, `namedPort`, `portRange`.
pub(super) fn anp_port(
    node: &YamlNode,
    cx: &mut Cx,
) -> Option<(Option<Protocol>, Option<PortMatch>)> {
    let object = Spec::from_node(node, cx)?;
    let given = ["portNumber", "namedPort", "portRange"]
        .iter()
        .filter(|k| object.has(k))
        .count();
    if given != 1 {
        cx.error(
            node.pos,
            "give exactly one of `portNumber`, `namedPort` and `portRange`",
        );
        return None;
    }
    let proto = |o: &Spec, cx: &mut Cx| {
        o.get(cx, "protocol", |n, cx| {
            word(
                n,
                cx,
                &[
                    ("TCP", Protocol::TCP),
                    ("UDP", Protocol::UDP),
                    ("SCTP", Protocol::SCTP),
                ],
            )
        })
        .or_else(|| (!o.has("protocol")).then_some(Protocol::TCP))
    };
    if let Some(name) = object.value::<String>(cx, "namedPort") {
        return Some((None, Some(PortMatch::Named(name))));
    }
    if let Some(pn) = object.child(cx, "portNumber") {
        return cx.at_key("portNumber", |cx| {
            let protocol = proto(&pn, cx);
            let port = pn.required(cx, "port", |n, cx| {
                let i = i128::from(u16::decode(n, cx)?);
                port_number(i, n, cx)
            });
            Some((Some(protocol?), Some(PortMatch::single(port?))))
        });
    }
    let range = object.child(cx, "portRange")?;
    cx.at_key("portRange", |cx| {
        let protocol = proto(&range, cx);
        let ports = port_range(&range, cx);
        Some((Some(protocol?), Some(ports?)))
    })
}

/// A port range object of the admin policy APIs, `{start, end}` with 1 <= start < end.
fn port_range(range: &Spec, cx: &mut Cx) -> Option<PortMatch> {
    let start = range.required(cx, "start", u16::decode);
    let end = range.required(cx, "end", u16::decode);
    let (start, end) = (start?, end?);
    if start == 0 || start >= end {
        cx.error(range.pos, "needs 1 <= start < end <= 65535");
        return None;
    }
    Some(PortMatch::Range {
        first: start,
        last: end,
    })
}

/// A ClusterNetworkPolicy `protocols` item: one of `tcp`, `udp`, `sctp` (each with an
/// optional `destinationPort` number or range) or `destinationNamedPort`.
pub(super) fn cnp_protocol(
    node: &YamlNode,
    cx: &mut Cx,
) -> Option<(Option<Protocol>, Option<PortMatch>)> {
    let object = Spec::from_node(node, cx)?;
    let keys = ["tcp", "udp", "sctp", "destinationNamedPort"];
    let given: Vec<&str> = keys.iter().copied().filter(|k| object.has(k)).collect();
    if given.len() != 1 {
        cx.error(
            node.pos,
            "give exactly one of `tcp`, `udp`, `sctp` and `destinationNamedPort`",
        );
        return None;
    }
    let protocol = match given[0] {
        "tcp" => Protocol::TCP,
        "udp" => Protocol::UDP,
        "sctp" => Protocol::SCTP,
        _ => {
            let name = object.value::<String>(cx, "destinationNamedPort")?;
            return Some((None, Some(PortMatch::Named(name))));
        }
    };
    let key = given[0];
    let body = object.child(cx, key)?;
    cx.at_key(key, |cx| {
        let Some(dp) = body.child(cx, "destinationPort") else {
            return Some((Some(protocol), None));
        };
        cx.at_key("destinationPort", |cx| {
            match (dp.has("number"), dp.has("range")) {
                (true, false) => {
                    let port = dp.get(cx, "number", |n, cx| {
                        let i = i128::from(u16::decode(n, cx)?);
                        port_number(i, n, cx)
                    })?;
                    Some((Some(protocol), Some(PortMatch::single(port))))
                }
                (false, true) => {
                    let range = dp.child(cx, "range")?;
                    cx.at_key("range", |cx| {
                        Some((Some(protocol), Some(port_range(&range, cx)?)))
                    })
                }
                _ => {
                    cx.error(dp.pos, "give exactly one of `number` and `range`");
                    None
                }
            }
        })
    })
}

/// Ports grouped by protocol key, as the Kubernetes and admin conversions both need: a port
/// entry without a port (`None`) means every port of that protocol and absorbs the others.
pub(super) fn ports_by_protocol<K: Ord>(
    ports: impl IntoIterator<Item = (K, Option<PortMatch>)>,
) -> BTreeMap<K, Option<Vec<PortMatch>>> {
    let mut by_protocol: BTreeMap<K, Option<Vec<PortMatch>>> = BTreeMap::new();
    for (protocol, port) in ports {
        let entry = by_protocol
            .entry(protocol)
            .or_insert_with(|| Some(Vec::new()));
        match (port, entry.as_mut()) {
            (Some(port), Some(list)) => list.push(port),
            (None, _) => *entry = None,
            (Some(_), None) => {}
        }
    }
    by_protocol
}

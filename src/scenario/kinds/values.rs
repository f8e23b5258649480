//! Value decoders: one field's located tree to a typed value (lists, ports, words, pool CIDRs,
//! block sizes, selectors, AS numbers, peer and node addresses, IP ranges, label selectors),
//! each reporting a malformed value at its own position.

use super::*;

/// A list whose items each decode with `item`; every bad item is reported, at its index.
pub(in crate::scenario) fn list<T>(
    node: &YamlNode,
    cx: &mut Cx,
    item: impl Fn(&YamlNode, &mut Cx) -> Option<T>,
) -> Option<Vec<T>> {
    let Some(items) = seq_items(node) else {
        cx.error(
            node.pos,
            format!("expected a list, found {}", node.value.kind_name()),
        );
        return None;
    };
    let mut out = Vec::with_capacity(items.len());
    let mut ok = true;
    for (i, n) in items.iter().enumerate() {
        match cx.at_index(i, |cx| item(n, cx)) {
            Some(v) => out.push(v),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

pub(in crate::scenario) fn strings(node: &YamlNode, cx: &mut Cx) -> Option<Vec<String>> {
    list(node, cx, String::decode)
}

/// A Kubernetes IntOrString port (`port`, `targetPort`): an integer goes to `number`, which
/// checks its range; a string must be a container port name (IANA_SVC_NAME).
pub(in crate::scenario) fn port_or_name<T>(
    node: &YamlNode,
    cx: &mut Cx,
    number: impl FnOnce(&YamlNode, &mut Cx) -> Option<T>,
    name: impl FnOnce(String) -> T,
) -> Option<T> {
    match &node.value {
        Value::Int(_) => number(node, cx),
        Value::Str(s) if crate::model::workload::ContainerPort::is_valid_name(s) => {
            Some(name(s.clone()))
        }
        Value::Str(s) => {
            cx.error(
                node.pos,
                format!(
                    "`{s}` is not a port name (at most 15 lowercase letters, digits and inner \
                     hyphens, at least one letter); write a number without quotes"
                ),
            );
            None
        }
        other => {
            cx.error(
                node.pos,
                format!(
                    "expected a port number or name, found {}",
                    other.kind_name()
                ),
            );
            None
        }
    }
}

/// One of a fixed set of words, with the nearest suggested for a near miss.
pub(in crate::scenario) fn word<T: Copy>(
    node: &YamlNode,
    cx: &mut Cx,
    words: &[(&'static str, T)],
) -> Option<T> {
    let text = String::decode(node, cx)?;
    if let Some((_, v)) = words.iter().find(|(w, _)| *w == text) {
        return Some(*v);
    }
    let names: Vec<&str> = words.iter().map(|(w, _)| *w).collect();
    let hint = nearest(&text, names.iter().copied())
        .map(|n| format!("; did you mean `{n}`?"))
        .unwrap_or_default();
    cx.error(
        node.pos,
        format!("`{text}` is not one of: {}{hint}", names.join(", ")),
    );
    None
}

pub(super) fn encap_mode(node: &YamlNode, cx: &mut Cx) -> Option<EncapMode> {
    word(
        node,
        cx,
        &[
            ("Never", EncapMode::Never),
            ("Always", EncapMode::Always),
            ("CrossSubnet", EncapMode::CrossSubnet),
        ],
    )
}

pub(super) fn allowed_use(node: &YamlNode, cx: &mut Cx) -> Option<AllowedUse> {
    word(
        node,
        cx,
        &[
            ("Workload", AllowedUse::Workload),
            ("Tunnel", AllowedUse::Tunnel),
            ("LoadBalancer", AllowedUse::LoadBalancer),
        ],
    )
}

pub(super) fn assignment_mode(node: &YamlNode, cx: &mut Cx) -> Option<AssignmentMode> {
    word(
        node,
        cx,
        &[
            ("Automatic", AssignmentMode::Automatic),
            ("Manual", AssignmentMode::Manual),
        ],
    )
}

/// A CIDR kept as written, host bits and all: an IPPool's `cidr` (Calico's validation reports
/// host bits, "must be strictly masked", with the other pool rules) and a Kubernetes
/// `ipBlock` (`ParseCIDRSloppy` accepts them).
pub(in crate::scenario) fn cidr_as_written(node: &YamlNode, cx: &mut Cx) -> Option<IpNet> {
    let text = String::decode(node, cx)?;
    match text.trim().parse::<IpNet>() {
        Ok(net) => Some(net),
        Err(_) => {
            cx.error(
                node.pos,
                format!("`{text}` is not a CIDR such as 10.0.0.0/16"),
            );
            None
        }
    }
}

/// `blockSize`: 20..=32 for an IPv4 pool, 116..=128 for IPv6 (`clientv3/ippool.go`).
pub(super) fn block_size(node: &YamlNode, cidr: IpNet, cx: &mut Cx) -> Option<u8> {
    let (range, family) = match cidr {
        IpNet::V4(_) => (20..=32, "IPv4"),
        IpNet::V6(_) => (116..=128, "IPv6"),
    };
    let Value::Int(size) = node.value else {
        cx.error(
            node.pos,
            format!("expected an integer, found {}", node.value.kind_name()),
        );
        return None;
    };
    match u8::try_from(size) {
        Ok(s) if range.contains(&s) => Some(s),
        _ => {
            cx.error(
                node.pos,
                format!(
                    "{size} is outside {}..{} for {family}",
                    range.start(),
                    range.end()
                ),
            );
            None
        }
    }
}

/// A Calico selector expression; a syntax error points at the offending character.
pub(in crate::scenario) fn calico_selector(node: &YamlNode, cx: &mut Cx) -> Option<Selector> {
    let text = String::decode(node, cx)?;
    match Selector::parse(&text) {
        Ok(s) => Some(s),
        Err(e) => {
            // The parser counts bytes; positions count characters.
            let chars = text.get(..e.offset).map_or(e.offset, |s| s.chars().count());
            cx.error(
                node.pos.advanced(chars),
                format!("invalid selector `{text}`: {}", e.message),
            );
            None
        }
    }
}

/// An AS number as Calico's `numorstring.ASNumber` reads it: an integer, or a string holding
/// an integer or the dotted `high.low` form (RFC 5396 asdot). AS 0 is reserved (RFC 7607).
pub(super) fn as_number(node: &YamlNode, cx: &mut Cx) -> Option<u32> {
    pub(super) const RANGE: &str = "an AS number is 1..4294967295, or `high.low` in quotes";
    let parsed = match &node.value {
        Value::Int(i) => u32::try_from(*i).ok(),
        Value::Str(s) => parse_as_number(s.trim()),
        Value::Float(_) => {
            cx.error(
                node.pos,
                "write a dotted AS number in quotes (\"1.10\"): unquoted, YAML reads it as a \
                 decimal number and drops trailing zeros",
            );
            return None;
        }
        other => {
            cx.error(
                node.pos,
                format!("expected an AS number, found {}", other.kind_name()),
            );
            return None;
        }
    };
    match parsed {
        Some(n) if n > 0 => Some(n),
        _ => {
            let shown = node.scalar_text().unwrap_or_default();
            cx.error(
                node.pos,
                format!("`{shown}` is not a valid AS number: {RANGE}"),
            );
            None
        }
    }
}

pub(super) fn parse_as_number(text: &str) -> Option<u32> {
    if let Ok(n) = text.parse::<u32>() {
        return Some(n);
    }
    let (high, low) = text.split_once('.')?;
    let high: u16 = high.parse().ok()?;
    let low: u16 = low.parse().ok()?;
    Some((u32::from(high) << 16) | u32::from(low))
}

/// `peerIP`: an address, `IPv4:port` or `[IPv6]:port`, as Calico's BGPPeer takes it.
pub(super) fn peer_address(node: &YamlNode, cx: &mut Cx) -> Option<(IpAddr, Option<u16>)> {
    let text = String::decode(node, cx)?;
    let parsed = parse_peer_address(text.trim());
    if parsed.is_none() {
        cx.error(
            node.pos,
            format!("`{text}` is not an IP address, `IPv4:port` or `[IPv6]:port`"),
        );
    }
    parsed
}

pub(super) fn parse_peer_address(text: &str) -> Option<(IpAddr, Option<u16>)> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some((ip, None));
    }
    let (ip, port) = match text.strip_prefix('[') {
        Some(rest) => {
            let (ip, port) = rest.split_once("]:")?;
            (IpAddr::V6(ip.parse().ok()?), port)
        }
        None => {
            let (ip, port) = text.rsplit_once(':')?;
            (IpAddr::V4(ip.parse().ok()?), port)
        }
    };
    Some((ip, Some(port.parse().ok()?)))
}

/// A Calico Node's `ipv4Address`: `address/prefix`, keeping the address (the prefix is the
/// node's subnet for CrossSubnet); a bare address is a /32, as Calico reads it.
pub(super) fn node_address(node: &YamlNode, cx: &mut Cx) -> Option<IpNet> {
    let text = String::decode(node, cx)?;
    let text = text.trim();
    let net = text.parse::<IpNet>().ok().or_else(|| {
        text.parse::<Ipv4Addr>()
            .ok()
            .map(|a| IpNet::from(IpAddr::V4(a)))
    });
    match net {
        Some(net @ IpNet::V4(_)) => Some(net),
        _ => {
            cx.error(
                node.pos,
                format!("`{text}` is not an IPv4 address with its prefix, such as 10.0.0.5/24"),
            );
            None
        }
    }
}

pub(super) fn ipv4(node: &YamlNode, cx: &mut Cx) -> Option<Ipv4Addr> {
    let text = String::decode(node, cx)?;
    match text.trim().parse::<Ipv4Addr>() {
        Ok(a) => Some(a),
        Err(_) => {
            cx.error(node.pos, format!("`{text}` is not an IPv4 address"));
            None
        }
    }
}

/// An IPReservation entry: a CIDR, or a bare address meaning just that address.
pub(super) fn cidr_or_address(node: &YamlNode, cx: &mut Cx) -> Option<IpNet> {
    let text = String::decode(node, cx)?;
    let text = text.trim();
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(IpNet::from(ip));
    }
    match text.parse::<IpNet>() {
        Ok(net) if net.trunc() == net => Some(net),
        Ok(net) => {
            cx.error(
                node.pos,
                format!(
                    "`{text}` has host bits set; did you mean `{}`?",
                    net.trunc()
                ),
            );
            None
        }
        Err(_) => {
            cx.error(node.pos, format!("`{text}` is not a CIDR or an IP address"));
            None
        }
    }
}

/// `serviceClusterIPs: [{cidr: …}]`; empty `- {}` entries (as in Calico's own test data)
/// are skipped.
pub(super) fn service_cidrs(node: &YamlNode, cx: &mut Cx) -> Option<Vec<IpNet>> {
    let entries = list(node, cx, |item, cx| {
        let object = Spec::from_node(item, cx)?;
        Some(object.value::<Cidr>(cx, "cidr").map(|c| c.0))
    })?;
    Some(entries.into_iter().flatten().collect())
}

/// A Spiderpool `ips`-style list; each bad item is reported at its own position.
pub(super) fn ip_ranges(node: &YamlNode, cx: &mut Cx) -> Option<Vec<IpRange>> {
    list(node, cx, |item, cx| {
        let text = String::decode(item, cx)?;
        IpRange::parse(&text)
            .map_err(|e| cx.error(item.pos, e))
            .ok()
    })
}

/// A Kubernetes label selector (`matchLabels`, `matchExpressions`). Its semantic checks
/// (`LabelSelector::validate`) run with the pool checks, which locate them.
pub(in crate::scenario) fn label_selector(node: &YamlNode, cx: &mut Cx) -> Option<LabelSelector> {
    let object = Spec::from_node(node, cx)?;
    let match_labels = object
        .value::<StringMap>(cx, "matchLabels")
        .map(|m| m.0)
        .unwrap_or_default();
    let match_expressions = object
        .get(cx, "matchExpressions", |n, cx| {
            list(n, cx, label_requirement)
        })
        .unwrap_or_default();
    Some(LabelSelector {
        match_labels,
        match_expressions,
    })
}

pub(super) fn label_requirement(node: &YamlNode, cx: &mut Cx) -> Option<LabelRequirement> {
    let object = Spec::from_node(node, cx)?;
    let key = object.required(cx, "key", String::decode);
    let operator = object.required(cx, "operator", |n, cx| {
        word(
            n,
            cx,
            &[
                ("In", LabelOperator::In),
                ("NotIn", LabelOperator::NotIn),
                ("Exists", LabelOperator::Exists),
                ("DoesNotExist", LabelOperator::DoesNotExist),
            ],
        )
    });
    let values = object.get(cx, "values", strings);
    Some(LabelRequirement {
        key: key?,
        operator: operator?,
        values: values.unwrap_or_default(),
    })
}

//! Spiderpool's resources as podnet models them — `SpiderIPPool` and `SpiderReservedIP` —
//! their address-range syntax, and the checks Spiderpool's admission webhook makes
//! (`pkg/ippoolmanager/ippool_validate.go`, `pkg/ip/subnet.go`, `pkg/ip/cidr.go`).
//!
//! Invariant: `validate` never stops at the first problem and never panics; each problem names
//! the pool (by index), the field and, for lists, the item, so the scenario layer can point at
//! the file position.
//! This module does not allocate; see the parent module for that.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use crate::ipam::ranges::RangeSet;
use crate::model::selector::LabelSelector;

/// An IP family; Spiderpool calls it `ipVersion` (4 or 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IpFamily {
    V4,
    V6,
}

impl IpFamily {
    pub fn of(ip: IpAddr) -> IpFamily {
        match ip {
            IpAddr::V4(_) => IpFamily::V4,
            IpAddr::V6(_) => IpFamily::V6,
        }
    }

    pub fn of_net(net: &IpNet) -> IpFamily {
        IpFamily::of(net.addr())
    }

    /// 4 or 6, as Spiderpool prints it in `IPv%d`.
    pub fn version(self) -> u8 {
        match self {
            IpFamily::V4 => 4,
            IpFamily::V6 => 6,
        }
    }
}

impl fmt::Display for IpFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IPv{}", self.version())
    }
}

/// An address as a number within its family.
pub(crate) fn ip_to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

/// The inverse of `ip_to_u128`; IPv4 numbers above 2^32 cannot occur (sets are built from
/// addresses of the family) and are clamped rather than trusted.
pub(crate) fn u128_to_ip(family: IpFamily, n: u128) -> IpAddr {
    match family {
        IpFamily::V4 => IpAddr::V4(Ipv4Addr::from(u32::try_from(n).unwrap_or(u32::MAX))),
        IpFamily::V6 => IpAddr::V6(Ipv6Addr::from(n)),
    }
}

/// One `spec.ips`-style item: a single address or an inclusive `first-last` range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct IpRange {
    pub first: IpAddr,
    pub last: IpAddr,
}

impl IpRange {
    pub fn single(ip: IpAddr) -> IpRange {
        IpRange {
            first: ip,
            last: ip,
        }
    }

    pub fn family(&self) -> IpFamily {
        IpFamily::of(self.first)
    }

    /// Parses `10.0.0.1` or `10.0.0.1-10.0.0.9` the way Spiderpool's `IsIPRange` accepts them:
    /// no spaces, one family, first not above last, no CIDR.
    pub fn parse(text: &str) -> Result<IpRange, String> {
        let bad = || format!("invalid IP range format '{text}'");
        let mut parts = text.split('-');
        let first: IpAddr = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let last: IpAddr = match parts.next() {
            None => first,
            Some(p) => p.parse().map_err(|_| bad())?,
        };
        if parts.next().is_some() {
            return Err(bad());
        }
        if IpFamily::of(first) != IpFamily::of(last) {
            return Err(format!(
                "invalid IP range format '{text}': both ends must be of one IP family"
            ));
        }
        if ip_to_u128(first) > ip_to_u128(last) {
            return Err(format!(
                "invalid IP range format in {} '{text}': the range must be ordered",
                IpFamily::of(first)
            ));
        }
        Ok(IpRange { first, last })
    }

    fn bounds(&self) -> (u128, u128) {
        (ip_to_u128(self.first), ip_to_u128(self.last))
    }
}

impl fmt::Display for IpRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "{}", self.first)
        } else {
            write!(f, "{}-{}", self.first, self.last)
        }
    }
}

/// Parses a list of `spec.ips`-style items; the error names the item's index.
pub fn parse_ip_ranges(items: &[String]) -> Result<Vec<IpRange>, (usize, String)> {
    items
        .iter()
        .enumerate()
        .map(|(i, s)| IpRange::parse(s).map_err(|e| (i, e)))
        .collect()
}

/// Parses `spec.subnet`, which Spiderpool requires in canonical form (`IsFormatCIDR`).
pub fn parse_subnet(text: &str) -> Result<IpNet, String> {
    let net: IpNet = text
        .parse()
        .map_err(|_| format!("invalid CIDR format '{text}'"))?;
    if net.trunc() != net {
        return Err(format!(
            "unformatted subnet {text}, please change it to {}",
            net.trunc()
        ));
    }
    Ok(net)
}

/// The set of addresses some ranges cover, for one family (others are skipped: the
/// validator reports them).
pub(crate) fn ranges_to_set(ranges: &[IpRange], family: IpFamily) -> RangeSet {
    let mut set = RangeSet::new();
    for r in ranges.iter().filter(|r| r.family() == family) {
        let (lo, hi) = r.bounds();
        set.insert_range(lo, hi);
    }
    set
}

/// A `SpiderIPPool` (`spiderpool.spidernet.io/v2beta1`), modelled fields only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpiderIpPool {
    pub name: String,
    pub subnet: IpNet,
    pub ips: Vec<IpRange>,
    pub exclude_ips: Vec<IpRange>,
    pub gateway: Option<IpAddr>,
    /// When non-empty it decides alone; `node_affinity` is then ignored.
    pub node_name: Vec<String>,
    pub node_affinity: Option<LabelSelector>,
    pub namespace_name: Vec<String>,
    pub namespace_affinity: Option<LabelSelector>,
    pub pod_affinity: Option<LabelSelector>,
    pub default: bool,
    pub disable: bool,
}

impl SpiderIpPool {
    /// A pool with only a name and subnet; every other field at its default.
    pub fn new(name: impl Into<String>, subnet: IpNet) -> SpiderIpPool {
        SpiderIpPool {
            name: name.into(),
            subnet,
            ips: Vec::new(),
            exclude_ips: Vec::new(),
            gateway: None,
            node_name: Vec::new(),
            node_affinity: None,
            namespace_name: Vec::new(),
            namespace_affinity: None,
            pod_affinity: None,
            default: false,
            disable: false,
        }
    }

    /// Spiderpool derives `spec.ipVersion` from the subnet.
    pub fn family(&self) -> IpFamily {
        IpFamily::of_net(&self.subnet)
    }

    /// `ips − excludeIPs`, clipped to the subnet: the addresses the pool owns.
    pub(crate) fn total_ips(&self) -> RangeSet {
        let family = self.family();
        let mut set = ranges_to_set(&self.ips, family);
        set.subtract(&ranges_to_set(&self.exclude_ips, family));
        let mut subnet = RangeSet::new();
        subnet.insert_range(
            ip_to_u128(self.subnet.network()),
            ip_to_u128(self.subnet.broadcast()),
        );
        set.intersection(&subnet)
    }
}

/// A `SpiderReservedIP`: addresses no pool hands out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpiderReservedIp {
    pub name: String,
    pub ips: Vec<IpRange>,
}

pub use crate::model::Severity;

/// One problem `validate` found, located by pool, field and list item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolProblem {
    pub pool_index: usize,
    /// The field path as Spiderpool's webhook names it, e.g. `spec.gateway`, `spec.ips`.
    pub field: &'static str,
    /// The index within the field's list, if the field is a list.
    pub item: Option<usize>,
    pub message: String,
    pub severity: Severity,
}

impl fmt::Display for PoolProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.item {
            Some(i) => write!(f, "{}[{i}]: {}", self.field, self.message),
            None => write!(f, "{}: {}", self.field, self.message),
        }
    }
}

/// Checks pools as Spiderpool's webhook would, plus podnet's own warnings, reporting every
/// problem. Overlaps are reported on the later pool, the one the webhook would refuse.
pub fn validate(pools: &[SpiderIpPool]) -> Vec<PoolProblem> {
    let mut out = Vec::new();
    let mut push = |pool_index, field, item, message: String, severity| {
        out.push(PoolProblem {
            pool_index,
            field,
            item,
            message,
            severity,
        })
    };
    let mut first_by_name: BTreeMap<&str, usize> = BTreeMap::new();
    for (p, pool) in pools.iter().enumerate() {
        if let Some(&q) = first_by_name.get(pool.name.as_str()) {
            push(
                p,
                "metadata.name",
                None,
                format!(
                    "IPPool {} AlreadyExists (pool #{q} has the same name)",
                    pool.name
                ),
                Severity::Error,
            );
        } else {
            first_by_name.insert(&pool.name, p);
        }
        let family = pool.family();
        let subnet = pool.subnet;
        if subnet.trunc() != subnet {
            push(
                p,
                "spec.subnet",
                None,
                format!(
                    "unformatted subnet {subnet}, please change it to {}",
                    subnet.trunc()
                ),
                Severity::Error,
            );
        }
        let outside = |r: &IpRange| !subnet.contains(&r.first) || !subnet.contains(&r.last);
        for (field, list) in [
            ("spec.ips", &pool.ips),
            ("spec.excludeIPs", &pool.exclude_ips),
        ] {
            for (i, r) in list.iter().enumerate() {
                if r.family() != family {
                    push(
                        p,
                        field,
                        Some(i),
                        format!(
                            "{r} is {} but 'spec.subnet' {subnet} is {family}",
                            r.family()
                        ),
                        Severity::Error,
                    );
                } else if outside(r) {
                    push(
                        p,
                        field,
                        Some(i),
                        format!("{r}: not pertains to the 'spec.subnet' {subnet} of IPPool"),
                        Severity::Error,
                    );
                }
            }
        }
        // Spiderpool's NewCIDR refuses overlapping items within one pool's `ips`.
        for (i, a) in pool.ips.iter().enumerate() {
            for b in &pool.ips[..i] {
                let (a0, a1) = a.bounds();
                let (b0, b1) = b.bounds();
                if a.family() == b.family() && a0 <= b1 && b0 <= a1 {
                    push(
                        p,
                        "spec.ips",
                        Some(i),
                        format!("range {a} overlaps with {b}"),
                        Severity::Error,
                    );
                    break;
                }
            }
        }
        if let Some(gw) = pool.gateway {
            if IpFamily::of(gw) != family {
                push(
                    p,
                    "spec.gateway",
                    None,
                    format!(
                        "{gw} is {} but 'spec.subnet' {subnet} is {family}",
                        IpFamily::of(gw)
                    ),
                    Severity::Error,
                );
            } else if !subnet.contains(&gw) {
                push(
                    p,
                    "spec.gateway",
                    None,
                    format!("{gw}: not pertains to the 'spec.subnet' {subnet} of IPPool"),
                    Severity::Error,
                );
            } else {
                if gw == subnet.network() && subnet.prefix_len() < subnet.max_prefix_len() {
                    push(
                        p,
                        "spec.gateway",
                        None,
                        format!(
                            "{gw} is the network address of 'spec.subnet' {subnet}; hosts rarely answer there"
                        ),
                        Severity::Warning,
                    );
                }
                let g = ip_to_u128(gw);
                let excluded = pool
                    .exclude_ips
                    .iter()
                    .any(|r| r.family() == family && r.bounds().0 <= g && g <= r.bounds().1);
                if !excluded
                    && let Some(i) = pool.ips.iter().position(|r| {
                        r.family() == family && r.bounds().0 <= g && g <= r.bounds().1
                    })
                {
                    push(
                        p,
                        "spec.ips",
                        Some(i),
                        format!(
                            "{}: conflicts with 'spec.gateway' {gw}, add the gateway IP address to 'spec.excludeIPs' or remove it from 'spec.ips'",
                            pool.ips[i]
                        ),
                        Severity::Error,
                    );
                }
            }
        }
        for (field, sel) in [
            ("spec.nodeAffinity", &pool.node_affinity),
            ("spec.namespaceAffinity", &pool.namespace_affinity),
            ("spec.podAffinity", &pool.pod_affinity),
        ] {
            if let Some(sel) = sel {
                for problem in sel.validate() {
                    push(p, field, None, problem, Severity::Error);
                }
            }
        }
        if pool
            .pod_affinity
            .as_ref()
            .is_some_and(|s| s.match_labels.is_empty() && s.match_expressions.is_empty())
        {
            push(
                p,
                "spec.podAffinity",
                None,
                "empty podAffinity is invalid for SpiderIPPool".into(),
                Severity::Error,
            );
        }
    }

    // Pools of one family whose subnets differ must not overlap (validateIPPoolCIDR).
    // Sorted by network start, each pool only meets the pools that start inside it.
    let mut order: Vec<usize> = (0..pools.len()).collect();
    let start = |i: usize| (pools[i].family(), ip_to_u128(pools[i].subnet.network()), i);
    order.sort_by_key(|&i| start(i));
    for (n, &a) in order.iter().enumerate() {
        let a_end = ip_to_u128(pools[a].subnet.broadcast());
        for &b in &order[n + 1..] {
            if pools[b].family() != pools[a].family()
                || ip_to_u128(pools[b].subnet.network()) > a_end
            {
                break;
            }
            if pools[a].subnet.trunc() == pools[b].subnet.trunc() {
                continue;
            }
            let (early, late) = (a.min(b), a.max(b));
            push(
                late,
                "spec.subnet",
                None,
                format!(
                    "overlap with IPPool {} which 'spec.subnet' is {}",
                    pools[early].name, pools[early].subnet
                ),
                Severity::Error,
            );
        }
    }

    // Pools sharing a subnet must own disjoint addresses (validateIPPoolAvailableIPs).
    let mut by_subnet: BTreeMap<(IpFamily, u128, u8), Vec<usize>> = BTreeMap::new();
    for (i, pool) in pools.iter().enumerate() {
        let net = pool.subnet.trunc();
        by_subnet
            .entry((pool.family(), ip_to_u128(net.network()), net.prefix_len()))
            .or_default()
            .push(i);
    }
    for members in by_subnet.values() {
        let totals: Vec<RangeSet> = members.iter().map(|&i| pools[i].total_ips()).collect();
        for (n, &late) in members.iter().enumerate() {
            for (m, &early) in members[..n].iter().enumerate() {
                let shared = totals[n].intersection(&totals[m]);
                if shared.is_empty() {
                    continue;
                }
                let family = pools[late].family();
                let ranges: Vec<String> = shared
                    .ranges()
                    .map(|(s, e)| {
                        IpRange {
                            first: u128_to_ip(family, s),
                            last: u128_to_ip(family, e),
                        }
                        .to_string()
                    })
                    .collect();
                push(
                    late,
                    "spec.ips",
                    None,
                    format!(
                        "overlap with IPPool {} in IP ranges [{}], total IP addresses of an IPPool are jointly determined by 'spec.ips' and 'spec.excludeIPs'",
                        pools[early].name,
                        ranges.join(" ")
                    ),
                    Severity::Error,
                );
            }
        }
    }
    out.sort_by(|a, b| (a.pool_index, a.field, a.item).cmp(&(b.pool_index, b.field, b.item)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> IpNet {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn ranges(items: &[&str]) -> Vec<IpRange> {
        let items: Vec<String> = items.iter().map(|s| s.to_string()).collect();
        parse_ip_ranges(&items).unwrap_or_else(|(i, e)| panic!("{i}: {e}"))
    }

    fn pool(name: &str, subnet: &str, ips: &[&str]) -> SpiderIpPool {
        let mut p = SpiderIpPool::new(name, net(subnet));
        p.ips = ranges(ips);
        p
    }

    fn summary(problems: &[PoolProblem]) -> Vec<(usize, &'static str, Option<usize>, Severity)> {
        problems
            .iter()
            .map(|p| (p.pool_index, p.field, p.item, p.severity))
            .collect()
    }

    #[test]
    fn ranges_parse_and_render() {
        let r = ranges(&["10.0.0.1-10.0.0.5", "10.0.0.9", "fd00::1-fd00::2"]);
        assert_eq!(r[0].to_string(), "10.0.0.1-10.0.0.5");
        assert_eq!(r[1].to_string(), "10.0.0.9");
        assert_eq!(r[2].family(), IpFamily::V6);
        let bad = |s: &str| parse_ip_ranges(&["10.0.0.1".to_string(), s.to_string()]).err();
        assert_eq!(bad("10.0.0.5-10.0.0.1").map(|e| e.0), Some(1));
        assert!(bad("10.0.0.1 - 10.0.0.2").is_some());
        assert!(bad("10.0.0.0/24").is_some());
        assert!(bad("10.0.0.1-fd00::1").is_some());
        assert!(bad("1-2-3").is_some());
        assert!(bad("").is_some());
        assert_eq!(parse_subnet("10.0.0.0/24"), Ok(net("10.0.0.0/24")));
        assert_eq!(
            parse_subnet("10.0.0.1/24"),
            Err("unformatted subnet 10.0.0.1/24, please change it to 10.0.0.0/24".to_string())
        );
        assert!(parse_subnet("10.0.0.0").is_err());
    }

    #[test]
    fn a_clean_pool_has_no_problems() {
        let mut p = pool("a", "10.0.0.0/24", &["10.0.0.10-10.0.0.200"]);
        p.gateway = Some(
            "10.0.0.1"
                .parse()
                .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        );
        assert_eq!(validate(&[p]), vec![]);
    }

    #[test]
    fn gateway_rules_follow_the_webhook() {
        let gw = |p: &mut SpiderIpPool, s: &str| p.gateway = s.parse().ok();
        let mut outside = pool("out", "10.0.0.0/24", &["10.0.0.10"]);
        gw(&mut outside, "10.0.1.1");
        let mut in_ips = pool(
            "inips",
            "10.1.0.0/24",
            &["10.1.0.1-10.1.0.9", "10.1.0.20-10.1.0.30"],
        );
        gw(&mut in_ips, "10.1.0.25");
        let mut excluded = pool("excl", "10.2.0.0/24", &["10.2.0.1-10.2.0.9"]);
        excluded.exclude_ips = ranges(&["10.2.0.1"]);
        gw(&mut excluded, "10.2.0.1");
        let mut network = pool("net", "10.3.0.0/24", &["10.3.0.5"]);
        gw(&mut network, "10.3.0.0");
        let mut family = pool("fam", "10.4.0.0/24", &["10.4.0.5"]);
        gw(&mut family, "fd00::1");
        let problems = validate(&[outside, in_ips, excluded, network, family]);
        assert_eq!(
            summary(&problems),
            vec![
                (0, "spec.gateway", None, Severity::Error),
                (1, "spec.ips", Some(1), Severity::Error),
                (3, "spec.gateway", None, Severity::Warning),
                (4, "spec.gateway", None, Severity::Error),
            ]
        );
        assert!(
            problems[0]
                .message
                .contains("not pertains to the 'spec.subnet' 10.0.0.0/24")
        );
        assert!(
            problems[1]
                .message
                .contains("conflicts with 'spec.gateway' 10.1.0.25")
        );
    }

    #[test]
    fn addresses_outside_the_subnet_or_of_the_wrong_family_are_errors() {
        let mut p = pool("a", "10.0.0.0/24", &["10.0.0.1", "10.0.1.1", "fd00::1"]);
        p.exclude_ips = ranges(&["10.0.0.200-10.0.1.5"]);
        let problems = validate(&[p]);
        assert_eq!(
            summary(&problems),
            vec![
                (0, "spec.excludeIPs", Some(0), Severity::Error),
                (0, "spec.ips", Some(1), Severity::Error),
                (0, "spec.ips", Some(2), Severity::Error),
            ]
        );
        assert!(problems[2].message.contains("is IPv6"));
    }

    #[test]
    fn overlaps_between_pools_are_reported_on_the_later_pool() {
        let a = pool("a", "10.0.0.0/16", &["10.0.0.1"]);
        let b = pool("b", "10.0.5.0/24", &["10.0.5.1"]);
        let c = pool("c", "10.0.0.0/16", &["10.0.0.1-10.0.0.3"]);
        let mut d = pool("d", "10.0.0.0/16", &["10.0.0.1-10.0.0.9"]);
        d.exclude_ips = ranges(&["10.0.0.1-10.0.0.3"]);
        let v6 = pool("e", "fd00::/64", &["fd00::1"]);
        let problems = validate(&[a, b, c, d, v6]);
        assert_eq!(
            summary(&problems),
            vec![
                (1, "spec.subnet", None, Severity::Error),
                (2, "spec.ips", None, Severity::Error),
                (2, "spec.subnet", None, Severity::Error),
                (3, "spec.subnet", None, Severity::Error),
            ]
        );
        assert!(
            problems[0]
                .message
                .starts_with("overlap with IPPool a which 'spec.subnet' is 10.0.0.0/16")
        );
        assert!(
            problems[1]
                .message
                .starts_with("overlap with IPPool a in IP ranges [10.0.0.1]")
        );
        assert!(
            problems[2]
                .message
                .starts_with("overlap with IPPool b which")
        );
    }

    #[test]
    fn affinities_and_names_are_checked() {
        let mut a = pool("a", "10.0.0.0/24", &["10.0.0.1"]);
        a.pod_affinity = Some(LabelSelector::default());
        let b = pool("a", "10.1.0.0/24", &["10.1.0.1-10.1.0.5", "10.1.0.3"]);
        let problems = validate(&[a, b]);
        assert_eq!(
            summary(&problems),
            vec![
                (0, "spec.podAffinity", None, Severity::Error),
                (1, "metadata.name", None, Severity::Error),
                (1, "spec.ips", Some(1), Severity::Error),
            ]
        );
    }
}

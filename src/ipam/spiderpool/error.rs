//! Why Spiderpool gave a pod no address, or refused a pool change: one [`SpiderError`] per
//! refusal of `pkg/ipam`, `pkg/ippoolmanager` and the IPPool webhook, whose `Display` is
//! Spiderpool's own words (the text after `failed to allocate IP addresses in standard mode: `
//! in a real CNI error), so a pending pod's reason reads as the CNI plugin logs it.
//!
//! Invariants: every variant's text is Spiderpool's (`tests` pins each one); lists of
//! reasons are de-duplicated and bracketed as Kubernetes' `utilerrors.NewAggregate` does
//! ([`aggregate`]), lists of pools printed as Go's `%v` of a string slice ([`go_list`]).
//! What this is not: the webhook's field checks themselves (`pool::validate`, whose
//! [`PoolProblem`] a refused change carries).

use std::fmt;
use std::net::IpAddr;

use super::PodHandle;
use super::pool::{IpFamily, PoolProblem};

/// One refusal of Spiderpool, in Spiderpool's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpiderError {
    /// The API server's NotFound for a pool that does not exist.
    PoolNotFound { name: String },
    /// A pool created under a name that is taken.
    AlreadyExists { name: String },
    /// The IPPool webhook refused the pool (its first error-severity problem).
    Webhook(PoolProblem),
    /// The webhook refuses a change of `spec.subnet`.
    SubnetNotChangeable,
    /// The webhook refuses removing an address a pod holds.
    AddressInUse { ip: IpAddr, pod: PodHandle },
    /// A pod annotation that is not what Spiderpool reads.
    PodAnnotation { key: &'static str, detail: String },
    /// A namespace annotation that is not what Spiderpool reads.
    NamespaceAnnotation { key: &'static str, detail: String },
    /// No pod or namespace annotation and no `default: true` pool.
    NoSelectionRules,
    /// The same pool named twice for one NIC.
    DuplicatePool { name: String, nic: String },
    /// A named pool that does not exist (the API server's NotFound, wrapped).
    OriginalPoolNotFound { name: String },
    /// Every candidate pool of a family was filtered out, each for its reason.
    AllFilteredOut {
        family: IpFamily,
        nic: String,
        pools: Vec<String>,
        reasons: Vec<String>,
    },
    /// Every surviving pool of one or more families is full (`constant.ErrIPUsedOut`).
    UsedOut { shortfalls: Vec<Shortfall> },
}

/// One family a pod could not get an address of: every surviving pool was full.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shortfall {
    pub family: IpFamily,
    pub nic: String,
    pub pools: Vec<String>,
}

impl fmt::Display for Shortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "failed to allocate any IPv{} IP address to NIC {} from IPPools {}: {USED_OUT}",
            self.family.version(),
            self.nic,
            go_list(&self.pools)
        )
    }
}

/// `constant.ErrIPUsedOut` (`pkg/constant/errors.go`); every full pool gives the same reason,
/// which the aggregate prints once.
const USED_OUT: &str = "all IP addresses used out";

impl fmt::Display for SpiderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpiderError::PoolNotFound { name } => write!(
                f,
                "spiderippools.spiderpool.spidernet.io \"{name}\" not found"
            ),
            SpiderError::AlreadyExists { name } => write!(f, "IPPool {name} AlreadyExists"),
            SpiderError::Webhook(problem) => write!(f, "{problem}"),
            SpiderError::SubnetNotChangeable => {
                f.write_str("spec.subnet: Forbidden: is not changeable")
            }
            SpiderError::AddressInUse { ip, pod } => write!(
                f,
                "spec.ips: Forbidden: remove an IP address {ip} that is being used by Pod {pod}, \
                 total IP addresses of an IPPool are jointly determined by 'spec.ips' and \
                 'spec.excludeIPs'"
            ),
            SpiderError::PodAnnotation { key, detail } => write!(
                f,
                "wrong input, invalid format of Pod annotation '{key}': {detail}"
            ),
            SpiderError::NamespaceAnnotation { key, detail } => write!(
                f,
                "invalid format of Namespace annotation '{key}': {detail}"
            ),
            SpiderError::NoSelectionRules => f.write_str(
                "no IPPool available, no pool selection rules of any type are specified",
            ),
            SpiderError::DuplicatePool { name, nic } => write!(
                f,
                "wrong input, duplicate IPPool {name} specified for NIC {nic}"
            ),
            SpiderError::OriginalPoolNotFound { name } => write!(
                f,
                "failed to get original IPPool {name}: {}",
                SpiderError::PoolNotFound { name: name.clone() }
            ),
            SpiderError::AllFilteredOut {
                family,
                nic,
                pools,
                reasons,
            } => write!(
                f,
                "no IPPool available, all IPv{} IPPools {} of {nic} filtered out: {}",
                family.version(),
                go_list(pools),
                aggregate(reasons)
            ),
            SpiderError::UsedOut { shortfalls } => f.write_str(&aggregate(shortfalls)),
        }
    }
}

impl std::error::Error for SpiderError {}

/// Kubernetes' `utilerrors.NewAggregate(...).Error()`: one message alone, several
/// de-duplicated inside brackets.
pub fn aggregate<T: fmt::Display>(messages: &[T]) -> String {
    let mut unique: Vec<String> = Vec::new();
    for m in messages {
        let m = m.to_string();
        if !unique.contains(&m) {
            unique.push(m);
        }
    }
    match unique.as_slice() {
        [one] => one.clone(),
        _ => format!("[{}]", unique.join(", ")),
    }
}

/// Go's `%v` of a string slice: `[a b]`.
pub fn go_list(names: &[String]) -> String {
    format!("[{}]", names.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipam::spiderpool::pool::Severity;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn aggregate_matches_kubernetes() {
        assert_eq!(aggregate(&names(&["a"])), "a");
        assert_eq!(aggregate(&names(&["a", "b"])), "[a, b]");
        assert_eq!(aggregate(&names(&["a", "a"])), "a");
        assert_eq!(go_list(&names(&["p1", "p2"])), "[p1 p2]");
    }

    /// Each variant's text against the format string in Spiderpool's source, so that a
    /// pending pod's reason can be searched for in Spiderpool's code and logs.
    #[test]
    fn every_variant_reads_as_spiderpool_writes_it() {
        let shortfall = |family, pools: &[&str]| Shortfall {
            family,
            nic: "eth0".into(),
            pools: names(pools),
        };
        let cases: Vec<(SpiderError, &str)> = vec![
            (
                SpiderError::PoolNotFound { name: "p".into() },
                "spiderippools.spiderpool.spidernet.io \"p\" not found",
            ),
            (
                SpiderError::AlreadyExists { name: "p".into() },
                "IPPool p AlreadyExists",
            ),
            (
                SpiderError::Webhook(PoolProblem {
                    pool_index: 0,
                    field: "spec.gateway",
                    item: None,
                    message: "must be in spec.subnet".into(),
                    severity: Severity::Error,
                }),
                "spec.gateway: must be in spec.subnet",
            ),
            (
                SpiderError::SubnetNotChangeable,
                "spec.subnet: Forbidden: is not changeable",
            ),
            (
                SpiderError::AddressInUse {
                    ip: "10.0.0.7".parse().unwrap(),
                    pod: PodHandle::new("ns", "web-0"),
                },
                "spec.ips: Forbidden: remove an IP address 10.0.0.7 that is being used by Pod \
                 ns/web-0, total IP addresses of an IPPool are jointly determined by 'spec.ips' \
                 and 'spec.excludeIPs'",
            ),
            (
                SpiderError::PodAnnotation {
                    key: "ipam.spidernet.io/ippool",
                    detail: "EOF".into(),
                },
                "wrong input, invalid format of Pod annotation 'ipam.spidernet.io/ippool': EOF",
            ),
            (
                SpiderError::NamespaceAnnotation {
                    key: "ipam.spidernet.io/default-ipv4-ippool",
                    detail: "EOF".into(),
                },
                "invalid format of Namespace annotation 'ipam.spidernet.io/default-ipv4-ippool': EOF",
            ),
            (
                SpiderError::NoSelectionRules,
                "no IPPool available, no pool selection rules of any type are specified",
            ),
            (
                SpiderError::DuplicatePool {
                    name: "a".into(),
                    nic: "eth0".into(),
                },
                "wrong input, duplicate IPPool a specified for NIC eth0",
            ),
            (
                SpiderError::OriginalPoolNotFound {
                    name: "ghost".into(),
                },
                "failed to get original IPPool ghost: spiderippools.spiderpool.spidernet.io \
                 \"ghost\" not found",
            ),
            (
                SpiderError::AllFilteredOut {
                    family: IpFamily::V4,
                    nic: "eth0".into(),
                    pools: names(&["a", "b"]),
                    reasons: names(&["x", "y", "x"]),
                },
                "no IPPool available, all IPv4 IPPools [a b] of eth0 filtered out: [x, y]",
            ),
            (
                SpiderError::UsedOut {
                    shortfalls: vec![shortfall(IpFamily::V4, &["a"])],
                },
                "failed to allocate any IPv4 IP address to NIC eth0 from IPPools [a]: all IP \
                 addresses used out",
            ),
            (
                SpiderError::UsedOut {
                    shortfalls: vec![
                        shortfall(IpFamily::V4, &["a"]),
                        shortfall(IpFamily::V6, &["b", "c"]),
                    ],
                },
                "[failed to allocate any IPv4 IP address to NIC eth0 from IPPools [a]: all IP \
                 addresses used out, failed to allocate any IPv6 IP address to NIC eth0 from \
                 IPPools [b c]: all IP addresses used out]",
            ),
        ];
        for (error, words) in cases {
            assert_eq!(error.to_string(), words, "{error:?}");
        }
    }
}

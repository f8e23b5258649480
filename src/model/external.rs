//! Places outside the cluster (SPEC §7 `externals:`): a named CIDR attached to one router of
//! the fabric (`core`, a spine or a ToR).
//!
//! Invariants: names are unique and no two externals have the same CIDR (validated by
//! `scenario::externals`); the attachment is a router.
//! What this is not: no routing (the dataplane derives the routes towards an external from
//! its attachment, `forwarding::dataplane`), no BGP speaker — an external learns what its
//! attachment router learns.

use std::net::IpAddr;

use ipnet::IpNet;

use super::topology::DeviceId;

/// One external place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct External {
    pub name: String,
    /// Canonical (host bits cleared).
    pub cidr: IpNet,
    /// The router it is attached to.
    pub attach: DeviceId,
}

impl External {
    /// The address a trace or an expectation uses for the external: the CIDR's first host
    /// address (its network address plus one), or the address itself for a /32 (/128) or a
    /// /31 (/127). For `0.0.0.0/0` that is `0.0.0.1`, which is as good as any address that
    /// no cluster network holds.
    pub fn address(&self) -> IpAddr {
        let single = self.cidr.max_prefix_len() - self.cidr.prefix_len() <= 1;
        match self.cidr.network() {
            a if single => a,
            IpAddr::V4(a) => IpAddr::V4((u32::from(a).wrapping_add(1)).into()),
            IpAddr::V6(a) => IpAddr::V6((u128::from(a).wrapping_add(1)).into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(cidr: &str) -> External {
        External {
            name: "x".into(),
            cidr: cidr.parse().unwrap(),
            attach: DeviceId(0),
        }
    }

    #[test]
    fn the_address_is_the_first_host_address() {
        assert_eq!(ext("0.0.0.0/0").address().to_string(), "0.0.0.1");
        assert_eq!(ext("192.0.2.0/24").address().to_string(), "192.0.2.1");
        assert_eq!(ext("198.51.100.7/32").address().to_string(), "198.51.100.7");
        assert_eq!(ext("198.51.100.6/31").address().to_string(), "198.51.100.6");
        assert_eq!(ext("2001:db8::/64").address().to_string(), "2001:db8::1");
    }
}

//! Reading what BIRD and the kernel say (`birdc show route all`, `ip -j route show`) and what
//! podnet says (`podnet routes --format json`, `--table fib`), in one shape, and comparing them.
//!
//! The shape is podnet's Loc-RIB (SPEC §3.4): per prefix inside an IP pool, every candidate —
//! BGP routes with their attributes, and the speaker's own originated routes (`local`: BIRD's
//! static blackhole for a block, or the kernel route of a borrowed address). BIRD also learns
//! the kernel routes of the node's own pods inside its own blocks (Felix's routes); those are
//! not in podnet's Loc-RIB and are left out. FIBs are compared as prefix → what the kernel
//! does with it (via an address, the segment, a local pod, a blackhole).

use std::collections::BTreeMap;
use std::fmt;

use ipnet::{IpNet, Ipv4Net};

/// One candidate route for a prefix.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Candidate {
    pub best: bool,
    /// The neighbour it was learned from, or `local` for the speaker's own.
    pub from: String,
    pub next_hop: String,
    pub as_path: String,
    pub origin: String,
    pub local_pref: String,
    pub originator: String,
    pub cluster_list: String,
}

impl fmt::Display for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.from == "local" {
            return write!(f, "{}local", if self.best { "*" } else { "" });
        }
        write!(
            f,
            "{}from {} nh {} path [{}] {} lp {} orig {} cl [{}]",
            if self.best { "*" } else { "" },
            self.from,
            self.next_hop,
            self.as_path,
            self.origin,
            self.local_pref,
            if self.originator.is_empty() {
                "-"
            } else {
                &self.originator
            },
            self.cluster_list
        )
    }
}

pub type Rib = BTreeMap<Ipv4Net, Vec<Candidate>>;

/// What a FIB does with a prefix.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fib {
    Via(String),
    /// The kernel's route to a point-to-point link's far end (`ip addr add A peer B`): the
    /// lab's way of building podnet's fabric link, the same as `Via(B)` where podnet lists a
    /// route to B, and nothing podnet would list otherwise.
    Link(String),
    Connected,
    Local,
    Blackhole,
}

pub type Fibs = BTreeMap<Ipv4Net, Fib>;

fn in_pools(p: &Ipv4Net, pools: &[Ipv4Net]) -> bool {
    pools.iter().any(|pool| pool.contains(p))
}

/// Parses `birdc show route all`. `names` maps a BIRD protocol name to the device it talks to.
pub fn bird_rib(text: &str, pools: &[Ipv4Net], names: &dyn Fn(&str) -> String) -> Rib {
    struct Raw {
        prefix: Ipv4Net,
        best: bool,
        proto: String,
        kind: String,
        attrs: BTreeMap<String, String>,
    }
    let mut raws: Vec<Raw> = Vec::new();
    let mut prefix: Option<Ipv4Net> = None;
    for line in text.lines() {
        if line.starts_with("BIRD ") || line.starts_with("Table ") || line.trim().is_empty() {
            continue;
        }
        if let Some(attr) = line.strip_prefix('\t') {
            if let (Some(r), Some((k, v))) = (raws.last_mut(), attr.split_once(':')) {
                r.attrs.insert(k.trim().to_string(), v.trim().to_string());
            } else if let Some(r) = raws.last_mut() {
                r.attrs.insert("via".to_string(), attr.trim().to_string());
            }
            continue;
        }
        let mut words = line.split_whitespace();
        if !line.starts_with(' ') {
            prefix = words.next().and_then(|p| p.parse().ok());
        }
        let Some(p) = prefix else { continue };
        let kind = words.next().unwrap_or("").to_string();
        let proto = line
            .split_once('[')
            .map(|(_, r)| r.split_whitespace().next().unwrap_or("").to_string())
            .unwrap_or_default();
        let best = line.contains("] * (");
        raws.push(Raw {
            prefix: p,
            best,
            proto,
            kind,
            attrs: BTreeMap::new(),
        });
    }
    // The node's own blocks: its static blackholes.
    let own: Vec<Ipv4Net> = raws
        .iter()
        .filter(|r| r.kind == "blackhole")
        .map(|r| r.prefix)
        .collect();
    let mut rib = Rib::new();
    for r in raws {
        if !in_pools(&r.prefix, pools) {
            continue;
        }
        let ty = r.attrs.get("Type").cloned().unwrap_or_default();
        let candidate = if ty.starts_with("BGP") {
            let a = |k: &str| r.attrs.get(k).cloned().unwrap_or_default();
            Candidate {
                best: r.best,
                from: names(&r.proto),
                next_hop: a("BGP.next_hop"),
                as_path: a("BGP.as_path"),
                origin: a("BGP.origin"),
                local_pref: r
                    .attrs
                    .get("BGP.local_pref")
                    .cloned()
                    .unwrap_or_else(|| "100".into()),
                originator: a("BGP.originator_id"),
                cluster_list: a("BGP.cluster_list"),
            }
        } else {
            // A kernel route inside one of the node's own blocks is a local pod (Felix's).
            if ty.starts_with("inherit")
                && own.iter().any(|b| b.contains(&r.prefix) && *b != r.prefix)
            {
                continue;
            }
            local(r.best)
        };
        rib.entry(r.prefix).or_default().push(candidate);
    }
    for c in rib.values_mut() {
        c.sort();
    }
    rib
}

fn local(best: bool) -> Candidate {
    Candidate {
        best,
        from: "local".into(),
        next_hop: String::new(),
        as_path: String::new(),
        origin: String::new(),
        local_pref: String::new(),
        originator: String::new(),
        cluster_list: String::new(),
    }
}

/// Parses `podnet routes --format json` (table rib).
pub fn podnet_rib(json: &str, pools: &[Ipv4Net]) -> Rib {
    let v: serde_json::Value = serde_json::from_str(json).expect("podnet routes json");
    let mut rib = Rib::new();
    for e in v.as_array().into_iter().flatten() {
        let Some(p) = e["prefix"].as_str().and_then(|p| p.parse::<Ipv4Net>().ok()) else {
            continue;
        };
        if !in_pools(&p, pools) {
            continue;
        }
        for r in e["routes"].as_array().into_iter().flatten() {
            let best = r["best"].as_bool().unwrap_or(false);
            let c = match r["from"].as_str() {
                None => local(best),
                Some(from) => {
                    let list = |k: &str| {
                        r[k].as_array()
                            .into_iter()
                            .flatten()
                            .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
                            .collect::<Vec<_>>()
                            .join(" ")
                    };
                    Candidate {
                        best,
                        from: from.to_string(),
                        next_hop: r["nextHop"].as_str().unwrap_or("").to_string(),
                        as_path: list("asPath"),
                        origin: r["origin"].as_str().unwrap_or("").to_string(),
                        local_pref: r["localPref"].to_string(),
                        originator: r["originatorId"].as_str().unwrap_or("").to_string(),
                        cluster_list: list("clusterList"),
                    }
                }
            };
            rib.entry(p).or_default().push(c);
        }
    }
    for c in rib.values_mut() {
        c.sort();
    }
    rib
}

/// Parses `ip -j route show`. Routes BIRD copied from the kernel's own connected routes are
/// the same entry; a point-to-point peer's /32 is reached via that peer.
pub fn kernel_fib(json: &str) -> Fibs {
    let v: serde_json::Value = serde_json::from_str(json).unwrap_or(serde_json::Value::Null);
    let mut fib = Fibs::new();
    for r in v.as_array().into_iter().flatten() {
        let dst = r["dst"].as_str().unwrap_or("");
        let prefix: Ipv4Net = if dst == "default" {
            "0.0.0.0/0".parse().expect("default")
        } else if dst.contains('/') {
            match dst.parse() {
                Ok(p) => p,
                Err(_) => continue,
            }
        } else {
            match dst.parse() {
                Ok(a) => Ipv4Net::new(a, 32).expect("/32"),
                Err(_) => continue,
            }
        };
        let dev = r["dev"].as_str().unwrap_or("");
        let what = if r["type"].as_str() == Some("blackhole") {
            Fib::Blackhole
        } else if let Some(gw) = r["gateway"].as_str() {
            Fib::Via(gw.to_string())
        } else if let Some(hops) = r["nexthops"].as_array() {
            let mut gws: Vec<&str> = hops.iter().filter_map(|h| h["gateway"].as_str()).collect();
            gws.sort();
            Fib::Via(gws.join("|"))
        } else if dev.starts_with("cali") {
            Fib::Local
        } else if dev.starts_with('f') && prefix.prefix_len() == 32 {
            Fib::Link(prefix.addr().to_string())
        } else {
            Fib::Connected
        };
        // The first entry for a prefix wins (the kernel's own before BIRD's copy).
        fib.entry(prefix).or_insert(what);
    }
    fib
}

/// Parses `podnet routes --table fib --format json`.
pub fn podnet_fib(json: &str) -> Fibs {
    let v: serde_json::Value = serde_json::from_str(json).expect("podnet fib json");
    let mut fib = Fibs::new();
    for e in v.as_array().into_iter().flatten() {
        let Some(p) = e["prefix"].as_str().and_then(|p| p.parse::<Ipv4Net>().ok()) else {
            continue;
        };
        let route = e["route"].as_str().unwrap_or("");
        let what = if route.starts_with("blackhole") {
            Fib::Blackhole
        } else if route.contains("(local pod)") || route.contains(" dev cali") {
            Fib::Local
        } else if let Some((_, rest)) = route.split_once(" via ") {
            Fib::Via(rest.split_whitespace().next().unwrap_or("").to_string())
        } else {
            Fib::Connected
        };
        fib.insert(p, what);
    }
    fib
}

/// One place where podnet and BIRD differ.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Disagreement {
    pub case: String,
    pub at: String,
    pub speaker: String,
    pub table: &'static str,
    pub prefix: String,
    pub podnet: String,
    pub bird: String,
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at {}: {} {} {}: podnet [{}] vs BIRD [{}]",
            self.case, self.at, self.speaker, self.table, self.prefix, self.podnet, self.bird
        )
    }
}

fn show<T: fmt::Display>(v: Option<&Vec<T>>) -> String {
    v.map_or("absent".to_string(), |v| {
        v.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })
}

pub fn diff_rib(
    podnet: &Rib,
    bird: &Rib,
    out: &mut Vec<Disagreement>,
    mk: &dyn Fn(&'static str, String, String, String) -> Disagreement,
) {
    let prefixes: std::collections::BTreeSet<_> = podnet.keys().chain(bird.keys()).collect();
    for p in prefixes {
        let (a, b) = (podnet.get(p), bird.get(p));
        if a != b {
            out.push(mk("rib", p.to_string(), show(a), show(b)));
        }
    }
}

pub fn diff_fib(
    podnet: &Fibs,
    kernel: &Fibs,
    out: &mut Vec<Disagreement>,
    mk: &dyn Fn(&'static str, String, String, String) -> Disagreement,
) {
    let prefixes: std::collections::BTreeSet<_> = podnet.keys().chain(kernel.keys()).collect();
    for p in prefixes {
        let (a, b) = (podnet.get(p), kernel.get(p));
        let same = match (a, b) {
            (None, Some(Fib::Link(_))) => true,
            (Some(Fib::Via(x)), Some(Fib::Link(y))) => x == y,
            _ => a == b,
        };
        if !same {
            let s = |x: Option<&Fib>| x.map_or("absent".to_string(), |f| format!("{f:?}"));
            out.push(mk("fib", p.to_string(), s(a), s(b)));
        }
    }
}

/// Seconds since the epoch of a BIRD `iso long ms` time (`2026-12-01 15:57:56.929`, UTC).
pub fn bird_time(text: &str) -> Option<f64> {
    let (date, time) = text.split_once(' ')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':');
    let (h, min, s) = (
        t.next()?.parse::<f64>().ok()?,
        t.next()?.parse::<f64>().ok()?,
        t.next()?.parse::<f64>().ok()?,
    );
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days as f64 * 86_400.0 + h * 3600.0 + min * 60.0 + s)
}

/// `show protocols`: (protocol, state, since, info) per BGP protocol.
pub fn bird_protocols(text: &str) -> Vec<(String, String, f64, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() >= 6
            && w[1] == "BGP"
            && let Some(t) = bird_time(&format!("{} {}", w[4], w[5]))
        {
            out.push((w[0].to_string(), w[3].to_string(), t, w[6..].join(" ")));
        }
    }
    out
}

/// Replaces times and running timers so that recordings of two runs compare.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut l = line.to_string();
        // 2026-12-01 15:57:56.929
        let bytes: Vec<char> = l.chars().collect();
        let mut i = 0;
        let mut norm = String::new();
        while i < bytes.len() {
            let rest: String = bytes[i..bytes.len().min(i + 23)].iter().collect();
            if rest.len() == 23 && bird_time(&rest).is_some() && rest.as_bytes()[4] == b'-' {
                norm.push_str("TIME");
                i += 23;
            } else {
                norm.push(bytes[i]);
                i += 1;
            }
        }
        l = norm;
        for key in [
            "Hold timer:",
            "Keepalive timer:",
            "Last error:",
            "Neighbor port:",
        ] {
            if let Some(idx) = l.find(key) {
                l.truncate(idx + key.len());
                l.push_str(" …");
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    }
    out
}

#[allow(dead_code)]
pub fn parse_net(s: &str) -> Option<Ipv4Net> {
    s.parse::<IpNet>().ok().and_then(|n| match n {
        IpNet::V4(v) => Some(v),
        IpNet::V6(_) => None,
    })
}

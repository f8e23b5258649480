//! PowerShell that builds a Windows node's HNS objects (`hns`), in the form Microsoft documents
//! for the HNS.V2 module (`New-HnsNetwork`, `New-HnsSubnet`, `New-HnsIPSubnet`,
//! `Remove-HnsIpSubnet`, `Remove-HnsSubnet`; "Multiple subnet support in Host Networking
//! Service"), either as the objects stand at an instant or as the sequence of changes a run
//! made.
//!
//! Invariants: every block the node holds appears exactly once in a state script (as a
//! subnet's `-AddressPrefix` in Calico's layouts, as an IP subnet in multi-subnet); a changes
//! script has one command per HNS change, in the order of the run, each with a comment naming
//! its time and block. Pure: a world in, text out.
//!
//! Not here: endpoints, ACLs, the host endpoint, and the objects HNS itself adds (the
//! management vNIC, `HostRoute` policies). podnet never runs these commands.

use std::fmt::Write as _;

use crate::hns::{Change, Host, IpSubnet, Network, NetworkType, Subnet, flags};
use crate::model::time::SimTime;
use crate::report::sections::time;
use crate::sim::World;

/// Why nothing can be exported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HnsExportError {
    /// No node runs Windows under Calico.
    NoWindowsNodes,
    /// `--node` names no Windows node.
    NotWindows(String),
}

impl std::fmt::Display for HnsExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HnsExportError::NoWindowsNodes => {
                f.write_str("no Windows node runs Calico in this scenario")
            }
            HnsExportError::NotWindows(n) => write!(f, "no Windows node `{n}`"),
        }
    }
}

/// One script: the node it is for and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HnsScript {
    pub node: String,
    pub text: String,
}

/// What to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The objects at the instant of the world.
    State,
    /// Every change up to the instant of the world.
    Changes,
}

/// The scripts of `node` (or of every Windows node) for a world at `now`.
pub fn render(
    world: &World,
    now: SimTime,
    node: Option<&str>,
    kind: Kind,
) -> Result<Vec<HnsScript>, HnsExportError> {
    let state = &world.hns;
    let Some(layout) = state.layout.filter(|_| !state.hosts.is_empty()) else {
        return Err(HnsExportError::NoWindowsNodes);
    };
    let hosts: Vec<(&String, &Host)> = match node {
        Some(n) => match state.hosts.get_key_value(n) {
            Some(h) => vec![h],
            None => return Err(HnsExportError::NotWindows(n.to_string())),
        },
        None => state.hosts.iter().collect(),
    };
    Ok(hosts
        .into_iter()
        .map(|(name, host)| {
            let mut text = format!(
                "# HNS objects of Windows node {name} (windowsHns: {}), {} by podnet.\n\
                 # HNS.V2 module commands as Microsoft documents them; podnet never runs them.\n\
                 Import-Module .\\HNS.V2.psm1\n",
                layout.mode,
                match kind {
                    Kind::State => format!("at {}", time(now.as_micros())),
                    Kind::Changes => format!("changes up to {}", time(now.as_micros())),
                }
            );
            match kind {
                Kind::State => state_script(&mut text, host),
                Kind::Changes => {
                    for t in state.history.iter().filter(|t| &t.node == name) {
                        let _ = writeln!(
                            text,
                            "\n# {}: {} (block {})",
                            time(t.time.as_micros()),
                            t.change,
                            t.change.block()
                        );
                        change_script(&mut text, &t.change);
                    }
                }
            }
            HnsScript {
                node: name.clone(),
                text,
            }
        })
        .collect())
}

fn state_script(out: &mut String, host: &Host) {
    if host.networks.is_empty() {
        out.push_str("# No HNS network: the node holds no block.\n");
    }
    for (i, network) in host.networks.values().enumerate() {
        let var = format!("$net{}", i + 1);
        let _ = write!(out, "\n{var} = ");
        new_network(out, network);
        for subnet in network.subnets.iter().skip(1) {
            new_subnet(out, &format!("{var}.ID"), subnet);
        }
    }
}

/// `New-HnsNetwork` with the network's first subnet (and its IP subnets).
fn new_network(out: &mut String, network: &Network) {
    let first = &network.subnets[0];
    let _ = write!(
        out,
        "New-HnsNetwork -Type {} -Name {} -AddressPrefix \"{}\" -Gateway \"{}\"",
        network.kind.as_str(),
        network.name,
        first.prefix,
        first.gateway
    );
    if let (NetworkType::Overlay, Some(vsid)) = (network.kind, network.vsid) {
        let _ = write!(out, " -Vsid {vsid}");
    }
    if !first.ip_subnets.is_empty() {
        let _ = write!(out, " -IPSubnets {}", ip_subnets(&first.ip_subnets));
    }
    out.push('\n');
}

fn new_subnet(out: &mut String, network_id: &str, subnet: &Subnet) {
    let _ = writeln!(
        out,
        "New-HnsSubnet -NetworkID {network_id} -Subnets @{{\"IpAddressPrefix\"=\"{}\";\"Routes\"=@(@{{\"NextHop\"=\"{}\";\"DestinationPrefix\"=\"0.0.0.0/0\"}});\"IpSubnets\"={}}}",
        subnet.prefix,
        subnet.gateway,
        ip_subnets(&subnet.ip_subnets)
    );
}

fn ip_subnets(list: &[IpSubnet]) -> String {
    let items: Vec<String> = list.iter().map(ip_subnet).collect();
    format!("@({})", items.join(","))
}

fn ip_subnet(i: &IpSubnet) -> String {
    format!(
        "@{{\"IpAddressPrefix\"=\"{}\";\"Flags\"={}}}",
        i.prefix,
        flag_value(i.flags)
    )
}

/// `0`, `[IPSubnetFlags]::EnableBroadcast`, or the flags joined with `-bor`.
fn flag_value(value: u8) -> String {
    if value == flags::NONE {
        return "0".to_string();
    }
    let names: Vec<String> = flags::names(value)
        .into_iter()
        .map(|n| format!("[IPSubnetFlags]::{n}"))
        .collect();
    if names.len() == 1 {
        names[0].clone()
    } else {
        format!("({})", names.join(" -bor "))
    }
}

/// Finds a network by name (and a subnet of it by prefix) in the commands that follow.
fn lookup(out: &mut String, network: &str, subnet: Option<&str>) {
    let _ = writeln!(
        out,
        "$net = Get-HnsNetwork | Where-Object {{ $_.Name -eq \"{network}\" }}"
    );
    if let Some(prefix) = subnet {
        let _ = writeln!(
            out,
            "$subnet = $net.Subnets | Where-Object {{ $_.IpAddressPrefix -eq \"{prefix}\" }}"
        );
    }
}

fn change_script(out: &mut String, change: &Change) {
    match change {
        Change::NetworkCreated { network, .. } => {
            out.push_str("$net = ");
            new_network(out, network);
            for subnet in network.subnets.iter().skip(1) {
                new_subnet(out, "$net.ID", subnet);
            }
        }
        Change::NetworkRemoved { network, .. } => {
            let _ = writeln!(
                out,
                "Get-HnsNetwork | Where-Object {{ $_.Name -eq \"{network}\" }} | Remove-HnsNetwork"
            );
        }
        Change::SubnetAdded {
            network, subnet, ..
        } => {
            lookup(out, network, None);
            new_subnet(out, "$net.ID", subnet);
        }
        Change::SubnetRemoved {
            network, subnet, ..
        } => {
            lookup(out, network, Some(&subnet.to_string()));
            out.push_str("Remove-HnsSubnet -NetworkID $net.ID -Subnets @{\"ID\"=$subnet.ID}\n");
        }
        Change::IpSubnetAdded {
            network,
            subnet,
            ip_subnet: i,
        } => {
            lookup(out, network, Some(&subnet.to_string()));
            let _ = writeln!(
                out,
                "New-HnsIPSubnet -NetworkID $net.ID -SubnetID $subnet.ID -IPSubnets {}",
                ip_subnet(i)
            );
        }
        Change::IpSubnetRemoved {
            network,
            subnet,
            ip_subnet: i,
        } => {
            lookup(out, network, Some(&subnet.to_string()));
            let _ = writeln!(
                out,
                "$ipSubnet = $subnet.IpSubnets | Where-Object {{ $_.IpAddressPrefix -eq \"{i}\" }}"
            );
            out.push_str(
                "Remove-HnsIpSubnet -NetworkID $net.ID -SubnetID $subnet.ID -IPSubnets @{\"ID\"=$ipSubnet.ID}\n",
            );
        }
    }
}

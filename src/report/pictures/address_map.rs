//! `address-map.svg`: each pool's address space as a grid of squares, from its first address
//! (top left) to its last (bottom right), coloured by the node (or, above [`NODE_COLOURS`]
//! nodes, the rack) that owns the addresses.
//!
//! A square is one IPAM block when the pool has at most [`MAX_CELLS`] blocks, else a run of
//! consecutive blocks (or, for a Spiderpool pool without blocks, of addresses) so that a pool
//! is never more than [`MAX_CELLS`] squares. A Calico square's owner is its blocks' affinity
//! (a block without affinity is hatched); a Spiderpool square's owner is the node of the pods
//! it holds. The square's fill rises from the bottom with its share of addresses handed out
//! (pods and tunnel addresses, as the pool table counts them); a black frame marks a square
//! with borrowed addresses (a pod on another node than the block's affinity) and a grey
//! corner one with reserved addresses (Windows reserves the first three and the last one).
//!
//! Invariants: at most [`MAX_POOLS`] pools and [`MAX_CELLS`] squares each; the same
//! snapshot gives the same bytes. This module does not decide ownership: it draws the
//! blocks, pods and nodes of the report.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;

use super::svg::{Anchor, INK, LINE, MUTED, Svg, TextStyle, shorten};
use crate::sim::snapshot::{BlockRow, NodeRow, PodRow, PoolRow};

/// Squares per pool at most.
pub const MAX_CELLS: u128 = 1024;
/// Pools drawn at most (the report's first ones).
pub const MAX_POOLS: usize = 8;
/// Up to this many nodes own blocks, colours are per node; above, per rack.
pub const NODE_COLOURS: usize = 12;
/// Distinct colours; owners beyond them repeat the palette (the tooltips name them).
const PALETTE: [&str; 12] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#ad494a",
];
const COLS: u128 = 32;

/// What one square of a pool's grid holds.
#[derive(Clone, Debug, Default)]
struct Square {
    /// Addresses of the pool in the square.
    size: u128,
    /// Addresses handed out, reserved, borrowed (held by a pod away from the affinity).
    allocated: u128,
    reserved: u128,
    borrowed: u128,
    /// Blocks (or, for Spiderpool, addresses handed out) per owner.
    owners: BTreeMap<String, u128>,
    /// Blocks in the square without affinity.
    unowned_blocks: u128,
    blocks: u128,
}

fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

fn host_count(net: &IpNet) -> u128 {
    let bits = u32::from(net.max_prefix_len() - net.prefix_len());
    1u128.checked_shl(bits).unwrap_or(u128::MAX)
}

/// Renders every pool's map (the first [`MAX_POOLS`]).
pub fn render(
    pools: &[PoolRow],
    blocks: &[BlockRow],
    pods: &[PodRow],
    nodes: &[NodeRow],
) -> String {
    // Owners: nodes while few own anything, else racks.
    let mut owning: Vec<&str> = blocks
        .iter()
        .filter_map(|b| b.affinity.as_deref())
        .collect();
    owning.extend(
        pods.iter()
            .filter(|p| p.ip.is_some())
            .filter_map(|p| p.node.as_deref()),
    );
    owning.sort_unstable();
    owning.dedup();
    let by_rack = owning.len() > NODE_COLOURS;
    let rack_of: BTreeMap<&str, &str> = nodes
        .iter()
        .map(|n| (n.name.as_str(), n.rack.as_str()))
        .collect();
    let owner_of = |node: &str| -> String {
        if by_rack {
            rack_of
                .get(node)
                .map_or_else(|| node.to_string(), |r| (*r).to_string())
        } else {
            node.to_string()
        }
    };
    // Colours in the node table's order, so the same node has the same colour in every pool.
    let mut colour_of: BTreeMap<String, &str> = BTreeMap::new();
    for n in nodes {
        let owner = owner_of(&n.name);
        let k = colour_of.len();
        colour_of.entry(owner).or_insert(PALETTE[k % PALETTE.len()]);
    }
    // Owners the node table does not list (a deleted node's blocks) after them, by name.
    for node in &owning {
        let k = colour_of.len();
        colour_of
            .entry(owner_of(node))
            .or_insert(PALETTE[k % PALETTE.len()]);
    }

    let shown: Vec<&PoolRow> = pools.iter().take(MAX_POOLS).collect();
    let mut panels = Vec::new();
    for pool in &shown {
        let net = pool.cidr.trunc();
        let capacity = host_count(&net);
        let block = pool
            .block_size
            .filter(|&b| b >= net.prefix_len() && b <= net.max_prefix_len())
            .map_or(1, |b| 1u128 << u32::from(net.max_prefix_len() - b));
        // A square is a power-of-two run of blocks (or addresses).
        let mut square = block;
        while capacity / square > MAX_CELLS {
            square = square.saturating_mul(2);
        }
        let cells = capacity.div_ceil(square).max(1);
        let mut grid: Vec<Square> = (0..cells)
            .map(|_| Square {
                size: square,
                ..Square::default()
            })
            .collect();
        let start = to_u128(net.network());
        let index = |ip: IpAddr| -> Option<usize> {
            let a = to_u128(ip);
            (net.contains(&ip)).then(|| usize::try_from((a - start) / square).ok())?
        };
        for b in blocks.iter().filter(|b| b.pool == pool.name) {
            let Some(i) = index(b.cidr.network()) else {
                continue;
            };
            let cell = &mut grid[i];
            cell.blocks += 1;
            cell.allocated += u128::from(b.allocated);
            cell.reserved += u128::from(b.reserved);
            match &b.affinity {
                Some(node) => *cell.owners.entry(owner_of(node)).or_default() += 1,
                None => cell.unowned_blocks += 1,
            }
        }
        let spiderpool = pool.block_size.is_none();
        for p in pods
            .iter()
            .filter(|p| p.pool.as_deref() == Some(pool.name.as_str()))
        {
            let Some(ip) = p.ip else {
                continue;
            };
            let Some(i) = index(ip) else {
                continue;
            };
            let cell = &mut grid[i];
            if spiderpool {
                cell.allocated += 1;
                if let Some(node) = &p.node {
                    *cell.owners.entry(owner_of(node)).or_default() += 1;
                }
            } else if p.borrowed {
                cell.borrowed += 1;
            }
        }
        panels.push((pool, net, square, block, grid));
    }

    // Layout: one panel per pool, stacked.
    let cell_px = |cells: usize| if cells <= 256 { 22.0 } else { 16.0 };
    let mut height = 60.0;
    for (.., grid) in &panels {
        let rows = (grid.len() as u128).div_ceil(COLS) as f64;
        height += 48.0 + rows * cell_px(grid.len()) + 16.0;
    }
    if pools.len() > MAX_POOLS {
        height += 20.0;
    }
    let legend_rows = colour_of.len().min(24).div_ceil(6) as f64;
    height += 30.0 + legend_rows * 20.0 + 30.0;
    let width = 20.0 + COLS as f64 * 22.0 + 40.0 + 60.0;
    let title = format!(
        "Address map: {}, coloured by owning {}",
        super::counted(pools.len(), "pool"),
        if by_rack { "rack" } else { "node" }
    );
    let mut svg = Svg::new(width.max(760.0), height, &title);
    svg.raw(
        "<defs><pattern id=\"podnet-unowned\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" \
         patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#ffffff\"/>\
         <line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#9aa5b1\" stroke-width=\"2\"/></pattern></defs>\n",
    );
    svg.text((20.0, 26.0), TextStyle::plain(16.0).bold(), &title);
    svg.text(
        (20.0, 44.0),
        TextStyle::plain(12.0).fill(MUTED),
        "first address top left; fill rises with the share handed out (tunnel addresses included, as in the pool table)",
    );
    let mut y = 60.0;
    for (pool, net, square, block, grid) in &panels {
        let px = cell_px(grid.len());
        let unit = if pool.block_size.is_none() {
            if *square == 1 {
                "one address".to_string()
            } else {
                format!("{square} addresses")
            }
        } else if square == block {
            format!("one /{} block", pool.block_size.unwrap_or(0))
        } else {
            format!(
                "{} /{} blocks",
                square / block,
                pool.block_size.unwrap_or(0)
            )
        };
        let borrowed: u128 = grid.iter().map(|c| c.borrowed).sum();
        svg.text(
            (20.0, y + 18.0),
            TextStyle::plain(13.0).bold(),
            &format!("pool {} {}", pool.name, net),
        );
        svg.text(
            (20.0, y + 34.0),
            TextStyle::plain(11.5).fill(MUTED),
            &format!(
                "a square is {unit}; {}, {} of {} addresses allocated, {} borrowed, {} reserved",
                super::counted(pool.blocks as usize, "block"),
                super::count(pool.allocated),
                super::count(pool.capacity),
                super::count(borrowed),
                super::count(pool.reserved)
            ),
        );
        let top = y + 44.0;
        for (i, c) in grid.iter().enumerate() {
            let (row, col) = (i as u128 / COLS, i as u128 % COLS);
            let (x, cy) = (20.0 + col as f64 * px, top + row as f64 * px);
            let first = start_of(net, i as u128 * square);
            let owner = c
                .owners
                .iter()
                .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                .map(|(o, _)| o.as_str());
            let mut tip = format!("{first}: ");
            if c.blocks == 0 && c.allocated == 0 {
                tip.push_str("free");
            } else {
                let owners: Vec<String> = c.owners.keys().take(4).cloned().collect();
                if !owners.is_empty() {
                    tip.push_str(&owners.join(", "));
                    if c.owners.len() > 4 {
                        tip.push_str(&format!(" and {} more", c.owners.len() - 4));
                    }
                } else {
                    tip.push_str("no affinity");
                }
                tip.push_str(&format!(", {} allocated", c.allocated));
                if c.borrowed > 0 {
                    tip.push_str(&format!(", {} borrowed", c.borrowed));
                }
                if c.reserved > 0 {
                    tip.push_str(&format!(", {} reserved", c.reserved));
                }
            }
            svg.group(&tip);
            let inner = px - 2.0;
            match owner {
                Some(o) => {
                    let colour = colour_of.get(o).copied().unwrap_or(MUTED);
                    svg.rect(
                        (x + 1.0, cy + 1.0, inner, inner),
                        2.0,
                        colour,
                        "none",
                        0.0,
                        "fill-opacity=\"0.3\"",
                    );
                    let share = (c.allocated as f64 / c.size as f64).clamp(0.0, 1.0);
                    if share > 0.0 {
                        let h = (inner * share).max(2.0);
                        svg.rect(
                            (x + 1.0, cy + 1.0 + inner - h, inner, h),
                            1.0,
                            colour,
                            "none",
                            0.0,
                            "",
                        );
                    }
                }
                None if c.unowned_blocks > 0 => {
                    svg.rect(
                        (x + 1.0, cy + 1.0, inner, inner),
                        2.0,
                        "url(#podnet-unowned)",
                        LINE,
                        0.8,
                        "",
                    );
                }
                None => svg.rect(
                    (x + 1.0, cy + 1.0, inner, inner),
                    2.0,
                    "#eef1f4",
                    "none",
                    0.0,
                    "",
                ),
            }
            if c.reserved > 0 {
                svg.raw(&format!(
                    "<path d=\"M{} {} h-7 l7 7 z\" fill=\"{MUTED}\"/>\n",
                    super::svg::num(x + 1.0 + inner),
                    super::svg::num(cy + 1.0)
                ));
            }
            if c.borrowed > 0 {
                svg.rect(
                    (x + 1.5, cy + 1.5, inner - 1.0, inner - 1.0),
                    2.0,
                    "none",
                    INK,
                    2.0,
                    "",
                );
            }
            svg.end();
        }
        let rows = (grid.len() as u128).div_ceil(COLS) as f64;
        y = top + rows * px + 16.0;
    }
    if pools.len() > MAX_POOLS {
        svg.text(
            (20.0, y + 10.0),
            TextStyle::plain(12.0).fill(MUTED),
            &format!(
                "{} more pools not drawn (report.json has them all)",
                pools.len() - MAX_POOLS
            ),
        );
        y += 20.0;
    }
    // Legend: owners, then the marks.
    let y = y + 14.0;
    for (k, (owner, colour)) in colour_of.iter().take(24).enumerate() {
        let (row, col) = (k / 6, k % 6);
        let (x, ly) = (20.0 + col as f64 * 124.0, y + row as f64 * 20.0);
        svg.rect((x, ly - 11.0, 14.0, 14.0), 2.0, colour, "none", 0.0, "");
        svg.text(
            (x + 19.0, ly + 1.0),
            TextStyle::plain(11.0),
            &shorten(owner, 15),
        );
    }
    let ly = y + legend_rows * 20.0 + 10.0;
    let small = TextStyle::plain(11.5).fill(MUTED);
    svg.rect((20.0, ly - 11.0, 14.0, 14.0), 2.0, "none", INK, 2.0, "");
    svg.text((40.0, ly + 1.0), small, "borrowed addresses");
    svg.rect(
        (180.0, ly - 11.0, 14.0, 14.0),
        2.0,
        "#eef1f4",
        "none",
        0.0,
        "",
    );
    svg.raw(&format!(
        "<path d=\"M194 {} h-7 l7 7 z\" fill=\"{MUTED}\"/>\n",
        super::svg::num(ly - 11.0)
    ));
    svg.text((200.0, ly + 1.0), small, "reserved addresses");
    svg.rect(
        (340.0, ly - 11.0, 14.0, 14.0),
        2.0,
        "url(#podnet-unowned)",
        LINE,
        0.8,
        "",
    );
    svg.text((360.0, ly + 1.0), small, "block without affinity");
    svg.rect(
        (520.0, ly - 11.0, 14.0, 14.0),
        2.0,
        "#eef1f4",
        "none",
        0.0,
        "",
    );
    svg.text((540.0, ly + 1.0), small.anchor(Anchor::Start), "free");
    svg.finish()
}

/// The address `offset` after the network's first.
fn start_of(net: &IpNet, offset: u128) -> String {
    let a = to_u128(net.network()).saturating_add(offset);
    match net {
        IpNet::V4(_) => std::net::Ipv4Addr::from(u32::try_from(a).unwrap_or(u32::MAX)).to_string(),
        IpNet::V6(_) => std::net::Ipv6Addr::from(a).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(name: &str, cidr: &str, block: Option<u8>, capacity: u128) -> PoolRow {
        PoolRow {
            name: name.to_string(),
            kind: if block.is_some() {
                "calico"
            } else {
                "spiderpool"
            },
            cidr: cidr.parse().expect("a prefix"),
            block_size: block,
            capacity,
            allocated: 11,
            reserved: 4,
            blocks: 2,
            free: capacity - 11,
            mtu: 1480,
        }
    }

    fn block(cidr: &str, affinity: Option<&str>, allocated: u32, reserved: u32) -> BlockRow {
        BlockRow {
            cidr: cidr.parse().expect("a prefix"),
            pool: "p".to_string(),
            affinity: affinity.map(str::to_string),
            allocated,
            reserved,
            capacity: 64,
            free: 64 - allocated - reserved,
        }
    }

    fn pod(node: &str, ip: &str, borrowed: bool) -> PodRow {
        PodRow {
            name: format!("web-{ip}"),
            namespace: "default".into(),
            workload: "web".into(),
            node: Some(node.into()),
            ip: Some(ip.parse().expect("an address")),
            pool: Some("p".into()),
            block: None,
            borrowed,
            status: crate::model::workload::PodStatus::Running,
            reason: None,
            key: crate::forwarding::PodKey(0),
        }
    }

    #[test]
    fn a_square_per_block_with_owner_borrowing_and_reservations() {
        // 10.0.0.0/24 in /26 blocks: four squares. Block 0 is n1's with one address borrowed
        // by a pod on n2; block 1 has no affinity and holds Windows' 4 reserved addresses;
        // blocks 2 and 3 are free.
        let pools = [pool("p", "10.0.0.0/24", Some(26), 256)];
        let blocks = [
            block("10.0.0.0/26", Some("n1"), 10, 0),
            block("10.0.0.64/26", None, 1, 4),
        ];
        let pods = [pod("n1", "10.0.0.1", false), pod("n2", "10.0.0.2", true)];
        let svg = render(&pools, &blocks, &pods, &[]);
        assert!(svg.contains("a square is one /26 block; 2 blocks, 11 of 256 addresses allocated, 1 borrowed, 4 reserved"));
        assert!(svg.contains("<title>10.0.0.0: n1, 10 allocated, 1 borrowed</title>"));
        assert!(svg.contains("<title>10.0.0.64: no affinity, 1 allocated, 4 reserved</title>"));
        assert!(svg.contains("<title>10.0.0.128: free</title>"));
        assert!(svg.contains("<title>10.0.0.192: free</title>"));
        assert!(!svg.contains("10.0.1.0:"));
        // n1's colour is the first of the palette; the unowned block is hatched.
        assert!(svg.contains(&format!(
            "fill=\"{}\" stroke=\"none\" stroke-width=\"0\" fill-opacity=\"0.3\"",
            PALETTE[0]
        )));
        assert_eq!(svg.matches("fill=\"url(#podnet-unowned)\"").count(), 1 + 1);
        assert_eq!(render(&pools, &blocks, &pods, &[]), svg);
    }

    #[test]
    fn a_large_pool_is_at_most_max_cells_squares() {
        // A /12 of /26 blocks has 2^14 blocks: squares of 16 blocks make 1,024.
        let pools = [pool("p", "10.0.0.0/12", Some(26), 1 << 20)];
        let blocks = [block("10.15.255.192/26", Some("n9"), 3, 0)];
        let svg = render(&pools, &blocks, &[], &[]);
        assert!(svg.contains("a square is 16 /26 blocks"));
        assert_eq!(svg.matches("<g>").count() as u128, MAX_CELLS);
        assert!(svg.contains("<title>10.15.252.0: n9, 3 allocated</title>"));
        // A Spiderpool pool without blocks: a square per address.
        let pools = [pool("s", "172.16.1.0/28", None, 16)];
        let mut p = pod("n1", "172.16.1.5", false);
        p.pool = Some("s".into());
        let svg = render(&pools, &[], &[p], &[]);
        assert!(svg.contains("a square is one address"));
        assert!(svg.contains("<title>172.16.1.5: n1, 1 allocated</title>"));
        assert_eq!(svg.matches("<g>").count(), 16);
    }
}

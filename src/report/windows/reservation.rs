//! The Windows reservation models compared (report.json `windows.reservation`): per pool and
//! per Windows node, the addresses of the Windows blocks held at the end of the run that no pod
//! can get, under the model in force (what the allocator actually reserved) and under each
//! model for the same blocks.
//!
//! The what-if counts follow the models' rules (REFERENCE §1.6, §3; `network.windowsReservation`):
//! `per-block` reserves 4 of every block of at least four addresses; `per-host` reserves N once
//! per Windows node holding a block, counted in the pool of its lowest block; `per-pool`
//! reserves N once per pool holding a Windows block, counted on the node of the pool's lowest
//! Windows block. N is `windowsReservedAddresses` (its default under `per-block`), capped at
//! the size of the block that would carry it. The allocator puts a micro-pool reservation in
//! the first block claimed, the what-if in the lowest: the totals agree, the attribution can
//! differ when blocks were claimed out of address order.
//!
//! Not here: the VXLAN tunnel address a `per-pool` Windows node takes as an ordinary
//! allocation (it is `allocated`, as on Linux, not reserved); blocks with no affinity.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ipam::calico::{BlockReport, CalicoIpam};
use crate::model::network::WindowsReservation;
use crate::report::sections::{Block, NODE_TABLE_LIMIT, Table, count};

/// What Calico's per-block rule reserves in a block of at least four addresses.
const RESERVED_PER_BLOCK: u64 = 4;

/// `report.json` `windows.reservation`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReservationSection {
    /// The model in force (`network.windowsReservation`).
    pub model: WindowsReservation,
    /// N of the micro-pool models (reserved once per host or per pool).
    pub addresses: u32,
    pub pools: Vec<WasteRow>,
    pub nodes: Vec<WasteRow>,
}

/// One pool or one Windows node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WasteRow {
    pub name: String,
    /// Windows blocks held (affine to a Windows node) at the end of the run.
    pub windows_blocks: u32,
    /// Addresses in those blocks.
    pub addresses: u64,
    /// Addresses the allocator reserved in them under the model in force.
    pub reserved: u64,
    /// What each model would reserve in the same blocks.
    pub per_block: u64,
    pub per_host: u64,
    pub per_pool: u64,
}

/// The comparison, when a Windows node holds a block or any Windows node exists.
pub fn build<'a>(
    ipam: &CalicoIpam,
    windows_nodes: impl Iterator<Item = &'a String>,
) -> ReservationSection {
    let reserve = ipam.windows_reservation();
    let n = u64::from(reserve.addresses);
    let mut nodes: BTreeMap<String, WasteRow> = windows_nodes
        .map(|name| {
            let row = WasteRow {
                name: name.clone(),
                ..WasteRow::default()
            };
            (name.clone(), row)
        })
        .collect();
    let mut pools: BTreeMap<String, WasteRow> = BTreeMap::new();
    // Blocks come in address order, so the first seen per node or pool is its lowest.
    let blocks: Vec<BlockReport> = ipam
        .blocks()
        .into_iter()
        .filter(|b| b.affinity.as_ref().is_some_and(|a| nodes.contains_key(a)))
        .collect();
    for b in &blocks {
        let Some(node) = b.affinity.as_ref().and_then(|a| nodes.get_mut(a)) else {
            continue;
        };
        let pool = pools.entry(b.pool.clone()).or_insert_with(|| WasteRow {
            name: b.pool.clone(),
            ..WasteRow::default()
        });
        let size = u64::from(b.capacity);
        let per_block = if size >= RESERVED_PER_BLOCK {
            RESERVED_PER_BLOCK
        } else {
            0
        };
        let carried = n.min(size);
        if node.windows_blocks == 0 {
            node.per_host = carried;
            pool.per_host += carried;
        }
        if pool.windows_blocks == 0 {
            pool.per_pool = carried;
            node.per_pool += carried;
        }
        for row in [&mut *node, &mut *pool] {
            row.windows_blocks += 1;
            row.addresses += size;
            row.reserved += u64::from(b.reserved);
            row.per_block += per_block;
        }
    }
    ReservationSection {
        model: reserve.model,
        addresses: reserve.addresses,
        pools: pools.into_values().collect(),
        nodes: nodes.into_values().collect(),
    }
}

/// The report blocks: one paragraph and one table (pools, then nodes).
pub fn blocks(r: &ReservationSection) -> Vec<Block> {
    let n = match r.model {
        WindowsReservation::PerBlock => "its first three and last address per block".to_string(),
        WindowsReservation::PerHost => format!("{} addresses once per Windows node", r.addresses),
        WindowsReservation::PerPool => format!("{} addresses once per pool", r.addresses),
    };
    let mut table = Table::new(&[
        ("pool / node", false),
        ("Windows blocks", true),
        ("addresses", true),
        ("reserved (in force)", true),
        ("per-block", true),
        ("per-host", true),
        ("per-pool", true),
    ]);
    let rows = r.pools.iter().map(|p| (format!("pool {}", p.name), p));
    let node_rows = r.nodes.iter().map(|p| (format!("node {}", p.name), p));
    for (name, w) in rows.chain(node_rows).take(NODE_TABLE_LIMIT) {
        table.push(vec![
            name,
            count(w.windows_blocks),
            count(w.addresses),
            count(w.reserved),
            count(w.per_block),
            count(w.per_host),
            count(w.per_pool),
        ]);
    }
    vec![
        Block::Subheading("Addresses each reservation model wastes".to_string()),
        Block::Paragraph(format!(
            "Reservation model in force: `{}` (network.windowsReservation), reserving {n}. For \
             the Windows blocks held at the end of the run, what it reserved and what each \
             model would reserve (per-host and per-pool with {} addresses, counted in the \
             lowest block).",
            r.model, r.addresses
        )),
        Block::Table(table),
    ]
}

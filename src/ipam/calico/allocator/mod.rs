//! The Calico IPAM state machine: pools, blocks, affinities, handles, and the operations
//! `AutoAssign`, `AssignIP`, `ReleaseByHandle`, node removal and kube-controllers' GC.
//!
//! Behaviour follows `libcalico-go/lib/ipam/ipam.go` (autoAssign, findOrClaimBlock, AssignIP,
//! releaseByHandle, ensureConsistentAffinity), `ipam_block_reader_writer.go` (findUsableBlock,
//! releaseBlockAffinity) and `kube-controllers/pkg/controllers/node/ipam.go`
//! (releaseUnusedBlocks); REFERENCE §1 gives the step-by-step account.
//!
//! Indexes, so that no operation scans every block of a pool: per pool, the unclaimed block
//! indices as ranges (the claim walk is one O(log n) lookup), the blocks with usable room
//! (the borrow walk) and the empty affine blocks (v3.32 reclaim); per node, its affine blocks;
//! a due-time queue of blocks with cooling addresses. Each block mutation goes through
//! `reindex`/`delete_block`, which keep those sets exact.
//!
//! It does not schedule anything: callers pass `now` and call `gc` when kube-controllers would.
//!
//! This file holds the state, its indexes and the configuration calls; the operations live
//! beside it: `assign.rs` (AutoAssign, AssignIP, tunnels, claiming and borrowing) and
//! `release.rs` (releases, node removal, GC and the index upkeep they share).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;

use ipnet::IpNet;
use smallvec::SmallVec;

use super::arena::{BlockId, Blocks};
use super::block::{
    Block, BlockKey, HandleId, ReservedSet, WindowsSlots, bits_ip, ip_bits, net_key,
};
use super::intern::Interner;
use super::pool::{AllowedUse, AssignmentMode, EncapMode, IpPool, IpReservation, IpamConfig};
use super::walk::start_index;
use super::{
    Allocation, AssignOutcome, AssignRequest, CalicoProfile, IpamChange, IpamError, IpamNode, Os,
    TunnelKind, Use,
};
use crate::ipam::ranges::RangeSet;
use crate::model::network::{WindowsReservation, WindowsReserve};
use crate::model::time::{SimDuration, SimTime};

mod assign;
mod release;

/// `ipam_block_reader_writer.go` EmptyBlockMinReclaimAge.
const EMPTY_BLOCK_MIN_RECLAIM_AGE: SimDuration = SimDuration::from_secs(60);
/// kube-controllers' default LeakGracePeriod, which also gates empty-block release.
const EMPTY_BLOCK_GRACE: SimDuration = SimDuration::from_secs(15 * 60);
/// `ipam.go` autoAssign: the limit used when neither request nor config sets one.
const DEFAULT_MAX_BLOCKS: u32 = 20;

/// A pool and its block indexes.
#[derive(Clone, Debug)]
pub(crate) struct PoolBlocks {
    pub(crate) pool: IpPool,
    /// `pool.name`, shared: requests list their candidate pools by it without copying it.
    name: Arc<str>,
    v6: bool,
    base: u128,
    /// Host bits of one block.
    host_bits: u32,
    /// log2 of the number of blocks; meaningless when `!usable`.
    log2: u8,
    /// The pool's block size fits its CIDR; otherwise it hands out nothing.
    usable: bool,
    /// Block indices with no block and not wholly reserved: where a claim may land.
    unclaimed: RangeSet,
    /// Existing non-Windows blocks with a usable free address: where borrowing may take.
    with_room: BTreeSet<u128>,
    /// Existing empty blocks with an affinity: what v3.32 reclaim may take over.
    empty: BTreeSet<u128>,
}

impl PoolBlocks {
    fn new(pool: IpPool) -> PoolBlocks {
        let net = pool.network();
        let (v6, base) = net_key(&net);
        let max = net.max_prefix_len();
        let usable = pool.block_size >= net.prefix_len() && pool.block_size <= max;
        let log2 = if usable {
            pool.block_size - net.prefix_len()
        } else {
            0
        };
        PoolBlocks {
            v6,
            base,
            host_bits: u32::from(max.saturating_sub(pool.block_size)),
            log2,
            usable,
            unclaimed: RangeSet::default(),
            with_room: BTreeSet::new(),
            empty: BTreeSet::new(),
            name: Arc::from(pool.name.as_str()),
            pool,
        }
    }

    fn block_cidr(&self, index: u128) -> IpNet {
        let ip = bits_ip(self.v6, self.base + (index << self.host_bits));
        IpNet::new(ip, self.pool.block_size).unwrap_or_else(|_| IpNet::from(ip))
    }

    /// The index of the block holding `key`, if that block is one of this pool's blocks.
    fn index_of(&self, cidr: &IpNet) -> Option<u128> {
        let (v6, bits) = net_key(cidr);
        (self.usable
            && v6 == self.v6
            && cidr.prefix_len() == self.pool.block_size
            && self.pool.network().contains(cidr))
        .then(|| (bits - self.base) >> self.host_bits)
    }

    fn last_bits(&self) -> u128 {
        let net = self.pool.network();
        ip_bits(net.broadcast()).1
    }
}

/// A node's affine blocks in key order, as arena ids: a node usually owns one or two, so
/// they are kept inline in the node's entry (no pointer to chase per request).
type AffineList = SmallVec<[BlockId; 4]>;

/// A node name's id in `CalicoIpam::node_names`, which also indexes `CalicoIpam::nodes`.
/// Ids are never reused, so an address keeps naming the node it was assigned on after that
/// node is deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct HostId(u32);

#[derive(Clone, Debug)]
struct NodeState {
    /// Shared so that each request can hold the node while the state is mutated, without
    /// copying its labels.
    node: Arc<IpamNode>,
    affine: AffineList,
    /// Addresses this node holds from blocks not affine to it.
    borrowed: BTreeSet<IpAddr>,
}

/// One address held by a handle.
#[derive(Clone, Copy, Debug)]
struct Held {
    ip: IpAddr,
    /// Valid while held: a block with a held address is never deleted.
    block: BlockId,
    /// The node the address was assigned on.
    node: HostId,
    borrowed: bool,
}

/// A handle's addresses in the order they were handed out: a pod holds one, kept inline.
type HeldList = SmallVec<[Held; 1]>;

/// What a handle holds; its name lives in `CalicoIpam::handle_names` under the same id.
#[derive(Clone, Debug, Default)]
struct HandleRecord {
    held: HeldList,
}

/// The node a request is made for: looked up once per request.
struct Requester {
    node: Arc<IpamNode>,
    id: HostId,
}

/// Buffers reused by every `AutoAssign`, so that a request allocates only what it returns.
#[derive(Clone, Debug, Default)]
struct Scratch {
    /// The candidate pools of the family being assigned.
    pools: Vec<Arc<str>>,
    /// The node's affine blocks usable for that family.
    affine: Vec<BlockId>,
    /// Ordinals just taken from one block.
    ordinals: Vec<u32>,
}

/// Calico's IPAM for one cluster.
#[derive(Clone, Debug)]
pub struct CalicoIpam {
    profile: CalicoProfile,
    config: IpamConfig,
    windows_use_single_network: bool,
    /// Which addresses Windows blocks reserve (`network.windowsReservation`).
    windows_reserve: WindowsReserve,
    pub(crate) pools: BTreeMap<String, PoolBlocks>,
    reservations: Vec<IpReservation>,
    reserved: ReservedSet,
    /// Every block, by arena id and in key order.
    pub(crate) blocks: Blocks,
    /// Every node name ever added; a name's id indexes `nodes`.
    node_names: Interner,
    /// By [`HostId`]; `None` once the node is deleted.
    nodes: Vec<Option<NodeState>>,
    /// Handle names; a handle's id indexes `handles`.
    handle_names: Interner,
    handles: Vec<HandleRecord>,
    /// (due, block): a block whose earliest cooling address frees strictly after `due`.
    cooling_due: BTreeSet<(SimTime, BlockKey)>,
    /// kube-controllers' blockReleaseTracker: when an empty affine block was first seen empty.
    empty_since: BTreeMap<BlockKey, SimTime>,
    changes: Vec<IpamChange>,
    scratch: Scratch,
}

/// What one family's autoAssign produced.
struct FamilyResult {
    allocations: Vec<Allocation>,
    messages: Vec<IpamError>,
    /// autoAssign returned an error (not just messages): stop before the next family.
    hard: bool,
    requested: u32,
}

impl CalicoIpam {
    /// An empty IPAM: no pools, no nodes; `windowsUseSingleNetwork` defaults to true.
    pub fn new(profile: CalicoProfile, config: IpamConfig) -> CalicoIpam {
        CalicoIpam {
            profile,
            config,
            windows_use_single_network: true,
            windows_reserve: WindowsReserve::default(),
            pools: BTreeMap::new(),
            reservations: Vec::new(),
            reserved: ReservedSet::default(),
            blocks: Blocks::default(),
            node_names: Interner::default(),
            nodes: Vec::new(),
            handle_names: Interner::default(),
            handles: Vec::new(),
            cooling_due: BTreeSet::new(),
            empty_since: BTreeMap::new(),
            changes: Vec::new(),
            scratch: Scratch::default(),
        }
    }

    pub fn profile(&self) -> CalicoProfile {
        self.profile
    }

    pub fn config(&self) -> &IpamConfig {
        &self.config
    }

    pub fn set_windows_use_single_network(&mut self, on: bool) {
        self.windows_use_single_network = on;
    }

    /// The Windows reservation model; blocks already created keep what they reserved.
    /// `per-host` reserves at least one address (the host's gateway/tunnel address).
    pub fn set_windows_reservation(&mut self, mut reserve: WindowsReserve) {
        if reserve.model == WindowsReservation::PerHost {
            reserve.addresses = reserve.addresses.max(1);
        }
        self.windows_reserve = reserve;
    }

    pub fn windows_reservation(&self) -> WindowsReserve {
        self.windows_reserve
    }

    /// The longest block prefix a Windows node can use: Calico's `getMaxPrefixLen` leaves
    /// /29 (/125) when four addresses of each block are reserved; the micro-pool models
    /// allow blocks of four addresses (REFERENCE §3), /30 (/126).
    pub fn windows_max_prefix(&self, v6: bool) -> u8 {
        let per_block = self.windows_reserve.model == WindowsReservation::PerBlock;
        match (v6, per_block) {
            (false, true) => 29,
            (false, false) => 30,
            (true, true) => 125,
            (true, false) => 126,
        }
    }

    /// Drains the changes since the last call, oldest first.
    pub fn take_changes(&mut self) -> Vec<IpamChange> {
        std::mem::take(&mut self.changes)
    }

    // ----- resources -------------------------------------------------------------------

    /// Adds or updates a node (labels or OS). Affinities are re-checked lazily, as Calico does.
    pub fn upsert_node(&mut self, node: IpamNode) {
        let id = self.node_names.intern(&node.name) as usize;
        if self.nodes.len() <= id {
            self.nodes.resize_with(id + 1, || None);
        }
        match &mut self.nodes[id] {
            Some(state) => state.node = Arc::new(node),
            slot @ None => {
                *slot = Some(NodeState {
                    node: Arc::new(node),
                    affine: AffineList::default(),
                    borrowed: BTreeSet::new(),
                });
            }
        }
    }

    /// Adds a pool, or updates one in place. `cidr` and `blockSize` are immutable
    /// (`clientv3/ippool.go`); changing them is refused with Calico's message.
    /// A changed nodeSelector releases the empty affine blocks of nodes it no longer selects.
    pub fn upsert_pool(&mut self, pool: IpPool) -> Result<(), IpamError> {
        if let Some(old) = self.pools.get(&pool.name) {
            if old.pool.network() != pool.network() {
                return Err(IpamError::PoolCidrImmutable);
            }
            if old.pool.block_size != pool.block_size {
                return Err(IpamError::PoolBlockSizeImmutable);
            }
            let selector_changed = old.pool.node_selector != pool.node_selector;
            if let Some(state) = self.pools.get_mut(&pool.name) {
                state.pool = pool.clone();
            }
            if selector_changed {
                let keys = self.block_keys_in(&pool.network());
                for key in keys {
                    self.ensure_consistent_affinity(key);
                }
            }
            return Ok(());
        }
        let name = pool.name.clone();
        let net = pool.network();
        self.pools.insert(name.clone(), PoolBlocks::new(pool));
        // Adopt blocks left behind by a deleted pool with the same geometry.
        for key in self.block_keys_in(&net) {
            let Some(state) = self.pools.get(&name) else {
                break;
            };
            let cidr = match self.blocks.get(&key) {
                Some(b) => b.cidr,
                None => continue,
            };
            if let Some(index) = state.index_of(&cidr)
                && let Some(b) = self.blocks.get_mut(&key)
            {
                b.pool = Arc::clone(&state.name);
                b.index = index;
            }
        }
        self.rebuild_pool_indexes(&name);
        Ok(())
    }

    /// Deletes a pool as `clientv3/ippool.go` Delete does: disable it, release every affinity
    /// of its blocks (empty ones are deleted), then remove it. Non-empty blocks stay, without
    /// affinity and without pool, until their last address is released.
    pub fn remove_pool(&mut self, name: &str) {
        let Some(state) = self.pools.get_mut(name) else {
            return;
        };
        state.pool.disabled = true;
        let net = state.pool.network();
        for key in self.block_keys_in(&net) {
            let in_pool = self.blocks.get(&key).is_some_and(|b| *b.pool == *name);
            if in_pool {
                self.release_affinity(key);
            }
        }
        self.pools.remove(name);
    }

    /// The names of the pools, in name order.
    pub fn pool_names(&self) -> Vec<String> {
        self.pools.keys().cloned().collect()
    }

    pub fn pool(&self, name: &str) -> Option<&IpPool> {
        self.pools.get(name).map(|s| &s.pool)
    }

    pub fn set_config(&mut self, config: IpamConfig) {
        self.config = config;
        // Due times depend on the cooldown: recompute them.
        let keys: Vec<BlockKey> = self.cooling_due.iter().map(|&(_, k)| k).collect();
        self.cooling_due.clear();
        for key in keys {
            self.requeue_cooling(key);
        }
    }

    /// Replaces the IPReservations. Existing allocations are not evicted.
    pub fn set_reservations(&mut self, reservations: Vec<IpReservation>) {
        let cidrs = reservations
            .iter()
            .flat_map(|r| r.reserved_cidrs.iter().copied())
            .collect();
        self.reservations = reservations;
        self.reserved = ReservedSet::new(cidrs);
        let keys: Vec<BlockKey> = self.blocks.keys().copied().collect();
        for key in &keys {
            if let Some(b) = self.blocks.get_mut(key) {
                b.set_reservations(&self.reserved);
            }
        }
        let names: Vec<String> = self.pools.keys().cloned().collect();
        for name in names {
            self.rebuild_pool_indexes(&name);
        }
    }

    pub fn reservations(&self) -> &[IpReservation] {
        &self.reservations
    }

    // ----- AutoAssign ------------------------------------------------------------------

    // ----- AssignIP and tunnels --------------------------------------------------------

    // ----- release ---------------------------------------------------------------------

    // ----- internals -------------------------------------------------------------------

    fn node_id(&self, name: &str) -> Option<HostId> {
        self.node_names.get(name).map(HostId)
    }

    /// The state of the node named `name`, if it exists.
    fn node_state(&self, name: &str) -> Option<&NodeState> {
        let id = self.node_names.get(name)?;
        self.nodes[id as usize].as_ref()
    }

    /// The pool named `name` when its block size fits its CIDR (an unusable pool has no
    /// blocks to claim or borrow from).
    fn usable_pool(&self, name: &str) -> Option<&PoolBlocks> {
        self.pools.get(name).filter(|state| state.usable)
    }

    fn node_state_mut(&mut self, name: &str) -> Option<&mut NodeState> {
        let id = self.node_names.get(name)?;
        self.nodes[id as usize].as_mut()
    }

    fn handle_id(&self, handle: &str) -> Option<HandleId> {
        self.handle_names.get(handle).map(HandleId)
    }

    fn intern(&mut self, handle: &str) -> HandleId {
        let id = self.handle_names.intern(handle);
        if self.handles.len() < self.handle_names.len() {
            self.handles.push(HandleRecord::default());
        }
        HandleId(id)
    }

    // ----- read access for `query` -----------------------------------------------------

    pub(crate) fn handle_name(&self, id: HandleId) -> Option<&str> {
        ((id.0 as usize) < self.handle_names.len()).then(|| self.handle_names.name(id.0))
    }

    /// Keys of `node`'s affine blocks, in key order.
    pub(crate) fn node_affine(&self, node: &str) -> Vec<BlockKey> {
        self.node_state(node)
            .map(|s| s.affine.iter().map(|&b| self.blocks.at(b).key()).collect())
            .unwrap_or_default()
    }

    pub(crate) fn node_borrowed(&self, node: &str) -> Vec<IpAddr> {
        self.node_state(node)
            .map(|s| s.borrowed.iter().copied().collect())
            .unwrap_or_default()
    }

    pub(crate) fn holder(&self, id: HandleId, ip: IpAddr) -> Option<(String, bool)> {
        self.handles
            .get(id.0 as usize)?
            .held
            .iter()
            .find(|h| h.ip == ip)
            .map(|h| (self.node_names.name(h.node.0).to_string(), h.borrowed))
    }

    /// The addresses `handle` holds, in the order they were handed out.
    pub fn allocations_of(&self, handle: &str) -> Vec<Allocation> {
        let Some(id) = self.handle_id(handle) else {
            return Vec::new();
        };
        let Some(rec) = self.handles.get(id.0 as usize) else {
            return Vec::new();
        };
        rec.held
            .iter()
            .map(|h| {
                let b = self.blocks.at(h.block);
                Allocation {
                    ip: h.ip,
                    block: b.cidr,
                    pool: String::from(&*b.pool),
                    borrowed: h.borrowed,
                }
            })
            .collect()
    }
}

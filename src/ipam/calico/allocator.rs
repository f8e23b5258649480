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

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;

use ipnet::IpNet;
use smallvec::SmallVec;

use super::arena::{BlockId, Blocks};
use super::block::{Block, BlockKey, HandleId, ReservedSet, bits_ip, ip_bits, net_key};
use super::intern::Interner;
use super::pool::{AllowedUse, AssignmentMode, EncapMode, IpPool, IpReservation, IpamConfig};
use super::walk::start_index;
use super::{
    Allocation, AssignOutcome, AssignRequest, IpamChange, IpamNode, Os, Profile, TunnelKind, Use,
    messages,
};
use crate::ipam::ranges::RangeSet;
use crate::model::time::{SimDuration, SimTime};

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
    profile: Profile,
    config: IpamConfig,
    windows_use_single_network: bool,
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
    messages: Vec<String>,
    /// autoAssign returned an error (not just messages): stop before the next family.
    hard: bool,
    requested: u32,
}

impl CalicoIpam {
    /// An empty IPAM: no pools, no nodes; `windowsUseSingleNetwork` defaults to true.
    pub fn new(profile: Profile, config: IpamConfig) -> CalicoIpam {
        CalicoIpam {
            profile,
            config,
            windows_use_single_network: true,
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

    pub fn profile(&self) -> Profile {
        self.profile
    }

    pub fn config(&self) -> &IpamConfig {
        &self.config
    }

    pub fn set_windows_use_single_network(&mut self, on: bool) {
        self.windows_use_single_network = on;
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
    pub fn upsert_pool(&mut self, pool: IpPool) -> Result<(), String> {
        if let Some(old) = self.pools.get(&pool.name) {
            if old.pool.network() != pool.network() {
                return Err("IPPool CIDR cannot be modified".into());
            }
            if old.pool.block_size != pool.block_size {
                return Err("IPPool BlockSize cannot be modified".into());
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

    /// Calico's `AutoAssign` (`ipam.go`): IPv4 first, then IPv6 unless IPv4 returned an error.
    pub fn auto_assign(&mut self, now: SimTime, req: &AssignRequest) -> AssignOutcome {
        self.expire_cooling(now);
        let who = self.node_id(&req.node).and_then(|id| {
            let state = self.nodes[id.0 as usize].as_ref()?;
            Some(Requester {
                node: Arc::clone(&state.node),
                id,
            })
        });
        let Some(who) = who else {
            return AssignOutcome::failed(messages::unknown_node(&req.node));
        };
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut outcome = AssignOutcome::default();
        let mut errors: Vec<String> = Vec::new();
        for (v6, num) in [(false, req.num_v4), (true, req.num_v6)] {
            if num == 0 {
                continue;
            }
            let r = self.auto_assign_family(now, req, &who, v6, num, &mut scratch);
            let short = (r.allocations.len() as u32) < r.requested;
            if outcome.allocations.is_empty() {
                outcome.allocations = r.allocations;
            } else {
                outcome.allocations.extend(r.allocations);
            }
            if r.hard || short {
                if r.messages.is_empty() {
                    errors.push(format!(
                        "Assigned {} out of {} requested IPv{} addresses",
                        outcome.allocations.len(),
                        r.requested,
                        if v6 { 6 } else { 4 }
                    ));
                } else {
                    errors.push(r.messages.join("; "));
                }
            }
            if r.hard {
                break;
            }
        }
        self.scratch = scratch;
        if !errors.is_empty() {
            outcome.error = Some(errors.join("; "));
        }
        outcome
    }

    fn auto_assign_family(
        &mut self,
        now: SimTime,
        req: &AssignRequest,
        who: &Requester,
        v6: bool,
        num: u32,
        scratch: &mut Scratch,
    ) -> FamilyResult {
        let mut result = FamilyResult {
            allocations: Vec::with_capacity(num.min(64) as usize),
            messages: Vec::new(),
            hard: false,
            requested: num,
        };
        let hard = |mut r: FamilyResult, msg: String| {
            r.messages.push(msg);
            r.hard = true;
            r
        };
        let node = &*who.node;
        let windows = node.os == Os::Windows;
        // `ipam.go` GetIPAMConfig refuses Windows hosts without strict affinity.
        if windows && !self.config.strict_affinity {
            return hard(result, messages::WINDOWS_STRICT_AFFINITY.into());
        }
        let allowed = &mut scratch.pools;
        if let Err(msg) = self.candidate_pools(req, node, v6, allowed) {
            return hard(result, msg);
        }
        let allowed: &[Arc<str>] = allowed;
        let strict = self.config.strict_affinity;

        // Affine blocks usable for this request, in order; release stale empty ones.
        let affine_allowed = &mut scratch.affine;
        self.prepare_affine_blocks(who.id, node, v6, allowed, affine_allowed);
        let affine_allowed: &[BlockId] = affine_allowed;
        let ordinals = &mut scratch.ordinals;
        let mut owned = affine_allowed.len() as u32;
        let mut limit = req.max_blocks_per_host;
        if windows && self.windows_use_single_network {
            limit = 1;
        }
        let global = self.config.max_blocks_per_host;
        if global > 0 && (limit == 0 || limit > global) {
            limit = global;
        }
        if limit == 0 {
            limit = DEFAULT_MAX_BLOCKS;
        }

        // The handle is interned on the first block taken from, as before any address is held.
        let mut handle = None;
        let mut next_affine = 0usize;
        while (result.allocations.len() as u32) < num {
            let allow_new_claim = owned < limit;
            // findOrClaimBlock: existing affine blocks first, each visited once.
            let mut chosen = None;
            while next_affine < affine_allowed.len() {
                let id = affine_allowed[next_affine];
                next_affine += 1;
                if self.blocks.at(id).usable_free() >= 1 {
                    chosen = Some(id);
                    break;
                }
            }
            let block = match chosen {
                Some(id) => id,
                None => {
                    if !allow_new_claim {
                        return hard(result, messages::block_limit(limit));
                    }
                    if !self.config.auto_allocate_blocks {
                        return hard(result, messages::FAILED_TO_FIND_OR_CLAIM.into());
                    }
                    match self.find_usable_block(now, node, allowed) {
                        Some(id) => {
                            owned += 1;
                            let claimed = self.blocks.at(id);
                            let free = claimed.usable_free();
                            if free == 0 {
                                let cidr = claimed.cidr.to_string();
                                return hard(
                                    result,
                                    messages::claimed_block_too_small(&cidr, free),
                                );
                            }
                            id
                        }
                        None => {
                            if strict {
                                result
                                    .messages
                                    .push(messages::STRICT_NO_FREE_BLOCKS.to_string());
                            }
                            break;
                        }
                    }
                }
            };
            let rem = num - result.allocations.len() as u32;
            let id = *handle.get_or_insert_with(|| self.intern(&req.handle));
            self.take_from_block(block, rem, id, who.id, ordinals, &mut result.allocations);
        }

        // Borrowing: walk every allowed pool's existing blocks in claim order.
        let mut rem = num - result.allocations.len() as u32;
        if !strict && rem > 0 {
            let mut exhausted: Vec<String> = Vec::new();
            for pool_name in allowed {
                let Some(state) = self.pools.get(&**pool_name) else {
                    continue;
                };
                if !state.usable {
                    continue;
                }
                let start = start_index(&node.name, state.log2);
                let cidr_text = state.pool.network().to_string();
                let mut cursor = start;
                let mut wrapped = false;
                while rem > 0 {
                    let next = self.pools.get(&**pool_name).and_then(|s| {
                        if wrapped {
                            s.with_room.range(cursor..start).next().copied()
                        } else {
                            s.with_room.range(cursor..).next().copied()
                        }
                    });
                    let Some(index) = next else {
                        if wrapped || start == 0 {
                            exhausted.push(cidr_text.clone());
                            break;
                        }
                        wrapped = true;
                        cursor = 0;
                        continue;
                    };
                    let key = match self.pools.get(&**pool_name) {
                        Some(s) => net_key(&s.block_cidr(index)),
                        None => break,
                    };
                    let Some(block) = self.blocks.id_of(&key) else {
                        break;
                    };
                    let id = *handle.get_or_insert_with(|| self.intern(&req.handle));
                    let before = result.allocations.len();
                    self.take_from_block(block, rem, id, who.id, ordinals, &mut result.allocations);
                    rem -= (result.allocations.len() - before) as u32;
                    match index.checked_add(1) {
                        Some(c) => cursor = c,
                        None if !wrapped && start != 0 => {
                            wrapped = true;
                            cursor = 0;
                        }
                        None => {
                            if rem > 0 {
                                exhausted.push(cidr_text.clone());
                            }
                            break;
                        }
                    }
                }
            }
            if !exhausted.is_empty() {
                result.messages.push(messages::pools_exhausted(&exhausted));
            }
        }
        result
    }

    /// `determinePools` plus the use filter of prepareAffinityBlocksForHost: the names of the
    /// pools to use, in order, written to `allowed` (cleared first).
    fn candidate_pools(
        &self,
        req: &AssignRequest,
        node: &IpamNode,
        v6: bool,
        allowed: &mut Vec<Arc<str>>,
    ) -> Result<(), String> {
        allowed.clear();
        let max_prefix = match (node.os, v6) {
            // getMaxPrefixLen: 4 reserved addresses leave blocks of at most /29 (/125).
            (Os::Windows, false) => 29,
            (Os::Windows, true) => 125,
            (Os::Linux, false) => 32,
            (Os::Linux, true) => 128,
        };
        // Enabled pools of the family whose blocks fit the node.
        let qualified = |s: &&PoolBlocks| {
            s.v6 == v6 && !s.pool.disabled && s.usable && s.pool.block_size <= max_prefix
        };
        if !self.pools.values().any(|s| qualified(&s)) {
            return Err(messages::NO_QUALIFIED_POOL.into());
        }
        for entry in req.pools.iter().flatten() {
            // ResolvePools: a CIDR is taken as written, otherwise it must name a pool.
            let cidr = match entry.parse::<IpNet>() {
                Ok(net) => net.trunc(),
                Err(_) => match self.pools.get(entry) {
                    Some(s) => s.pool.network(),
                    None => return Err(messages::unresolvable_pool(entry)),
                },
            };
            if matches!(cidr, IpNet::V6(_)) != v6 {
                continue;
            }
            match self
                .pools
                .values()
                .filter(qualified)
                .find(|s| s.pool.network() == cidr)
            {
                Some(s) => allowed.push(Arc::clone(&s.name)),
                None => return Err(messages::pool_not_enabled(&cidr.to_string())),
            }
        }
        let use_ = req.use_.allowed();
        if allowed.is_empty() {
            // Calico's loop here runs over all enabled pools; SPEC §3.2 makes pools whose
            // blocks are too small for Windows unusable, so the qualified list is used.
            // The use filter is applied in the same pass.
            let mut matching = false;
            for s in self
                .pools
                .values()
                .filter(qualified)
                .filter(|s| s.pool.assignment_mode == AssignmentMode::Automatic)
                .filter(|s| s.pool.node_selector.matches(&node.labels))
                .filter(|s| s.pool.namespace_selector.matches(&req.namespace_labels))
            {
                matching = true;
                if s.pool.allows(use_) {
                    allowed.push(Arc::clone(&s.name));
                }
            }
            if !matching {
                return Err(messages::no_pools_for_node(&node.name));
            }
        } else {
            allowed.retain(|n| self.pools.get(&**n).is_some_and(|s| s.pool.allows(use_)));
        }
        if allowed.is_empty() {
            return Err(messages::no_pool_for_use(use_.as_str()));
        }
        Ok(())
    }

    /// The node's affine blocks in `allowed` pools, in order, written to `usable` (cleared
    /// first); empty affine blocks of enabled pools that no longer select the node are
    /// released on the way (`ipam.go`).
    fn prepare_affine_blocks(
        &mut self,
        node_id: HostId,
        node: &IpamNode,
        v6: bool,
        allowed: &[Arc<str>],
        usable: &mut Vec<BlockId>,
    ) {
        usable.clear();
        let Some(state) = &self.nodes[node_id.0 as usize] else {
            return;
        };
        // Releasing one block changes nothing the test of another reads, so the stale ones
        // are collected first and released afterwards, in the same order.
        let mut stale: Vec<BlockKey> = Vec::new();
        for &id in state.affine.iter() {
            let block = self.blocks.at(id);
            let key = block.key();
            if key.0 != v6 {
                continue;
            }
            // Pointer equality first: the block usually shares its pool's name.
            if allowed
                .iter()
                .any(|p| Arc::ptr_eq(p, &block.pool) || **p == *block.pool)
            {
                usable.push(id);
                continue;
            }
            let pool = self
                .pools
                .get(&*block.pool)
                .filter(|s| !s.pool.disabled && s.index_of(&block.cidr).is_some());
            if let Some(pool) = pool
                && !pool.pool.node_selector.matches(&node.labels)
                && block.is_empty()
            {
                stale.push(key);
            }
        }
        for key in stale {
            self.release_affinity(key);
        }
    }

    /// `findUsableBlock`: the first unclaimed block in the pools' walk order, else (v3.32+)
    /// another node's block that has been empty for a minute. The block is claimed for `node`.
    fn find_usable_block(
        &mut self,
        now: SimTime,
        node: &IpamNode,
        allowed: &[Arc<str>],
    ) -> Option<BlockId> {
        for name in allowed {
            let Some(state) = self.pools.get(&**name) else {
                continue;
            };
            if !state.usable {
                continue;
            }
            let start = start_index(&node.name, state.log2);
            if let Some(index) = state.unclaimed.next_wrapping(start) {
                return self.claim_block(now, name, index, node);
            }
        }
        if !self.profile.reclaims_empty_blocks() {
            return None;
        }
        for name in allowed {
            let Some(state) = self.pools.get(&**name) else {
                continue;
            };
            if !state.usable {
                continue;
            }
            let start = start_index(&node.name, state.log2);
            let ordered = state
                .empty
                .range(start..)
                .chain(state.empty.range(..start))
                .copied();
            let mut found = None;
            for index in ordered {
                let key = net_key(&state.block_cidr(index));
                let Some(b) = self.blocks.get(&key) else {
                    continue;
                };
                let young = now.saturating_since(b.claim_time) < EMPTY_BLOCK_MIN_RECLAIM_AGE;
                if young || b.affinity.as_deref() == Some(node.name.as_str()) {
                    continue;
                }
                found = Some((index, key));
                break;
            }
            if let Some((index, key)) = found {
                self.release_affinity(key);
                return self.claim_block(now, name, index, node);
            }
        }
        None
    }

    // ----- AssignIP and tunnels --------------------------------------------------------

    /// Calico's `AssignIP` for the `cni.projectcalico.org/ipAddrs` annotation: the address
    /// must be in an enabled pool; its block is claimed for `node` if it does not exist yet.
    /// Neither the block limit nor IPReservations apply (Calico checks neither here).
    pub fn assign_ip(
        &mut self,
        now: SimTime,
        handle: &str,
        node: &str,
        ip: IpAddr,
    ) -> AssignOutcome {
        self.expire_cooling(now);
        let Some((node, node_id)) = self
            .node_id(node)
            .and_then(|id| Some((Arc::clone(&self.nodes[id.0 as usize].as_ref()?.node), id)))
        else {
            return AssignOutcome::failed(messages::unknown_node(node));
        };
        if node.os == Os::Windows && !self.config.strict_affinity {
            return AssignOutcome::failed(messages::WINDOWS_STRICT_AFFINITY.into());
        }
        let (v6, _) = ip_bits(ip);
        let pool = self
            .pools
            .values()
            .find(|s| s.v6 == v6 && !s.pool.disabled && s.pool.network().contains(&ip));
        let Some(pool) = pool else {
            return AssignOutcome::failed(messages::NOT_IN_POOL.into());
        };
        if !pool.pool.allows(AllowedUse::Workload) {
            let uses: Vec<&str> = pool.pool.allowed_uses.iter().map(|u| u.as_str()).collect();
            return AssignOutcome::failed(messages::use_not_allowed(
                &ip.to_string(),
                &pool.pool.name,
                AllowedUse::Workload.as_str(),
                &uses.join(" "),
            ));
        }
        if !pool.usable {
            return AssignOutcome::failed(messages::NOT_IN_POOL.into());
        }
        let pool_name = pool.pool.name.clone();
        let block_cidr = IpNet::new(ip, pool.pool.block_size)
            .map(|n| n.trunc())
            .unwrap_or_else(|_| IpNet::from(ip));
        let index = pool.index_of(&block_cidr);
        let key = net_key(&block_cidr);
        if !self.blocks.contains_key(&key) {
            let Some(index) = index else {
                return AssignOutcome::failed(messages::NOT_IN_POOL.into());
            };
            self.claim_block(now, &pool_name, index, &node);
        }
        let Some(block) = self.blocks.get(&key) else {
            return AssignOutcome::failed(messages::NOT_IN_POOL.into());
        };
        if self.config.strict_affinity {
            match &block.affinity {
                Some(a) if a != &node.name => {
                    return AssignOutcome::failed(messages::AFFINITY_MISMATCH.into());
                }
                None => {
                    return AssignOutcome::failed(messages::no_affinity(&block.cidr.to_string()));
                }
                _ => {}
            }
        }
        let Some(ordinal) = block.ip_ordinal(ip) else {
            return AssignOutcome::failed(messages::NOT_IN_POOL.into());
        };
        let Some(block_id) = self.blocks.id_of(&key) else {
            return AssignOutcome::failed(messages::NOT_IN_POOL.into());
        };
        let handle_id = self.intern(handle);
        if !self
            .blocks
            .at_mut(block_id)
            .take_ordinal(ordinal, handle_id)
        {
            return AssignOutcome::failed(messages::already_assigned(&ip.to_string()));
        }
        let mut allocations = Vec::with_capacity(1);
        self.record(block_id, &[ordinal], handle_id, node_id, &mut allocations);
        self.reindex(key);
        AssignOutcome {
            allocations,
            error: None,
        }
    }

    /// calico-node's tunnel addresses (`node/pkg/allocateip`): one per kind for which an
    /// enabled pool selecting the node has the encapsulation on. A Linux node gets a Tunnel-use
    /// address (usually ordinal 0 of its first block); a Windows node gets a block and uses
    /// its reserved ordinal 1, so nothing extra is allocated. Idempotent; a kind no longer
    /// needed has its address released.
    pub fn assign_tunnel(&mut self, now: SimTime, node: &str) -> Vec<(TunnelKind, AssignOutcome)> {
        self.expire_cooling(now);
        let Some(node_info) = self.node_state(node).map(|s| Arc::clone(&s.node)) else {
            return vec![(
                TunnelKind::Ipip,
                AssignOutcome::failed(messages::unknown_node(node)),
            )];
        };
        let mut out = Vec::new();
        for kind in [TunnelKind::Ipip, TunnelKind::Vxlan, TunnelKind::VxlanV6] {
            let pools: Vec<String> = self
                .pools
                .values()
                .filter(|s| s.pool.allows(AllowedUse::Tunnel))
                .filter(|s| s.pool.node_selector.matches(&node_info.labels))
                .filter(|s| !s.pool.disabled)
                .filter(|s| match kind {
                    TunnelKind::Ipip => !s.v6 && s.pool.ipip_mode != EncapMode::Never,
                    TunnelKind::Vxlan => !s.v6 && s.pool.vxlan_mode != EncapMode::Never,
                    TunnelKind::VxlanV6 => s.v6 && s.pool.vxlan_mode != EncapMode::Never,
                })
                .map(|s| s.pool.name.clone())
                .collect();
            let handle = kind.handle(node);
            if pools.is_empty() {
                self.release(now, &handle);
                continue;
            }
            if node_info.os == Os::Windows {
                out.push((kind, self.windows_tunnel(now, &node_info, &pools)));
                continue;
            }
            // Keep an existing address that is still inside one of the pools.
            let existing: Vec<Allocation> = self.allocations_of(&handle);
            if let Some(a) = existing.first()
                && pools.contains(&a.pool)
            {
                out.push((
                    kind,
                    AssignOutcome {
                        allocations: existing,
                        error: None,
                    },
                ));
                continue;
            }
            self.release(now, &handle);
            let v6 = kind == TunnelKind::VxlanV6;
            let req = AssignRequest {
                handle,
                node: node.to_string(),
                namespace: String::new(),
                namespace_labels: Default::default(),
                use_: Use::Tunnel,
                pools: Some(pools),
                num_v4: u32::from(!v6),
                num_v6: u32::from(v6),
                max_blocks_per_host: 0,
            };
            out.push((kind, self.auto_assign(now, &req)));
        }
        out
    }

    /// A Windows node's tunnel address: reserved ordinal 1 of its first affine block in
    /// `pools`, claiming a block first if it has none (Calico's EnsureBlock).
    fn windows_tunnel(&mut self, now: SimTime, node: &IpamNode, pools: &[String]) -> AssignOutcome {
        if !self.config.strict_affinity {
            return AssignOutcome::failed(messages::WINDOWS_STRICT_AFFINITY.into());
        }
        let usable: Vec<Arc<str>> = pools
            .iter()
            .filter_map(|p| self.pools.get(p))
            .filter(|s| s.pool.block_size <= 29)
            .map(|s| Arc::clone(&s.name))
            .collect();
        if usable.is_empty() {
            return AssignOutcome::failed(messages::NO_QUALIFIED_POOL.into());
        }
        let existing = self.node_state(&node.name).and_then(|s| {
            s.affine
                .iter()
                .find(|&&id| {
                    let b = self.blocks.at(id);
                    usable.iter().any(|p| **p == *b.pool)
                })
                .copied()
        });
        let id = match existing {
            Some(id) => id,
            None => match self.find_usable_block(now, node, &usable) {
                Some(id) => id,
                None => {
                    return AssignOutcome::failed(messages::STRICT_NO_FREE_BLOCKS.into());
                }
            },
        };
        let b = self.blocks.at(id);
        AssignOutcome {
            allocations: vec![Allocation {
                ip: b.ordinal_ip(1),
                block: b.cidr,
                pool: String::from(&*b.pool),
                borrowed: false,
            }],
            error: None,
        }
    }

    // ----- release ---------------------------------------------------------------------

    /// `ReleaseByHandle`: every address of `handle` returns to its block (into cooldown on
    /// v3.33 with `ipCooldownSeconds` > 0). An empty block with no affinity is deleted, and a
    /// block whose pool no longer selects its node loses that affinity if now empty.
    /// Returns the addresses released.
    pub fn release(&mut self, now: SimTime, handle: &str) -> Vec<IpAddr> {
        self.expire_cooling(now);
        let Some(id) = self.handle_id(handle) else {
            return Vec::new();
        };
        let held = match self.handles.get_mut(id.0 as usize) {
            Some(rec) => std::mem::take(&mut rec.held),
            None => return Vec::new(),
        };
        let cooldown = (self.profile.has_ip_cooldown()
            && self.config.ip_cooldown > SimDuration::ZERO)
            .then_some(self.config.ip_cooldown);
        let mut by_block: BTreeMap<BlockKey, Vec<u32>> = BTreeMap::new();
        let mut released = Vec::new();
        for h in held.iter() {
            if h.borrowed {
                if let Some(n) = &mut self.nodes[h.node.0 as usize] {
                    n.borrowed.remove(&h.ip);
                }
                self.changes.push(IpamChange::BorrowReleased {
                    node: self.node_names.name(h.node.0).to_string(),
                    ip: h.ip,
                });
            }
            let block = self.blocks.at(h.block);
            if let Some(o) = block.ip_ordinal(h.ip) {
                by_block.entry(block.key()).or_default().push(o);
                released.push(h.ip);
            }
        }
        for (key, ordinals) in by_block {
            let Some(block) = self.blocks.get_mut(&key) else {
                continue;
            };
            block.release(&ordinals, now, cooldown);
            if block.is_empty() && block.affinity.is_none() {
                self.delete_block(key);
                continue;
            }
            self.requeue_cooling(key);
            self.reindex(key);
            self.ensure_consistent_affinity(key);
        }
        released
    }

    /// kube-controllers' handling of a deleted node: its tunnel addresses are released and
    /// every affinity is released — empty blocks are deleted, the others stay with no
    /// affinity until emptied. Pods' addresses are the caller's to release.
    pub fn release_node(&mut self, now: SimTime, node: &str) {
        for kind in [TunnelKind::Ipip, TunnelKind::Vxlan, TunnelKind::VxlanV6] {
            self.release(now, &kind.handle(node));
        }
        for key in self.node_affine(node) {
            self.release_affinity(key);
        }
        if let Some(id) = self.node_id(node) {
            self.nodes[id.0 as usize] = None;
        }
    }

    /// Periodic work: cooled addresses become free, empty blocks with no affinity are deleted,
    /// and kube-controllers' releaseUnusedBlocks runs: an affine block found empty on two
    /// checks more than 15 minutes apart is released, unless it is its node's only block.
    pub fn gc(&mut self, now: SimTime) {
        self.expire_cooling(now);
        let keys: Vec<BlockKey> = self.blocks.keys().copied().collect();
        for key in keys {
            let Some(block) = self.blocks.get(&key) else {
                continue;
            };
            let empty = block.is_empty();
            let Some(owner) = block.affinity.clone() else {
                if empty {
                    self.delete_block(key);
                }
                continue;
            };
            if !empty {
                self.empty_since.remove(&key);
                continue;
            }
            let node_blocks = self.node_state(&owner).map_or(0, |s| s.affine.len());
            if node_blocks <= 1 {
                continue;
            }
            match self.empty_since.get(&key) {
                None => {
                    self.empty_since.insert(key, now);
                }
                Some(&first) if now.saturating_since(first) > EMPTY_BLOCK_GRACE => {
                    self.release_affinity(key);
                }
                Some(_) => {}
            }
        }
    }

    // ----- internals -------------------------------------------------------------------

    fn node_id(&self, name: &str) -> Option<HostId> {
        self.node_names.get(name).map(HostId)
    }

    /// The state of the node named `name`, if it exists.
    fn node_state(&self, name: &str) -> Option<&NodeState> {
        let id = self.node_names.get(name)?;
        self.nodes[id as usize].as_ref()
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

    /// Takes up to `num` addresses from one block for handle `id` on `node`, appending them
    /// to `out`; `ordinals` is a reused buffer.
    fn take_from_block(
        &mut self,
        block: BlockId,
        num: u32,
        id: HandleId,
        node: HostId,
        ordinals: &mut Vec<u32>,
        out: &mut Vec<Allocation>,
    ) {
        ordinals.clear();
        let b = self.blocks.at_mut(block);
        let was_empty = b.is_empty();
        b.take_into(num, id, ordinals);
        // A block that was already in use and still has room keeps its place in every index
        // (with_room, empty, empty_since), so the usual allocation skips `reindex`.
        let unchanged = !was_empty && b.usable_free() > 0;
        let key = b.key();
        self.record(block, ordinals, id, node, out);
        if !unchanged {
            self.reindex(key);
        }
    }

    /// Records newly held ordinals under the handle, appends them to `out`, and emits
    /// Borrowed changes.
    fn record(
        &mut self,
        block_id: BlockId,
        ordinals: &[u32],
        id: HandleId,
        node: HostId,
        out: &mut Vec<Allocation>,
    ) {
        let block = self.blocks.at(block_id);
        let node_name = self.node_names.name(node.0);
        let borrowed = block.affinity.as_deref() != Some(node_name);
        for &o in ordinals {
            let ip = block.ordinal_ip(o);
            if let Some(rec) = self.handles.get_mut(id.0 as usize) {
                rec.held.push(Held {
                    ip,
                    block: block_id,
                    node,
                    borrowed,
                });
            }
            if borrowed {
                if let Some(n) = &mut self.nodes[node.0 as usize] {
                    n.borrowed.insert(ip);
                }
                self.changes.push(IpamChange::Borrowed {
                    node: String::from(node_name),
                    ip,
                    block: block.cidr,
                });
            }
            out.push(Allocation {
                ip,
                block: block.cidr,
                // `String::from`, not `to_string`: the latter goes through `Display`.
                pool: String::from(&*block.pool),
                borrowed,
            });
        }
    }

    /// Creates block `index` of `pool` with affinity to `node` (`claimAffineBlock`).
    fn claim_block(
        &mut self,
        now: SimTime,
        pool: &str,
        index: u128,
        node: &IpamNode,
    ) -> Option<BlockId> {
        let state = self.pools.get_mut(pool)?;
        let cidr = state.block_cidr(index);
        state.unclaimed.remove(index);
        let block = Block::new(
            cidr,
            Arc::clone(&state.name),
            index,
            Some(node.name.clone()),
            now,
            node.os == Os::Windows,
            &self.reserved,
        );
        let key = block.key();
        let id = self.blocks.insert(block);
        let owner = self.node_id(&node.name);
        if let Some(n) = owner.and_then(|o| self.nodes[o.0 as usize].as_mut()) {
            let blocks = &self.blocks;
            let at = n
                .affine
                .as_slice()
                .partition_point(|&b| blocks.at(b).key() < key);
            n.affine.insert(at, id);
        }
        self.changes.push(IpamChange::BlockClaimed {
            node: node.name.clone(),
            block: cidr,
        });
        self.reindex(key);
        Some(id)
    }

    /// Drops `block` from `owner`'s affine list.
    fn forget_affine(&mut self, owner: &str, block: BlockId) {
        if let Some(n) = self.node_state_mut(owner)
            && let Some(at) = n.affine.iter().position(|&b| b == block)
        {
            n.affine.remove(at);
        }
    }

    /// `releaseBlockAffinity` without the emptiness requirement: an empty block is deleted,
    /// any other keeps its addresses and loses its affinity.
    fn release_affinity(&mut self, key: BlockKey) {
        let Some(id) = self.blocks.id_of(&key) else {
            return;
        };
        let block = self.blocks.at_mut(id);
        let Some(owner) = block.affinity.take() else {
            return;
        };
        let cidr = block.cidr;
        let empty = block.is_empty();
        self.forget_affine(&owner, id);
        self.empty_since.remove(&key);
        self.changes.push(IpamChange::BlockAffinityReleased {
            node: owner,
            block: cidr,
        });
        if empty {
            self.delete_block(key);
        } else {
            self.reindex(key);
        }
    }

    /// `ensureConsistentAffinity`: if the block's (enabled) pool no longer selects its node and
    /// the block is empty, release the affinity.
    fn ensure_consistent_affinity(&mut self, key: BlockKey) {
        let Some(block) = self.blocks.get(&key) else {
            return;
        };
        let Some(owner) = block.affinity.as_ref() else {
            return;
        };
        let Some(node) = self.node_state(owner) else {
            return;
        };
        let pool = self
            .pools
            .values()
            .find(|s| !s.pool.disabled && s.pool.network().contains(&block.cidr));
        let Some(pool) = pool else {
            return;
        };
        if !pool.pool.node_selector.matches(&node.node.labels) && block.is_empty() {
            self.release_affinity(key);
        }
    }

    /// Removes a block and gives its index back to the claim walk.
    fn delete_block(&mut self, key: BlockKey) {
        let Some((id, block)) = self.blocks.remove(&key) else {
            return;
        };
        if let Some(owner) = &block.affinity {
            self.forget_affine(owner, id);
        }
        self.empty_since.remove(&key);
        if let Some(state) = self.pools.get_mut(&*block.pool)
            && let Some(index) = state.index_of(&block.cidr)
        {
            state.with_room.remove(&index);
            state.empty.remove(&index);
            if !self.reserved.matches_whole(&block.cidr) {
                state.unclaimed.insert(index);
            }
        }
        self.changes
            .push(IpamChange::BlockDeleted { block: block.cidr });
    }

    /// Brings the pool's with_room / empty sets in line with one block's state.
    fn reindex(&mut self, key: BlockKey) {
        let Some(block) = self.blocks.get(&key) else {
            return;
        };
        let Some(state) = self.pools.get_mut(&*block.pool) else {
            return;
        };
        let Some(index) = state.index_of(&block.cidr) else {
            return;
        };
        if !block.windows && block.usable_free() > 0 {
            state.with_room.insert(index);
        } else {
            state.with_room.remove(&index);
        }
        if block.is_empty() && block.usable_free() > 0 && block.affinity.is_some() {
            state.empty.insert(index);
        } else {
            state.empty.remove(&index);
        }
        if !block.is_empty() {
            self.empty_since.remove(&key);
        }
    }

    fn requeue_cooling(&mut self, key: BlockKey) {
        let cd = self.config.ip_cooldown;
        if let Some(due) = self.blocks.get(&key).and_then(|b| b.next_cooling_due(cd)) {
            self.cooling_due.insert((due, key));
        }
    }

    /// The next instant after `now` at which addresses become available by the passage of
    /// time alone: a cooling address becomes free (v3.33; its cooldown ends strictly before
    /// that instant, one nanosecond after its due time), or another node's empty block turns
    /// one minute old and may be reclaimed (v3.32+). `None` when neither is waiting. Nothing
    /// else happens at that instant, so the engine retries Pending pods then.
    pub fn next_timed_release(&self, now: SimTime) -> Option<SimTime> {
        let cooled = self
            .cooling_due
            .iter()
            .map(|&(due, _)| due + SimDuration::from_nanos(1))
            .find(|&at| at > now);
        let reclaimable = if self.profile.reclaims_empty_blocks() {
            self.pools
                .values()
                .flat_map(|state| state.empty.iter().map(|&i| state.block_cidr(i)))
                .filter_map(|cidr| self.blocks.get(&net_key(&cidr)))
                .map(|b| b.claim_time + EMPTY_BLOCK_MIN_RECLAIM_AGE)
                .filter(|&at| at > now)
                .min()
        } else {
            None
        };
        cooled.into_iter().chain(reclaimable).min()
    }

    /// Frees every cooling address whose cooldown ended strictly before `now`.
    fn expire_cooling(&mut self, now: SimTime) {
        let cd = self.config.ip_cooldown;
        while let Some(&(due, key)) = self.cooling_due.iter().next() {
            if due >= now {
                break;
            }
            self.cooling_due.remove(&(due, key));
            let changed = self
                .blocks
                .get_mut(&key)
                .is_some_and(|b| b.expire_cooling(now, cd));
            if changed {
                self.requeue_cooling(key);
                self.reindex(key);
            }
        }
    }

    /// Keys of existing blocks whose network lies inside `net`.
    fn block_keys_in(&self, net: &IpNet) -> Vec<BlockKey> {
        let lo = net_key(net);
        let hi = (lo.0, ip_bits(net.broadcast()).1);
        self.blocks.range(lo..=hi).map(|(k, _)| *k).collect()
    }

    /// Recomputes a pool's unclaimed ranges and block sets from scratch.
    fn rebuild_pool_indexes(&mut self, name: &str) {
        let Some(state) = self.pools.get(name) else {
            return;
        };
        if !state.usable {
            return;
        }
        let last = 1u128
            .checked_shl(state.log2.into())
            .map_or(u128::MAX, |n| n - 1);
        let mut unclaimed = RangeSet::from_range(0, last);
        let net = state.pool.network();
        let keys = self.block_keys_in(&net);
        for key in &keys {
            if let Some(b) = self.blocks.get(key) {
                match state.index_of(&b.cidr) {
                    Some(i) => unclaimed.remove(i),
                    None => {
                        // A misaligned leftover block: keep claims off the range it covers.
                        let (_, lo) = net_key(&b.cidr);
                        let hi = ip_bits(b.cidr.broadcast()).1.min(state.last_bits());
                        let lo = lo.max(state.base);
                        unclaimed.remove_range(
                            (lo - state.base) >> state.host_bits,
                            (hi - state.base) >> state.host_bits,
                        );
                    }
                }
            }
        }
        for r in self.reserved.cidrs() {
            if matches!(r, IpNet::V6(_)) != state.v6 {
                continue;
            }
            if r.prefix_len() <= state.pool.block_size {
                // Covers whole blocks: clip to the pool and drop those indices.
                let (_, rlo) = net_key(r);
                let rhi = ip_bits(r.broadcast()).1;
                let lo = rlo.max(state.base);
                let hi = rhi.min(state.last_bits());
                if lo <= hi {
                    unclaimed.remove_range(
                        (lo - state.base) >> state.host_bits,
                        (hi - state.base) >> state.host_bits,
                    );
                }
            } else if net.contains(r) {
                let index = (net_key(r).1 - state.base) >> state.host_bits;
                if self.reserved.matches_whole(&state.block_cidr(index)) {
                    unclaimed.remove(index);
                }
            }
        }
        if let Some(state) = self.pools.get_mut(name) {
            state.unclaimed = unclaimed;
            state.with_room.clear();
            state.empty.clear();
        }
        for key in keys {
            self.reindex(key);
        }
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

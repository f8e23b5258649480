//! Assigning addresses, as Calico's `AutoAssign` and `AssignIP` do: the candidate pools of a
//! request, the node's affine blocks with room, claiming a new block (strict affinity) or
//! borrowing from another node's, tunnel addresses and Windows' own rules, and recording
//! each allocation under its handle.

use super::*;

impl CalicoIpam {
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
            return AssignOutcome::failed(IpamError::UnknownNode {
                node: req.node.clone(),
            });
        };
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut outcome = AssignOutcome::default();
        let mut errors: Vec<IpamError> = Vec::new();
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
                errors.extend(IpamError::joined(r.messages).or(Some(IpamError::Shortfall {
                    assigned: outcome.allocations.len(),
                    requested: r.requested,
                    v6,
                })));
            }
            if r.hard {
                break;
            }
        }
        self.scratch = scratch;
        outcome.error = IpamError::joined(errors);
        outcome
    }

    pub(super) fn auto_assign_family(
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
        let hard = |mut r: FamilyResult, msg: IpamError| {
            r.messages.push(msg);
            r.hard = true;
            r
        };
        let node = &*who.node;
        let windows = node.os == Os::Windows;
        // `ipam.go` GetIPAMConfig refuses Windows hosts without strict affinity.
        if windows && !self.config.strict_affinity {
            return hard(result, IpamError::WindowsStrictAffinity);
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
                        return hard(result, IpamError::BlockLimit { limit });
                    }
                    if !self.config.auto_allocate_blocks {
                        return hard(result, IpamError::FailedToFindOrClaim);
                    }
                    match self.find_usable_block(now, node, allowed) {
                        Some(id) => {
                            owned += 1;
                            let claimed = self.blocks.at(id);
                            let free = claimed.usable_free();
                            if free == 0 {
                                let block = claimed.cidr;
                                return hard(
                                    result,
                                    IpamError::ClaimedBlockTooSmall { block, free },
                                );
                            }
                            id
                        }
                        None => {
                            if strict {
                                result.messages.push(IpamError::StrictNoFreeBlocks);
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
            let mut exhausted: Vec<IpNet> = Vec::new();
            for pool_name in allowed {
                let Some(state) = self.usable_pool(pool_name) else {
                    continue;
                };
                let start = start_index(&node.name, state.log2);
                let network = state.pool.network();
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
                            exhausted.push(network);
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
                                exhausted.push(network);
                            }
                            break;
                        }
                    }
                }
            }
            if !exhausted.is_empty() {
                result
                    .messages
                    .push(IpamError::PoolsExhausted { pools: exhausted });
            }
        }
        result
    }

    /// `determinePools` plus the use filter of prepareAffinityBlocksForHost: the names of the
    /// pools to use, in order, written to `allowed` (cleared first).
    pub(super) fn candidate_pools(
        &self,
        req: &AssignRequest,
        node: &IpamNode,
        v6: bool,
        allowed: &mut Vec<Arc<str>>,
    ) -> Result<(), IpamError> {
        allowed.clear();
        let max_prefix = match (node.os, v6) {
            (Os::Windows, v6) => self.windows_max_prefix(v6),
            (Os::Linux, false) => 32,
            (Os::Linux, true) => 128,
        };
        // Enabled pools of the family whose blocks fit the node.
        let qualified = |s: &&PoolBlocks| {
            s.v6 == v6 && !s.pool.disabled && s.usable && s.pool.block_size <= max_prefix
        };
        if !self.pools.values().any(|s| qualified(&s)) {
            return Err(IpamError::NoQualifiedPool);
        }
        for entry in req.pools.iter().flatten() {
            // ResolvePools: a CIDR is taken as written, otherwise it must name a pool.
            let cidr = match entry.parse::<IpNet>() {
                Ok(net) => net.trunc(),
                Err(_) => match self.pools.get(entry) {
                    Some(s) => s.pool.network(),
                    None => {
                        return Err(IpamError::UnresolvablePool {
                            name: entry.clone(),
                        });
                    }
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
                None => return Err(IpamError::PoolNotEnabled { cidr }),
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
                return Err(IpamError::NoPoolsForNode {
                    node: node.name.clone(),
                });
            }
        } else {
            allowed.retain(|n| self.pools.get(&**n).is_some_and(|s| s.pool.allows(use_)));
        }
        if allowed.is_empty() {
            return Err(IpamError::NoPoolForUse { use_ });
        }
        Ok(())
    }

    /// The node's affine blocks in `allowed` pools, in order, written to `usable` (cleared
    /// first); empty affine blocks of enabled pools that no longer select the node are
    /// released on the way (`ipam.go`).
    pub(super) fn prepare_affine_blocks(
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
    pub(super) fn find_usable_block(
        &mut self,
        now: SimTime,
        node: &IpamNode,
        allowed: &[Arc<str>],
    ) -> Option<BlockId> {
        for name in allowed {
            let Some(state) = self.usable_pool(name) else {
                continue;
            };
            let start = start_index(&node.name, state.log2);
            if let Some(index) = state.unclaimed.next_wrapping(start) {
                return self.claim_block(now, name, index, node);
            }
        }
        if !self.profile.reclaims_empty_blocks() {
            return None;
        }
        for name in allowed {
            let Some(state) = self.usable_pool(name) else {
                continue;
            };
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
            return AssignOutcome::failed(IpamError::UnknownNode {
                node: node.to_string(),
            });
        };
        if node.os == Os::Windows && !self.config.strict_affinity {
            return AssignOutcome::failed(IpamError::WindowsStrictAffinity);
        }
        let (v6, _) = ip_bits(ip);
        let pool = self
            .pools
            .values()
            .find(|s| s.v6 == v6 && !s.pool.disabled && s.pool.network().contains(&ip));
        let Some(pool) = pool else {
            return AssignOutcome::failed(IpamError::NotInPool);
        };
        if !pool.pool.allows(AllowedUse::Workload) {
            return AssignOutcome::failed(IpamError::UseNotAllowed {
                ip,
                pool: pool.pool.name.clone(),
                use_: AllowedUse::Workload,
                allowed: pool.pool.allowed_uses.to_vec(),
            });
        }
        if !pool.usable {
            return AssignOutcome::failed(IpamError::NotInPool);
        }
        let pool_name = pool.pool.name.clone();
        let block_cidr = IpNet::new(ip, pool.pool.block_size)
            .map(|n| n.trunc())
            .unwrap_or_else(|_| IpNet::from(ip));
        let index = pool.index_of(&block_cidr);
        let key = net_key(&block_cidr);
        if !self.blocks.contains_key(&key) {
            let Some(index) = index else {
                return AssignOutcome::failed(IpamError::NotInPool);
            };
            self.claim_block(now, &pool_name, index, &node);
        }
        let Some(block) = self.blocks.get(&key) else {
            return AssignOutcome::failed(IpamError::NotInPool);
        };
        if self.config.strict_affinity {
            match &block.affinity {
                Some(a) if a != &node.name => {
                    return AssignOutcome::failed(IpamError::AffinityMismatch);
                }
                None => {
                    return AssignOutcome::failed(IpamError::NoAffinity { block: block.cidr });
                }
                _ => {}
            }
        }
        let Some(ordinal) = block.ip_ordinal(ip) else {
            return AssignOutcome::failed(IpamError::NotInPool);
        };
        let Some(block_id) = self.blocks.id_of(&key) else {
            return AssignOutcome::failed(IpamError::NotInPool);
        };
        let handle_id = self.intern(handle);
        if !self
            .blocks
            .at_mut(block_id)
            .take_ordinal(ordinal, handle_id)
        {
            return AssignOutcome::failed(IpamError::AlreadyAssigned { ip });
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
    /// a reserved ordinal of it (ordinal 1 per block, the first reserved per host), so nothing
    /// extra is allocated — except under the per-pool model, where no address is reserved per
    /// host and a Windows node gets a Tunnel-use address as a Linux node does. Idempotent; a
    /// kind no longer needed has its address released.
    pub fn assign_tunnel(&mut self, now: SimTime, node: &str) -> Vec<(TunnelKind, AssignOutcome)> {
        self.expire_cooling(now);
        let Some(node_info) = self.node_state(node).map(|s| Arc::clone(&s.node)) else {
            return vec![(
                TunnelKind::Ipip,
                AssignOutcome::failed(IpamError::UnknownNode {
                    node: node.to_string(),
                }),
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
            let per_pool = self.windows_reserve.model == WindowsReservation::PerPool;
            if node_info.os == Os::Windows && !per_pool {
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
    /// `pools`, claiming a block first if it has none (Calico's EnsureBlock). Under the
    /// per-host model it is ordinal 0 of the affine block carrying the host's reservation.
    pub(super) fn windows_tunnel(
        &mut self,
        now: SimTime,
        node: &IpamNode,
        pools: &[String],
    ) -> AssignOutcome {
        if !self.config.strict_affinity {
            return AssignOutcome::failed(IpamError::WindowsStrictAffinity);
        }
        let usable: Vec<Arc<str>> = pools
            .iter()
            .filter_map(|p| self.pools.get(p))
            .filter(|s| s.pool.block_size <= self.windows_max_prefix(s.v6))
            .map(|s| Arc::clone(&s.name))
            .collect();
        let per_host = self.windows_reserve.model == WindowsReservation::PerHost;
        if usable.is_empty() {
            return AssignOutcome::failed(IpamError::NoQualifiedPool);
        }
        let existing = self.node_state(&node.name).and_then(|s| {
            s.affine
                .iter()
                .find(|&&id| {
                    let b = self.blocks.at(id);
                    // Per host the tunnel is the host's reservation, in whichever pool it is.
                    if per_host {
                        b.windows_reserved() > 0
                    } else {
                        usable.iter().any(|p| **p == *b.pool)
                    }
                })
                .copied()
        });
        let id = match existing {
            Some(id) => id,
            None => match self.find_usable_block(now, node, &usable) {
                Some(id) => id,
                None => {
                    return AssignOutcome::failed(IpamError::StrictNoFreeBlocks);
                }
            },
        };
        let b = self.blocks.at(id);
        let ordinal = if per_host { 0 } else { 1 };
        AssignOutcome {
            allocations: vec![Allocation {
                ip: b.ordinal_ip(ordinal),
                block: b.cidr,
                pool: String::from(&*b.pool),
                borrowed: false,
            }],
            error: None,
        }
    }

    /// Takes up to `num` addresses from one block for handle `id` on `node`, appending them
    /// to `out`; `ordinals` is a reused buffer.
    pub(super) fn take_from_block(
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
    pub(super) fn record(
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
    pub(super) fn claim_block(
        &mut self,
        now: SimTime,
        pool: &str,
        index: u128,
        node: &IpamNode,
    ) -> Option<BlockId> {
        let windows = (node.os == Os::Windows).then(|| self.windows_slots(pool, &node.name));
        let state = self.pools.get_mut(pool)?;
        let cidr = state.block_cidr(index);
        state.unclaimed.remove(index);
        let block = Block::new(
            cidr,
            Arc::clone(&state.name),
            index,
            Some(node.name.clone()),
            now,
            windows,
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
}

impl CalicoIpam {
    /// What the block Windows node `node` is about to claim in `pool` reserves: Calico's four
    /// per block; or, under a micro-pool model, the reserved count when no block carries the
    /// host's (per-host: none of its affine blocks reserves) or the pool's (per-pool: none of
    /// the pool's blocks reserves) reservation yet, else nothing.
    fn windows_slots(&self, pool: &str, node: &str) -> WindowsSlots {
        let n = self.windows_reserve.addresses;
        let carried = match self.windows_reserve.model {
            WindowsReservation::PerBlock => return WindowsSlots::Calico,
            WindowsReservation::PerHost => self.node_state(node).is_some_and(|s| {
                s.affine
                    .iter()
                    .any(|&id| self.blocks.at(id).windows_reserved() > 0)
            }),
            WindowsReservation::PerPool => self
                .blocks
                .values()
                .any(|b| *b.pool == *pool && b.windows_reserved() > 0),
        };
        WindowsSlots::First(if carried { 0 } else { n })
    }
}

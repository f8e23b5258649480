//! Giving addresses and blocks back: releases by handle and by node, garbage collection of
//! empty blocks (affinity released after the grace period, Windows blocks cooling before
//! reuse), and the pool indexes rebuilt when a pool changes.

use super::*;

impl CalicoIpam {
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
            // The owner is borrowed, not copied: a check visits every block.
            let Some(owner) = block.affinity.as_deref() else {
                if empty {
                    self.delete_block(key);
                }
                continue;
            };
            if !empty {
                self.empty_since.remove(&key);
                continue;
            }
            let node_blocks = self.node_state(owner).map_or(0, |s| s.affine.len());
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

    /// Drops `block` from `owner`'s affine list.
    pub(super) fn forget_affine(&mut self, owner: &str, block: BlockId) {
        if let Some(n) = self.node_state_mut(owner)
            && let Some(at) = n.affine.iter().position(|&b| b == block)
        {
            n.affine.remove(at);
        }
    }

    /// `releaseBlockAffinity` without the emptiness requirement: an empty block is deleted,
    /// any other keeps its addresses and loses its affinity.
    pub(super) fn release_affinity(&mut self, key: BlockKey) {
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
    pub(super) fn ensure_consistent_affinity(&mut self, key: BlockKey) {
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
    pub(super) fn delete_block(&mut self, key: BlockKey) {
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
    pub(super) fn reindex(&mut self, key: BlockKey) {
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

    pub(super) fn requeue_cooling(&mut self, key: BlockKey) {
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
    pub(super) fn expire_cooling(&mut self, now: SimTime) {
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
    pub(super) fn block_keys_in(&self, net: &IpNet) -> Vec<BlockKey> {
        let lo = net_key(net);
        let hi = (lo.0, ip_bits(net.broadcast()).1);
        self.blocks.range(lo..=hi).map(|(k, _)| *k).collect()
    }

    /// Recomputes a pool's unclaimed ranges and block sets from scratch.
    pub(super) fn rebuild_pool_indexes(&mut self, name: &str) {
        let Some(state) = self.usable_pool(name) else {
            return;
        };
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
}

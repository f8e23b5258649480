//! Spiderpool IPAM (REFERENCE.md §2, SPEC.md §3.3): `SpiderIPPool`s with explicit address
//! lists, `SpiderReservedIP`s, and the allocation walk of `pkg/ipam` and `pkg/ippoolmanager`.
//!
//! A request resolves candidate pools from the first source that exists (pod annotation
//! `ipam.spidernet.io/ippools`, then `ipam.spidernet.io/ippool`, the namespace's default pools,
//! then `default: true` pools), refuses duplicate or unknown names, filters the pools in
//! Spiderpool's order, sorts the survivors by affinity priority and takes the lowest free
//! address of the first pool that has one. Failures are `SpiderError`s carrying Spiderpool's
//! own wording (the text after `failed to allocate IP addresses in standard mode: ` in a real
//! CNI error); they are outcomes for the caller, which keeps the pod Pending with that reason.
//!
//! Invariants:
//! - an address is held by at most one pod, and only addresses in `ips − excludeIPs −
//!   SpiderReservedIPs` are handed out;
//! - each pool keeps its free addresses as ranges, so taking the lowest free address and giving
//!   one back are O(log n) in the number of free ranges, never a scan of the pool;
//! - every iteration is over ordered maps, so the same calls give the same answers.
//!
//! Not modelled: SpiderSubnet auto-pools, wildcard pool names, CNI-config default pools,
//! `multusName`, NICs other than the first, routes, `MaxAllocatedIPs`, IP conflict detection.
//! Spiderpool allocates a StatefulSet pod's kept address back only while its pool is still
//! among the pod's candidates; podnet does the same, for all families at once.

mod error;
mod pool;
mod select;

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

use crate::ipam::ranges::RangeSet;

pub use error::{Shortfall, SpiderError};
pub use pool::{
    IpFamily, IpRange, PoolProblem, Severity, SpiderIpPool, SpiderReservedIp, parse_ip_ranges,
    parse_subnet, validate,
};
pub use select::{
    ANNO_NS_DEFAULT_V4, ANNO_NS_DEFAULT_V6, ANNO_POD_IPPOOL, ANNO_POD_IPPOOLS, CandidateSource,
    DEFAULT_NIC,
};

use pool::{ip_to_u128, ranges_to_set, u128_to_ip};
use select::{PodView, PoolView};

/// A pod's identity for IPAM: namespace and name (a StatefulSet pod keeps its name).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodHandle {
    pub namespace: String,
    pub name: String,
}

impl PodHandle {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> PodHandle {
        PodHandle {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for PodHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Everything about a pod that Spiderpool's pool selection reads.
#[derive(Clone, Copy, Debug)]
pub struct SpiderRequest<'a> {
    pub pod: &'a PodHandle,
    pub pod_labels: &'a BTreeMap<String, String>,
    pub pod_annotations: &'a BTreeMap<String, String>,
    pub namespace_labels: &'a BTreeMap<String, String>,
    pub namespace_annotations: &'a BTreeMap<String, String>,
    pub node_name: &'a str,
    pub node_labels: &'a BTreeMap<String, String>,
    /// Whether the pod belongs to a StatefulSet (its address may be kept across restarts).
    pub stateful: bool,
}

/// One address handed to a pod, with what the pod's interface is configured from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpiderAllocation {
    pub ip: IpAddr,
    pub pool: String,
    pub gateway: Option<IpAddr>,
    pub subnet: IpNet,
}

/// A successful allocation: one address per requested family (IPv4 first), never empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpiderAssignment {
    pub allocations: Vec<SpiderAllocation>,
    /// Things the user should know, e.g. a priority tie Spiderpool would break at random.
    pub warnings: Vec<String>,
    /// True when the pod got back an address it already held (a retry, or a StatefulSet pod
    /// recreated under the same name).
    pub reused: bool,
}

/// A pool's numbers for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolUsage {
    /// Addresses the pool may hand out: `ips − excludeIPs − SpiderReservedIPs`.
    pub capacity: u128,
    /// Addresses held by pods, kept StatefulSet addresses included.
    pub allocated: usize,
    pub free: u128,
}

/// What `delete_pool` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolRemoval {
    Removed,
    /// Pods still hold addresses: like Spiderpool's finalizer, the pool stays `terminating`
    /// (no new addresses) until the last one is released.
    Terminating {
        allocated: usize,
    },
    NotFound,
}

/// One pool's run-time state.
#[derive(Clone, Debug)]
struct LivePool {
    spec: SpiderIpPool,
    /// `ips − excludeIPs − reserved`.
    allocatable: RangeSet,
    /// `allocatable − held`; its first member is the next address handed out.
    free: RangeSet,
    free_count: u128,
    holders: BTreeMap<u128, PodHandle>,
    terminating: bool,
}

impl LivePool {
    fn new(spec: SpiderIpPool, reserved: &RangeSet) -> LivePool {
        let mut state = LivePool {
            spec,
            allocatable: RangeSet::new(),
            free: RangeSet::new(),
            free_count: 0,
            holders: BTreeMap::new(),
            terminating: false,
        };
        state.rebuild(reserved);
        state
    }

    /// Recomputes the address sets after the spec or the reserved addresses changed.
    /// Held addresses stay held even if they are no longer allocatable.
    fn rebuild(&mut self, reserved: &RangeSet) {
        self.allocatable = self.spec.total_ips();
        self.allocatable.subtract(reserved);
        self.free = self.allocatable.clone();
        for &a in self.holders.keys() {
            self.free.remove(a);
        }
        self.free_count = self.free.count();
    }

    fn take_lowest(&mut self, pod: &PodHandle) -> Option<SpiderAllocation> {
        let a = self.free.first()?;
        self.free.remove(a);
        self.free_count -= 1;
        self.holders.insert(a, pod.clone());
        Some(SpiderAllocation {
            ip: u128_to_ip(self.spec.family(), a),
            pool: self.spec.name.clone(),
            gateway: self.spec.gateway,
            subnet: self.spec.subnet,
        })
    }

    fn give_back(&mut self, ip: IpAddr) {
        let a = ip_to_u128(ip);
        if self.holders.remove(&a).is_some() && self.allocatable.contains(a) {
            self.free.insert(a);
            self.free_count += 1;
        }
    }
}

#[derive(Clone, Debug)]
struct PodRecord {
    allocations: Vec<SpiderAllocation>,
    /// Released with `keep`: the addresses wait for a pod of the same name.
    kept: bool,
}

/// Spiderpool's IPAM state: pools, reserved addresses and who holds what.
#[derive(Clone, Debug, Default)]
pub struct SpiderpoolIpam {
    pools: BTreeMap<String, LivePool>,
    reserved: BTreeMap<String, SpiderReservedIp>,
    reserved_v4: RangeSet,
    reserved_v6: RangeSet,
    pods: BTreeMap<PodHandle, PodRecord>,
}

fn not_found(name: &str) -> SpiderError {
    SpiderError::PoolNotFound {
        name: name.to_string(),
    }
}

impl SpiderpoolIpam {
    /// An IPAM with the given resources, refused if any pool has an error-severity problem.
    pub fn new(
        pools: Vec<SpiderIpPool>,
        reserved: Vec<SpiderReservedIp>,
    ) -> Result<SpiderpoolIpam, Vec<PoolProblem>> {
        let errors: Vec<PoolProblem> = validate(&pools)
            .into_iter()
            .filter(|p| p.severity == Severity::Error)
            .collect();
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut ipam = SpiderpoolIpam::default();
        for r in reserved {
            ipam.reserved.insert(r.name.clone(), r);
        }
        ipam.rebuild_reserved();
        for p in pools {
            let reserved = ipam.reserved_for(p.family()).clone();
            ipam.pools
                .insert(p.name.clone(), LivePool::new(p, &reserved));
        }
        Ok(ipam)
    }

    fn reserved_for(&self, family: IpFamily) -> &RangeSet {
        match family {
            IpFamily::V4 => &self.reserved_v4,
            IpFamily::V6 => &self.reserved_v6,
        }
    }

    fn rebuild_reserved(&mut self) {
        let all: Vec<IpRange> = self.reserved.values().flat_map(|r| r.ips.clone()).collect();
        self.reserved_v4 = ranges_to_set(&all, IpFamily::V4);
        self.reserved_v6 = ranges_to_set(&all, IpFamily::V6);
        for state in self.pools.values_mut() {
            let reserved = match state.spec.family() {
                IpFamily::V4 => &self.reserved_v4,
                IpFamily::V6 => &self.reserved_v6,
            };
            state.rebuild(reserved);
        }
    }

    /// The first error `validate` finds for `candidate` placed after the other pools.
    fn webhook_check(&self, candidate: &SpiderIpPool) -> Result<(), SpiderError> {
        let mut specs: Vec<SpiderIpPool> = self
            .pools
            .values()
            .filter(|s| s.spec.name != candidate.name)
            .map(|s| s.spec.clone())
            .collect();
        specs.push(candidate.clone());
        let last = specs.len() - 1;
        match validate(&specs)
            .into_iter()
            .find(|p| p.pool_index == last && p.severity == Severity::Error)
        {
            Some(p) => Err(SpiderError::Webhook(p)),
            None => Ok(()),
        }
    }

    /// Adds a pool at run time, checked as Spiderpool's webhook would check it.
    pub fn add_pool(&mut self, pool: SpiderIpPool) -> Result<(), SpiderError> {
        if self.pools.contains_key(&pool.name) {
            return Err(SpiderError::AlreadyExists {
                name: pool.name.clone(),
            });
        }
        self.webhook_check(&pool)?;
        let reserved = self.reserved_for(pool.family()).clone();
        self.pools
            .insert(pool.name.clone(), LivePool::new(pool, &reserved));
        Ok(())
    }

    /// Replaces a pool's spec. As in Spiderpool, the subnet cannot change and addresses held
    /// by pods cannot leave `ips − excludeIPs`.
    pub fn update_pool(&mut self, pool: SpiderIpPool) -> Result<(), SpiderError> {
        let Some(state) = self.pools.get(&pool.name) else {
            return Err(not_found(&pool.name));
        };
        if state.spec.subnet != pool.subnet {
            return Err(SpiderError::SubnetNotChangeable);
        }
        let total = pool.total_ips();
        if let Some((a, pod)) = state.holders.iter().find(|(a, _)| !total.contains(**a)) {
            return Err(SpiderError::AddressInUse {
                ip: u128_to_ip(pool.family(), *a),
                pod: pod.clone(),
            });
        }
        self.webhook_check(&pool)?;
        let reserved = self.reserved_for(pool.family()).clone();
        if let Some(state) = self.pools.get_mut(&pool.name) {
            state.spec = pool;
            state.rebuild(&reserved);
        }
        Ok(())
    }

    /// Deletes a pool; one whose addresses are still held lingers as `terminating`.
    pub fn delete_pool(&mut self, name: &str) -> PoolRemoval {
        let Some(state) = self.pools.get_mut(name) else {
            return PoolRemoval::NotFound;
        };
        if state.holders.is_empty() {
            self.pools.remove(name);
            PoolRemoval::Removed
        } else {
            state.terminating = true;
            PoolRemoval::Terminating {
                allocated: state.holders.len(),
            }
        }
    }

    /// Adds or replaces a `SpiderReservedIP`. Addresses already held stay with their pods.
    pub fn set_reserved_ip(&mut self, reserved: SpiderReservedIp) {
        self.reserved.insert(reserved.name.clone(), reserved);
        self.rebuild_reserved();
    }

    /// Removes a `SpiderReservedIP`; false if there was none of that name.
    pub fn delete_reserved_ip(&mut self, name: &str) -> bool {
        let found = self.reserved.remove(name).is_some();
        if found {
            self.rebuild_reserved();
        }
        found
    }

    /// Gives the pod an address per requested family, or says why not.
    pub fn allocate(&mut self, req: &SpiderRequest<'_>) -> Result<SpiderAssignment, SpiderError> {
        if let Some(rec) = self.pods.get(req.pod)
            && !rec.kept
        {
            // Spiderpool's retrieveExistingIPAllocation: a retry gets the same answer.
            return Ok(SpiderAssignment {
                allocations: rec.allocations.clone(),
                warnings: Vec::new(),
                reused: true,
            });
        }
        let candidates = select::pool_candidates(
            req.pod_annotations,
            req.namespace_annotations,
            self.pools.values().map(|s| &s.spec),
        )?;
        if let Some(rec) = self.pods.get_mut(req.pod) {
            // A kept StatefulSet address comes back while its pool is still a candidate
            // (releaseStsOutdatedIPIfNeed); otherwise it is released and a new one allocated.
            let still_wanted = |a: &SpiderAllocation| {
                candidates
                    .families
                    .iter()
                    .any(|f| f.family == IpFamily::of(a.ip) && f.pools.contains(&a.pool))
            };
            if req.stateful
                && rec.allocations.len() == candidates.families.len()
                && rec.allocations.iter().all(still_wanted)
            {
                rec.kept = false;
                return Ok(SpiderAssignment {
                    allocations: rec.allocations.clone(),
                    warnings: Vec::new(),
                    reused: true,
                });
            }
            self.forget(req.pod);
        }
        select::precheck(&candidates, |n| self.pools.contains_key(n))?;

        let pod = PodView {
            namespace: &req.pod.namespace,
            pod_labels: req.pod_labels,
            namespace_labels: req.namespace_labels,
            node_name: req.node_name,
            node_labels: req.node_labels,
        };
        let nic = &candidates.nic;
        let mut warnings = Vec::new();
        let mut plans: Vec<(IpFamily, Vec<String>)> = Vec::new();
        for fc in &candidates.families {
            let mut survivors: Vec<&SpiderIpPool> = Vec::new();
            let mut reasons = Vec::new();
            for name in &fc.pools {
                let Some(state) = self.pools.get(name) else {
                    continue; // precheck has refused unknown names
                };
                let view = PoolView {
                    spec: &state.spec,
                    terminating: state.terminating,
                };
                match select::rejection(fc.family, &view, &pod) {
                    Some(reason) => reasons.push(reason),
                    None => survivors.push(&state.spec),
                }
            }
            if survivors.is_empty() {
                return Err(SpiderError::AllFilteredOut {
                    family: fc.family,
                    nic: nic.clone(),
                    pools: fc.pools.clone(),
                    reasons,
                });
            }
            warnings.extend(select::sort_by_priority(
                &mut survivors,
                candidates.source,
                nic,
            ));
            plans.push((
                fc.family,
                survivors.iter().map(|p| p.name.clone()).collect(),
            ));
        }

        let mut allocations = Vec::new();
        let mut shortfalls = Vec::new();
        for (family, pools) in plans {
            let mut got = None;
            for name in &pools {
                match self
                    .pools
                    .get_mut(name)
                    .and_then(|s| s.take_lowest(req.pod))
                {
                    Some(a) => {
                        got = Some(a);
                        break;
                    }
                    None => continue,
                }
            }
            match got {
                Some(a) => allocations.push(a),
                None => shortfalls.push(Shortfall {
                    family,
                    nic: nic.clone(),
                    pools,
                }),
            }
        }
        if !shortfalls.is_empty() {
            // All or nothing: a dual-stack pod with one family missing gets neither.
            for a in &allocations {
                if let Some(state) = self.pools.get_mut(&a.pool) {
                    state.give_back(a.ip);
                }
            }
            return Err(SpiderError::UsedOut { shortfalls });
        }
        self.pods.insert(
            req.pod.clone(),
            PodRecord {
                allocations: allocations.clone(),
                kept: false,
            },
        );
        Ok(SpiderAssignment {
            allocations,
            warnings,
            reused: false,
        })
    }

    /// Releases the pod's addresses. With `keep` (a StatefulSet pod that will come back under
    /// the same name) they stay held for it; otherwise they are freed. Returns what the pod had.
    pub fn release(&mut self, pod: &PodHandle, keep: bool) -> Vec<SpiderAllocation> {
        if keep {
            return match self.pods.get_mut(pod) {
                Some(rec) => {
                    rec.kept = true;
                    rec.allocations.clone()
                }
                None => Vec::new(),
            };
        }
        self.forget(pod)
    }

    /// Frees every address the pod holds or has kept.
    pub fn forget(&mut self, pod: &PodHandle) -> Vec<SpiderAllocation> {
        let Some(rec) = self.pods.remove(pod) else {
            return Vec::new();
        };
        for a in &rec.allocations {
            if let Some(state) = self.pools.get_mut(&a.pool) {
                state.give_back(a.ip);
                if state.terminating && state.holders.is_empty() {
                    self.pools.remove(&a.pool);
                }
            }
        }
        rec.allocations
    }

    /// The pools, in name order (terminating ones included).
    pub fn pools(&self) -> impl Iterator<Item = &SpiderIpPool> + '_ {
        self.pools.values().map(|s| &s.spec)
    }

    pub fn pool(&self, name: &str) -> Option<&SpiderIpPool> {
        self.pools.get(name).map(|s| &s.spec)
    }

    pub fn is_terminating(&self, name: &str) -> bool {
        self.pools.get(name).is_some_and(|s| s.terminating)
    }

    pub fn pool_usage(&self, name: &str) -> Option<PoolUsage> {
        self.pools.get(name).map(|s| PoolUsage {
            capacity: s.allocatable.count(),
            allocated: s.holders.len(),
            free: s.free_count,
        })
    }

    /// The addresses a running pod holds (not ones kept for a StatefulSet pod that is gone).
    pub fn allocation_of(&self, pod: &PodHandle) -> Option<&[SpiderAllocation]> {
        self.pods
            .get(pod)
            .filter(|r| !r.kept)
            .map(|r| r.allocations.as_slice())
    }

    /// The addresses kept for a StatefulSet pod that is gone.
    pub fn kept_allocation_of(&self, pod: &PodHandle) -> Option<&[SpiderAllocation]> {
        self.pods
            .get(pod)
            .filter(|r| r.kept)
            .map(|r| r.allocations.as_slice())
    }

    /// Which pod holds `ip` in pool `pool`.
    pub fn holder(&self, pool: &str, ip: IpAddr) -> Option<&PodHandle> {
        self.pools.get(pool)?.holders.get(&ip_to_u128(ip))
    }
}

#[cfg(test)]
mod tests;

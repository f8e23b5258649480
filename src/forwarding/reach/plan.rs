//! Who walks, and how often: sources grouped into classes and cohorts (nodes of a rack with the
//! same shared tables and static routes), each cohort's routing profile, and the destination
//! classes — pods of an atom on one node — whose verdicts a walk settles.

use super::*;

/// Sources that behave alike for every destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum SrcClass {
    /// Spiderpool pods outside their segment: every pair stops at their node.
    WrongSubnet(DeviceId),
    /// Calico pods and host-network pods: their node's FIB decides.
    Node(DeviceId),
    /// Spiderpool pods: their own table (segment, gateway) decides first.
    Segment {
        device: DeviceId,
        gateway: Option<IpAddr>,
    },
}

impl SrcClass {
    pub(super) fn of(p: &PodInfo) -> SrcClass {
        match p.attachment {
            _ if p.wrong_subnet => SrcClass::WrongSubnet(p.device),
            Attachment::Calico | Attachment::Host => SrcClass::Node(p.device),
            Attachment::Segment { gateway } => SrcClass::Segment {
                device: p.device,
                gateway,
            },
        }
    }
}

/// What a source node's forwarding depends on besides its own routes and its address: two
/// nodes with equal profiles forward alike towards any atom their own routes leave alone
/// (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Profile {
    pub(super) rack: RackId,
    pub(super) down: bool,
    pub(super) access_up: bool,
    pub(super) node_subnet: Option<IpNet>,
    /// The shared tables, in order, by their index among the dataplane's shared tables.
    pub(super) shared: Vec<usize>,
    /// Connected and static routes (also installed, unchanged, in its FIB).
    pub(super) igp: Vec<(IpNet, Stored)>,
}

/// Source nodes with one profile.
pub(super) struct Cohort<'a> {
    /// Member nodes and their pods, by smallest pod key.
    pub(super) members: Vec<(DeviceId, &'a [PodKey])>,
    pub(super) pods: u64,
}

impl Cohort<'_> {
    /// The pods of the members not in `alone`; `None` when there are none.
    pub(super) fn cell(&self, alone: &[DeviceId]) -> Option<Cell> {
        let mut rest = self
            .members
            .iter()
            .filter(|(d, _)| !alone.contains(d))
            .map(|(_, pods)| *pods);
        let first = rest.next()?;
        let removed: u64 = self
            .members
            .iter()
            .filter(|(d, _)| alone.contains(d))
            .map(|(_, pods)| pods.len() as u64)
            .sum();
        // Members are ordered by their smallest pod: the second smallest is the first
        // member's second or the next member's first.
        let second = match (first.get(1), rest.next().and_then(|p| p.first())) {
            (Some(a), Some(b)) => Some(*a.min(b)),
            (a, b) => a.or(b).copied(),
        };
        Some(Cell {
            count: self.pods - removed,
            first: *first.first()?,
            second,
        })
    }
}

/// How the sources are walked.
pub(super) struct Plan<'a> {
    /// Calico source nodes by profile (a node that joins no cohort is one alone).
    pub(super) cohorts: Vec<Cohort<'a>>,
    /// Per device, the index of its cohort (`u32::MAX` for none).
    pub(super) cohort_index: Vec<u32>,
    /// Per device, its source pods.
    pub(super) pods: Vec<&'a [PodKey]>,
    /// Spiderpool sources, walked one class at a time.
    pub(super) others: Vec<(SrcClass, &'a [PodKey])>,
    /// The (cohort, member) pairs to walk alone, sorted, for every destination atom:
    /// `special[offsets[i]..offsets[i + 1]]` for the `i`-th.
    pub(super) special: Vec<(u32, DeviceId)>,
    pub(super) offsets: Vec<usize>,
}

impl<'a> Plan<'a> {
    /// `shapes`: per device, what [`Shape::all`] prepared once per dataplane.
    pub(super) fn new(
        dp: &Dataplane,
        shapes: &[Shape],
        sources: &'a BTreeMap<SrcClass, Vec<PodKey>>,
        dest_atoms: &[AtomId],
    ) -> Plan<'a> {
        let n = dp.devices.len();
        let mut pods: Vec<&[PodKey]> = vec![&[]; n];
        let mut others = Vec::new();
        let mut nodes: Vec<DeviceId> = Vec::new();
        for (src, members) in sources {
            match src {
                SrcClass::Node(d) => {
                    if let Some(slot) = pods.get_mut(d.index()) {
                        *slot = members;
                        nodes.push(*d);
                    }
                }
                _ => others.push((*src, members.as_slice())),
            }
        }

        // Source nodes by profile id; a node without one is walked alone.
        let mut by_profile: BTreeMap<u32, Vec<DeviceId>> = BTreeMap::new();
        let mut lone: Vec<DeviceId> = Vec::new();
        for &d in &nodes {
            match shapes.get(d.index()).and_then(|s| s.profile) {
                Some(id) => by_profile.entry(id).or_default().push(d),
                None => lone.push(d),
            }
        }
        let mut groups: Vec<Vec<DeviceId>> = by_profile.into_values().collect();
        groups.extend(lone.into_iter().map(|d| vec![d]));
        groups.sort();
        let mut cohort_index = vec![u32::MAX; n];
        let mut cohorts = Vec::with_capacity(groups.len());
        let mut special: Vec<(usize, u32, DeviceId)> = Vec::new();
        for (ci, group) in groups.into_iter().enumerate() {
            let mut members: Vec<(DeviceId, &[PodKey])> =
                group.iter().map(|d| (*d, pods[d.index()])).collect();
            members.sort_by_key(|(_, p)| p.first().copied());
            for &d in &group {
                cohort_index[d.index()] = ci as u32;
                if group.len() < 2 {
                    continue;
                }
                // The atoms its own routes touch, and the atom of its address.
                let touched = shapes.get(d.index()).map_or(&[][..], |s| &s.touched[..]);
                for &(lo, hi) in touched {
                    let from = dest_atoms.partition_point(|a| *a < lo);
                    let to = dest_atoms.partition_point(|a| *a <= hi);
                    special.extend((from..to).map(|i| (i, ci as u32, d)));
                }
            }
            let total = members.iter().map(|(_, p)| p.len() as u64).sum();
            cohorts.push(Cohort {
                members,
                pods: total,
            });
        }
        special.sort_unstable();
        special.dedup();
        let mut offsets = Vec::with_capacity(dest_atoms.len() + 1);
        for i in 0..=dest_atoms.len() {
            offsets.push(special.partition_point(|(a, _, _)| *a < i));
        }
        Plan {
            cohorts,
            cohort_index,
            pods,
            others,
            special: special.into_iter().map(|(_, c, d)| (c, d)).collect(),
            offsets,
        }
    }

    /// The sorted (cohort, member) pairs the `i`-th destination atom is special to.
    pub(super) fn special(&self, i: usize) -> &[(u32, DeviceId)] {
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&lo), Some(&hi)) => self.special.get(lo..hi).unwrap_or(&[]),
            _ => &[],
        }
    }

    pub(super) fn cohort_of(&self, device: DeviceId) -> Option<usize> {
        match self.cohort_index.get(device.index()) {
            Some(&c) if c != u32::MAX => Some(c as usize),
            _ => None,
        }
    }

    pub(super) fn pods_of(&self, device: DeviceId) -> &'a [PodKey] {
        self.pods.get(device.index()).copied().unwrap_or(&[])
    }
}

/// What [`Plan::new`] needs of a device, whatever the sources: prepared once per dataplane,
/// so that a plan for any subset of the sources groups nodes by an id instead of comparing
/// their profiles.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Shape {
    /// The id of its [`Profile`] (equal ids, equal profiles); `None` when the node is walked
    /// alone for every atom: no profile, or an own route that covers a device address.
    pub(super) profile: Option<u32>,
    /// The atom ranges (first, last) its own routes and its address touch (empty without a
    /// profile id).
    pub(super) touched: Vec<(AtomId, AtomId)>,
}

impl Shape {
    /// Every device's shape, by device index.
    pub(super) fn all(dp: &Dataplane, atoms: &Atoms) -> Vec<Shape> {
        let shared_index = shared_tables(dp);
        let linked = linked_devices(dp);
        let mut device_addresses: Vec<IpAddr> = dp.devices.iter().map(|d| d.address).collect();
        device_addresses.sort_unstable();
        let covers_a_device = |p: &IpNet| {
            let i = device_addresses.partition_point(|a| *a < p.network());
            device_addresses.get(i).is_some_and(|a| p.contains(a))
        };
        let mut ids: BTreeMap<Profile, u32> = BTreeMap::new();
        (0..dp.devices.len())
            .map(|i| {
                let device = DeviceId(i as u32);
                let Some((profile, own)) = profile(dp, device, &shared_index, &linked) else {
                    return Shape::default();
                };
                if own.iter().any(covers_a_device) {
                    return Shape::default();
                }
                let next = ids.len() as u32;
                let id = *ids.entry(profile).or_insert(next);
                let address = IpNet::from(dp.devices[i].address);
                let touched = own
                    .iter()
                    .chain(std::iter::once(&address))
                    .map(|p| (atoms.atom_of(p.network()), atoms.atom_of(p.broadcast())))
                    .collect();
                Shape {
                    profile: Some(id),
                    touched,
                }
            })
            .collect()
    }
}

/// The devices with a fabric link, sorted.
pub(super) fn linked_devices(dp: &Dataplane) -> Vec<DeviceId> {
    let mut v: Vec<DeviceId> = dp.fabric_link_ends().collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Every shared table, by the address of its allocation, with its index in order of first
/// use (device order).
pub(super) fn shared_tables(dp: &Dataplane) -> Vec<usize> {
    let mut seen: Vec<usize> = Vec::new();
    for fib in &dp.fibs {
        for t in &fib.shared {
            let ptr = Arc::as_ptr(t) as usize;
            if !seen.contains(&ptr) {
                seen.push(ptr);
            }
        }
    }
    seen
}

/// A node's profile and own routes; `None` when it must be walked alone for every atom
/// (not a node on a rack, an address shared with another device, a fabric link).
pub(super) fn profile(
    dp: &Dataplane,
    device: DeviceId,
    shared_index: &[usize],
    linked: &[DeviceId],
) -> Option<(Profile, Vec<IpNet>)> {
    let info = dp.devices.get(device.index())?;
    let fib = dp.fibs.get(device.index())?;
    let igp = dp.igp(device)?;
    let regular = matches!(info.kind, DeviceKind::Node(_))
        && info.present
        && dp.device_by_address(info.address) == Some(device)
        && linked.binary_search(&device).is_err();
    if !regular {
        return None;
    }
    let shared = fib
        .shared
        .iter()
        .map(|t| {
            let ptr = Arc::as_ptr(t) as usize;
            shared_index.iter().position(|p| *p == ptr)
        })
        .collect::<Option<Vec<usize>>>()?;
    let own: Vec<IpNet> = fib
        .overlay
        .iter()
        .filter(|(p, e)| igp.get(*p) != Some(*e))
        .map(|(p, _)| p)
        .collect();
    let profile = Profile {
        rack: info.rack?,
        down: info.down,
        access_up: info.access_up,
        node_subnet: info.node_subnet,
        shared,
        igp: igp.iter().map(|(p, e)| (p, *e)).collect(),
    };
    Some((profile, own))
}

/// How a destination pod is reached once the packet is near it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum DstKind {
    /// Delivered by a `Local` entry on its node.
    Local,
    /// Owner of its address on this rack's segment.
    Segment(RackId),
    /// A host-network pod: its node's own address, which the node delivers (its atom is
    /// the node's /32).
    Host,
    /// Neither (a Calico pod whose node lacks its local route).
    Unreachable,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum DstClass {
    WrongSubnet(DeviceId),
    Atom {
        v6: bool,
        atom: usize,
        node: DeviceId,
        kind: DstKind,
    },
}

impl DstClass {
    pub(super) fn of(dp: &Dataplane, atoms: &Atoms, p: &PodInfo) -> DstClass {
        if p.wrong_subnet {
            return DstClass::WrongSubnet(p.device);
        }
        let (v6, atom) = atoms.atom_of(p.ip);
        let host = IpNet::from(p.ip);
        let kind = match p.attachment {
            Attachment::Calico => {
                let local = dp
                    .fibs
                    .get(p.device.index())
                    .and_then(|f| f.overlay.get(host).copied());
                if local == Some(Stored::Local) {
                    DstKind::Local
                } else {
                    DstKind::Unreachable
                }
            }
            Attachment::Segment { .. } => {
                if dp.owner(p.rack, p.ip) == Some(crate::forwarding::dataplane::Owner::Pod(p.key)) {
                    DstKind::Segment(p.rack)
                } else {
                    DstKind::Unreachable
                }
            }
            Attachment::Host => DstKind::Host,
        };
        DstClass::Atom {
            v6,
            atom,
            node: p.device,
            kind,
        }
    }

    pub(super) fn atom(&self) -> Option<AtomId> {
        match self {
            DstClass::WrongSubnet(_) => None,
            DstClass::Atom { v6, atom, .. } => Some((*v6, *atom)),
        }
    }
}

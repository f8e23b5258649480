//! One walk and its memory: the atoms of the address space, a packet's chain of devices for
//! an atom (where it starts, each hop, how it ends), and the per-device steps memoised per atom
//! so that walks share their tails.

use super::*;

/// What a device does with a packet of the atom: its step, and whether it looked up the
/// inner destination (where a local pod would have matched).
#[derive(Clone, Copy, Debug)]
pub(super) struct Move {
    pub(super) step: Step,
    pub(super) native_lookup: bool,
}

/// The per-device moves of one atom: native ones by device index (the common case, no
/// hashing), tunnelled ones by device and tunnel (kind and outer destination).
pub(super) struct Memo {
    pub(super) native: Vec<Option<Move>>,
    /// The indices of `native` filled for the current atom.
    pub(super) filled: Vec<usize>,
    pub(super) outer: FastMap<(DeviceId, Encap, IpAddr), Move>,
}

impl Memo {
    pub(super) fn new(devices: usize) -> Memo {
        Memo {
            native: vec![None; devices],
            filled: Vec::new(),
            outer: FastMap::default(),
        }
    }

    /// Forgets everything, keeping the allocations (one atom after another).
    pub(super) fn clear(&mut self) {
        for i in self.filled.drain(..) {
            if let Some(slot) = self.native.get_mut(i) {
                *slot = None;
            }
        }
        self.outer.clear();
    }

    /// The move of `device` for the atom of `rep`, computed once per atom: it does not
    /// depend on where the packet came from, nor on a tunnel's source.
    pub(super) fn step(
        &mut self,
        dp: &Dataplane,
        device: DeviceId,
        mode: Mode,
        rep: IpAddr,
    ) -> Move {
        let compute = || {
            let p = process(dp, device, mode, rep, true);
            Move {
                step: p.step,
                native_lookup: p.native_lookup,
            }
        };
        match mode {
            Mode::Native => match self.native.get_mut(device.index()) {
                Some(Some(m)) => *m,
                Some(slot) => {
                    self.filled.push(device.index());
                    *slot.insert(compute())
                }
                None => compute(),
            },
            Mode::Outer(o) => *self
                .outer
                .entry((device, o.encap, o.dst))
                .or_insert_with(compute),
        }
    }
}

/// The sorted starts of the atoms of each family.
pub(super) struct Atoms {
    pub(super) v4: Vec<u128>,
    pub(super) v6: Vec<u128>,
}

pub(super) fn key(addr: IpAddr) -> (bool, u128) {
    match addr {
        IpAddr::V4(a) => (false, u128::from(u32::from(a))),
        IpAddr::V6(a) => (true, u128::from(a)),
    }
}

impl Atoms {
    pub(super) fn new(dp: &Dataplane) -> Atoms {
        let mut v4 = vec![0u128];
        let mut v6 = vec![0u128];
        for p in dp.boundary_prefixes() {
            let (is_v6, start) = key(p.network());
            let (_, end) = key(p.broadcast());
            let list = if is_v6 { &mut v6 } else { &mut v4 };
            list.push(start);
            let max = if is_v6 {
                u128::MAX
            } else {
                u128::from(u32::MAX)
            };
            if end < max {
                list.push(end + 1);
            }
        }
        for list in [&mut v4, &mut v6] {
            list.sort_unstable();
            list.dedup();
        }
        Atoms { v4, v6 }
    }

    pub(super) fn atom_of(&self, addr: IpAddr) -> AtomId {
        let (v6, k) = key(addr);
        let list = if v6 { &self.v6 } else { &self.v4 };
        let i = list.partition_point(|s| *s <= k).saturating_sub(1);
        (v6, i)
    }

    pub(super) fn representative(&self, (v6, atom): AtomId) -> IpAddr {
        if v6 {
            IpAddr::from(std::net::Ipv6Addr::from(
                self.v6.get(atom).copied().unwrap_or(0),
            ))
        } else {
            let v = self.v4.get(atom).copied().unwrap_or(0);
            IpAddr::from(std::net::Ipv4Addr::from(u32::try_from(v).unwrap_or(0)))
        }
    }
}

/// Where a walk starts: a node's FIB (its Calico pods), or a Spiderpool pod's own table.
#[derive(Clone, Copy)]
pub(super) enum Start<'a> {
    Node(DeviceId),
    Segment(&'a PodInfo),
}

/// A device of a chain: the first one (whichever member of a cohort reads the chain), or a
/// later one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum At {
    Start,
    Device(DeviceId),
}

impl At {
    pub(super) fn device(self, start: DeviceId) -> DeviceId {
        match self {
            At::Start => start,
            At::Device(d) => d,
        }
    }
}

/// How the chain of one source towards one atom ends.
#[derive(Clone, Copy, Debug)]
pub(super) enum End {
    Delivered,
    Stop(Reason, At),
    /// On-link delivery at `at` on `rack`'s segment after `forwards` forwards.
    Handoff {
        at: At,
        rack: RackId,
        forwards: usize,
    },
}

/// The walk of one source towards one atom; reused from walk to walk.
pub(super) struct Chain {
    /// The inner destination was looked up at the first device.
    pub(super) native_at_start: bool,
    /// Later devices where the inner destination was looked up (a local pod would match
    /// there).
    pub(super) natives: Vec<DeviceId>,
    pub(super) end: End,
}

impl Default for Chain {
    fn default() -> Chain {
        Chain {
            native_at_start: false,
            natives: Vec::new(),
            end: End::Delivered,
        }
    }
}

impl Chain {
    /// Whether the chain ends at its first device, so that its verdict names the member.
    pub(super) fn ends_at_start(&self) -> bool {
        matches!(
            self.end,
            End::Stop(_, At::Start) | End::Handoff { at: At::Start, .. }
        )
    }

    /// The verdict for a destination class when the chain starts at `start`.
    pub(super) fn verdict_for(&self, dp: &Dataplane, start: DeviceId, dst: DstClass) -> Verdict {
        let (node, kind) = match dst {
            DstClass::WrongSubnet(at) => {
                return Verdict::Dropped {
                    reason: Reason::WrongSubnet,
                    at,
                };
            }
            DstClass::Atom { node, kind, .. } => (node, kind),
        };
        let looked_up = (self.native_at_start && node == start) || self.natives.contains(&node);
        if kind == DstKind::Local && looked_up {
            return Verdict::Delivered;
        }
        let dropped = |reason, at| Verdict::Dropped { reason, at };
        match self.end {
            End::Delivered => Verdict::Delivered,
            End::Stop(reason, at) => dropped(reason, at.device(start)),
            End::Handoff { at, rack, forwards } => {
                let at = at.device(start);
                if kind != DstKind::Segment(rack) {
                    return dropped(Reason::NoRoute, at);
                }
                if node == at {
                    return Verdict::Delivered;
                }
                match forward_check(dp, at, node, forwards) {
                    Some(Reason::NodeDown) => dropped(Reason::NodeDown, node),
                    Some(reason) => dropped(reason, at),
                    None => Verdict::Delivered,
                }
            }
        }
    }

    /// Walks from `start` towards the atom of `rep`, exactly as `walk::trace` would for any
    /// destination of the atom, recording where local delivery could happen.
    pub(super) fn walk(&mut self, dp: &Dataplane, start: Start, rep: IpAddr, memo: &mut Memo) {
        self.native_at_start = false;
        self.natives.clear();
        self.end = self.walk_inner(dp, start, rep, memo);
    }

    pub(super) fn walk_inner(
        &mut self,
        dp: &Dataplane,
        start: Start,
        rep: IpAddr,
        memo: &mut Memo,
    ) -> End {
        let first = match start {
            Start::Node(d) => d,
            Start::Segment(pod) => pod.device,
        };
        if dp.is_down(first) {
            return End::Stop(Reason::NodeDown, At::Start);
        }
        let mut mv = match start {
            Start::Segment(pod) => {
                let p = pod_table_step(dp, pod, rep, true);
                Move {
                    step: p.step,
                    native_lookup: p.native_lookup,
                }
            }
            Start::Node(d) => memo.step(dp, d, Mode::Native, rep),
        };
        let mut cur = first;
        let mut at = At::Start;
        let mut forwards = 0usize;
        loop {
            if mv.native_lookup {
                match at {
                    At::Start => self.native_at_start = true,
                    At::Device(d) => self.natives.push(d),
                }
            }
            let (next, mode, to_pod) = match mv.step {
                Step::Delivered => return End::Delivered,
                Step::Stop(reason) => return End::Stop(reason, at),
                Step::Handoff(rack) => {
                    return End::Handoff { at, rack, forwards };
                }
                Step::Forward { next, mode } => (next, mode, false),
                Step::ToSegmentPod { node } => (node, Mode::Native, true),
            };
            if let Some(reason) = forward_check(dp, cur, next, forwards) {
                let stop = if reason == Reason::NodeDown {
                    At::Device(next)
                } else {
                    at
                };
                return End::Stop(reason, stop);
            }
            forwards += 1;
            if to_pod {
                return End::Delivered;
            }
            cur = next;
            at = At::Device(next);
            mv = memo.step(dp, cur, mode, rep);
            if forwards > HOP_LIMIT {
                // Unreachable: forward_check stops at the limit.
                return End::Stop(Reason::Loop, at);
            }
        }
    }
}

//! Tallying routing verdicts by policy class: the [`Sink`] that sums each verdict's senders
//! per (sender class, receiver class) cell and settles the cell with its fate once the
//! destination class is complete.
//!
//! Invariant: adding is commutative, so the order in which threads and atoms are tallied
//! does not change the result.

use super::*;

/// Where blocked pairs are counted, deciders by index (cheap to hash).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum GroupKey {
    Dropped { reason: Reason, at: DeviceId },
    Denied { side: Side, at: DeviceId, by: u32 },
}

/// Counts and smallest examples; adding is commutative, so the order in which threads and
/// atoms are tallied does not change the result.
#[derive(Default)]
pub(super) struct Tallied {
    pub(super) all_packets: u64,
    pub(super) some_packets: u64,
    pub(super) partial_example: Option<(PodKey, PodKey)>,
    pub(super) groups: FastMap<GroupKey, (u64, (PodKey, PodKey))>,
}

impl Tallied {
    pub(super) fn add(&mut self, key: GroupKey, count: u64, example: (PodKey, PodKey)) {
        if count == 0 {
            return;
        }
        let g = self.groups.entry(key).or_insert((0, example));
        g.0 += count;
        g.1 = g.1.min(example);
    }

    /// `count` pairs of one fate with one routing verdict towards pods on `receiver_node`.
    /// Pairs the sender's egress denies entirely are counted apart (routing does not
    /// matter to them), and so are those denied at the sender's egress after routing (the
    /// sender's node names the group).
    pub(super) fn settle(
        &mut self,
        judge: &Judge<'_>,
        fate: Fate,
        verdict: Verdict,
        receiver_node: DeviceId,
        count: u64,
        example: (PodKey, PodKey),
    ) {
        if fate.egress_all.is_some() || count == 0 {
            return;
        }
        match verdict {
            Verdict::Dropped { reason, at } => {
                self.add(GroupKey::Dropped { reason, at }, count, example);
            }
            Verdict::Delivered => {
                if fate.allowed == judge.packets {
                    self.all_packets += count;
                    self.some_packets += count;
                } else if fate.allowed > 0 {
                    self.some_packets += count;
                    self.partial_example = Some(
                        self.partial_example
                            .map_or(example, |e: (PodKey, PodKey)| e.min(example)),
                    );
                } else if let Some((Side::Ingress, by)) = judge.denied_after_routing(fate) {
                    let key = GroupKey::Denied {
                        side: Side::Ingress,
                        at: receiver_node,
                        by,
                    };
                    self.add(key, count, example);
                }
            }
        }
    }

    pub(super) fn merge(&mut self, other: Tallied) {
        self.all_packets += other.all_packets;
        self.some_packets += other.some_packets;
        self.partial_example = match (self.partial_example, other.partial_example) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for (key, (count, example)) in other.groups {
            self.add(key, count, example);
        }
    }
}

/// Pods of one class in a set: how many, and the two smallest.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Agg {
    pub(super) count: u64,
    pub(super) first: Option<PodKey>,
    pub(super) second: Option<PodKey>,
}

impl Agg {
    pub(super) fn push(&mut self, pod: PodKey) {
        self.count += 1;
        self.keep(pod);
    }

    pub(super) fn keep(&mut self, pod: PodKey) {
        match self.first {
            Some(f) if pod >= f => {
                if self.second.is_none_or(|s| pod < s) {
                    self.second = Some(pod);
                }
            }
            _ => {
                self.second = self.first;
                self.first = Some(pod);
            }
        }
    }

    /// Adds a set of other pods.
    pub(super) fn merge(&mut self, other: &Agg) {
        self.count += other.count;
        for pod in [other.first, other.second].into_iter().flatten() {
            self.keep(pod);
        }
    }

    /// The smallest pair of distinct pods of `self` × `to`.
    pub(super) fn smallest_pair(&self, to: &Agg) -> Option<(PodKey, PodKey)> {
        let (s0, d0) = (self.first?, to.first?);
        if s0 != d0 {
            return Some((s0, d0));
        }
        match (to.second, self.second) {
            (Some(d1), _) => Some((s0, d1)),
            (None, Some(s1)) => Some((s1, d0)),
            (None, None) => None,
        }
    }
}

/// The senders of one destination class with one routing verdict, by class.
struct Acc {
    dest: usize,
    node: DeviceId,
    verdict: Verdict,
    /// By class index; `touched` lists the classes with a count.
    senders: Vec<Agg>,
    touched: Vec<u32>,
    /// The destination class's pods by class, sorted by class.
    receivers: Vec<(u32, Agg)>,
    /// Pods among both senders and receivers, by class.
    own: Vec<(u32, u64)>,
}

/// One thread's [`Sink`]: per destination class and routing verdict it sums the senders by
/// policy class, and settles every (sender class, receiver class) once all the sources of
/// the destination class are in (routing verdicts do not depend on policy, so routing runs
/// once for every class).
pub(super) struct ClassTally<'j> {
    judge: &'j Judge<'j>,
    /// Each cohort's senders by class, once computed (its index is fixed per computation).
    cohorts: Vec<Option<Vec<(u32, Agg)>>>,
    live: Vec<Acc>,
    spare: Vec<Acc>,
    scratch: Vec<Agg>,
    pub(super) out: Tallied,
}

impl<'j> ClassTally<'j> {
    pub(super) fn new(judge: &'j Judge<'j>) -> ClassTally<'j> {
        ClassTally {
            judge,
            cohorts: Vec::new(),
            live: Vec::new(),
            spare: Vec::new(),
            scratch: vec![Agg::default(); judge.seen.len()],
            out: Tallied::default(),
        }
    }

    /// The pods by class, sorted by class.
    fn by_class(&mut self, pods: impl Iterator<Item = PodKey>) -> Vec<(u32, Agg)> {
        let mut touched: Vec<u32> = Vec::new();
        for p in pods {
            let c = self.judge.class_of(p);
            let Some(slot) = self.scratch.get_mut(c as usize) else {
                continue;
            };
            if slot.count == 0 {
                touched.push(c);
            }
            slot.push(p);
        }
        touched.sort_unstable();
        touched
            .into_iter()
            .map(|c| (c, std::mem::take(&mut self.scratch[c as usize])))
            .collect()
    }

    fn senders(&mut self, from: &Senders<'_>) -> Vec<(u32, Agg)> {
        match from.set {
            SenderSet::Pods { pods, .. } => self.by_class(pods.iter().copied()),
            SenderSet::Cohort {
                index,
                members,
                except: [],
            } => {
                if let Some(Some(h)) = self.cohorts.get(index) {
                    return h.clone();
                }
                let h = self.by_class(members.iter().flat_map(|(_, p)| p.iter().copied()));
                if self.cohorts.len() <= index {
                    self.cohorts.resize(index + 1, None);
                }
                self.cohorts[index] = Some(h.clone());
                h
            }
            SenderSet::Cohort {
                members, except, ..
            } => self.by_class(
                members
                    .iter()
                    .filter(|(d, _)| !except.contains(d))
                    .flat_map(|(_, p)| p.iter().copied()),
            ),
        }
    }

    /// Pairs delivered by routing and denied at the sender's egress: grouped by each
    /// sender's node.
    fn egress_after(&mut self, from: &Senders<'_>, to: &Receivers<'_>, senders: &[(u32, Agg)]) {
        let judge = self.judge;
        let nodes: Vec<(DeviceId, &[PodKey])> = match from.set {
            SenderSet::Pods { device, pods } => vec![(device, pods)],
            SenderSet::Cohort {
                members, except, ..
            } => members
                .iter()
                .filter(|(d, _)| !except.contains(d))
                .copied()
                .collect(),
        };
        let mut receivers: BTreeMap<u32, Vec<PodKey>> = BTreeMap::new();
        for p in to.pods {
            receivers.entry(judge.class_of(*p)).or_default().push(*p);
        }
        for &(a, _) in senders {
            if !judge.egress_after.get(a as usize).copied().unwrap_or(false) {
                continue;
            }
            for (b, rr) in &receivers {
                let fate = judge.fate(a, *b, judge.host_local(a, to.node));
                let Some((Side::Egress, by)) = judge.denied_after_routing(fate) else {
                    continue;
                };
                for (device, pods) in &nodes {
                    let ss: Vec<PodKey> = pods
                        .iter()
                        .copied()
                        .filter(|p| judge.class_of(*p) == a)
                        .collect();
                    let (Some(ex), count) = (smallest_pair(&ss, rr), pair_count(&ss, rr)) else {
                        continue;
                    };
                    let key = GroupKey::Denied {
                        side: Side::Egress,
                        at: *device,
                        by,
                    };
                    self.out.add(key, count, ex);
                }
            }
        }
    }
}

impl Sink for ClassTally<'_> {
    fn record(&mut self, verdict: Verdict, from: &Senders<'_>, to: &Receivers<'_>, own: u64) {
        let senders = self.senders(from);
        if verdict == Verdict::Delivered
            && senders
                .iter()
                .any(|(a, _)| self.judge.egress_after.get(*a as usize) == Some(&true))
        {
            self.egress_after(from, to, &senders);
        }
        let i = match self
            .live
            .iter()
            .position(|a| a.dest == to.index && a.verdict == verdict)
        {
            Some(i) => i,
            None => {
                let receivers = self.by_class(to.pods.iter().copied());
                let mut acc = self.spare.pop().unwrap_or_else(|| Acc {
                    dest: 0,
                    node: to.node,
                    verdict,
                    senders: vec![Agg::default(); self.judge.seen.len()],
                    touched: Vec::new(),
                    receivers: Vec::new(),
                    own: Vec::new(),
                });
                acc.dest = to.index;
                acc.node = to.node;
                acc.verdict = verdict;
                acc.receivers = receivers;
                self.live.push(acc);
                self.live.len() - 1
            }
        };
        let judge = self.judge;
        let acc = &mut self.live[i];
        for (c, agg) in &senders {
            let slot = &mut acc.senders[*c as usize];
            if slot.count == 0 {
                acc.touched.push(*c);
            }
            slot.merge(agg);
        }
        if own > 0 {
            // The senders on the receivers' node that are receivers too.
            let here: &[PodKey] = match from.set {
                SenderSet::Pods { pods, .. } => pods,
                SenderSet::Cohort {
                    members, except, ..
                } => members
                    .iter()
                    .find(|(d, _)| *d == to.node && !except.contains(d))
                    .map_or(&[][..], |(_, p)| *p),
            };
            for p in here.iter().filter(|p| to.pods.binary_search(p).is_ok()) {
                let c = judge.class_of(*p);
                match acc.own.iter_mut().find(|(x, _)| *x == c) {
                    Some((_, n)) => *n += 1,
                    None => acc.own.push((c, 1)),
                }
            }
        }
    }

    fn flush(&mut self) {
        let judge = self.judge;
        for mut acc in std::mem::take(&mut self.live) {
            for &a in &acc.touched {
                let sa = acc.senders[a as usize];
                let host_local = judge.host_local(a, acc.node);
                for (b, rb) in &acc.receivers {
                    let own = if a == *b {
                        acc.own.iter().find(|(c, _)| *c == a).map_or(0, |(_, n)| *n)
                    } else {
                        0
                    };
                    let count = sa.count * rb.count - own;
                    let Some(example) = sa.smallest_pair(rb) else {
                        continue;
                    };
                    let fate = judge.fate(a, *b, host_local);
                    self.out
                        .settle(judge, fate, acc.verdict, acc.node, count, example);
                }
                acc.senders[a as usize] = Agg::default();
            }
            acc.touched.clear();
            acc.own.clear();
            acc.receivers.clear();
            self.spare.push(acc);
        }
    }
}

/// Ordered pairs of distinct pods from `a` × `b` (both sorted, without duplicates).
fn pair_count(a: &[PodKey], b: &[PodKey]) -> u64 {
    let common = a.iter().filter(|k| b.binary_search(k).is_ok()).count() as u64;
    (a.len() as u64) * (b.len() as u64) - common
}

fn smallest_pair(a: &[PodKey], b: &[PodKey]) -> Option<(PodKey, PodKey)> {
    let s0 = *a.first()?;
    let d0 = *b.first()?;
    if s0 != d0 {
        return Some((s0, d0));
    }
    match (b.get(1), a.get(1)) {
        (Some(d1), _) => Some((s0, *d1)),
        (None, Some(s1)) => Some((*s1, d0)),
        (None, None) => None,
    }
}

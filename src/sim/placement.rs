//! Where a pod can go: the schedulable nodes, bucketed by how many pods they hold, so the
//! scheduler finds the least-loaded nodes without scanning the cluster for every pod.
//!
//! Invariant: a node is in exactly one bucket (its pod count) while it is schedulable (in the
//! cluster, up, below `maxPods`), and in none otherwise. Buckets are vectors whose order is a
//! deterministic function of the history of insertions and removals, so picking the `i`-th
//! member with the seeded scheduling stream is reproducible.

use crate::model::topology::NodeId;

#[derive(Clone, Debug, Default)]
pub struct Placement {
    /// `buckets[c]`: the schedulable nodes holding `c` pods.
    buckets: Vec<Vec<NodeId>>,
    /// Per node index: its (bucket, position), if schedulable.
    at: Vec<Option<(usize, usize)>>,
}

impl Placement {
    /// Puts `node` in the bucket for `pods`, or takes it out when it cannot take pods.
    pub fn update(&mut self, node: NodeId, pods: usize, schedulable: bool) {
        self.remove(node);
        if !schedulable {
            return;
        }
        if self.buckets.len() <= pods {
            self.buckets.resize_with(pods + 1, Vec::new);
        }
        if self.at.len() <= node.index() {
            self.at.resize(node.index() + 1, None);
        }
        self.buckets[pods].push(node);
        self.at[node.index()] = Some((pods, self.buckets[pods].len() - 1));
    }

    fn remove(&mut self, node: NodeId) {
        let Some(Some((bucket, position))) = self.at.get(node.index()).copied() else {
            return;
        };
        let members = &mut self.buckets[bucket];
        members.swap_remove(position);
        if let Some(moved) = members.get(position) {
            self.at[moved.index()] = Some((bucket, position));
        }
        self.at[node.index()] = None;
    }

    /// The least-loaded schedulable nodes that `eligible` accepts, in bucket order; empty if
    /// none.
    pub fn fewest<'a>(&'a self, eligible: impl Fn(NodeId) -> bool + 'a) -> Vec<NodeId> {
        for bucket in &self.buckets {
            let matching: Vec<NodeId> = bucket.iter().copied().filter(|n| eligible(*n)).collect();
            if !matching.is_empty() {
                return matching;
            }
        }
        Vec::new()
    }

    /// The least-loaded schedulable nodes, without filtering (no copying of other buckets).
    pub fn fewest_any(&self) -> &[NodeId] {
        self.buckets
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_move_between_buckets_and_leave_when_full() {
        let mut p = Placement::default();
        for i in 0..4 {
            p.update(NodeId(i), 0, true);
        }
        p.update(NodeId(1), 1, true);
        p.update(NodeId(2), 1, true);
        assert_eq!(p.fewest_any(), [NodeId(0), NodeId(3)]);
        p.update(NodeId(0), 1, false);
        p.update(NodeId(3), 1, true);
        let mut fewest = p.fewest_any().to_vec();
        fewest.sort();
        assert_eq!(fewest, [NodeId(1), NodeId(2), NodeId(3)]);
        assert_eq!(p.fewest(|n| n == NodeId(2)), [NodeId(2)]);
        assert!(p.fewest(|n| n == NodeId(0)).is_empty());
    }
}

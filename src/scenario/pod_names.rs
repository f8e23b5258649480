//! The workloads of a scenario indexed by name, for the checks that look a workload or a pod
//! name up once per event or expectation (issue #19).
//!
//! A scan of every workload per event or expectation made validation quadratic: 50,000
//! workloads and as many `pod:` expectations took minutes. Here a pod name is resolved by
//! looking up its possible stems: the whole name (a `Pod`) and each prefix ending before a
//! `-` (`web` for `web-0`, `ds` for `ds-node-1`), no longer than the longest workload name,
//! so one lookup costs at most that length's worth of probes whatever the input.
//!
//! Invariant: [`PodNames::could_exist`] answers exactly what a scan of every workload with
//! `Workload::could_own` answers. This is an index, not a model of pod naming.

use std::collections::BTreeMap;

use crate::model::workload::Workload;

/// Workloads by name (every namespace) and by namespace and name.
pub struct PodNames<'a> {
    by_name: BTreeMap<&'a str, Vec<&'a Workload>>,
    by_key: BTreeMap<(&'a str, &'a str), &'a Workload>,
    /// The workload names in declaration order, for "did you mean".
    names: Vec<&'a str>,
    longest: usize,
}

impl<'a> PodNames<'a> {
    pub fn new(workloads: &'a [Workload]) -> PodNames<'a> {
        let mut by_name: BTreeMap<&str, Vec<&Workload>> = BTreeMap::new();
        let mut by_key = BTreeMap::new();
        for w in workloads {
            by_name.entry(w.name.as_str()).or_default().push(w);
            by_key
                .entry((w.namespace.as_str(), w.name.as_str()))
                .or_insert(w);
        }
        PodNames {
            by_name,
            by_key,
            names: workloads.iter().map(|w| w.name.as_str()).collect(),
            longest: workloads.iter().map(|w| w.name.len()).max().unwrap_or(0),
        }
    }

    /// The first workload declared as `namespace/name`.
    pub fn workload(&self, namespace: &str, name: &str) -> Option<&'a Workload> {
        self.by_key.get(&(namespace, name)).copied()
    }

    /// Whether a pod of that name (`name` or `namespace/name`) can exist given the workloads;
    /// `is_node` tells the node names (a DaemonSet pod is `<workload>-<node>`).
    pub fn could_exist(&self, pod: &str, is_node: &dyn Fn(&str) -> bool) -> bool {
        let (ns, name) = match pod.split_once('/') {
            Some((ns, name)) => (Some(ns), name),
            None => (None, pod),
        };
        let dashes = name
            .bytes()
            .enumerate()
            .take(self.longest + 1)
            .filter(|&(_, b)| b == b'-')
            .map(|(i, _)| &name[..i]);
        std::iter::once(name).chain(dashes).any(|stem| {
            self.by_name.get(stem).is_some_and(|ws| {
                ws.iter()
                    .filter(|w| ns.is_none_or(|ns| w.namespace == ns))
                    .any(|w| w.could_own(name, is_node))
            })
        })
    }

    /// The workload names in declaration order (the stems of their pods' names).
    pub fn names(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.names.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::workload::WorkloadKind;

    fn workload(name: &str, namespace: &str, kind: WorkloadKind) -> Workload {
        Workload {
            name: name.to_string(),
            namespace: namespace.to_string(),
            kind,
            replicas: 1,
            labels: Default::default(),
            annotations: Default::default(),
            node_selector: Default::default(),
            ports: Vec::new(),
            service_account_name: "default".to_string(),
            host_network: false,
        }
    }

    #[test]
    fn answers_as_a_scan_of_every_workload_does() {
        let workloads = vec![
            workload("web", "default", WorkloadKind::Deployment),
            workload("web-db", "shop", WorkloadKind::StatefulSet),
            workload("ds", "default", WorkloadKind::DaemonSet),
            workload("solo", "default", WorkloadKind::Pod),
        ];
        let index = PodNames::new(&workloads);
        let is_node = |n: &str| n == "node-1";
        let names = [
            "web-0",
            "web-x",
            "web-db-3",
            "shop/web-db-3",
            "default/web-db-3",
            "ds-node-1",
            "ds-node-2",
            "solo",
            "solo-0",
            "other-0",
            "web",
            "-0",
            "",
        ];
        for pod in names {
            let (ns, name) = match pod.split_once('/') {
                Some((ns, name)) => (Some(ns), name),
                None => (None, pod),
            };
            let scan = workloads
                .iter()
                .filter(|w| ns.is_none_or(|ns| w.namespace == ns))
                .any(|w| w.could_own(name, &is_node));
            assert_eq!(index.could_exist(pod, &is_node), scan, "{pod}");
        }
        assert!(index.could_exist("web-db-3", &is_node));
        assert!(!index.could_exist("default/web-db-3", &is_node));
        assert_eq!(
            index.workload("shop", "web-db").map(|w| w.kind),
            Some(WorkloadKind::StatefulSet)
        );
        assert!(index.workload("default", "web-db").is_none());
    }
}

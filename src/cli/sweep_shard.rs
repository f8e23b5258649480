//! `podnet sweep --shard I/N` and `podnet sweep merge`: one sweep split over machines (a
//! Kubernetes Indexed Job, `sweep_job.rs`) and put back together.
//!
//! The split is deterministic: every shard computes the same assignment from the scenario and
//! the `--set` list alone. Each variant's cost is predicted from its loaded scenario (the BGP
//! state `scenario::footprint` estimates, plus nodes and pods), and variants are dealt,
//! most expensive first, to the least loaded shard (ties: lower variant index, lower shard),
//! so shards finish close together. A shard writes a JSON file: what it is a shard of, and
//! its rows with their variant indices. `merge` checks that the files are the N shards of
//! one sweep, each once, covering every variant once, and prints exactly what the unsharded
//! sweep prints, with its exit code.
//! A shard itself exits 0 once its file is written (the verdict is the merge's), 2 on
//! invalid input.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::sweep::{Row, report};
use super::{SweepArgs, SweepMergeArgs, exit};
use crate::scenario;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// `I/N` with 0 ≤ I < N.
pub fn parse(text: &str) -> Result<Shard, String> {
    let bad = || format!("`{text}` is not I/N with 0 <= I < N (such as 0/4)");
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let index: usize = i.trim().parse().map_err(|_| bad())?;
    let count: usize = n.trim().parse().map_err(|_| bad())?;
    if count == 0 || index >= count {
        return Err(bad());
    }
    Ok(Shard { index, count })
}

/// A variant's predicted cost: the RIB entries and sessions of its BGP state, its nodes and
/// pods, as `scenario::footprint` counts them. A variant that does not load costs nothing
/// here (it fails fast in its shard); the `--expect` list changes no cost.
fn cost(path: &Path, variant: &[(String, String)]) -> u64 {
    let Ok(s) = scenario::load_with_overrides(path, variant) else {
        return 0;
    };
    let f = scenario::footprint::estimate(&s);
    f.routes + f.sessions + f.nodes + f.pods
}

/// The variant indices of each of `count` shards, each list ascending.
pub fn assign(path: &Path, variants: &[Vec<(String, String)>], count: usize) -> Vec<Vec<usize>> {
    let costs: Vec<u64> = variants.iter().map(|v| cost(path, v)).collect();
    deal(&costs, count)
}

/// Longest processing time first: most expensive variant to the least loaded shard.
fn deal(costs: &[u64], count: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by_key(|i| (std::cmp::Reverse(costs[*i]), *i));
    let mut load = vec![0u64; count];
    let mut shards = vec![Vec::new(); count];
    for i in order {
        let (s, _) = load
            .iter()
            .enumerate()
            .min_by_key(|(s, l)| (**l, *s))
            .unwrap_or((0, &0));
        load[s] += costs[i].max(1);
        shards[s].push(i);
    }
    for s in &mut shards {
        s.sort_unstable();
    }
    shards
}

/// What a shard writes.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShardFile {
    podnet: String,
    /// The scenario's file name and the `--set` list: the sweep this is a shard of.
    scenario: String,
    sets: Vec<String>,
    expect: Vec<String>,
    shard: usize,
    shards: usize,
    variants: usize,
    rows: Vec<IndexedRow>,
}

#[derive(Debug, Serialize, Deserialize)]
struct IndexedRow {
    index: usize,
    row: Row,
}

/// Writes the shard's rows to `--out` (or stdout); exit 0, or 2 when it cannot be written.
pub fn write(
    args: &SweepArgs,
    scenario: &Path,
    shard: Shard,
    variants: usize,
    indices: Vec<usize>,
    rows: Vec<Row>,
) -> i32 {
    let file = ShardFile {
        podnet: env!("CARGO_PKG_VERSION").to_string(),
        scenario: scenario
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        sets: args.set.clone(),
        expect: args.expect.clone(),
        shard: shard.index,
        shards: shard.count,
        variants,
        rows: indices
            .into_iter()
            .zip(rows)
            .map(|(index, row)| IndexedRow { index, row })
            .collect(),
    };
    let text = serde_json::to_string_pretty(&file).unwrap_or_default() + "\n";
    match &args.out {
        Some(path) => match std::fs::write(path, text) {
            Ok(()) => exit::OK,
            Err(e) => {
                eprintln!("cannot write {}: {e}", path.display());
                exit::INVALID
            }
        },
        None => {
            out!("{text}");
            exit::OK
        }
    }
}

/// Reads the shard files, checks they make one whole sweep, and reports it.
pub fn merge(args: &SweepMergeArgs) -> i32 {
    match merged_rows(&args.files) {
        Ok((scenario, rows)) => report(&rows, &args.show, Path::new(&scenario)),
        Err(message) => {
            eprintln!("{message}");
            exit::INVALID
        }
    }
}

/// The scenario's file name and the rows of the whole sweep, in variant order.
fn merged_rows(files: &[std::path::PathBuf]) -> Result<(String, Vec<Row>), String> {
    let mut shards: Vec<(String, ShardFile)> = Vec::new();
    for path in files {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
        let file: ShardFile = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{name}:{}:{}: not a shard file of `podnet sweep --shard`: {e}",
                e.line(),
                e.column()
            )
        })?;
        shards.push((name, file));
    }
    let Some((first_name, first)) = shards.first() else {
        return Err("no shard files".to_string());
    };
    let mut seen_shard = vec![None::<&str>; first.shards];
    let mut rows: Vec<Option<Row>> = vec![None; first.variants];
    for (name, f) in &shards {
        let same = (
            &f.podnet,
            &f.scenario,
            &f.sets,
            &f.expect,
            f.shards,
            f.variants,
        ) == (
            &first.podnet,
            &first.scenario,
            &first.sets,
            &first.expect,
            first.shards,
            first.variants,
        );
        if !same {
            return Err(format!(
                "{name}: a shard of another sweep than {first_name} (podnet {} {} {:?}, {} shards, {} variants)",
                f.podnet, f.scenario, f.sets, f.shards, f.variants
            ));
        }
        let slot = seen_shard
            .get_mut(f.shard)
            .ok_or_else(|| format!("{name}: shard {} of {}", f.shard, f.shards))?;
        if let Some(other) = slot {
            return Err(format!("{name}: shard {} is also {other}", f.shard));
        }
        *slot = Some(name);
        for r in &f.rows {
            let row = rows
                .get_mut(r.index)
                .ok_or_else(|| format!("{name}: variant {} of {}", r.index, f.variants))?;
            if row.is_some() {
                return Err(format!("{name}: variant {} appears twice", r.index));
            }
            *row = Some(r.row.clone());
        }
    }
    let missing: Vec<String> = seen_shard
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(i, _)| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing shard{} {} of {}",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            first.shards
        ));
    }
    let rows = rows
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.ok_or_else(|| format!("variant {i} is in no shard file")))
        .collect::<Result<Vec<Row>, String>>()?;
    Ok((first.scenario.clone(), rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_numbers_are_checked() {
        assert_eq!(parse("1/3"), Ok(Shard { index: 1, count: 3 }));
        for bad in ["3/3", "0/0", "1", "a/2", "-1/2"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    /// Costs 8, 7, 6, 5, 4 on two shards A and B, dealt largest first to the lighter shard:
    /// 8 → A (0 = 0, the lower shard); 7 → B (0 < 8); 6 → B (7 < 8); 5 → A (8 < 13);
    /// 4 → A (13 = 13, the lower shard). A = {8, 5, 4} = 17, B = {7, 6} = 13.
    #[test]
    fn the_most_expensive_variants_go_first_to_the_lightest_shard() {
        assert_eq!(deal(&[8, 7, 6, 5, 4], 2), [vec![0, 3, 4], vec![1, 2]]);
        // More shards than variants: the extra shards are empty, every variant once.
        assert_eq!(deal(&[1, 1], 3), [vec![0], vec![1], vec![]]);
    }
}

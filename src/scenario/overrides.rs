//! Setting a field of a scenario's YAML tree by path, for `podnet sweep --set PATH=VALUE`.
//!
//! A path is keys and list indices: `resources[0].spec.blockSize`, `topology.zones[1].name`,
//! `network.bgp.bfd`. Missing mapping keys are created (so a field left at its default can
//! be swept); list indices must exist. The value is parsed as YAML (`26`, `true`, `10ms`,
//! `{interval: 100ms, multiplier: 3}`) and then decoded and validated like any other value,
//! so a bad value is reported exactly as it would be in the file.

use super::diag::Pos;
use super::yaml::{Budget, Key, Value, YamlNode, parse_single_within};

/// One step of a path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

fn parse_path(path: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if key.is_empty() && (steps.is_empty() || rest.is_empty()) {
            return Err(format!(
                "`{path}` is not a field path such as resources[0].spec.blockSize"
            ));
        }
        if !key.is_empty() {
            steps.push(Step::Key(key.to_string()));
        }
        while !rest.is_empty() {
            let close = rest
                .find(']')
                .ok_or_else(|| format!("`{path}`: unclosed `[`"))?;
            let index = rest[1..close]
                .parse::<usize>()
                .map_err(|_| format!("`{path}`: `{}` is not a list index", &rest[1..close]))?;
            steps.push(Step::Index(index));
            rest = &rest[close + 1..];
            if !rest.is_empty() && !rest.starts_with('[') {
                return Err(format!("`{path}`: expected `.` or `[` after `]`"));
            }
        }
    }
    Ok(steps)
}

/// Sets the field at `path` in `root` to the YAML `value`; `at` locates the new value, which
/// is charged to the scenario's `budget` like any other YAML it reads.
pub fn apply(
    root: &mut YamlNode,
    path: &str,
    value: &str,
    at: Pos,
    budget: &mut Budget,
) -> Result<(), String> {
    let steps = parse_path(path)?;
    let mut parsed = parse_single_within(value, at.file, budget)
        .map_err(|d| format!("the value `{value}` is not valid YAML: {}", d.message))?;
    relocate(&mut parsed, at);
    let mut node = root;
    let mut walked = String::new();
    for (i, step) in steps.iter().enumerate() {
        let last = i + 1 == steps.len();
        node = match step {
            Step::Key(key) => {
                if matches!(node.value, Value::Null) {
                    node.value = Value::Map(Vec::new());
                }
                let kind = node.value.kind_name();
                let Value::Map(entries) = &mut node.value else {
                    return Err(format!("`{walked}` is {kind}, not a mapping with `{key}`"));
                };
                let index = match entries.iter().position(|(k, _)| &k.text == key) {
                    Some(i) => i,
                    None => {
                        let fresh = YamlNode {
                            pos: at,
                            value: Value::Null,
                        };
                        entries.push((
                            Key {
                                pos: at,
                                text: key.clone(),
                            },
                            fresh,
                        ));
                        entries.len() - 1
                    }
                };
                &mut entries[index].1
            }
            Step::Index(index) => {
                let kind = node.value.kind_name();
                let Value::Seq(items) = &mut node.value else {
                    return Err(format!("`{walked}` is {kind}, not a list"));
                };
                let len = items.len();
                items
                    .get_mut(*index)
                    .ok_or_else(|| format!("`{walked}` has {len} items; there is no [{index}]"))?
            }
        };
        match step {
            Step::Key(k) if walked.is_empty() => walked.push_str(k),
            Step::Key(k) => {
                walked.push('.');
                walked.push_str(k);
            }
            Step::Index(i) => walked.push_str(&format!("[{i}]")),
        }
        if last {
            *node = parsed;
            return Ok(());
        }
    }
    Err(format!("`{path}` names no field"))
}

/// `path` written the one way (`a.b[0].c`), so two spellings of one field compare equal.
pub fn canonical_path(path: &str) -> Result<String, String> {
    let mut out = String::new();
    for step in parse_path(path)? {
        match step {
            Step::Key(k) if out.is_empty() => out.push_str(&k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(&k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    Ok(out)
}

/// The node at `path` in `root`, `None` when the path leads to nothing written.
pub fn lookup<'a>(root: &'a YamlNode, path: &str) -> Option<&'a YamlNode> {
    let mut node = root;
    for step in parse_path(path).ok()? {
        node = match (step, &node.value) {
            (Step::Key(key), Value::Map(entries)) => {
                &entries.iter().find(|(k, _)| k.text == key)?.1
            }
            (Step::Index(i), Value::Seq(items)) => items.get(i)?,
            _ => return None,
        };
    }
    Some(node)
}

/// A value in one flow-style spelling, positions and layout aside (`26`, `true`, `10ms`,
/// `{interval: 100ms, multiplier: 3}`, `[a, b]`): two values that decode alike compare equal
/// when they are written alike, whatever the block or flow style.
pub fn canonical_value(node: &YamlNode) -> String {
    match &node.value {
        Value::Null => "null".to_string(),
        Value::Seq(items) => {
            let items: Vec<String> = items.iter().map(canonical_value).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Map(entries) => {
            let entries: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", k.text, canonical_value(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        _ => node.scalar_text().unwrap_or_default(),
    }
}

/// Every node of an override's value is located at the override itself.
fn relocate(node: &mut YamlNode, at: Pos) {
    node.pos = at;
    match &mut node.value {
        Value::Seq(items) => items.iter_mut().for_each(|n| relocate(n, at)),
        Value::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
            k.pos = at;
            relocate(v, at);
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::diag::FileId;
    use crate::scenario::yaml::{Limits, parse_single};

    fn tree(text: &str) -> YamlNode {
        parse_single(text, FileId(0), Limits::DEFAULT).expect("yaml")
    }

    fn budget() -> Budget {
        Budget::new(Limits::DEFAULT)
    }

    #[test]
    fn sets_existing_and_missing_fields() {
        let mut root = tree("resources:\n- spec: {blockSize: 26}\ntopology: {zones: []}\n");
        let at = Pos::new(FileId(1), 1, 1);
        apply(
            &mut root,
            "resources[0].spec.blockSize",
            "28",
            at,
            &mut budget(),
        )
        .expect("set");
        apply(
            &mut root,
            "topology.fabric.spinesPerZone",
            "2",
            at,
            &mut budget(),
        )
        .expect("create");
        let spec = &root.get("resources").map(|r| match &r.value {
            Value::Seq(items) => items[0].clone(),
            _ => unreachable!(),
        });
        assert_eq!(
            spec.as_ref()
                .and_then(|s| s.get("spec"))
                .and_then(|s| s.get("blockSize"))
                .map(|n| n.value.clone()),
            Some(Value::Int(28))
        );
        let spines = root
            .get("topology")
            .and_then(|t| t.get("fabric"))
            .and_then(|f| f.get("spinesPerZone"));
        assert_eq!(spines.map(|n| n.value.clone()), Some(Value::Int(2)));
    }

    #[test]
    fn bad_paths_say_where_they_stop() {
        let mut root = tree("resources:\n- spec: {blockSize: 26}\n");
        let at = Pos::new(FileId(1), 1, 1);
        assert_eq!(
            apply(&mut root, "resources[3].spec", "1", at, &mut budget()).unwrap_err(),
            "`resources` has 1 items; there is no [3]"
        );
        assert_eq!(
            apply(
                &mut root,
                "resources[0].spec.blockSize.x",
                "1",
                at,
                &mut budget()
            )
            .unwrap_err(),
            "`resources[0].spec.blockSize` is an integer, not a mapping with `x`"
        );
        assert!(
            apply(&mut root, "resources[x]", "1", at, &mut budget())
                .unwrap_err()
                .contains("not a list index")
        );
        assert!(
            apply(&mut root, "a", "[1,", at, &mut budget())
                .unwrap_err()
                .contains("not valid YAML")
        );
    }

    #[test]
    fn fields_are_found_and_compared_as_written() {
        let root = tree(
            "network:\n  blockSize: 26\nresources:\n- spec:\n    bfd: {interval: 1s, multiplier: 3}\n",
        );
        let found = |p: &str| lookup(&root, p).map(canonical_value);
        assert_eq!(found("network.blockSize").as_deref(), Some("26"));
        assert_eq!(
            found("resources[0].spec.bfd").as_deref(),
            Some("{interval: 1s, multiplier: 3}")
        );
        // Not written (a default, a missing item, a key under a scalar): nothing.
        assert_eq!(found("network.mtu"), None);
        assert_eq!(found("resources[1].spec"), None);
        assert_eq!(found("network.blockSize.x"), None);
        // A block-style value compares equal to its flow spelling.
        let block = tree("a:\n  interval: 1s\n  multiplier: 3\n");
        assert_eq!(
            lookup(&block, "a").map(canonical_value).as_deref(),
            Some("{interval: 1s, multiplier: 3}")
        );
        assert_eq!(canonical_path("a.b[0][1].c"), Ok("a.b[0][1].c".to_string()));
        assert!(canonical_path("a..b").is_err());
    }

    #[test]
    fn values_are_charged_to_the_scenario_budget() {
        // `sweep --set` and `--expect` values are YAML the scenario reads, charged to the
        // budget its files share: the first value spends 3 of 8 nodes (a list and 2 items),
        // the second needs 7 more.
        let mut root = tree("a: 1\n");
        let at = Pos::new(FileId(1), 1, 1);
        let mut small = Budget::new(Limits {
            max_nodes: 8,
            ..Limits::DEFAULT
        });
        apply(&mut root, "b", "[1, 2]", at, &mut small).expect("3 nodes fit");
        let err = apply(&mut root, "c", "[1, 2, 3, 4, 5, 6]", at, &mut small).unwrap_err();
        assert!(err.contains("more than 8 nodes"), "{err}");
    }
}

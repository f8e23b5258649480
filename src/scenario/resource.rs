//! Kubernetes-style resources (`apiVersion`, `kind`, `metadata`, `spec`) as located trees.
//!
//! The foundation keeps a resource's body as its located YAML tree so that the layers that
//! model a kind (IPAM, BGP) decode its `spec` later with positions pointing into the file the
//! manifest came from. Here: the envelope is checked (apiVersion, kind, metadata.name), List
//! forms are unwrapped, and names are unique per kind.

use std::collections::BTreeMap;

use super::decode::Cx;
use super::diag::Pos;
use super::kinds::seq_items;
use super::yaml::{Value, YamlNode};

/// One resource, with where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Resource {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
    /// The whole located document.
    pub body: YamlNode,
    /// The field path of this resource in its file (`resources[2]`, or empty for a manifest
    /// file's own document), prefixed to every problem found inside it.
    pub path: String,
}

impl Resource {
    /// Checks the envelope of one object; List forms are not handled here (see [`unwrap`]).
    /// The tree becomes the resource's body: it is moved, never copied, so a resource costs
    /// what the YAML budget charged for it and no more.
    pub fn from_node(node: YamlNode, cx: &mut Cx) -> Option<Resource> {
        let Value::Map(_) = node.value else {
            cx.error(
                node.pos,
                format!(
                    "expected a resource (a mapping with apiVersion and kind), found {}",
                    node.value.kind_name()
                ),
            );
            return None;
        };
        let api_version = required_string(&node, "apiVersion", cx);
        let kind = required_string(&node, "kind", cx);
        let metadata = node.get("metadata");
        let name = match metadata {
            None => {
                cx.error(node.pos, "missing required field `metadata.name`");
                None
            }
            Some(m) => cx.at_key("metadata", |cx| required_string(m, "name", cx)),
        };
        let namespace = metadata
            .and_then(|m| m.get("namespace"))
            .and_then(|n| match &n.value {
                Value::Str(s) => Some(s.clone()),
                _ => None,
            });
        let (api_version, kind, name) = (api_version?, kind?, name?);
        Some(Resource {
            api_version,
            kind,
            name,
            namespace,
            body: node,
            path: cx.path(),
        })
    }

    /// Where a field of this resource is, by key path (`["spec", "blockSize"]`), falling back
    /// to the nearest existing parent.
    pub fn locate(&self, keys: &[&str]) -> Pos {
        let mut node = &self.body;
        for key in keys {
            match node.get(key) {
                Some(child) => node = child,
                None => break,
            }
        }
        node.pos
    }

    /// Reports a problem at `keys` (and list `item`) of this resource, under its path: at the
    /// value written there or, if it is missing, at its nearest written parent.
    pub(crate) fn report(
        &self,
        cx: &mut Cx,
        keys: &[&str],
        item: Option<usize>,
        error: bool,
        message: String,
    ) {
        let mut node = &self.body;
        let mut depth = 0;
        for key in keys {
            match node.get(key) {
                Some(child) => {
                    node = child;
                    depth += 1;
                }
                None => break,
            }
        }
        let item_node = item
            .filter(|_| depth == keys.len())
            .and_then(|i| seq_items(node).and_then(|items| items.get(i)));
        let pos = item_node.map_or(node.pos, |n| n.pos);
        let emit = |cx: &mut Cx| {
            if error {
                cx.error(pos, message);
            } else {
                cx.warning(pos, message);
            }
        };
        cx.with_path_prefix(&self.path, |cx| {
            at_keys(cx, keys, |cx| match item {
                Some(i) => cx.at_index(i, emit),
                None => emit(cx),
            })
        });
    }

    /// An error at `keys` of this resource (`report` for the common case).
    pub(crate) fn error_at(&self, cx: &mut Cx, keys: &[&str], message: String) {
        self.report(cx, keys, None, true, message);
    }
}

/// Runs `f` with every key of `keys` appended to the path, in order.
pub(crate) fn at_keys<R>(cx: &mut Cx, keys: &[&str], f: impl FnOnce(&mut Cx) -> R) -> R {
    match keys.split_first() {
        None => f(cx),
        Some((key, rest)) => cx.at_key(key, |cx| at_keys(cx, rest, f)),
    }
}

fn required_string(node: &YamlNode, key: &str, cx: &mut Cx) -> Option<String> {
    match node.get(key) {
        Some(YamlNode {
            value: Value::Str(s),
            ..
        }) if !s.is_empty() => Some(s.clone()),
        Some(other) => {
            cx.at_key(key, |cx| {
                cx.error(
                    other.pos,
                    format!(
                        "expected a non-empty string, found {}",
                        other.value.kind_name()
                    ),
                )
            });
            None
        }
        None => {
            cx.error(node.pos, format!("missing required field `{key}`"));
            None
        }
    }
}

/// Expands List forms as `kubectl apply` does: `kind: List`, any `…List` kind, and the
/// `apiVersion` + `items` form without a `kind` that `calicoctl get -o yaml` prints. Each item
/// is decoded under `items[i]`; null items are skipped. The tree is moved into the resources.
pub fn unwrap(node: YamlNode, cx: &mut Cx, out: &mut Vec<Resource>) {
    let kind = node.get("kind").and_then(|k| match &k.value {
        Value::Str(s) => Some(s.as_str()),
        _ => None,
    });
    let is_list = match (kind, node.get("items")) {
        (Some(k), _) => k == "List" || k.ends_with("List"),
        (None, Some(_)) => true,
        (None, None) => false,
    };
    if !is_list {
        if let Some(r) = Resource::from_node(node, cx) {
            out.push(r);
        }
        return;
    }
    let pos = node.pos;
    let items = match node.value {
        Value::Map(entries) => entries.into_iter().find(|(k, _)| k.text == "items"),
        _ => None,
    };
    let Some((_, items)) = items else {
        cx.error(pos, "a List needs `items`");
        return;
    };
    match items.value {
        Value::Null => {}
        Value::Seq(list) => cx.at_key("items", |cx| {
            for (i, item) in list.into_iter().enumerate() {
                if matches!(item.value, Value::Null) {
                    continue;
                }
                cx.at_index(i, |cx| unwrap(item, cx, out));
            }
        }),
        ref other => cx.at_key("items", |cx| {
            cx.error(
                items.pos,
                format!("expected a list, found {}", other.kind_name()),
            )
        }),
    }
}

/// `metadata.name` is unique per kind (and namespace, for namespaced kinds).
pub fn check_unique(resources: &[Resource], cx: &mut Cx) {
    let mut seen: BTreeMap<(&str, Option<&str>, &str), Pos> = BTreeMap::new();
    for r in resources {
        let key = (r.kind.as_str(), r.namespace.as_deref(), r.name.as_str());
        let pos = r.locate(&["metadata", "name"]);
        if let Some(first) = seen.get(&key) {
            r.error_at(
                cx,
                &["metadata", "name"],
                format!(
                    "{} `{}` is already defined ({})",
                    r.kind,
                    r.name,
                    first.place()
                ),
            );
        } else {
            seen.insert(key, pos);
        }
    }
}

//! Checking every key of a resource against the API's field tables ([`crate::scenario::api_fields`]),
//! as the API server would, and reading the fields of a located mapping (a `spec`, or an object
//! inside it).

use super::*;

impl Decoder<'_> {
    /// Walks the whole document of `r` through `schema`; `warn` is false for kinds that are
    /// ignored as a whole (their one warning already says so).
    pub(super) fn check_fields(
        &mut self,
        r: &Resource,
        schema: &'static KindSchema,
        warn: bool,
        cx: &mut Cx,
    ) {
        let mut path = Vec::new();
        self.check_map(&r.body, schema, warn, &mut path, cx);
    }

    pub(super) fn check_map(
        &mut self,
        node: &YamlNode,
        schema: &'static KindSchema,
        warn: bool,
        path: &mut Vec<String>,
        cx: &mut Cx,
    ) {
        // A value of the wrong type is reported by the kind's decoder, not here.
        let Value::Map(entries) = &node.value else {
            return;
        };
        for (key, child) in entries {
            path.push(key.text.clone());
            cx.at_key(&key.text, |cx| {
                self.check_key(key, child, schema, warn, path, cx)
            });
            path.pop();
        }
    }

    pub(super) fn check_key(
        &mut self,
        key: &Key,
        value: &YamlNode,
        schema: &'static KindSchema,
        warn: bool,
        path: &mut Vec<String>,
        cx: &mut Cx,
    ) {
        let segments: Vec<&str> = path.iter().map(String::as_str).collect();
        let verdict = schema.check(&segments);
        let here = segments.len() - 1;
        match verdict {
            FieldCheck::Unknown { nearest, .. } => {
                let message = match nearest {
                    Some(n) => format!("unknown field `{}`; did you mean `{n}`?", key.text),
                    None => {
                        let names: Vec<&str> = siblings(schema, &segments[..here])
                            .iter()
                            .filter(|f| !matches!(f.support, Support::Removed(_)))
                            .map(|f| f.name)
                            .collect();
                        format!(
                            "unknown field `{}` in {}; expected one of: {}",
                            key.text,
                            schema.kind,
                            names.join(", ")
                        )
                    }
                };
                cx.error(key.pos, message);
                return;
            }
            FieldCheck::Removed { note, .. } => {
                cx.error(key.pos, note);
                return;
            }
            // The walk only descends into object-shaped fields, so a mapping under a scalar
            // never reaches here; the decoders report such values by type.
            FieldCheck::NotAnObject { .. } => return,
            FieldCheck::Unmodelled { depth } if depth == here && warn && segments[0] == "spec" => {
                let dotted = segments.join(".");
                if self
                    .warned
                    .insert((schema.kind.to_string(), dotted.clone()))
                {
                    cx.warning(
                        key.pos,
                        format!(
                            "podnet does not model `{dotted}`; accepted and ignored \
                             (reported once for every {})",
                            schema.kind
                        ),
                    );
                }
            }
            FieldCheck::Unmodelled { .. } | FieldCheck::Modelled => {}
        }
        let descend = segments == ["spec"]
            || field_at(schema, &segments).is_some_and(|f| f.children().is_some());
        drop(segments);
        if !descend {
            return;
        }
        match &value.value {
            Value::Map(_) => self.check_map(value, schema, warn, path, cx),
            Value::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    cx.at_index(i, |cx| self.check_map(item, schema, warn, path, cx));
                }
            }
            _ => {}
        }
    }
}

/// The fields a mapping at `parent` (a key path) may hold.
pub(super) fn siblings(schema: &'static KindSchema, parent: &[&str]) -> &'static [Field] {
    match parent.split_first() {
        None => TOP_LEVEL,
        Some((&"spec", rest)) => walk_fields(schema.spec, rest).unwrap_or(&[]),
        Some(_) => walk_fields(TOP_LEVEL, parent).unwrap_or(&[]),
    }
}

pub(super) fn walk_fields(mut fields: &'static [Field], path: &[&str]) -> Option<&'static [Field]> {
    for name in path {
        fields = api_fields::find_field(fields, name)?.children()?;
    }
    Some(fields)
}

/// The table entry of the field at `path`, if the tables have one.
pub(super) fn field_at(schema: &'static KindSchema, path: &[&str]) -> Option<&'static Field> {
    let (last, parent) = path.split_last()?;
    api_fields::find_field(siblings(schema, parent), last)
}

// ---------------------------------------------------------------------------------------------
// A located mapping (a `spec`, or an object inside it) and its fields.

/// The entries of a mapping with the position of the mapping itself.
pub(in crate::scenario) struct Spec<'n> {
    entries: &'n [(Key, YamlNode)],
    pub(in crate::scenario) pos: Pos,
}

impl<'n> Spec<'n> {
    /// The resource's `spec`; a missing or null `spec:` is an empty one.
    pub(in crate::scenario) fn of(r: &'n Resource, cx: &mut Cx) -> Option<Spec<'n>> {
        match r.body.get("spec") {
            None => Some(Spec {
                entries: &[],
                pos: r.body.pos,
            }),
            Some(node) => cx.at_key("spec", |cx| Spec::from_node(node, cx)),
        }
    }

    /// A mapping (null meaning an empty one); anything else is reported at the current path.
    pub(in crate::scenario) fn from_node(node: &'n YamlNode, cx: &mut Cx) -> Option<Spec<'n>> {
        match &node.value {
            Value::Null => Some(Spec {
                entries: &[],
                pos: node.pos,
            }),
            Value::Map(entries) => Some(Spec {
                entries,
                pos: node.pos,
            }),
            other => {
                cx.error(
                    node.pos,
                    format!("expected a mapping, found {}", other.kind_name()),
                );
                None
            }
        }
    }

    /// The value of `key`, unless absent or null (null means "not set", as in Kubernetes).
    pub(in crate::scenario) fn node(&self, key: &str) -> Option<&'n YamlNode> {
        self.entries
            .iter()
            .find(|(k, _)| k.text == key)
            .map(|(_, v)| v)
            .filter(|v| !matches!(v.value, Value::Null))
    }

    pub(in crate::scenario) fn has(&self, key: &str) -> bool {
        self.node(key).is_some()
    }

    /// Where `key`'s value is, else where the mapping is.
    pub(in crate::scenario) fn pos_of(&self, key: &str) -> Pos {
        self.node(key).map_or(self.pos, |n| n.pos)
    }

    /// Decodes `key` with `decode`, under `key` in the path.
    pub(in crate::scenario) fn get<T>(
        &self,
        cx: &mut Cx,
        key: &str,
        decode: impl FnOnce(&YamlNode, &mut Cx) -> Option<T>,
    ) -> Option<T> {
        let node = self.node(key)?;
        cx.at_key(key, |cx| decode(node, cx))
    }

    /// Like [`Spec::get`] with the type's own decoder.
    pub(in crate::scenario) fn value<T: Decode>(&self, cx: &mut Cx, key: &str) -> Option<T> {
        self.get(cx, key, T::decode)
    }

    /// Like [`Spec::get`], reporting a missing field at the mapping.
    pub(in crate::scenario) fn required<T>(
        &self,
        cx: &mut Cx,
        key: &str,
        decode: impl FnOnce(&YamlNode, &mut Cx) -> Option<T>,
    ) -> Option<T> {
        if !self.has(key) {
            cx.error(self.pos, format!("missing required field `{key}`"));
            return None;
        }
        self.get(cx, key, decode)
    }

    /// A nested mapping such as `spec.bgp`.
    pub(in crate::scenario) fn child(&self, cx: &mut Cx, key: &str) -> Option<Spec<'n>> {
        let node = self.node(key)?;
        cx.at_key(key, |cx| Spec::from_node(node, cx))
    }
}

pub(in crate::scenario) fn seq_items(node: &YamlNode) -> Option<&[YamlNode]> {
    match &node.value {
        Value::Seq(items) => Some(items),
        _ => None,
    }
}

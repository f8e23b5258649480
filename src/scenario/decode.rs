//! Decoding the located YAML tree into raw scenario types, collecting every problem.
//!
//! [`Decode`] is podnet's small replacement for `serde::Deserialize`: it never stops at the
//! first problem. Each failure is recorded in the [`Cx`] with its position and field path, and
//! the value is skipped, so one run reports every unknown key, wrong type and bad address.
//! Raw structs are declared with [`raw_struct!`], which generates the struct (every field an
//! optional [`Loc`]), its list of keys for "did you mean" suggestions, its decoder and its
//! JSON Schema. Whether a field is required is decided later, by `build`.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnet::IpNet;
use schemars::{JsonSchema, Schema, SchemaGenerator};

use super::diag::{Diagnostic, Pos, nearest};
use super::duration::parse_duration;
use super::yaml::{Key, Value, YamlNode};
use crate::model::TextEnum;
use crate::model::label::{self, LabelProblem};
use crate::model::time::SimDuration;

/// A decoded value with the position it was written at.
#[derive(Clone, Debug, PartialEq)]
pub struct Loc<T> {
    pub value: T,
    pub pos: Pos,
}

impl<T> Loc<T> {
    pub fn new(value: T, pos: Pos) -> Loc<T> {
        Loc { value, pos }
    }
}

impl<T: JsonSchema> JsonSchema for Loc<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }
    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

/// One step of a field path.
#[derive(Clone, Debug)]
enum Seg {
    Key(String),
    Index(usize),
}

/// The decoding context: the problems found so far and the path being decoded.
#[derive(Debug, Default)]
pub struct Cx {
    pub diagnostics: Vec<Diagnostic>,
    path: Vec<Seg>,
    /// "Did you mean" searches over user-sized candidate lists done so far (see [`Cx::suggest`]).
    suggestions: usize,
    /// The paths of the errors recorded, for [`Cx::has_error_under`] in logarithmic time.
    error_paths: BTreeSet<String>,
    /// (path, key) of every error that suggested `key`, for [`Cx::has_error_near`].
    suggested: BTreeSet<(String, String)>,
}

/// How many "did you mean" searches over user-sized lists one load makes: each costs a pass
/// over the candidates, and past this many errors of a kind the messages are folded anyway.
const MAX_SUGGESTIONS: usize = 200;

impl Cx {
    pub fn new() -> Cx {
        Cx::default()
    }

    /// The nearest of `candidates` to `word` ("did you mean"), for candidate lists whose size
    /// the input decides (node names, workloads, pools): after [`MAX_SUGGESTIONS`] searches
    /// no more are made, so many bad references cannot cost references × candidates.
    pub fn suggest<'a>(
        &mut self,
        word: &str,
        candidates: impl IntoIterator<Item = &'a str>,
    ) -> Option<&'a str> {
        if self.suggestions >= MAX_SUGGESTIONS {
            return None;
        }
        self.suggestions += 1;
        nearest(word, candidates)
    }

    /// The current field path, `topology.zones[0].name`.
    pub fn path(&self) -> String {
        render_path(&self.path)
    }

    pub fn error(&mut self, pos: Pos, message: impl Into<String>) {
        let path = self.path();
        self.push_error(Diagnostic::error(pos, path, message));
    }

    /// Records an error, indexing its path and any key it suggests.
    fn push_error(&mut self, d: Diagnostic) {
        if let Some(rest) = d.message.split("did you mean `").nth(1)
            && let Some(key) = rest.split('`').next()
        {
            self.suggested.insert((d.path.clone(), key.to_string()));
        }
        self.error_paths.insert(d.path.clone());
        self.diagnostics.push(d);
    }

    pub fn warning(&mut self, pos: Pos, message: impl Into<String>) {
        let path = self.path();
        self.diagnostics
            .push(Diagnostic::warning(pos, path, message));
    }

    /// Records an error under an explicit path (for a problem found later than the field
    /// was decoded, such as a name that a router podnet creates takes afterwards).
    pub fn error_at(&mut self, pos: Pos, path: &str, message: impl Into<String>) {
        self.push_error(Diagnostic::error(pos, path, message));
    }

    /// Whether an error was already reported for `key` under the current path (or anything
    /// inside it): a required field that failed to decode is not also "missing".
    pub fn has_error_under(&self, key: &str) -> bool {
        let mut prefix = self.path();
        if !prefix.is_empty() {
            prefix.push('.');
        }
        prefix.push_str(key);
        self.error_paths
            .range(prefix.clone()..)
            .take_while(|p| p.starts_with(&prefix))
            .any(|p| {
                let rest = &p[prefix.len()..];
                rest.is_empty() || rest.starts_with('.') || rest.starts_with('[')
            })
    }

    /// Whether an error under the current path suggested `key` ("did you mean `key`?"): a
    /// misspelt field is then not also reported as missing.
    pub fn has_error_near(&self, key: &str) -> bool {
        let prefix = self.path();
        self.suggested
            .range((prefix.clone(), String::new())..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .any(|(_, k)| k == key)
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// A required field: reports `missing required field` at the parent's position when it is
    /// absent (unless its value was already refused), and returns it when present.
    pub fn require<'a, T>(
        &mut self,
        field: &'a Option<Loc<T>>,
        parent: Pos,
        key: &str,
    ) -> Option<&'a Loc<T>> {
        if field.is_none() && !self.has_error_under(key) {
            self.error(parent, format!("missing required field `{key}`"));
        }
        field.as_ref()
    }

    /// Runs `f` with `key` appended to the path.
    pub fn at_key<R>(&mut self, key: &str, f: impl FnOnce(&mut Cx) -> R) -> R {
        self.path.push(Seg::Key(key.to_string()));
        let r = f(self);
        self.path.pop();
        r
    }

    /// Runs `f` with `[index]` appended to the path.
    pub fn at_index<R>(&mut self, index: usize, f: impl FnOnce(&mut Cx) -> R) -> R {
        self.path.push(Seg::Index(index));
        let r = f(self);
        self.path.pop();
        r
    }

    /// Runs `f` with the path replaced by `path` (used when a value is decoded from another
    /// file, such as a manifest, whose path starts afresh).
    pub fn with_path_prefix<R>(&mut self, prefix: &str, f: impl FnOnce(&mut Cx) -> R) -> R {
        let saved = std::mem::take(&mut self.path);
        if !prefix.is_empty() {
            self.path.push(Seg::Key(prefix.to_string()));
        }
        let r = f(self);
        self.path = saved;
        r
    }

    /// The entries of a mapping node, reporting any key not in `keys` as an error with the
    /// nearest valid key suggested. Returns `None` (after reporting) if `node` is no mapping.
    pub fn mapping<'n>(
        &mut self,
        node: &'n YamlNode,
        keys: &[&str],
    ) -> Option<&'n [(Key, YamlNode)]> {
        let Value::Map(entries) = &node.value else {
            self.error(
                node.pos,
                format!("expected a mapping, found {}", node.value.kind_name()),
            );
            return None;
        };
        for (key, _) in entries {
            if !keys.contains(&key.text.as_str()) {
                let message = unknown_key_message(&key.text, keys);
                self.at_key(&key.text, |cx| cx.error(key.pos, message));
            }
        }
        Some(entries)
    }

    /// Decodes the entry `key` of `entries`, if present and not null.
    pub fn field<T: Decode>(&mut self, entries: &[(Key, YamlNode)], key: &str) -> Option<Loc<T>> {
        let (_, node) = entries.iter().find(|(k, _)| k.text == key)?;
        if matches!(node.value, Value::Null) {
            return None;
        }
        self.at_key(key, |cx| T::decode(node, cx).map(|v| Loc::new(v, node.pos)))
    }
}

/// Renders a path from its segments.
fn render_path(segments: &[Seg]) -> String {
    let mut out = String::new();
    for seg in segments {
        match seg {
            // An empty key adds nothing (no stray `.`).
            Seg::Key(k) if k.is_empty() => {}
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    out
}

/// "unknown field `x`", with the nearest valid key or the list of valid keys.
pub fn unknown_key_message(key: &str, keys: &[&str]) -> String {
    match nearest(key, keys.iter().copied()) {
        Some(near) => format!("unknown field `{key}`; did you mean `{near}`?"),
        None => format!(
            "unknown field `{key}`; expected one of: {}",
            keys.join(", ")
        ),
    }
}

/// A type that can be decoded from a located YAML node.
pub trait Decode: Sized {
    /// Decodes `node`, reporting problems into `cx`; `None` when the value is unusable.
    fn decode(node: &YamlNode, cx: &mut Cx) -> Option<Self>;
}

fn type_error(node: &YamlNode, cx: &mut Cx, expected: &str) {
    cx.error(
        node.pos,
        format!("expected {expected}, found {}", node.value.kind_name()),
    );
}

impl Decode for String {
    fn decode(node: &YamlNode, cx: &mut Cx) -> Option<String> {
        match &node.value {
            Value::Str(s) => Some(s.clone()),
            Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
                let text = node.scalar_text().unwrap_or_default();
                cx.error(
                    node.pos,
                    format!(
                        "expected a string, found {} (write it in quotes: \"{text}\")",
                        node.value.kind_name()
                    ),
                );
                None
            }
            _ => {
                type_error(node, cx, "a string");
                None
            }
        }
    }
}

impl Decode for bool {
    fn decode(node: &YamlNode, cx: &mut Cx) -> Option<bool> {
        match node.value {
            Value::Bool(b) => Some(b),
            _ => {
                type_error(node, cx, "true or false");
                None
            }
        }
    }
}

macro_rules! decode_int {
    ($($t:ty),*) => {$(
        impl Decode for $t {
            fn decode(node: &YamlNode, cx: &mut Cx) -> Option<$t> {
                match node.value {
                    Value::Int(i) => match <$t>::try_from(i) {
                        Ok(v) => Some(v),
                        Err(_) => {
                            cx.error(node.pos, format!(
                                "{i} is out of range ({}..={})", <$t>::MIN, <$t>::MAX));
                            None
                        }
                    },
                    _ => { type_error(node, cx, "an integer"); None }
                }
            }
        }
    )*};
}
decode_int!(u8, u16, u32, u64, i64);

impl Decode for IpAddr {
    fn decode(node: &YamlNode, cx: &mut Cx) -> Option<IpAddr> {
        let text = String::decode(node, cx)?;
        match text.trim().parse::<IpAddr>() {
            Ok(ip) => Some(ip),
            Err(_) => {
                cx.error(node.pos, format!("`{text}` is not an IP address"));
                None
            }
        }
    }
}

/// A CIDR written with no host bits set, such as `10.6.0.0/16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr(pub IpNet);

impl JsonSchema for Cidr {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Cidr".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({"type": "string", "description": "A CIDR such as 10.6.0.0/16."})
    }
}

impl Decode for Cidr {
    fn decode(node: &YamlNode, cx: &mut Cx) -> Option<Cidr> {
        let text = String::decode(node, cx)?;
        let Ok(net) = text.trim().parse::<IpNet>() else {
            cx.error(
                node.pos,
                format!("`{text}` is not a CIDR such as 10.0.0.0/16"),
            );
            return None;
        };
        if net.trunc() != net {
            cx.error(
                node.pos,
                format!(
                    "`{text}` has host bits set; did you mean `{}`?",
                    net.trunc()
                ),
            );
            return None;
        }
        Some(Cidr(net))
    }
}

impl Decode for SimDuration {
    fn decode(node: &YamlNode, cx: &mut Cx) -> Option<SimDuration> {
        let text = match &node.value {
            Value::Str(s) => s.clone(),
            Value::Int(i) => {
                cx.error(
                    node.pos,
                    format!("a duration needs a unit: `{i}s`, `{i}ms`, `{i}us`, `{i}m` or `{i}h`"),
                );
                return None;
            }
            _ => {
                type_error(node, cx, "a duration such as 10ms or 1.5s");
                return None;
            }
        };
        match parse_duration(&text) {
            Ok(d) => Some(d),
            Err(e) => {
                cx.error(node.pos, e);
                None
            }
        }
    }
}

impl<T: Decode> Decode for Vec<Loc<T>> {
    fn decode(node: &YamlNode, cx: &mut Cx) -> Option<Vec<Loc<T>>> {
        let Value::Seq(items) = &node.value else {
            type_error(node, cx, "a list");
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            if let Some(v) = cx.at_index(i, |cx| T::decode(item, cx)) {
                out.push(Loc::new(v, item.pos));
            }
        }
        Some(out)
    }
}

/// A string-to-string map such as labels, annotations or a nodeSelector.
///
/// Label values written as YAML booleans or numbers (`routeReflector: true`, as in Calico's
/// own test data) are taken as their text with a warning, as SPEC §2.3 asks.
#[derive(Clone, Debug, Default, PartialEq, JsonSchema)]
#[schemars(transparent)]
pub struct StringMap(pub BTreeMap<String, String>);

impl Decode for StringMap {
    fn decode(node: &YamlNode, cx: &mut Cx) -> Option<StringMap> {
        let Value::Map(entries) = &node.value else {
            type_error(node, cx, "a mapping of strings");
            return None;
        };
        let mut out = BTreeMap::new();
        for (key, value) in entries {
            cx.at_key(&key.text, |cx| match &value.value {
                Value::Str(s) => {
                    out.insert(key.text.clone(), s.clone());
                }
                Value::Null => {
                    out.insert(key.text.clone(), String::new());
                }
                Value::Bool(_) | Value::Int(_) | Value::Float(_) => {
                    let text = value.scalar_text().unwrap_or_default();
                    cx.warning(
                        value.pos,
                        format!(
                            "value written as {}; taken as the string \"{text}\" \
                             (Kubernetes label and annotation values are strings)",
                            value.value.kind_name()
                        ),
                    );
                    out.insert(key.text.clone(), text);
                }
                Value::Seq(_) | Value::Map(_) => type_error(value, cx, "a string"),
            });
        }
        Some(StringMap(out))
    }
}

/// Kubernetes labels (or a label selector's `matchLabels`): a [`StringMap`] whose keys and
/// values must be valid label keys and values (a value at most 63 characters of
/// alphanumerics, `-`, `_` and `.`, beginning and ending alphanumeric).
#[derive(Clone, Debug, Default, PartialEq, JsonSchema)]
#[schemars(transparent)]
pub struct LabelMap(pub BTreeMap<String, String>);

impl Decode for LabelMap {
    fn decode(node: &YamlNode, cx: &mut Cx) -> Option<LabelMap> {
        let map = StringMap::decode(node, cx)?;
        if let Value::Map(entries) = &node.value {
            for (key, value) in entries {
                let text = map.0.get(&key.text).map(String::as_str).unwrap_or("");
                cx.at_key(&key.text, |cx| {
                    if let Err(e) = label::check_key(&key.text) {
                        let shown: String = key.text.chars().take(80).collect();
                        cx.error(key.pos, format!("`{shown}` is not a valid label key: {e}"));
                    }
                    match label::check_value(text) {
                        Ok(()) => {}
                        Err(e @ LabelProblem::ValueTooLong(_)) => {
                            cx.error(value.pos, e.to_string())
                        }
                        Err(e) => cx.error(
                            value.pos,
                            format!("`{text}` is not a valid label value: {e}"),
                        ),
                    }
                });
            }
        }
        Some(LabelMap(map.0))
    }
}

/// Any YAML value, kept located for a later, specialised decoder (Kubernetes resources).
#[derive(Clone, Debug, PartialEq)]
pub struct AnyNode(pub YamlNode);

impl Decode for AnyNode {
    fn decode(node: &YamlNode, _cx: &mut Cx) -> Option<AnyNode> {
        Some(AnyNode(node.clone()))
    }
}

impl JsonSchema for AnyNode {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "KubernetesObject".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "type": "object",
            "description": "A Kubernetes, Calico or Spiderpool manifest as `kubectl apply` takes it.",
            "required": ["apiVersion", "kind"],
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {"type": ["object", "null"]}
            }
        })
    }
}

/// Declares a raw struct that mirrors a YAML mapping: every field is an optional [`Loc`],
/// unknown keys are reported with a suggestion, and the JSON Schema comes from the same list.
macro_rules! raw_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $key:literal ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                #[serde(rename = $key, default)]
                pub $field: Option<$crate::scenario::decode::Loc<$ty>>,
            )*
            /// Where the mapping starts.
            #[serde(skip)]
            pub pos: $crate::scenario::diag::Pos,
        }

        impl $name {
            /// The keys this mapping accepts, as written in YAML.
            pub const KEYS: &'static [&'static str] = &[$($key),*];
        }

        impl $crate::scenario::decode::Decode for $name {
            fn decode(
                node: &$crate::scenario::yaml::YamlNode,
                cx: &mut $crate::scenario::decode::Cx,
            ) -> Option<$name> {
                let entries = cx.mapping(node, Self::KEYS)?;
                Some($name {
                    $( $field: cx.field(entries, $key), )*
                    pos: node.pos,
                })
            }
        }
    };
}
pub(crate) use raw_struct;

/// Words such as `linux` or `v3.30`, with "did you mean" for near misses.
impl<T: TextEnum> Decode for T {
    fn decode(node: &YamlNode, cx: &mut Cx) -> Option<T> {
        let text = node.scalar_text();
        if let Some(v) = text.as_deref().and_then(T::from_text) {
            return Some(v);
        }
        let shown = text.unwrap_or_else(|| node.value.kind_name().to_string());
        let hint = match nearest(&shown, T::TEXTS.iter().copied()) {
            Some(near) => format!("; did you mean `{near}`?"),
            None => String::new(),
        };
        cx.error(
            node.pos,
            format!("`{shown}` is not one of: {}{hint}", T::TEXTS.join(", ")),
        );
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::diag::FileId;
    use crate::scenario::yaml::{Limits, parse_single};

    raw_struct! {
        /// A test struct.
        pub struct Sample {
            count: u32 = "count",
            name: String = "name",
            labels: StringMap = "labels",
            items: Vec<Loc<u8>> = "items",
        }
    }

    fn decode(text: &str) -> (Option<Sample>, Vec<Diagnostic>) {
        let node = parse_single(text, FileId(0), Limits::DEFAULT).unwrap();
        let mut cx = Cx::new();
        let value = Sample::decode(&node, &mut cx);
        (value, cx.diagnostics)
    }

    #[test]
    fn every_problem_is_reported_with_its_path() {
        let (value, diags) = decode("count: -1\nnme: x\nitems: [1, 300, 2]\n");
        let value = value.unwrap();
        assert!(value.count.is_none());
        assert_eq!(value.items.unwrap().value.len(), 2);
        let rendered: Vec<_> = diags
            .iter()
            .map(|d| (d.pos.line, d.path.as_str()))
            .collect();
        assert_eq!(rendered, vec![(2, "nme"), (1, "count"), (3, "items[1]")]);
        assert!(
            diags[0].message.contains("did you mean `name`"),
            "{}",
            diags[0].message
        );
    }

    #[test]
    fn numbers_are_not_silently_strings() {
        let (_, diags) = decode("name: 123\n");
        assert!(
            diags[0].message.contains("write it in quotes"),
            "{}",
            diags[0].message
        );
    }

    #[test]
    fn boolean_label_values_become_strings_with_a_warning() {
        let (value, diags) = decode("labels: {routeReflector: true}\n");
        let labels = value.unwrap().labels.unwrap().value.0;
        assert_eq!(labels["routeReflector"], "true");
        assert_eq!(diags.len(), 1);
        assert!(!diags[0].is_error());
        assert_eq!(diags[0].path, "labels.routeReflector");
    }
}

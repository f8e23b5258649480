//! A located YAML tree: every node knows the file, line and column it came from.
//!
//! podnet reads YAML with `saphyr-parser` (the event parser underneath serde-saphyr) and builds
//! its own tree instead of deserializing straight into structs, for two reasons: validation
//! must report *every* problem with its location (serde stops at the first), and hostile input
//! must be refused early with bounded memory.
//!
//! Invariants:
//! - Nesting deeper than [`Limits::max_depth`] stops parsing with an error, so later recursive
//!   walks over the tree (decoding, dropping) cannot overflow the stack.
//! - Aliases are expanded by copying the anchored node, and every copy is charged against
//!   [`Limits::max_nodes`], so an alias bomb is refused after at most that many nodes.
//! - Plain scalars are resolved with the YAML 1.2 core schema (null, bool, int, float, string);
//!   quoted and block scalars are always strings.
//! - Mapping keys are scalars and unique within their mapping.
//!
//! This module knows nothing of podnet's scenario format; `decode` gives the tree meaning.

use std::fmt;

use saphyr_parser::{Event, Parser, ScalarStyle, Span, Tag};

use super::diag::{Diagnostic, FileId, Pos};

/// Bounds that keep the reader's time and memory in check whatever the input is.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest accepted file, in bytes.
    pub max_file_bytes: usize,
    /// Deepest accepted nesting of sequences and mappings.
    pub max_depth: usize,
    /// Most nodes a file may expand to, counting every alias expansion.
    pub max_nodes: usize,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        max_file_bytes: 16 * 1024 * 1024,
        max_depth: 64,
        max_nodes: 1_000_000,
    };
}

/// One node of the tree with its position.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub pos: Pos,
    pub value: Value,
}

/// The value of a node after core-schema resolution.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Key, Node)>),
}

/// A mapping key: always a scalar, kept as the text written.
#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    pub pos: Pos,
    pub text: String,
}

impl Value {
    /// A short name for the kind of value, for "expected X, found Y" messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

impl Node {
    /// The mapping entry for `key`, if this node is a mapping that has it.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|(k, _)| k.text == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The scalar as text, if it is a scalar other than null.
    pub fn scalar_text(&self) -> Option<String> {
        match &self.value {
            Value::Str(s) => Some(s.clone()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Int(i) => Some(i.to_string()),
            Value::Float(x) => Some(x.to_string()),
            _ => None,
        }
    }

    /// The number of nodes in this subtree, itself included.
    pub fn size(&self) -> usize {
        let mut count = 0;
        let mut stack = vec![self];
        while let Some(node) = stack.pop() {
            count += 1;
            match &node.value {
                Value::Seq(items) => stack.extend(items.iter()),
                Value::Map(entries) => stack.extend(entries.iter().map(|(_, v)| v)),
                _ => {}
            }
        }
        count
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::Seq(_) => f.write_str("[...]"),
            Value::Map(_) => f.write_str("{...}"),
        }
    }
}

/// Parses every document of `text`. Empty documents (a stray `---`) are skipped.
/// On error, returns the first problem: a YAML syntax error cannot be recovered from.
pub fn parse_documents(text: &str, file: FileId, limits: Limits) -> Result<Vec<Node>, Diagnostic> {
    if text.len() > limits.max_file_bytes {
        return Err(Diagnostic::error(
            Pos::new(file, 1, 1),
            "",
            format!(
                "the file is {} bytes, more than the limit of {} bytes",
                text.len(),
                limits.max_file_bytes
            ),
        ));
    }
    let mut builder = TreeBuilder::new(file, limits);
    for item in Parser::new_from_str(text) {
        match item {
            Ok((event, span)) => builder.event(event, span)?,
            Err(e) => {
                let m = e.marker();
                let message = if e.info().contains("recursion limit") {
                    // The parser's own guard fired before ours (it counts flow levels).
                    format!(
                        "nesting deeper than {} levels; refusing the document",
                        limits.max_depth
                    )
                } else {
                    format!("invalid YAML: {}", e.info())
                };
                return Err(Diagnostic::error(
                    Pos::new(file, m.line(), m.col() + 1),
                    "",
                    message,
                ));
            }
        }
    }
    Ok(builder.documents)
}

/// Parses a file that must hold exactly one document (a scenario or an include).
pub fn parse_single(text: &str, file: FileId, limits: Limits) -> Result<Node, Diagnostic> {
    let docs = parse_documents(text, file, limits)?;
    let mut docs = docs.into_iter();
    match (docs.next(), docs.next()) {
        (None, _) => Err(Diagnostic::error(
            Pos::new(file, 1, 1),
            "",
            "the file is empty: expected a YAML mapping",
        )),
        (Some(first), None) => Ok(first),
        (Some(_), Some(second)) => Err(Diagnostic::error(
            second.pos,
            "",
            "a scenario file holds one YAML document; this is a second one (remove the `---`)",
        )),
    }
}

/// A container being filled while its events arrive.
enum Open {
    Seq {
        pos: Pos,
        anchor: usize,
        items: Vec<Node>,
    },
    Map {
        pos: Pos,
        anchor: usize,
        entries: Vec<(Key, Node)>,
        key: Option<Key>,
    },
}

struct TreeBuilder {
    file: FileId,
    limits: Limits,
    stack: Vec<Open>,
    /// Anchored nodes by anchor id, for aliases (a later anchor with the same id replaces it).
    anchors: Vec<(usize, Node, usize)>,
    nodes: usize,
    documents: Vec<Node>,
    in_document: bool,
}

impl TreeBuilder {
    fn new(file: FileId, limits: Limits) -> TreeBuilder {
        TreeBuilder {
            file,
            limits,
            stack: Vec::new(),
            anchors: Vec::new(),
            nodes: 0,
            documents: Vec::new(),
            in_document: false,
        }
    }

    fn pos(&self, span: &Span) -> Pos {
        Pos::new(self.file, span.start.line(), span.start.col() + 1)
    }

    fn charge(&mut self, count: usize, pos: Pos) -> Result<(), Diagnostic> {
        self.nodes = self.nodes.saturating_add(count);
        if self.nodes > self.limits.max_nodes {
            return Err(Diagnostic::error(
                pos,
                "",
                format!(
                    "the document expands to more than {} YAML nodes (alias expansion included); \
                     refusing it",
                    self.limits.max_nodes
                ),
            ));
        }
        Ok(())
    }

    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), Diagnostic> {
        let pos = self.pos(&span);
        let is_seq = matches!(event, Event::SequenceStart(..));
        match event {
            Event::StreamStart | Event::StreamEnd | Event::Nothing => {}
            Event::DocumentStart(_) => {
                self.in_document = true;
                self.anchors.clear();
            }
            Event::DocumentEnd => self.in_document = false,
            Event::Alias(id) => {
                let Some(index) = self.anchors.iter().rposition(|(a, _, _)| *a == id) else {
                    return Err(Diagnostic::error(pos, "", "alias to an unknown anchor"));
                };
                // Charge before copying, so an alias bomb is refused without being built.
                self.charge(self.anchors[index].2, pos)?;
                let mut node = self.anchors[index].1.clone();
                node.pos = pos;
                self.push(node)?;
            }
            Event::Scalar(text, style, anchor, tag) => {
                self.charge(1, pos)?;
                let value = resolve_scalar(&text, style, tag.as_deref(), pos)?;
                let node = Node { pos, value };
                if anchor > 0 {
                    self.anchors.push((anchor, node.clone(), 1));
                }
                self.push(node)?;
            }
            Event::SequenceStart(anchor, tag) | Event::MappingStart(anchor, tag) => {
                if let Some(tag) = tag.as_deref() {
                    check_collection_tag(tag, pos)?;
                }
                if self.stack.len() >= self.limits.max_depth {
                    return Err(Diagnostic::error(
                        pos,
                        "",
                        format!(
                            "nesting deeper than {} levels; refusing the document",
                            self.limits.max_depth
                        ),
                    ));
                }
                self.charge(1, pos)?;
                let open = if is_seq {
                    Open::Seq {
                        pos,
                        anchor,
                        items: Vec::new(),
                    }
                } else {
                    Open::Map {
                        pos,
                        anchor,
                        entries: Vec::new(),
                        key: None,
                    }
                };
                self.stack.push(open);
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor) = match self.stack.pop() {
                    Some(Open::Seq { pos, anchor, items }) => (
                        Node {
                            pos,
                            value: Value::Seq(items),
                        },
                        anchor,
                    ),
                    Some(Open::Map {
                        pos,
                        anchor,
                        entries,
                        ..
                    }) => (
                        Node {
                            pos,
                            value: Value::Map(entries),
                        },
                        anchor,
                    ),
                    None => return Err(Diagnostic::error(pos, "", "unbalanced YAML structure")),
                };
                if anchor > 0 {
                    let size = node.size();
                    self.anchors.push((anchor, node.clone(), size));
                }
                self.push(node)?;
            }
        }
        Ok(())
    }

    /// Places a finished node into its parent, or makes it a document.
    fn push(&mut self, node: Node) -> Result<(), Diagnostic> {
        match self.stack.last_mut() {
            None => {
                if !matches!(node.value, Value::Null) || self.in_document {
                    // A document holding only `null` (an empty document) is skipped.
                    if !matches!(node.value, Value::Null) {
                        self.documents.push(node);
                    }
                }
            }
            Some(Open::Seq { items, .. }) => items.push(node),
            Some(Open::Map { entries, key, .. }) => match key.take() {
                None => {
                    let text = match &node.value {
                        Value::Str(s) => s.clone(),
                        Value::Null => String::new(),
                        Value::Bool(_) | Value::Int(_) | Value::Float(_) => {
                            node.scalar_text().unwrap_or_default()
                        }
                        Value::Seq(_) | Value::Map(_) => {
                            return Err(Diagnostic::error(
                                node.pos,
                                "",
                                "a mapping key must be a plain value, not a list or mapping",
                            ));
                        }
                    };
                    if let Some((first, _)) = entries.iter().find(|(k, _)| k.text == text) {
                        return Err(Diagnostic::error(
                            node.pos,
                            "",
                            format!(
                                "duplicate key `{text}` (first at line {}, column {})",
                                first.pos.line, first.pos.col
                            ),
                        ));
                    }
                    *key = Some(Key {
                        pos: node.pos,
                        text,
                    });
                }
                Some(k) => entries.push((k, node)),
            },
        }
        Ok(())
    }
}

fn check_collection_tag(tag: &Tag, pos: Pos) -> Result<(), Diagnostic> {
    if tag.handle == "!!" && matches!(tag.suffix.as_str(), "map" | "seq" | "omap") {
        return Ok(());
    }
    if tag.is_yaml_core_schema() && matches!(tag.suffix.as_str(), "map" | "seq") {
        return Ok(());
    }
    Err(unknown_tag(tag, pos))
}

fn unknown_tag(tag: &Tag, pos: Pos) -> Diagnostic {
    let written = format!("{}{}", tag.handle, tag.suffix);
    Diagnostic::error(
        pos,
        "",
        format!(
            "unknown YAML tag `{written}`: YAML reads a value starting with `!` as a tag; \
             if this is a selector such as `!has(x)`, quote it: \"{written}\""
        ),
    )
}

/// Resolves a scalar with the YAML 1.2 core schema (and the explicit `!!` core tags).
fn resolve_scalar(
    text: &str,
    style: ScalarStyle,
    tag: Option<&Tag>,
    pos: Pos,
) -> Result<Value, Diagnostic> {
    if let Some(tag) = tag {
        let core = tag.handle == "!!" || tag.is_yaml_core_schema();
        return match (core, tag.suffix.as_str()) {
            (true, "str") => Ok(Value::Str(text.to_string())),
            (true, "null") => Ok(Value::Null),
            (true, "bool" | "int" | "float") => match resolve_plain(text) {
                Value::Str(_) => Err(Diagnostic::error(
                    pos,
                    "",
                    format!("`{text}` is not a valid !!{}", tag.suffix),
                )),
                v => Ok(v),
            },
            // The shorthand `!` (non-specific tag) means "a string".
            (false, "") if tag.handle == "!" => Ok(Value::Str(text.to_string())),
            _ => Err(unknown_tag(tag, pos)),
        };
    }
    match style {
        ScalarStyle::Plain => Ok(resolve_plain(text)),
        _ => Ok(Value::Str(text.to_string())),
    }
}

fn resolve_plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Value::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Value::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Value::Float(f64::NAN),
        _ => {}
    }
    if let Some(i) = parse_int(text) {
        return Value::Int(i);
    }
    if is_core_float(text)
        && let Ok(x) = text.parse::<f64>()
    {
        return Value::Float(x);
    }
    Value::Str(text.to_string())
}

fn parse_int(text: &str) -> Option<i128> {
    let (neg, digits) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let value = if let Some(hex) = digits.strip_prefix("0x") {
        if text.starts_with(['+', '-']) {
            return None;
        }
        i128::from_str_radix(hex, 16).ok()?
    } else if let Some(oct) = digits.strip_prefix("0o") {
        if text.starts_with(['+', '-']) {
            return None;
        }
        i128::from_str_radix(oct, 8).ok()?
    } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse::<i128>().ok()?
    } else {
        return None;
    };
    Some(if neg { -value } else { value })
}

/// The core schema's float pattern: `[-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?`
fn is_core_float(text: &str) -> bool {
    let s = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => {
            (!int.is_empty() || !frac.is_empty())
                && int.bytes().all(|b| b.is_ascii_digit())
                && frac.bytes().all(|b| b.is_ascii_digit())
        }
        None => !mantissa.is_empty() && mantissa.bytes().all(|b| b.is_ascii_digit()),
    };
    let exponent_ok = match exponent {
        None => true,
        Some(e) => {
            let e = e.strip_prefix(['-', '+']).unwrap_or(e);
            !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
        }
    };
    mantissa_ok && exponent_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Node, Diagnostic> {
        parse_single(text, FileId(0), Limits::DEFAULT)
    }

    #[test]
    fn scalars_resolve_with_the_core_schema() {
        let node =
            parse("a: 1\nb: '1'\nc: true\nd: ~\ne: 1.5\nf: 0x1F\ng: 10.0.0.1\nh: 1e3\n").unwrap();
        let get = |k| node.get(k).unwrap().value.clone();
        assert_eq!(get("a"), Value::Int(1));
        assert_eq!(get("b"), Value::Str("1".into()));
        assert_eq!(get("c"), Value::Bool(true));
        assert_eq!(get("d"), Value::Null);
        assert_eq!(get("e"), Value::Float(1.5));
        assert_eq!(get("f"), Value::Int(31));
        assert_eq!(get("g"), Value::Str("10.0.0.1".into()));
        assert_eq!(get("h"), Value::Float(1000.0));
    }

    #[test]
    fn positions_are_one_based() {
        let node = parse("top:\n  inner: [1, 2]\n").unwrap();
        let inner = node.get("top").unwrap().get("inner").unwrap();
        assert_eq!((inner.pos.line, inner.pos.col), (2, 10));
        let Value::Seq(items) = &inner.value else {
            panic!("not a seq")
        };
        assert_eq!((items[1].pos.line, items[1].pos.col), (2, 14));
    }

    #[test]
    fn duplicate_keys_are_refused_with_both_places() {
        let err = parse("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!((err.pos.line, err.pos.col), (3, 1));
        assert!(
            err.message.contains("first at line 1, column 1"),
            "{}",
            err.message
        );
    }

    #[test]
    fn aliases_expand_and_bombs_are_refused() {
        let node = parse("a: &x {k: v}\nb: *x\n").unwrap();
        assert_eq!(
            node.get("b").unwrap().get("k").unwrap().value,
            Value::Str("v".into())
        );

        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            bomb.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let start = std::time::Instant::now();
        let err = parse(&bomb).unwrap_err();
        assert!(err.message.contains("more than"), "{}", err.message);
        assert!(start.elapsed().as_secs() < 2);
    }

    #[test]
    fn deep_nesting_is_refused_without_overflow() {
        let deep_flow = "[".repeat(100_000);
        let err = parse(&deep_flow).unwrap_err();
        assert!(
            err.message.contains("nesting deeper than 64"),
            "{}",
            err.message
        );

        let mut deep_block = String::new();
        for depth in 0..1_000 {
            deep_block.push_str(&" ".repeat(depth));
            deep_block.push_str("a:\n");
        }
        let err = parse(&deep_block).unwrap_err();
        assert!(
            err.message.contains("nesting deeper than 64"),
            "{}",
            err.message
        );
    }

    #[test]
    fn oversized_files_are_refused_before_parsing() {
        let limits = Limits {
            max_file_bytes: 10,
            ..Limits::DEFAULT
        };
        let err = parse_single("a: 123456789\n", FileId(0), limits).unwrap_err();
        assert!(err.message.contains("more than the limit of 10 bytes"));
    }

    #[test]
    fn an_unquoted_selector_is_a_tag_and_is_refused_with_advice() {
        let err = parse("nodeSelector: !has(route-reflector)\n").unwrap_err();
        assert_eq!((err.pos.line, err.pos.col), (1, 15));
        assert!(err.message.contains("quote it"), "{}", err.message);
    }

    #[test]
    fn syntax_errors_are_located() {
        let err = parse("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(err.message.starts_with("invalid YAML"), "{}", err.message);
        assert!(err.pos.line >= 1);
    }

    #[test]
    fn several_documents_and_end_markers() {
        let docs = parse_documents(
            "---\na: 1\n...\n---\nb: 2\n---\n",
            FileId(0),
            Limits::DEFAULT,
        )
        .unwrap();
        assert_eq!(docs.len(), 2);
    }
}

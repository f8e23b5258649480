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
//! - Every node built is charged against one [`Budget`] per scenario (nodes and scalar bytes):
//!   aliases are expanded by copying the anchored node and charged what they expand to before
//!   the copy is made, and so is the copy an anchor keeps, so an alias bomb or a repeated
//!   file is refused after at most [`Limits::max_nodes`] nodes and [`Limits::max_scalar_bytes`]
//!   bytes whatever its shape.
//! - The scanner's own look-ahead is bounded too ([`Limits::max_lookahead`]): memory
//!   never grows with input the tree has not seen.
//! - Duplicate keys and aliases are found in constant time (hash indices), so no input makes
//!   reading quadratic.
//! - Plain scalars are resolved with the YAML 1.2 core schema (null, bool, int, float, string);
//!   quoted and block scalars are always strings.
//! - Mapping keys are scalars and unique within their mapping.
//!
//! This module knows nothing of podnet's scenario format; `decode` gives the tree meaning.

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

use saphyr_parser::input::SkipTabs;
use saphyr_parser::{Event, Input, Parser, ScalarStyle, Span, StrInput, Tag};

use super::diag::{Diagnostic, FileId, Pos};

/// Bounds that keep the reader's time and memory in check whatever the input is.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest accepted file, in bytes.
    pub max_file_bytes: usize,
    /// Deepest accepted nesting of sequences and mappings.
    pub max_depth: usize,
    /// Most nodes the files of one scenario may expand to, counting every alias expansion and
    /// every anchored node (which is kept twice: in the tree and for its aliases).
    pub max_nodes: usize,
    /// Most scalar bytes (keys and values) the files of one scenario may expand to, counted
    /// the same way: an alias to a 1 MiB string costs 1 MiB.
    pub max_scalar_bytes: usize,
    /// Most characters the reader may consume one by one (indicators, punctuation, quoted
    /// text) without finishing a node. The YAML scanner keeps a flow collection (`[...]`,
    /// `{...}`, a JSON document) that starts where a key could start in memory, token by
    /// token, until its end; every token starts with such a character, so this bounds that
    /// buffer (measured: at most ~190 bytes per such character, so ~100 MiB at 512 Ki).
    pub max_lookahead: usize,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        max_file_bytes: 16 * 1024 * 1024,
        max_depth: 64,
        max_nodes: 1_000_000,
        max_scalar_bytes: 64 * 1024 * 1024,
        max_lookahead: 512 * 1024,
    };
}

/// What the files of one scenario have cost so far, against [`Limits`]: one budget is shared
/// by the scenario file, its includes and its manifests, so listing a file many times or
/// splitting a bomb across files buys nothing.
#[derive(Clone, Debug)]
pub struct Budget {
    pub limits: Limits,
    nodes: usize,
    bytes: usize,
}

impl Budget {
    pub fn new(limits: Limits) -> Budget {
        Budget {
            limits,
            nodes: 0,
            bytes: 0,
        }
    }

    /// Nodes charged so far.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Scalar bytes charged so far.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    fn charge(&mut self, weight: Weight, pos: Pos) -> Result<(), Diagnostic> {
        self.nodes = self.nodes.saturating_add(weight.nodes);
        self.bytes = self.bytes.saturating_add(weight.bytes);
        if self.nodes > self.limits.max_nodes {
            return Err(Diagnostic::error(
                pos,
                "",
                format!(
                    "the scenario's YAML expands to more than {} nodes (aliases and every file \
                     read included); refusing it",
                    self.limits.max_nodes
                ),
            ));
        }
        if self.bytes > self.limits.max_scalar_bytes {
            return Err(Diagnostic::error(
                pos,
                "",
                format!(
                    "the scenario's YAML expands to more than {} bytes of text (aliases and \
                     every file read included); refusing it",
                    self.limits.max_scalar_bytes
                ),
            ));
        }
        Ok(())
    }
}

/// The cost of a subtree: its nodes and its scalar bytes.
#[derive(Clone, Copy, Debug, Default)]
struct Weight {
    nodes: usize,
    bytes: usize,
}

impl Weight {
    fn add(&mut self, other: Weight) {
        self.nodes = self.nodes.saturating_add(other.nodes);
        self.bytes = self.bytes.saturating_add(other.bytes);
    }
}

/// One node of the tree with its position.
#[derive(Clone, Debug, PartialEq)]
pub struct YamlNode {
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
    Seq(Vec<YamlNode>),
    Map(Vec<(Key, YamlNode)>),
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

impl YamlNode {
    /// The mapping entry for `key`, if this node is a mapping that has it.
    pub fn get(&self, key: &str) -> Option<&YamlNode> {
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

/// Parses every document of `text` on a fresh budget (see [`parse_documents_within`]).
pub fn parse_documents(
    text: &str,
    file: FileId,
    limits: Limits,
) -> Result<Vec<YamlNode>, Diagnostic> {
    parse_documents_within(text, file, &mut Budget::new(limits))
}

/// Parses every document of `text`, charging what it expands to against `budget`. Empty
/// documents (a stray `---`) are skipped. On error, returns the first problem: a YAML syntax
/// error cannot be recovered from.
pub fn parse_documents_within(
    text: &str,
    file: FileId,
    budget: &mut Budget,
) -> Result<Vec<YamlNode>, Diagnostic> {
    let limits = budget.limits;
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
    let skipped = Rc::new(Cell::new(0usize));
    let at_last_event = Rc::new(Cell::new(0usize));
    let overrun = Rc::new(Cell::new(false));
    let input = Guarded {
        inner: StrInput::new(text),
        skipped: Rc::clone(&skipped),
        at_last_event: Rc::clone(&at_last_event),
        limit: limits.max_lookahead,
        overrun: Rc::clone(&overrun),
    };
    let mut builder = TreeBuilder::new(file, budget);
    let mut last_pos = Pos::new(file, 1, 1);
    for item in Parser::new(input) {
        if overrun.get() {
            return Err(Diagnostic::error(
                last_pos,
                "",
                format!(
                    "the YAML reader scanned more than {} characters after this point without \
                     finishing a value (one scalar may be at most that long); a flow collection \
                     (`[...]`, `{{...}}`, a JSON document) that starts where a key could start \
                     is held whole in memory until its end, so podnet refuses one this large: \
                     write it in block style (`- item` lines, `key: value` lines)",
                    limits.max_lookahead
                ),
            ));
        }
        at_last_event.set(skipped.get());
        match item {
            Ok((event, span)) => {
                last_pos = builder.pos(&span);
                builder.event(event, span)?
            }
            Err(e) => {
                let m = e.marker();
                let message = if e.info().contains("recursion limit") {
                    // The parser's own guard fired before ours (it counts flow levels).
                    format!(
                        "nesting deeper than {} levels; refusing the document",
                        limits.max_depth
                    )
                } else {
                    let mut message = format!("invalid YAML: {}", e.info());
                    // Most syntax errors in a hand-written file are indentation: say where
                    // the block the line should belong to began, and so how far its entries
                    // are indented.
                    let info = e.info();
                    let about_blocks = ["block", "mapping values", "indicator"]
                        .iter()
                        .any(|w| info.contains(w));
                    if let Some(block) = builder
                        .open_block()
                        .filter(|b| about_blocks && (b.line as usize) < m.line())
                    {
                        message.push_str(&format!(
                            "; the enclosing block began at line {}, column {}, so its entries \
                             are indented by {} spaces",
                            block.line,
                            block.col,
                            block.col.saturating_sub(1)
                        ));
                    }
                    message
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

/// The text as the YAML scanner reads it, counting the characters it consumes one by one
/// (indicators, punctuation, quoted text: everything a token can start with) and cut off,
/// as if the file ended, once more than `limit` were consumed since the parser last produced
/// an event. That is the only way the scanner's token buffer can grow without the tree (and
/// its budget) seeing it. Every other method is the plain `&str` input's.
struct Guarded<'a> {
    inner: StrInput<'a>,
    skipped: Rc<Cell<usize>>,
    /// `skipped` when the parser last produced an event (set by the reading loop).
    at_last_event: Rc<Cell<usize>>,
    limit: usize,
    overrun: Rc<Cell<bool>>,
}

impl Guarded<'_> {
    fn consumed(&mut self, count: usize) {
        let total = self.skipped.get().saturating_add(count);
        self.skipped.set(total);
        if total - self.at_last_event.get() > self.limit {
            self.overrun.set(true);
            self.inner = StrInput::new("");
        }
    }
}

impl Input for Guarded<'_> {
    fn lookahead(&mut self, count: usize) {
        self.inner.lookahead(count);
    }
    fn buflen(&self) -> usize {
        self.inner.buflen()
    }
    fn bufmaxlen(&self) -> usize {
        self.inner.bufmaxlen()
    }
    fn buf_is_empty(&self) -> bool {
        self.inner.buf_is_empty()
    }
    fn raw_read_ch(&mut self) -> char {
        self.consumed(1);
        self.inner.raw_read_ch()
    }
    fn raw_read_non_breakz_ch(&mut self) -> Option<char> {
        self.inner.raw_read_non_breakz_ch()
    }
    fn skip(&mut self) {
        self.inner.skip();
        self.consumed(1);
    }
    fn skip_n(&mut self, count: usize) {
        self.inner.skip_n(count);
        self.consumed(count);
    }
    fn peek(&self) -> char {
        self.inner.peek()
    }
    fn peek_nth(&self, n: usize) -> char {
        self.inner.peek_nth(n)
    }
    fn peek_opt(&self) -> Option<char> {
        self.inner.peek_opt()
    }
    fn look_ch(&mut self) -> char {
        self.inner.look_ch()
    }
    fn next_char_is(&self, c: char) -> bool {
        self.inner.next_char_is(c)
    }
    fn nth_char_is(&self, n: usize, c: char) -> bool {
        self.inner.nth_char_is(n, c)
    }
    fn next_2_are(&self, c1: char, c2: char) -> bool {
        self.inner.next_2_are(c1, c2)
    }
    fn next_3_are(&self, c1: char, c2: char, c3: char) -> bool {
        self.inner.next_3_are(c1, c2, c3)
    }
    fn next_is_document_indicator(&self) -> bool {
        self.inner.next_is_document_indicator()
    }
    fn next_is_document_start(&self) -> bool {
        self.inner.next_is_document_start()
    }
    fn next_is_document_end(&self) -> bool {
        self.inner.next_is_document_end()
    }
    fn skip_ws_to_eol(&mut self, skip_tabs: SkipTabs) -> (usize, Result<SkipTabs, &'static str>) {
        self.inner.skip_ws_to_eol(skip_tabs)
    }
    fn next_can_be_plain_scalar(&self, in_flow: bool) -> bool {
        self.inner.next_can_be_plain_scalar(in_flow)
    }
    fn next_is_blank_or_break(&self) -> bool {
        self.inner.next_is_blank_or_break()
    }
    fn next_is_blank_or_breakz(&self) -> bool {
        self.inner.next_is_blank_or_breakz()
    }
    fn next_is_blank(&self) -> bool {
        self.inner.next_is_blank()
    }
    fn next_is_break(&self) -> bool {
        self.inner.next_is_break()
    }
    fn next_is_breakz(&self) -> bool {
        self.inner.next_is_breakz()
    }
    fn next_is_z(&self) -> bool {
        self.inner.next_is_z()
    }
    fn next_is_flow(&self) -> bool {
        self.inner.next_is_flow()
    }
    fn next_is_digit(&self) -> bool {
        self.inner.next_is_digit()
    }
    fn next_is_alpha(&self) -> bool {
        self.inner.next_is_alpha()
    }
    fn skip_while_non_breakz(&mut self) -> usize {
        self.inner.skip_while_non_breakz()
    }
    fn skip_while_blank(&mut self) -> usize {
        self.inner.skip_while_blank()
    }
    fn fetch_while_is_alpha(&mut self, out: &mut String) -> usize {
        self.inner.fetch_while_is_alpha(out)
    }
    fn fetch_while_is_yaml_non_space(&mut self, out: &mut String) -> usize {
        self.inner.fetch_while_is_yaml_non_space(out)
    }
}

/// Parses a file that must hold exactly one document, on a fresh budget.
pub fn parse_single(text: &str, file: FileId, limits: Limits) -> Result<YamlNode, Diagnostic> {
    parse_single_within(text, file, &mut Budget::new(limits))
}

/// Parses a file that must hold exactly one document (a scenario or an include).
pub fn parse_single_within(
    text: &str,
    file: FileId,
    budget: &mut Budget,
) -> Result<YamlNode, Diagnostic> {
    let docs = parse_documents_within(text, file, budget)?;
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

/// Mappings with more entries than this find duplicate keys through a hash index.
const INDEXED_MAP: usize = 16;

/// A container being filled while its events arrive, with what its subtree costs so far.
enum Open {
    Seq {
        pos: Pos,
        anchor: usize,
        items: Vec<YamlNode>,
        weight: Weight,
    },
    Map {
        pos: Pos,
        anchor: usize,
        entries: Vec<(Key, YamlNode)>,
        key: Option<Key>,
        weight: Weight,
        /// Entry indices by key hash, once the mapping is large (duplicate keys in O(1)).
        index: HashMap<u64, Vec<usize>>,
    },
}

impl TreeBuilder<'_> {
    /// Where the innermost collection still open began.
    fn open_block(&self) -> Option<Pos> {
        self.stack.last().map(|o| match o {
            Open::Seq { pos, .. } | Open::Map { pos, .. } => *pos,
        })
    }
}

struct TreeBuilder<'b> {
    file: FileId,
    budget: &'b mut Budget,
    stack: Vec<Open>,
    /// Anchored nodes and their cost by anchor id (a later anchor of the same name gets a new
    /// id from the parser, so ids are unique).
    anchors: HashMap<usize, (YamlNode, Weight)>,
    documents: Vec<YamlNode>,
    in_document: bool,
}

fn key_hash(text: &str) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

impl<'b> TreeBuilder<'b> {
    fn new(file: FileId, budget: &'b mut Budget) -> TreeBuilder<'b> {
        TreeBuilder {
            file,
            budget,
            stack: Vec::new(),
            anchors: HashMap::new(),
            documents: Vec::new(),
            in_document: false,
        }
    }

    fn pos(&self, span: &Span) -> Pos {
        Pos::new(self.file, span.start.line(), span.start.col() + 1)
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
                let Some((anchored, weight)) = self.anchors.get(&id) else {
                    return Err(Diagnostic::error(pos, "", "alias to an unknown anchor"));
                };
                let weight = *weight;
                // Charge before copying, so an alias bomb is refused without being built.
                self.budget.charge(weight, pos)?;
                let mut node = anchored.clone();
                node.pos = pos;
                self.push(node, weight)?;
            }
            Event::Scalar(text, style, anchor, tag) => {
                let weight = Weight {
                    nodes: 1,
                    bytes: text.len(),
                };
                self.budget.charge(weight, pos)?;
                let value = resolve_scalar(&text, style, tag.as_deref(), pos)?;
                let node = YamlNode { pos, value };
                if anchor > 0 {
                    // The anchor table keeps a copy: charge it too.
                    self.budget.charge(weight, pos)?;
                    self.anchors.insert(anchor, (node.clone(), weight));
                }
                self.push(node, weight)?;
            }
            Event::SequenceStart(anchor, tag) | Event::MappingStart(anchor, tag) => {
                if let Some(tag) = tag.as_deref() {
                    check_collection_tag(tag, pos)?;
                }
                if self.stack.len() >= self.budget.limits.max_depth {
                    return Err(Diagnostic::error(
                        pos,
                        "",
                        format!(
                            "nesting deeper than {} levels; refusing the document",
                            self.budget.limits.max_depth
                        ),
                    ));
                }
                let weight = Weight { nodes: 1, bytes: 0 };
                self.budget.charge(weight, pos)?;
                let open = if is_seq {
                    Open::Seq {
                        pos,
                        anchor,
                        items: Vec::new(),
                        weight,
                    }
                } else {
                    Open::Map {
                        pos,
                        anchor,
                        entries: Vec::new(),
                        key: None,
                        weight,
                        index: HashMap::new(),
                    }
                };
                self.stack.push(open);
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor, weight) = match self.stack.pop() {
                    Some(Open::Seq {
                        pos,
                        anchor,
                        items,
                        weight,
                    }) => (
                        YamlNode {
                            pos,
                            value: Value::Seq(items),
                        },
                        anchor,
                        weight,
                    ),
                    Some(Open::Map {
                        pos,
                        anchor,
                        entries,
                        weight,
                        ..
                    }) => (
                        YamlNode {
                            pos,
                            value: Value::Map(entries),
                        },
                        anchor,
                        weight,
                    ),
                    None => return Err(Diagnostic::error(pos, "", "unbalanced YAML structure")),
                };
                if anchor > 0 {
                    // The anchor table keeps a copy: charge it before making it.
                    self.budget.charge(weight, pos)?;
                    self.anchors.insert(anchor, (node.clone(), weight));
                }
                self.push(node, weight)?;
            }
        }
        Ok(())
    }

    /// Places a finished node (costing `weight`) into its parent, or makes it a document.
    fn push(&mut self, node: YamlNode, weight: Weight) -> Result<(), Diagnostic> {
        match self.stack.last_mut() {
            None => {
                if !matches!(node.value, Value::Null) || self.in_document {
                    // A document holding only `null` (an empty document) is skipped.
                    if !matches!(node.value, Value::Null) {
                        self.documents.push(node);
                    }
                }
            }
            Some(Open::Seq {
                items, weight: w, ..
            }) => {
                w.add(weight);
                items.push(node);
            }
            Some(Open::Map {
                entries,
                key,
                weight: w,
                index,
                ..
            }) => {
                w.add(weight);
                match key.take() {
                    None => {
                        let text = match node.value {
                            Value::Str(s) => s,
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
                        if let Some(first) = find_key(entries, index, &text) {
                            return Err(Diagnostic::error(
                                node.pos,
                                "",
                                format!("duplicate key `{text}` (first at {})", first.place()),
                            ));
                        }
                        *key = Some(Key {
                            pos: node.pos,
                            text,
                        });
                    }
                    Some(k) => {
                        if entries.len() >= INDEXED_MAP {
                            if index.is_empty() {
                                for (i, (old, _)) in entries.iter().enumerate() {
                                    index.entry(key_hash(&old.text)).or_default().push(i);
                                }
                            }
                            index
                                .entry(key_hash(&k.text))
                                .or_default()
                                .push(entries.len());
                        }
                        entries.push((k, node));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Where `text` is already a key of the mapping being built: a scan while the mapping is
/// small, its hash index once it is large.
fn find_key(
    entries: &[(Key, YamlNode)],
    index: &HashMap<u64, Vec<usize>>,
    text: &str,
) -> Option<Pos> {
    if index.is_empty() {
        return entries
            .iter()
            .find(|(k, _)| k.text == text)
            .map(|(k, _)| k.pos);
    }
    index
        .get(&key_hash(text))?
        .iter()
        .map(|&i| &entries[i].0)
        .find(|k| k.text == text)
        .map(|k| k.pos)
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
mod tests;

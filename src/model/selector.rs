//! Label selectors in the two dialects podnet reads: Calico selector expressions and
//! Kubernetes `LabelSelector`s (`matchLabels` / `matchExpressions`).
//!
//! Calico's grammar follows `libcalico-go/lib/selector/tokenizer/tokenizer.go` and
//! `parser/parser.go`: `||` binds loosest, then `&&`, then a term that may carry any number of
//! leading `!` (collapsed to their parity, as Calico does); a term is `all()`, `global()`,
//! `has(k)`, `k == "v"`, `k != "v"`, `k in {..}`, `k not in {..}`, `k contains "v"`,
//! `k starts with "v"`, `k ends with "v"` or a parenthesised expression.
//! Only spaces and tabs separate tokens (Calico's tokenizer trims nothing else), so a newline
//! inside a selector is refused here as it is by `calicoctl`.
//! `!=` and `not in` match a label that is absent; `==`, `in`, `contains`, `starts with` and
//! `ends with` need it present (Calico's `ast.go`).
//!
//! Invariants: parsing never panics and never recurses deeper than [`MAX_NESTING`]
//! parentheses, so hostile input is refused with an error instead of exhausting the stack;
//! `Selector::parse(&s.to_string()) == Ok(s)` for every parsed selector.
//! This module does not intern strings or compute Calico's label restrictions.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::model::Labels;

/// The deepest parenthesis nesting a Calico selector may have in podnet.
/// Calico itself has no limit; real selectors nest two or three levels.
pub const MAX_NESTING: usize = 64;

/// A Calico selector expression (projectcalico selector syntax).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    root: Expr,
}

/// The selector's syntax tree; `And`/`Or` always hold at least two operands.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Expr {
    All,
    /// Calico's `global()`: true for every label set (it only matters to network policy).
    Global,
    Has(String),
    Eq(String, String),
    Ne(String, String),
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Contains(String, String),
    StartsWith(String, String),
    EndsWith(String, String),
    Not(Box<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
}

/// Why a selector text was refused, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorError {
    /// Byte offset in the selector text where the problem is.
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.offset)
    }
}

impl std::error::Error for SelectorError {}

impl Selector {
    /// Parses Calico selector text; empty or blank text means `all()`, as in Calico.
    pub fn parse(text: &str) -> Result<Selector, SelectorError> {
        let tokens = tokenize(text)?;
        let mut parser = Parser {
            tokens,
            pos: 0,
            depth: 0,
        };
        if parser.peek().kind == Tok::Eof {
            return Ok(Selector::all());
        }
        let root = parser.or_expression()?;
        let next = parser.peek();
        if next.kind != Tok::Eof {
            return Err(SelectorError {
                offset: next.offset,
                message: format!(
                    "unexpected {} after a complete expression; expected '&&', '||' or the end",
                    next.kind.describe()
                ),
            });
        }
        Ok(Selector { root })
    }

    /// The selector that matches everything.
    pub fn all() -> Selector {
        Selector { root: Expr::All }
    }

    /// Whether `labels` satisfy the selector.
    pub fn matches(&self, labels: &Labels) -> bool {
        self.root.matches(labels)
    }

    /// Whether the selector is exactly `global()` (in a rule's `namespaceSelector` it means
    /// "non-namespaced things").
    pub fn is_global(&self) -> bool {
        self.root == Expr::Global
    }

    /// Both selectors must match (`all()` operands are dropped).
    pub fn and(self, other: Selector) -> Selector {
        let mut operands = Vec::new();
        for e in [self.root, other.root] {
            match e {
                Expr::All => {}
                Expr::And(es) => operands.extend(es),
                e => operands.push(e),
            }
        }
        Selector {
            root: match operands.len() {
                0 => Expr::All,
                1 => operands.remove(0),
                _ => Expr::And(operands),
            },
        }
    }

    /// The `key == 'value'` selector.
    pub fn label_equals(key: &str, value: &str) -> Selector {
        Selector {
            root: Expr::Eq(key.to_string(), value.to_string()),
        }
    }
}

impl From<&LabelSelector> for Selector {
    /// Calico's conversion of a Kubernetes label selector (conversion.go
    /// k8sSelectorToCalico): `matchLabels` become `k == 'v'`, `In`/`NotIn` become
    /// `k in {..}`/`k not in {..}`, `Exists`/`DoesNotExist` become `has(k)`/`!has(k)`, all
    /// ANDed; an empty selector is `all()`. Both dialects treat an absent label alike for every
    /// operator, so the two selectors match the same label sets.
    fn from(ls: &LabelSelector) -> Selector {
        let mut terms: Vec<Expr> = ls
            .match_labels
            .iter()
            .map(|(k, v)| Expr::Eq(k.clone(), v.clone()))
            .collect();
        for r in &ls.match_expressions {
            let values = || r.values.iter().cloned().collect::<BTreeSet<String>>();
            terms.push(match r.operator {
                LabelOperator::In => Expr::In(r.key.clone(), values()),
                LabelOperator::NotIn => Expr::NotIn(r.key.clone(), values()),
                LabelOperator::Exists => Expr::Has(r.key.clone()),
                LabelOperator::DoesNotExist => Expr::Not(Box::new(Expr::Has(r.key.clone()))),
            });
        }
        Selector {
            root: match terms.len() {
                0 => Expr::All,
                1 => terms.remove(0),
                _ => Expr::And(terms),
            },
        }
    }
}

impl Expr {
    fn matches(&self, labels: &Labels) -> bool {
        let value = |k: &String| labels.get(k);
        match self {
            Expr::All | Expr::Global => true,
            Expr::Has(k) => labels.contains_key(k),
            Expr::Eq(k, v) => value(k) == Some(v),
            // Calico: an absent label is "not equal" and "not in".
            Expr::Ne(k, v) => value(k) != Some(v),
            Expr::In(k, set) => value(k).is_some_and(|x| set.contains(x)),
            Expr::NotIn(k, set) => !value(k).is_some_and(|x| set.contains(x)),
            Expr::Contains(k, v) => value(k).is_some_and(|x| x.contains(v.as_str())),
            Expr::StartsWith(k, v) => value(k).is_some_and(|x| x.starts_with(v.as_str())),
            Expr::EndsWith(k, v) => value(k).is_some_and(|x| x.ends_with(v.as_str())),
            Expr::Not(e) => !e.matches(labels),
            Expr::And(es) => es.iter().all(|e| e.matches(labels)),
            Expr::Or(es) => es.iter().any(|e| e.matches(labels)),
        }
    }
}

impl fmt::Display for Selector {
    /// Calico's canonical form (`String()` in `ast.go`): `&&`/`||` groups in parentheses,
    /// values in double quotes unless they contain one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.root.fmt(f)
    }
}

/// Quotes a value the way Calico renders it; a parsed value never holds both quote kinds.
fn quoted(v: &str) -> String {
    if v.contains('"') {
        format!("'{v}'")
    } else {
        format!("\"{v}\"")
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |s: &BTreeSet<String>| s.iter().map(|v| quoted(v)).collect::<Vec<_>>().join(", ");
        let join = |f: &mut fmt::Formatter<'_>, es: &[Expr], op: &str| {
            f.write_str("(")?;
            for (i, e) in es.iter().enumerate() {
                if i > 0 {
                    f.write_str(op)?;
                }
                e.fmt(f)?;
            }
            f.write_str(")")
        };
        match self {
            Expr::All => f.write_str("all()"),
            Expr::Global => f.write_str("global()"),
            Expr::Has(k) => write!(f, "has({k})"),
            Expr::Eq(k, v) => write!(f, "{k} == {}", quoted(v)),
            Expr::Ne(k, v) => write!(f, "{k} != {}", quoted(v)),
            Expr::In(k, s) => write!(f, "{k} in {{{}}}", set(s)),
            Expr::NotIn(k, s) => write!(f, "{k} not in {{{}}}", set(s)),
            Expr::Contains(k, v) => write!(f, "{k} contains {}", quoted(v)),
            Expr::StartsWith(k, v) => write!(f, "{k} starts with {}", quoted(v)),
            Expr::EndsWith(k, v) => write!(f, "{k} ends with {}", quoted(v)),
            // `!(!x)` keeps its parentheses: written `!!x` it would re-parse as `x`,
            // because leading `!`s collapse to their parity.
            Expr::Not(e) if matches!(**e, Expr::Not(_)) => write!(f, "!({e})"),
            Expr::Not(e) => write!(f, "!{e}"),
            Expr::And(es) => join(f, es, " && "),
            Expr::Or(es) => join(f, es, " || "),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tokenizer (mirrors Calico's, with byte offsets)

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Label(String),
    Str(String),
    LBrace,
    RBrace,
    Comma,
    Eq,
    Ne,
    In,
    NotIn,
    Not,
    Contains,
    StartsWith,
    EndsWith,
    All,
    Global,
    Has(String),
    LParen,
    RParen,
    And,
    Or,
    Eof,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Label(l) => format!("label '{l}'"),
            Tok::Str(s) => format!("string {}", quoted(s)),
            Tok::LBrace => "'{'".into(),
            Tok::RBrace => "'}'".into(),
            Tok::Comma => "','".into(),
            Tok::Eq => "'=='".into(),
            Tok::Ne => "'!='".into(),
            Tok::In => "'in'".into(),
            Tok::NotIn => "'not in'".into(),
            Tok::Not => "'!'".into(),
            Tok::Contains => "'contains'".into(),
            Tok::StartsWith => "'starts with'".into(),
            Tok::EndsWith => "'ends with'".into(),
            Tok::All => "'all()'".into(),
            Tok::Global => "'global()'".into(),
            Tok::Has(k) => format!("'has({k})'"),
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::And => "'&&'".into(),
            Tok::Or => "'||'".into(),
            Tok::Eof => "end of selector".into(),
        }
    }
}

#[derive(Clone, Debug)]
struct Token {
    kind: Tok,
    offset: usize,
}

fn is_label_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-')
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn err(offset: usize, message: impl Into<String>) -> SelectorError {
    SelectorError {
        offset,
        message: message.into(),
    }
}

/// Splits selector text into tokens. Keywords after a label (`in`, `not in`, `contains`,
/// `starts with`, `ends with`) are recognised only there, as in Calico, so a label may be
/// called `in` or `contains`.
fn tokenize(text: &str) -> Result<Vec<Token>, SelectorError> {
    let bytes = text.as_bytes();
    let mut tokens: Vec<Token> = Vec::new();
    let mut i = 0;
    let skip_blank = |mut i: usize| {
        while i < bytes.len() && is_blank(bytes[i]) {
            i += 1;
        }
        i
    };
    let label_end = |mut i: usize| {
        while i < bytes.len() && is_label_byte(bytes[i]) {
            i += 1;
        }
        i
    };
    loop {
        i = skip_blank(i);
        let start = i;
        if i >= bytes.len() {
            tokens.push(Token {
                kind: Tok::Eof,
                offset: start,
            });
            return Ok(tokens);
        }
        let rest = &text[i..];
        let after_label = matches!(
            tokens.last(),
            Some(Token {
                kind: Tok::Label(_),
                ..
            })
        );
        let two = |s: &str| rest.starts_with(s);
        let (kind, next) = match bytes[i] {
            b'(' => (Tok::LParen, i + 1),
            b')' => (Tok::RParen, i + 1),
            b'{' => (Tok::LBrace, i + 1),
            b'}' => (Tok::RBrace, i + 1),
            b',' => (Tok::Comma, i + 1),
            q @ (b'"' | b'\'') => {
                // No escapes exist: the value runs to the next quote of the same kind.
                let Some(len) = bytes[i + 1..].iter().position(|&b| b == q) else {
                    return Err(err(
                        start,
                        format!("unterminated string: no closing {} quote", q as char),
                    ));
                };
                let value = text[i + 1..i + 1 + len].to_string();
                (Tok::Str(value), i + len + 2)
            }
            b'=' if two("==") => (Tok::Eq, i + 2),
            b'=' => {
                return Err(err(
                    start,
                    "expected '==' (a single '=' is not an operator)",
                ));
            }
            b'!' if two("!=") => (Tok::Ne, i + 2),
            b'!' => (Tok::Not, i + 1),
            b'&' if two("&&") => (Tok::And, i + 2),
            b'&' => {
                return Err(err(
                    start,
                    "expected '&&' (a single '&' is not an operator)",
                ));
            }
            b'|' if two("||") => (Tok::Or, i + 2),
            b'|' => {
                return Err(err(
                    start,
                    "expected '||' (a single '|' is not an operator)",
                ));
            }
            _ if after_label => {
                let keyword = |word: &str, second: &str, tok: Tok| -> Option<(Tok, usize)> {
                    if !rest.starts_with(word) {
                        return None;
                    }
                    let j = skip_blank(i + word.len());
                    text[j..]
                        .starts_with(second)
                        .then(|| (tok, j + second.len()))
                };
                let found = if two("contains") {
                    Some((Tok::Contains, i + "contains".len()))
                } else if two("starts") {
                    keyword("starts", "with", Tok::StartsWith)
                } else if two("ends") {
                    keyword("ends", "with", Tok::EndsWith)
                } else if two("not") {
                    keyword("not", "in", Tok::NotIn)
                } else if two("in") {
                    Some((Tok::In, i + 2))
                } else {
                    None
                };
                let Some(found) = found else {
                    let label = match tokens.last().map(|t| &t.kind) {
                        Some(Tok::Label(l)) => l.clone(),
                        _ => String::new(),
                    };
                    return Err(err(
                        start,
                        format!(
                            "expected an operator after label '{label}' (==, !=, in, not in, \
                             contains, starts with, ends with)"
                        ),
                    ));
                };
                found
            }
            _ if two("has(") => {
                let j = skip_blank(i + 4);
                let end = label_end(j);
                if end == j {
                    return Err(err(j, "expected a label name inside 'has('"));
                }
                let close = skip_blank(end);
                if bytes.get(close) != Some(&b')') {
                    return Err(err(close, "expected ')' to close 'has('"));
                }
                (Tok::Has(text[j..end].to_string()), close + 1)
            }
            _ if two("all(") || two("global(") => {
                let (word, tok) = if two("all(") {
                    ("all(", Tok::All)
                } else {
                    ("global(", Tok::Global)
                };
                let close = skip_blank(i + word.len());
                if bytes.get(close) != Some(&b')') {
                    return Err(err(close, format!("expected ')' after '{word}'")));
                }
                (tok, close + 1)
            }
            b if is_label_byte(b) => {
                let end = label_end(i);
                (Tok::Label(text[i..end].to_string()), end)
            }
            _ => {
                let c = rest.chars().next().unwrap_or('?');
                let hint = if c.is_whitespace() {
                    " (only spaces and tabs may separate tokens)"
                } else {
                    ""
                };
                return Err(err(start, format!("unexpected character {c:?}{hint}")));
            }
        };
        tokens.push(Token {
            kind,
            offset: start,
        });
        i = next;
    }
}

// ---------------------------------------------------------------------------------------------
// Parser: recursive descent whose only recursion is through '(' and is capped at MAX_NESTING.

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Token {
        // The tokenizer always ends the list with Eof, and `advance` never passes it.
        self.tokens.get(self.pos).cloned().unwrap_or(Token {
            kind: Tok::Eof,
            offset: 0,
        })
    }

    fn advance(&mut self) -> Token {
        let t = self.peek();
        if t.kind != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    fn or_expression(&mut self) -> Result<Expr, SelectorError> {
        let mut terms = vec![self.and_expression()?];
        while self.peek().kind == Tok::Or {
            self.advance();
            terms.push(self.and_expression()?);
        }
        Ok(if terms.len() == 1 {
            terms.swap_remove(0)
        } else {
            Expr::Or(terms)
        })
    }

    fn and_expression(&mut self) -> Result<Expr, SelectorError> {
        let mut terms = vec![self.operation()?];
        while self.peek().kind == Tok::And {
            self.advance();
            terms.push(self.operation()?);
        }
        Ok(if terms.len() == 1 {
            terms.swap_remove(0)
        } else {
            Expr::And(terms)
        })
    }

    /// One possibly negated term; a run of `!` collapses to its parity in a loop.
    fn operation(&mut self) -> Result<Expr, SelectorError> {
        let mut negated = false;
        while self.peek().kind == Tok::Not {
            self.advance();
            negated = !negated;
        }
        let t = self.advance();
        let expr = match t.kind {
            Tok::All => Expr::All,
            Tok::Global => Expr::Global,
            Tok::Has(k) => Expr::Has(k),
            Tok::Label(k) => self.comparison(k)?,
            Tok::LParen => {
                if self.depth >= MAX_NESTING {
                    return Err(err(
                        t.offset,
                        format!("parentheses nested deeper than {MAX_NESTING} levels"),
                    ));
                }
                self.depth += 1;
                let inner = self.or_expression()?;
                self.depth -= 1;
                let close = self.advance();
                if close.kind != Tok::RParen {
                    return Err(err(
                        close.offset,
                        format!(
                            "expected ')' to close the '(' at byte {}, found {}",
                            t.offset,
                            close.kind.describe()
                        ),
                    ));
                }
                inner
            }
            other => {
                return Err(err(
                    t.offset,
                    format!(
                        "expected a selector term (a label comparison, has(), all(), '!' or \
                         '('), found {}",
                        other.describe()
                    ),
                ));
            }
        };
        Ok(if negated {
            Expr::Not(Box::new(expr))
        } else {
            expr
        })
    }

    /// The rest of `label <op> value`, the label already consumed.
    fn comparison(&mut self, key: String) -> Result<Expr, SelectorError> {
        let op = self.advance();
        let value = |p: &mut Parser, name: &str| -> Result<String, SelectorError> {
            let v = p.advance();
            match v.kind {
                Tok::Str(s) => Ok(s),
                other => Err(err(
                    v.offset,
                    format!(
                        "expected a quoted value after '{name}', found {}",
                        other.describe()
                    ),
                )),
            }
        };
        Ok(match op.kind {
            Tok::Eq => Expr::Eq(key, value(self, "==")?),
            Tok::Ne => Expr::Ne(key, value(self, "!=")?),
            Tok::Contains => Expr::Contains(key, value(self, "contains")?),
            Tok::StartsWith => Expr::StartsWith(key, value(self, "starts with")?),
            Tok::EndsWith => Expr::EndsWith(key, value(self, "ends with")?),
            Tok::In | Tok::NotIn => {
                let name = if op.kind == Tok::In { "in" } else { "not in" };
                let set = self.set_literal(name)?;
                if op.kind == Tok::In {
                    Expr::In(key, set)
                } else {
                    Expr::NotIn(key, set)
                }
            }
            other => {
                return Err(err(
                    op.offset,
                    format!(
                        "expected an operator after label '{key}' (==, !=, in, not in, contains, \
                         starts with, ends with), found {}",
                        other.describe()
                    ),
                ));
            }
        })
    }

    /// `{ 'a', "b" }`; empty sets and a trailing comma are accepted, as Calico accepts them.
    fn set_literal(&mut self, op: &str) -> Result<BTreeSet<String>, SelectorError> {
        let open = self.advance();
        if open.kind != Tok::LBrace {
            return Err(err(
                open.offset,
                format!("expected '{{' after '{op}', found {}", open.kind.describe()),
            ));
        }
        let mut set = BTreeSet::new();
        loop {
            let t = self.advance();
            match t.kind {
                Tok::RBrace => return Ok(set),
                Tok::Str(s) => {
                    set.insert(s);
                    let sep = self.advance();
                    match sep.kind {
                        Tok::Comma => {}
                        Tok::RBrace => return Ok(set),
                        other => {
                            return Err(err(
                                sep.offset,
                                format!(
                                    "expected ',' or '}}' in the set, found {}",
                                    other.describe()
                                ),
                            ));
                        }
                    }
                }
                other => {
                    return Err(err(
                        t.offset,
                        format!(
                            "expected a quoted value or '}}' in the set, found {}",
                            other.describe()
                        ),
                    ));
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Kubernetes label selectors

/// A Kubernetes label selector (matchLabels / matchExpressions).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    pub match_labels: BTreeMap<String, String>,
    pub match_expressions: Vec<LabelRequirement>,
}

/// One `matchExpressions` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelRequirement {
    pub key: String,
    pub operator: LabelOperator,
    pub values: Vec<String>,
}

/// The operators of `matchExpressions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl LabelOperator {
    /// Parses the operator as Kubernetes spells it (case-sensitive).
    pub fn parse(s: &str) -> Option<LabelOperator> {
        match s {
            "In" => Some(LabelOperator::In),
            "NotIn" => Some(LabelOperator::NotIn),
            "Exists" => Some(LabelOperator::Exists),
            "DoesNotExist" => Some(LabelOperator::DoesNotExist),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LabelOperator::In => "In",
            LabelOperator::NotIn => "NotIn",
            LabelOperator::Exists => "Exists",
            LabelOperator::DoesNotExist => "DoesNotExist",
        }
    }
}

impl fmt::Display for LabelOperator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl LabelSelector {
    /// Kubernetes semantics (`labels.Selector.Matches`): every `matchLabels` pair and every
    /// requirement must hold; `NotIn` and `DoesNotExist` hold for an absent label; an empty
    /// selector matches everything.
    pub fn matches(&self, labels: &Labels) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| r.matches(labels))
    }

    /// Problems Kubernetes' `ValidateLabelSelector` would report, in field order.
    pub fn validate(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for (k, v) in &self.match_labels {
            if let Err(e) = validate_label_key(k) {
                problems.push(format!("matchLabels: key '{k}': {e}"));
            }
            if let Err(e) = validate_label_value(v) {
                problems.push(format!("matchLabels[{k}]: value '{v}': {e}"));
            }
        }
        for (i, r) in self.match_expressions.iter().enumerate() {
            let at = format!("matchExpressions[{i}]");
            match r.operator {
                LabelOperator::In | LabelOperator::NotIn if r.values.is_empty() => problems.push(
                    format!("{at}.values: must be specified when `operator` is 'In' or 'NotIn'"),
                ),
                LabelOperator::Exists | LabelOperator::DoesNotExist if !r.values.is_empty() => {
                    problems.push(format!(
                        "{at}.values: may not be specified when `operator` is 'Exists' or \
                         'DoesNotExist'"
                    ))
                }
                _ => {}
            }
            if let Err(e) = validate_label_key(&r.key) {
                problems.push(format!("{at}.key: '{}': {e}", r.key));
            }
            for (j, v) in r.values.iter().enumerate() {
                if let Err(e) = validate_label_value(v) {
                    problems.push(format!("{at}.values[{j}]: '{v}': {e}"));
                }
            }
        }
        problems
    }
}

impl LabelRequirement {
    fn matches(&self, labels: &Labels) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            LabelOperator::In => value.is_some_and(|v| self.values.contains(v)),
            LabelOperator::NotIn => !value.is_some_and(|v| self.values.contains(v)),
            LabelOperator::Exists => value.is_some(),
            LabelOperator::DoesNotExist => value.is_none(),
        }
    }
}

/// A label name: 1–63 alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric.
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A DNS-1123 subdomain: lowercase labels joined by dots, at most 253 bytes.
fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        })
}

/// Kubernetes' qualified-name rule for label keys: `[prefix/]name`.
fn validate_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && !is_dns_subdomain(p)
    {
        return Err("prefix part must be a lowercase DNS subdomain (e.g. 'example.com')".into());
    }
    if !is_qualified_name_part(name) {
        return Err(
            "name part must be 1-63 characters of alphanumerics, '-', '_' or '.', \
                    starting and ending with an alphanumeric character"
                .into(),
        );
    }
    Ok(())
}

/// Kubernetes' label value rule: empty, or a qualified-name part.
fn validate_label_value(v: &str) -> Result<(), String> {
    if v.is_empty() || is_qualified_name_part(v) {
        Ok(())
    } else {
        Err(
            "must be empty or 1-63 characters of alphanumerics, '-', '_' or '.', starting and \
             ending with an alphanumeric character"
                .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Parses `text` and checks it against each label set.
    fn check(text: &str, cases: &[(&[(&str, &str)], bool)]) {
        let sel = Selector::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        for (ls, want) in cases {
            assert_eq!(sel.matches(&labels(ls)), *want, "{text:?} on {ls:?}");
        }
    }

    fn error_at(text: &str) -> SelectorError {
        match Selector::parse(text) {
            Ok(s) => panic!("{text:?} parsed as {s}"),
            Err(e) => e,
        }
    }

    #[test]
    fn every_operator_matches_as_calico_does() {
        let none: &[(&str, &str)] = &[];
        check("all()", &[(none, true)]);
        check("global()", &[(none, true)]);
        check("", &[(none, true)]);
        check(" \t ", &[(none, true)]);
        check(
            "a == 'x'",
            &[(&[("a", "x")], true), (&[("a", "y")], false), (none, false)],
        );
        check("a == \"x\"", &[(&[("a", "x")], true)]);
        check(
            "a != 'x'",
            &[(&[("a", "x")], false), (&[("a", "y")], true), (none, true)],
        );
        check("has(a)", &[(&[("a", "")], true), (none, false)]);
        check("!has(a)", &[(&[("a", "")], false), (none, true)]);
        check(
            "a in {'x','y'}",
            &[(&[("a", "y")], true), (&[("a", "z")], false), (none, false)],
        );
        check(
            "a not in {'x'}",
            &[(&[("a", "x")], false), (&[("a", "z")], true), (none, true)],
        );
        check("a in {}", &[(&[("a", "x")], false)]);
        check("a in {'x',}", &[(&[("a", "x")], true)]);
        check(
            "a starts with 'ra'",
            &[(&[("a", "rack")], true), (&[("a", "arc")], false)],
        );
        check(
            "a ends with 'ck'",
            &[(&[("a", "rack")], true), (&[("a", "cka")], false)],
        );
        check(
            "a contains 'ac'",
            &[(&[("a", "rack")], true), (&[("a", "car")], false)],
        );
        check("a starts with ''", &[(&[("a", "x")], true), (none, false)]);
        check("!all()", &[(none, false)]);
    }

    #[test]
    fn precedence_is_not_then_and_then_or() {
        // a || (b && c)
        let text = "a == 'x' || b == 'y' && c == 'z'";
        check(
            text,
            &[
                (&[("a", "x")], true),
                (&[("b", "y")], false),
                (&[("b", "y"), ("c", "z")], true),
            ],
        );
        assert_eq!(
            Selector::parse(text).map(|s| s.to_string()),
            Ok("(a == \"x\" || (b == \"y\" && c == \"z\"))".to_string())
        );
        // ! binds to one term only.
        check(
            "!a == 'x' && has(b)",
            &[(&[("b", "")], true), (&[("a", "x"), ("b", "")], false)],
        );
        check(
            "(a == 'x' || b == 'y') && c == 'z'",
            &[(&[("a", "x")], false), (&[("a", "x"), ("c", "z")], true)],
        );
        check(
            "!(a == 'x' || b == 'y')",
            &[(&[("a", "x")], false), (&[("c", "x")], true)],
        );
        check("!!has(a)", &[(&[("a", "")], true)]);
        check("!!!has(a)", &[(&[("a", "")], false)]);
    }

    #[test]
    fn whitespace_and_key_forms_are_accepted() {
        check("group=='one'", &[(&[("group", "one")], true)]);
        check("a in{'x'}&&b!='y'", &[(&[("a", "x")], true)]);
        check(
            "kubernetes.io/hostname == 'n1'",
            &[(&[("kubernetes.io/hostname", "n1")], true)],
        );
        check(
            "topology.kubernetes.io/zone == 'a'",
            &[(&[("topology.kubernetes.io/zone", "a")], true)],
        );
        check("has( my_label-1.x )", &[(&[("my_label-1.x", "v")], true)]);
        check("a\tnot  in {'x'}", &[(&[("a", "y")], true)]);
        check("a == 'it\"s'", &[(&[("a", "it\"s")], true)]);
        // A label may be named like a keyword when it stands first.
        check("in == 'x'", &[(&[("in", "x")], true)]);
    }

    #[test]
    fn errors_name_what_was_expected_and_where() {
        let e = error_at("a == b");
        assert_eq!(e.offset, 5);
        assert!(
            e.message.starts_with("expected a quoted value after '=='"),
            "{e}"
        );
        let e = error_at("a = 'x'");
        assert_eq!((e.offset, e.message.contains("'=='")), (2, true));
        let e = error_at("a == 'x");
        assert_eq!(e.offset, 5);
        assert!(e.message.contains("unterminated"), "{e}");
        let e = error_at("a == 'x' &&");
        assert_eq!(e.offset, 11);
        assert!(e.message.contains("expected a selector term"), "{e}");
        let e = error_at("(a == 'x'");
        assert_eq!(e.offset, 9);
        assert!(e.message.contains("expected ')'"), "{e}");
        let e = error_at("a == 'x')");
        assert_eq!(e.offset, 8);
        let e = error_at("a foo 'x'");
        assert_eq!(e.offset, 2);
        assert!(
            e.message.contains("expected an operator after label 'a'"),
            "{e}"
        );
        let e = error_at("a in 'x'");
        assert_eq!((e.offset, e.message.contains("expected '{'")), (5, true));
        let e = error_at("a in {'x' 'y'}");
        assert_eq!(e.offset, 10);
        let e = error_at("has()");
        assert_eq!(e.offset, 4);
        let e = error_at("has (a)");
        assert_eq!(e.offset, 4);
        let e = error_at("all( x");
        assert_eq!(e.offset, 5);
        let e = error_at("a == 'x' b == 'y'");
        assert_eq!(e.offset, 9);
        let e = error_at("a == 'x'\n");
        assert_eq!(e.offset, 8);
        assert!(e.message.contains("spaces and tabs"), "{e}");
        let e = error_at("a == 'x' & b");
        assert_eq!(e.offset, 9);
        let e = error_at("é == 'x'");
        assert_eq!(e.offset, 0);
    }

    #[test]
    fn deep_nesting_is_refused_without_overflowing_the_stack() {
        let deep = format!("{}has(a){}", "(".repeat(100_000), ")".repeat(100_000));
        let e = error_at(&deep);
        assert_eq!(e.offset, MAX_NESTING);
        assert!(e.message.contains("nested deeper"), "{e}");
        let ok = format!(
            "{}has(a){}",
            "(".repeat(MAX_NESTING),
            ")".repeat(MAX_NESTING)
        );
        assert!(Selector::parse(&ok).is_ok());
        // A long run of '!' is collapsed iteratively.
        let bangs = format!("{}has(a)", "!".repeat(100_001));
        check(&bangs, &[(&[("a", "")], false)]);
        // Negated parentheses count towards the same limit.
        let mixed = format!("{}has(a){}", "!(".repeat(10_000), ")".repeat(10_000));
        assert!(Selector::parse(&mixed).is_err());
    }

    #[test]
    fn double_negation_through_parentheses_round_trips() {
        let s = Selector::parse("!(!has(a))").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.to_string(), "!(!has(a))");
        assert_eq!(Selector::parse(&s.to_string()), Ok(s));
    }

    #[test]
    fn label_selector_follows_kubernetes_semantics() {
        let empty = LabelSelector::default();
        assert!(empty.matches(&labels(&[])));
        let sel = LabelSelector {
            match_labels: [("zone".to_string(), "a".to_string())].into(),
            match_expressions: vec![
                LabelRequirement {
                    key: "tier".into(),
                    operator: LabelOperator::In,
                    values: vec!["web".into(), "db".into()],
                },
                LabelRequirement {
                    key: "env".into(),
                    operator: LabelOperator::NotIn,
                    values: vec!["prod".into()],
                },
                LabelRequirement {
                    key: "gpu".into(),
                    operator: LabelOperator::DoesNotExist,
                    values: vec![],
                },
                LabelRequirement {
                    key: "rack".into(),
                    operator: LabelOperator::Exists,
                    values: vec![],
                },
            ],
        };
        assert!(sel.matches(&labels(&[("zone", "a"), ("tier", "db"), ("rack", "1")])));
        assert!(!sel.matches(&labels(&[("zone", "b"), ("tier", "db"), ("rack", "1")])));
        assert!(!sel.matches(&labels(&[("zone", "a"), ("tier", "x"), ("rack", "1")])));
        assert!(!sel.matches(&labels(&[
            ("zone", "a"),
            ("tier", "db"),
            ("rack", "1"),
            ("env", "prod")
        ])));
        assert!(!sel.matches(&labels(&[
            ("zone", "a"),
            ("tier", "db"),
            ("rack", "1"),
            ("gpu", "")
        ])));
        assert!(!sel.matches(&labels(&[("zone", "a"), ("tier", "db")])));
        assert!(sel.validate().is_empty(), "{:?}", sel.validate());
    }

    #[test]
    fn label_selector_converts_to_an_equivalent_calico_selector() {
        // Calico's k8sSelectorToCalico: both dialects must agree on every label set,
        // absent labels included (NotIn and DoesNotExist hold for them).
        let ls = LabelSelector {
            match_labels: [("app".to_string(), "web".to_string())].into(),
            match_expressions: vec![
                LabelRequirement {
                    key: "tier".into(),
                    operator: LabelOperator::NotIn,
                    values: vec!["db".into()],
                },
                LabelRequirement {
                    key: "legacy".into(),
                    operator: LabelOperator::DoesNotExist,
                    values: vec![],
                },
            ],
        };
        let s = Selector::from(&ls);
        assert_eq!(
            s.to_string(),
            r#"(app == "web" && tier not in {"db"} && !has(legacy))"#
        );
        for set in [
            &[("app", "web")][..],
            &[("app", "web"), ("tier", "db")],
            &[("app", "web"), ("tier", "fe")],
            &[("app", "web"), ("legacy", "")],
            &[("app", "api")],
            &[],
        ] {
            let l = labels(set);
            assert_eq!(s.matches(&l), ls.matches(&l), "{set:?}");
        }
        assert_eq!(Selector::from(&LabelSelector::default()), Selector::all());
    }

    #[test]
    fn label_selector_validation_reports_every_problem() {
        assert_eq!(LabelOperator::parse("NotIn"), Some(LabelOperator::NotIn));
        assert_eq!(LabelOperator::parse("notin"), None);
        let sel = LabelSelector {
            match_labels: [("Bad Key".to_string(), "ok".to_string())].into(),
            match_expressions: vec![
                LabelRequirement {
                    key: "a".into(),
                    operator: LabelOperator::In,
                    values: vec![],
                },
                LabelRequirement {
                    key: "b".into(),
                    operator: LabelOperator::Exists,
                    values: vec!["x".into()],
                },
                LabelRequirement {
                    key: "Example.com/x".into(),
                    operator: LabelOperator::Exists,
                    values: vec![],
                },
                LabelRequirement {
                    key: "kubernetes.io/hostname".into(),
                    operator: LabelOperator::NotIn,
                    values: vec!["-bad".into()],
                },
            ],
        };
        let problems = sel.validate();
        assert_eq!(problems.len(), 5, "{problems:#?}");
        assert!(problems[0].starts_with("matchLabels: key 'Bad Key'"));
        assert!(problems[1].contains("matchExpressions[0].values: must be specified"));
        assert!(problems[2].contains("matchExpressions[1].values: may not be specified"));
        assert!(problems[3].contains("matchExpressions[2].key"));
        assert!(problems[4].contains("matchExpressions[3].values[0]"));
    }

    fn arb_key() -> impl Strategy<Value = String> {
        "[a-z][a-z0-9_./-]{0,6}"
    }

    fn arb_value() -> impl Strategy<Value = String> {
        // Any text without both quote kinds: Calico cannot write such a value.
        prop_oneof!["[a-z0-9 '\\-]{0,5}", "[a-z0-9 \"]{0,5}"]
    }

    fn arb_expr() -> impl Strategy<Value = Expr> {
        let leaf = prop_oneof![
            Just(Expr::All),
            Just(Expr::Global),
            arb_key().prop_map(Expr::Has),
            (arb_key(), arb_value()).prop_map(|(k, v)| Expr::Eq(k, v)),
            (arb_key(), arb_value()).prop_map(|(k, v)| Expr::Ne(k, v)),
            (arb_key(), prop::collection::btree_set(arb_value(), 0..3))
                .prop_map(|(k, s)| Expr::In(k, s)),
            (arb_key(), prop::collection::btree_set(arb_value(), 0..3))
                .prop_map(|(k, s)| Expr::NotIn(k, s)),
            (arb_key(), arb_value()).prop_map(|(k, v)| Expr::Contains(k, v)),
            (arb_key(), arb_value()).prop_map(|(k, v)| Expr::StartsWith(k, v)),
            (arb_key(), arb_value()).prop_map(|(k, v)| Expr::EndsWith(k, v)),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                inner.clone().prop_map(|e| Expr::Not(Box::new(e))),
                prop::collection::vec(inner.clone(), 2..4).prop_map(Expr::And),
                prop::collection::vec(inner, 2..4).prop_map(Expr::Or),
            ]
        })
    }

    proptest! {
        #[test]
        fn display_round_trips(root in arb_expr()) {
            let sel = Selector { root };
            let text = sel.to_string();
            prop_assert_eq!(Selector::parse(&text), Ok(sel), "{}", text);
        }

        #[test]
        fn parse_never_panics(text in "[a-z(){}!=&|,' \"]{0,40}") {
            let _ = Selector::parse(&text);
        }
    }
}

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

use crate::model::{Labels, label};

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
            if let Err(e) = label::check_key(k) {
                problems.push(format!("matchLabels: key '{k}': {e}"));
            }
            if let Err(e) = label::check_value(v) {
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
            if let Err(e) = label::check_key(&r.key) {
                problems.push(format!("{at}.key: '{}': {e}", r.key));
            }
            for (j, v) in r.values.iter().enumerate() {
                if let Err(e) = label::check_value(v) {
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

#[cfg(test)]
mod tests;

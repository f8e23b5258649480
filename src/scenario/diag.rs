//! Diagnostics: problems in the input, each with the file, line, column and field path.
//!
//! Every input error podnet reports goes through [`Diagnostic`] and prints as
//! `FILE:LINE:COL: path.to.field: message`. Warnings use the same shape with `warning: ` before
//! the message. Files are referred to by [`FileId`] and named through a [`SourceMap`], so a
//! position stays small and `Copy`.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Index of a file in the [`SourceMap`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId(pub u32);

/// A place in an input file: 1-based line and column (columns count characters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    pub file: FileId,
    pub line: u32,
    pub col: u32,
}

impl Pos {
    pub fn new(file: FileId, line: usize, col: usize) -> Pos {
        Pos {
            file,
            line: u32::try_from(line).unwrap_or(u32::MAX),
            col: u32::try_from(col).unwrap_or(u32::MAX),
        }
    }

    /// The position as a message names another place in the same file: `line L, column C`.
    pub fn place(self) -> impl std::fmt::Display {
        Place(self)
    }

    /// The position `chars` characters further along the same line (for errors inside a
    /// scalar, such as a selector's syntax error).
    pub fn advanced(self, chars: usize) -> Pos {
        let chars = u32::try_from(chars).unwrap_or(u32::MAX);
        Pos {
            col: self.col.saturating_add(chars),
            ..self
        }
    }
}

/// [`Pos::place`].
struct Place(Pos);

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}, column {}", self.0.line, self.0.col)
    }
}

pub use crate::model::Severity;

/// One problem found in the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub pos: Pos,
    /// The field path, `topology.zones[0].racks[1].subnet`; empty for file-level problems.
    pub path: String,
    pub message: String,
}

impl Diagnostic {
    pub fn error(pos: Pos, path: impl Into<String>, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            pos,
            path: clip_path(path.into()),
            message: clip_message(message.into()),
        }
    }

    pub fn warning(pos: Pos, path: impl Into<String>, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            pos,
            path: clip_path(path.into()),
            message: clip_message(message.into()),
        }
    }

    /// What this diagnostic says with its particulars left out (quoted values, numbers,
    /// list indices): diagnostics of the same shape are folded when printed.
    fn shape(&self) -> (Severity, String, String) {
        (self.severity, generic(&self.path), generic(&self.message))
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The diagnostic with its file named: `FILE:LINE:COL: path: message`.
    pub fn display<'a>(&'a self, sources: &'a SourceMap) -> impl fmt::Display + 'a {
        DisplayDiagnostic {
            diagnostic: self,
            sources,
        }
    }
}

struct DisplayDiagnostic<'a> {
    diagnostic: &'a Diagnostic,
    sources: &'a SourceMap,
}

impl fmt::Display for DisplayDiagnostic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.diagnostic;
        write!(
            f,
            "{}:{}:{}: ",
            self.sources.name(d.pos.file),
            d.pos.line,
            d.pos.col
        )?;
        if !d.path.is_empty() {
            write!(f, "{}: ", d.path)?;
        }
        if d.severity == Severity::Warning {
            f.write_str("warning: ")?;
        }
        f.write_str(&d.message)
    }
}

/// The files read for one scenario, in the order they were opened.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<PathBuf>,
}

impl SourceMap {
    pub fn add(&mut self, path: &Path) -> FileId {
        self.files.push(path.to_path_buf());
        FileId(u32::try_from(self.files.len() - 1).unwrap_or(u32::MAX))
    }

    pub fn name(&self, file: FileId) -> String {
        self.files
            .get(file.0 as usize)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "<unknown>".to_string())
    }

    /// How many files were opened.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn path(&self, file: FileId) -> Option<&Path> {
        self.files.get(file.0 as usize).map(PathBuf::as_path)
    }

    /// Every file opened, in the order it was opened (`--set` included when given).
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().map(PathBuf::as_path)
    }
}

/// The outcome of loading a scenario that failed: every problem found, warnings included,
/// sorted by file, line and column.
#[derive(Clone, Debug)]
pub struct Diagnostics {
    pub sources: SourceMap,
    pub items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter().filter(|d| d.is_error())
    }
}

/// Diagnostics of one shape printed before the rest are folded into one line.
pub const SHOWN_PER_SHAPE: usize = 3;

impl fmt::Display for Diagnostics {
    /// Every diagnostic in order, except that past [`SHOWN_PER_SHAPE`] of one shape (the same
    /// message about different values: 4,000 missing files) the rest are folded into
    /// "and 3,997 more like it", printed after the last one shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shapes: Vec<_> = self.items.iter().map(Diagnostic::shape).collect();
        let mut total: HashMap<&(Severity, String, String), usize> = HashMap::new();
        for shape in &shapes {
            *total.entry(shape).or_default() += 1;
        }
        let mut shown: HashMap<&(Severity, String, String), usize> = HashMap::new();
        for (d, shape) in self.items.iter().zip(&shapes) {
            let count = shown.entry(shape).or_default();
            *count += 1;
            if *count <= SHOWN_PER_SHAPE {
                writeln!(f, "{}", d.display(&self.sources))?;
            }
            let all = total[shape];
            if *count == SHOWN_PER_SHAPE && all > SHOWN_PER_SHAPE {
                writeln!(
                    f,
                    "{}:{}:{}: and {} more like it",
                    self.sources.name(d.pos.file),
                    d.pos.line,
                    d.pos.col,
                    thousands(all - SHOWN_PER_SHAPE)
                )?;
            }
        }
        Ok(())
    }
}

/// Values echoed in messages (between backticks or double quotes) longer than this are cut,
/// with an ellipsis: a 5 MB name must not make a 5 MB line.
pub const MAX_ECHOED_CHARS: usize = 100;

/// The longest message kept, whatever it holds.
const MAX_MESSAGE_CHARS: usize = 2_000;

/// `message` with every quoted value cut to [`MAX_ECHOED_CHARS`] and the whole to
/// [`MAX_MESSAGE_CHARS`].
fn clip_message(message: String) -> String {
    if message.len() <= MAX_ECHOED_CHARS {
        return message;
    }
    let mut out = String::with_capacity(message.len().min(MAX_MESSAGE_CHARS + 8));
    // The quote character currently open and how many characters it has held.
    let mut open: Option<(char, usize)> = None;
    for c in message.chars() {
        if out.len() >= MAX_MESSAGE_CHARS {
            out.push('…');
            return out;
        }
        match open {
            Some((q, _)) if c == q => {
                open = None;
                out.push(c);
            }
            Some((q, n)) => {
                if n < MAX_ECHOED_CHARS {
                    out.push(c);
                } else if n == MAX_ECHOED_CHARS {
                    out.push('…');
                }
                open = Some((q, n + 1));
            }
            None => {
                if c == '`' || c == '"' {
                    open = Some((c, 0));
                }
                out.push(c);
            }
        }
    }
    out
}

/// A field path with every segment cut to [`MAX_ECHOED_CHARS`] (keys are user text).
fn clip_path(path: String) -> String {
    if path.len() <= MAX_ECHOED_CHARS {
        return path;
    }
    let mut out = String::new();
    let mut run = 0;
    for c in path.chars() {
        if c == '.' || c == '[' || c == ']' {
            run = 0;
            out.push(c);
            continue;
        }
        run += 1;
        if run <= MAX_ECHOED_CHARS {
            out.push(c);
        } else if run == MAX_ECHOED_CHARS + 1 {
            out.push('…');
        }
        if out.len() > MAX_MESSAGE_CHARS {
            out.push('…');
            break;
        }
    }
    out
}

/// `text` with quoted values replaced by `…` and digits dropped: the shape of a message.
fn generic(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut open: Option<char> = None;
    for c in text.chars() {
        match open {
            Some(q) if c == q => {
                open = None;
                out.push(c);
            }
            Some(_) => {}
            None if c == '`' => {
                open = Some(c);
                out.push_str("`…");
            }
            None if c.is_ascii_digit() => {}
            None => out.push(c),
        }
    }
    out
}

/// 3999 as "3,999".
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Names longer than this get no "did you mean": Jaro-Winkler costs the product of the two
/// lengths, and nobody misspells a name of hundreds of characters by one letter.
pub const MAX_SUGGESTED_LEN: usize = 128;

/// The nearest of `candidates` to `word`, if one is close enough to be a plausible typo.
/// Each comparison costs at most [`MAX_SUGGESTED_LEN`]² steps.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    if word.len() > MAX_SUGGESTED_LEN {
        return None;
    }
    let lowered = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .filter(|c| c.len() <= MAX_SUGGESTED_LEN)
        .map(|c| {
            let score = strsim::jaro_winkler(&lowered, &c.to_ascii_lowercase());
            (score, c)
        })
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_file_line_col_path_message() {
        let mut sources = SourceMap::default();
        let file = sources.add(Path::new("scenarios/x.yaml"));
        let d = Diagnostic::error(
            Pos::new(file, 14, 7),
            "resources[2].spec.blockSize",
            "too big",
        );
        assert_eq!(
            d.display(&sources).to_string(),
            "scenarios/x.yaml:14:7: resources[2].spec.blockSize: too big"
        );
    }

    #[test]
    fn echoed_values_are_cut_with_an_ellipsis() {
        let long = "x".repeat(5_000);
        let d = Diagnostic::error(
            Pos::default(),
            format!("resources.{long}"),
            format!("unknown field `{long}`; did you mean `name`?"),
        );
        let cut = format!("{}…", "x".repeat(MAX_ECHOED_CHARS));
        assert_eq!(
            d.message,
            format!("unknown field `{cut}`; did you mean `name`?")
        );
        assert_eq!(d.path, format!("resources.{cut}"));
    }

    #[test]
    fn repeated_diagnostics_are_folded() {
        let mut sources = SourceMap::default();
        let file = sources.add(Path::new("s.yaml"));
        let mut items: Vec<Diagnostic> = (0..4_000)
            .map(|i| {
                Diagnostic::error(
                    Pos::new(file, i + 1, 3),
                    format!("include[{i}]"),
                    format!("cannot read `f{i}.yaml`: no such file"),
                )
            })
            .collect();
        items.push(Diagnostic::error(Pos::new(file, 5_000, 1), "", "other"));
        let text = Diagnostics { sources, items }.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), SHOWN_PER_SHAPE + 2, "{text}");
        assert_eq!(lines[3], "s.yaml:3:3: and 3,997 more like it");
        assert_eq!(lines[4], "s.yaml:5000:1: other");
    }

    #[test]
    fn suggestions_skip_huge_names() {
        let long = "a".repeat(1_000_000);
        let start = std::time::Instant::now();
        assert_eq!(nearest(&long, [long.as_str(), "a"]), None);
        assert!(start.elapsed().as_secs() < 1);
    }

    #[test]
    fn suggests_the_nearest_key() {
        let keys = ["blockSize", "cidr", "ipipMode"];
        assert_eq!(nearest("blokSize", keys), Some("blockSize"));
        assert_eq!(nearest("zzz", keys), None);
        assert_eq!(
            nearest("spinesperzone", ["spinesPerZone", "latency"]),
            Some("spinesPerZone")
        );
    }
}

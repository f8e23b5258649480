//! Diagnostics: problems in the input, each with the file, line, column and field path.
//!
//! Every input error podnet reports goes through [`Diagnostic`] and prints as
//! `FILE:LINE:COL: path.to.field: message`. Warnings use the same shape with `warning: ` before
//! the message. Files are referred to by [`FileId`] and named through a [`SourceMap`], so a
//! position stays small and `Copy`.

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

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

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
            path: path.into(),
            message: message.into(),
        }
    }

    pub fn warning(pos: Pos, path: impl Into<String>, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            pos,
            path: path.into(),
            message: message.into(),
        }
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

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.items {
            writeln!(f, "{}", d.display(&self.sources))?;
        }
        Ok(())
    }
}

/// The nearest of `candidates` to `word`, if one is close enough to be a plausible typo.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lowered = word.to_ascii_lowercase();
    candidates
        .into_iter()
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

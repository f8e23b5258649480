//! `report.md`: the report's sections as GitHub-flavoured Markdown, for an architect reading
//! it in a pull request or an editor preview.
//!
//! The facts come from [`super::sections`], shared with `report.html`. Charts are linked as
//! images (`pool-utilisation.svg`, …) because `podnet run` writes them beside this file.
//! Text from the scenario is escaped only where it would break the layout: `|` in tables,
//! `<`/`>` everywhere with a backslash (so a name is never read as HTML, and the file reads
//! as plain text: no HTML entities), and line breaks inside a cell.

use super::Report;
use super::charts::Chart;
use super::sections::{self, Block, Table, Tone};
use super::unreachable::UnreachableRow;

/// Renders the report. `charts` gives the chart files to link; `unreachable` is `None`
/// until reachability is computed.
pub fn render(report: &Report, charts: &[Chart], unreachable: Option<&[UnreachableRow]>) -> String {
    let mut out = format!("# {}\n", text(&sections::title(report)));
    for section in sections::sections(report, unreachable) {
        out.push_str(&format!("\n## {}\n", section.title));
        for block in &section.blocks {
            out.push('\n');
            match block {
                Block::Paragraph(p) => {
                    out.push_str(&text(p));
                    out.push('\n');
                }
                Block::Subheading(h) => out.push_str(&format!("### {}\n", text(h))),
                Block::List(items) => {
                    for item in items {
                        out.push_str(&format!("- {}\n", text(item)));
                    }
                }
                Block::Metrics(metrics) => {
                    let mut table = Table::new(&[("metric", false), ("value", true)]);
                    for m in metrics {
                        table.push_toned(vec![m.label.to_string(), m.value.clone()], m.tone);
                    }
                    table_to(&mut out, &table);
                }
                Block::Table(table) => table_to(&mut out, table),
                Block::Charts => {
                    if charts.is_empty() {
                        out.push_str("No charts.\n");
                    }
                    // One paragraph per chart, so each is shown on its own line.
                    let links: Vec<String> = charts
                        .iter()
                        .map(|c| format!("![{}]({})\n", c.title, c.file))
                        .collect();
                    out.push_str(&links.join("\n"));
                }
            }
        }
    }
    out
}

fn table_to(out: &mut String, table: &Table) {
    out.push('|');
    for c in &table.columns {
        out.push_str(&format!(" {} |", c.title));
    }
    out.push_str("\n|");
    for c in &table.columns {
        out.push_str(if c.numeric { "---:|" } else { "---|" });
    }
    out.push('\n');
    for row in &table.rows {
        out.push('|');
        for (i, cell) in row.cells.iter().enumerate() {
            let cell = cell_text(cell);
            // A failure is bold in its first column, so it is seen when skimming.
            if i == 0 && row.tone == Tone::Bad && !cell.is_empty() {
                out.push_str(&format!(" **{cell}** |"));
            } else {
                out.push_str(&format!(" {cell} |"));
            }
        }
        out.push('\n');
    }
}

fn text(s: &str) -> String {
    s.replace('<', "\\<").replace('>', "\\>")
}

fn cell_text(s: &str) -> String {
    text(s).replace('|', "\\|").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_cannot_break_the_table() {
        let mut table = Table::new(&[("a", false), ("n", true)]);
        table.push_toned(vec!["x|y\nz <b>".to_string(), "1".to_string()], Tone::Bad);
        let mut out = String::new();
        table_to(&mut out, &table);
        assert_eq!(out, "| a | n |\n|---|---:|\n| **x\\|y z \\<b\\>** | 1 |\n");
    }
}

//! `report.html`: one self-contained page (inline CSS, inline SVG charts; no scripts, no
//! fonts, no network) with the same sections as `report.md`.
//!
//! The facts come from [`super::sections`]; this module only lays them out. Every piece of
//! text is escaped here with [`super::markup::escape`]; the chart SVG comes from
//! [`super::charts`], which escapes its own.

use super::Report;
use super::charts::Chart;
use super::markup::escape;
use super::sections::{self, Block, Metric, Table, Tone};
use super::unreachable::UnreachableRow;

/// Plain, print-friendly styling; system fonts only.
const CSS: &str = "\
:root{--fg:#1d232a;--muted:#5b6570;--line:#d9dee3;--band:#f5f7f9;--good:#1e7d32;--bad:#b3261e;--accent:#1f5fa8}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif;color:var(--fg);background:#fff}
main{max-width:1120px;margin:0 auto;padding:24px 28px 64px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:20px;margin:36px 0 12px;padding-bottom:4px;border-bottom:2px solid var(--line)}
h3{font-size:16px;margin:20px 0 8px}
p{margin:8px 0}
nav{margin:8px 0 4px;font-size:14px}
nav a{color:var(--accent);text-decoration:none;margin-right:14px}
.lede{color:var(--muted)}
.metrics{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px;margin:14px 0;padding:14px;background:var(--band);border:1px solid var(--line);border-radius:8px}
.metric{background:#fff;border:1px solid var(--line);border-left:4px solid var(--line);border-radius:6px;padding:8px 10px}
.metric .value{display:block;font-size:22px;font-weight:600;font-variant-numeric:tabular-nums}
.metric .label{display:block;font-size:13px;color:var(--muted)}
.metric.good{border-left-color:var(--good)}.metric.good .value{color:var(--good)}
.metric.bad{border-left-color:var(--bad)}.metric.bad .value{color:var(--bad)}
.scroll{overflow-x:auto}
table{border-collapse:collapse;margin:8px 0 12px;font-size:14px;font-variant-numeric:tabular-nums}
th,td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:var(--band);font-weight:600;white-space:nowrap}
td.num,th.num{text-align:right}
tbody tr:nth-child(even){background:#fafbfc}
tr.bad td:first-child{color:var(--bad);font-weight:600}
tr.good td:first-child{color:var(--good)}
figure{margin:16px 0;padding:8px;border:1px solid var(--line);border-radius:8px;display:inline-block;max-width:100%}
figure svg{display:block;max-width:100%;height:auto}
figcaption{font-size:13px;color:var(--muted);padding:4px 4px 0}
ul{padding-left:22px}
footer{margin-top:40px;font-size:12px;color:var(--muted)}
";

/// Renders the page. `charts` are inlined; `unreachable` is `None` until reachability is
/// computed.
pub fn render(report: &Report, charts: &[Chart], unreachable: Option<&[UnreachableRow]>) -> String {
    let title = sections::title(report);
    let sections = sections::sections(report, unreachable);
    let mut out =
        String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!("<title>{}</title>\n", escape(&title)));
    out.push_str(&format!(
        "<style>\n{CSS}</style>\n</head>\n<body>\n<main>\n"
    ));
    out.push_str(&format!("<h1>{}</h1>\n<nav>", escape(&title)));
    for s in &sections {
        out.push_str(&format!("<a href=\"#{}\">{}</a>", s.id, s.title));
    }
    out.push_str("</nav>\n");
    for section in &sections {
        out.push_str(&format!(
            "<section id=\"{}\">\n<h2>{}</h2>\n",
            section.id, section.title
        ));
        for (i, block) in section.blocks.iter().enumerate() {
            match block {
                Block::Paragraph(p) => {
                    // The first paragraph of the summary is the scenario's description.
                    let class = if section.id == "summary" && i == 0 {
                        " class=\"lede\""
                    } else {
                        ""
                    };
                    out.push_str(&format!("<p{class}>{}</p>\n", escape(p)));
                }
                Block::Subheading(h) => out.push_str(&format!("<h3>{}</h3>\n", escape(h))),
                Block::List(items) => {
                    out.push_str("<ul>\n");
                    for item in items {
                        out.push_str(&format!("<li>{}</li>\n", escape(item)));
                    }
                    out.push_str("</ul>\n");
                }
                Block::Metrics(metrics) => metrics_to(&mut out, metrics),
                Block::Table(table) => table_to(&mut out, table),
                Block::Charts => {
                    if charts.is_empty() {
                        out.push_str("<p>No charts.</p>\n");
                    }
                    for c in charts {
                        out.push_str(&format!(
                            "<figure>\n{}<figcaption>{} ({})</figcaption>\n</figure>\n",
                            c.svg
                                .trim_start_matches("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"),
                            escape(c.title),
                            escape(c.file)
                        ));
                    }
                }
            }
        }
        out.push_str("</section>\n");
    }
    out.push_str(&format!(
        "<footer>podnet {} · scenario {} · seed {} · the same inputs give this page byte for byte</footer>\n",
        escape(report.podnet),
        escape(&report.scenario),
        report.seed
    ));
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

fn tone_class(tone: Tone) -> &'static str {
    match tone {
        Tone::Plain => "",
        Tone::Good => " good",
        Tone::Bad => " bad",
    }
}

fn metrics_to(out: &mut String, metrics: &[Metric]) {
    out.push_str("<div class=\"metrics\">\n");
    for m in metrics {
        out.push_str(&format!(
            "<div class=\"metric{}\"><span class=\"value\">{}</span><span class=\"label\">{}</span></div>\n",
            tone_class(m.tone),
            escape(&m.value),
            escape(m.label)
        ));
    }
    out.push_str("</div>\n");
}

fn table_to(out: &mut String, table: &Table) {
    out.push_str("<div class=\"scroll\"><table>\n<thead><tr>");
    for c in &table.columns {
        let class = if c.numeric { " class=\"num\"" } else { "" };
        out.push_str(&format!("<th{class}>{}</th>", escape(c.title)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        let class = match row.tone {
            Tone::Plain => String::new(),
            t => format!(" class=\"{}\"", tone_class(t).trim()),
        };
        out.push_str(&format!("<tr{class}>"));
        for (i, cell) in row.cells.iter().enumerate() {
            let numeric = table.columns.get(i).is_some_and(|c| c.numeric);
            let class = if numeric { " class=\"num\"" } else { "" };
            out.push_str(&format!("<td{class}>{}</td>", escape(cell)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        let mut table = Table::new(&[("<n>", true)]);
        table.push(vec!["<script>".to_string()]);
        let mut out = String::new();
        table_to(&mut out, &table);
        assert!(out.contains("<th class=\"num\">&lt;n&gt;</th>"));
        assert!(out.contains("<td class=\"num\">&lt;script&gt;</td>"));
        assert!(!out.contains("<script>"));
    }
}

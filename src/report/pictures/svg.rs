//! A small SVG writer for the hand-laid-out pictures: shapes and text appended to a `String`,
//! every coordinate in whole pixels or one decimal, every piece of text escaped.
//!
//! Invariants: the same calls give the same bytes; the document always opens with a
//! `<title>` and closes with `</svg>`; no fonts are loaded (text names the generic
//! `sans-serif` family and layout uses [`text_width`], an estimate, never a measurement).
//! This is not a drawing library: there is no scene, no clipping, no layout here.

use crate::report::markup::escape;

pub const FONT: &str = "sans-serif";
/// Text colour, muted text, lines: the report page's own palette.
pub const INK: &str = "#1d232a";
pub const MUTED: &str = "#5b6570";
pub const LINE: &str = "#9aa5b1";
pub const BAND: &str = "#f5f7f9";
pub const BAD: &str = "#b3261e";
pub const GOOD: &str = "#1e7d32";
pub const WARN: &str = "#d9730d";
pub const ACCENT: &str = "#1f5fa8";

/// The estimated width of `text` at `size` pixels: 0.6 em a character, which is wide enough
/// for the common sans-serif faces' average, so text laid out with it does not overlap.
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.6
}

/// `text` cut to at most `max` characters, with an ellipsis when cut.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// A number as SVG writes it: at most one decimal, no `-0`, no trailing `.0`.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "0".to_string();
    }
    let tenths = (x * 10.0).round() as i64;
    if tenths % 10 == 0 {
        format!("{}", tenths / 10)
    } else {
        let sign = if tenths < 0 { "-" } else { "" };
        let t = tenths.unsigned_abs();
        format!("{sign}{}.{}", t / 10, t % 10)
    }
}

/// Horizontal anchoring of a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// A text's look.
#[derive(Clone, Copy, Debug)]
pub struct TextStyle<'a> {
    pub size: f64,
    pub anchor: Anchor,
    pub fill: &'a str,
    pub bold: bool,
}

impl TextStyle<'static> {
    pub const fn plain(size: f64) -> TextStyle<'static> {
        TextStyle {
            size,
            anchor: Anchor::Start,
            fill: INK,
            bold: false,
        }
    }
}

impl<'a> TextStyle<'a> {
    pub const fn anchor(self, anchor: Anchor) -> TextStyle<'a> {
        TextStyle { anchor, ..self }
    }
    pub const fn fill<'b>(self, fill: &'b str) -> TextStyle<'b> {
        TextStyle {
            fill,
            size: self.size,
            anchor: self.anchor,
            bold: self.bold,
        }
    }
    pub const fn bold(self) -> TextStyle<'a> {
        TextStyle { bold: true, ..self }
    }
}

/// An SVG document being written.
pub struct Svg {
    out: String,
}

impl Svg {
    /// A white `width` × `height` canvas titled `title` (the tooltip and accessible name).
    pub fn new(width: f64, height: f64, title: &str) -> Svg {
        let (w, h) = (num(width.ceil()), num(height.ceil()));
        let mut out = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
             font-family=\"{FONT}\" role=\"img\">\n<title>{}</title>\n\
             <rect width=\"100%\" height=\"100%\" fill=\"#FFFFFF\"/>\n",
            escape(title)
        );
        out.reserve(4096);
        Svg { out }
    }

    /// Appends markup as given: only for fixed strings and markup built by this module.
    pub fn raw(&mut self, markup: &str) {
        self.out.push_str(markup);
    }

    /// A rectangle; `extra` is further attributes (`stroke-dasharray="4 3"`, …) or empty.
    #[allow(clippy::too_many_arguments)]
    pub fn rect(
        &mut self,
        (x, y, w, h): (f64, f64, f64, f64),
        radius: f64,
        fill: &str,
        stroke: &str,
        stroke_width: f64,
        extra: &str,
    ) {
        self.out.push_str(&format!(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"{}\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"{}\"{}{extra}/>\n",
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0)),
            num(radius),
            num(stroke_width),
            if extra.is_empty() { "" } else { " " },
        ));
    }

    /// A straight line.
    pub fn line(
        &mut self,
        (x1, y1): (f64, f64),
        (x2, y2): (f64, f64),
        stroke: &str,
        width: f64,
        extra: &str,
    ) {
        self.out.push_str(&format!(
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{stroke}\" stroke-width=\"{}\"{}{extra}/>\n",
            num(x1),
            num(y1),
            num(x2),
            num(y2),
            num(width),
            if extra.is_empty() { "" } else { " " },
        ));
    }

    /// A quadratic curve from `from` to `to` bent towards `control`.
    pub fn curve(
        &mut self,
        from: (f64, f64),
        control: (f64, f64),
        to: (f64, f64),
        stroke: &str,
        width: f64,
        extra: &str,
    ) {
        self.out.push_str(&format!(
            "<path d=\"M{} {} Q{} {} {} {}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{}\"{}{extra}/>\n",
            num(from.0),
            num(from.1),
            num(control.0),
            num(control.1),
            num(to.0),
            num(to.1),
            num(width),
            if extra.is_empty() { "" } else { " " },
        ));
    }

    /// One line of text at `(x, y)` (the baseline).
    pub fn text(&mut self, (x, y): (f64, f64), style: TextStyle<'_>, text: &str) {
        self.out.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"{}\"{}{}>{}</text>\n",
            num(x),
            num(y),
            num(style.size),
            style.fill,
            match style.anchor {
                Anchor::Start => String::new(),
                a => format!(" text-anchor=\"{}\"", a.as_str()),
            },
            if style.bold {
                " font-weight=\"600\""
            } else {
                ""
            },
            escape(text)
        ));
    }

    /// Opens a group with a tooltip (`<title>`), closed by [`Svg::end`].
    pub fn group(&mut self, tooltip: &str) {
        self.out
            .push_str(&format!("<g>\n<title>{}</title>\n", escape(tooltip)));
    }

    /// Opens a link to `href` with a tooltip, closed by [`Svg::end_link`].
    pub fn link(&mut self, href: &str, tooltip: &str) {
        self.out.push_str(&format!(
            "<a href=\"{}\">\n<title>{}</title>\n",
            escape(href),
            escape(tooltip)
        ));
    }

    pub fn end(&mut self) {
        self.out.push_str("</g>\n");
    }

    pub fn end_link(&mut self) {
        self.out.push_str("</a>\n");
    }

    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_text_are_written_the_same_everywhere() {
        assert_eq!(num(3.0), "3");
        assert_eq!(num(2.25), "2.3");
        assert_eq!(num(-0.04), "0");
        assert_eq!(num(-1.5), "-1.5");
        assert_eq!(num(f64::NAN), "0");
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
        let mut svg = Svg::new(10.0, 20.0, "a <b>");
        svg.text((1.0, 2.0), TextStyle::plain(12.0), "x & y");
        let s = svg.finish();
        assert!(
            s.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"20\"")
        );
        assert!(s.contains("<title>a &lt;b&gt;</title>"));
        assert!(s.contains(">x &amp; y</text>"));
        assert!(s.ends_with("</svg>\n"));
    }
}

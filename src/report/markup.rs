//! Escaping text for HTML and XML (the HTML report, SVG charts, JUnit XML): the one place
//! that knows which characters markup reserves.
//!
//! The result is valid in element content and in quoted attribute values of both HTML5 and
//! XML 1.0: the five reserved characters become the entities both define, and control
//! characters other than tab, line feed and carriage return (which XML 1.0 forbids even as
//! references) are dropped.

/// `text` escaped for HTML or XML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_characters_become_entities_and_controls_are_dropped() {
        assert_eq!(
            escape("<a href='x'>&\""),
            "&lt;a href=&apos;x&apos;&gt;&amp;&quot;"
        );
        assert_eq!(escape("a\u{1}b\tc\nd"), "ab\tc\nd");
        assert_eq!(escape("plain ünïcode"), "plain ünïcode");
    }
}

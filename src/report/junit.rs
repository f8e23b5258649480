//! JUnit XML for CI: one test suite per scenario, one test case per expectation; one whose
//! `when:` does not apply is a skipped test case (neither passed nor failed), with the reason.

use super::markup::escape;
use crate::sim::expect::ExpectationResult;

/// One scenario's verdicts.
pub struct Suite<'a> {
    pub name: &'a str,
    pub file: &'a str,
    pub results: &'a [ExpectationResult],
}

/// Renders the suites as a JUnit XML document.
pub fn render(suites: &[Suite<'_>]) -> String {
    let tests: usize = suites.iter().map(|s| s.results.len()).sum();
    let failures: usize = suites
        .iter()
        .map(|s| s.results.iter().filter(|r| r.failed()).count())
        .sum();
    let skipped: usize = suites.iter().map(|s| not_applicable(s.results)).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"podnet\" tests=\"{tests}\" failures=\"{failures}\"{}>\n",
        skipped_attribute(skipped)
    ));
    for suite in suites {
        let f = suite.results.iter().filter(|r| r.failed()).count();
        out.push_str(&format!(
            "  <testsuite name=\"{}\" file=\"{}\" tests=\"{}\" failures=\"{f}\"{}>\n",
            escape(suite.name),
            escape(suite.file),
            suite.results.len(),
            skipped_attribute(not_applicable(suite.results))
        ));
        for r in suite.results {
            out.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"{}\"",
                escape(suite.name),
                escape(&r.name)
            ));
            if let Some(why) = &r.not_applicable {
                out.push_str(&format!(
                    ">\n      <skipped message=\"not applicable: {}\"/>\n    </testcase>\n",
                    escape(why)
                ));
            } else if r.passed {
                out.push_str("/>\n");
            } else {
                out.push_str(&format!(
                    ">\n      <failure message=\"expected {}, got {}\"/>\n    </testcase>\n",
                    escape(&r.expected),
                    escape(&r.actual)
                ));
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

fn not_applicable(results: &[ExpectationResult]) -> usize {
    results
        .iter()
        .filter(|r| r.not_applicable.is_some())
        .count()
}

/// ` skipped="N"` when some expectations do not apply; nothing otherwise, so suites without
/// `when:` read as before.
fn skipped_attribute(n: usize) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" skipped=\"{n}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_counted_and_text_escaped() {
        let results = vec![
            ExpectationResult {
                name: "a <1>".into(),
                passed: true,
                expected: "x".into(),
                actual: "x".into(),
                at_us: 0,
                not_applicable: None,
            },
            ExpectationResult {
                name: "b".into(),
                passed: false,
                expected: "1 & 2".into(),
                actual: "\"3\"".into(),
                at_us: 0,
                not_applicable: None,
            },
            ExpectationResult {
                name: "c".into(),
                passed: false,
                expected: "pods all".into(),
                actual: "not evaluated".into(),
                at_us: 0,
                not_applicable: Some("when a=1; here a=2".into()),
            },
        ];
        let xml = render(&[Suite {
            name: "s",
            file: "s.yaml",
            results: &results,
        }]);
        // Three cases: one passed, one failed, one not applicable (skipped, not a failure).
        assert!(xml.contains("tests=\"3\" failures=\"1\" skipped=\"1\""));
        assert!(xml.contains(
            "name=\"c\">\n      <skipped message=\"not applicable: when a=1; here a=2\"/>"
        ));
        assert!(xml.contains("name=\"a &lt;1&gt;\"/>"));
        assert!(xml.contains("message=\"expected 1 &amp; 2, got &quot;3&quot;\""));
    }
}

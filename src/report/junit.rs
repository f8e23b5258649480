//! JUnit XML for CI: one test suite per scenario, one test case per expectation.

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
        .map(|s| s.results.iter().filter(|r| !r.passed).count())
        .sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"podnet\" tests=\"{tests}\" failures=\"{failures}\">\n"
    ));
    for suite in suites {
        let f = suite.results.iter().filter(|r| !r.passed).count();
        out.push_str(&format!(
            "  <testsuite name=\"{}\" file=\"{}\" tests=\"{}\" failures=\"{f}\">\n",
            escape(suite.name),
            escape(suite.file),
            suite.results.len()
        ));
        for r in suite.results {
            out.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"{}\"",
                escape(suite.name),
                escape(&r.name)
            ));
            if r.passed {
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
            },
            ExpectationResult {
                name: "b".into(),
                passed: false,
                expected: "1 & 2".into(),
                actual: "\"3\"".into(),
                at_us: 0,
            },
        ];
        let xml = render(&[Suite {
            name: "s",
            file: "s.yaml",
            results: &results,
        }]);
        assert!(xml.contains("tests=\"2\" failures=\"1\""));
        assert!(xml.contains("name=\"a &lt;1&gt;\"/>"));
        assert!(xml.contains("message=\"expected 1 &amp; 2, got &quot;3&quot;\""));
    }
}

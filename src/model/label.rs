//! The syntax of Kubernetes label keys and values, checked in one place for node labels,
//! workload labels and every label selector (`k8s.io/apimachinery` `IsQualifiedName` and
//! `IsValidLabelValue`).
//!
//! A key is an optional prefix and `/`, then a name. The prefix is a DNS-1123 subdomain: at
//! most 253 characters, dot-separated parts of lowercase letters, digits and `-`, each part
//! beginning and ending with a letter or digit. The name (and a non-empty value) is at most 63
//! characters matching `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`.
//! This module says what is wrong, not where: callers add the position or field.

use std::fmt;

/// Why a label key or value is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelProblem {
    /// The part before `/` is not a DNS subdomain.
    KeyPrefix,
    /// The part after `/` (or the whole key) is not a qualified name.
    KeyName,
    /// A value longer than 63 characters (its length).
    ValueTooLong(usize),
    /// A value with a character or an end that a qualified name does not allow.
    Value,
}

impl fmt::Display for LabelProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabelProblem::KeyPrefix => f.write_str(
                "the prefix before `/` must be a lowercase DNS subdomain of at most 253 \
                 characters, such as `example.com`",
            ),
            LabelProblem::KeyName => f.write_str(
                "an optional DNS prefix and `/`, then at most 63 characters of letters, digits, \
                 `-`, `_` and `.`, beginning and ending with a letter or digit",
            ),
            LabelProblem::ValueTooLong(len) => {
                write!(
                    f,
                    "a label value is at most 63 characters; this one has {len}"
                )
            }
            LabelProblem::Value => f.write_str(
                "letters, digits, `-`, `_` and `.`, beginning and ending with a letter or digit",
            ),
        }
    }
}

/// Checks a label key: `[prefix/]name`.
pub fn check_key(key: &str) -> Result<(), LabelProblem> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if prefix.is_some_and(|p| !is_dns_subdomain(p)) {
        return Err(LabelProblem::KeyPrefix);
    }
    if !is_name(name) {
        return Err(LabelProblem::KeyName);
    }
    Ok(())
}

/// Checks a label value: empty, or a name as in a key.
pub fn check_value(value: &str) -> Result<(), LabelProblem> {
    if value.is_empty() || is_name(value) {
        Ok(())
    } else if value.len() > 63 {
        Err(LabelProblem::ValueTooLong(value.len()))
    } else {
        Err(LabelProblem::Value)
    }
}

/// 1–63 alphanumerics, `-`, `_`, `.`, beginning and ending alphanumeric.
fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A DNS-1123 subdomain: lowercase parts joined by dots, at most 253 bytes.
fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each case and the verdict Kubernetes' `IsQualifiedName` gives it (validation.go).
    #[test]
    fn keys_follow_kubernetes_qualified_names() {
        let long_name = "a".repeat(63);
        let too_long_name = "a".repeat(64);
        let long_prefix = format!("{}.com/app", "a".repeat(249));
        let too_long_prefix = format!("{}.com/app", "a".repeat(250));
        let cases: &[(&str, Result<(), LabelProblem>)] = &[
            ("app", Ok(())),
            ("App_1.x-y", Ok(())),
            ("example.com/app", Ok(())),
            ("kubernetes.io/hostname", Ok(())),
            (&long_name, Ok(())),
            (&long_prefix, Ok(())),
            // A prefix part may not begin or end with `-`, nor be empty or uppercase.
            ("-example.com/app", Err(LabelProblem::KeyPrefix)),
            ("example-.com/app", Err(LabelProblem::KeyPrefix)),
            ("example..com/app", Err(LabelProblem::KeyPrefix)),
            ("Example.com/app", Err(LabelProblem::KeyPrefix)),
            ("/app", Err(LabelProblem::KeyPrefix)),
            (&too_long_prefix, Err(LabelProblem::KeyPrefix)),
            // The name: non-empty, at most 63, alphanumeric at both ends, one `/` at most.
            ("example.com/", Err(LabelProblem::KeyName)),
            ("", Err(LabelProblem::KeyName)),
            ("-app", Err(LabelProblem::KeyName)),
            ("app_", Err(LabelProblem::KeyName)),
            ("Bad Key", Err(LabelProblem::KeyName)),
            ("a/b/c", Err(LabelProblem::KeyName)),
            (&too_long_name, Err(LabelProblem::KeyName)),
        ];
        for (key, verdict) in cases {
            assert_eq!(check_key(key), *verdict, "{key}");
        }
    }

    #[test]
    fn values_are_empty_or_names() {
        assert_eq!(check_value(""), Ok(()));
        assert_eq!(check_value("prod-1.a_b"), Ok(()));
        assert_eq!(check_value("-bad"), Err(LabelProblem::Value));
        assert_eq!(check_value("a/b"), Err(LabelProblem::Value));
        assert_eq!(check_value(&"x".repeat(63)), Ok(()));
        assert_eq!(
            check_value(&"x".repeat(64)),
            Err(LabelProblem::ValueTooLong(64))
        );
    }
}

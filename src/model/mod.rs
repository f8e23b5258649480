//! The simulated cluster's vocabulary: ids, time, labels, selectors, the topology, workloads,
//! scenario actions and expectations.
//!
//! Everything here is plain data built by `scenario` after validation; nothing here does I/O.

use std::collections::BTreeMap;

pub mod action;
pub mod expect;
pub mod external;
pub mod hash;
pub mod label;
pub mod network;
pub mod prefixes;
pub mod selector;
pub mod service;
pub mod time;
pub mod topology;
pub mod workload;

/// Kubernetes-style labels: ordered so that every iteration over them is deterministic.
pub type Labels = BTreeMap<String, String>;

/// How bad a problem found in the input is: an error refuses the input (exit 2), a warning
/// is reported and the run goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
}

/// Serialises a value as its `Display` text (`#[serde(serialize_with = ...)]`): typed rows
/// (prefixes, addresses) are written the way people read them, never kept as strings.
pub fn as_display<T: std::fmt::Display, S: serde::Serializer>(
    value: &T,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

/// [`as_display`] for an optional value: its text, or `null`.
pub fn opt_as_display<T: std::fmt::Display, S: serde::Serializer>(
    value: &Option<T>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.collect_str(v),
        None => s.serialize_none(),
    }
}

/// An enum written in scenario files as one of a fixed set of words.
pub trait TextEnum: Sized + Copy + 'static {
    /// Every accepted spelling, in declaration order.
    const TEXTS: &'static [&'static str];
    fn from_text(text: &str) -> Option<Self>;
    fn as_str(self) -> &'static str;
}

/// Declares a [`TextEnum`] with its spellings, `Display` and JSON Schema.
macro_rules! text_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),* $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, schemars::JsonSchema)]
        pub enum $name { $( $(#[$vmeta])* #[serde(rename = $text)] $variant ),* }

        impl $crate::model::TextEnum for $name {
            const TEXTS: &'static [&'static str] = &[$($text),*];
            fn from_text(text: &str) -> Option<$name> {
                match text { $( $text => Some($name::$variant), )* _ => None }
            }
            fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $text ),* }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str($crate::model::TextEnum::as_str(*self))
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($crate::model::TextEnum::as_str(*self))
            }
        }
    };
}
pub(crate) use text_enum;

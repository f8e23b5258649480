use super::*;
use proptest::prelude::*;

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Parses `text` and checks it against each label set.
fn check(text: &str, cases: &[(&[(&str, &str)], bool)]) {
    let sel = Selector::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    for (ls, want) in cases {
        assert_eq!(sel.matches(&labels(ls)), *want, "{text:?} on {ls:?}");
    }
}

fn error_at(text: &str) -> SelectorError {
    match Selector::parse(text) {
        Ok(s) => panic!("{text:?} parsed as {s}"),
        Err(e) => e,
    }
}

#[test]
fn every_operator_matches_as_calico_does() {
    let none: &[(&str, &str)] = &[];
    check("all()", &[(none, true)]);
    check("global()", &[(none, true)]);
    check("", &[(none, true)]);
    check(" \t ", &[(none, true)]);
    check(
        "a == 'x'",
        &[(&[("a", "x")], true), (&[("a", "y")], false), (none, false)],
    );
    check("a == \"x\"", &[(&[("a", "x")], true)]);
    check(
        "a != 'x'",
        &[(&[("a", "x")], false), (&[("a", "y")], true), (none, true)],
    );
    check("has(a)", &[(&[("a", "")], true), (none, false)]);
    check("!has(a)", &[(&[("a", "")], false), (none, true)]);
    check(
        "a in {'x','y'}",
        &[(&[("a", "y")], true), (&[("a", "z")], false), (none, false)],
    );
    check(
        "a not in {'x'}",
        &[(&[("a", "x")], false), (&[("a", "z")], true), (none, true)],
    );
    check("a in {}", &[(&[("a", "x")], false)]);
    check("a in {'x',}", &[(&[("a", "x")], true)]);
    check(
        "a starts with 'ra'",
        &[(&[("a", "rack")], true), (&[("a", "arc")], false)],
    );
    check(
        "a ends with 'ck'",
        &[(&[("a", "rack")], true), (&[("a", "cka")], false)],
    );
    check(
        "a contains 'ac'",
        &[(&[("a", "rack")], true), (&[("a", "car")], false)],
    );
    check("a starts with ''", &[(&[("a", "x")], true), (none, false)]);
    check("!all()", &[(none, false)]);
}

#[test]
fn precedence_is_not_then_and_then_or() {
    // a || (b && c)
    let text = "a == 'x' || b == 'y' && c == 'z'";
    check(
        text,
        &[
            (&[("a", "x")], true),
            (&[("b", "y")], false),
            (&[("b", "y"), ("c", "z")], true),
        ],
    );
    assert_eq!(
        Selector::parse(text).map(|s| s.to_string()),
        Ok("(a == \"x\" || (b == \"y\" && c == \"z\"))".to_string())
    );
    // ! binds to one term only.
    check(
        "!a == 'x' && has(b)",
        &[(&[("b", "")], true), (&[("a", "x"), ("b", "")], false)],
    );
    check(
        "(a == 'x' || b == 'y') && c == 'z'",
        &[(&[("a", "x")], false), (&[("a", "x"), ("c", "z")], true)],
    );
    check(
        "!(a == 'x' || b == 'y')",
        &[(&[("a", "x")], false), (&[("c", "x")], true)],
    );
    check("!!has(a)", &[(&[("a", "")], true)]);
    check("!!!has(a)", &[(&[("a", "")], false)]);
}

#[test]
fn whitespace_and_key_forms_are_accepted() {
    check("group=='one'", &[(&[("group", "one")], true)]);
    check("a in{'x'}&&b!='y'", &[(&[("a", "x")], true)]);
    check(
        "kubernetes.io/hostname == 'n1'",
        &[(&[("kubernetes.io/hostname", "n1")], true)],
    );
    check(
        "topology.kubernetes.io/zone == 'a'",
        &[(&[("topology.kubernetes.io/zone", "a")], true)],
    );
    check("has( my_label-1.x )", &[(&[("my_label-1.x", "v")], true)]);
    check("a\tnot  in {'x'}", &[(&[("a", "y")], true)]);
    check("a == 'it\"s'", &[(&[("a", "it\"s")], true)]);
    // A label may be named like a keyword when it stands first.
    check("in == 'x'", &[(&[("in", "x")], true)]);
}

#[test]
fn errors_name_what_was_expected_and_where() {
    let e = error_at("a == b");
    assert_eq!(e.offset, 5);
    assert!(
        e.message.starts_with("expected a quoted value after '=='"),
        "{e}"
    );
    let e = error_at("a = 'x'");
    assert_eq!((e.offset, e.message.contains("'=='")), (2, true));
    let e = error_at("a == 'x");
    assert_eq!(e.offset, 5);
    assert!(e.message.contains("unterminated"), "{e}");
    let e = error_at("a == 'x' &&");
    assert_eq!(e.offset, 11);
    assert!(e.message.contains("expected a selector term"), "{e}");
    let e = error_at("(a == 'x'");
    assert_eq!(e.offset, 9);
    assert!(e.message.contains("expected ')'"), "{e}");
    let e = error_at("a == 'x')");
    assert_eq!(e.offset, 8);
    let e = error_at("a foo 'x'");
    assert_eq!(e.offset, 2);
    assert!(
        e.message.contains("expected an operator after label 'a'"),
        "{e}"
    );
    let e = error_at("a in 'x'");
    assert_eq!((e.offset, e.message.contains("expected '{'")), (5, true));
    let e = error_at("a in {'x' 'y'}");
    assert_eq!(e.offset, 10);
    let e = error_at("has()");
    assert_eq!(e.offset, 4);
    let e = error_at("has (a)");
    assert_eq!(e.offset, 4);
    let e = error_at("all( x");
    assert_eq!(e.offset, 5);
    let e = error_at("a == 'x' b == 'y'");
    assert_eq!(e.offset, 9);
    let e = error_at("a == 'x'\n");
    assert_eq!(e.offset, 8);
    assert!(e.message.contains("spaces and tabs"), "{e}");
    let e = error_at("a == 'x' & b");
    assert_eq!(e.offset, 9);
    let e = error_at("é == 'x'");
    assert_eq!(e.offset, 0);
}

#[test]
fn deep_nesting_is_refused_without_overflowing_the_stack() {
    let deep = format!("{}has(a){}", "(".repeat(100_000), ")".repeat(100_000));
    let e = error_at(&deep);
    assert_eq!(e.offset, MAX_NESTING);
    assert!(e.message.contains("nested deeper"), "{e}");
    let ok = format!(
        "{}has(a){}",
        "(".repeat(MAX_NESTING),
        ")".repeat(MAX_NESTING)
    );
    assert!(Selector::parse(&ok).is_ok());
    // A long run of '!' is collapsed iteratively.
    let bangs = format!("{}has(a)", "!".repeat(100_001));
    check(&bangs, &[(&[("a", "")], false)]);
    // Negated parentheses count towards the same limit.
    let mixed = format!("{}has(a){}", "!(".repeat(10_000), ")".repeat(10_000));
    assert!(Selector::parse(&mixed).is_err());
}

#[test]
fn double_negation_through_parentheses_round_trips() {
    let s = Selector::parse("!(!has(a))").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.to_string(), "!(!has(a))");
    assert_eq!(Selector::parse(&s.to_string()), Ok(s));
}

#[test]
fn label_selector_follows_kubernetes_semantics() {
    let empty = LabelSelector::default();
    assert!(empty.matches(&labels(&[])));
    let sel = LabelSelector {
        match_labels: [("zone".to_string(), "a".to_string())].into(),
        match_expressions: vec![
            LabelRequirement {
                key: "tier".into(),
                operator: LabelOperator::In,
                values: vec!["web".into(), "db".into()],
            },
            LabelRequirement {
                key: "env".into(),
                operator: LabelOperator::NotIn,
                values: vec!["prod".into()],
            },
            LabelRequirement {
                key: "gpu".into(),
                operator: LabelOperator::DoesNotExist,
                values: vec![],
            },
            LabelRequirement {
                key: "rack".into(),
                operator: LabelOperator::Exists,
                values: vec![],
            },
        ],
    };
    assert!(sel.matches(&labels(&[("zone", "a"), ("tier", "db"), ("rack", "1")])));
    assert!(!sel.matches(&labels(&[("zone", "b"), ("tier", "db"), ("rack", "1")])));
    assert!(!sel.matches(&labels(&[("zone", "a"), ("tier", "x"), ("rack", "1")])));
    assert!(!sel.matches(&labels(&[
        ("zone", "a"),
        ("tier", "db"),
        ("rack", "1"),
        ("env", "prod")
    ])));
    assert!(!sel.matches(&labels(&[
        ("zone", "a"),
        ("tier", "db"),
        ("rack", "1"),
        ("gpu", "")
    ])));
    assert!(!sel.matches(&labels(&[("zone", "a"), ("tier", "db")])));
    assert!(sel.validate().is_empty(), "{:?}", sel.validate());
}

#[test]
fn label_selector_converts_to_an_equivalent_calico_selector() {
    // Calico's k8sSelectorToCalico: both dialects must agree on every label set,
    // absent labels included (NotIn and DoesNotExist hold for them).
    let ls = LabelSelector {
        match_labels: [("app".to_string(), "web".to_string())].into(),
        match_expressions: vec![
            LabelRequirement {
                key: "tier".into(),
                operator: LabelOperator::NotIn,
                values: vec!["db".into()],
            },
            LabelRequirement {
                key: "legacy".into(),
                operator: LabelOperator::DoesNotExist,
                values: vec![],
            },
        ],
    };
    let s = Selector::from(&ls);
    assert_eq!(
        s.to_string(),
        r#"(app == "web" && tier not in {"db"} && !has(legacy))"#
    );
    for set in [
        &[("app", "web")][..],
        &[("app", "web"), ("tier", "db")],
        &[("app", "web"), ("tier", "fe")],
        &[("app", "web"), ("legacy", "")],
        &[("app", "api")],
        &[],
    ] {
        let l = labels(set);
        assert_eq!(s.matches(&l), ls.matches(&l), "{set:?}");
    }
    assert_eq!(Selector::from(&LabelSelector::default()), Selector::all());
}

#[test]
fn label_selector_validation_reports_every_problem() {
    assert_eq!(LabelOperator::parse("NotIn"), Some(LabelOperator::NotIn));
    assert_eq!(LabelOperator::parse("notin"), None);
    let sel = LabelSelector {
        match_labels: [("Bad Key".to_string(), "ok".to_string())].into(),
        match_expressions: vec![
            LabelRequirement {
                key: "a".into(),
                operator: LabelOperator::In,
                values: vec![],
            },
            LabelRequirement {
                key: "b".into(),
                operator: LabelOperator::Exists,
                values: vec!["x".into()],
            },
            LabelRequirement {
                key: "Example.com/x".into(),
                operator: LabelOperator::Exists,
                values: vec![],
            },
            LabelRequirement {
                key: "kubernetes.io/hostname".into(),
                operator: LabelOperator::NotIn,
                values: vec!["-bad".into()],
            },
        ],
    };
    let problems = sel.validate();
    assert_eq!(problems.len(), 5, "{problems:#?}");
    assert!(problems[0].starts_with("matchLabels: key 'Bad Key'"));
    assert!(problems[1].contains("matchExpressions[0].values: must be specified"));
    assert!(problems[2].contains("matchExpressions[1].values: may not be specified"));
    assert!(problems[3].contains("matchExpressions[2].key"));
    assert!(problems[4].contains("matchExpressions[3].values[0]"));
}

fn arb_key() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_./-]{0,6}"
}

fn arb_value() -> impl Strategy<Value = String> {
    // Any text without both quote kinds: Calico cannot write such a value.
    prop_oneof!["[a-z0-9 '\\-]{0,5}", "[a-z0-9 \"]{0,5}"]
}

fn arb_expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        Just(Expr::All),
        Just(Expr::Global),
        arb_key().prop_map(Expr::Has),
        (arb_key(), arb_value()).prop_map(|(k, v)| Expr::Eq(k, v)),
        (arb_key(), arb_value()).prop_map(|(k, v)| Expr::Ne(k, v)),
        (arb_key(), prop::collection::btree_set(arb_value(), 0..3))
            .prop_map(|(k, s)| Expr::In(k, s)),
        (arb_key(), prop::collection::btree_set(arb_value(), 0..3))
            .prop_map(|(k, s)| Expr::NotIn(k, s)),
        (arb_key(), arb_value()).prop_map(|(k, v)| Expr::Contains(k, v)),
        (arb_key(), arb_value()).prop_map(|(k, v)| Expr::StartsWith(k, v)),
        (arb_key(), arb_value()).prop_map(|(k, v)| Expr::EndsWith(k, v)),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|e| Expr::Not(Box::new(e))),
            prop::collection::vec(inner.clone(), 2..4).prop_map(Expr::And),
            prop::collection::vec(inner, 2..4).prop_map(Expr::Or),
        ]
    })
}

proptest! {
    #[test]
    fn display_round_trips(root in arb_expr()) {
        let sel = Selector { root };
        let text = sel.to_string();
        prop_assert_eq!(Selector::parse(&text), Ok(sel), "{}", text);
    }

    #[test]
    fn parse_never_panics(text in "[a-z(){}!=&|,' \"]{0,40}") {
        let _ = Selector::parse(&text);
    }
}

use super::*;

fn parse(text: &str) -> Result<YamlNode, Diagnostic> {
    parse_single(text, FileId(0), Limits::DEFAULT)
}

#[test]
fn scalars_resolve_with_the_core_schema() {
    let node =
        parse("a: 1\nb: '1'\nc: true\nd: ~\ne: 1.5\nf: 0x1F\ng: 10.0.0.1\nh: 1e3\n").unwrap();
    let get = |k| node.get(k).unwrap().value.clone();
    assert_eq!(get("a"), Value::Int(1));
    assert_eq!(get("b"), Value::Str("1".into()));
    assert_eq!(get("c"), Value::Bool(true));
    assert_eq!(get("d"), Value::Null);
    assert_eq!(get("e"), Value::Float(1.5));
    assert_eq!(get("f"), Value::Int(31));
    assert_eq!(get("g"), Value::Str("10.0.0.1".into()));
    assert_eq!(get("h"), Value::Float(1000.0));
}

#[test]
fn positions_are_one_based() {
    let node = parse("top:\n  inner: [1, 2]\n").unwrap();
    let inner = node.get("top").unwrap().get("inner").unwrap();
    assert_eq!((inner.pos.line, inner.pos.col), (2, 10));
    let Value::Seq(items) = &inner.value else {
        panic!("not a seq")
    };
    assert_eq!((items[1].pos.line, items[1].pos.col), (2, 14));
}

#[test]
fn duplicate_keys_are_refused_with_both_places() {
    let err = parse("a: 1\nb: 2\na: 3\n").unwrap_err();
    assert_eq!((err.pos.line, err.pos.col), (3, 1));
    assert!(
        err.message.contains("first at line 1, column 1"),
        "{}",
        err.message
    );
}

#[test]
fn aliases_expand_and_bombs_are_refused() {
    let node = parse("a: &x {k: v}\nb: *x\n").unwrap();
    assert_eq!(
        node.get("b").unwrap().get("k").unwrap().value,
        Value::Str("v".into())
    );

    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let start = std::time::Instant::now();
    let err = parse(&bomb).unwrap_err();
    assert!(err.message.contains("more than"), "{}", err.message);
    assert!(start.elapsed().as_secs() < 2);
}

#[test]
fn deep_nesting_is_refused_without_overflow() {
    let deep_flow = "[".repeat(100_000);
    let err = parse(&deep_flow).unwrap_err();
    assert!(
        err.message.contains("nesting deeper than 64"),
        "{}",
        err.message
    );

    let mut deep_block = String::new();
    for depth in 0..1_000 {
        deep_block.push_str(&" ".repeat(depth));
        deep_block.push_str("a:\n");
    }
    let err = parse(&deep_block).unwrap_err();
    assert!(
        err.message.contains("nesting deeper than 64"),
        "{}",
        err.message
    );
}

#[test]
fn oversized_files_are_refused_before_parsing() {
    let limits = Limits {
        max_file_bytes: 10,
        ..Limits::DEFAULT
    };
    let err = parse_single("a: 123456789\n", FileId(0), limits).unwrap_err();
    assert!(err.message.contains("more than the limit of 10 bytes"));
}

#[test]
fn an_unquoted_selector_is_a_tag_and_is_refused_with_advice() {
    let err = parse("nodeSelector: !has(route-reflector)\n").unwrap_err();
    assert_eq!((err.pos.line, err.pos.col), (1, 15));
    assert!(err.message.contains("quote it"), "{}", err.message);
}

#[test]
fn syntax_errors_are_located() {
    let err = parse("a: [1, 2\nb: 3\n").unwrap_err();
    assert!(err.message.starts_with("invalid YAML"), "{}", err.message);
    assert!(err.pos.line >= 1);
}

#[test]
fn an_indentation_error_says_where_its_block_began() {
    // `racks` is indented by 5 spaces under a mapping whose keys (`name`) start at
    // column 5: 4 spaces.
    let err = parse("topology:\n  zones:\n  - name: a\n     racks: []\n").unwrap_err();
    assert!(
        err.message.contains(
            "the enclosing block began at line 3, column 5, so its entries are indented by 4 spaces"
        ),
        "{}",
        err.message
    );
}

#[test]
fn several_documents_and_end_markers() {
    let docs = parse_documents(
        "---\na: 1\n...\n---\nb: 2\n---\n",
        FileId(0),
        Limits::DEFAULT,
    )
    .unwrap();
    assert_eq!(docs.len(), 2);
}

use super::*;

fn facts(src: &str) -> PythonFacts {
    let mut parser = PythonParser::new().unwrap();
    parser.extract(src).unwrap().0
}

#[test]
fn functions_classes_and_docstrings() {
    let f = facts(
        "\"\"\"Module doc.\n\n    More.\"\"\"\nclass A(B, metaclass=M):\n    '''Class doc.'''\n    def m(self, x: int = 1, *args, y, **kw) -> 'A':\n        '''Method.'''\n        return x\n\nasync def top(): pass\n",
    );
    assert_eq!(f.docstring.as_deref(), Some("Module doc.\n\nMore."));
    assert_eq!(f.classes.len(), 1);
    assert_eq!(f.classes[0].bases.len(), 1);
    assert_eq!(f.classes[0].docstring.as_deref(), Some("Class doc."));
    let m = &f.functions[0];
    assert_eq!(m.local_path, "A.m");
    assert_eq!(m.kind, FunctionKind::Method);
    let kinds: Vec<ParamKind> = m.params.iter().map(|p| p.kind).collect();
    assert_eq!(
        kinds,
        [
            ParamKind::Normal,
            ParamKind::Normal,
            ParamKind::VarPositional,
            ParamKind::KeywordOnly,
            ParamKind::VarKeyword
        ]
    );
    assert_eq!(m.params[1].annotation.as_deref(), Some("int"));
    assert_eq!(m.params[1].default.as_deref(), Some("1"));
    assert!(matches!(m.returns_value, Some(ValueExpr::Instance(_))));
    assert!(f.functions[1].is_async);
}

#[test]
fn imports_of_every_form() {
    let f = facts(
        "import a.b as c, d\nfrom ..x.y import z as w, v\nfrom . import q\nfrom m import *\ntry:\n    import fast\nexcept ImportError:\n    fast = None\ndef f():\n    import inner\n",
    );
    type Row = (String, u32, Option<String>, Option<String>, bool);
    let summary: Vec<Row> = f
        .imports
        .iter()
        .map(|i| {
            (
                i.module.clone(),
                i.level,
                i.name.clone(),
                i.alias.clone(),
                i.in_try,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("a.b".into(), 0, None, Some("c".into()), false),
            ("d".into(), 0, None, None, false),
            ("x.y".into(), 2, Some("z".into()), Some("w".into()), false),
            ("x.y".into(), 2, Some("v".into()), None, false),
            ("".into(), 1, Some("q".into()), None, false),
            ("m".into(), 0, None, None, false),
            ("fast".into(), 0, None, None, true),
            ("inner".into(), 0, None, None, false),
        ]
    );
    assert_eq!(f.imports[7].scope, ScopeRef::Function(0));
}

#[test]
fn calls_and_complexity() {
    let f = facts(
        "def f(cb):\n    if x:\n        for i in y:\n            cb(i)\n    return [g(a.b) for a in z]\n",
    );
    assert_eq!(f.functions[0].complexity.branches, 3);
    let callees: Vec<String> = f
        .calls
        .iter()
        .map(|c| super::super::results::render(&f, &c.callee))
        .collect();
    // A `for` (statement or clause) calls the iterator protocol of what it
    // walks: two implicit sites before its body's calls.
    assert_eq!(
        callees,
        [
            "y.__iter__",
            "y.__iter__().__next__",
            "cb",
            "z.__iter__",
            "z.__iter__().__next__",
            "g"
        ]
    );
    let kinds: Vec<CallKind> = f.calls.iter().map(|c| c.kind).collect();
    use CallKind::{Implicit, Written};
    assert_eq!(
        kinds,
        [Implicit, Implicit, Written, Implicit, Implicit, Written]
    );
    assert_eq!(
        super::super::results::render(&f, &f.calls[5].args[0].value),
        "a.b"
    );
}

#[test]
fn deep_nesting_does_not_overflow() {
    let src = format!("x = {}1{}\n", "(".repeat(50_000), ")".repeat(50_000));
    let f = facts(&src);
    assert!(f.calls.is_empty());
    let src = format!("x = a{}\n", ".b".repeat(20_000));
    let _ = facts(&src);
    let src = format!("f(){}\n", "()".repeat(20_000));
    let f = facts(&src);
    assert!(!f.calls.is_empty());
}

/// The facts of `src` extracted under a budget of `units`.
fn facts_within(src: &str, units: u64) -> (PythonFacts, Spent) {
    let mut parser = PythonParser::new().unwrap();
    let tree = parser.parse_tree(src).unwrap();
    let mut extractor = Extractor::new(src);
    extractor.max_units = units;
    extractor.run(&tree)
}

#[test]
fn the_facts_budget_stops_the_walk_and_keeps_what_came_before() {
    let file = |calls: usize| {
        format!(
            "def g():\n    pass\n\ndef run():\n{}\ndef h():\n    g()\n",
            "    g(x, y)\n".repeat(calls)
        )
    };
    let (facts, spent) = facts_within(&file(1_000), 300);
    // A few units of one conversion may pass the check before it stops.
    assert!(spent.units <= 310, "{}", spent.units);
    let line = spent.cut_line.expect("the budget ran out");
    assert!((5..1_005).contains(&line), "{line}");
    let names: Vec<&str> = facts.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["g", "run"], "what follows the cut is not walked");
    assert!(facts.calls.len() < 300);
    // Doubling the file does not double the facts past the budget.
    let (_, doubled) = facts_within(&file(2_000), 300);
    assert_eq!(doubled.units, spent.units);
    // Under the budget nothing is cut.
    let (facts, spent) = facts_within(&file(10), 300);
    assert_eq!(spent.cut_line, None);
    assert_eq!(facts.functions.len(), 3);
}

#[test]
fn one_long_chain_is_cut_inside_its_statement() {
    let src = format!("x{}\n", ".a()".repeat(5_000));
    let (facts, spent) = facts_within(&src, 1_000);
    assert_eq!(spent.cut_line, Some(1));
    assert!(spent.units <= 1_010, "{}", spent.units);
    assert!(facts.calls.len() < 1_000);
}

#[test]
fn annotations() {
    assert_eq!(annotation_target("Optional[a.B]"), Expr::dotted("a.B"));
    assert_eq!(annotation_target("'B' "), Expr::dotted("B"));
    assert_eq!(annotation_target("B | None"), Expr::dotted("B"));
    assert_eq!(annotation_target("list[B]"), None);
    assert_eq!(annotation_target("A | B"), None);
}

/// The callee of every call site of `f` whose callee is a literal-key read
/// or what one was narrowed to: the function indices it names.
fn narrowed_callees(f: &PythonFacts) -> Vec<Vec<u32>> {
    fn functions(value: &ValueExpr, out: &mut Vec<u32>) {
        match value {
            ValueExpr::Function(i) => out.push(*i),
            ValueExpr::Union(parts) => parts.iter().for_each(|p| functions(p, out)),
            _ => {}
        }
    }
    f.calls
        .iter()
        .map(|call| {
            let mut out = Vec::new();
            if let ValueExpr::Use(u) = &call.callee
                && let Reach::One(b) = &f.uses[*u as usize].reach
                && let BindValue::Expr(value) = &f.bindings[*b as usize].value
            {
                functions(value, &mut out);
            }
            functions(&call.callee, &mut out);
            out
        })
        .collect()
}

/// 2,000 stores to `place` and reads of it after `binding`: each read
/// sees only the store just before it (the definitions of a place are
/// sorted once, not per read).
fn each_read_sees_the_store_before_it(binding: &str, place: &str) {
    let mut src = String::new();
    for i in 0..2000 {
        src.push_str(&format!("def f{i}(): pass\n"));
    }
    src.push_str(binding);
    for i in 0..2000 {
        src.push_str(&format!("{place} = f{i}\n{place}()\n"));
    }
    let f = facts(&src);
    let callees = narrowed_callees(&f);
    assert_eq!(callees.len(), 2000);
    for (i, callee) in callees.iter().enumerate() {
        assert_eq!(callee, &[i as u32], "read {i}");
    }
}

#[test]
fn literal_key_reads_see_the_store_before_them_in_a_long_file() {
    each_read_sees_the_store_before_it("table = {'k': f0}\n", "table['k']");
}

#[test]
fn nested_literal_key_reads_see_the_store_before_them_in_a_long_file() {
    each_read_sees_the_store_before_it(
        "config = {'hooks': {'run': f0}}\n",
        "config['hooks']['run']",
    );
}

#[test]
fn literal_key_reads_stay_broad_when_the_container_escapes() {
    let f = facts("def a(): pass\ndef b(): pass\nt = {'k': a}\nt['k'] = b\nt.clear()\nt['k']()\n");
    let call = f.calls.last().unwrap();
    assert!(
        matches!(call.callee, ValueExpr::ElemAt(..)),
        "{:?}",
        call.callee
    );
}

#[test]
fn nested_reads_below_many_stores_to_their_prefix_stay_broad() {
    // Each store to `config['hooks']` is a definition of every path below
    // it; past MAX_BINDINGS of them a deeper read is left as written
    // rather than copying them into each path's definitions.
    let source = |prefix_stores: usize| {
        let mut src =
            String::from("def a(): pass\ndef b(): pass\nconfig = {'hooks': {'run': a}}\n");
        for _ in 0..prefix_stores {
            src.push_str("config['hooks'] = {'run': a}\n");
        }
        src.push_str("config['hooks']['run'] = b\nconfig['hooks']['run']()\n");
        src
    };
    let within = facts(&source(16));
    assert_eq!(narrowed_callees(&within).last().unwrap(), &[1]);
    let past = facts(&source(17));
    // The read of `run` stays a read (its container, one level down, is
    // still narrowed as before), so the solver sees every store to `run`.
    let call = past.calls.last().unwrap();
    assert!(
        matches!(call.callee, ValueExpr::ElemAt(..)),
        "{:?}",
        call.callee
    );
    assert_eq!(narrowed_callees(&past).last().unwrap(), &Vec::<u32>::new());
}

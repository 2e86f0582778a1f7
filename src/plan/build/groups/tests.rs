use super::*;
use crate::plan::build::test_profile::{build, DOC};
use crate::plan::RunPlan;
use crate::workload::command::Command;
use crate::workload::{OpKind, OpSpec};

#[test]
fn a_profile_without_groups_is_refused() {
    let e = build(DOC).unwrap_err();
    assert_eq!(e.key, "group");
    assert!(e.problem.contains("no thread group"));
}

#[test]
fn a_group_without_a_stop_condition_is_refused() {
    let e = build(&format!(
        "{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 2\n"
    ))
    .unwrap_err();
    assert_eq!((e.key.as_str(), e.line), ("group[0]", 3));
    assert!(e.problem.contains("neither loops nor duration"));
}

#[test]
fn a_stage_of_background_groups_only_is_refused_and_a_rate_may_run_in_the_background() {
    let e = build(&format!(
        "{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 2\nbackground = true\n"
    ))
    .unwrap_err();
    assert_eq!(e.key, "group[0].background");
    assert!(e.problem.contains("nothing would end it"), "{}", e.problem);
    let plan = build(&format!(
        "{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 2\nbackground = true\nrate = 100\n[[group]]\nname = \"f\"\nop = \"find\"\nthreads = 1\nloops = 3\n"
    ))
    .unwrap();
    let g = plan.groups().find(|g| g.name == "i").unwrap();
    assert_eq!(
        (g.stop, g.rate),
        (crate::plan::StopAt::Background, Some(100.0))
    );
}

#[test]
fn a_group_over_several_collections_has_a_handle_on_each_and_names_only_its_own() {
    let colls = "[[collection]]\nname = \"a\"\n[[collection]]\nname = \"b\"\n[[collection]]\nname = \"c\"\n";
    let group = "[[group]]\nname = \"u\"\nthreads = 2\nloops = 3\nupdateMany = { filter = {}, update = { \"$inc\" = { n = 1 } } }\n";
    let plan = build(&format!("{colls}{group}collections = [\"b\", \"c\"]\n")).unwrap();
    let g = plan.groups().next().unwrap();
    assert_eq!(g.collection, 1, "the first of its collections");
    let spread: Vec<usize> = g.spread.iter().map(|s| s.0).collect();
    assert_eq!(spread, vec![1, 2]);
    for (c, h) in &g.spread {
        assert_eq!(
            plan.handles[*h].collection, *c,
            "each collection its handle"
        );
    }
    // Drawn uniformly, each one.
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(7);
    let mut seen = [0u32; 3];
    for _ in 0..1000 {
        seen[g.target(&mut rng, 0).0] += 1;
    }
    assert!(seen[0] == 0 && (400..600).contains(&seen[1]), "{seen:?}");
    let e = build(&format!("{colls}{group}collections = [\"b\", \"x\"]\n")).unwrap_err();
    assert_eq!(e.key, "group[0].collections[1]");
    assert!(
        e.problem.contains("`x` is not a collection"),
        "{}",
        e.problem
    );
    let e = build(&format!(
        "{colls}{group}collection = \"a\"\ncollections = [\"b\"]\n"
    ))
    .unwrap_err();
    assert!(e.problem.contains("both set"), "{}", e.problem);
}

#[test]
fn a_state_machine_is_read_with_its_ways_out_and_refused_where_it_could_not_walk() {
    let head = "[[group]]\nname = \"m\"\nthreads = 1\nloops = 5\n";
    let a = "[[group.states]]\nname = \"a\"\nsteps = [{ estimatedDocumentCount = {} }]\n";
    let b = "[[group.states]]\nname = \"b\"\nsteps = [{ name = \"n\", estimatedDocumentCount = {} }]\ntransitions = [{ to = \"a\", weight = 1, sleep = 5 }]\n";
    let a_out = "transitions = [{ to = \"b\", weight = 3 }, { to = \"a\", weight = 1 }]\n";
    let ok = format!("{DOC}{head}initial = {{ a = 1 }}\n{a}{a_out}{b}");
    let plan = build(&ok).unwrap();
    let g = plan.groups().next().unwrap();
    let chain = g.chain.as_ref().unwrap();
    assert_eq!(
        g.kinds().iter().map(|k| k.to_string()).collect::<Vec<_>>(),
        ["a", "b", "step0", "n"]
    );
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(3);
    let to_b = (0..4000)
        .filter(|_| chain.next(0, &mut rng).to == 1)
        .count();
    assert!((2800..3200).contains(&to_b), "3 of 4 go to b: {to_b}");
    assert!((0..100).all(|_| chain.first(&mut rng) == 0 && chain.next(1, &mut rng).to == 0));
    let cases = [
        (format!("{DOC}{head}initial = {{ a = 1 }}\n{a}transitions = [{{ to = \"c\", weight = 1 }}]\n{b}"), "`c` is not a state"),
        (format!("{DOC}{head}initial = {{ a = 1 }}\n{a}{b}"), "no way out"),
        (format!("{DOC}{head}{a}{a_out}{b}"), "needs `initial`"),
        (format!("{DOC}{head}rate = 10\ninitial = {{ a = 1 }}\n{a}{a_out}{b}"), "not a rate"),
        (format!("{DOC}{head}initial = {{ a = 1 }}\n{a}transitions = [{{ to = \"b\", weight = 1, sleep = \"x\" }}]\n{b}"), "a pause is milliseconds"),
    ];
    for (text, said) in cases {
        let e = build(&text).unwrap_err();
        assert!(e.problem.contains(said), "{said}: {}", e.problem);
    }
}

#[test]
fn a_group_after_another_of_its_stage_waits_for_it_and_nothing_else_may() {
    let g = |name: &str, extra: &str| {
        format!("[[group]]\nname = \"{name}\"\nop = \"insert\"\nthreads = 1\nloops = 1\n{extra}")
    };
    let plan = build(&format!("{DOC}{}{}", g("a", ""), g("b", "after = \"a\"\n"))).unwrap();
    let b = plan.groups().find(|x| x.name == "b").unwrap();
    assert_eq!(
        b.after,
        Some(plan.groups().find(|x| x.name == "a").unwrap().index)
    );
    for (text, said) in [
        (
            format!("{DOC}{}{}", g("a", "after = \"b\"\n"), g("b", "")),
            "not a group before",
        ),
        (
            format!(
                "{DOC}{}{}",
                g("a", ""),
                g("b", "after = \"a\"\nstage = \"two\"\n")
            ),
            "another stage",
        ),
    ] {
        let e = build(&text).unwrap_err();
        assert!(e.problem.contains(said), "{said}: {}", e.problem);
    }
}

#[test]
fn zero_threads_and_bad_durations_are_located() {
    let e = build(&format!(
        "{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 0\nloops = 1\n"
    ))
    .unwrap_err();
    assert_eq!(
        (e.key.as_str(), e.line, e.column),
        ("group[0].threads", 6, 11)
    );
    let e = build(&format!(
        "{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 1\nduration = \"soon\"\n"
    ))
    .unwrap_err();
    assert_eq!(e.key, "group[0].duration");
    assert_eq!(e.value.as_deref(), Some("\"soon\""));
}

#[test]
fn overrides_replace_every_groups_threads_and_stop() {
    let text = format!("{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 5\nduration = \"1m\"\n[[group]]\nname = \"f\"\nop = \"find\"\nthreads = 7\nloops = 3\n");
    let loaded = crate::plan::profile::parse("p.toml", &text, "p").unwrap();
    let plan = RunPlan::build(
        &loaded,
        &Overrides {
            threads: Some(2),
            loops: Some(4),
            ..Overrides::default()
        },
    )
    .unwrap();
    assert!(plan
        .groups()
        .all(|g| g.threads == 2 && g.stop == StopAt::Loops(4)));
    assert_eq!(plan.planned_operations(), Some(16));
    // A built-in find reads as a find of the first choice field, limit 50, no count.
    let OpSpec::Template(t) = &plan.groups().nth(1).unwrap().op else {
        panic!("a built-in find is one operation")
    };
    assert_eq!(t.desugared.as_ref().map(|d| d.kind), Some(OpKind::Find));
    assert!(matches!(
        &t.command,
        Command::Find(f) if f.args.limit == Some(50) && !f.count_first && f.page.is_none()
            && matches!(f.filter, crate::workload::command::Filter::Fields(_))
    ));
}

#[test]
fn groups_with_a_stage_run_after_the_earlier_stage() {
    let text = format!("{DOC}[[group]]\nname = \"i\"\nstage = \"one\"\nop = \"insert\"\nthreads = 1\nloops = 1\n[[group]]\nname = \"f\"\nstage = \"two\"\nop = \"find\"\nthreads = 1\nloops = 1\n");
    let plan = build(&text).unwrap();
    assert_eq!(
        plan.stages
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["one", "two"]
    );
}

#[test]
fn a_group_name_with_a_control_character_is_refused() {
    let e = build(&format!(
        "{DOC}[[group]]\nname = \"in\\tsert\"\nop = \"insert\"\nthreads = 1\nloops = 1\n"
    ))
    .unwrap_err();
    assert_eq!(e.key, "group[0].name");
    assert!(e.problem.contains("in\\tsert"), "{}", e.problem);
    assert!(e.problem.contains("control character"), "{}", e.problem);
}

#[test]
fn a_warm_up_must_leave_part_of_a_timed_group_and_falls_back_to_the_profiles() {
    let group = |extra: &str| {
        format!("{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 1\nduration = \"6s\"\n{extra}")
    };
    let e = build(&group("warmup = \"6s\"\n")).unwrap_err();
    assert_eq!(e.key, "group[0].warmup");
    assert!(
        e.problem.contains("leaves nothing of group `i`'s 6s"),
        "{e}"
    );
    let plan = build(&format!("warmup = \"2s\"\n{}", group(""))).unwrap();
    assert_eq!(plan.groups().next().unwrap().warmup, Duration::from_secs(2));
    let plan = build(&format!("warmup = \"2s\"\n{}", group("warmup = \"1s\"\n"))).unwrap();
    assert_eq!(plan.groups().next().unwrap().warmup, Duration::from_secs(1));
}

#[test]
fn collections_in_turn_repeat_and_a_group_metric_read_as_written_and_refused_out_of_place() {
    let colls = "[[collection]]\nname = \"a\"\n[[collection]]\nname = \"b\"\n[[collection]]\nname = \"c\"\n";
    let steps = "[[group.steps]]\nname = \"load\"\nrepeat = 3\ninsertMany = { batch = 2, document = { x = 1 } }\n[[group.steps]]\nname = \"index\"\ncommand = { createIndexes = \"a\", indexes = [{ key = { x = 1 }, name = \"x_1\" }] }\n";
    let group = "[[group]]\nname = \"l\"\nthreads = 2\nloops = 3\ncollections = [\"a\", \"b\", \"c\"]\ncollections_in_turn = true\nop_timeout_per_step = true\nmetric = \"l.Total\"\n";
    let plan = build(&format!("{colls}{group}{steps}")).unwrap();
    let g = plan.groups().next().unwrap();
    // In turn: turn n goes to the n-th collection, round again after the last.
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(7);
    let turns: Vec<usize> = (0..4).map(|t| g.target(&mut rng, t).0).collect();
    assert_eq!(turns, [0, 1, 2, 0]);
    // The repeated step is sent three times (one row), each made at its turn; the operation
    // may take the timeout once per send.
    let OpSpec::Steps(st) = &g.op else {
        panic!("steps")
    };
    assert_eq!(st.steps.len(), 4);
    assert_eq!(g.kinds().len(), 2, "one row per step name");
    assert!(st.late[..3].iter().all(|l| *l) && !st.late[3]);
    let second = std::time::Duration::from_secs(1);
    assert_eq!(g.op_limit(&g.op, second), 4 * second);
    assert_eq!(g.steps_metric().map(String::as_str), Some("l.Total"));
    // Out of place: each refused by name.
    for (text, key, says) in [
        (
            format!("{colls}[[group]]\nname = \"l\"\nthreads = 1\nloops = 1\ncollections_in_turn = true\n{steps}"),
            "group[0].collections_in_turn",
            "goes with `collections`",
        ),
        (
            format!("{colls}[[group]]\nname = \"l\"\nthreads = 1\nloops = 1\nop = \"insert\"\nmetric = \"m\"\n"),
            "group[0].metric",
            "belongs to a group of [[group.steps]]",
        ),
        (
            format!("{colls}[[group]]\nname = \"l\"\nthreads = 1\nloops = 1\n[[group.steps]]\nrepeat = 0\ninsertOne = {{ document = {{ x = 1 }} }}\n"),
            "group[0].steps[0].repeat",
            "never send",
        ),
        (
            format!("{colls}[[group]]\nname = \"l\"\nthreads = 1\nloops = 1\n[[group.steps]]\nrepeat = 200000\ninsertOne = {{ document = {{ x = 1 }} }}\n"),
            "group[0].steps[0].repeat",
            "more than the 100000",
        ),
        (
            format!("{colls}[[group]]\nname = \"l\"\nthreads = 1\nloops = 1\n[[group.steps]]\nrepeat = 2\nfindOne = {{ filter = {{ _id = {{ \"^Key\" = {{}} }} }} }}\n"),
            "group[0].steps[0].repeat",
            "made at each of its turns",
        ),
    ] {
        let e = build(&text).unwrap_err();
        assert_eq!(e.key, key, "{}", e.problem);
        assert!(e.problem.contains(says), "{}", e.problem);
    }
}

#[test]
fn a_scan_step_reads_its_one_read_and_limits_and_its_hold_adds_to_the_timeout() {
    let colls = "[[collection]]\nname = \"a\"\n";
    let group = |tx: &str, scan: &str| {
        format!("{colls}[[group]]\nname = \"s\"\nthreads = 1\nloops = 1\n{tx}[[group.steps]]\nname = \"Scan\"\nscan = {scan}\n")
    };
    let held = group(
        "transaction = true\n",
        "{ read = { find = { filter = { x = 1 }, batchSize = 10 } }, collections = [\"a\", \"b\"], order = \"reverse\", skip = 1, documents = 5, hold = \"2s\", continuous = true, megabytes = \"10 per 1s\" }",
    );
    let plan = build(&held).unwrap();
    let g = plan.groups().next().unwrap();
    // The hold is time the transaction is kept open on purpose: on top of the timeout.
    let second = std::time::Duration::from_secs(1);
    assert_eq!(g.op_limit(&g.op, second), 3 * second);
    for (text, key, says) in [
        (
            group("", "{ read = { find = {} }, hold = \"2s\" }"),
            "group[0].steps[0].scan.hold",
            "runs none",
        ),
        (
            group(
                "transaction = true\n",
                "{ read = { find = {} }, continuous = true }",
            ),
            "group[0].steps[0].scan.continuous",
            "there is no `hold`",
        ),
        (
            group(
                "",
                "{ read = { find = {}, aggregate = { pipeline = [] } } }",
            ),
            "group[0].steps[0].scan.read",
            "exactly one read",
        ),
        (
            group("", "{ read = { insertOne = { document = {} } } }"),
            "group[0].steps[0].scan.read",
            "not a read a scan makes",
        ),
        (
            group("", "{ read = { find = { filtr = {} } } }"),
            "group[0].steps[0].scan.read.find.filtr",
            "did you mean `filter`",
        ),
        (
            group("", "{ read = { find = {} }, skip = 2 }"),
            "group[0].steps[0].scan.skip",
            "has no `order`",
        ),
        (
            group("", "{ read = { find = {} }, megabytes = \"fast\" }"),
            "group[0].steps[0].scan.megabytes",
            "not `N per T`",
        ),
        (
            group(
                "",
                "{ read = { countDocuments = {} }, megabytes = \"1 per 1s\" }",
            ),
            "group[0].steps[0].scan.megabytes",
            "no documents to pace",
        ),
        (
            group("", "{ read = { find = { sort = { a = 1 } } }, at = \"t\" }"),
            "group[0].steps[0].scan.at",
            "filter only",
        ),
        (
            group("", "{ read = { find = {} }, at = \"t\", order = \"forward\" }"),
            "group[0].steps[0].scan.at",
            "as listed",
        ),
        (
            group("transaction = true\n", "{ read = { find = {} }, at = \"t\" }"),
            "group[0].steps[0].scan.at",
            "outside any transaction",
        ),
        (
            format!("{colls}[[group]]\nname = \"s\"\nthreads = 1\nloops = 1\n[[group.steps]]\nclusterTime = {{}}\n"),
            "group[0].steps[0].clusterTime.keep",
            "needs `keep`",
        ),
    ] {
        let e = build(&text).unwrap_err();
        assert_eq!(e.key, key, "{}", e.problem);
        assert!(e.problem.contains(says), "{}", e.problem);
    }
}

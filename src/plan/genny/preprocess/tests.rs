//! The preprocessor pinned on genny's own examples (`../shared/reference/genny`), on small
//! workloads written here, and on genny's whole corpus.

use super::numexpr::{evaluate, Num};
use super::pyfmt::{percent_format, py_float};
use super::*;

/// A file of genny's copy; the copy must be there (CI has it at `../shared/reference/genny`).
fn reference(relative: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/genny");
    assert!(
        root.is_dir(),
        "this test needs genny's workloads at {} (../shared/reference/genny from the crate root)",
        root.display()
    );
    root.join(relative)
}

fn yaml(text: &str) -> Value {
    serde_yaml::from_str(text).unwrap()
}

/// Files written into a fresh directory, preprocessed from the first.
struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new(files: &[(&str, &str)]) -> Files {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Files { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn run(&self, name: &str, parameters: &[(&str, &str)], overrides: &[&str]) -> Result<Value> {
        let parameters: Vec<(String, String)> = parameters
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        let overrides: Vec<PathBuf> = overrides.iter().map(|o| self.path(o)).collect();
        preprocess(&self.path(name), &parameters, &overrides)
    }
}

/// One workload's text, preprocessed.
fn expand(text: &str) -> Result<Value> {
    Files::new(&[("w.yml", text)]).run("w.yml", &[], &[])
}

/// The expanded workload without the `Clients` genny adds to every one.
fn expand_bare(text: &str) -> Value {
    let mut out = expand(text).unwrap();
    out.as_mapping_mut().unwrap().shift_remove("Clients");
    out
}

fn problem(result: Result<Value>) -> String {
    match result {
        Ok(value) => panic!(
            "expected an error, got {}",
            serde_yaml::to_string(&value).unwrap()
        ),
        Err(e) => e.to_string(),
    }
}

#[test]
fn hello_world_actor_template_makes_each_instance_with_its_own_parameters() {
    let out = preprocess(
        &reference("src/workloads/docs/HelloWorld-ActorTemplate.yml"),
        &[],
        &[],
    )
    .unwrap();
    let phases = "
      - {Message: Hello Phase 0 🐳, Duration: 50 milliseconds}
      - {Message: Hello Phase 1 👬, Repeat: 100}
      - {Message: Hello Phase 2, Repeat: 2}";
    let expected = yaml(&format!(
        "
- Name: Hello_1
  Type: HelloWorld
  Threads: 1
  Phases: {phases}
- Name: Hello_2
  Type: HelloWorld
  Threads: 2
  Phases: {phases}
- Name: HelloWorld-NonTemplate
  Type: HelloWorld
  Threads: 1
  Phases: {phases}"
    ));
    assert_eq!(out["Actors"], expected);
    let keys: Vec<&str> = out
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        keys,
        ["Clients", "SchemaVersion", "Owner", "Description", "Actors"]
    );
}

#[test]
fn a_top_level_load_config_loads_a_whole_workload_its_parameters_reaching_what_templates_leave() {
    let out = preprocess(
        &reference("src/workloads/docs/HelloWorld-LoadConfig.yml"),
        &[],
        &[],
    )
    .unwrap();
    let names: Vec<&str> = out["Actors"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a["Name"].as_str().unwrap())
        .collect();
    // As the workload's comment says: the templates' own parameters win inside them.
    assert_eq!(names, ["Hello_1", "Hello_2", "Helloworld-Overridden"]);
    assert_eq!(
        out["Actors"][2]["Phases"][2],
        yaml("{Message: Hello Phase 2, Repeat: 2}")
    );
    // The workload's own top-level keys stay, the loaded file adds the ones it lacks.
    let keys: Vec<&str> = out
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        keys,
        ["Clients", "SchemaVersion", "Owner", "Description", "Actors"]
    );
    assert!(out["Description"]
        .as_str()
        .unwrap()
        .contains("general workload substitution"));
}

#[test]
fn hello_world_divides_with_num_expr_into_a_float_and_formats_with_python_percent() {
    let out = preprocess(&reference("src/workloads/docs/HelloWorld.yml"), &[], &[]).unwrap();
    let expected = yaml(
        "
- {Message: Hello Phase 0 🐳, Duration: 50 milliseconds}
- {Message: Hello Phase 1 👬, Repeat: 100}
- {Message: Hello Phase 2, Repeat: 2}
- {Message: Hello Phase 3, TotalMessageCount: 100, Repeat: 50.0}
- {Message: Hello Phase 4, Repeat: 1}",
    );
    assert_eq!(out["Actors"][0]["Phases"], expected);
    assert!(out["Actors"][0]["Phases"][3]["Repeat"].is_f64());
}

#[test]
fn every_workload_is_merged_onto_genny_default_clients_and_its_clients_get_no_pre_warm() {
    let out = expand(
        "Clients: {Default: {QueryOptions: {maxPoolSize: 500}}, Other: {URI: x}}\nActors: []",
    )
    .unwrap();
    let expected = yaml(
        "
Default: {Type: mongo, QueryOptions: {maxPoolSize: 500}, NoPreWarm: false}
Stream: {Type: mongostream, QueryOptions: {maxPoolSize: 100}, NoPreWarm: false}
Other: {URI: x, NoPreWarm: false}",
    );
    assert_eq!(out["Clients"], expected);
    let loader = preprocess(&reference("src/workloads/docs/Loader.yml"), &[], &[]).unwrap();
    assert_eq!(
        loader["Clients"]["Default"]["QueryOptions"]["maxPoolSize"],
        yaml("200")
    );
}

#[test]
fn only_active_in_phases_writes_the_config_in_active_phases_and_nop_in_the_others() {
    let out = expand_bare(
        "
Actors:
- Name: A
  Phases:
    OnlyActiveInPhases:
      Active: [0, {^Parameter: {Name: Second, Default: 2}}]
      NopInPhasesUpTo: 3
      PhaseConfig: {Message: Alternate Phase 1, Repeat: {^Parameter: {Name: R, Default: 100}}}",
    );
    let expected = yaml(
        "
- {Message: Alternate Phase 1, Repeat: 100}
- {Nop: true}
- {Message: Alternate Phase 1, Repeat: 100}
- {Nop: true}",
    );
    assert_eq!(out["Actors"][0]["Phases"], expected);
    // An active phase past NopInPhasesUpTo is not written, as in genny.
    let out = expand_bare(
        "Actors: [{Name: A, Phases: {OnlyActiveInPhases: {Active: [1, 5], NopInPhasesUpTo: 1, PhaseConfig: {Repeat: 1}}}}]",
    );
    assert_eq!(
        out["Actors"][0]["Phases"],
        yaml("[{Nop: true}, {Repeat: 1}]")
    );
}

#[test]
fn flatten_once_flattens_the_outer_list_only() {
    let out = expand_bare(
        "
Ten: &Ten [1, 1]
Actors:
  ^FlattenOnce:
  - [{Name: A}, {Name: B}]
  - [{Name: C}]
  - {Name: D}
Twice: {^FlattenOnce: [*Ten, *Ten, [[3]]]}",
    );
    assert_eq!(
        out["Actors"],
        yaml("[{Name: A}, {Name: B}, {Name: C}, {Name: D}]")
    );
    assert_eq!(out["Twice"], yaml("[1, 1, 1, 1, [3]]"));
}

#[test]
fn anchors_aliases_and_merge_keys_read_as_pyyaml_reads_them() {
    let out = expand_bare(
        "
a: &a {x: 1, y: 2}
b: &b {y: 20, z: 30}
one: {<<: *a, y: 3, w: 4}
list: {<<: [*a, *b], v: 0}
tagged:
  !!merge <<: *a
  x: 9
big: 1_000_000
float: 1e6
quoted: '1e6'
",
    );
    // The merged keys come first, the mapping's own win; in a list the first mapping wins.
    assert_eq!(out["one"], yaml("{x: 1, y: 3, w: 4}"));
    let keys: Vec<&str> = out["one"]
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(keys, ["x", "y", "w"]);
    assert_eq!(out["list"], yaml("{y: 2, z: 30, x: 1, v: 0}"));
    let keys: Vec<&str> = out["list"]
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(keys, ["y", "z", "x", "v"]);
    assert_eq!(out["tagged"], yaml("{x: 9, y: 2}"));
    assert_eq!(out["big"], Value::from(1_000_000));
    assert_eq!(out["float"], Value::from(1e6));
    assert_eq!(out["quoted"], Value::from("1e6"));
}

#[test]
fn runtime_generators_are_left_as_written() {
    let out = expand_bare(
        "Actors: [{Name: A, Phases: [{Document: {a: {^RandomInt: {min: 1, max: 1e4}}, d: {^Date: {}}}}]}]",
    );
    assert_eq!(
        out["Actors"][0]["Phases"][0]["Document"],
        yaml("{a: {^RandomInt: {min: 1, max: 10000.0}}, d: {^Date: {}}}")
    );
}

/// A workload in `workloads/sub/`, phase files in `phases/sub/`, as genny lays them out.
fn scoped_files() -> Files {
    Files::new(&[
        (
            "workloads/sub/W.yml",
            "
Actors:
- Name: {^Parameter: {Name: Name, Default: Plain}}
  Phases:
  - LoadConfig:
      Path: ../../phases/sub/A.yml
      Parameters: {Size: 10}
  - Size: {^Parameter: {Name: Size, Default: 1}}
",
        ),
        (
            "phases/sub/A.yml",
            "
SchemaVersion: 2018-07-01
Size: {^Parameter: {Name: Size, Default: 0}}
LoadConfig:
  Path: ../../phases/sub/B.yml
",
        ),
        (
            "phases/sub/B.yml",
            "
SchemaVersion: 2018-07-01
Inner: {^Parameter: {Name: Size, Default: 0}}
Size: 99
",
        ),
    ])
}

#[test]
fn a_load_configs_parameters_apply_inside_the_loaded_files_only_and_paths_start_at_the_workload() {
    let files = scoped_files();
    let out = files.run("workloads/sub/W.yml", &[], &[]).unwrap();
    // B.yml's Path is read from the workload's directory, not from A.yml's: genny's rule.
    // Size is 10 in A and in the B it loads, the Default outside; A's own Size wins over B's.
    assert_eq!(
        out["Actors"],
        yaml("[{Name: Plain, Phases: [{Size: 10, Inner: 10}, {Size: 1}]}]")
    );
}

#[test]
fn a_p_parameter_is_set_everywhere_over_load_config_parameters_and_defaults() {
    let files = scoped_files();
    let out = files
        .run(
            "workloads/sub/W.yml",
            &[("Size", "1e5"), ("Name", "perf")],
            &[],
        )
        .unwrap();
    assert_eq!(
        out["Actors"],
        yaml("[{Name: perf, Phases: [{Size: 100000.0, Inner: 100000.0}, {Size: 100000.0}]}]")
    );
    let out = files
        .run("workloads/sub/W.yml", &[("Size", "true")], &[])
        .unwrap();
    assert_eq!(out["Actors"][0]["Phases"][1]["Size"], Value::Bool(true));
    let out = files
        .run("workloads/sub/W.yml", &[("Size", "7")], &[])
        .unwrap();
    assert_eq!(out["Actors"][0]["Phases"][1]["Size"], Value::from(7));
}

#[test]
fn a_p_parameter_no_parameter_reads_is_refused_with_the_names_there_are() {
    let files = scoped_files();
    let message = problem(files.run("workloads/sub/W.yml", &[("Sise", "3")], &[]));
    assert!(message.contains("W.yml"), "{message}");
    assert!(message.contains("`-p Sise`"), "{message}");
    assert!(message.contains("it has Name, Size"), "{message}");
}

#[test]
fn a_parameter_without_default_needs_a_value_from_somewhere() {
    let workload = "Actors: [{Name: A, Threads: {^Parameter: {Name: Threads}}}]";
    let message = problem(expand(workload));
    assert!(
        message.contains("w.yml: Actors[0].Threads.^Parameter"),
        "{message}"
    );
    assert!(message.contains("`Threads` has no `Default`"), "{message}");
    assert!(message.contains("-p Threads=VALUE"), "{message}");
    let files = Files::new(&[("w.yml", workload)]);
    let out = files.run("w.yml", &[("Threads", "4")], &[]).unwrap();
    assert_eq!(out["Actors"][0]["Threads"], Value::from(4));
    let templated = expand_bare(
        "
ActorTemplates: [{TemplateName: T, Config: {Name: A, Threads: {^Parameter: {Name: Threads}}}}]
Actors: [{ActorFromTemplate: {TemplateName: T, TemplateParameters: {Threads: 3}}}]",
    );
    assert_eq!(templated["Actors"], yaml("[{Name: A, Threads: 3}]"));
}

#[test]
fn templates_are_named_where_they_are_read_and_expanded_where_they_are_used() {
    let out = expand_bare(
        "
ActorTemplates:
- TemplateName: T
  Config:
    Name: {^PreprocessorFormatString: {format: 'MTWorkload%04dT', withArgs: [{^Parameter: {Name: Threads, Default: 1}}]}}
    Threads: {^Parameter: {Name: Threads, Default: 1}}
Actors:
- ActorFromTemplate:
    TemplateName: {^Parameter: {Name: Which, Default: T}}
    TemplateParameters: {Threads: 16}
- ActorFromTemplate: {TemplateName: T, TemplateParameters: {Threads: 512}}
  Threads: 5
- ActorFromTemplate: {TemplateName: T}
",
    );
    assert_eq!(
        out["Actors"],
        yaml(
            "[{Name: MTWorkload0016T, Threads: 16}, {Name: MTWorkload0512T, Threads: 5}, \
             {Name: MTWorkload0001T, Threads: 1}]"
        )
    );
    assert!(out.get("ActorTemplates").is_none());
}

#[test]
fn an_unknown_template_is_refused_with_the_templates_there_are() {
    let message = problem(expand(
        "
ActorTemplates: [{TemplateName: Reader, Config: {Name: R}}, {TemplateName: Writer, Config: {Name: W}}]
Actors: [{ActorFromTemplate: {TemplateName: Raeder, TemplateParameters: {}}}]",
    ));
    assert!(
        message.contains("w.yml: Actors[0].ActorFromTemplate"),
        "{message}"
    );
    assert!(
        message.contains("no actor template named `Raeder`"),
        "{message}"
    );
    assert!(message.contains("Reader, Writer"), "{message}");
    // A template is a name from where it is read on, as in genny.
    let message = problem(expand(
        "Actors: [{ActorFromTemplate: {TemplateName: T}}]\nActorTemplates: [{TemplateName: T, Config: {Name: R}}]",
    ));
    assert!(message.contains("no actor template named `T`"), "{message}");
}

#[test]
fn a_name_that_is_a_template_is_not_a_parameter() {
    let message = problem(expand(
        "ActorTemplates: [{TemplateName: T, Config: {Name: R}}]\nActors: [{Name: {^Parameter: {Name: T, Default: x}}}]",
    ));
    assert!(
        message.contains("`T` names an actor template here, not a parameter"),
        "{message}"
    );
}

#[test]
fn a_load_config_keeps_the_keys_already_there_and_later_keys_win() {
    let files = Files::new(&[
        (
            "w.yml",
            "
Actors:
- Name: A
  Phases:
  - {Repeat: 5, LoadConfig: {Path: p.yml, Key: Phase}, Message: mine}
  - LoadConfig: {Path: p.yml, Key: List}
",
        ),
        (
            "p.yml",
            "SchemaVersion: 2018-07-01\nPhase: {Repeat: 1, Message: theirs, Extra: 2}\nList: [1, 2]",
        ),
    ]);
    let out = files.run("w.yml", &[], &[]).unwrap();
    assert_eq!(
        out["Actors"][0]["Phases"],
        yaml("[{Repeat: 5, Message: mine, Extra: 2}, [1, 2]]")
    );
}

#[test]
fn a_missing_load_config_file_is_named_with_the_file_that_loads_it() {
    let files = Files::new(&[(
        "workloads/w.yml",
        "Actors: [{Name: A, Phases: [{LoadConfig: {Path: ../phases/Gone.yml}}]}]",
    )]);
    let error = files.run("workloads/w.yml", &[], &[]).unwrap_err();
    assert_eq!(error.file, files.path("workloads/w.yml"));
    let message = error.to_string();
    assert!(
        message.contains("Actors[0].Phases[0].LoadConfig.Path"),
        "{message}"
    );
    assert!(message.contains("`Path: ../phases/Gone.yml`"), "{message}");
    assert!(
        message.contains(&format!(
            "there is no file {}",
            files.path("phases/Gone.yml").display()
        )),
        "{message}"
    );
    assert!(!message.contains('\n'), "{message}");
}

#[test]
fn a_loaded_file_must_be_genny_schema_2018_07_01_and_have_the_key_asked_for() {
    let files = Files::new(&[
        (
            "a.yml",
            "Actors: [{Name: A, Phases: [{LoadConfig: {Path: p.yml}}]}]",
        ),
        (
            "b.yml",
            "Actors: [{Name: A, Phases: [{LoadConfig: {Path: q.yml, Key: Nope}}]}]",
        ),
        (
            "c.yml",
            "Actors: [{Name: A, Phases: [{LoadConfig: {Path: q.yml, Parameter: {}}}]}]",
        ),
        ("p.yml", "Phase: {Repeat: 1}"),
        ("q.yml", "SchemaVersion: 2018-07-01\nPhase: {Repeat: 1}"),
    ]);
    let error = files.run("a.yml", &[], &[]).unwrap_err();
    assert_eq!(error.file, files.path("p.yml"));
    assert!(error.problem.contains("no `SchemaVersion`"), "{error}");
    let message = problem(files.run("b.yml", &[], &[]));
    assert!(message.contains("`Key: Nope`"), "{message}");
    assert!(message.contains("(it has: Phase)"), "{message}");
    let message = problem(files.run("c.yml", &[], &[]));
    assert!(
        message.contains("`LoadConfig` has `Parameter`, which it does not take"),
        "{message}"
    );
}

#[test]
fn a_yaml_syntax_error_says_the_file_and_line() {
    let files = Files::new(&[
        ("w.yml", "Actors:\n  - Name: A\n   Type: [oops\n"),
        (
            "l.yml",
            "Actors: [{Name: A, Phases: [{LoadConfig: {Path: bad.yml}}]}]",
        ),
        ("bad.yml", "SchemaVersion: 2018-07-01\nPhase: {a: 1\n"),
    ]);
    let error = files.run("w.yml", &[], &[]).unwrap_err();
    assert!(error.problem.starts_with("YAML syntax: "), "{error}");
    assert!(error.problem.contains("line 3"), "{error}");
    let error = files.run("l.yml", &[], &[]).unwrap_err();
    assert_eq!(error.file, files.path("bad.yml"));
    assert!(error.problem.contains("line 3"), "{error}");
}

#[test]
fn override_files_are_deep_merged_onto_the_workload_in_order_before_it_is_expanded() {
    let files = Files::new(&[
        (
            "w.yml",
            "
Clients: {Default: {QueryOptions: {maxPoolSize: 500}}}
Database: &db {^Parameter: {Name: Db, Default: test}}
Actors: [{Name: A, Database: *db, Phases: [{Repeat: 1}, {Repeat: 2}]}]",
        ),
        (
            "o1.yml",
            "
Clients: {Default: {URI: 'mongodb://db1:27017'}}
Actors: [{Name: B, Database: {^Parameter: {Name: Db, Default: other}}, Phases: [{Repeat: 3}]}]",
        ),
        (
            "o2.yml",
            "Database: fixed\nExtra: {^NumExpr: {withExpression: '2 ** 10'}}",
        ),
    ]);
    let out = files.run("w.yml", &[], &["o1.yml", "o2.yml"]).unwrap();
    assert_eq!(
        out["Clients"]["Default"],
        yaml("{Type: mongo, QueryOptions: {maxPoolSize: 500}, URI: 'mongodb://db1:27017', NoPreWarm: false}")
    );
    // A list is replaced whole; what the overrides bring is expanded like the rest.
    assert_eq!(
        out["Actors"],
        yaml("[{Name: B, Database: other, Phases: [{Repeat: 3}]}]")
    );
    assert_eq!(out["Database"], Value::from("fixed"));
    assert_eq!(out["Extra"], Value::from(1024));
    let keys: Vec<&str> = out
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(keys, ["Clients", "Database", "Actors", "Extra"]);
}

#[test]
fn client_uri_gives_a_clients_uri_or_stays_for_the_runs_uri() {
    let out = expand_bare(
        "
Clients: {Other: {URI: 'mongodb://other:27017'}}
Actors: [{Name: A, a: {^ClientURI: {Name: Other}}, b: {^ClientURI: {Name: Default}}}]",
    );
    assert_eq!(
        out["Actors"][0],
        yaml("{Name: A, a: 'mongodb://other:27017', b: {^ClientURI: {Name: Default}}}")
    );
    let message = problem(expand("Actors: [{Name: A, a: {^ClientURI: {Name: Nope}}}]"));
    assert!(message.contains("the client `Nope`"), "{message}");
    assert!(message.contains("it has: Default, Stream"), "{message}");
}

#[test]
fn an_actor_needs_a_name_and_actors_a_list() {
    let message = problem(expand("Actors: [{Name: A}, {Type: Loader}]"));
    assert!(
        message.contains("Actors[1]: this actor has no `Name`"),
        "{message}"
    );
    let message = problem(expand("Actors: {Name: A}"));
    assert!(
        message.contains("`Actors` must be a list of actors"),
        "{message}"
    );
}

#[test]
fn a_key_after_a_replacing_key_in_the_same_mapping_is_refused() {
    let message = problem(expand(
        "Actors: [{Name: A, Threads: {^Parameter: {Name: T, Default: 2}, x: 1}}]",
    ));
    assert!(
        message.contains("`x` follows a key that replaced this mapping with 2"),
        "{message}"
    );
}

#[test]
fn a_template_or_load_config_that_includes_itself_is_refused_not_a_stack_overflow() {
    let message = problem(expand(
        "ActorTemplates: [{TemplateName: T, Config: {Name: {ActorFromTemplate: {TemplateName: T}}}}]\nActors: [{ActorFromTemplate: {TemplateName: T}}]",
    ));
    assert!(message.contains("includes itself"), "{message}");
    let files = Files::new(&[
        (
            "w.yml",
            "Actors: [{Name: A, Phases: [{LoadConfig: {Path: p.yml}}]}]",
        ),
        (
            "p.yml",
            "SchemaVersion: 2018-07-01\nx: {LoadConfig: {Path: p.yml}}",
        ),
    ]);
    let message = problem(files.run("w.yml", &[], &[]));
    assert!(message.contains("includes itself"), "{message}");
}

#[test]
fn no_input_makes_it_panic() {
    let odd = [
        "",
        "[]",
        "3",
        "Actors: 3",
        "Actors: [3]",
        "Actors: [{Name: {^Parameter: 5}}]",
        "Actors: [{Name: {^Parameter: {Default: 1}}}]",
        "Actors: [{Name: A, Phases: {OnlyActiveInPhases: [7]}}]",
        "Actors: [{Name: A, Phases: {OnlyActiveInPhases: {Active: 1, NopInPhasesUpTo: 3, PhaseConfig: {}}}}]",
        "Actors: [{Name: A, Phases: {OnlyActiveInPhases: {Active: [1], NopInPhasesUpTo: 1e12, PhaseConfig: {}}}}]",
        "Actors: [{Name: A, Phases: {OnlyActiveInPhases: {Active: [1], NopInPhasesUpTo: 99999999999, PhaseConfig: {}}}}]",
        "Actors: [{Name: A, Phases: {OnlyActiveInPhases: {Active: [1], NopInPhasesUpTo: -4, PhaseConfig: {}}}}]",
        "ActorTemplates: {}\nActors: []",
        "ActorTemplates: [3]\nActors: []",
        "Actors: [{ActorFromTemplate: 3}]",
        "Actors: [{ActorFromTemplate: {TemplateName: [1]}}]",
        "LoadConfig: 3",
        "LoadConfig: {Path: 3}",
        "LoadConfig: {Path: /}",
        "LoadConfig: {Path: ''}",
        "Clients: [1]",
        "Clients: {Default: 3}",
        "x: {^NumExpr: {withExpression: '(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1'}}",
        "x: {^NumExpr: {withExpression: '-------------------------------------------------------------------------------1'}}",
        "x: {^NumExpr: {withExpression: 3}}",
        "x: {^NumExpr: {withExpression: 'a', andValues: [1]}}",
        "x: {^NumExpr: {withExpression: 'a', andValues: {a: x}}}",
        "x: {^NumExpr: {withExpression: '9223372036854775807 + 1'}}",
        "x: {^NumExpr: {withExpression: '-9223372036854775807 - 1 // -1'}}",
        "x: {^NumExpr: {withExpression: '2 ** 99999999999'}}",
        "x: {^NumExpr: {withExpression: '10.0 ** 400'}}",
        "x: {^NumExpr: {withExpression: '1 % 0'}}",
        "x: {^NumExpr: {withExpression: '1e999 // 1'}}",
        "x: {^NumExpr: {withExpression: '\u{e9}\u{301} + 1'}}",
        "x: {^FlattenOnce: 3}",
        "x: {^FlattenOnce: abc}",
        "x: {^PreprocessorFormatString: {format: '%*d', withArgs: [99999999, 1]}}",
        "x: {^PreprocessorFormatString: {format: '%.99999999f', withArgs: [1]}}",
        "x: {^PreprocessorFormatString: {format: '%', withArgs: []}}",
        "x: {^PreprocessorFormatString: {format: '%d', withArgs: [.inf]}}",
        "x: {^PreprocessorFormatString: {format: '%c', withArgs: [99999999999]}}",
        "x: {^PreprocessorFormatString: {format: '%d %s', withArgs: {a: 1, b: 2}}}",
        "x: {^ClientURI: 3}",
        "x: !custom 3",
        "x: {<<: 3}",
        "x: {<<: [3]}",
        "x: 123456789012345678901234567890",
        "? [a, b]\n: c",
        "a: &a [*a]",
    ];
    for text in odd {
        let _ = expand(text);
    }
    // Every prefix of genny's examples.
    for example in [
        "HelloWorld.yml",
        "HelloWorld-ActorTemplate.yml",
        "CrudActor.yml",
        "Loader.yml",
    ] {
        let text =
            std::fs::read_to_string(reference(&format!("src/workloads/docs/{example}"))).unwrap();
        let scratch = tempfile::Builder::new()
            .suffix(".yml")
            .tempfile_in(std::env::temp_dir())
            .unwrap();
        for (cut, _) in text.char_indices().step_by(23) {
            std::fs::write(scratch.path(), &text[..cut]).unwrap();
            let _ = preprocess(scratch.path(), &[], &[]);
        }
    }
}

#[test]
fn num_expr_follows_pythons_rules_for_integers_and_floats() {
    let vars: HashMap<String, Num> = [
        ("a".to_string(), Num::Int(7)),
        ("b".to_string(), Num::Int(-3)),
        ("f".to_string(), Num::Float(2.5)),
        ("docCount".to_string(), Num::Int(1000)),
    ]
    .into();
    let cases = [
        ("a / b", Num::Float(7.0 / -3.0)),
        ("6 / 3", Num::Float(2.0)),
        ("a // b", Num::Int(-3)),
        ("a % b", Num::Int(-2)),
        ("-7 % 3", Num::Int(2)),
        ("7.5 % -2", Num::Float(-0.5)),
        ("-7.5 // 2", Num::Float(-4.0)),
        ("2 ** 10", Num::Int(1024)),
        ("2 ** -1", Num::Float(0.5)),
        ("2 ** 3 ** 2", Num::Int(512)),
        ("-a ** 2", Num::Int(-49)),
        ("(-a) ** 2", Num::Int(49)),
        ("a + f", Num::Float(9.5)),
        ("a * 2 + 1", Num::Int(15)),
        ("a * (2 + 1)", Num::Int(21)),
        ("(2 * docCount) / 10", Num::Float(200.0)),
        ("1e6", Num::Float(1e6)),
        (".5 + 5.", Num::Float(5.5)),
        ("0x1F + 1_000", Num::Int(1031)),
        ("True + 1", Num::Int(2)),
        ("a > b", Num::Bool(true)),
        ("a == 7.0", Num::Bool(true)),
        ("abs(b)", Num::Int(3)),
        ("sqrt(16)", Num::Float(4.0)),
        ("where(a > 1, 2, 3)", Num::Int(2)),
        ("--a", Num::Int(7)),
    ];
    for (expr, expected) in cases {
        assert_eq!(evaluate(expr, &vars), Ok(expected), "{expr}");
    }
    let errors = [
        ("a / 0", "division by zero"),
        ("missing + 1", "`missing` is not in `andValues`"),
        ("9223372036854775807 + 1", "does not fit in 64 bits"),
        ("(-8) ** 0.5", "complex"),
        ("a +", "ends too soon"),
        ("a b", "unexpected `b`"),
        ("1 < 2 < 3", "chained"),
        ("007", "leading zeros"),
        ("nope(1)", "not a function"),
    ];
    for (expr, expected) in errors {
        let error = evaluate(expr, &vars).unwrap_err();
        assert!(error.contains(expected), "{expr}: {error}");
    }
}

#[test]
fn num_expr_in_a_workload_checks_its_values_are_numbers() {
    let out = expand_bare("x: {^NumExpr: {withExpression: 'n - m', andValues: {n: 10, m: {^Parameter: {Name: M, Default: 2.5}}}}}");
    assert_eq!(out["x"], Value::from(7.5));
    let message = problem(expand(
        "x: {^NumExpr: {withExpression: 'n', andValues: {n: ten}}}",
    ));
    assert!(
        message.contains("x.^NumExpr.andValues: `n` is ten"),
        "{message}"
    );
}

#[test]
fn format_strings_follow_pythons_percent_operator() {
    let s = |text: &str| yaml(text);
    let cases: [(&str, Vec<Value>, &str); 14] = [
        ("%s.%s", vec![s("db"), s("coll")], "db.coll"),
        ("MTWorkload%04dT", vec![s("16")], "MTWorkload0016T"),
        ("%s Phase %d", vec![s("Hello"), s("4")], "Hello Phase 4"),
        ("%d", vec![s("3.9")], "3"),
        (
            "%5.2f|%-6s|%+d",
            vec![s("3.14159"), s("ab"), s("5")],
            " 3.14|ab    |+5",
        ),
        ("%x %X %#o", vec![s("255"), s("255"), s("8")], "ff FF 0o10"),
        ("%e", vec![s("12345.678")], "1.234568e+04"),
        (
            "%g %g %g",
            vec![s("0.0001"), s("1e16"), s("100")],
            "0.0001 1e+16 100",
        ),
        (
            "%s %s %s",
            vec![s("1.0"), s("1e16"), Value::Null],
            "1.0 1e+16 None",
        ),
        ("%s", vec![yaml("[1, a, true]")], "[1, 'a', True]"),
        ("%r", vec![s("it's")], "\"it's\""),
        ("100%%", vec![], "100%"),
        ("%*d", vec![s("4"), s("7")], "   7"),
        ("%c%c", vec![s("65"), s("b")], "Ab"),
    ];
    for (format, args, expected) in cases {
        assert_eq!(
            percent_format(format, &args).as_deref(),
            Ok(expected),
            "{format}"
        );
    }
    assert!(percent_format("%s %s", &[s("1")])
        .unwrap_err()
        .contains("not enough arguments"));
    assert!(percent_format("%s", &[s("1"), s("2")])
        .unwrap_err()
        .contains("not all arguments converted"));
    assert!(percent_format("%d", &[s("x")])
        .unwrap_err()
        .contains("a real number is required, not str"));
    assert!(percent_format("%(a)s", &[s("1")])
        .unwrap_err()
        .contains("mapping"));
    assert_eq!(py_float(1e-5), "1e-05");
    assert_eq!(py_float(123.0), "123.0");
    assert_eq!(py_float(-0.0), "-0.0");
}

/// Workloads of genny's copy that cannot expand because a file they load is not in the copy:
/// the five `tpch/denormalized/10/*` load phase files genny deleted; the `medical_workload-*`
/// load `contrib/qe_test_gen/maps_medical.yml` (2.7 MB, over the copy's limit) and `QueryStats`
/// loads `phases/query/QueryStats.tmpl` (not a `.yml`), both left out of the copy.
const MISSING_IN_THE_COPY: [&str; 14] = [
    "tpch/denormalized/10/AvgAcctBal.yml",
    "tpch/denormalized/10/AvgItemCost.yml",
    "tpch/denormalized/10/BiggestOrders.yml",
    "tpch/denormalized/10/TotalLineitemRevenue.yml",
    "tpch/denormalized/10/TotalOrderRevenue.yml",
    "encrypted/medical_workload-diagnosis-100-0-unencrypted.yml",
    "encrypted/medical_workload-diagnosis-100-0.yml",
    "encrypted/medical_workload-diagnosis-50-50-unencrypted.yml",
    "encrypted/medical_workload-diagnosis-50-50.yml",
    "encrypted/medical_workload-guid-50-50-unencrypted.yml",
    "encrypted/medical_workload-guid-50-50.yml",
    "encrypted/medical_workload-load-unencrypted.yml",
    "encrypted/medical_workload-load.yml",
    "query/QueryStats.yml",
];

#[test]
fn genny_corpus_expands_but_for_the_files_the_copy_lacks() {
    let root = reference("src/workloads");
    let mut files = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "datasets") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "yml") {
                files.push(path);
            }
        }
    }
    files.sort();
    let (mut workloads, mut expanded) = (0, 0);
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let relative = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !is_genny_workload(path, &text) {
            continue;
        }
        workloads += 1;
        match preprocess(path, &[], &[]) {
            Ok(out) => {
                expanded += 1;
                assert!(
                    out["Actors"].is_sequence(),
                    "{relative}: no Actors after expansion"
                );
            }
            Err(e) => failures.push((relative, e)),
        }
    }
    errln!(
        "genny corpus: {expanded} of {workloads} workloads expand ({} .yml files)",
        files.len()
    );
    for (relative, error) in &failures {
        errln!("  {relative}: {error}");
    }
    assert!(
        workloads >= 377,
        "only {workloads} workloads found under {}",
        root.display()
    );
    for (relative, error) in &failures {
        assert!(
            MISSING_IN_THE_COPY.contains(&relative.as_str()),
            "{relative} should expand: {error}"
        );
        assert!(error.problem.contains("there is no file"), "{error}");
        assert_eq!(error.file, root.join(relative), "{error}");
    }
    for name in &MISSING_IN_THE_COPY[..5] {
        let (_, error) = failures
            .iter()
            .find(|(relative, _)| relative == name)
            .unwrap_or_else(|| panic!("{name} loads a phase file genny deleted, yet it expanded"));
        let stem = Path::new(name).file_name().unwrap().to_string_lossy();
        let missing = format!("phases/tpch/denormalized/{stem}");
        assert!(error.problem.contains(&missing), "{error}");
    }
    assert!(
        expanded >= 363,
        "{expanded} workloads expand, fewer than 363"
    );
}

/// Whether `path` holds a genny workload: a `.yml`/`.yaml` file whose top level is a mapping
/// with `Actors` or `LoadConfig`. Text that is not valid YAML counts when a line starts with
/// either key, so that the preprocessor reports its syntax error (the corpus test below reads every `.yml` with it).
fn is_genny_workload(path: &Path, text: &str) -> bool {
    let yaml_extension = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("yml") || e.eq_ignore_ascii_case("yaml"));
    if !yaml_extension {
        return false;
    }
    match serde_yaml::from_str::<Value>(text) {
        Ok(Value::Mapping(top)) => top.contains_key("Actors") || top.contains_key("LoadConfig"),
        Ok(_) => false,
        Err(_) => text
            .lines()
            .any(|line| line.starts_with("Actors:") || line.starts_with("LoadConfig:")),
    }
}

#[test]
fn is_genny_workload_wants_a_yaml_file_with_actors_or_load_config_at_the_top() {
    let p = Path::new;
    assert!(is_genny_workload(p("w.yml"), "Actors: []"));
    assert!(is_genny_workload(
        p("w.YAML"),
        "SchemaVersion: 2018-07-01\nLoadConfig: {Path: x}"
    ));
    assert!(!is_genny_workload(p("w.toml"), "Actors: []"));
    assert!(!is_genny_workload(p("w.yml"), "Phase: {Repeat: 1}"));
    assert!(!is_genny_workload(p("w.yml"), "- Actors"));
    assert!(!is_genny_workload(p("w.yml"), "nested: {Actors: []}"));
    // Broken YAML that is plainly a workload is one, so its syntax error is reported.
    assert!(is_genny_workload(
        p("w.yml"),
        "Actors:\n - Name: A\n  Type: [oops"
    ));
    assert!(!is_genny_workload(p("w.yml"), "x: [oops"));
}

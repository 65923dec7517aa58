//! The whole evaluation pipeline on the committed fixture: experiment file -> corpus -> units -> encoder
//! -> flat and BM25 -> report in a run folder.

use std::path::Path;

use arbor_eval::scoring::report::{Report, Role};
use arbor_experiments::cache::Cache;
use arbor_experiments::experiment::Experiment;
use arbor_experiments::run::{evaluate_only, run, run_in};
use arbor_experiments::trained::Training;

use crate::common::workspace;

#[test]
fn quickstart_writes_a_run_folder_with_a_sane_report() {
    std::env::set_current_dir(workspace()).unwrap();
    let exp = Experiment::load(Path::new("experiments/quickstart.ron")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (dir, report) = run(&exp, out.path(), false, None).unwrap();
    assert!(dir.starts_with(out.path().join("quickstart")));
    let saved = Experiment::load(&dir.join("experiment.ron")).unwrap();
    assert_eq!(saved, exp, "the run folder reproduces the experiment");
    assert!(dir.join("report.md").is_file() && dir.join("report.json").is_file());
    inspect_page_shows_the_run(&dir, &report);
    the_control_serves_an_index(&dir, &report);
    // Five methods, then the trained SLLM's five matched controls (the head weights learn from the
    // documents alone and get none).
    assert_eq!(report.methods.len(), 10);
    let controls: Vec<&str> = report.methods[5..].iter().map(|m| m.name.as_str()).collect();
    assert!(controls[0].starts_with("Dense, a linear map over the frozen encoder") && controls[1].starts_with("Exemplars: BM25"), "{controls:?}");
    assert!(report.methods[5..].iter().all(|m| m.role == Role::Control { of: vec![report.methods[4].name.clone()] }));
    // Every row against every untrained baseline (the three untrained rows once each pair, the seven
    // others against all three), the trained row against its five controls; intervals in report.md, the
    // code that made it in report.json.
    assert_eq!(report.comparisons.len(), 3 + 7 * 3 + 5);
    // Each model records the documents it trained on: the training and validation articles, no test one.
    let models: Vec<arbor_experiments::trained::TrainedModel> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("models.json")).unwrap()).unwrap();
    assert!(models.iter().all(|m| m.trained_on.len() == 4), "three training articles and one validation: {models:?}");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("95 % interval") && md.contains("its matched control"), "{md}");
    // Every row with trees says their shape (issue 45): the two test articles' trees, in its line and as
    // figures in report.json; no other row has any.
    for m in &report.methods {
        let tree = m.name.starts_with("SproutRAG");
        assert_eq!(m.tree_shape.map(|s| s.trees), tree.then_some(2), "{}", m.name);
        assert_eq!(m.details.contains("tree shape over 2 trees"), tree, "{}: {}", m.name, m.details);
    }
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert!(json["methods"][2]["tree_shape"]["balance"].as_f64().is_some_and(|b| b > 0.0 && b <= 0.5), "{}", json["methods"][2]);
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert!(json["provenance"]["commit"].as_str().is_some_and(|c| !c.is_empty()), "{}", json["provenance"]);
    for m in &report.methods {
        assert_eq!(m.metrics.queries, 200, "{}", m.name);
        // Far above chance (a random unit of ~125 per article: IE well under 1) and below perfect.
        assert!(m.metrics.ie_mean > 5.0 && m.metrics.ie_mean < 60.0, "{}: IE {}", m.name, m.metrics.ie_mean);
        assert!(m.metrics.hit[2] > 70.0, "{}: hit@5 {}", m.name, m.metrics.hit[2]);
        assert!(m.tokens_per_query > 50.0);
    }
    // SproutRAG's trees are in the run folder, one per test article and index, and reload.
    let folders = |kind: &str| -> Vec<std::path::PathBuf> {
        let mut found: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir() && p.file_name().unwrap().to_str().unwrap().starts_with(&format!("{kind}-")))
            .collect();
        found.sort();
        found
    };
    assert_eq!(folders("trees").len(), 3, "one index per attention source and head weights");
    for index in folders("trees") {
        let trees: Vec<_> = std::fs::read_dir(index).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(trees.len(), 2);
        for path in trees {
            let tree = arbor_eval::formats::tree_io::load(&path).unwrap();
            assert_eq!(tree.leaves_under(tree.root()).count(), tree.num_leaves());
        }
    }
    // Training left its checkpoint, its log (one line per step plus the per-epoch evaluations) and
    // TensorBoard events.
    // Three trainings: the head weights over token attention, the SLLM (InfoNCE + L_attn) and its dense control.
    let trained = folders("train");
    assert_eq!(trained.len(), 3);
    let log_of = |t: &std::path::PathBuf| std::fs::read_to_string(t.join("log.jsonl")).unwrap();
    let train = trained.iter().find(|t| log_of(t).contains("loss/attn_weighted")).unwrap();
    let weights = trained.iter().find(|t| !log_of(t).contains("loss/ret")).unwrap();
    let log = std::fs::read_to_string(weights.join("log.jsonl")).unwrap();
    let entropy: Vec<f64> =
        log.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["head_weight_entropy"].as_f64()).collect();
    assert!(entropy.last().unwrap() < &(72f64.ln() - 1e-3), "the learned head weights moved off uniform: {entropy:?}");
    let state: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(train.join("checkpoints/state.json")).unwrap()).unwrap();
    let steps = state["step"].as_u64().unwrap() as usize;
    assert!(steps > 0);
    let log = std::fs::read_to_string(train.join("log.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.iter().filter(|l| l.get("loss/ret").is_some()).count(), steps);
    let evals: Vec<f64> = lines.iter().filter_map(|l| l["eval/ie_mean"].as_f64()).collect();
    assert_eq!(evals.len(), 3, "one evaluation per epoch");
    assert!(evals.iter().all(|&ie| ie > 5.0), "{evals:?}");
    // Epoch means of both loss terms go down (single batches are too noisy to compare).
    for term in ["loss/ret", "loss/attn_weighted"] {
        let mean = |epoch: f64| {
            let v: Vec<f64> = lines.iter().filter(|l| l["epoch"].as_f64() == Some(epoch)).filter_map(|l| l[term].as_f64()).collect();
            v.iter().sum::<f64>() / v.len() as f64
        };
        assert!(mean(2.0) < mean(0.0), "{term}: epoch 0 mean {} -> epoch 2 mean {}", mean(0.0), mean(2.0));
    }
    assert!(std::fs::read_dir(train.join("tb")).unwrap().count() >= 1);
    assert_eq!(state["complete"], true);

    // --resume on a finished run recomputes nothing: embeddings, the trained model and the trees are read
    // back, and every figure comes out the same.
    let modified = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
    let a_tree = std::fs::read_dir(&folders("trees")[0]).unwrap().next().unwrap().unwrap().path();
    let before = (modified(&a_tree), modified(&train.join("checkpoints/state.json")), log.len());
    let (again, second) = run(&exp, out.path(), true, None).unwrap();
    assert_eq!(again, dir);
    let after = (modified(&a_tree), modified(&train.join("checkpoints/state.json")), std::fs::read_to_string(train.join("log.jsonl")).unwrap().len());
    assert_eq!(before, after, "nothing was rebuilt or retrained");
    for (a, b) in report.methods.iter().zip(&second.methods) {
        assert_eq!(a.metrics, b.metrics, "{}", a.name);
    }

    // `evaluate --from` scores the run's trained models without training: a new run folder with no
    // training in it, and the same figures.
    let (scored, third) = evaluate_only(&exp, out.path(), Some(&dir), None).unwrap();
    assert_ne!(scored, dir);
    assert!(std::fs::read_dir(&scored).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().starts_with("train-")));
    assert_eq!(std::fs::read_to_string(train.join("log.jsonl")).unwrap().len(), log.len(), "nothing was trained");
    for (a, b) in report.methods.iter().zip(&third.methods) {
        assert_eq!(a.metrics, b.metrics, "{}", a.name);
    }
    // Without --from, `evaluate` refuses the trained methods rather than training them.
    let err = format!("{:#}", evaluate_only(&exp, out.path(), None, None).unwrap_err());
    assert!(err.contains("SproutRAG learned weights") && err.contains("--from"), "{err}");
}

/// `arbor inspect` on the quickstart run, read back with an HTML parser: a block per query in report
/// order, the legend's rows, the disagreements of the trained row and its first control in decreasing
/// order, each row's first items with beam paths for the tree rows, and gold marked on the gold text.
fn inspect_page_shows_the_run(dir: &Path, report: &Report) {
    let out = dir.join("inspect.html");
    assert_eq!(arbor_experiments::inspect::write_page(dir, &[], &[], &out).unwrap(), (200, 8));
    let html = std::fs::read_to_string(&out).unwrap();
    let dom = tl::parse(&html, tl::ParserOptions::default()).unwrap();
    let p = dom.parser();
    let all = |sel: &str| -> Vec<&tl::HTMLTag> { dom.query_selector(sel).unwrap().map(|h| h.get(p).unwrap().as_tag().unwrap()).collect() };
    let attr = |t: &tl::HTMLTag, k: &str| t.attributes().get(k).flatten().unwrap().as_utf8_str().into_owned();
    let text = |t: &tl::HTMLTag| unescape(&t.inner_text(p));
    let blocks = all("details.query");
    assert_eq!(blocks.iter().map(|b| attr(b, "data-query")).collect::<Vec<_>>(), report.queries);
    let legend: Vec<String> = all("tr.row").iter().map(|r| text(r)).collect();
    assert_eq!(legend.len(), 8);
    assert!(legend.iter().zip(&report.methods).all(|(row, m)| row.contains(&m.name)), "{legend:?}");
    // The rows with trees say their shape there (the SproutRAG rows), the others a dash.
    for (row, m) in legend.iter().zip(&report.methods) {
        assert_eq!(row.contains("balance"), m.name.starts_with("SproutRAG"), "{row}");
    }
    // The trained SLLM (row 5) against its first control (row 6): 25 queries, |difference| decreasing,
    // each linked to its block, the figures those of report.json.
    let heading = all("h2").into_iter().map(text).find(|h| h.contains("differ most")).unwrap();
    assert!(heading.contains(&report.methods[4].name) && heading.contains(&report.methods[5].name), "{heading}");
    let diffs: Vec<f64> = all("td.d").iter().map(|d| text(d).parse().unwrap()).collect();
    assert_eq!(diffs.len(), 25);
    assert!(diffs.windows(2).all(|w| w[0].abs() >= w[1].abs() - 0.051), "{diffs:?}");
    let first = attr(all("a")[0], "href");
    let q: usize = first.trim_start_matches("#q-").parse().unwrap();
    let expected = report.methods[4].per_query[q] - report.methods[5].per_query[q];
    assert!((diffs[0] - expected).abs() < 0.051, "{first}: {} vs {expected}", diffs[0]);
    // Every block lists each shown row's first 5 items; the untrained SproutRAG row (row 3) its beam paths,
    // from the root down.
    // (a row hands on fewer under the token budget where its items are large: the trained tree's nodes).
    let items = blocks[0].query_selector(p, "li.item").unwrap().count();
    let handed = arbor_eval::scoring::retrievals::read(dir).unwrap();
    let first = |m: &str| handed.iter().find(|h| h.method == m && h.query == report.queries[0]).map_or(0, |h| h.items.len().min(5));
    assert_eq!(items, report.methods.iter().take(8).map(|m| first(&m.name)).sum::<usize>());
    assert!(items >= 8 * 4, "{items}");
    let paths: Vec<String> = blocks[0].query_selector(p, "div.path").unwrap().map(|h| unescape(&h.get(p).unwrap().inner_text(p))).collect();
    assert!(paths.len() >= 5 && paths[0].starts_with("beam path: "), "{paths:?}");
    // The gold of the first query is marked on its text (pieces in order, cut where items begin or end).
    let exp = Experiment::load(&dir.join("experiment.ron")).unwrap();
    let (corpus, _) = arbor_experiments::run::load_corpus(&exp).unwrap();
    let query = corpus.queries.iter().find(|q| q.id == report.queries[0]).unwrap();
    let gold: String = corpus.gold(query).iter().map(|g| &corpus.documents[g.doc].text[g.span.start..g.span.end]).collect();
    let marked: String = blocks[0].query_selector(p, "span.gold").unwrap().map(|h| unescape(&h.get(p).unwrap().inner_text(p))).collect();
    assert_eq!(marked, gold);
}

/// `arbor index --from` the quickstart run: the fixture's articles embedded by the run's dense control (a
/// map over the frozen encoder) rank, within each question's article and under the run's token budget,
/// as the control's row ranked them in the run; so do the trees and vectors of its trained SproutRAG rows
/// (the learned head weights over token attention, the SLLM over the frozen encoder's vectors), searched
/// as the rows search them (issue 63).
fn the_control_serves_an_index(dir: &Path, report: &Report) {
    let fixture = workspace().join("experiments/fixtures/squad-mini");
    let row = &report.methods[5].name;
    assert!(row.starts_with("Dense, a linear map"), "{row}");
    crate::common::an_index_from_the_run_ranks_as_its_row(dir, &fixture, "Dense", row, 40);
    for (at, kind) in [(3, "SproutRAG learned weights"), (4, "SproutRAG trained")] {
        let row = &report.methods[at].name;
        assert!(row.starts_with(kind), "{row}");
        crate::common::an_index_from_the_run_ranks_as_its_row(dir, &fixture, kind, row, 40);
    }
}

/// HTML's five escapes undone.
fn unescape(html: &str) -> String {
    html.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
}

#[test]
fn a_run_folder_without_the_model_is_named_in_the_error() {
    std::env::set_current_dir(workspace()).unwrap();
    let text = r#"Experiment(name: "x", data: (format: Jsonl, path: "experiments/fixtures/squad-mini", split: Some("test"), max_queries: Some(5)),
        methods: [SproutRag((attention: Sllm, model: (sllm: (layers: 1, heads: 2, d_model: 64, d_ff: 128), vae: None), training: Some((schedule: (epochs: 1)))))])"#;
    let exp = Experiment::parse(text, Path::new("x.ron")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let earlier = out.path().join("earlier");
    std::fs::create_dir_all(&earlier).unwrap();
    std::fs::write(earlier.join("models.json"), "[]").unwrap();
    let err = format!("{:#}", evaluate_only(&exp, out.path(), Some(&earlier), None).unwrap_err());
    assert!(err.contains(&earlier.display().to_string()) && err.contains("SproutRAG trained"), "{err}");
    let err = format!("{:#}", evaluate_only(&exp, out.path(), Some(out.path()), None).unwrap_err());
    assert!(err.contains("models.json"), "{err}");
}

#[test]
fn long_sentences_are_cut_to_what_the_encoder_reads_and_an_impossible_limit_is_an_error() {
    std::env::set_current_dir(workspace()).unwrap();
    let bm25_only = |units: &str| {
        let text = format!(
            r#"Experiment(name: "f", data: (format: Jsonl, path: "experiments/fixtures/filing-mini", split: Some("test")), units: {units}, methods: [Bm25])"#
        );
        Experiment::parse(&text, Path::new("f.ron")).unwrap()
    };
    let out = tempfile::tempdir().unwrap();
    // Default: units of at most what the encoder reads; the table-sized "sentences" are cut; nothing is truncated.
    let (_, cut) = run(&bm25_only("(max_sentences: 2)"), out.path(), false, None).unwrap();
    assert_eq!(cut.units.max_tokens, 254);
    assert!(cut.units.cut_sentences > 0);
    assert_eq!(cut.units.truncated_inputs, 0);
    // A limit above the encoder's: fewer units, and the report counts what the encoder truncates.
    let (_, long) = run(&bm25_only("(max_sentences: 2, max_tokens: Some(100000))"), out.path(), false, None).unwrap();
    assert!(long.units.units < cut.units.units && long.units.truncated_inputs > 0, "{:?} vs {:?}", long.units, cut.units);
    // One word piece per unit cannot hold a word of several pieces.
    let err = format!("{:#}", run(&bm25_only("(max_sentences: 2, max_tokens: Some(1))"), out.path(), false, None).unwrap_err());
    assert!(err.contains("raise units.max_tokens") && err.contains("finance-excerpt"), "{err}");
}

#[test]
fn pieces_of_a_cut_statement_are_handed_on_whole_when_asked() {
    std::env::set_current_dir(workspace()).unwrap();
    let fixture = "experiments/fixtures/filing-pdftotext-mini";
    let bm25 = |hand_on: &str| {
        let text = format!(
            r#"Experiment(name: "p", data: (format: Jsonl, path: "{fixture}", split: Some("test")),
                units: (context: Some(64)), retrieval: (max_tokens: None, hand_on: {hand_on}), methods: [Bm25])"#
        );
        Experiment::parse(&text, Path::new("p.ron")).unwrap()
    };
    let out = tempfile::tempdir().unwrap();
    let (_, pieces) = run(&bm25("Items"), out.path(), false, None).unwrap();
    let (_, whole) = run(&bm25("WholeSentences"), out.path(), false, None).unwrap();
    // The statements are cut; handed on whole they are larger than their pieces, and the report says so.
    assert!(pieces.units.cut_sentences > 0);
    assert!(
        whole.methods[0].tokens_per_query > pieces.methods[0].tokens_per_query,
        "{} vs {}",
        whole.methods[0].tokens_per_query,
        pieces.methods[0].tokens_per_query
    );
    assert!(whole.setting.contains("handed on as the whole sentence") && !pieces.setting.contains("whole sentence"), "{}", whole.setting);
    // Handed on as paragraphs (no budget cuts the last), every span starts and ends where the document's
    // paragraphs do.
    let (dir, paragraphs) = run(&bm25("Paragraphs"), out.path(), false, None).unwrap();
    assert!(paragraphs.setting.contains("the whole of the paragraphs"), "{}", paragraphs.setting);
    let corpus = arbor_datasets::loaders::load_jsonl(Path::new(fixture)).unwrap();
    let mut spans = 0;
    for line in std::fs::read_to_string(dir.join("retrievals.jsonl")).unwrap().lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        for item in r["items"].as_array().unwrap() {
            let doc = corpus.documents.iter().find(|d| d.id == item["doc"].as_str().unwrap()).unwrap();
            let bounds: Vec<usize> = arbor_datasets::units::paragraphs(doc).iter().flat_map(|p| [p.span.start, p.span.end]).collect();
            for s in item["spans"].as_array().unwrap() {
                let (a, b) = (s[0].as_u64().unwrap() as usize, s[1].as_u64().unwrap() as usize);
                assert!(bounds.contains(&a) && bounds.contains(&b), "[{a}, {b}) is not whole paragraphs of {}", doc.id);
                spans += 1;
            }
        }
    }
    assert!(spans > 0);
}

#[test]
fn by_default_a_cut_table_is_read_after_its_header_and_handed_on_whole() {
    std::env::set_current_dir(workspace()).unwrap();
    let fixture = "experiments/fixtures/filing-pdftotext-mini";
    let text = format!(
        r#"Experiment(name: "t", data: (format: Jsonl, path: "{fixture}", split: Some("test")), retrieval: (max_tokens: None), methods: [Bm25])"#
    );
    let exp = Experiment::parse(&text, Path::new("t.ron")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (dir, report) = run(&exp, out.path(), false, None).unwrap();
    assert!(report.units.cut_tables > 0 && report.units.cut_tables <= report.units.cut_sentences, "{:?}", report.units);
    assert!(report.setting.contains("handed on as the whole table"), "{}", report.setting);
    // The tables the run cut, by the rule it ran: their later pieces read a header, and every handed-on span
    // that touches one covers it whole.
    let (corpus, _) = arbor_experiments::run::load_corpus(&exp).unwrap();
    let prepared = arbor_experiments::run::prepare(&exp, &corpus).unwrap();
    for seg in &prepared.leaves.segments {
        for table in &seg.tables {
            let later = seg.units.iter().filter(|u| table.contains(&u.span) && u.span.start > table.start);
            assert!(later.clone().count() > 0 && later.clone().all(|u| !u.header.is_empty()));
        }
    }
    let mut widened = 0;
    for line in std::fs::read_to_string(dir.join("retrievals.jsonl")).unwrap().lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        for item in r["items"].as_array().unwrap() {
            let d = corpus.documents.iter().position(|d| d.id == item["doc"].as_str().unwrap()).unwrap();
            for s in item["spans"].as_array().unwrap() {
                let span = arbor_datasets::Span::new(s[0].as_u64().unwrap() as usize, s[1].as_u64().unwrap() as usize);
                for table in prepared.leaves.segments[d].tables.iter().filter(|t| t.start < span.end && span.start < t.end) {
                    assert!(span.contains(table), "{span:?} holds part of the table {table:?}");
                    widened += 1;
                }
            }
        }
    }
    assert!(widened > 0, "some query is handed a table");
}

#[test]
fn without_a_cut_table_the_default_hands_on_what_items_does_for_every_method() {
    std::env::set_current_dir(workspace()).unwrap();
    // squad-mini cuts no sentence; SproutRAG's beam hands on nodes inside nodes, which a hand-on that drops
    // items inside those above would change.
    let exp = |hand_on: &str| {
        let text = format!(
            r#"Experiment(name: "n", data: (format: Jsonl, path: "experiments/fixtures/squad-mini", split: Some("test")),
                retrieval: ({hand_on}), methods: [Flat, Bm25, SproutRag((search: Beam((beam_width: 3, delta: 0.0))))])"#
        );
        Experiment::parse(&text, Path::new("n.ron")).unwrap()
    };
    let out = tempfile::tempdir().unwrap();
    let (_, default) = run(&exp(""), out.path(), false, None).unwrap();
    let (_, items) = run(&exp("hand_on: Items"), out.path(), false, None).unwrap();
    assert_eq!(default.units.cut_tables, 0);
    for (a, b) in default.methods.iter().zip(&items.methods) {
        assert_eq!(a.per_query, b.per_query, "{}", a.name);
        assert_eq!(a.tokens_per_query, b.tokens_per_query, "{}", a.name);
    }
}

#[test]
fn a_missing_corpus_is_reported_with_its_path() {
    let text = r#"Experiment(name: "x", data: (format: Jsonl, path: "/nonexistent/corpus"), methods: [Bm25])"#;
    let exp = Experiment::parse(text, Path::new("x.ron")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = format!("{:#}", run(&exp, out.path(), false, None).unwrap_err());
    assert!(err.contains("/nonexistent/corpus/documents.jsonl"), "{err}");
}

#[test]
fn the_data_root_is_required_when_the_path_names_it() {
    let text = r#"Experiment(name: "x", data: (format: Jsonl, path: "$ARBOR_DATA/squad-long"), methods: [Bm25])"#;
    let exp = Experiment::parse(text, Path::new("x.ron")).unwrap();
    if std::env::var_os("ARBOR_DATA").is_none() {
        let err = format!("{:#}", exp.data.resolved_path().unwrap_err());
        assert!(err.contains("set ARBOR_DATA"), "{err}");
    }
}

/// Every file under `dir` whose name starts with `kind-`, with its modification time.
fn artefacts(dir: &Path, kind: &str) -> Vec<(std::path::PathBuf, std::time::SystemTime)> {
    let mut out = Vec::new();
    for folder in std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()) {
        if folder.is_dir() && folder.file_name().unwrap().to_string_lossy().starts_with(&format!("{kind}-")) {
            for file in std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()) {
                let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
                out.push((file, modified));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_document_added_in_front_leaves_the_others_artefacts_untouched() {
    std::env::set_current_dir(workspace()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let fixture = Path::new("experiments/fixtures/squad-mini");
    let docs: Vec<String> = std::fs::read_to_string(fixture.join("documents.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| l.contains(r#""split": "test""#))
        .map(String::from)
        .collect();
    assert_eq!(docs.len(), 2);
    let queries: String = std::fs::read_to_string(fixture.join("queries.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| l.contains(r#""split": "test""#))
        .map(|l| format!("{l}\n"))
        .collect();
    let write = |name: &str, docs: &[String]| {
        let dir = tmp.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("documents.jsonl"), docs.join("\n") + "\n").unwrap();
        std::fs::write(dir.join("queries.jsonl"), &queries).unwrap();
        dir
    };
    let before = write("before", &docs);
    let added = r#"{"id":"new","title":"New","text":"A document added in front. It shifts every other one.","split":"train"}"#.to_owned();
    let after = write("after", &[vec![added], docs.clone()].concat());
    let exp = |data: &Path| {
        let text = format!(
            r#"Experiment(name: "x", data: (format: Jsonl, path: "{}", split: Some("test")),
                methods: [Flat, SproutRag((attention: TokenBlocks(window_tokens: 128), search: Beam((beam_width: 3))))])"#,
            data.display()
        );
        Experiment::parse(&text, Path::new("x.ron")).unwrap()
    };
    let cache = Cache::new(tmp.path().join("shared"));
    let first = run_in(&exp(&before), &tmp.path().join("run1"), &cache, &Training::Allowed).unwrap();
    let saved = (artefacts(&cache.root, "units"), artefacts(&cache.root, "trees"));
    assert_eq!((saved.0.len(), saved.1.len()), (2, 2), "vectors and a tree per test document");
    let second = run_in(&exp(&after), &tmp.path().join("run2"), &cache, &Training::Allowed).unwrap();
    assert_eq!((artefacts(&cache.root, "units"), artefacts(&cache.root, "trees")), saved, "nothing recomputed or rewritten");
    for (a, b) in first.methods.iter().zip(&second.methods) {
        assert_eq!(a.metrics, b.metrics, "{}", a.name);
        // Read back, the index costs what building it took (as recorded), not the time to read it.
        let (built, read) = (a.index_ms_per_doc.unwrap(), b.index_ms_per_doc.unwrap());
        assert!(read >= 0.5 * built, "{}: built in {built:.1} ms/doc, reported {read:.1} when read back", a.name);
    }
    assert_ne!(first.inputs.corpus, second.inputs.corpus, "the report names the corpus it was computed from");
}

#[test]
fn every_baseline_runs_on_the_fixture_with_its_own_chunks() {
    std::env::set_current_dir(workspace()).unwrap();
    let exp = Experiment::load(Path::new("experiments/baselines-mini.ron")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (dir, report) = evaluate_only(&exp, out.path(), None, None).unwrap();
    assert_eq!(report.methods.len(), exp.methods.len());
    let row = |prefix: &str| report.methods.iter().find(|m| m.name.starts_with(prefix)).unwrap_or_else(|| panic!("no row {prefix}"));
    for m in &report.methods {
        assert_eq!(m.metrics.queries, 200, "{}", m.name);
        assert!(m.metrics.hit[2] > 70.0, "{}: hit@5 {}", m.name, m.metrics.hit[2]);
        assert!(m.metrics.iou[2] <= m.metrics.precision[2] + 1e-9, "{}: IoU is at most precision", m.name);
    }
    // Windows hand on more text the larger they are, and never more than their size on average.
    let tokens: Vec<f64> = ["Dense over 128", "Dense over 256", "Dense over 512"].iter().map(|p| row(p).tokens_per_query).collect();
    assert!(tokens[0] < tokens[1] && tokens[1] < tokens[2], "{tokens:?}");
    assert!(row("Dense over 128").details.starts_with("57 chunks"), "{}", row("Dense over 128").details);
    // The fixture has no sections and no heading lines: the hierarchy is the document over its units, and
    // parent expansion never fires, so it ranks exactly as flat does.
    assert!(row("Heading hierarchy").details.contains("2 with neither"), "{}", row("Heading hierarchy").details);
    assert_eq!(row("Heading hierarchy").metrics, row("Flat").metrics);
    // A hybrid whose dense side is named Flat fuses what the default hybrid fuses.
    assert_eq!(row("Hybrid (BM25 + Flat").metrics, row("Hybrid (BM25 + dense units").metrics);
    assert_ne!(row("Hybrid (BM25 + dense units").metrics, row("Flat").metrics, "BM25 is fused in");
    // RAPTOR builds a layer of summaries over each article and says how it made them.
    let raptor = &row("RAPTOR (collapsed").details;
    assert!(raptor.contains("max 1") && raptor.contains("extractive") && raptor.contains("PCA"), "{raptor}");
    // Its two searches share one cached tree per document.
    let raptor_dirs: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().starts_with("raptor-")).collect();
    assert_eq!(raptor_dirs.len(), 1);
    assert_eq!(std::fs::read_dir(raptor_dirs[0].path()).unwrap().count(), 2, "one tree per article");
    // RSE hands on segments: more text than flat, and more of the gold.
    assert!(row("RSE + AutoContext").tokens_per_query > row("Flat").tokens_per_query);
    assert!(row("RSE + AutoContext").metrics.recall[2] > row("Flat").metrics.recall[2]);
    // SAC ranks the same units as flat, embedded after their article's summary: other vectors, other ranks.
    let sac = row("SAC: leaf units");
    assert!(sac.details.contains("summaries of 64 tokens") && sac.details.contains("xtractive"), "{}", sac.details);
    assert_ne!(sac.metrics, row("Flat").metrics);
}

#[test]
fn every_shipped_experiment_loads() {
    let mut seen = 0;
    for entry in std::fs::read_dir(env!("CARGO_MANIFEST_DIR")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "ron") {
            Experiment::load(&path).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
            seen += 1;
        }
    }
    assert!(seen >= 10, "{seen} experiment files");
}

#[test]
fn smartchunk_builds_levels_and_its_three_embeddings_on_the_fixture() {
    std::env::set_current_dir(workspace()).unwrap();
    let exp = Experiment::load(Path::new("experiments/smartchunk-mini.ron")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (dir, report) = run(&exp, out.path(), false, None).unwrap();
    let row = |i: usize| &report.methods[i];
    // The units alone are flat retrieval, to the last digit.
    assert_eq!(row(1).metrics, row(0).metrics);
    for i in 2..6 {
        let m = row(i);
        assert!(m.details.contains("chunks per document by level (unit first): 64.5 / 36.5 / 17.5 / 9.0 / 4.5 / 1.0"), "{}", m.details);
    }
    for i in 2..5 {
        // Larger chunks come back: more text handed on, more of the gold found (the fixture's questions
        // are answered in single sentences, so character IE falls).
        let m = row(i);
        assert!(m.tokens_per_query > row(0).tokens_per_query && m.metrics.recall[2] > row(0).metrics.recall[2], "{}", m.name);
    }
    for i in 2..5 {
        assert!(row(i).details.contains("116.6 chunks scored per query"), "every level: {}", row(i).details);
    }
    // The planner learned the pseudo-labels' format (at least 95 % of its plans parse: it is trained on a
    // few dozen fixture questions, and the last float digits of the scores that made its labels move it
    // by a few plans) and plans narrower than every level.
    let planned = &row(5).details;
    let format: f64 = planned.split("format ").nth(1).and_then(|f| f.split(' ').next()).and_then(|f| f.parse().ok()).unwrap_or(0.0);
    assert!(planned.contains("planner (Sft") && format >= 95.0, "{planned}");
    assert!(!planned.contains("116.6 chunks scored per query"), "{planned}");
    // The compressor trained once in the cache (the run folder here), the planner over it, and the
    // planner's matched dense control; models.json records every one.
    let trained: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().starts_with("train-")).collect();
    assert_eq!(trained.len(), 3);
    assert_eq!(report.methods.len(), exp.methods.len() + 5, "the planner's five matched controls follow the methods");
    let models = std::fs::read_to_string(dir.join("models.json")).unwrap();
    assert!(trained.iter().all(|t| models.contains(&*t.file_name().to_string_lossy())), "{models}");
    // The planner's control ran exactly the steps the planner ran (SFT over its pseudo-labelled
    // queries only), not the steps its own query count gives: the planner's optimizer steps are counted
    // in its own logs (a line with `train/loss` per step of each phase), not read from the count it
    // recorded before training (issue 86), which must agree with them.
    let records: Vec<serde_json::Value> = serde_json::from_str(&models).unwrap();
    let dirs: Vec<(String, std::path::PathBuf)> =
        records.iter().map(|m| (m["method"].as_str().unwrap().to_owned(), m["dir"].as_str().unwrap().into())).collect();
    let planner = dirs.iter().map(|(_, d)| d).find(|d| d.join("steps.json").exists()).expect("the planner records its steps");
    let ran: usize = ["sft", "rl"]
        .iter()
        .filter_map(|phase| std::fs::read_to_string(planner.join(phase).join("log.jsonl")).ok())
        .map(|log| log.lines().filter(|l| l.contains("\"train/loss\"")).count())
        .sum();
    let recorded: usize = serde_json::from_str(&std::fs::read_to_string(planner.join("steps.json")).unwrap()).unwrap();
    assert!(ran > 0 && recorded == ran, "the planner ran {ran} steps and recorded {recorded}");
    let control = &dirs.iter().find(|(m, _)| m.starts_with("Dense")).expect("the planner's control").1;
    let log = std::fs::read_to_string(control.join("log.jsonl")).unwrap();
    assert_eq!(log.lines().filter(|l| l.contains("\"epoch\"")).count(), ran, "the control's steps are the steps the planner ran");
    // `evaluate --from` the run finds both models (the out-of-domain rows are made this way) and scores
    // the same. Its cache holds the run's encoder vectors only (units, queries, chunk levels: none of
    // them read a trained model), so everything the trained models compute is computed again.
    let elsewhere = tempfile::tempdir().unwrap();
    let vectors = elsewhere.path().join("vectors");
    std::fs::create_dir(&vectors).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if ["units-", "queries-", "chunks-"].iter().any(|p| name.starts_with(p)) {
            std::fs::rename(entry.path(), vectors.join(&name)).unwrap();
        }
    }
    assert!(std::fs::read_dir(&vectors).unwrap().count() >= 3, "the run's vectors moved");
    let (_, again) = evaluate_only(&exp, elsewhere.path(), Some(&dir), Some(&vectors)).unwrap();
    for (a, b) in report.methods.iter().zip(&again.methods) {
        assert_eq!(a.metrics, b.metrics, "{}", a.name);
    }
}

#[test]
fn a_corpus_without_a_train_split_trains_on_another_corpus_and_is_scored_alone() {
    std::env::set_current_dir(workspace()).unwrap();
    // filing-mini has one test document and no training split; squad-mini lends its four train articles.
    let exp = |lend: &str, methods: &str| {
        let text = format!(
            r#"Experiment(name: "lent", data: (format: Jsonl, path: "experiments/fixtures/filing-mini", split: Some("test"){lend}),
                methods: [{methods}], controls: [])"#
        );
        Experiment::parse(&text, Path::new("x.ron")).unwrap()
    };
    let sllm = "SproutRag((attention: Sllm, model: (sllm: (layers: 1, heads: 2, d_model: 64, d_ff: 128), vae: None), training: Some((schedule: (epochs: 1)))))";
    let lend = r#", train_with: [(format: Jsonl, path: "experiments/fixtures/squad-mini")]"#;
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::new(tmp.path().join("shared"));
    let alone = run_in(&exp("", "Flat"), &tmp.path().join("flat"), &cache, &Training::Allowed).unwrap();
    let err = format!("{:#}", run_in(&exp("", sllm), &tmp.path().join("alone"), &cache, &Training::Allowed).unwrap_err());
    assert!(err.contains("no query with evidence in training split"), "{err}");
    let report = run_in(&exp(lend, &format!("Flat, {sllm}")), &tmp.path().join("lent"), &cache, &Training::Allowed).unwrap();
    assert_eq!(report.methods[0].metrics, alone.methods[0].metrics, "a lent corpus changes nothing that does not train");
    assert!(report.methods.iter().all(|m| m.metrics.queries == 26), "only filing-mini's own queries are scored");
    assert!(
        report.setting.contains("1 documents") && report.setting.contains("`train` split of squad-mini (4 documents, 513 queries)"),
        "{}",
        report.setting
    );
    // The SLLM trained on squad-mini's questions (three articles; the fourth held out) and is recorded.
    let trained: Vec<_> = std::fs::read_dir(&cache.root)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("checkpoints/state.json"))
        .filter(|state| state.is_file() && state.to_string_lossy().contains("/train-"))
        .collect();
    assert_eq!(trained.len(), 1);
    let state = std::fs::read_to_string(&trained[0]).unwrap();
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert!(state["step"].as_u64().unwrap() >= 10 && state["complete"] == true, "{state}");
    assert!(std::fs::read_to_string(tmp.path().join("lent/models.json")).unwrap().contains("SproutRAG trained"));
}

#[test]
fn a_damaged_or_cut_short_artefact_is_rebuilt_and_gives_the_figures_of_a_fresh_run() {
    std::env::set_current_dir(workspace()).unwrap();
    let text = r#"Experiment(name: "d", data: (format: Jsonl, path: "experiments/fixtures/squad-mini", split: Some("test"), max_queries: Some(40)),
        methods: [Flat, SproutRag((attention: TokenBlocks(window_tokens: 128), search: Beam((beam_width: 3))))])"#;
    let exp = Experiment::parse(text, Path::new("d.ron")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let fresh = run_in(&exp, &tmp.path().join("fresh"), &Cache::new(tmp.path().join("fresh-cache")), &Training::Allowed).unwrap();
    let cache = Cache::new(tmp.path().join("shared"));
    run_in(&exp, &tmp.path().join("first"), &cache, &Training::Allowed).unwrap();
    let (units, trees) = (artefacts(&cache.root, "units"), artefacts(&cache.root, "trees"));
    // One byte of a vector file flipped; a tree file cut short.
    let mut bytes = std::fs::read(&units[0].0).unwrap();
    bytes[100] ^= 0x01;
    std::fs::write(&units[0].0, bytes).unwrap();
    let tree = std::fs::read(&trees[0].0).unwrap();
    std::fs::write(&trees[0].0, &tree[..tree.len() / 2]).unwrap();
    let again = Cache::new(&cache.root);
    let report = run_in(&exp, &tmp.path().join("second"), &again, &Training::Allowed).unwrap();
    assert_eq!(again.rebuilt(), 2, "both damaged files were rebuilt, nothing else");
    for (a, b) in fresh.methods.iter().zip(&report.methods) {
        assert_eq!(a.metrics, b.metrics, "{}", a.name);
    }
    arbor_eval::formats::vectors_io::load(&units[0].0).expect("rebuilt whole");
    arbor_eval::formats::tree_io::load(&trees[0].0).expect("rebuilt whole");
    assert_eq!(report.provenance.as_ref().map(|p| p.commit.is_empty()), Some(false), "the report names the code that made it");
}

//! What the integration tests share.

use std::path::Path;
use std::process::{Command, Output};

/// The workspace's root (experiment files and fixtures are named from it).
pub fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Runs the `arbor` binary in the workspace.
pub fn arbor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arbor")).args(args).current_dir(workspace()).output().unwrap()
}

/// Runs `arbor` and returns its standard output; a failure shows its standard error.
pub fn ok(args: &[&str]) -> String {
    let out = arbor(args);
    assert!(out.status.success(), "arbor {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// One ranked item: document, byte spans, score.
pub type Ranked = (String, Vec<[usize; 2]>, f32);

/// Whether `got` is the ranking `want`: the same score at every rank (within 1e-4), and the same item,
/// or one `want` holds at another rank with a score within 1e-4 (a near-tie two encodings of one text,
/// batched differently, may order either way).
pub fn same_ranking(got: &[Ranked], want: &[Ranked]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} items, not {}: {got:?} vs {want:?}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if (g.2 - w.2).abs() > 1e-4 {
            return Err(format!("rank {}: score {} vs {}: {got:?} vs {want:?}", i + 1, g.2, w.2));
        }
        let tied = want.iter().any(|o| (o.2 - w.2).abs() <= 1e-4 && (o.0.as_str(), &o.1) == (g.0.as_str(), &g.1));
        if (g.0.as_str(), &g.1) != (w.0.as_str(), &w.1) && !tied {
            return Err(format!("rank {}: {g:?} vs {w:?}: {got:?} vs {want:?}", i + 1));
        }
    }
    Ok(())
}

/// `arbor index --from RUN --row ROW` of the documents of every `every`-th question of the run (the lines of
/// FOLDER's documents.jsonl that hold them, in a folder of their own: the runs' default scope ranks within a
/// question's document, so the others are not needed) into a new index, every one of them added, then `arbor query` of those questions, within the question's document under the
/// default 2,000-token budget: the items, spans and scores of the run's row `name`. A SproutRAG
/// or reranked row is asked for by its own method (its search over the index's trees, its reranker over
/// its base), the others as `Flat` (over the row's vectors).
pub fn an_index_from_the_run_ranks_as_its_row(run: &Path, folder: &Path, row: &str, name: &str, every: usize) {
    use arbor_experiments::experiment::Experiment;
    use arbor_experiments::methods::Method;
    let tmp = tempfile::tempdir().unwrap();
    let handed = arbor_eval::scoring::retrievals::read(run).unwrap();
    let report: arbor_eval::scoring::report::Report = serde_json::from_str(&std::fs::read_to_string(run.join("report.json")).unwrap()).unwrap();
    let exp = Experiment::load(&run.join("experiment.ron")).unwrap();
    let (corpus, _) = arbor_experiments::run::load_corpus(&exp).unwrap();
    let asked: Vec<_> = report.queries.iter().step_by(every).map(|id| corpus.queries.iter().find(|q| &q.id == id).unwrap()).collect();
    let docs: std::collections::HashSet<&str> = asked.iter().map(|q| q.doc_ids[0].as_str()).collect();
    let lines: Vec<String> = std::fs::read_to_string(folder.join("documents.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| docs.contains(serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_str().unwrap()))
        .map(str::to_owned)
        .collect();
    let subset = tmp.path().join("documents");
    std::fs::create_dir(&subset).unwrap();
    std::fs::write(subset.join("documents.jsonl"), lines.join("\n")).unwrap();
    let index = tmp.path().join("from-run.arbor");
    let (index_s, run_s) = (index.to_str().unwrap(), run.to_str().unwrap());
    let said = ok(&["index", subset.to_str().unwrap(), "--into", index_s, "--from", run_s, "--row", row]);
    assert!(said.starts_with(&format!("{} added, 0 changed, 0 removed, 0 unchanged, 0 skipped", docs.len())), "{said}");
    let method = exp
        .methods
        .iter()
        .find(|m| matches!(m, Method::SproutRag(_) | Method::Rerank(_)) && m.spec().label() == name)
        .map_or_else(|| "Flat".to_owned(), |m| ron::to_string(m).unwrap());
    for q in asked {
        let id = &q.id;
        let key = format!("documents.jsonl#{}", q.doc_ids[0]);
        let answer = ok(&["query", index_s, &q.text, "--method", &method, "--doc", &key, "-k", "10", "--max-tokens", "2000", "--json"]);
        let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
        let spans = |h: &serde_json::Value| -> Vec<[usize; 2]> {
            h["spans"].as_array().unwrap().iter().map(|s| [0, 1].map(|i| s["bytes"][i].as_u64().unwrap() as usize)).collect()
        };
        let got: Vec<Ranked> =
            answer["results"].as_array().unwrap().iter().map(|h| (String::new(), spans(h), h["score"].as_f64().unwrap() as f32)).collect();
        let expected = handed.iter().find(|r| &r.query == id && r.method == name).unwrap_or_else(|| panic!("no row {name:?} in {}", run.display()));
        let want: Vec<Ranked> = expected.items.iter().map(|i| (String::new(), i.spans.clone(), i.score)).collect();
        same_ranking(&got, &want).unwrap_or_else(|e| panic!("{row} query {id}: {e}"));
    }
}

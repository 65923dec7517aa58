//! Issue 86: a training on a sample of its split's questions (`train_queries`) reads the gold merge pairs
//! of its sample only, at both of SproutRAG's trainers' call sites (the head weights over the encoder's
//! attention and the SLLM): each records the pairs it read in its training folder (`merge_pairs.json`),
//! and they are those of the sampled questions' gold, not of every question of the split.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use arbor_experiments::experiment::Experiment;
use arbor_experiments::methods::training::training_queries;
use arbor_experiments::run::{load_corpus, run};
use arbor_trainers::config::TrainConfig;
use serde_json::Value;

/// Six documents of eight sentences (five training, one test), each sentence its own unit; question i of
/// a document has the gold of its sentences i and i + 1 (i = 0..6), so each question gives one merge pair.
/// The corpus folder and each document's sentence spans by id.
fn sentences(dir: &Path) -> (std::path::PathBuf, BTreeMap<String, Vec<[usize; 2]>>) {
    let topics = ["tides", "orchards", "glaciers", "railways", "bridges", "lanterns"];
    let (mut docs, mut queries, mut spans) = (Vec::new(), Vec::new(), BTreeMap::new());
    for (d, topic) in topics.iter().enumerate() {
        let id = format!("doc-{topic}");
        let (mut text, mut at) = (String::new(), Vec::new());
        for s in 0..8 {
            let sentence = format!("The {topic} note number {s} speaks of {topic} in part {}.", s * 7 + d);
            if !text.is_empty() {
                text.push(' ');
            }
            at.push([text.len(), text.len() + sentence.len()]);
            text.push_str(&sentence);
        }
        let split = if d < 5 { "train" } else { "test" };
        docs.push(serde_json::json!({ "id": id, "title": topic, "text": text, "split": split }).to_string());
        for i in 0..6 {
            let evidence = serde_json::json!([{ "doc_id": id, "start": at[i][0], "end": at[i + 1][1] }]);
            let q = serde_json::json!({ "id": format!("{topic}-{i}"), "text": format!("What of {topic} parts {i}?"), "doc_ids": [id],
                "evidence": evidence, "answers": [], "split": split });
            queries.push(q.to_string());
        }
        spans.insert(id, at);
    }
    let out = dir.join("sentences");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("documents.jsonl"), docs.join("\n")).unwrap();
    std::fs::write(out.join("queries.jsonl"), queries.join("\n")).unwrap();
    (out, spans)
}

/// Every `merge_pairs.json` under `dir`, by the folder that holds it.
fn recorded(dir: &Path, found: &mut Vec<(std::path::PathBuf, Value)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            recorded(&path, found);
        } else if path.file_name().is_some_and(|n| n == "merge_pairs.json") {
            found.push((path.clone(), serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()));
        }
    }
}

#[test]
fn a_sampled_training_reads_the_merge_pairs_of_its_sample_only() {
    std::env::set_current_dir(crate::common::workspace()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (corpus_dir, spans) = sentences(tmp.path());
    let training = "merge_pairs: Evidence, train_queries: Some(5), schedule: (epochs: 1, checkpoint_every: 100)";
    let text = format!(
        r#"Experiment(name: "pairs", data: (format: Jsonl, path: {:?}, split: Some("test")), units: (max_sentences: 1),
            methods: [SproutRag((training: Some(({training})))),
                SproutRag((attention: Sllm, search: LeavesOnly, model: (sllm: (layers: 1, heads: 2, d_model: 32, d_ff: 64), vae: None),
                    training: Some(({training}, batch_size: 4))))],
            controls: [])"#,
        corpus_dir.display().to_string()
    );
    let exp = Experiment::parse(&text, Path::new("pairs.ron")).unwrap();
    let (dir, _) = run(&exp, &tmp.path().join("runs"), false, None).unwrap();
    // The sample both trainers draw (the split's five questions by the schedule's seed), as sentence pairs.
    let corpus = load_corpus(&exp).unwrap().0;
    let sample = training_queries(&corpus, &TrainConfig { train_queries: Some(5), ..TrainConfig::default() });
    let pair_of = |q: &arbor_datasets::Query| -> (String, usize) { (q.doc_ids[0].clone(), q.id.rsplit('-').next().unwrap().parse().unwrap()) };
    let want: BTreeSet<(String, usize)> = sample.values().flatten().map(|q| pair_of(q)).collect();
    assert_eq!(want.len(), 5);
    let every: usize = corpus.queries.iter().filter(|q| q.split.as_deref() == Some("train")).count();
    assert!(every > 2 * want.len(), "the split holds more questions than the sample: {every}");
    let mut found = Vec::new();
    recorded(&dir, &mut found);
    assert_eq!(found.len(), 2, "the head weights' training and the SLLM's: {found:?}");
    for (path, json) in found {
        let mut got = BTreeSet::new();
        for doc in json["documents"].as_array().unwrap() {
            let id = doc["document"].as_str().unwrap().to_owned();
            for pair in doc["pairs"].as_array().unwrap() {
                let at = |k: usize| -> [usize; 2] { [0, 1].map(|e| pair[k][e].as_u64().unwrap() as usize) };
                let sentence = |span: [usize; 2]| spans[&id].iter().position(|s| s[0] < span[1] && span[0] < s[1]).unwrap();
                let (a, b) = (sentence(at(0)), sentence(at(1)));
                assert_eq!(b, a + 1, "{}: consecutive units", path.display());
                got.insert((id.clone(), a));
            }
        }
        assert_eq!(got, want, "{}: the sampled questions' pairs, and only theirs", path.display());
    }
}

//! The unit tests of `arbor_experiments::summaries` (src/summaries/mod.rs).

use arbor_datasets::{Corpus, Span};
use arbor_datasets::{Document, Query, TokenStarts};
use arbor_eval::LeafIndex;
use arbor_experiments::summaries::endpoint::EndpointConfig;
use arbor_experiments::summaries::*;
use std::path::Path;

fn setup() -> (Corpus, LeafIndex) {
    let text = "Cats purr.\n\nDogs bark loudly.\n\nCats nap.\n\nStocks fell today.";
    let doc = Document { id: "d".into(), title: String::new(), text: text.into(), sections: vec![], split: None };
    let corpus = Corpus::new(vec![doc], Vec::<Query>::new(), Path::new("t")).unwrap();
    let tokens = vec![TokenStarts::words(text)];
    let leaves = LeafIndex::build(&corpus, &Default::default(), tokens).unwrap();
    (corpus, leaves)
}

#[test]
fn extractive_summaries_take_central_units_in_text_order_within_the_budget() {
    let (corpus, leaves) = setup();
    let vectors = vec![vec![1.0, 0.0], vec![0.6, 0.8], vec![0.98, 0.2], vec![0.0, 1.0]];
    let s = Extractive { corpus: &corpus, leaves: &leaves, unit_vectors: &vectors };
    let all: Vec<Span> = leaves.units.spans.iter().map(|u| u.span).collect();
    // Centroid (2.58, 2.0): units 1 (0.6, 0.8) and 2 score highest; 2 + 3 tokens fit 5.
    let got = s.summarise(0, &all, 5).unwrap();
    assert_eq!(got.text, "Dogs bark loudly. Cats nap.");
    assert_eq!(got.tokens, 5);
    // Of the first three units only: the centroid is (2.58, 1.0), unit 2 is nearest.
    let got = s.summarise(0, &all[..3], 2).unwrap();
    assert_eq!(got.text, "Cats nap.");
    // A budget smaller than any unit: the most central one, cut.
    let got = s.summarise(0, &all[1..2], 2).unwrap();
    assert_eq!((got.text.as_str(), got.tokens), ("Dogs bark", 2));
}

#[test]
fn file_summaries_are_found_by_id_and_missing_ones_listed() {
    let (corpus, leaves) = setup();
    let dir = std::env::temp_dir().join(format!("arbor-summaries-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("s.jsonl");
    std::fs::write(&file, "{\"id\": \"d\", \"summary\": \"Pets and stocks.\"}\n").unwrap();
    let s = ById::from_file(&file, &corpus, &leaves, dir.join("needed.jsonl")).unwrap();
    let whole = [Span::new(0, corpus.documents[0].text.len())];
    assert_eq!(s.summarise(0, &whole, 50).unwrap().text, "Pets and stocks.");
    let err = s.summarise(0, &[Span::new(0, 10)], 50).unwrap_err().to_string();
    assert!(err.contains("\"d@0-10\""), "{err}");
    let needed = std::fs::read_to_string(dir.join("needed.jsonl")).unwrap();
    assert!(needed.contains("\"text\":\"Cats purr.\""), "{needed}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn endpoint_summaries_are_recorded_and_read_back_instead_of_asked_again() {
    let (corpus, leaves) = setup();
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("summaries-k.jsonl");
    // The server answers one request only: a second would find no one listening.
    let (url, seen) = crate::unit::summaries_endpoint::serve(1, |_| (200, crate::unit::summaries_endpoint::completion("Pets.")));
    let config = EndpointConfig { url, model: "m".into(), api_key_env: None, prompt: "{text}".into(), temperature: 0.0, timeout_secs: 10 };
    let open = || ById::from_endpoint(config.connect().unwrap(), record.clone(), &corpus, &leaves, dir.path().join("needed.jsonl")).unwrap();
    let spans = [leaves.units.spans[0].span, leaves.units.spans[2].span];
    let s = open();
    let got = s.summarise(0, &spans, 20).unwrap();
    assert_eq!((got.text.as_str(), got.spans.as_slice(), got.tokens), ("Pets.", &spans[..], 4));
    assert_eq!(seen.recv().unwrap().1["messages"][1]["content"], "Cats purr.\nCats nap.");
    assert_eq!(s.summarise(0, &spans, 20).unwrap().text, "Pets.", "asked once");
    assert_eq!(std::fs::read_to_string(&record).unwrap(), "{\"id\":\"d@0-10,31-40\",\"summary\":\"Pets.\"}\n");
    // A later run reads the record; a line cut short by a stopped writer is dropped, not misread.
    std::fs::write(&record, "{\"id\":\"d@0-10,31-40\",\"summary\":\"Pets.\"}\n{\"id\":\"d\",\"summ").unwrap();
    assert_eq!(open().summarise(0, &spans, 20).unwrap().text, "Pets.");
    assert!(!open().holds("d"));
    // The record is a summaries file: it reproduces the run without the endpoint.
    let file = ById::from_file(&record, &corpus, &leaves, dir.path().join("needed.jsonl"));
    assert!(file.is_err(), "a torn record is not a clean file");
    std::fs::write(&record, "{\"id\":\"d@0-10,31-40\",\"summary\":\"Pets.\"}\n").unwrap();
    let file = ById::from_file(&record, &corpus, &leaves, dir.path().join("needed.jsonl")).unwrap();
    assert_eq!(file.summarise(0, &spans, 20).unwrap().text, "Pets.");
}

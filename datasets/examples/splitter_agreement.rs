//! How often do arbor's sentence boundaries agree with a corpus' gold evidence spans?
//!
//! For corpora whose gold evidence is whole sentences (squad-long), every gold span should start and end
//! on one of our sentence boundaries; this prints the share that does, and examples of those that do not.
//!
//!     cargo run --release -p arbor-datasets --example splitter_agreement -- ../shared/data/squad-long

use std::collections::HashSet;

use arbor_datasets::loaders::load_jsonl;
use arbor_datasets::sentences::split_sentences;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: splitter_agreement CORPUS_DIR")?;
    let corpus = load_jsonl(std::path::Path::new(&dir))?;
    let mut starts = HashSet::new();
    let mut ends = HashSet::new();
    let mut sentences = 0;
    for (d, doc) in corpus.documents.iter().enumerate() {
        for s in split_sentences(&doc.text) {
            starts.insert((d, s.start));
            ends.insert((d, s.end));
            sentences += 1;
        }
    }
    let mut gold = HashSet::new();
    for q in &corpus.queries {
        for e in &q.evidence {
            gold.insert((corpus.doc_index(&e.doc_id).unwrap(), e.start, e.end));
        }
    }
    let mut exact = 0;
    let mut shown = 0;
    for &(d, start, end) in &gold {
        if starts.contains(&(d, start)) && ends.contains(&(d, end)) {
            exact += 1;
        } else if shown < 15 {
            shown += 1;
            let text = &corpus.documents[d].text;
            let gold_span = arbor_datasets::Span::new(start, end);
            let ours: Vec<&str> = split_sentences(text).into_iter().filter(|s| s.overlaps(&gold_span)).map(|s| &text[s.start..s.end]).collect();
            println!("gold: {:?}\n ours: {:?}\n", &text[start..end], ours);
        }
    }
    println!(
        "{sentences} sentences in {} documents; {exact} of {} distinct gold spans ({:.1} %) start and end on our boundaries",
        corpus.documents.len(),
        gold.len(),
        100.0 * exact as f64 / gold.len() as f64
    );
    Ok(())
}

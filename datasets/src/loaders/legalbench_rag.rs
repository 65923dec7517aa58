//! LegalBench-RAG (Pipitone & Alami 2024) read as it is published: `corpus/<dataset>/*.txt` and
//! `benchmarks/<dataset>.json` (`{"tests": [{"query", "snippets": [{"file_path", "span": [start, end],
//! "answer"}]}]}`, spans in characters of the file as Python reads it), for each of contractnli, cuad,
//! maud and privacy_qa present.
//!
//! [`Selection::Mini`] is the released benchmark script's sample (legalbenchrag/benchmark.py: at most 194
//! tests a dataset, sorted by the first draw of Python's `random` seeded with each test's first file path,
//! `python_random`, Python's stable sort keeping file order among equal keys), its corpus the
//! documents those tests cite, pooled across the datasets; [`Selection::All`] every test and every file.
//! Every question is split `test` (the benchmark trains nothing); a query's id is `<dataset>-<index>`, its
//! index in the benchmark file; a document's id is the path the benchmark cites it by.
//!
//! The quirks real copies have are read, each said in the load's report: a file stored under another name
//! than the benchmark cites (`||` as `__`, `:` as `_`, as some file systems store them); a UTF-8 byte-order
//! mark, which Python counts as the text's first character (the text is kept without it, the spans moved
//! back one); a snippet whose `answer` is not the text at its span, or whose file is absent, drops its
//! question, counted by reason.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::corpus::{Corpus, Document, Evidence, Query};
use crate::error::DataError;

/// The benchmark's datasets, in the released script's order (each weighted equally).
pub const DATASETS: [&str; 4] = ["privacy_qa", "contractnli", "maud", "cuad"];

/// The released script's cap on a dataset's tests (`MAX_TESTS_PER_BENCHMARK`).
pub const MINI_PER_DATASET: usize = 194;

/// Which of the benchmark's questions are read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Selection {
    /// The released script's sample: at most 194 tests a dataset, over the documents they cite.
    #[default]
    Mini,
    /// Every test, and every file of the corpus.
    All,
}

#[derive(Deserialize)]
struct Benchmark {
    tests: Vec<Test>,
}

#[derive(Deserialize)]
struct Test {
    query: String,
    snippets: Vec<Snippet>,
}

#[derive(Deserialize)]
struct Snippet {
    file_path: String,
    span: [usize; 2],
    #[serde(default)]
    answer: Option<String>,
}

/// A corpus file as read: its text without a byte-order mark, and whether it had one.
struct File {
    text: String,
    bom: bool,
    /// The name it is stored under when that is not the one the benchmark cites.
    stored_as: Option<String>,
}

/// What the load kept and dropped, by dataset, for the report.
#[derive(Default)]
struct Tally {
    read: usize,
    chosen: usize,
    kept: usize,
    dropped: BTreeMap<&'static str, usize>,
}

/// The tests of `dataset` the selection reads, each with its index in the file.
fn select(tests: Vec<Test>, selection: Selection) -> Vec<(usize, Test)> {
    let mut indexed: Vec<(usize, Test)> = tests.into_iter().enumerate().collect();
    if selection == Selection::Mini && indexed.len() > MINI_PER_DATASET {
        // A test without a snippet has no key (the script would fail on it): it sorts last.
        let key = |t: &Test| t.snippets.first().map_or(f64::INFINITY, |s| super::python_random::first_random(&s.file_path));
        let mut keyed: Vec<(f64, (usize, Test))> = indexed.into_iter().map(|t| (key(&t.1), t)).collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
        indexed = keyed.into_iter().take(MINI_PER_DATASET).map(|(_, t)| t).collect();
    }
    indexed
}

/// The file the benchmark cites as `cited`, as stored under `corpus`: by its name, else by the name
/// some file systems store it under (`||` as `__`, `:` as `_`).
fn read_cited(corpus: &Path, cited: &str) -> Result<Option<File>, DataError> {
    let stored = cited.replace("||", "__").replace(':', "_");
    for (name, renamed) in [(cited, false), (stored.as_str(), true)] {
        let path = corpus.join(name);
        if path.is_file() {
            let text = crate::error::read_utf8(&path)?;
            let (text, bom) = match text.strip_prefix('\u{feff}') {
                Some(rest) => (rest.to_owned(), true),
                None => (text, false),
            };
            return Ok(Some(File { text, bom, stored_as: renamed.then(|| name.to_owned()) }));
        }
    }
    Ok(None)
}

/// Byte offsets of the character offsets `[start, end)` of `file` as Python reads it (its byte-order mark
/// counted), or `None` past its end.
fn byte_span(file: &File, [start, end]: [usize; 2]) -> Option<(usize, usize)> {
    let shift = usize::from(file.bom);
    let (start, end) = (start.saturating_sub(shift), end.saturating_sub(shift));
    let mut bytes = file.text.char_indices().map(|(b, _)| b).chain(std::iter::once(file.text.len()));
    let s = bytes.nth(start)?;
    let e = if end == start { s } else { bytes.nth(end - start - 1)? };
    (start <= end).then_some((s, e))
}

/// Reads the benchmark in `dir` (holding `corpus/` and `benchmarks/`): the corpus and the report's lines.
pub fn load_legalbench_rag(dir: &Path, selection: Selection) -> Result<(Corpus, Vec<String>), DataError> {
    let (corpus_dir, benchmarks) = (dir.join("corpus"), dir.join("benchmarks"));
    if !benchmarks.is_dir() || !corpus_dir.is_dir() {
        return Err(DataError::invalid(
            dir,
            "not LegalBench-RAG as published: it holds corpus/<dataset>/*.txt and benchmarks/<dataset>.json \
             (download it from the benchmark's page, unpacked as it comes)",
        ));
    }
    let mut files: BTreeMap<String, File> = BTreeMap::new();
    let (mut queries, mut report, mut present) = (Vec::new(), Vec::new(), Vec::new());
    for dataset in DATASETS {
        let path = benchmarks.join(format!("{dataset}.json"));
        if !path.is_file() {
            report.push(format!("{dataset}: {} is absent: left out", path.display()));
            continue;
        }
        present.push(dataset);
        let text = crate::error::read_utf8(&path)?;
        let benchmark: Benchmark = serde_json::from_str(&text).map_err(|e| crate::error::json_error(&path, 0, &e))?;
        let mut tally = Tally { read: benchmark.tests.len(), ..Tally::default() };
        let chosen = select(benchmark.tests, selection);
        tally.chosen = chosen.len();
        let (mut renamed, mut boms) = (BTreeSet::new(), BTreeSet::new());
        for (index, test) in chosen {
            let mut evidence = Vec::new();
            let mut drop: Option<&'static str> = (test.snippets.is_empty()).then_some("no snippet");
            for snippet in &test.snippets {
                if !files.contains_key(&snippet.file_path) {
                    match read_cited(&corpus_dir, &snippet.file_path)? {
                        Some(file) => {
                            files.insert(snippet.file_path.clone(), file);
                        }
                        None => {
                            drop = Some("a snippet's file is absent from corpus/");
                            break;
                        }
                    }
                }
                let file = &files[&snippet.file_path];
                if file.stored_as.is_some() {
                    renamed.insert(snippet.file_path.clone());
                }
                if file.bom {
                    boms.insert(snippet.file_path.clone());
                }
                let Some((start, end)) = byte_span(file, snippet.span) else {
                    drop = Some("a snippet's span lies past its file's end");
                    break;
                };
                let at = &file.text[start..end];
                if snippet.answer.as_deref().is_some_and(|a| a.strip_prefix('\u{feff}').unwrap_or(a) != at) {
                    drop = Some("a snippet's answer is not the text at its span");
                    break;
                }
                evidence.push(Evidence { doc_id: snippet.file_path.clone(), start, end });
            }
            if let Some(reason) = drop {
                *tally.dropped.entry(reason).or_default() += 1;
                continue;
            }
            tally.kept += 1;
            let mut doc_ids: Vec<String> = Vec::new();
            for e in &evidence {
                if !doc_ids.contains(&e.doc_id) {
                    doc_ids.push(e.doc_id.clone());
                }
            }
            queries.push(Query {
                id: format!("{dataset}-{index:04}"),
                text: test.query,
                doc_ids,
                evidence,
                answers: vec![],
                split: Some("test".into()),
            });
        }
        let how = match selection {
            Selection::Mini if tally.chosen < tally.read => format!("{} chosen as the released script chooses", tally.chosen),
            _ => "all of them read".into(),
        };
        let dropped: Vec<String> = tally.dropped.iter().map(|(why, n)| format!("{n} dropped: {why}")).collect();
        report.push(format!(
            "{dataset}: {} questions, {how}, {} kept{}",
            tally.read,
            tally.kept,
            if dropped.is_empty() { String::new() } else { format!(" ({})", dropped.join("; ")) }
        ));
        if !renamed.is_empty() {
            report.push(format!("{dataset}: {} cited files stored under another name (`||` as `__`, `:` as `_`), read from it", renamed.len()));
        }
        if !boms.is_empty() {
            report.push(format!(
                "{dataset}: {} cited files begin with a byte-order mark, counted by the spans as a character: kept without it",
                boms.len()
            ));
        }
    }
    if present.is_empty() {
        return Err(DataError::invalid(&benchmarks, format!("holds none of {}", DATASETS.map(|d| format!("{d}.json")).join(", "))));
    }
    if selection == Selection::All {
        for dataset in &present {
            for name in stored_files(&corpus_dir.join(dataset))? {
                let cited_as = format!("{dataset}/{name}");
                let already = files.contains_key(&cited_as) || files.values().any(|f| f.stored_as.as_deref() == Some(cited_as.as_str()));
                if !already && let Some(file) = read_cited(&corpus_dir, &cited_as)? {
                    files.insert(cited_as, file);
                }
            }
        }
    }
    let cited: BTreeSet<&str> = queries.iter().flat_map(|q| q.doc_ids.iter().map(String::as_str)).collect();
    let documents: Vec<Document> = files
        .into_iter()
        .filter(|(id, _)| selection == Selection::All || cited.contains(id.as_str()))
        .map(|(id, file)| {
            let title = Path::new(&id).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            Document { id, title, text: file.text, sections: vec![], split: Some("test".into()) }
        })
        .collect();
    let weights = if present.len() < DATASETS.len() { format!(", each of the {} present weighted equally", present.len()) } else { String::new() };
    report.push(format!("{} questions over {} documents{weights}", queries.len(), documents.len()));
    Ok((Corpus::new(documents, queries, dir)?, report))
}

/// The `.txt` files of a dataset's corpus folder, by name, sorted.
fn stored_files(dir: &Path) -> Result<Vec<String>, DataError> {
    let entries = std::fs::read_dir(dir).map_err(|source| DataError::Io { path: dir.to_owned(), source })?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p: &PathBuf| p.extension().is_some_and(|x| x == "txt"))
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/legalbench-rag")
    }

    /// The released script's sample, its quirks read, its drops said: the ids are the script's own choice
    /// on the fixture (script-choice.json, computed by CPython) less the two maud tests dropped, and every
    /// gold span is the snippet's answer.
    #[test]
    fn the_mini_is_the_released_scripts_choice_with_the_quirks_read() {
        let (corpus, report) = load_legalbench_rag(&fixture(), Selection::Mini).unwrap();
        let script: BTreeMap<String, Vec<String>> =
            serde_json::from_str(&std::fs::read_to_string(fixture().join("script-choice.json")).unwrap()).unwrap();
        let mut want: Vec<String> = ["privacy_qa", "contractnli", "maud"].iter().flat_map(|d| script[*d].clone()).collect();
        want.retain(|id| id != "maud-0001" && id != "maud-0002");
        let got: Vec<&str> = corpus.queries.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(got, want);
        assert_eq!(got.iter().filter(|id| id.starts_with("contractnli")).count(), MINI_PER_DATASET);
        let said = report.join("\n");
        for line in [
            "cuad: ",
            "contractnli: 200 questions, 194 chosen as the released script chooses, 194 kept",
            "maud: 4 questions, all of them read, 2 kept (1 dropped: a snippet's answer is not the text at its span; 1 dropped: a snippet's span lies past its file's end)",
            "maud: 1 cited files stored under another name",
            "maud: 1 cited files begin with a byte-order mark",
            "privacy_qa: 1 cited files stored under another name",
            "each of the 3 present weighted equally",
        ] {
            assert!(said.contains(line), "{line:?} not in:\n{said}");
        }
        // Gold spans are byte spans of the text without its mark, holding each snippet's answer.
        let benchmarks: BTreeMap<&str, serde_json::Value> = ["privacy_qa", "contractnli", "maud"]
            .into_iter()
            .map(|d| (d, serde_json::from_str(&std::fs::read_to_string(fixture().join(format!("benchmarks/{d}.json"))).unwrap()).unwrap()))
            .collect();
        for q in &corpus.queries {
            let (dataset, index) = q.id.rsplit_once('-').unwrap();
            let test = &benchmarks[dataset]["tests"][index.parse::<usize>().unwrap()];
            assert_eq!(q.text, test["query"].as_str().unwrap());
            for (e, snippet) in q.evidence.iter().zip(test["snippets"].as_array().unwrap()) {
                let doc = corpus.documents.iter().find(|d| d.id == e.doc_id).unwrap();
                assert_eq!(e.doc_id, snippet["file_path"].as_str().unwrap());
                assert_eq!(&doc.text[e.start..e.end], snippet["answer"].as_str().unwrap(), "{}", q.id);
            }
        }
        let maud = corpus.documents.iter().find(|d| d.id.starts_with("maud/")).unwrap();
        assert!(maud.text.starts_with("AGREEMENT") && maud.id.contains("||"), "{}", maud.id);
        // The corpus is the cited documents, pooled: here every file; every question and document `test`.
        assert_eq!(corpus.documents.len(), 5);
        assert!(corpus.documents.iter().all(|d| d.split.as_deref() == Some("test")));
        assert!(corpus.queries.iter().all(|q| q.split.as_deref() == Some("test")));
    }

    /// `All` reads every test (the dropped ones still dropped) and every stored file, a renamed one once.
    #[test]
    fn all_reads_every_test_and_every_file() {
        let (corpus, report) = load_legalbench_rag(&fixture(), Selection::All).unwrap();
        assert_eq!(corpus.queries.len(), 200 + 2 + 2);
        assert_eq!(corpus.documents.len(), 5);
        assert!(report.iter().any(|l| l.starts_with("contractnli: 200 questions, all of them read, 200 kept")), "{report:?}");
    }

    #[test]
    fn another_layout_is_refused_with_what_it_needs() {
        let dir = tempfile::tempdir().unwrap();
        let err = load_legalbench_rag(dir.path(), Selection::Mini).err().unwrap().to_string();
        assert!(err.contains("corpus/<dataset>/*.txt and benchmarks/<dataset>.json"), "{err}");
        std::fs::create_dir_all(dir.path().join("corpus")).unwrap();
        std::fs::create_dir_all(dir.path().join("benchmarks")).unwrap();
        let err = load_legalbench_rag(dir.path(), Selection::Mini).err().unwrap().to_string();
        assert!(err.contains("holds none of privacy_qa.json"), "{err}");
        std::fs::write(dir.path().join("benchmarks/maud.json"), "{\"tests\": [\n  {\"query\": 3}]}").unwrap();
        let err = load_legalbench_rag(dir.path(), Selection::Mini).err().unwrap().to_string();
        assert!(err.contains("maud.json:2:"), "{err}");
    }

    /// Character offsets past a byte-order mark, through characters of several bytes.
    #[test]
    fn character_spans_become_byte_spans() {
        let file = File { text: "a–b“c”d".into(), bom: true, stored_as: None };
        // Python's characters: [mark, a, –, b, “, c, ”, d]; [3, 6) is "b“c".
        let (s, e) = byte_span(&file, [3, 6]).unwrap();
        assert_eq!(&file.text[s..e], "b“c");
        assert_eq!(byte_span(&file, [8, 8]), Some((file.text.len(), file.text.len())));
        assert_eq!(byte_span(&file, [8, 9]), None);
    }
}

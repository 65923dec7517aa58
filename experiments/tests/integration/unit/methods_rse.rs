//! The unit tests of `arbor_experiments::methods::rse` (src/methods/rse.rs).

use std::path::Path;

use crate::unit::summaries_endpoint::{completion, serve};
use arbor_experiments::cache::Cache;
use arbor_experiments::experiment::Experiment;
use arbor_experiments::run::run_in;
use arbor_experiments::trained::Training;

/// AutoContext's header is part of what a chunk vector is computed from: a header written by another
/// summariser gets new vectors in the shared cache, and the generator is asked once per document.
#[test]
fn autocontext_headers_from_another_summariser_are_encoded_anew_and_generated_once() {
    let (url, seen) = serve(2, |_| (200, completion("A survey of the article, written by a generator.")));
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/squad-mini");
    let exp = |summariser: &str| {
        let text = format!(
            r#"Experiment(name: "autocontext", data: (format: Jsonl, path: "{}", split: Some("test")),
               methods: [Rse((preset: Precision, summariser: {summariser}))])"#,
            fixture.display()
        );
        Experiment::parse(&text, Path::new("x.ron")).unwrap()
    };
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::new(tmp.path());
    let vector_files = || {
        let folders = std::fs::read_dir(&cache.root).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().starts_with("chunks-"));
        folders.map(|f| std::fs::read_dir(f.path()).unwrap().count()).sum::<usize>()
    };
    let extractive = run_in(&exp("Extractive"), &tmp.path().join("a"), &cache, &Training::Never(None)).unwrap();
    assert_eq!(vector_files(), 2, "one file per test article");
    let generated = exp(&format!(r#"Endpoint((url: "{url}", model: "m"))"#));
    let first = run_in(&generated, &tmp.path().join("b"), &cache, &Training::Never(None)).unwrap();
    assert_eq!(vector_files(), 4, "the generated headers are encoded, not read back from the extractive ones");
    assert_ne!(first.methods[0].metrics, extractive.methods[0].metrics);
    assert!(first.methods[0].details.contains("written by m at http://127.0.0.1"), "{}", first.methods[0].details);
    assert_eq!(seen.iter().take(2).count(), 2, "one summary per test article");
    // The server is gone: a rerun finds every summary in the record and every vector in the cache.
    let again = run_in(&generated, &tmp.path().join("c"), &cache, &Training::Never(None)).unwrap();
    assert_eq!((again.methods[0].metrics.clone(), vector_files()), (first.methods[0].metrics.clone(), 4));
}

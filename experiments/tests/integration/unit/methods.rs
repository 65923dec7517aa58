//! The unit tests of `arbor_experiments::methods` (src/methods/mod.rs).

use arbor_eval::retrievers::tree_retrieval::TreeSearch;

use arbor_experiments::methods::*;

#[test]
fn a_method_is_named_as_an_experiment_file_writes_it_or_by_its_name() {
    let parse = |s: &str| s.parse::<Method>();
    assert_eq!(parse("flat").unwrap(), Method::Flat);
    assert_eq!(parse(" BM25 ").unwrap(), Method::Bm25);
    assert_eq!(parse("hybrid").unwrap(), Method::Hybrid(hybrid::HybridConfig::default()));
    assert_eq!(parse("sproutrag").unwrap(), Method::SproutRag(sproutrag::SproutRagConfig::default()));
    let Method::Hybrid(h) = parse("Hybrid((depth: Some(100)))").unwrap() else { panic!("not Hybrid") };
    assert_eq!(h.depth, Some(100));
    let Method::SproutRag(s) = parse("SproutRag((search: Beam((beam_width: 3))))").unwrap() else { panic!("not SproutRag") };
    assert!(matches!(s.search, TreeSearch::Beam(b) if b.beam_width == 3));
    // Settings are checked; a syntax error names its column and the names a bare word may take.
    assert!(format!("{:#}", parse("Hybrid((depth: Some(0)))").unwrap_err()).contains("depth at least 1"));
    let err = format!("{:#}", parse("Hybrid((dept: 1))").unwrap_err());
    assert!(err.contains("column") && err.contains("dept"), "{err}");
    let err = format!("{:#}", parse("nope").unwrap_err());
    assert!(err.contains("Flat, Bm25, Chunks"), "{err}");
}

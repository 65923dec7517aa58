//! The unit tests of `arbor_experiments::cache` (src/cache.rs).

use arbor_datasets::{Corpus, UnitConfig};
use arbor_datasets::{Document, Query, Span};
use arbor_eval::index::Chunks;
use arbor_experiments::artefact::Artefact;
use arbor_experiments::cache::*;
use std::path::Path;

/// Every kind's current version is recorded (else the artefact test fails); an unrecorded one keys
/// its artefacts by the sources, so code edited between a bump and its bless shares none; the backend is
/// in every key (issue 86: the flex and ndarray builds shared trained models).
#[test]
fn an_unrecorded_version_keys_its_artefacts_by_the_sources_and_every_key_names_the_backend() {
    const CPU: &str = "burn ndarray (CPU)";
    for kind in Artefact::ALL {
        let line = format!("{} {} d", kind.name(), kind.version());
        let recorded = versioned_under(kind, "k", CPU, &line, "s1");
        assert_eq!(recorded, versioned_under(kind, "k", CPU, &line, "s2"), "recorded: the sources do not count");
        assert_eq!(recorded, key(&(kind.name(), kind.version(), "k", CPU)));
        assert_ne!(recorded, versioned_under(kind, "k", "burn-flex (CPU)", &line, "s1"), "{kind:?}: another backend, another key");
        let earlier = format!("{} {} d", kind.name(), kind.version() - 1);
        let (a, b) = (versioned_under(kind, "k", CPU, &earlier, "s1"), versioned_under(kind, "k", CPU, &earlier, "s2"));
        assert!(a != b && a != recorded, "{kind:?}: an unrecorded version's artefacts are the sources'");
    }
}

#[test]
fn keys_change_with_any_setting_and_only_then() {
    let a = key(&("x", 1, [0.5f32]));
    assert_eq!(a, key(&("x", 1, [0.5f32])));
    assert_eq!(a.len(), 16);
    assert_ne!(a, key(&("x", 2, [0.5f32])));
    assert_ne!(a, key(&("x", 1, [0.25f32])));
}

#[test]
fn read_back_artefacts_count_at_their_recorded_build_time() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = Keys { encoder: "enc".into(), docs: vec!["a".into(), "b".into()] };
    let chunks = Chunks::from_docs([vec![Span { start: 0, end: 3 }], vec![Span { start: 0, end: 1 }, Span { start: 1, end: 2 }]]);
    let embed = |texts: &[&str], _: &mut dyn FnMut(usize)| -> Vec<Vec<f32>> {
        std::thread::sleep(std::time::Duration::from_millis(30));
        texts.iter().map(|t| vec![t.len() as f32]).collect()
    };
    let text = |c: usize| format!("chunk {c}");
    let first = Cache::new(tmp.path());
    let dir = first.dir(Artefact::Chunks, "k").unwrap();
    let built = first.chunk_embeddings(&dir, &embed, &chunks, &keys, &[0, 1], &text).unwrap();
    assert_eq!(first.reused(), BuildTime::default(), "nothing was read back");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2, "the folder holds the two vector files only");
    let records = tmp.path().join("build-times").join(dir.file_name().unwrap());
    let mut recorded: Vec<f64> = std::fs::read_dir(&records)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| std::fs::read_to_string(p).unwrap().trim().parse().unwrap())
        .collect();
    recorded.sort_by(f64::total_cmp);
    assert_eq!(recorded.len(), 2, "one record per document");
    // One batch of 3 chunks shared by chunk count: document b took twice document a's time.
    assert!((recorded[1] - 2.0 * recorded[0]).abs() < 1e-6 && recorded[0] >= 10.0, "{recorded:?}");

    let second = Cache::new(tmp.path());
    let read = second.chunk_embeddings(&dir, &|_, _| panic!("all cached"), &chunks, &keys, &[0, 1], &text).unwrap();
    assert_eq!(read, built);
    let reused = second.reused();
    assert_eq!(reused.unrecorded, 0);
    assert!((reused.ms - recorded.iter().sum::<f64>()).abs() < 1e-6);

    // A file from before build times were kept: the time is unknown, not zero.
    let ms_file = std::fs::read_dir(&records).unwrap().next().unwrap().unwrap().path();
    std::fs::remove_file(ms_file).unwrap();
    let third = Cache::new(tmp.path());
    third.chunk_embeddings(&dir, &|_, _| panic!("all cached"), &chunks, &keys, &[0, 1], &text).unwrap();
    assert_eq!(third.reused().unrecorded, 1);
}

#[test]
fn load_or_build_builds_once_then_reads_back_with_the_time_it_took() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("x.tree");
    let save = |v: &String, p: &Path| Ok(std::fs::write(p, v)?);
    let load = |p: &Path| Ok(std::fs::read_to_string(p)?);
    let cache = Cache::new(tmp.path());
    let built = cache
        .load_or_build(
            &path,
            load,
            || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                Ok("tree".to_string())
            },
            save,
        )
        .unwrap();
    assert_eq!((built.as_str(), cache.reused()), ("tree", BuildTime::default()));
    let again = Cache::new(tmp.path());
    let read = again.load_or_build(&path, load, || panic!("cached"), save).unwrap();
    assert_eq!(read, "tree");
    assert!(again.reused().ms >= 20.0 && again.reused().unrecorded == 0, "{:?}", again.reused());
}

#[test]
fn document_keys_follow_content_not_position() {
    let doc = |id: &str, text: &str| Document { id: id.into(), title: String::new(), text: text.into(), sections: vec![], split: None };
    let corpus = |docs| Corpus::new(docs, Vec::<Query>::new(), std::path::Path::new("t")).unwrap();
    let units = UnitConfig { max_sentences: 2, max_tokens: Some(254), context: None, ..Default::default() };
    let a = Keys::new(&corpus(vec![doc("a", "One. Two."), doc("b", "Three.")]), &units, "enc");
    let swapped = Keys::new(&corpus(vec![doc("b", "Three."), doc("a", "One. Two.")]), &units, "enc");
    assert_eq!((&a.docs[0], &a.docs[1]), (&swapped.docs[1], &swapped.docs[0]), "a document's key does not depend on its position");
    let edited = Keys::new(&corpus(vec![doc("a", "One. Two!"), doc("b", "Three.")]), &units, "enc");
    assert_ne!(a.docs[0], edited.docs[0]);
    assert_eq!(a.docs[1], edited.docs[1], "unedited documents keep their key");
    let other_encoder = Keys::new(&corpus(vec![doc("a", "One. Two."), doc("b", "Three.")]), &units, "enc2");
    assert_ne!(a.docs[0], other_encoder.docs[0]);
    let other_units = Keys::new(&corpus(vec![doc("a", "One. Two."), doc("b", "Three.")]), &UnitConfig { max_sentences: 1, ..units }, "enc");
    assert_ne!(a.docs[0], other_units.docs[0]);
}

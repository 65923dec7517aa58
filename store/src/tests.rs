//! The store's unit tests: documents round trip, ids never reused, one snapshot per read.
use super::*;

fn doc(key: &str, text: &str) -> DocumentRow {
    let units = vec![
        UnitRow { span: Span::new(0, 7), header: vec![], vector: vec![1.0, 0.0] },
        UnitRow { span: Span::new(8, text.len()), header: vec![Span::new(0, 3)], vector: vec![0.6, 0.8] },
    ];
    DocumentRow {
        key: key.into(),
        file: key.into(),
        digest: format!("d-{text}"),
        title: String::new(),
        text: text.into(),
        tokens: vec![0, 3, 8],
        units,
        merges: Some(vec![(0, 1)]),
        raptor: Some(vec![7, 0, 255]),
    }
}

#[test]
fn documents_round_trip_with_both_offsets_and_replace_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.arbor");
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.meta().unwrap(), None);
    let meta = Meta {
        arbor_version: "0.1.0".into(),
        encoder: "abc".into(),
        units: "{}".into(),
        dim: 2,
        trees: "sproutrag".into(),
        raptor: "raptor".into(),
        model: "{}".into(),
    };
    store.set_meta(&meta).unwrap();
    // "Café au lait" then "x": "é" is 2 bytes, so byte 8 is character 7.
    store.put(&doc("b.txt", "Café au lait"), "t0").unwrap();
    store.put(&doc("a.txt", "Plain.. second"), "t0").unwrap();
    drop(store);
    let mut store = Store::open_existing(&path).unwrap();
    assert_eq!(store.meta().unwrap(), Some(meta));
    let loaded = store.load().unwrap();
    assert_eq!(loaded.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(), ["a.txt", "b.txt"]);
    assert_eq!(loaded[1], doc("b.txt", "Café au lait"), "every field read back");
    let chars: (i64, i64) = store
        .conn
        .query_row("SELECT char_start, char_end FROM units u JOIN documents d ON u.doc = d.id WHERE d.key = 'b.txt' AND ord = 1", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(chars, (7, 12));
    // Putting a key again replaces it whole; removing takes its units with it.
    store.put(&doc("b.txt", "Changed text here"), "t1").unwrap();
    assert_eq!(store.list().unwrap()[1], Listed { key: "b.txt".into(), digest: "d-Changed text here".into(), indexed_at: "t1".into() });
    assert_eq!(store.unit_counts().unwrap(), vec![("a.txt".into(), 2), ("b.txt".into(), 2)]);
    // Trees added to a document stored without them.
    let mut bare = doc("c.txt", "Third doc here");
    (bare.merges, bare.raptor) = (None, None);
    store.put(&bare, "t2").unwrap();
    for s in Structure::ALL {
        assert_eq!(store.without(s).unwrap(), vec!["c.txt".to_owned()]);
    }
    store.put_tree("c.txt", &[(1, 0)]).unwrap();
    store.put_structure("c.txt", Structure::Raptor, &[1, 2]).unwrap();
    let c = store.load_one("c.txt").unwrap().unwrap();
    assert_eq!((c.merges, c.raptor), (Some(vec![(1, 0)]), Some(vec![1, 2])));
    assert!(store.without(Structure::Trees).unwrap().is_empty() && store.without(Structure::Raptor).unwrap().is_empty());
    assert!(store.put_tree("nope", &[]).is_err() && store.put_structure("nope", Structure::Raptor, &[]).is_err());
    assert!(store.remove("c.txt").unwrap());
    assert!(store.remove("a.txt").unwrap() && !store.remove("a.txt").unwrap());
    let count = |table: &str| -> i64 { store.conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0)).unwrap() };
    assert_eq!((count("units"), count("trees"), count("raptor")), (2, 1, 1));
    assert_eq!(store.integrity().unwrap(), "ok");
}

#[test]
fn a_missing_index_is_named() {
    let err = Store::open_existing(Path::new("/nonexistent/x.arbor")).err().unwrap().to_string();
    assert!(err.contains("/nonexistent/x.arbor") && err.contains("arbor index"), "{err}");
}

/// Issue 86: a unit's row id is never handed out again, even when the last document is deleted and
/// stored anew with as many units (SQLite's plain INTEGER PRIMARY KEY reused them); every change to the
/// units bumps the generation.
#[test]
fn unit_ids_are_never_reused_and_every_change_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("i.arbor")).unwrap();
    assert_eq!(store.generation().unwrap(), 0);
    store.put(&doc("a.txt", "First one here"), "t0").unwrap();
    store.put(&doc("b.txt", "Second one here"), "t0").unwrap();
    let before = store.unit_ids_sorted().unwrap();
    store.put(&doc("b.txt", "Second one, again"), "t1").unwrap();
    let after = store.unit_ids_sorted().unwrap();
    assert_eq!(after.len(), before.len());
    assert!(after[2..].iter().all(|id| id > before.last().unwrap()), "{before:?} then {after:?}");
    store.remove("b.txt").unwrap();
    store.put(&doc("b.txt", "Second one, third time"), "t2").unwrap();
    assert!(store.unit_ids_sorted().unwrap()[2..].iter().all(|id| id > after.last().unwrap()));
    assert_eq!(store.generation().unwrap(), 5);
}

/// An index written before ids were never reused gets AUTOINCREMENT on opening, its rows and ids kept,
/// and a new generation (so a graph beside it is rebuilt).
#[test]
fn an_old_index_is_brought_up_to_date_on_opening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.arbor");
    let mut store = Store::open(&path).unwrap();
    store.put(&doc("a.txt", "First one here"), "t0").unwrap();
    let ids = store.unit_ids_sorted().unwrap();
    let loaded = store.load().unwrap();
    // The table as indexes before stop 89 made it.
    store
        .conn
        .execute_batch(
            "CREATE TABLE old_units (id INTEGER PRIMARY KEY, doc INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE, ord INTEGER NOT NULL,
             byte_start INTEGER NOT NULL, byte_end INTEGER NOT NULL, char_start INTEGER NOT NULL, char_end INTEGER NOT NULL,
             header TEXT, vector BLOB NOT NULL, UNIQUE (doc, ord));
             INSERT INTO old_units SELECT * FROM units; DROP TABLE units; ALTER TABLE old_units RENAME TO units;
             DELETE FROM meta WHERE key = 'generation';",
        )
        .unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    let sql: String = store.conn.query_row("SELECT sql FROM sqlite_master WHERE name = 'units'", [], |r| r.get(0)).unwrap();
    assert!(sql.contains("AUTOINCREMENT"), "{sql}");
    assert_eq!((store.unit_ids_sorted().unwrap(), store.load().unwrap()), (ids, loaded));
    assert_eq!(store.generation().unwrap(), 1);
    assert_eq!(store.integrity().unwrap(), "ok");
}

/// Issue 86: reads inside one snapshot see the index as of the first of them, while another process
/// commits a document in between; after it, the next read sees that document.
#[test]
fn a_snapshot_reads_one_state_of_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.arbor");
    let mut writer = Store::open(&path).unwrap();
    writer.put(&doc("a.txt", "First one here"), "t0").unwrap();
    let reader = Store::open(&path).unwrap();
    let (ids, generation, docs) = reader
        .snapshot(|s| {
            let ids = s.unit_ids()?;
            writer.put(&doc("b.txt", "Committed between two reads"), "t1")?;
            Ok((ids, s.generation()?, s.load()?))
        })
        .unwrap();
    assert_eq!((ids.len(), generation, docs.len()), (2, 1, 1));
    assert_eq!((reader.unit_ids().unwrap().len(), reader.generation().unwrap()), (4, 2));
}

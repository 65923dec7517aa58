//! arbor-store: the index `arbor index` builds over one's own documents, in one SQLite file.
//!
//! SQLite because the index must survive a kill mid-write and be read by anything: each document is
//! written in one transaction (write-ahead log, synchronous commits), so a crash loses at most the document
//! in flight; the file opens with any SQLite client; it needs no server, and the library is compiled in.
//!
//! ```text
//! meta(key, value)                      arbor's version, the encoder's fingerprint, the unit rule, dim, trees,
//!                                       the trained model embedding units and queries
//! documents(id, key, file, digest, title, text, tokens, indexed_at)
//!     key: path relative to the indexed folder (`path#id` for a JSONL line); digest: of title and text;
//!     tokens: the encoder tokenizer's token starts (u32 LE), for token budgets at query time
//! units(id, doc, ord, byte_start, byte_end, char_start, char_end, header, vector)
//!     the leaf units in text order; offsets in UTF-8 bytes and in Unicode code points; header: the
//!     contextual header's byte spans (JSON, or NULL); vector: the encoder's unit vector (f32 LE)
//! trees(doc, merges)                    SproutRAG's tree over the document's units, when the index keeps
//!     trees: `merges[i] = (a, b)` (u32 LE pairs), node n + i the parent of nodes a and b
//! raptor(doc, tree)                     RAPTOR's tree of the document (its own leaf chunks, summaries and
//!     their vectors), when the index keeps them: opaque bytes here (arbor-eval's `raptor_io` format)
//! ```
//!
//! Invariants: a document's row and all its units are written and removed together; a unit's offsets are
//! on character boundaries of its document's text; every vector has `meta.dim` components; a unit's id is
//! never handed out again (AUTOINCREMENT) and `meta.generation` counts every change to the units, so the
//! approximate graph beside the index (keyed by unit id, recording the generation) can tell it is stale;
//! [`Store::snapshot`] reads several queries as one state of the index.

use std::path::Path;

use anyhow::Context;
use arbor_datasets::Span;
use arbor_datasets::span::CharOffsets;
use rusqlite::{Connection, OptionalExtension, params};

pub mod approximate;

/// The units table's columns. `id` is AUTOINCREMENT: a unit's row id is never handed out again, not even
/// after the last document is deleted and stored anew, so the approximate graph (keyed by unit id) can
/// tell a re-indexed document's new units from the ones it holds.
const UNITS: &str = "(
    id INTEGER PRIMARY KEY AUTOINCREMENT, doc INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE, ord INTEGER NOT NULL,
    byte_start INTEGER NOT NULL, byte_end INTEGER NOT NULL, char_start INTEGER NOT NULL, char_end INTEGER NOT NULL,
    header TEXT, vector BLOB NOT NULL, UNIQUE (doc, ord))";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, file TEXT NOT NULL, digest TEXT NOT NULL,
    title TEXT NOT NULL, text TEXT NOT NULL, tokens BLOB NOT NULL, indexed_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trees (doc INTEGER PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE, merges BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS raptor (doc INTEGER PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE, tree BLOB NOT NULL);
";

/// Counts every change to the units (`meta.generation`, bumped in the transaction of each `put` and
/// `remove`): the approximate graph records the generation it was built at.
const BUMP_GENERATION: &str =
    "INSERT INTO meta (key, value) VALUES ('generation', '1') ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1";

/// What every document of an index was built with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// The arbor version that created the index.
    pub arbor_version: String,
    /// The encoder's fingerprint (a digest of its weights and tokenizer).
    pub encoder: String,
    /// The unit rule, as JSON.
    pub units: String,
    pub dim: usize,
    /// How the documents' trees are built (empty: the index keeps no trees).
    pub trees: String,
    /// How the documents' RAPTOR trees are built (empty: the index keeps none).
    pub raptor: String,
    /// The trained model units and queries are embedded with, as JSON (empty: the encoder itself).
    pub model: String,
}

/// A document as the index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub key: String,
    pub digest: String,
    pub indexed_at: String,
}

/// A leaf unit, as stored and as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitRow {
    pub span: Span,
    pub header: Vec<Span>,
    pub vector: Vec<f32>,
}

/// A document with its units and tree, as stored and as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentRow {
    pub key: String,
    pub file: String,
    pub digest: String,
    pub title: String,
    pub text: String,
    pub tokens: Vec<u32>,
    pub units: Vec<UnitRow>,
    /// The tree's merges, when the index keeps trees.
    pub merges: Option<Vec<(u32, u32)>>,
    /// The RAPTOR tree's bytes, when the index keeps them.
    pub raptor: Option<Vec<u8>>,
}

impl DocumentRow {
    /// A document `key` of one-character units with these vectors (its text `x` repeated), keeping no
    /// structure: a stand-in where only the units and their vectors matter (tests).
    pub fn of_vectors(key: &str, vectors: Vec<Vec<f32>>) -> Self {
        let units: Vec<UnitRow> =
            vectors.into_iter().enumerate().map(|(u, vector)| UnitRow { span: Span::new(u, u + 1), header: vec![], vector }).collect();
        let text = "x".repeat(units.len());
        DocumentRow {
            key: key.into(),
            file: key.into(),
            digest: key.into(),
            title: String::new(),
            text,
            tokens: vec![0],
            units,
            merges: None,
            raptor: None,
        }
    }
}

/// A per-document structure an index may keep beside the units, each in a table of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Structure {
    /// SproutRAG's tree: `trees(doc, merges)`.
    Trees,
    /// RAPTOR's tree: `raptor(doc, tree)`.
    Raptor,
}

impl Structure {
    fn table(self) -> &'static str {
        match self {
            Structure::Trees => "trees",
            Structure::Raptor => "raptor",
        }
    }

    fn column(self) -> &'static str {
        match self {
            Structure::Trees => "merges",
            Structure::Raptor => "tree",
        }
    }

    /// The document row's bytes of this structure, if it has them.
    fn bytes(self, doc: &DocumentRow) -> Option<Vec<u8>> {
        match self {
            Structure::Trees => doc.merges.as_ref().map(|m| merge_bytes(m)),
            Structure::Raptor => doc.raptor.clone(),
        }
    }

    /// Sets the document row's structure from stored bytes.
    fn set(self, doc: &mut DocumentRow, bytes: Vec<u8>) {
        match self {
            Structure::Trees => doc.merges = Some(from_le::<u32>(&bytes).chunks_exact(2).map(|p| (p[0], p[1])).collect()),
            Structure::Raptor => doc.raptor = Some(bytes),
        }
    }

    const ALL: [Structure; 2] = [Structure::Trees, Structure::Raptor];
}

fn merge_bytes(merges: &[(u32, u32)]) -> Vec<u8> {
    le_bytes(&merges.iter().flat_map(|&(a, b)| [a, b]).collect::<Vec<u32>>())
}

pub struct Store {
    conn: Connection,
}

impl Store {
    /// Opens (creating if need be) the index at `path`.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let conn = Connection::open(path).with_context(|| format!("cannot open the index {}", path.display()))?;
        // A reader waits out a writer's commit instead of failing.
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            .and_then(|_| conn.execute_batch(SCHEMA))
            .and_then(|_| conn.execute_batch(&format!("CREATE TABLE IF NOT EXISTS units {UNITS};")))
            .with_context(|| format!("{} is not an arbor index (an SQLite file)", path.display()))?;
        never_reuse_unit_ids(&conn).with_context(|| format!("cannot bring the units table of {} up to date", path.display()))?;
        Ok(Store { conn })
    }

    /// Runs `read` on one snapshot of the index: every query it makes sees the store as of its first, even
    /// if `arbor index` commits meanwhile (SQLite's read transaction under the write-ahead log).
    pub fn snapshot<T>(&self, read: impl FnOnce(&Store) -> anyhow::Result<T>) -> anyhow::Result<T> {
        let tx = self.conn.unchecked_transaction()?;
        let out = read(self)?;
        tx.commit()?;
        Ok(out)
    }

    /// How many times the units have changed (0 for an index never written).
    pub fn generation(&self) -> anyhow::Result<u64> {
        let value: Option<String> = self.conn.query_row("SELECT value FROM meta WHERE key = 'generation'", [], |r| r.get(0)).optional()?;
        value.map_or(Ok(0), |v| v.parse().context("meta.generation is not a number"))
    }

    /// Opens an existing index for reading; a missing file is an error naming it.
    pub fn open_existing(path: &Path) -> anyhow::Result<Self> {
        anyhow::ensure!(path.is_file(), "no index at {}: build one with `arbor index DIR --into {}`", path.display(), path.display());
        Self::open(path)
    }

    pub fn meta(&self) -> anyhow::Result<Option<Meta>> {
        let get = |k: &str| -> anyhow::Result<Option<String>> {
            Ok(self.conn.query_row("SELECT value FROM meta WHERE key = ?1", [k], |r| r.get(0)).optional()?)
        };
        let (Some(arbor_version), Some(encoder), Some(units), Some(dim)) = (get("arbor_version")?, get("encoder")?, get("units")?, get("dim")?)
        else {
            return Ok(None);
        };
        let (trees, raptor, model) = (get("trees")?.unwrap_or_default(), get("raptor")?.unwrap_or_default(), get("model")?.unwrap_or_default());
        Ok(Some(Meta { arbor_version, encoder, units, dim: dim.parse().context("meta.dim is not a number")?, trees, raptor, model }))
    }

    pub fn set_meta(&mut self, meta: &Meta) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        let dim = meta.dim.to_string();
        for (k, v) in [
            ("arbor_version", meta.arbor_version.as_str()),
            ("encoder", &meta.encoder),
            ("units", &meta.units),
            ("dim", &dim),
            ("trees", &meta.trees),
            ("raptor", &meta.raptor),
            ("model", &meta.model),
        ] {
            tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)", params![k, v])?;
        }
        Ok(tx.commit()?)
    }

    /// Every stored document's key, digest and time of indexing, by key.
    pub fn list(&self) -> anyhow::Result<Vec<Listed>> {
        let mut stmt = self.conn.prepare("SELECT key, digest, indexed_at FROM documents ORDER BY key")?;
        let rows = stmt.query_map([], |r| Ok(Listed { key: r.get(0)?, digest: r.get(1)?, indexed_at: r.get(2)? }))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Stores `doc` in one transaction, replacing the document of the same key; `at` is the time recorded.
    pub fn put(&mut self, doc: &DocumentRow, at: &str) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute("DELETE FROM documents WHERE key = ?1", [&doc.key])?;
        tx.execute(BUMP_GENERATION, [])?;
        tx.execute(
            "INSERT INTO documents (key, file, digest, title, text, tokens, indexed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![doc.key, doc.file, doc.digest, doc.title, doc.text, le_bytes(&doc.tokens), at],
        )?;
        let id = tx.last_insert_rowid();
        {
            let mut insert = tx.prepare(
                "INSERT INTO units (doc, ord, byte_start, byte_end, char_start, char_end, header, vector) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            let chars = CharOffsets::new(&doc.text);
            for (ord, u) in doc.units.iter().enumerate() {
                let header = (!u.header.is_empty()).then(|| serde_json::to_string(&u.header)).transpose()?;
                insert.execute(params![
                    id,
                    ord as i64,
                    u.span.start as i64,
                    u.span.end as i64,
                    chars.at(u.span.start) as i64,
                    chars.at(u.span.end) as i64,
                    header,
                    le_bytes(&u.vector)
                ])?;
            }
        }
        for s in Structure::ALL {
            if let Some(bytes) = s.bytes(doc) {
                tx.execute(&format!("INSERT INTO {} (doc, {}) VALUES (?1, ?2)", s.table(), s.column()), params![id, bytes])?;
            }
        }
        Ok(tx.commit()?)
    }

    /// Removes the document `key` and its units; whether it was there.
    pub fn remove(&mut self, key: &str) -> anyhow::Result<bool> {
        let tx = self.conn.transaction()?;
        let removed = tx.execute("DELETE FROM documents WHERE key = ?1", [key])? > 0;
        tx.execute(BUMP_GENERATION, [])?;
        tx.commit()?;
        Ok(removed)
    }

    /// Every stored document with its units, vectors and tree, by key.
    pub fn load(&self) -> anyhow::Result<Vec<DocumentRow>> {
        self.load_where(None)
    }

    /// The stored document `key`, if there is one.
    pub fn load_one(&self, key: &str) -> anyhow::Result<Option<DocumentRow>> {
        Ok(self.load_where(Some(key))?.pop())
    }

    /// The keys of the documents stored without structure `s`.
    pub fn without(&self, s: Structure) -> anyhow::Result<Vec<String>> {
        let mut stmt = self.conn.prepare(&format!("SELECT key FROM documents WHERE id NOT IN (SELECT doc FROM {}) ORDER BY key", s.table()))?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Stores the SproutRAG tree of the stored document `key` (replacing any), in one statement.
    pub fn put_tree(&mut self, key: &str, merges: &[(u32, u32)]) -> anyhow::Result<()> {
        self.put_structure(key, Structure::Trees, &merge_bytes(merges))
    }

    /// Stores structure `s` of the stored document `key` as `bytes` (replacing any), in one statement.
    pub fn put_structure(&mut self, key: &str, s: Structure, bytes: &[u8]) -> anyhow::Result<()> {
        let sql = format!("INSERT OR REPLACE INTO {} (doc, {}) SELECT id, ?2 FROM documents WHERE key = ?1", s.table(), s.column());
        let n = self.conn.execute(&sql, params![key, bytes])?;
        anyhow::ensure!(n == 1, "the index holds no document {key:?}");
        Ok(())
    }

    /// The documents (all, or the one of key `only`) with their units, by key.
    fn load_where(&self, only: Option<&str>) -> anyhow::Result<Vec<DocumentRow>> {
        let filter = |sql: &str| sql.replace("{only}", if only.is_some() { "WHERE key = ?1" } else { "WHERE ?1 IS NULL" });
        let mut docs: Vec<(i64, DocumentRow)> = {
            let mut stmt = self.conn.prepare(&filter("SELECT id, key, file, digest, title, text, tokens FROM documents {only} ORDER BY key"))?;
            let rows = stmt.query_map([only], |r| {
                let tokens: Vec<u8> = r.get(6)?;
                let doc = DocumentRow {
                    key: r.get(1)?,
                    file: r.get(2)?,
                    digest: r.get(3)?,
                    title: r.get(4)?,
                    text: r.get(5)?,
                    tokens: from_le(&tokens),
                    units: Vec::new(),
                    merges: None,
                    raptor: None,
                };
                Ok((r.get(0)?, doc))
            })?;
            rows.collect::<Result<_, _>>()?
        };
        let at: std::collections::HashMap<i64, usize> = docs.iter().enumerate().map(|(i, (id, _))| (*id, i)).collect();
        let mut stmt = self.conn.prepare(&filter(
            "SELECT doc, byte_start, byte_end, header, vector FROM units WHERE doc IN (SELECT id FROM documents {only}) ORDER BY doc, ord",
        ))?;
        let mut rows = stmt.query([only])?;
        while let Some(r) = rows.next()? {
            let doc: i64 = r.get(0)?;
            let span = Span::new(r.get::<_, i64>(1)? as usize, r.get::<_, i64>(2)? as usize);
            let header: Option<String> = r.get(3)?;
            let header = header.map(|h| serde_json::from_str(&h)).transpose().context("a unit's header is damaged")?.unwrap_or_default();
            let vector: Vec<u8> = r.get(4)?;
            let unit = UnitRow { span, header, vector: from_le(&vector) };
            docs[*at.get(&doc).context("a unit of no document")?].1.units.push(unit);
        }
        for s in Structure::ALL {
            let sql = format!("SELECT doc, {} FROM {} WHERE doc IN (SELECT id FROM documents {{only}})", s.column(), s.table());
            let mut stmt = self.conn.prepare(&filter(&sql))?;
            let mut rows = stmt.query([only])?;
            while let Some(r) = rows.next()? {
                let doc: i64 = r.get(0)?;
                s.set(&mut docs[*at.get(&doc).with_context(|| format!("a row of {} of no document", s.table()))?].1, r.get(1)?);
            }
        }
        Ok(docs.into_iter().map(|(_, d)| d).collect())
    }

    /// Every unit's row id, in the order [`Store::load`] returns the units (documents by key, units in text
    /// order).
    pub fn unit_ids(&self) -> anyhow::Result<Vec<i64>> {
        self.ids("SELECT u.id FROM units u JOIN documents d ON u.doc = d.id ORDER BY d.key, u.ord")
    }

    /// Every unit's row id, ascending.
    pub fn unit_ids_sorted(&self) -> anyhow::Result<Vec<i64>> {
        self.ids("SELECT id FROM units ORDER BY id")
    }

    fn ids(&self, sql: &str) -> anyhow::Result<Vec<i64>> {
        let mut stmt = self.conn.prepare(sql)?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// At most `limit` units' row ids and vectors (f32 LE bytes), from row id `from` up, ascending.
    pub fn unit_vectors_from(&self, from: i64, limit: usize) -> anyhow::Result<Vec<(i64, Vec<u8>)>> {
        let mut stmt = self.conn.prepare("SELECT id, vector FROM units WHERE id >= ?1 ORDER BY id LIMIT ?2")?;
        let rows = stmt.query_map(params![from, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// SQLite's own integrity check: `ok`, or what is wrong.
    pub fn integrity(&self) -> anyhow::Result<String> {
        Ok(self.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }

    /// The number of stored units of every document, by key.
    pub fn unit_counts(&self) -> anyhow::Result<Vec<(String, usize)>> {
        let mut stmt =
            self.conn.prepare("SELECT d.key, COUNT(u.id) FROM documents d LEFT JOIN units u ON u.doc = d.id GROUP BY d.id ORDER BY d.key")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as usize)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

/// An index made before unit ids were never reused (`units.id` without AUTOINCREMENT: SQLite hands the
/// deleted last row's id to the next insert) gets its units table again with AUTOINCREMENT, rows and ids
/// kept, in one transaction. Its generation is bumped, so a graph built beside it before is rebuilt.
fn never_reuse_unit_ids(conn: &Connection) -> anyhow::Result<()> {
    let sql: String = conn.query_row("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'units'", [], |r| r.get(0))?;
    if sql.contains("AUTOINCREMENT") {
        return Ok(());
    }
    let tx = conn.unchecked_transaction()?;
    tx.execute_batch(&format!(
        "CREATE TABLE units_autoincrement {UNITS}; INSERT INTO units_autoincrement SELECT * FROM units; DROP TABLE units;
         ALTER TABLE units_autoincrement RENAME TO units; {BUMP_GENERATION};"
    ))?;
    Ok(tx.commit()?)
}

/// Values as little-endian bytes.
pub fn le_bytes<T: Copy + ToLe>(values: &[T]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le()).collect()
}

/// Little-endian bytes back to values (a trailing partial value is dropped).
pub fn from_le<T: ToLe>(bytes: &[u8]) -> Vec<T> {
    bytes.chunks_exact(4).map(|c| T::from_le([c[0], c[1], c[2], c[3]])).collect()
}

/// 4-byte values stored little-endian.
pub trait ToLe: Sized {
    fn to_le(self) -> [u8; 4];
    fn from_le(bytes: [u8; 4]) -> Self;
}

impl ToLe for f32 {
    fn to_le(self) -> [u8; 4] {
        self.to_le_bytes()
    }
    fn from_le(bytes: [u8; 4]) -> Self {
        f32::from_le_bytes(bytes)
    }
}

impl ToLe for u32 {
    fn to_le(self) -> [u8; 4] {
        self.to_le_bytes()
    }
    fn from_le(bytes: [u8; 4]) -> Self {
        u32::from_le_bytes(bytes)
    }
}

#[cfg(test)]
mod tests;

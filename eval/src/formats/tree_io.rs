//! Trees on disk: a small versioned binary format (little-endian), read back bit-identically.
//!
//! ```text
//! b"ARBORTRE"  u32 version (= 1)  u64 leaves n  u64 dim
//! n x (u64 doc, u64 start, u64 end)              the leaves' spans
//! (n - 1) x (u32, u32)                           merges
//! (2n - 1) x dim x f32                           node embeddings
//! ```
//!
//! The file is written through a temporary file, fsynced and renamed, with a checksum trailer checked on
//! read ([`arbor_files`]).

use std::path::Path;

use arbor_datasets::{DocSpan, Span};

use crate::structures::tree::Tree;
use arbor_files::{read_checked, write_checked};

const MAGIC: &[u8; 8] = b"ARBORTRE";
pub const VERSION: u32 = 1;

pub fn encode(tree: &Tree) -> Vec<u8> {
    let n = tree.num_leaves();
    let mut out = Vec::with_capacity(28 + n * 32 + tree.embeddings.len() * 4);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(n as u64).to_le_bytes());
    out.extend_from_slice(&(tree.dim as u64).to_le_bytes());
    for l in &tree.leaves {
        for v in [l.doc, l.span.start, l.span.end] {
            out.extend_from_slice(&(v as u64).to_le_bytes());
        }
    }
    for &(a, b) in &tree.merges {
        out.extend_from_slice(&a.to_le_bytes());
        out.extend_from_slice(&b.to_le_bytes());
    }
    for &e in &tree.embeddings {
        out.extend_from_slice(&e.to_le_bytes());
    }
    out
}

pub fn decode(bytes: &[u8]) -> Result<Tree, String> {
    let mut r = Reader { bytes, at: 0 };
    r.header(MAGIC, VERSION, "tree")?;
    let n = r.u64()? as usize;
    let dim = r.u64()? as usize;
    if n == 0 {
        return Err("a tree has at least one leaf".into());
    }
    let leaves = (0..n)
        .map(|_| Ok(DocSpan { doc: r.u64()? as usize, span: Span::new(r.u64()? as usize, r.u64()? as usize) }))
        .collect::<Result<Vec<_>, String>>()?;
    let merges = (0..n - 1).map(|_| Ok((r.u32()?, r.u32()?))).collect::<Result<Vec<_>, String>>()?;
    for (i, &(a, b)) in merges.iter().enumerate() {
        if a as usize >= n + i || b as usize >= n + i || a == b {
            return Err(format!("merge {i} names nodes ({a}, {b}) that do not exist yet"));
        }
    }
    let embeddings = (0..(2 * n - 1) * dim).map(|_| r.f32()).collect::<Result<Vec<_>, String>>()?;
    if r.at != bytes.len() {
        return Err(format!("{} trailing bytes", bytes.len() - r.at));
    }
    Ok(Tree::from_parts(leaves, merges, embeddings, dim))
}

pub fn save(tree: &Tree, path: &Path) -> std::io::Result<()> {
    write_checked(path, &encode(tree))
}

pub fn load(path: &Path) -> Result<Tree, String> {
    let bytes = read_checked(path).map_err(|e| format!("{} {e}", path.display()))?;
    decode(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads little-endian fields off a byte slice, failing on truncation (shared by the binary formats).
pub(crate) struct Reader<'a> {
    pub bytes: &'a [u8],
    pub at: usize,
}

impl Reader<'_> {
    /// Checks a file's magic bytes and format version; `what` names the format in the error.
    pub fn header(&mut self, magic: &[u8; 8], version: u32, what: &str) -> Result<(), String> {
        if self.take(8)? != magic {
            return Err(format!("not an arbor {what} file"));
        }
        let found = self.u32()?;
        if found != version {
            return Err(format!("{what} format version {found}, this arbor reads version {version}"));
        }
        Ok(())
    }
    pub fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or("the file is truncated")?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    pub fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    pub fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    pub fn f32(&mut self) -> Result<f32, String> {
        Ok(f32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structures::tree::Similarity;

    fn tree() -> Tree {
        let n = 6;
        let leaves = (0..n).map(|i| DocSpan { doc: 3, span: Span::new(7 * i, 7 * i + 5) }).collect();
        let m: Vec<f32> = (0..n * n).map(|x| ((x * 37 % 11) as f32).sin()).collect();
        let emb: Vec<f32> = (0..n * 3).map(|x| (x as f32 * 0.37).cos() / 3.0).collect();
        Tree::build(leaves, &emb, 3, &Similarity::Dense { n, values: &m })
    }

    #[test]
    fn saved_trees_reload_bit_identically() {
        let t = tree();
        let dir = std::env::temp_dir().join(format!("arbor-tree-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("doc.tree");
        save(&t, &path).unwrap();
        let back = load(&path).unwrap();
        assert_eq!(back, t);
        let bits = |t: &Tree| t.embeddings.iter().map(|e| e.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&t));
        assert_eq!(arbor_files::with_checksum(&encode(&back)), std::fs::read(&path).unwrap());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn damaged_files_are_rejected_with_a_reason() {
        let bytes = encode(&tree());
        assert!(decode(&bytes[..bytes.len() - 1]).unwrap_err().contains("truncated"));
        let mut wrong = bytes.clone();
        wrong[8] = 9;
        assert!(decode(&wrong).unwrap_err().contains("version 9"));
        assert!(decode(b"PICKLE!!").unwrap_err().contains("not an arbor tree"));
        let mut extra = bytes;
        extra.push(0);
        assert!(decode(&extra).unwrap_err().contains("trailing"));
    }
}

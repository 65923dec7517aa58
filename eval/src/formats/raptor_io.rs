//! RAPTOR trees on disk ([`crate::retrievers::raptor::RaptorTree`]), a small versioned binary format (little-endian),
//! read back bit-identically:
//!
//! ```text
//! b"ARBORRAP"  u32 version (= 1)  u64 nodes  u64 dim  u64 layers
//! per node:  u64 layer  u64 tokens  u64 spans  spans x (u64 start, u64 end)  u64 children  children x u64
//! nodes x dim x f32                              node embeddings
//! ```
//!
//! Written through a temporary file, fsynced and renamed, with a checksum trailer checked on read
//! ([`arbor_files`]).

use std::path::Path;

use arbor_datasets::Span;

use crate::formats::tree_io::Reader;
use crate::retrievers::raptor::{Node, RaptorTree};
use arbor_files::{read_checked, write_checked};

const MAGIC: &[u8; 8] = b"ARBORRAP";
pub const VERSION: u32 = 1;

pub fn encode(tree: &RaptorTree) -> Vec<u8> {
    let dim = tree.embeddings.first().map_or(0, Vec::len);
    let mut out = Vec::new();
    let put = |v: usize, out: &mut Vec<u8>| out.extend_from_slice(&(v as u64).to_le_bytes());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    for v in [tree.nodes.len(), dim, tree.layers] {
        put(v, &mut out);
    }
    for node in &tree.nodes {
        for v in [node.layer, node.tokens, node.spans.len()] {
            put(v, &mut out);
        }
        for s in &node.spans {
            put(s.start, &mut out);
            put(s.end, &mut out);
        }
        put(node.children.len(), &mut out);
        for &c in &node.children {
            put(c, &mut out);
        }
    }
    for e in tree.embeddings.iter().flatten() {
        out.extend_from_slice(&e.to_le_bytes());
    }
    out
}

pub fn decode(bytes: &[u8]) -> Result<RaptorTree, String> {
    let mut r = Reader { bytes, at: 0 };
    r.header(MAGIC, VERSION, "RAPTOR tree")?;
    let int = |r: &mut Reader| r.u64().map(|v| v as usize);
    let (n, dim, layers) = (int(&mut r)?, int(&mut r)?, int(&mut r)?);
    // Every node takes at least 32 bytes: a bound on n before anything is allocated from it.
    if n > bytes.len() / 32 {
        return Err(format!("{n} nodes cannot fit in {} bytes", bytes.len()));
    }
    let mut nodes = Vec::with_capacity(n);
    for i in 0..n {
        let (layer, tokens, count) = (int(&mut r)?, int(&mut r)?, int(&mut r)?);
        let spans = (0..count.min(bytes.len())).map(|_| Ok(Span::new(int(&mut r)?, int(&mut r)?))).collect::<Result<Vec<_>, String>>()?;
        let count = int(&mut r)?;
        let children = (0..count.min(bytes.len())).map(|_| int(&mut r)).collect::<Result<Vec<_>, String>>()?;
        if let Some(&c) = children.iter().find(|&&c| c >= n || c == i) {
            return Err(format!("node {i} names child {c}, which is not another node of the tree"));
        }
        nodes.push(Node { spans, children, layer, tokens });
    }
    let embeddings = (0..n).map(|_| (0..dim).map(|_| r.f32()).collect()).collect::<Result<Vec<Vec<f32>>, String>>()?;
    if r.at != bytes.len() {
        return Err(format!("{} trailing bytes", bytes.len() - r.at));
    }
    Ok(RaptorTree { nodes, embeddings, layers })
}

pub fn save(tree: &RaptorTree, path: &Path) -> std::io::Result<()> {
    write_checked(path, &encode(tree))
}

pub fn load(path: &Path) -> Result<RaptorTree, String> {
    let bytes = read_checked(path).map_err(|e| format!("{} {e}", path.display()))?;
    decode(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> RaptorTree {
        let leaf = |i: usize| Node { spans: vec![Span::new(10 * i, 10 * i + 7)], children: vec![], layer: 0, tokens: 3 + i };
        let root = Node { spans: vec![Span::new(0, 7), Span::new(20, 27)], children: vec![0, 1, 2], layer: 1, tokens: 8 };
        let embeddings = (0..4).map(|i| vec![(i as f32 * 0.37).cos(), -0.0, f32::MIN_POSITIVE * i as f32]).collect();
        RaptorTree { nodes: vec![leaf(0), leaf(1), leaf(2), root], embeddings, layers: 1 }
    }

    #[test]
    fn saved_raptor_trees_reload_bit_identically() {
        let t = tree();
        let dir = std::env::temp_dir().join(format!("arbor-raptor-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("doc.raptor");
        save(&t, &path).unwrap();
        let back = load(&path).unwrap();
        assert_eq!(back, t);
        let bits = |t: &RaptorTree| t.embeddings.iter().flatten().map(|e| e.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&t));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn damaged_raptor_files_are_rejected_with_a_reason() {
        let bytes = encode(&tree());
        assert!(decode(&bytes[..bytes.len() - 1]).unwrap_err().contains("truncated"));
        let mut wrong = bytes.clone();
        wrong[8] = 7;
        assert!(decode(&wrong).unwrap_err().contains("version 7"));
        assert!(decode(&encode(&tree())[..8]).is_err());
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(decode(&extra).unwrap_err().contains("trailing"));
        let mut cyclic = tree();
        cyclic.nodes[3].children.push(3);
        assert!(decode(&encode(&cyclic)).unwrap_err().contains("child 3"));
        let mut huge = bytes;
        huge[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode(&huge).unwrap_err().contains("cannot fit"));
    }
}

//! Embedding matrices on disk (unit and query vectors cached between runs), a small versioned binary
//! format (little-endian), read back bit-identically:
//!
//! ```text
//! b"ARBORVEC"  u32 version (= 1)  u64 rows  u64 dim  rows x dim x f32
//! ```
//!
//! Every row has the same width; written through a temporary file, fsynced and renamed, with a checksum
//! trailer checked on read ([`arbor_files`]).

use std::path::Path;

use crate::formats::tree_io::Reader;
use arbor_files::{read_checked, write_checked};

const MAGIC: &[u8; 8] = b"ARBORVEC";
pub const VERSION: u32 = 1;

pub fn encode(rows: &[Vec<f32>]) -> Result<Vec<u8>, String> {
    let dim = rows.first().map_or(0, Vec::len);
    if let Some(bad) = rows.iter().position(|r| r.len() != dim) {
        return Err(format!("row {bad} has {} values, row 0 has {dim}", rows[bad].len()));
    }
    let mut out = Vec::with_capacity(28 + rows.len() * dim * 4);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(rows.len() as u64).to_le_bytes());
    out.extend_from_slice(&(dim as u64).to_le_bytes());
    for v in rows.iter().flatten() {
        out.extend_from_slice(&v.to_le_bytes());
    }
    Ok(out)
}

pub fn decode(bytes: &[u8]) -> Result<Vec<Vec<f32>>, String> {
    let mut r = Reader { bytes, at: 0 };
    r.header(MAGIC, VERSION, "vectors")?;
    let (rows, dim) = (r.u64()? as usize, r.u64()? as usize);
    if rows.checked_mul(dim).and_then(|n| n.checked_mul(4)) != Some(bytes.len() - r.at) {
        return Err(format!("{rows} x {dim} vectors need {} bytes, the file holds {}", rows * dim * 4, bytes.len() - r.at));
    }
    (0..rows).map(|_| (0..dim).map(|_| r.f32()).collect()).collect()
}

pub fn save(rows: &[Vec<f32>], path: &Path) -> std::io::Result<()> {
    write_checked(path, &encode(rows).map_err(std::io::Error::other)?)
}

pub fn load(path: &Path) -> Result<Vec<Vec<f32>>, String> {
    let bytes = read_checked(path).map_err(|e| format!("{} {e}", path.display()))?;
    decode(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_bit_identically() {
        let rows = vec![vec![1.5, -0.0, f32::MIN_POSITIVE], vec![3.0, 1e-30, -7.25]];
        let back = decode(&encode(&rows).unwrap()).unwrap();
        let bits = |r: &[Vec<f32>]| r.iter().flatten().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&rows));
        assert_eq!(decode(&encode(&[]).unwrap()).unwrap(), Vec::<Vec<f32>>::new());
    }

    #[test]
    fn ragged_and_damaged_input_is_rejected() {
        assert!(encode(&[vec![1.0], vec![]]).unwrap_err().contains("row 1"));
        let bytes = encode(&[vec![1.0, 2.0]]).unwrap();
        assert!(decode(&bytes[..bytes.len() - 1]).unwrap_err().contains("need 8 bytes"));
        assert!(decode(b"ARBORTRE\x01\0\0\0").unwrap_err().contains("not an arbor vectors"));
    }
}

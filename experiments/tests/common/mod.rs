//! What the integration tests share.

/// One ranked item: document, byte spans, score.
pub type Ranked = (String, Vec<[usize; 2]>, f32);

/// Whether `got` is the ranking `want`: the same score at every rank (within 1e-4), and the same item,
/// or one `want` holds at another rank with a score within 1e-4 (a near-tie two encodings of one text,
/// batched differently, may order either way).
pub fn same_ranking(got: &[Ranked], want: &[Ranked]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} items, not {}: {got:?} vs {want:?}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if (g.2 - w.2).abs() > 1e-4 {
            return Err(format!("rank {}: score {} vs {}: {got:?} vs {want:?}", i + 1, g.2, w.2));
        }
        let tied = want.iter().any(|o| (o.2 - w.2).abs() <= 1e-4 && (o.0.as_str(), &o.1) == (g.0.as_str(), &g.1));
        if (g.0.as_str(), &g.1) != (w.0.as_str(), &w.1) && !tied {
            return Err(format!("rank {}: {g:?} vs {w:?}: {got:?} vs {want:?}", i + 1));
        }
    }
    Ok(())
}

//! The AVX-512 and the AVX2 + FMA paths of arbor's matrix products (issue 64: `ARBOR_KERNELS=avx2`,
//! src/bert/avx2.rs) give the same encoder vectors and the same gradients of the hand-written backward
//! pass, to float rounding, on a processor that has both. The path is chosen once per process, so each side
//! runs in a child process: this test binary again, on the ignored `one_side` test, with the variable set
//! or not, each writing what it computed. Where the processor has no AVX-512 there is one path: the test
//! says it skipped.

use std::path::Path;
use std::process::Command;

use arbor_models::bert::FrozenLayers;
use arbor_models::bert::autodiff;
use arbor_models::pooling::Pooling;
use arbor_models::processor::{KERNELS_VAR, Kernels, features};
use arbor_models::{EncoderConfig, SentenceEncoder};
use burn::tensor::{Tensor, TensorData};

use super::grad::{A, gradients};

/// Where `one_side` writes: the JSON (its path, vectors and gradients' lengths) and the gradients' floats.
const OUT_VAR: &str = "ARBOR_KERNELS_PARITY_OUT";

const TEXTS: [&str; 4] = [
    "The tenant pays the rent on the first day of each month, by bank transfer to the landlord's account.",
    "Notice in writing.",
    "No pets are allowed in the premises without the prior written consent of the landlord.",
    "The Amazon rainforest covers much of the Amazon basin of South America, an area of seven million square kilometres.",
];

#[test]
fn the_avx2_and_avx512_paths_give_the_same_vectors_and_gradients() {
    if !features().contains(&"avx512f") {
        eprintln!("skipped: this processor has no AVX-512, so its products take one path (AVX2 + FMA or portable)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let side = |asked: &str| -> (serde_json::Value, Vec<f32>) {
        let out = dir.path().join(asked);
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "integration::kernels::one_side", "--test-threads", "1"])
            .env(KERNELS_VAR, asked)
            .env(OUT_VAR, &out)
            .output()
            .unwrap();
        assert!(child.status.success(), "{asked}: {}{}", String::from_utf8_lossy(&child.stdout), String::from_utf8_lossy(&child.stderr));
        read(&out)
    };
    let ((wide, wide_grads), (narrow, narrow_grads)) = (side("auto"), side("avx2"));
    assert_eq!(wide["kernels"], Kernels::Avx512.describe());
    assert_eq!(narrow["kernels"], Kernels::Avx2 { forced: true }.describe());
    let rows = |v: &serde_json::Value| -> Vec<Vec<f32>> { serde_json::from_value(v["vectors"].clone()).unwrap() };
    let mut moved = 0.0f32;
    for (a, b) in rows(&wide).iter().zip(&rows(&narrow)) {
        let cos = a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>() / (norm(a) * norm(b));
        assert!(cos >= 0.99999, "cosine {cos} between the paths' vectors");
        moved = moved.max(a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max));
    }
    let lengths: Vec<usize> = serde_json::from_value(wide["lengths"].clone()).unwrap();
    assert_eq!(lengths, serde_json::from_value::<Vec<usize>>(narrow["lengths"].clone()).unwrap());
    assert_eq!(lengths.iter().filter(|&&n| n > 0).count(), 16, "every parameter of the last block has a gradient");
    let mut at = 0;
    for (i, n) in lengths.into_iter().enumerate() {
        let (a, b) = (&wide_grads[at..at + n], &narrow_grads[at..at + n]);
        at += n;
        let diff: Vec<f32> = a.iter().zip(b).map(|(x, y)| x - y).collect();
        let relative = norm(&diff) / norm(a).max(1e-12);
        assert!(relative <= 1e-4 || norm(&diff) <= 1e-6, "parameter {i}'s gradient: the paths differ by {relative:.2e} of its norm");
        moved = moved.max(diff.iter().fold(0.0, |m, d| m.max(d.abs())));
    }
    // The two sides took different microkernels (other sums, so other roundings), not one path twice.
    assert!(moved > 0.0, "the two paths gave identical floats: ARBOR_KERNELS changed nothing");
}

/// One side of the test above: the encoder's vectors of `TEXTS`, and the gradients of `Σ pooled ⊙ R` over
/// the last block (five frozen below it) by the hand-written backward pass, under this process's path.
#[test]
#[ignore = "one side of the_avx2_and_avx512_paths_give_the_same_vectors_and_gradients, run by it in a child process"]
fn one_side() {
    let out = std::env::var(OUT_VAR).expect("run by the_avx2_and_avx512_paths_give_the_same_vectors_and_gradients");
    let device = Default::default();
    let encoder = SentenceEncoder::<A>::load(&EncoderConfig::default(), &device).unwrap();
    let vectors = encoder.embed(&TEXTS, 4, &mut |_| {});
    let ids = encoder.tokenize(&TEXTS);
    let rows: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    let (bert, eps) = (&encoder.bert, encoder.config.layer_norm_eps);
    let lower = FrozenLayers::new(bert, eps, 5).unwrap();
    let pooled = autodiff::pool_ids(bert, Some(&lower), &rows, eps, Pooling::Mean).expect("the hand-written path");
    let r: Vec<f32> = (0..rows.len() * 384).map(|i| (i * 7919 % 1000) as f32 / 500.0 - 1.0).collect();
    let (_, grads) = gradients(bert, pooled, &Tensor::<A, 2>::from_data(TensorData::new(r, [rows.len(), 384]), &device));
    let json = serde_json::json!({
        "kernels": Kernels::chosen().describe(),
        "vectors": vectors,
        "lengths": grads.iter().map(Vec::len).collect::<Vec<_>>(),
    });
    std::fs::write(format!("{out}.json"), json.to_string()).unwrap();
    let floats: Vec<u8> = grads.iter().flatten().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(format!("{out}.f32"), floats).unwrap();
}

fn read(out: &Path) -> (serde_json::Value, Vec<f32>) {
    let json = serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap()).unwrap();
    let bytes = std::fs::read(out.with_extension("f32")).unwrap();
    (json, bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

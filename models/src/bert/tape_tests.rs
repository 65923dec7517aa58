//! The hand-written backward pass's pieces against hand-derived values and finite differences.

use super::*;

/// A layer norm's hand-derived gradient against central differences of `sum(w ⊙ LN(x))`.
#[test]
fn the_layer_norms_gradient_is_its_finite_difference() {
    let n = Norm { gamma: vec![1.5, -0.5, 2.0, 0.7], beta: vec![0.1, 0.2, -0.3, 0.0], eps: 1e-5 };
    let x = [0.3f32, -1.2, 2.5, 0.9, 1.0, 1.1, -0.4, 0.2];
    let w = [0.7f32, -1.3, 0.4, 2.0, -0.6, 0.9, 1.1, -0.2];
    let loss = |x: &[f32]| {
        let mut y = x.to_vec();
        norm_forward(&mut y, &n);
        y.iter().zip(&w).map(|(y, w)| (y * w) as f64).sum::<f64>()
    };
    let mut y = x.to_vec();
    let tape = norm_forward(&mut y, &n);
    let mut dx = w.to_vec();
    let grads = norm_backward(&mut dx, &tape, &n);
    for i in 0..x.len() {
        let (mut plus, mut minus) = (x.to_vec(), x.to_vec());
        plus[i] += 1e-2;
        minus[i] -= 1e-2;
        let numeric = (loss(&plus) - loss(&minus)) / 2e-2;
        assert!((numeric - dx[i] as f64).abs() < 2e-3, "x[{i}]: {numeric} vs {}", dx[i]);
    }
    // d/dβ_j = Σ_rows w_j; d/dγ_j = Σ_rows w_j x̂_j.
    assert!((grads.beta[0] - (0.7 - 0.6)).abs() < 1e-6 && (grads.beta[3] - (2.0 - 0.2)).abs() < 1e-6);
    let hat0: Vec<f32> = (0..4).map(|j| (y[j] - n.beta[j]) / n.gamma[j]).collect();
    let hat1: Vec<f32> = (0..4).map(|j| (y[4 + j] - n.beta[j]) / n.gamma[j]).collect();
    for j in 0..4 {
        assert!((grads.gamma[j] - (w[j] * hat0[j] + w[4 + j] * hat1[j])).abs() < 1e-5);
    }
}

/// GELU's derivative by hand at known points, and against a central difference.
#[test]
fn gelus_derivative_is_phi_plus_u_times_the_density() {
    let u = [-3.0f32, -1.0, 0.0, 0.5, 2.0];
    let mut d = vec![1.0f32; u.len()];
    gelu_backward(&mut d, &u);
    // gelu'(0) = 1/2; gelu'(1) - gelu'(-1) = 1 by symmetry of Φ, and u φ(u) is odd.
    assert!((d[2] - 0.5).abs() < 1e-6);
    for (i, &x) in u.iter().enumerate() {
        let numeric = (super::super::cpu::gelu(x + 1e-3) - super::super::cpu::gelu(x - 1e-3)) / 2e-3;
        assert!((numeric - d[i]).abs() < 2e-3, "{x}: {numeric} vs {}", d[i]);
    }
}

/// One head over two tokens, by hand: the softmax's backward pass and the value's gradient.
#[test]
fn attention_backward_by_hand_for_one_head() {
    // hidden 1, one head: q, k, v per token; P = softmax over the two keys.
    let rows = [1.0f32, 2.0, 3.0, 0.5, -1.0, 5.0];
    let p = |q: f32| {
        let (a, b) = ((q * 2.0f32).exp(), (-q).exp());
        [a / (a + b), b / (a + b)]
    };
    let (p0, p1) = (p(1.0), p(0.5));
    let probs = [p0[0], p0[1], p1[0], p1[1]];
    let dcontext = [1.0f32, -2.0];
    let mut dqkv = vec![0.0f32; 6];
    attention_backward(&rows, &[probs.to_vec()], (&[2], 1), None, &dcontext, &mut dqkv);
    // dV_j = Σ_i P_ij dC_i.
    assert!((dqkv[2] - (p0[0] * 1.0 + p1[0] * -2.0)).abs() < 1e-6);
    assert!((dqkv[5] - (p0[1] * 1.0 + p1[1] * -2.0)).abs() < 1e-6);
    // dQ_0 = Σ_j dS_0j k_j with dS_0j = P_0j (dC_0 v_j - Σ_l P_0l dC_0 v_l).
    let dp = [3.0f32, 5.0];
    let mean = p0[0] * dp[0] + p0[1] * dp[1];
    let ds = [p0[0] * (dp[0] - mean), p0[1] * (dp[1] - mean)];
    assert!((dqkv[0] - (ds[0] * 2.0 - ds[1])).abs() < 1e-5);
}

/// A long sequence's heads, each a task of its own (forward and backward), give what each head
/// computes alone as a one-head problem on its own columns; a short sequence beside it too.
#[test]
fn attention_split_by_head_equals_each_head_alone() {
    use super::super::attention::SPLIT_HEADS_FROM;
    let (heads, dh) = (3usize, 2usize);
    let h = heads * dh;
    let lengths = [SPLIT_HEADS_FROM + 5, 7];
    let t: usize = lengths.iter().sum();
    // Deterministic values in (-1, 1).
    let value = |i: usize| ((i as f32 * 0.618_034).fract() - 0.5) * 2.0;
    let qkv: Vec<f32> = (0..t * 3 * h).map(value).collect();
    let dcontext: Vec<f32> = (0..t * h).map(|i| value(i + 7)).collect();
    let mut context = vec![0.0f32; t * h];
    let mut probs: Vec<Vec<f32>> = lengths.iter().map(|&n| vec![0.0f32; heads * n * n]).collect();
    attention(&qkv, &lengths, [heads, h], None, &mut context, probs.iter_mut().map(|p| Probs::Keep(p)).collect());
    let mut dqkv = vec![0.0f32; t * 3 * h];
    attention_backward(&qkv, &probs, (&lengths, heads), None, &dcontext, &mut dqkv);
    for head in 0..heads {
        // The head's columns of Q, K and V (and of the context's gradient) as a one-head problem.
        let columns = |rows: &[f32], width: usize, starts: &[usize]| -> Vec<f32> {
            rows.chunks_exact(width).flat_map(|r| starts.iter().flat_map(move |&s| r[s + head * dh..s + (head + 1) * dh].to_vec())).collect()
        };
        let alone_qkv = columns(&qkv, 3 * h, &[0, h, 2 * h]);
        let mut alone_context = vec![0.0f32; t * dh];
        let mut alone_probs: Vec<Vec<f32>> = lengths.iter().map(|&n| vec![0.0f32; n * n]).collect();
        attention(&alone_qkv, &lengths, [1, dh], None, &mut alone_context, alone_probs.iter_mut().map(|p| Probs::Keep(p)).collect());
        assert_eq!(columns(&context, h, &[0]), alone_context, "head {head}'s context");
        for (p, (alone, &n)) in probs.iter().zip(alone_probs.iter().zip(&lengths)) {
            assert_eq!(&p[head * n * n..(head + 1) * n * n], &alone[..], "head {head}'s probabilities");
        }
        let mut alone_dqkv = vec![0.0f32; t * 3 * dh];
        attention_backward(&alone_qkv, &alone_probs, (&lengths, 1), None, &columns(&dcontext, h, &[0]), &mut alone_dqkv);
        assert_eq!(columns(&dqkv, 3 * h, &[0, h, 2 * h]), alone_dqkv, "head {head}'s gradients");
    }
}

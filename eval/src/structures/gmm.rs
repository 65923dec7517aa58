//! RAPTOR's clustering step (RAPTOR, Section 3, "Clustering Algorithm"): reduce the embeddings' dimension,
//! fit Gaussian mixtures for each number of clusters, keep the one with the lowest BIC, and give every
//! point to each cluster whose posterior exceeds a threshold (soft clustering).
//!
//! ```text
//! reduce:  X (n × D) → Z (n × d), d = min(reduction_dimension, n - 2) (at least 1): the top-d principal
//!          components (RAPTOR uses UMAP; PCA is its deterministic linear stand-in here)
//! fit:     for K = 1 ..= max(1, min(max_clusters, n) - 1): EM for a full-covariance mixture, started
//!          from farthest-point seeds, Σ_k += ε I with ε = 1e-3 × Z's mean per-dimension variance
//!          (scikit-learn's fixed 1e-6 lets a component collapse onto one point, whose near-infinite
//!          density BIC then rewards)
//! BIC(K) = -2 ln L + p ln n,   p = K·d + K·d(d+1)/2 + K - 1
//! labels:  { k : P(k | z_i) > threshold }   (threshold 0.1)
//! ```
//!
//! All of it is deterministic: the same input gives the same clusters. With 1 point there is one cluster;
//! with 2 or 3 the mixture is fitted in one dimension (RAPTOR's own code fails on fewer than 3 inputs).

use rayon::prelude::*;

/// A fitted Gaussian mixture.
#[derive(Debug, Clone)]
pub struct Mixture {
    pub weights: Vec<f64>,
    pub means: Vec<Vec<f64>>,
    /// Each component's lower Cholesky factor of its covariance.
    chol: Vec<Vec<f64>>,
    pub log_likelihood: f64,
}

/// The covariance regulariser, relative to the data's mean per-dimension variance.
const REG_COVAR: f64 = 1e-3;
const MAX_ITER: usize = 100;
const TOL: f64 = 1e-3;

/// The top `d` principal-component coordinates of the rows of `x` (centred), `n × d`.
pub fn principal_components(x: &[Vec<f32>], d: usize) -> Vec<Vec<f64>> {
    let n = x.len();
    if n == 0 {
        return Vec::new();
    }
    let dim = x[0].len();
    let mean: Vec<f64> = (0..dim).map(|j| x.iter().map(|r| r[j] as f64).sum::<f64>() / n as f64).collect();
    let c: Vec<Vec<f64>> = x.iter().map(|r| r.iter().zip(&mean).map(|(v, m)| *v as f64 - m).collect()).collect();
    // Eigenvectors u of the Gram matrix C Cᵀ give the coordinates C v = u · sqrt(λ).
    let gram: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| c[i].iter().zip(&c[j]).map(|(a, b)| a * b).sum()).collect()).collect();
    let eig = top_eigen(gram, d.min(n));
    (0..n).map(|i| eig.iter().map(|(lambda, u)| u[i] * lambda.max(0.0).sqrt()).collect()).collect()
}

/// The `count` largest eigenpairs of a symmetric matrix, by power iteration with deflation.
fn top_eigen(mut m: Vec<Vec<f64>>, count: usize) -> Vec<(f64, Vec<f64>)> {
    let n = m.len();
    let mut out = Vec::new();
    for e in 0..count {
        // A deterministic start that is not orthogonal to any eigenvector in general.
        let mut v: Vec<f64> = (0..n).map(|i| 1.0 + ((i * 7 + e * 13) % 11) as f64 / 11.0).collect();
        normalise(&mut v);
        let mut lambda = 0.0;
        for _ in 0..500 {
            let mut w: Vec<f64> = m.iter().map(|row| row.iter().zip(&v).map(|(a, b)| a * b).sum()).collect();
            let next = dot(&w, &v);
            if normalise(&mut w) == 0.0 {
                lambda = 0.0;
                break;
            }
            let converged = (next - lambda).abs() <= 1e-10 * next.abs().max(1e-12);
            lambda = next;
            v = w;
            if converged {
                break;
            }
        }
        for i in 0..n {
            for j in 0..n {
                m[i][j] -= lambda * v[i] * v[j];
            }
        }
        out.push((lambda, v));
    }
    out
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn normalise(v: &mut [f64]) -> f64 {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    norm
}

impl Mixture {
    /// Fits a `k`-component full-covariance mixture to the rows of `z` by EM.
    pub fn fit(z: &[Vec<f64>], k: usize) -> Mixture {
        let (n, d) = (z.len(), z[0].len());
        let reg = REG_COVAR * total_variance(z).max(1e-12) / d as f64;
        // Farthest-point seeding from the point nearest the mean; then hard assignment to the nearest seed.
        let centre: Vec<f64> = (0..d).map(|j| z.iter().map(|r| r[j]).sum::<f64>() / n as f64).collect();
        let mut seeds = vec![(0..n).min_by(|&a, &b| dist2(&z[a], &centre).total_cmp(&dist2(&z[b], &centre))).expect("points")];
        while seeds.len() < k {
            let far = (0..n).max_by(|&a, &b| nearest(&z[a], &seeds, z).total_cmp(&nearest(&z[b], &seeds, z)).then(b.cmp(&a))).expect("points");
            seeds.push(far);
        }
        let mut resp: Vec<Vec<f64>> = z
            .iter()
            .map(|p| {
                let best = (0..k).min_by(|&a, &b| dist2(p, &z[seeds[a]]).total_cmp(&dist2(p, &z[seeds[b]]))).expect("k >= 1");
                (0..k).map(|c| f64::from(u8::from(c == best))).collect()
            })
            .collect();
        let mut model = Mixture::m_step(z, &resp, reg);
        let mut bound = f64::NEG_INFINITY;
        for _ in 0..MAX_ITER {
            let (ll, r) = model.e_step(z);
            resp = r;
            model = Mixture::m_step(z, &resp, reg);
            let mean_ll = ll / n as f64;
            let done = (mean_ll - bound).abs() < TOL;
            bound = mean_ll;
            if done {
                break;
            }
        }
        model.log_likelihood = model.e_step(z).0;
        model
    }

    /// Posterior probabilities of each component for each row, and the total log-likelihood.
    pub fn e_step(&self, z: &[Vec<f64>]) -> (f64, Vec<Vec<f64>>) {
        let mut total = 0.0;
        let resp = z
            .iter()
            .map(|p| {
                let logs: Vec<f64> = (0..self.weights.len()).map(|c| self.weights[c].max(1e-300).ln() + self.log_density(c, p)).collect();
                let max = logs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let norm = max + logs.iter().map(|l| (l - max).exp()).sum::<f64>().ln();
                total += norm;
                logs.iter().map(|l| (l - norm).exp()).collect()
            })
            .collect();
        (total, resp)
    }

    fn m_step(z: &[Vec<f64>], resp: &[Vec<f64>], reg: f64) -> Mixture {
        let (n, d, k) = (z.len(), z[0].len(), resp[0].len());
        let mut weights = Vec::with_capacity(k);
        let mut means = Vec::with_capacity(k);
        let mut chol = Vec::with_capacity(k);
        for c in 0..k {
            let nk: f64 = resp.iter().map(|r| r[c]).sum::<f64>() + 10.0 * f64::EPSILON;
            let mean: Vec<f64> = (0..d).map(|j| z.iter().zip(resp).map(|(p, r)| r[c] * p[j]).sum::<f64>() / nk).collect();
            let mut cov = vec![0.0; d * d];
            for (p, r) in z.iter().zip(resp) {
                for i in 0..d {
                    for j in 0..=i {
                        cov[i * d + j] += r[c] * (p[i] - mean[i]) * (p[j] - mean[j]) / nk;
                    }
                }
            }
            for i in 0..d {
                cov[i * d + i] += reg;
            }
            weights.push(nk / n as f64);
            means.push(mean);
            chol.push(cholesky(&cov, d));
        }
        Mixture { weights, means, chol, log_likelihood: 0.0 }
    }

    /// ln N(p; mean_c, Σ_c).
    fn log_density(&self, c: usize, p: &[f64]) -> f64 {
        let d = p.len();
        let l = &self.chol[c];
        // Solve L y = p - mean; then the Mahalanobis term is |y|², and ln det Σ = 2 Σ ln L_ii.
        let mut y = vec![0.0; d];
        for i in 0..d {
            let s: f64 = (0..i).map(|j| l[i * d + j] * y[j]).sum();
            y[i] = (p[i] - self.means[c][i] - s) / l[i * d + i];
        }
        let log_det: f64 = (0..d).map(|i| l[i * d + i].ln()).sum::<f64>() * 2.0;
        -0.5 * (d as f64 * (2.0 * std::f64::consts::PI).ln() + log_det + dot(&y, &y))
    }

    /// The Bayesian information criterion of the fit on `n` points (lower is better).
    pub fn bic(&self, n: usize) -> f64 {
        let (k, d) = (self.weights.len(), self.means[0].len());
        let params = k * d + k * d * (d + 1) / 2 + k - 1;
        -2.0 * self.log_likelihood + params as f64 * (n as f64).ln()
    }
}

/// The lower Cholesky factor of a symmetric positive-definite `d × d` matrix (lower triangle read).
fn cholesky(a: &[f64], d: usize) -> Vec<f64> {
    let mut l = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..=i {
            let s: f64 = (0..j).map(|m| l[i * d + m] * l[j * d + m]).sum();
            if i == j {
                l[i * d + i] = (a[i * d + i] - s).max(f64::MIN_POSITIVE).sqrt();
            } else {
                l[i * d + j] = (a[i * d + j] - s) / l[j * d + j];
            }
        }
    }
    l
}

/// The sum over dimensions of the variance of the rows of `z`.
fn total_variance(z: &[Vec<f64>]) -> f64 {
    let n = z.len() as f64;
    (0..z[0].len())
        .map(|j| {
            let mean = z.iter().map(|r| r[j]).sum::<f64>() / n;
            z.iter().map(|r| (r[j] - mean).powi(2)).sum::<f64>() / n
        })
        .sum()
}

fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

fn nearest(p: &[f64], seeds: &[usize], z: &[Vec<f64>]) -> f64 {
    seeds.iter().map(|&s| dist2(p, &z[s])).fold(f64::INFINITY, f64::min)
}

/// RAPTOR's clustering parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusterParams {
    pub reduction_dimension: usize,
    pub max_clusters: usize,
    pub threshold: f64,
}

/// The mixture with the lowest BIC over the candidate numbers of clusters (see the module doc), fitted on
/// `z`, and each row's soft labels.
pub fn soft_clusters(z: &[Vec<f64>], p: &ClusterParams) -> (usize, Vec<Vec<usize>>) {
    let n = z.len();
    if n <= 1 {
        return (1, vec![vec![0]; n]);
    }
    let max_k = p.max_clusters.min(n).saturating_sub(1).max(1);
    // The fits are independent: both cores fit them, and the lowest BIC is taken in order of K (the first
    // among equals), so the result does not depend on the threads.
    let fits: Vec<Mixture> = (1..=max_k).into_par_iter().map(|k| Mixture::fit(z, k)).collect();
    let best = fits.into_iter().min_by(|a, b| a.bic(n).total_cmp(&b.bic(n))).expect("at least one candidate");
    let (_, resp) = best.e_step(z);
    let labels = resp
        .iter()
        .map(|r| {
            let above: Vec<usize> = (0..r.len()).filter(|&c| r[c] > p.threshold).collect();
            // A point's most likely cluster always takes it (posteriors sum to 1, so only a threshold
            // above 1/K can leave a point out).
            if above.is_empty() { vec![(0..r.len()).max_by(|&a, &b| r[a].total_cmp(&r[b])).expect("k >= 1")] } else { above }
        })
        .collect();
    (best.weights.len(), labels)
}

/// The dimension RAPTOR reduces `n` points to.
pub fn reduced_dimension(n: usize, reduction_dimension: usize) -> usize {
    reduction_dimension.min(n.saturating_sub(2)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `per` points around each centre, standard normal in each coordinate (a fixed pseudo-random stream).
    fn blobs(centres: &[[f64; 2]], per: usize) -> Vec<Vec<f64>> {
        let mut state = 42u64;
        let mut uniform = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let mut normal = move || (-2.0 * uniform().ln()).sqrt() * (2.0 * std::f64::consts::PI * uniform()).cos();
        centres.iter().flat_map(|c| (0..per).map(|_| vec![c[0] + normal(), c[1] + normal()]).collect::<Vec<_>>()).collect()
    }

    const PARAMS: ClusterParams = ClusterParams { reduction_dimension: 10, max_clusters: 50, threshold: 0.1 };

    #[test]
    fn bic_picks_the_planted_number_of_clusters() {
        for planted in [1usize, 2, 3] {
            let centres = [[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]];
            let z = blobs(&centres[..planted], 30);
            let (k, labels) = soft_clusters(&z, &PARAMS);
            assert_eq!(k, planted, "{planted} planted clusters");
            for blob in 0..planted {
                let first = &labels[blob * 30];
                assert_eq!(first.len(), 1);
                assert!(labels[blob * 30..(blob + 1) * 30].iter().all(|l| l == first), "a blob stays together");
            }
        }
    }

    #[test]
    fn one_two_and_three_points_cluster_without_failing() {
        assert_eq!(soft_clusters(&[vec![0.5]], &PARAMS), (1, vec![vec![0]]));
        let (k, labels) = soft_clusters(&[vec![0.0], vec![1.0]], &PARAMS);
        assert_eq!((k, labels.len()), (1, 2));
        let (k, labels) = soft_clusters(&[vec![0.0], vec![0.1], vec![5.0]], &PARAMS);
        assert!(k <= 2 && labels.iter().all(|l| !l.is_empty()));
        assert_eq!(reduced_dimension(1, 10), 1);
        assert_eq!(reduced_dimension(3, 10), 1);
        assert_eq!(reduced_dimension(40, 10), 10);
    }

    #[test]
    fn principal_components_find_the_direction_of_spread() {
        // Points along (1, 1, 0) with a little noise along z: the first coordinate orders them.
        let x: Vec<Vec<f32>> = (0..6).map(|i| vec![i as f32, i as f32, if i % 2 == 0 { 0.01 } else { -0.01 }]).collect();
        let z = principal_components(&x, 2);
        let first: Vec<f64> = z.iter().map(|r| r[0]).collect();
        let increasing = first.windows(2).all(|w| w[1] > w[0]);
        let decreasing = first.windows(2).all(|w| w[1] < w[0]);
        assert!(increasing || decreasing, "{first:?}");
        assert!((first[5] - first[0]).abs() > 7.0, "the spread is kept: 5·√2 ≈ 7.07");
        assert!(z.iter().all(|r| r[1].abs() < 0.02));
    }

    #[test]
    fn em_recovers_weights_and_means() {
        let z = blobs(&[[0.0, 0.0], [10.0, 0.0]], 100);
        let m = Mixture::fit(&z, 2);
        let mut means: Vec<f64> = m.means.iter().map(|mu| mu[0]).collect();
        means.sort_by(f64::total_cmp);
        assert!(means[0].abs() < 0.3 && (means[1] - 10.0).abs() < 0.3, "{means:?}");
        assert!(m.weights.iter().all(|w| (w - 0.5).abs() < 0.01), "{:?}", m.weights);
    }
}

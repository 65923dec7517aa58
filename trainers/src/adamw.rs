//! The trainers' optimizer: AdamW (Loshchilov & Hutter, 2019, "Decoupled Weight Decay Regularization",
//! Algorithm 2, with Adam's bias correction, Kingma & Ba, 2015, Algorithm 1) exactly as burn-optim's
//! `AdamW` computes it, after each parameter's gradient is clipped to at most `grad_clip` in L2 norm (as
//! burn-optim's `GradientClipping::Norm`, which clips each parameter tensor on its own):
//!
//! `m ← β₁ m + (1 − β₁) g`, `v ← β₂ v + (1 − β₂) g²`,
//! `θ ← θ (1 − η λ) − η (m / (1 − β₁ᵗ)) / (sqrt(v / (1 − β₂ᵗ)) + ε)`.
//!
//! On the CPU build's backend ([`arbor_models::host::Host`]) the clipping and the update are one pass over
//! each parameter, spread over the rayon pool, on the tensors' own buffers (burn-ndarray hands them over
//! without a copy): Burn's AdamW runs the same update as a dozen single-threaded tensor operations, each
//! allocating a fresh tensor, which took a fifth of a windowed fine-tuning step (200 ms of 22.7M
//! parameters on 2 cores). Every element gets the same floating-point operations in the same order as
//! Burn's, so the weights are Burn's bit for bit; only the clipping norm's sum is added in another order
//! (in `f64`). Other backends (a GPU's) take Burn's own clipping and AdamW. The state is Burn's
//! `AdamWState`, so checkpoints read and write as before.

use std::any::TypeId;

use arbor_models::host::Host;
use burn::module::AutodiffModule;
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::grad_clipping::{GradientClipping, GradientClippingConfig};
use burn::optim::{AdamW, AdamWConfig, AdamWState, AdaptiveMomentumState, LearningRate, SimpleOptimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use rayon::prelude::*;

use crate::schedule::Schedule;

/// AdamW's first moment's decay (Burn's default, PyTorch's).
pub const BETA_1: f32 = 0.9;
/// AdamW's second moment's decay.
pub const BETA_2: f32 = 0.999;
/// AdamW's epsilon (Burn's default; PyTorch's is 1e-8, and the step benchmark hands this one to it).
pub const EPSILON: f32 = 1e-5;

/// Every group's optimizer as Burn configures it: AdamW with the schedule's weight decay, gradients clipped
/// to its norm (what the step benchmark writes for PyTorch's side).
pub fn config(schedule: &Schedule) -> AdamWConfig {
    AdamWConfig::new()
        .with_beta_1(BETA_1)
        .with_beta_2(BETA_2)
        .with_epsilon(EPSILON)
        .with_weight_decay(schedule.weight_decay)
        .with_grad_clipping(Some(GradientClippingConfig::Norm(schedule.grad_clip)))
}

/// One parameter group's optimizer: [`FusedAdamW`] under Burn's adaptor (which hands it each parameter).
pub fn init<B: AutodiffBackend, M: AutodiffModule<B>>(schedule: &Schedule) -> OptimizerAdaptor<FusedAdamW, M, B> {
    OptimizerAdaptor::from(FusedAdamW::new(schedule))
}

/// AdamW with each parameter's gradient clipped first, fused on the CPU (the module's doc).
#[derive(Clone)]
pub struct FusedAdamW {
    weight_decay: f32,
    /// Each parameter's gradient is scaled to at most this L2 norm.
    grad_clip: f32,
    /// Burn's AdamW with the same settings, for the backends this does not fuse for.
    burn: AdamW,
}

impl FusedAdamW {
    pub fn new(schedule: &Schedule) -> Self {
        let burn = config(schedule).with_grad_clipping(None).build();
        FusedAdamW { weight_decay: schedule.weight_decay, grad_clip: schedule.grad_clip, burn }
    }
}

/// Elements a task of the fused pass takes.
const CHUNK: usize = 1 << 14;

impl<B: Backend> SimpleOptimizer<B> for FusedAdamW {
    type State<const D: usize> = AdamWState<B, D>;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<B, D>,
        grad: Tensor<B, D>,
        state: Option<Self::State<D>>,
    ) -> (Tensor<B, D>, Option<Self::State<D>>) {
        let amsgrad = state.as_ref().is_some_and(|s| s.momentum.max_moment_2.is_some());
        if TypeId::of::<B>() != TypeId::of::<Host>() || amsgrad {
            let grad = GradientClipping::Norm(self.grad_clip).clip_gradient(grad);
            return self.burn.step(lr, tensor, grad, state);
        }
        let (device, shape) = (tensor.device(), tensor.shape());
        let mut theta = floats(tensor);
        let mut g = floats(grad);
        let (time, mut m, mut v) = match state {
            Some(s) => (s.momentum.time + 1, floats(s.momentum.moment_1), floats(s.momentum.moment_2)),
            None => (1, vec![0.0; theta.len()], vec![0.0; theta.len()]),
        };
        clip(&mut g, self.grad_clip);
        let update = Update::new(lr, self.weight_decay, time);
        theta
            .par_chunks_mut(CHUNK)
            .zip(g.par_chunks(CHUNK))
            .zip(m.par_chunks_mut(CHUNK))
            .zip(v.par_chunks_mut(CHUNK))
            .for_each(|(((theta, g), m), v)| update.apply(theta, g, m, v));
        let tensor = |values: Vec<f32>| Tensor::<B, D>::from_data(TensorData::new(values, shape.clone()), &device);
        let momentum = AdaptiveMomentumState::new(time, tensor(m), tensor(v));
        (tensor(theta), Some(AdamWState::new(momentum)))
    }

    fn to_device<const D: usize>(state: Self::State<D>, device: &B::Device) -> Self::State<D> {
        <AdamW as SimpleOptimizer<B>>::to_device(state, device)
    }
}

/// A tensor's values, in its own buffer where the backend can hand it over.
fn floats<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.into_data().into_vec::<f32>().expect("the CPU build's parameters are float32")
}

/// Burn's `GradientClipping::Norm` in place: `g ← g · min(max_norm / (‖g‖ + min_positive), 1)`.
fn clip(g: &mut [f32], max_norm: f32) {
    let squares: f64 = g.par_chunks(CHUNK).map(|c| c.iter().map(|&x| f64::from(x * x)).sum::<f64>()).sum();
    let norm = squares.sqrt() as f32;
    let coefficient = (max_norm / (norm + f32::MIN_POSITIVE)).min(1.0);
    if coefficient < 1.0 {
        g.par_chunks_mut(CHUNK).for_each(|c| c.iter_mut().for_each(|x| *x *= coefficient));
    }
}

/// One step's constants, each as Burn's AdamW rounds it to `f32`.
struct Update {
    first: bool,
    /// `1 − β₁ᵗ` and `1 − β₂ᵗ`.
    corrections: [f32; 2],
    /// `1 − η λ` (computed in `f64`, as Burn's scalar).
    decay: f32,
    /// `η`.
    lr: f32,
}

impl Update {
    fn new(lr: LearningRate, weight_decay: f32, time: usize) -> Self {
        let t = time as i32;
        Update {
            first: time == 1,
            corrections: [1.0 - BETA_1.powi(t), 1.0 - BETA_2.powi(t)],
            decay: (1.0 - lr * f64::from(weight_decay)) as f32,
            lr: lr as f32,
        }
    }

    /// Burn's AdamW on a run of elements: its tensor operations in its order, element by element.
    #[inline]
    fn apply(&self, theta: &mut [f32], g: &[f32], m: &mut [f32], v: &mut [f32]) {
        let (f1, f2) = (1.0 - BETA_1, 1.0 - BETA_2);
        let [c1, c2] = self.corrections;
        for (((theta, &g), m), v) in theta.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
            if self.first {
                *m = g * f1;
                *v = (g * g) * f2;
            } else {
                *m = *m * BETA_1 + g * f1;
                *v = *v * BETA_2 + (g * g) * f2;
            }
            let delta = (*m / c1) / ((*v / c2).sqrt() + EPSILON);
            *theta = *theta * self.decay - delta * self.lr;
        }
    }
}

/// On the CPU build's backend (where the fused pass runs); left out of a build with Burn's collectives
/// (`ddp`), where every autodiff backend must be distributed and burn-ndarray is not.
#[cfg(test)]
#[cfg(not(feature = "ddp"))]
mod tests {
    use super::*;
    use burn::module::{Module, Param};
    use burn::optim::{GradientsParams, Optimizer};
    use burn::tensor::Distribution;

    type Ad = burn::backend::Autodiff<Host>;

    #[derive(Module, Debug)]
    struct Two<B: Backend> {
        big: Param<Tensor<B, 2>>,
        small: Param<Tensor<B, 1>>,
    }

    /// A loss whose gradients are large for `big` (clipped) and small for `small` (not), both nonzero.
    fn grads(model: &Two<Ad>, seed: u64) -> GradientsParams {
        let device = Default::default();
        <Ad as Backend>::seed(&device, seed);
        let r = Tensor::<Ad, 2>::random(model.big.dims(), Distribution::Normal(0.0, 3.0), &device);
        let s = Tensor::<Ad, 1>::random(model.small.dims(), Distribution::Normal(0.0, 1e-3), &device);
        let loss = (model.big.val() * r).sum() + (model.small.val().powi_scalar(2) * s).sum();
        GradientsParams::from_grads(loss.backward(), model)
    }

    /// Three steps of the fused optimizer against Burn's AdamW with Burn's clipping, on the same
    /// gradients: the weights agree to the clipping norm's rounding (the big tensor) and bit for bit where
    /// nothing is clipped (the small one), with weight decay and a learning rate that changes.
    #[test]
    fn the_fused_step_is_burns_adamw_with_clipping() {
        let device = Default::default();
        <Ad as Backend>::seed(&device, 7);
        let schedule = Schedule { weight_decay: 0.01, grad_clip: 1.0, ..Schedule::default() };
        let start = Two::<Ad> {
            big: Param::from_tensor(Tensor::random([300, 70], Distribution::Normal(0.0, 1.0), &device)),
            small: Param::from_tensor(Tensor::random([33], Distribution::Normal(0.0, 1.0), &device)),
        };
        let (mut fused, mut burn) = (start.clone(), start.clone());
        let mut fused_optim = init::<Ad, Two<Ad>>(&schedule);
        let mut burn_optim = config(&schedule).init::<Ad, Two<Ad>>();
        for (step, lr) in [1e-2, 5e-3, 2e-3].into_iter().enumerate() {
            let g = grads(&fused, step as u64);
            fused = fused_optim.step(lr, fused, g);
            let g = grads(&burn, step as u64);
            burn = burn_optim.step(lr, burn, g);
        }
        let values = |t: Tensor<Ad, 2>| t.into_data().into_vec::<f32>().unwrap();
        let (a, b) = (values(fused.big.val()), values(burn.big.val()));
        let moved = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
        assert!(moved < 1e-6, "the clipped tensor moved {moved} from Burn's");
        let small = |m: &Two<Ad>| m.small.val().into_data().into_vec::<f32>().unwrap();
        assert_eq!(small(&fused), small(&burn), "nothing clipped: Burn's floats exactly");
        assert_ne!(small(&fused), small(&start), "the steps moved the weights");
        assert_ne!(a, values(start.big.val()), "the steps moved the weights");
    }
}

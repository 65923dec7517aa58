//! Random numbers drawn on the host: one seed, the same trained model on every backend.
//!
//! Burn draws `Tensor::random` (and every module's initialiser) on the tensor's own backend, and each
//! backend has its own generator: seeded alike, burn-cuda's kernels draw other numbers than ndarray's. A
//! RON file trained on a GPU then started from other weights than on the CPU (measured by
//! scripts/gpu-check.sh on an H100: the quickstart's trained SproutRAG reached test IE 7.4 on CUDA against
//! 13.0 on the CPU, its first step's L_attn already 0.4217 against 0.4189). Here every random number a
//! trainer uses is drawn by Burn's ndarray backend on the host, seeded by the trainer's seed, and moved to
//! the device: a CPU build draws exactly what it drew before (ndarray was its backend), and a GPU build
//! draws the same numbers.

use std::cell::Cell;
use std::sync::{Mutex, PoisonError};

use burn::module::Module;
use burn::record::{BinBytesRecorder, FullPrecisionSettings, Recorder, RecorderError};
use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, Tensor};

/// The backend the random numbers are drawn on: Burn's ndarray, on the CPU.
pub type Host = burn::backend::NdArray<f32>;

/// Burn's ndarray generator is one for the process: a seed and the draws it governs are made holding this
/// lock, so that two trainings (or tests) drawing at once each get their own seed's numbers (without it a
/// draw of one could fall between the seeding and the draws of another).
static GENERATOR: Mutex<()> = Mutex::new(());

thread_local! {
    /// Whether this thread holds [`GENERATOR`] (a module drawn on the host may draw again inside).
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// `draw` run holding the host's generator; the thread that holds it enters again freely.
fn holding<T>(draw: impl FnOnce() -> T) -> T {
    if HOLDING.get() {
        return draw();
    }
    struct Release;
    impl Drop for Release {
        fn drop(&mut self) {
            HOLDING.set(false);
        }
    }
    let _lock = GENERATOR.lock().unwrap_or_else(PoisonError::into_inner);
    HOLDING.set(true);
    let _release = Release;
    draw()
}

/// The module `host` builds on the host, its generator seeded by `seed`, moved into `target` on `device`
/// (its parameters replaced by the host's, ids included; Burn initialises parameters lazily, so the
/// target's own initialisers never run). `host` and `target` must build the same architecture.
pub fn init_on_host<B: Backend, H: Module<Host>, M: Module<B>>(
    seed: u64,
    host: impl FnOnce(&burn::tensor::Device<Host>) -> H,
    target: M,
    device: &burn::tensor::Device<B>,
) -> Result<M, RecorderError> {
    let cpu = Default::default();
    let recorder = BinBytesRecorder::<FullPrecisionSettings>::default();
    // Loading into the target holds the generator too: a lazily initialised parameter may draw its own
    // values before they are replaced.
    holding(|| {
        Host::seed(&cpu, seed);
        let bytes = recorder.record(host(&cpu).into_record(), ())?;
        Ok(target.load_record(recorder.load(bytes, device)?))
    })
}

/// A random tensor drawn by the host's generator, on `device`.
pub fn host_random<B: Backend, const D: usize>(shape: [usize; D], distribution: Distribution, device: &burn::tensor::Device<B>) -> Tensor<B, D> {
    Tensor::from_data(holding(|| Tensor::<Host, D>::random(shape, distribution, &Default::default())).into_data(), device)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Autodiff;
    use burn::nn::{Initializer, Linear, LinearConfig};

    type B = Autodiff<Host>;

    fn values<Bk: Backend>(linear: &Linear<Bk>) -> Vec<f32> {
        linear.weight.val().into_data().to_vec().expect("f32")
    }

    // Burn's ndarray generator is one for the process, and tests drawing in parallel advance it: these
    // tests read what was drawn, never which numbers a seed gives (scripts/gpu-check.sh checks that a CPU
    // and a GPU build train the same models).
    #[test]
    fn the_target_gets_the_hosts_weights_and_never_draws_its_own() {
        let device = Default::default();
        let mut drawn = Vec::new();
        let host = |cpu: &burn::tensor::Device<Host>| {
            let linear = LinearConfig::new(5, 3).init::<Host>(cpu);
            drawn = values(&linear);
            linear
        };
        // The target's initialiser would give 9s, were it run.
        let target = LinearConfig::new(5, 3).with_initializer(Initializer::Constant { value: 9.0 }).init::<B>(&device);
        let moved = init_on_host(42, host, target, &device).unwrap();
        assert_eq!(values(&moved), drawn);
        assert!(drawn.iter().all(|&w| w != 9.0 && w.abs() <= (1.0f32 / 5.0).sqrt()), "Kaiming uniform over fan-in 5: {drawn:?}");
        assert!(moved.weight.val().is_require_grad(), "the target's autodiff setting is kept");
    }

    #[test]
    fn host_noise_has_the_shape_asked_and_moves_on() {
        let device = Default::default();
        let a: Vec<f32> = host_random::<B, 2>([4, 3], Distribution::Normal(0.0, 1.0), &device).into_data().to_vec().unwrap();
        let b: Vec<f32> = host_random::<B, 2>([4, 3], Distribution::Normal(0.0, 1.0), &device).into_data().to_vec().unwrap();
        assert_eq!(a.len(), 12);
        assert_ne!(a, b);
        assert!(a.iter().all(|x| x.is_finite()));
    }

    /// Threads drawing at once, one seed each, each get their seed's numbers every time (the seed and the
    /// draws it governs are one step for the process's generator; noise drawn meanwhile waits), and a
    /// module that draws host noise inside its own initialiser (the normal head weights) does not deadlock.
    #[test]
    fn a_seed_draws_the_same_weights_while_other_threads_draw() {
        let draw = |seed: u64| -> Vec<f32> {
            let device = Default::default();
            let target = LinearConfig::new(32, 32).init::<B>(&device);
            let host = |cpu: &burn::tensor::Device<Host>| {
                let _noise = crate::aggregator::HeadAggregator::<Host>::new(2, 2, crate::aggregator::AggregationInit::Normal, cpu);
                LinearConfig::new(32, 32).init::<Host>(cpu)
            };
            values(&init_on_host(seed, host, target, &device).unwrap())
        };
        let want: Vec<Vec<f32>> = (0..4).map(draw).collect();
        let threads: Vec<_> = (0..4u64)
            .map(|seed| {
                std::thread::spawn(move || {
                    (0..50).all(|_| {
                        let _ = host_random::<B, 1>([7], Distribution::Default, &Default::default());
                        draw(seed) == draw(seed)
                    })
                })
            })
            .collect();
        assert!(threads.into_iter().all(|t| t.join().unwrap()), "a seed drew other weights while other threads drew");
        assert_eq!((0..4).map(draw).collect::<Vec<_>>(), want);
    }
}

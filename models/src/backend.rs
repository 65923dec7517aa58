//! Backend selection: the default is Burn's ndarray CPU backend; `--features cuda` selects burn-cuda with
//! no other change. Every model is generic over `B: Backend`; binaries name [`DefaultBackend`].

#[cfg(not(feature = "cuda"))]
pub type DefaultBackend = burn::backend::NdArray<f32>;
#[cfg(feature = "cuda")]
pub type DefaultBackend = burn::backend::Cuda<f32, i32>;

/// The device binaries run on: the CPU, or the first CUDA GPU.
pub fn default_device() -> burn::tensor::Device<DefaultBackend> {
    Default::default()
}

/// The backend's name, for the provenance of reports.
#[cfg(not(feature = "cuda"))]
pub const NAME: &str = "burn ndarray (CPU)";
#[cfg(feature = "cuda")]
pub const NAME: &str = "burn-cuda (GPU)";

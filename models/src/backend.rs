//! Backend selection: the default is Burn's ndarray CPU backend; `--features cuda` selects burn-cuda and
//! `--features wgpu` Burn's wgpu backend (any Vulkan, Metal or DX12 device, a software Vulkan driver
//! included), with no other change. Every model is generic over `B: Backend`; binaries name
//! [`DefaultBackend`]. With both features on, CUDA is chosen.

pub use chosen::{DefaultBackend, NAME};

/// The backend this build names, and its name for the provenance of reports.
#[cfg(not(any(feature = "cuda", feature = "wgpu")))]
mod chosen {
    pub type DefaultBackend = burn::backend::NdArray<f32>;
    pub const NAME: &str = "burn ndarray (CPU)";
}
#[cfg(feature = "cuda")]
mod chosen {
    pub type DefaultBackend = burn::backend::Cuda<f32, i32>;
    pub const NAME: &str = "burn-cuda (GPU)";
}
#[cfg(all(feature = "wgpu", not(feature = "cuda")))]
mod chosen {
    pub type DefaultBackend = burn::backend::Wgpu<f32, i32>;
    pub const NAME: &str = "burn-wgpu";
}

/// The device binaries run on: the CPU, the first CUDA GPU, or wgpu's default adapter.
pub fn default_device() -> burn::tensor::Device<DefaultBackend> {
    Default::default()
}

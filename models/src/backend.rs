//! Backend selection: the default is Burn's ndarray CPU backend; `--features cuda` selects burn-cuda,
//! `--features wgpu` Burn's wgpu backend (any Vulkan, Metal or DX12 device, a software Vulkan driver
//! included) and `--features flex` Burn's burn-flex CPU backend (which computes in bf16, so a CPU can
//! train under `training.precision: Bf16`; none of arbor's own CPU kernels, which are ndarray's), with no
//! other change. Every model is generic over `B: Backend`; binaries name [`DefaultBackend`]. CUDA wins
//! over wgpu, and either over flex.

pub use chosen::{DefaultBackend, NAME};

/// The backend this build names, and its name for the provenance of reports.
#[cfg(not(any(feature = "cuda", feature = "wgpu", feature = "flex")))]
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

#[cfg(all(feature = "flex", not(any(feature = "cuda", feature = "wgpu"))))]
mod chosen {
    pub type DefaultBackend = burn_flex::Flex;
    pub const NAME: &str = "burn-flex (CPU)";
}

/// The device binaries run on: the CPU, the first CUDA GPU, or wgpu's default adapter.
pub fn default_device() -> burn::tensor::Device<DefaultBackend> {
    Default::default()
}

//! Which of burn-train's execution strategies a schedule asks for: `schedule.devices` names the devices
//! and `schedule.data_parallel` how they share the work ([`DataParallel`]).
//!
//! - `MultiDevice` (burn-train's `ExecutionStrategy::MultiDevice`, optimizer on the first device): any
//!   backend; the one the CPU backend's tests exercise (`crate::parallel`).
//! - `Ddp` (`ExecutionStrategy::DistributedDataParallel`): a replica per device, gradients summed across
//!   devices by an all-reduce in the backward pass. Burn 0.21 implements that all-reduce for CUDA only
//!   (NCCL; wgpu's and the CPU backends' collective operations are not implemented), and within one
//!   process: its `DistributedConfig` names no peer, so it does not span machines. It needs
//!   `--features ddp` (which selects the CUDA backend); otherwise asking for it is an error naming the
//!   feature.
//!
//! Under DDP every device's worker advances the learning-rate schedule once per device at each step
//! (burn-train's DDP epoch), and a device whose slice ran out of batches would wait for the others'
//! all-reduce forever: [`even`] trims the training items to a multiple of the device count.

use burn::tensor::backend::{AutodiffBackend, Device as _, DeviceId};
use burn_train::{ExecutionStrategy, MultiDeviceOptim};

pub use crate::schedule::DataParallel;
use crate::schedule::Schedule;

/// The devices `schedule.devices` names (ids of the backend's first device kind), or the default one.
pub fn devices<B: AutodiffBackend>(schedule: &Schedule) -> Vec<B::Device> {
    match &schedule.devices {
        Some(ids) => ids.iter().map(|&index_id| B::Device::from_id(DeviceId { type_id: 0, index_id })).collect(),
        None => vec![Default::default()],
    }
}

/// The strategy for `devices`; `None` for one device under `MultiDevice` (burn-train's default).
pub fn execution<B: AutodiffBackend>(parallel: DataParallel, devices: Vec<B::Device>) -> anyhow::Result<Option<ExecutionStrategy<B>>> {
    match parallel {
        DataParallel::MultiDevice if devices.len() < 2 => Ok(None),
        DataParallel::MultiDevice => Ok(Some(ExecutionStrategy::MultiDevice(devices, MultiDeviceOptim::OptimMainDevice))),
        DataParallel::Ddp => ddp::<B>(devices).map(Some),
    }
}

/// The first `n x floor(len / n)` items, so that burn-train's split gives every device a slice of the
/// same length (DDP's workers must take the same number of steps). Returns them and how many were left.
pub fn even<I>(mut items: Vec<I>, devices: usize) -> (Vec<I>, usize) {
    let keep = items.len() - items.len() % devices.max(1);
    let left = items.len() - keep;
    items.truncate(keep);
    (items, left)
}

/// Why a build without `--features ddp` runs no `Ddp`.
const NO_DDP: &str = "schedule.data_parallel: Ddp needs a build with `--features ddp` (burn-train's distributed data parallel; \
                      Burn 0.21 runs its all-reduce on CUDA devices only); `MultiDevice` runs on any backend";

/// Whether this build can run `parallel`: `Ddp` needs a build with `--features ddp`; the error says so
/// (`train` asks before any row trains; the Learner would fail at that row's first step).
pub fn ensure_supported(parallel: DataParallel) -> anyhow::Result<()> {
    anyhow::ensure!(parallel != DataParallel::Ddp || cfg!(feature = "ddp"), NO_DDP);
    Ok(())
}

#[cfg(not(feature = "ddp"))]
fn ddp<B: AutodiffBackend>(_devices: Vec<B::Device>) -> anyhow::Result<ExecutionStrategy<B>> {
    anyhow::bail!(NO_DDP)
}

/// DDP on the build's CUDA backend. The trainers are generic over the backend while Burn's DDP needs a
/// backend with collective operations: the strategy is built for the CUDA training backend and handed
/// back as `B`'s when `B` is that backend (any other is an error naming it).
#[cfg(feature = "ddp")]
fn ddp<B: AutodiffBackend>(devices: Vec<B::Device>) -> anyhow::Result<ExecutionStrategy<B>> {
    use anyhow::Context as _;
    use burn::tensor::backend::distributed::{DistributedConfig, ReduceOperation};
    use std::any::Any;
    type Cuda = burn::backend::Autodiff<arbor_models::backend::DefaultBackend>;
    let not_cuda = || format!("schedule.data_parallel: Ddp runs on the CUDA backend, not on {}", std::any::type_name::<B>());
    let devices: Box<dyn Any> = Box::new(devices);
    let devices = devices.downcast::<Vec<burn::tensor::Device<Cuda>>>().ok().with_context(not_cuda)?;
    // Summed, as `MultiDevice` sums its devices' gradients: the same learning rate means the same step.
    let config = DistributedConfig { all_reduce_op: ReduceOperation::Sum };
    let strategy: Box<dyn Any> = Box::new(ExecutionStrategy::<Cuda>::ddp(*devices, config));
    strategy.downcast::<ExecutionStrategy<B>>().map(|s| *s).ok().with_context(not_cuda)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Autodiff;

    type A = Autodiff<arbor_models::backend::DefaultBackend>;

    #[test]
    fn one_device_is_the_default_strategy_and_more_are_multi_device() {
        let one = devices::<A>(&Schedule::default());
        assert!(execution::<A>(DataParallel::MultiDevice, one).unwrap().is_none());
        let two = devices::<A>(&Schedule { devices: Some(vec![0, 0]), ..Default::default() });
        assert!(matches!(execution::<A>(DataParallel::MultiDevice, two), Ok(Some(ExecutionStrategy::MultiDevice(d, _))) if d.len() == 2));
    }

    #[cfg(not(feature = "ddp"))]
    #[test]
    fn ddp_without_its_feature_names_the_feature() {
        let two = devices::<A>(&Schedule { devices: Some(vec![0, 0]), ..Default::default() });
        let err = execution::<A>(DataParallel::Ddp, two).err().expect("no DDP in this build").to_string();
        assert!(err.contains("--features ddp") && err.contains("CUDA"), "{err}");
        assert_eq!(ensure_supported(DataParallel::Ddp).unwrap_err().to_string(), err);
        ensure_supported(DataParallel::MultiDevice).unwrap();
    }

    #[cfg(feature = "ddp")]
    #[test]
    fn ddp_builds_burn_trains_distributed_strategy_on_cuda() {
        let two = devices::<A>(&Schedule { devices: Some(vec![0, 1]), ..Default::default() });
        assert!(matches!(execution::<A>(DataParallel::Ddp, two), Ok(Some(ExecutionStrategy::DistributedDataParallel { .. }))));
        ensure_supported(DataParallel::Ddp).unwrap();
    }

    #[test]
    fn even_keeps_a_multiple_of_the_device_count() {
        assert_eq!(even((0..7).collect(), 2), ((0..6).collect(), 1));
        assert_eq!(even((0..6).collect(), 3), ((0..6).collect(), 0));
        assert_eq!(even((0..1).collect::<Vec<i32>>(), 2), (vec![], 1));
        assert_eq!(even((0..5).collect(), 1), ((0..5).collect(), 0));
    }
}

//! The one training contract every trainer's config nests (`schedule: (...)` in an experiment file): how
//! long a training runs, its seed, the learning-rate schedule around each trainer's own rates (linear
//! warmup over `warmup_fraction` of the steps, then linear decay to 0), AdamW's weight decay, gradient
//! clipping by norm, how often a checkpoint is written, and early stopping on the validation split. Both
//! loops read it: the skeleton ([`crate::skeleton`]) and burn-train's Learner ([`crate::learner`]).

use serde::{Deserialize, Serialize};

/// `schedule: (epochs: 3, seed: 42, warmup_fraction: 0.05, weight_decay: 0.01, grad_clip: 1.0,
/// checkpoint_every: 50, patience: None, devices: None, data_parallel: MultiDevice)`; fields left out
/// take these defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Schedule {
    /// Passes over the training examples (for SmartChunk's planner: each phase, SFT and GRPO).
    pub epochs: usize,
    /// Every draw of the training (initialisation, batch order, sampling) follows it.
    pub seed: u64,
    pub warmup_fraction: f64,
    pub weight_decay: f32,
    pub grad_clip: f32,
    /// A checkpoint every this many steps (the skeleton; the Learner checkpoints every epoch) and at the end.
    pub checkpoint_every: usize,
    /// Stop after this many epochs without a better validation figure (`None`: run every epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patience: Option<usize>,
    /// Data parallel over these devices of the backend (`[0, 1]`: the first two GPUs under `--features
    /// cuda`; the CPU backend has one device, which `[0, 0]` uses twice): burn-train's
    /// `ExecutionStrategy::MultiDevice`, each device a slice of every epoch's examples and `batch_size`
    /// of them per step, their gradients summed on the first device for one optimizer step. The trainers on
    /// burn-train's Learner read it (SmartChunk's compressor, the planner's SFT, and the encoder's
    /// fine-tuning of the dense control, which it moves onto the Learner: `crate::parallel`); the skeleton's
    /// other trainers refuse more than one device. `None`: the default device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<Vec<u16>>,
    /// How the Learner runs data parallel over `devices` (`crate::strategy`): `MultiDevice` (the default)
    /// or `Ddp`, burn-train's distributed data parallel (a replica of the model and its optimizer per
    /// device, gradients all-reduced after every backward pass; a build with `--features ddp`, CUDA only
    /// in Burn 0.21).
    #[serde(skip_serializing_if = "DataParallel::is_default")]
    pub data_parallel: DataParallel,
    /// Exactly this many optimizer steps, the last epoch cut short (`None`: every step of `epochs`
    /// epochs). arbor's own loop reads it, not the Learner; a matched control whose method's steps are
    /// known only once it has trained (SmartChunk's planner, over its own pseudo-labelled examples) runs
    /// that many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<usize>,
}

/// The data-parallel strategy of burn-train's Learner over `schedule.devices`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum DataParallel {
    /// `ExecutionStrategy::MultiDevice`: one model on the first device; each step every device runs the
    /// model on its batch and its gradients are summed on the first, which takes the optimizer step.
    #[default]
    MultiDevice,
    /// `ExecutionStrategy::DistributedDataParallel`: a worker thread per device with its own model and
    /// optimizer; each backward pass sums the gradients across devices (an all-reduce), so every replica
    /// takes the same step. Burn 0.21 runs the all-reduce on CUDA (NCCL) only, within one process: it does
    /// not span machines.
    Ddp,
}

impl DataParallel {
    fn is_default(&self) -> bool {
        *self == DataParallel::default()
    }
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            epochs: 3,
            seed: 42,
            warmup_fraction: 0.05,
            weight_decay: 0.01,
            grad_clip: 1.0,
            checkpoint_every: 50,
            patience: None,
            devices: None,
            data_parallel: DataParallel::MultiDevice,
            steps: None,
        }
    }
}

/// The settings that moved into `schedule`, for the error an experiment file in the old shape gets.
pub const MOVED: [&str; 7] = ["epochs", "seed", "warmup_fraction", "weight_decay", "grad_clip", "checkpoint_every", "patience"];

impl Schedule {
    /// This schedule over `per_epoch` steps an epoch with a floor of `min_steps` steps: `epochs`, or more
    /// to reach the floor (a small training split; SmartChunk's planner and its control read it).
    pub fn at_least(&self, min_steps: usize, per_epoch: usize) -> Schedule {
        Schedule { epochs: self.epochs.max(min_steps.div_ceil(per_epoch.max(1))), ..self.clone() }
    }

    /// The steps a run of `per_epoch` steps an epoch takes: `steps`, else `epochs` epochs of them.
    pub fn total(&self, per_epoch: usize) -> usize {
        self.steps.unwrap_or(per_epoch * self.epochs)
    }

    /// Rejects settings that cannot run, naming the field.
    pub fn check(&self) -> Result<(), String> {
        if self.steps == Some(0) {
            return Err("schedule.steps must be at least 1 (or None: every epoch's)".into());
        }
        if self.epochs == 0 || self.checkpoint_every == 0 {
            return Err("schedule.epochs and schedule.checkpoint_every must be at least 1".into());
        }
        if self.patience == Some(0) {
            return Err("schedule.patience must be at least 1 epoch (or None)".into());
        }
        if self.devices.as_ref().is_some_and(Vec::is_empty) {
            return Err("schedule.devices must name at least one device (or None: the default device)".into());
        }
        if self.data_parallel == DataParallel::Ddp && self.devices.is_none() {
            return Err("schedule.data_parallel: Ddp needs schedule.devices (the devices to run a replica on)".into());
        }
        if !(0.0..1.0).contains(&self.warmup_fraction) {
            return Err(format!("schedule.warmup_fraction must be in [0, 1), got {}", self.warmup_fraction));
        }
        Ok(())
    }

    /// The learning-rate factor at `step` of `total`: linear warmup, then linear decay to 0.
    pub fn factor(&self, step: usize, total: usize) -> f64 {
        let warmup = ((self.warmup_fraction * total as f64).ceil() as usize).max(1);
        if step < warmup { (step + 1) as f64 / warmup as f64 } else { ((total - step) as f64 / (total - warmup).max(1) as f64).clamp(0.0, 1.0) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_then_linear_decay() {
        let s = Schedule { warmup_fraction: 0.1, ..Schedule::default() };
        let f: Vec<f64> = (0..100).map(|step| s.factor(step, 100)).collect();
        assert_eq!(f[0], 0.1);
        assert_eq!(f[9], 1.0);
        assert!(f[10] <= 1.0 && f[10] > f[50] && f[50] > f[99]);
        assert!(f.iter().all(|&x| (0.0..=1.0).contains(&x)));
    }

    #[test]
    fn settings_that_cannot_run_are_named() {
        assert!(Schedule { epochs: 0, ..Default::default() }.check().unwrap_err().contains("schedule.epochs"));
        assert!(Schedule { patience: Some(0), ..Default::default() }.check().unwrap_err().contains("schedule.patience"));
        assert!(Schedule { warmup_fraction: 1.0, ..Default::default() }.check().unwrap_err().contains("warmup_fraction"));
        assert!(Schedule { devices: Some(vec![]), ..Default::default() }.check().unwrap_err().contains("schedule.devices"));
        let ddp = Schedule { data_parallel: DataParallel::Ddp, ..Default::default() };
        assert!(ddp.check().unwrap_err().contains("Ddp needs schedule.devices"));
        assert!(Schedule { devices: Some(vec![0, 1]), ..ddp }.check().is_ok());
        assert!(Schedule::default().check().is_ok());
    }
}

//! The one training contract every trainer's config nests (`schedule: (...)` in an experiment file): how
//! long a training runs, its seed, the learning-rate schedule around each trainer's own rates (linear
//! warmup over `warmup_fraction` of the steps, then linear decay to 0), AdamW's weight decay, gradient
//! clipping by norm, how often a checkpoint is written, and early stopping on the validation split. Both
//! loops read it: the skeleton ([`crate::skeleton`]) and burn-train's Learner ([`crate::learner`]).

use serde::{Deserialize, Serialize};

/// `schedule: (epochs: 3, seed: 42, warmup_fraction: 0.05, weight_decay: 0.01, grad_clip: 1.0,
/// checkpoint_every: 50, patience: None)`; fields left out take these defaults.
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
        }
    }
}

/// The settings that moved into `schedule`, for the error an experiment file in the old shape gets.
pub const MOVED: [&str; 7] = ["epochs", "seed", "warmup_fraction", "weight_decay", "grad_clip", "checkpoint_every", "patience"];

impl Schedule {
    /// Rejects settings that cannot run, naming the field.
    pub fn check(&self) -> Result<(), String> {
        if self.epochs == 0 || self.checkpoint_every == 0 {
            return Err("schedule.epochs and schedule.checkpoint_every must be at least 1".into());
        }
        if self.patience == Some(0) {
            return Err("schedule.patience must be at least 1 epoch (or None)".into());
        }
        if self.devices.as_ref().is_some_and(Vec::is_empty) {
            return Err("schedule.devices must name at least one device (or None: the default device)".into());
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
        assert!(Schedule::default().check().is_ok());
    }
}

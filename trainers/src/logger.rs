//! Training logs: one JSON object per logged step in `log.jsonl`, and TensorBoard scalars under `tb/`
//! (event files TensorBoard itself reads).

use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value};
use tensorboard_rs::summary_writer::SummaryWriter;

pub struct Logger {
    jsonl: std::fs::File,
    tb: SummaryWriter,
}

impl Logger {
    /// Opens the logs of a run; when resuming from `resume_step`, log lines after it are dropped (they
    /// belong to the steps about to be redone).
    pub fn open(run_dir: &Path, resume_step: Option<usize>) -> anyhow::Result<Self> {
        let path = run_dir.join("log.jsonl");
        if let (Some(step), true) = (resume_step, path.exists()) {
            let kept: String = std::fs::read_to_string(&path)?
                .lines()
                .filter(|l| serde_json::from_str::<Value>(l).ok().and_then(|v| v["step"].as_u64()).is_some_and(|s| s as usize <= step))
                .map(|l| format!("{l}\n"))
                .collect();
            arbor_files::atomic_write(&path, kept.as_bytes())?;
        }
        let jsonl = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(Logger { jsonl, tb: SummaryWriter::new(run_dir.join("tb")) })
    }

    /// Logs scalars of one step to both sinks.
    pub fn log(&mut self, step: usize, scalars: &[(&str, f64)]) -> anyhow::Result<()> {
        let mut line = Map::new();
        line.insert("step".into(), step.into());
        for &(name, value) in scalars {
            line.insert(name.into(), value.into());
            self.tb.add_scalar(name, value as f32, step);
        }
        writeln!(self.jsonl, "{}", Value::Object(line))?;
        Ok(())
    }

    pub fn flush(&mut self) -> anyhow::Result<()> {
        self.tb.flush();
        self.jsonl.sync_data()?;
        Ok(())
    }
}

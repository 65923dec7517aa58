//! Progress bars for every step that takes more than a few seconds (hidden when stderr is not a terminal).

use indicatif::{ProgressBar, ProgressStyle};

pub fn bar(len: usize, what: &str) -> ProgressBar {
    let pb = ProgressBar::new(len as u64);
    pb.set_style(
        ProgressStyle::with_template("{msg:>18} [{bar:40}] {pos}/{len} {per_sec} eta {eta}").expect("the template is valid").progress_chars("=> "),
    );
    pb.set_message(what.to_owned());
    pb
}

/// Runs a training under a bar: `train` gets the `(done, total)` callback the trainers report steps to.
pub fn with_bar<T>(what: &str, train: impl FnOnce(&mut dyn FnMut(usize, usize)) -> anyhow::Result<T>) -> anyhow::Result<T> {
    let pb = bar(0, what);
    let out = train(&mut |done, total| {
        pb.set_length(total as u64);
        pb.set_position(done as u64);
    });
    pb.finish_and_clear();
    out
}

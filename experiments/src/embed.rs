//! `arbor embed`: lines of text in, JSONL `{"text", "embedding"}` out, one line per input line, in order.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::Context;
use arbor_models::pooling::Role;
use arbor_models::{DefaultBackend, EncoderConfig, ModelSource, default_device};
use clap::Parser;
use serde::Serialize;

#[derive(Debug, Parser)]
pub struct EmbedArgs {
    /// Read lines from this file (default: standard input)
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// A Hugging Face model directory, or all-mpnet-base-v2 (fetched into $ARBOR_HOME; default:
    /// all-MiniLM-L6-v2, fetched likewise)
    #[arg(long)]
    pub model: Option<PathBuf>,
    #[arg(long, default_value_t = 32)]
    pub batch_size: usize,
    /// Embed the lines as queries (the model's query prompt before each; default: as passages, with
    /// its passage prompt). Models without prompts embed both alike.
    #[arg(long)]
    pub queries: bool,
}

#[derive(Serialize)]
struct Line<'a> {
    text: &'a str,
    embedding: &'a [f32],
}

pub fn embed(args: &EmbedArgs) -> anyhow::Result<()> {
    let lines: Vec<String> = match &args.input {
        Some(path) => {
            let file = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
            read_lines(std::io::BufReader::new(file)).with_context(|| format!("cannot read {}", path.display()))?
        }
        None => read_lines(std::io::stdin().lock()).context("cannot read standard input")?,
    };
    let config = EncoderConfig {
        model: args.model.as_deref().map_or(ModelSource::AllMiniLmL6V2, ModelSource::from_arg),
        batch_size: args.batch_size.max(1),
        ..EncoderConfig::default()
    };
    let encoder = arbor_models::SentenceEncoder::<DefaultBackend>::load(&config, &default_device())?;
    let texts: Vec<&str> = lines.iter().map(String::as_str).collect();
    let pb = crate::progress::bar(texts.len(), "embedding");
    let role = if args.queries { Role::Query } else { Role::Passage };
    let vectors = encoder.embed_as(encoder.kernel(), role, &texts, config.batch_size, &mut |n| pb.inc(n as u64));
    pb.finish_and_clear();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (text, embedding) in texts.iter().zip(&vectors) {
        serde_json::to_writer(&mut out, &Line { text, embedding })?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

/// Lines without their line ending; a line that is not UTF-8 is an error naming its number.
fn read_lines(reader: impl BufRead) -> anyhow::Result<Vec<String>> {
    reader
        .split(b'\n')
        .enumerate()
        .map(|(i, line)| {
            let mut bytes = line?;
            if bytes.last() == Some(&b'\r') {
                bytes.pop();
            }
            String::from_utf8(bytes).map_err(|e| anyhow::anyhow!("line {} is not valid UTF-8 (byte {})", i + 1, e.utf8_error().valid_up_to()))
        })
        .collect()
}

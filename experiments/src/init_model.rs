//! `arbor init-model`: a randomly initialised encoder of a family and shape given by a config.json alone
//! ([`arbor_models::bert::init::random_bert`]), written as a Hugging Face folder with a tokenizer borrowed
//! from another folder, so that `arbor bench-step` and PyTorch's side (scripts/bench_torch_step.py) time
//! that family's step where its pretrained weights cannot be carried (a lent GPU: docs/backends.md).

use std::path::PathBuf;

use anyhow::Context;
use arbor_files::atomic_write;
use arbor_models::DefaultBackend;
use arbor_models::bert::BertConfig;
use arbor_models::bert::init::random_bert;
use arbor_models::save::bert_safetensors;

use crate::export::{TOKENIZER_FILES, write_into_place};

#[derive(clap::Args, Debug)]
pub struct InitModelArgs {
    /// The config.json of the family and shape (experiments/fixtures/configs/ holds all-mpnet-base-v2's)
    pub config: PathBuf,
    /// A model folder whose tokenizer files are copied (its vocabulary must fit the config's `vocab_size`)
    #[arg(long)]
    pub tokenizer: PathBuf,
    /// The folder written (it must not exist)
    #[arg(long)]
    pub to: PathBuf,
    /// The seed the weights are drawn from
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The token limit written into sentence_bert_config.json (default: what the position table holds)
    #[arg(long)]
    pub max_seq_length: Option<usize>,
}

pub fn init_model(args: &InitModelArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.config).with_context(|| format!("cannot read {}", args.config.display()))?;
    let config: BertConfig = serde_json::from_str(&text).with_context(|| format!("{} is not a model config.json", args.config.display()))?;
    let family = config.family().map_err(|m| anyhow::anyhow!("{}: {m}", args.config.display()))?;
    let vocabulary = arbor_models::encoder::vocabulary_size(&args.tokenizer)?;
    anyhow::ensure!(
        vocabulary <= config.vocab_size,
        "{}'s tokenizer has {vocabulary} tokens, more than the config's vocab_size {}",
        args.tokenizer.display(),
        config.vocab_size
    );
    anyhow::ensure!(!args.to.exists(), "{} exists: name a new folder", args.to.display());
    let bert =
        random_bert::<DefaultBackend>(&config, args.seed, &Default::default()).map_err(|m| anyhow::anyhow!("{}: {m}", args.config.display()))?;
    let limit = args.max_seq_length.unwrap_or(config.max_tokens()).min(config.max_tokens());
    write_into_place(&args.to, |dir| {
        std::fs::write(dir.join("config.json"), &text)?;
        for file in TOKENIZER_FILES {
            let from = args.tokenizer.join(file);
            if from.is_file() {
                std::fs::copy(&from, dir.join(file)).with_context(|| format!("cannot copy {}", from.display()))?;
            }
        }
        std::fs::write(dir.join("sentence_bert_config.json"), serde_json::json!({"max_seq_length": limit, "do_lower_case": false}).to_string())?;
        Ok(atomic_write(&dir.join("model.safetensors"), &bert_safetensors(&bert, family, None)?)?)
    })?;
    eprintln!(
        "wrote {}: a random {} encoder ({} layers, {} wide, {} heads, {limit} tokens read), seed {}",
        args.to.display(),
        family.model_type(),
        config.num_hidden_layers,
        config.hidden_size,
        config.num_attention_heads,
        args.seed
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The tiny MPNet fixture's config drawn anew with its own tokenizer: a folder the encoder loads, of
    /// the family and shape asked for; a vocabulary larger than the config's is refused.
    #[test]
    fn a_random_encoder_of_a_family_is_written_as_a_folder_the_encoder_loads() {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/tests/fixtures/tiny-mpnet");
        let out = tempfile::tempdir().unwrap();
        let to = out.path().join("random-mpnet");
        let args = InitModelArgs { config: fixture.join("config.json"), tokenizer: fixture.clone(), to: to.clone(), seed: 3, max_seq_length: None };
        init_model(&args).unwrap();
        let config = arbor_models::EncoderConfig { model: arbor_models::ModelSource::Dir(to.clone()), ..Default::default() };
        let encoder = arbor_models::SentenceEncoder::<DefaultBackend>::load(&config, &Default::default()).unwrap();
        assert_eq!(encoder.config.family(), Ok(arbor_models::bert::Family::Mpnet));
        assert!(encoder.bert.relative_attention_bias.is_some() && encoder.bert.embeddings.token_type_embeddings.is_none());
        assert_eq!(encoder.max_seq_length(), 64);
        let v = encoder.embed(&["a random encoder still embeds"], 1, &mut |_| {});
        assert!((v[0].iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5);
        assert!(init_model(&args).unwrap_err().to_string().contains("exists"));
        let mut small: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture.join("config.json")).unwrap()).unwrap();
        small["vocab_size"] = 10.into();
        std::fs::write(out.path().join("small.json"), small.to_string()).unwrap();
        let args = InitModelArgs { config: out.path().join("small.json"), to: out.path().join("x"), ..args };
        assert!(init_model(&args).unwrap_err().to_string().contains("more than the config's vocab_size 10"));
    }
}

//! What a sentence-transformers folder asks of the encoder, checked before arbor reads it.
//!
//! arbor embeds one way: the transformer's last hidden states, the mean over the real tokens, L2
//! normalisation (sentence-transformers' Transformer -> Pooling(mean) -> Normalize). A folder whose
//! `modules.json` asks for more would give other vectors under sentence-transformers than under arbor, so
//! it is refused with what it asks for: another pooling (`1_Pooling/config.json`: CLS, max, last token,
//! ...), a module arbor does not run (a Dense projection, ...), or a prompt applied by default
//! (`config_sentence_transformers.json`'s `default_prompt_name`). A folder without `modules.json` (a plain
//! Hugging Face BERT) is read as arbor reads it, mean-pooled. Normalize may be present or not: arbor scores
//! by cosine either way. arbor's commands load their encoder through [`load`]; the check computes nothing
//! an artefact holds, so it lives outside the encoder's own code (whose every change versions the
//! cached embeddings).

use std::path::Path;

use burn::tensor::backend::Backend;
use serde_json::Value;

use crate::encoder::{EncoderConfig, SentenceEncoder};
use crate::error::ModelError;

/// The encoder `config` names, its folder [`check`]ed first.
pub fn load<B: Backend>(config: &EncoderConfig, device: &B::Device) -> Result<SentenceEncoder<B>, ModelError> {
    let dir = crate::hub::resolve(&config.model)?;
    check(&dir.path)?;
    SentenceEncoder::load_dir(&dir, config.max_seq_length, device)
}

/// The module types arbor's embedding path computes.
const TRANSFORMER: &str = "Transformer";
const POOLING: &str = "Pooling";
const NORMALIZE: &str = "Normalize";

fn read(path: &Path) -> Result<Option<Value>, ModelError> {
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).map_err(|e| ModelError::io(path, e))?;
    serde_json::from_str(&text).map(Some).map_err(|e| ModelError::weights(path, e.to_string()))
}

/// Refuses a model folder whose sentence-transformers pipeline is not arbor's (see the module doc).
pub fn check(dir: &Path) -> Result<(), ModelError> {
    let unsupported = |path: &Path, what: String| {
        ModelError::weights(
            path,
            format!("{what}; arbor embeds by the mean of the tokens, L2-normalised, with no prompt, so its vectors would not be this model's"),
        )
    };
    let modules_path = dir.join("modules.json");
    if let Some(modules) = read(&modules_path)? {
        let modules = modules.as_array().ok_or_else(|| ModelError::weights(&modules_path, "not a list of modules"))?;
        for module in modules {
            let kind = module["type"].as_str().unwrap_or_default();
            let name = kind.rsplit('.').next().unwrap_or_default();
            match name {
                TRANSFORMER | NORMALIZE => {}
                POOLING => {
                    let path = dir.join(module["path"].as_str().unwrap_or_default()).join("config.json");
                    let config = read(&path)?.ok_or_else(|| ModelError::weights(&path, "the Pooling module has no config.json"))?;
                    let modes: Vec<&str> = config
                        .as_object()
                        .into_iter()
                        .flatten()
                        .filter(|(k, v)| k.starts_with("pooling_mode_") && v.as_bool() == Some(true))
                        .map(|(k, _)| k.trim_start_matches("pooling_mode_"))
                        .collect();
                    if modes != ["mean_tokens"] {
                        return Err(unsupported(&path, format!("the model pools by {modes:?}")));
                    }
                }
                _ => return Err(unsupported(&modules_path, format!("the pipeline has a {kind:?} module"))),
            }
        }
    }
    let prompts_path = dir.join("config_sentence_transformers.json");
    if let Some(config) = read(&prompts_path)?
        && let Some(prompt) = config["default_prompt_name"].as_str()
    {
        return Err(unsupported(&prompts_path, format!("the model prepends its prompt {prompt:?} by default")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn folder(modules: Option<Value>, pooling: Value, st: Value) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        if let Some(m) = modules {
            std::fs::write(dir.path().join("modules.json"), m.to_string()).unwrap();
        }
        std::fs::create_dir(dir.path().join("1_Pooling")).unwrap();
        std::fs::write(dir.path().join("1_Pooling/config.json"), pooling.to_string()).unwrap();
        std::fs::write(dir.path().join("config_sentence_transformers.json"), st.to_string()).unwrap();
        dir
    }

    fn pipeline(extra: &[&str]) -> Value {
        let mut m = vec![
            json!({"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}),
            json!({"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}),
        ];
        m.extend(extra.iter().map(|t| json!({"path": "2", "type": format!("sentence_transformers.models.{t}")})));
        Value::Array(m)
    }

    fn pooling(mode: &str) -> Value {
        let mut p = json!({"word_embedding_dimension": 384, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": false, "pooling_mode_max_tokens": false});
        p[format!("pooling_mode_{mode}")] = json!(true);
        p
    }

    fn refusal(dir: &tempfile::TempDir) -> String {
        check(dir.path()).unwrap_err().to_string()
    }

    #[test]
    fn arbors_own_pipeline_and_a_plain_folder_pass() {
        let none = json!({"prompts": {"query": "query: "}, "default_prompt_name": null});
        check(folder(Some(pipeline(&["Normalize"])), pooling("mean_tokens"), none.clone()).path()).unwrap();
        check(folder(Some(pipeline(&[])), pooling("mean_tokens"), none.clone()).path()).unwrap();
        check(folder(None, pooling("cls_token"), none).path()).unwrap();
    }

    #[test]
    fn another_pooling_a_module_arbor_lacks_and_a_default_prompt_are_refused() {
        let none = json!({"default_prompt_name": null});
        let err = refusal(&folder(Some(pipeline(&["Normalize"])), pooling("cls_token"), none.clone()));
        assert!(err.contains("1_Pooling") && err.contains("cls_token") && err.contains("mean of the tokens"), "{err}");
        let err = refusal(&folder(Some(pipeline(&["Dense", "Normalize"])), pooling("mean_tokens"), none));
        assert!(err.contains("modules.json") && err.contains("Dense"), "{err}");
        let err =
            refusal(&folder(Some(pipeline(&[])), pooling("mean_tokens"), json!({"prompts": {"query": "query: "}, "default_prompt_name": "query"})));
        assert!(err.contains("config_sentence_transformers.json") && err.contains("\"query\""), "{err}");
    }
}

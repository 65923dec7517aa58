//! What a sentence-transformers folder asks of the encoder: its pooling and its prompts, read before arbor
//! loads it, and the modules arbor does not run, refused.
//!
//! arbor embeds as sentence-transformers' Transformer -> Pooling -> Normalize does: the transformer's last
//! hidden states, pooled by the folder's mode ([`Pooling`]: mean, CLS or last token, from
//! `1_Pooling/config.json` in either of sentence-transformers' spellings), L2-normalised, each text read
//! with its role's prompt ([`Prompts`], from `config_sentence_transformers.json`: "query" for queries;
//! "document", else "passage", else "corpus" for passages; the `default_prompt_name`'s prompt for a role
//! without one). A folder that asks for more is refused, naming the file: another pooling (max, weighted
//! mean, ...), a module arbor does not run (a Dense projection, ...), `include_prompt: false` under mean
//! pooling with a prompt (the prompt's tokens left out of the mean). A folder without `modules.json` (a
//! plain Hugging Face BERT) is read mean-pooled, without prompts. Normalize may be present or not: arbor
//! scores by cosine either way. The experiment's `encoder.pooling` and `encoder.prompts` replace what the
//! folder says ([`Pipeline::resolve`]); what is used is part of the encoder's fingerprint.

use std::path::Path;

use serde_json::Value;

use crate::encoder::EncoderConfig;
use crate::error::ModelError;
use crate::pooling::{Pooling, Prompts};

/// How a folder's vectors are made: its pooling and its prompts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pipeline {
    pub pooling: Pooling,
    pub prompts: Prompts,
}

impl Pipeline {
    /// The pipeline the folder asks for (see the module doc) with the experiment's settings in its place where it gives them.
    pub fn resolve(dir: &Path, config: &EncoderConfig) -> Result<Self, ModelError> {
        let folder = read(dir)?;
        let pipeline = Pipeline { pooling: config.pooling.unwrap_or(folder.pooling), prompts: config.prompts.clone().unwrap_or(folder.prompts) };
        if let Some(false) = folder.include_prompt
            && pipeline.pooling == Pooling::Mean
            && !pipeline.prompts.is_empty()
        {
            return Err(unsupported(
                &dir.join("modules.json"),
                "the Pooling module leaves the prompt out of the mean (include_prompt: false)".into(),
            ));
        }
        Ok(pipeline)
    }

    /// What the fingerprint adds: nothing for mean pooling without prompts (arbor's vectors before
    /// pooling was a setting), else the mode and both prompts.
    pub fn key(&self) -> String {
        match *self == Pipeline::default() {
            true => String::new(),
            false => format!("pooling={};query={:?};passage={:?}", self.pooling.name(), self.prompts.query, self.prompts.passage),
        }
    }
}

/// The module types arbor's embedding path computes.
const TRANSFORMER: &str = "Transformer";
const POOLING: &str = "Pooling";
const NORMALIZE: &str = "Normalize";

fn read_json(path: &Path) -> Result<Option<Value>, ModelError> {
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).map_err(|e| ModelError::io(path, e))?;
    serde_json::from_str(&text).map(Some).map_err(|e| ModelError::weights(path, e.to_string()))
}

fn unsupported(path: &Path, what: String) -> ModelError {
    ModelError::weights(path, format!("{what}; arbor does not compute it, so its vectors would not be this model's"))
}

/// What a folder says, before the experiment's settings: its pooling, prompts, and whether the pooling reads the prompt.
struct Folder {
    pooling: Pooling,
    prompts: Prompts,
    include_prompt: Option<bool>,
}

/// The pipeline a model folder asks for (see the module doc), or why arbor cannot compute it.
fn read(dir: &Path) -> Result<Folder, ModelError> {
    let mut folder = Folder { pooling: Pooling::Mean, prompts: Prompts::default(), include_prompt: None };
    let modules_path = dir.join("modules.json");
    if let Some(modules) = read_json(&modules_path)? {
        let modules = modules.as_array().ok_or_else(|| ModelError::weights(&modules_path, "not a list of modules"))?;
        for module in modules {
            let kind = module["type"].as_str().unwrap_or_default();
            match kind.rsplit('.').next().unwrap_or_default() {
                TRANSFORMER | NORMALIZE => {}
                POOLING => {
                    let path = dir.join(module["path"].as_str().unwrap_or_default()).join("config.json");
                    let config = read_json(&path)?.ok_or_else(|| ModelError::weights(&path, "the Pooling module has no config.json"))?;
                    folder.pooling = pooling_of(&config).map_err(|what| unsupported(&path, what))?;
                    folder.include_prompt = config["include_prompt"].as_bool();
                }
                _ => return Err(unsupported(&modules_path, format!("the pipeline has a {kind:?} module"))),
            }
        }
    }
    if let Some(config) = read_json(&dir.join("config_sentence_transformers.json"))? {
        let prompt = |name: &str| config["prompts"][name].as_str().map(str::to_owned);
        let default = config["default_prompt_name"].as_str().and_then(prompt).unwrap_or_default();
        folder.prompts = Prompts {
            query: prompt("query").unwrap_or_else(|| default.clone()),
            passage: ["document", "passage", "corpus"].into_iter().find_map(prompt).unwrap_or(default),
        };
    }
    Ok(folder)
}

/// The one mode a Pooling config turns on: `pooling_mode: "cls"` (sentence-transformers 6) or
/// `pooling_mode_cls_token: true` (before).
fn pooling_of(config: &Value) -> Result<Pooling, String> {
    let modes: Vec<&str> = match config["pooling_mode"].as_str() {
        Some(mode) => vec![mode],
        None => config
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| k.starts_with("pooling_mode_") && v.as_bool() == Some(true))
            .map(|(k, _)| k.trim_start_matches("pooling_mode_"))
            .collect(),
    };
    match modes.as_slice() {
        [mode] => Pooling::from_name(mode).ok_or_else(|| format!("the model pools by {mode:?}")),
        _ => Err(format!("the model pools by {modes:?}, not one of mean, cls, lasttoken")),
    }
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
        read(dir.path()).err().expect("refused").to_string()
    }

    fn pipeline_of(dir: &tempfile::TempDir, config: &EncoderConfig) -> Pipeline {
        Pipeline::resolve(dir.path(), config).unwrap()
    }

    #[test]
    fn arbors_own_pipeline_a_plain_folder_and_the_fields_pooling_and_prompts() {
        let none = json!({"prompts": {}, "default_prompt_name": null});
        let plain = EncoderConfig::default();
        assert_eq!(pipeline_of(&folder(Some(pipeline(&["Normalize"])), pooling("mean_tokens"), none.clone()), &plain), Pipeline::default());
        assert_eq!(pipeline_of(&folder(Some(pipeline(&[])), pooling("mean_tokens"), none.clone()), &plain), Pipeline::default());
        assert_eq!(pipeline_of(&folder(None, pooling("cls_token"), none), &plain), Pipeline::default(), "no modules.json: mean");
        let st6 = json!({"embedding_dimension": 384, "pooling_mode": "lasttoken", "include_prompt": true});
        let prompts = json!({"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": null});
        let got = pipeline_of(&folder(Some(pipeline(&["Normalize"])), st6, prompts), &plain);
        let want = Prompts { query: "query: ".into(), passage: "passage: ".into() };
        assert_eq!(got, Pipeline { pooling: Pooling::LastToken, prompts: want.clone() });
        assert!(got.key().contains("lasttoken") && got.key().contains("passage: "), "{}", got.key());
        assert_eq!(Pipeline::default().key(), "", "the default adds nothing to the fingerprint");
    }

    #[test]
    fn a_roles_prompt_falls_back_to_the_default_prompt_and_documents_come_first() {
        let plain = EncoderConfig::default();
        let st = json!({"prompts": {"query": "q: ", "corpus": "c: ", "document": "d: ", "all": "x: "}, "default_prompt_name": "all"});
        let got = pipeline_of(&folder(Some(pipeline(&[])), pooling("cls_token"), st), &plain);
        assert_eq!(got, Pipeline { pooling: Pooling::Cls, prompts: Prompts { query: "q: ".into(), passage: "d: ".into() } });
        let st = json!({"prompts": {"all": "x: "}, "default_prompt_name": "all"});
        let got = pipeline_of(&folder(Some(pipeline(&[])), pooling("mean_tokens"), st), &plain);
        assert_eq!(got.prompts, Prompts { query: "x: ".into(), passage: "x: ".into() });
    }

    #[test]
    fn the_experiments_settings_replace_the_folders() {
        let st = json!({"prompts": {"query": "q: "}, "default_prompt_name": null});
        let dir = folder(Some(pipeline(&[])), pooling("cls_token"), st);
        let config = EncoderConfig { pooling: Some(Pooling::Mean), prompts: Some(Prompts::default()), ..EncoderConfig::default() };
        assert_eq!(pipeline_of(&dir, &config), Pipeline::default());
    }

    #[test]
    fn a_pooling_or_module_arbor_lacks_and_a_prompt_left_out_of_the_mean_are_refused() {
        let none = json!({"default_prompt_name": null});
        let err = refusal(&folder(Some(pipeline(&["Normalize"])), pooling("max_tokens"), none.clone()));
        assert!(err.contains("1_Pooling") && err.contains("max_tokens") && err.contains("does not compute"), "{err}");
        let err = refusal(&folder(Some(pipeline(&["Dense", "Normalize"])), pooling("mean_tokens"), none.clone()));
        assert!(err.contains("modules.json") && err.contains("Dense"), "{err}");
        let mut both = pooling("mean_tokens");
        both["pooling_mode_cls_token"] = json!(true);
        let err = refusal(&folder(Some(pipeline(&[])), both, none));
        assert!(err.contains("cls_token") && err.contains("mean_tokens"), "{err}");
        let left_out = |mode: &str| json!({"embedding_dimension": 8, "pooling_mode": mode, "include_prompt": false});
        let st = json!({"prompts": {"query": "q: "}, "default_prompt_name": null});
        let err =
            Pipeline::resolve(folder(Some(pipeline(&[])), left_out("mean"), st.clone()).path(), &EncoderConfig::default()).unwrap_err().to_string();
        assert!(err.contains("include_prompt"), "{err}");
        Pipeline::resolve(folder(Some(pipeline(&[])), left_out("cls"), st).path(), &EncoderConfig::default()).expect("CLS does not read the mask");
    }
}

//! Summaries from an OpenAI-compatible chat-completions endpoint (a generator the user runs: vLLM,
//! llama.cpp's server, Ollama, or a hosted API), so RAPTOR's nodes and AutoContext's headers can be
//! written by an LLM as the papers' are. RAPTOR asks gpt-3.5-turbo, at temperature 0, for "a summary of
//! the following, including as many key details as possible" in at most its summarisation length of
//! tokens; [`EndpointConfig`]'s defaults ask the same of the named model.
//!
//! The request is `POST <url>/chat/completions` with `{"model", "messages": [system, user], "max_tokens",
//! "temperature"}` and, when `api_key_env` names an environment variable, `Authorization: Bearer <key>`;
//! the summary is the answer's `choices[0].message.content`. The key itself is never written anywhere:
//! the experiment file names only the variable. Plain `http://` is built in (a generator on this machine
//! or the local network); `https://` needs arbor built with `--features https` (rustls).
//!
//! Never required and never reached by arbor's tests against a real generator: the tests speak the
//! protocol with a server of their own on loopback.

use anyhow::{Context as _, bail, ensure};
use serde::{Deserialize, Serialize};

/// `Endpoint((url: "http://127.0.0.1:8000/v1", model: "..."))` in an experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointConfig {
    /// The API's base URL: summaries are asked of `<url>/chat/completions`.
    pub url: String,
    /// The model name the endpoint serves.
    pub model: String,
    /// The environment variable that holds the API key, if the endpoint wants one.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The user message: `{text}` becomes the text to summarise, `{words}` a word budget (3/4 of the
    /// summary's tokens).
    #[serde(default = "default_prompt")]
    pub prompt: String,
    #[serde(default)]
    pub temperature: f32,
    /// Seconds to wait for one answer.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

pub fn default_prompt() -> String {
    "Write a summary of the following, including as many key details as possible, in at most {words} words:\n\n{text}".into()
}

fn default_timeout() -> u64 {
    300
}

/// The system message (RAPTOR's).
const SYSTEM: &str = "You are a helpful assistant.";

impl EndpointConfig {
    /// Errors a run would otherwise meet only after hours of encoding: the URL's scheme, a missing key
    /// variable, a prompt without `{text}`.
    pub fn check(&self) -> anyhow::Result<()> {
        ensure!(!self.model.trim().is_empty(), "Endpoint: model is empty (the name of a model the endpoint serves)");
        ensure!(self.prompt.contains("{text}"), "Endpoint: the prompt has no {{text}} for the text to summarise");
        ensure!(
            self.temperature.is_finite() && self.temperature >= 0.0 && self.timeout_secs > 0,
            "Endpoint: temperature must be >= 0 and timeout_secs at least 1"
        );
        match self.url.split_once("://").map(|(scheme, _)| scheme) {
            Some("http") => {}
            Some("https") if cfg!(feature = "https") => {}
            Some("https") => bail!("Endpoint: {} is https, and this arbor was built without TLS: rebuild with `--features https`", self.url),
            _ => bail!("Endpoint: url {:?} must start with http:// or https://", self.url),
        }
        self.api_key()?;
        Ok(())
    }

    /// The API key from the named environment variable (an error names the variable when it is unset).
    fn api_key(&self) -> anyhow::Result<Option<String>> {
        self.api_key_env
            .as_deref()
            .map(|var| std::env::var(var).with_context(|| format!("Endpoint: the API key variable {var} is not set")))
            .transpose()
    }

    /// A client for this endpoint (its key read now).
    pub fn connect(&self) -> anyhow::Result<ChatEndpoint> {
        self.check()?;
        Ok(ChatEndpoint { config: self.clone(), key: self.api_key()? })
    }
}

/// A connected endpoint: the settings and the key.
pub struct ChatEndpoint {
    config: EndpointConfig,
    key: Option<String>,
}

#[derive(Deserialize)]
struct Answer {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    content: Option<String>,
}

impl ChatEndpoint {
    /// The model, where it is served (for the report).
    pub fn describe(&self) -> String {
        format!("{} at {} (temperature {})", self.config.model, self.config.url, self.config.temperature)
    }

    /// A summary of `text` in at most `max_tokens` of the generator's tokens.
    pub fn summarise(&self, text: &str, max_tokens: usize) -> anyhow::Result<String> {
        let c = &self.config;
        let words = (max_tokens * 3 / 4).max(1);
        let user = c.prompt.replace("{words}", &words.to_string()).replace("{text}", text);
        let body = serde_json::json!({
            "model": c.model,
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
            "max_tokens": max_tokens,
            "temperature": c.temperature,
        });
        let url = format!("{}/chat/completions", c.url.trim_end_matches('/'));
        let mut request = minreq::post(&url).with_header("Content-Type", "application/json").with_body(body.to_string()).with_timeout(c.timeout_secs);
        if let Some(key) = &self.key {
            request = request.with_header("Authorization", format!("Bearer {key}"));
        }
        let response = request.send().with_context(|| format!("cannot reach the summary endpoint {url}"))?;
        let answer = response.as_str().with_context(|| format!("{url} answered with a body that is not UTF-8"))?;
        let excerpt = || answer.chars().take(300).collect::<String>();
        ensure!(response.status_code == 200, "{url} answered {} {}: {}", response.status_code, response.reason_phrase, excerpt());
        let parsed: Answer = serde_json::from_str(answer).with_context(|| format!("{url}'s answer is not a chat completion: {}", excerpt()))?;
        let content = parsed.choices.into_iter().next().and_then(|c| c.message.content);
        match content.map(|s| s.trim().to_owned()) {
            Some(summary) if !summary.is_empty() => Ok(summary),
            _ => bail!("{url}'s answer has no text in choices[0].message.content: {}", excerpt()),
        }
    }
}

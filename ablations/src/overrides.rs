//! Overrides of experiment fields by path, for sweeps: `units.max_sentences`, `retrieval.top_k`,
//! `methods.search.beam_width`, `methods.training.lambda`, `methods[3].aggregation`.
//!
//! The experiment is taken in its serde data form (JSON values: structs are objects, `Some(x)` is `x`, a
//! unit enum variant is its name as a string, a variant with fields is `{"Variant": {...}}`). A path is
//! followed from the root, field by field, with two conveniences:
//! - a list without an index (`methods.search...`) applies the rest of the path to every element that has
//!   it, so one path reaches the same setting of every method;
//! - an enum variant is looked through (`search.beam_width` reaches `search: Beam((beam_width: ..))`).
//!
//! A setting left at its default is often not written out (`node_loss`, `frozen_layers`): a path
//! reaching the object that would hold it, without passing through a list without an index, adds it
//! (`methods[9].training.node_loss`); reading the experiment back then rejects a name the struct does not
//! have. Otherwise a path that reaches nothing is an error naming the first field that was not found and
//! the fields that exist there.

use serde_json::Value;

/// One step of a path: a field name, and an element index if written `name[i]`.
#[derive(Debug, Clone, PartialEq)]
struct Step<'a> {
    field: &'a str,
    index: Option<usize>,
}

fn parse(path: &str) -> Result<Vec<Step<'_>>, String> {
    if path.is_empty() {
        return Err("an empty path".into());
    }
    path.split('.')
        .map(|part| {
            let (field, index) = match part.split_once('[') {
                None => (part, None),
                Some((field, rest)) => {
                    let i = rest
                        .strip_suffix(']')
                        .and_then(|i| i.parse().ok())
                        .ok_or_else(|| format!("`{part}` in path `{path}`: write an index as name[3]"))?;
                    (field, Some(i))
                }
            };
            match field.is_empty() || !field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                true => Err(format!("`{part}` in path `{path}` is not a field name")),
                false => Ok(Step { field, index }),
            }
        })
        .collect()
}

/// Why a path reached nothing: the deepest field that was missing, with what was there instead.
#[derive(Debug)]
struct Miss {
    depth: usize,
    message: String,
}

/// Sets every field that `path` reaches in `root` to `value`; returns how many fields were set.
pub fn set(root: &mut Value, path: &str, value: &Value) -> Result<usize, String> {
    let steps = parse(path)?;
    apply(root, &steps, 0, false, value).map_err(|m| format!("`{path}` reaches no field of the experiment: {}", m.message))
}

/// `fanned`: the path went through a list without an index (then only fields written out are set).
fn apply(node: &mut Value, steps: &[Step], depth: usize, fanned: bool, value: &Value) -> Result<usize, Miss> {
    let step = &steps[0];
    match node {
        Value::Array(items) => {
            // A list without an index: every element that has the rest of the path.
            let (mut set, mut deepest) = (0, None::<Miss>);
            for item in items.iter_mut() {
                match apply(item, steps, depth, true, value) {
                    Ok(n) => set += n,
                    Err(m) => {
                        if deepest.as_ref().is_none_or(|d| m.depth > d.depth) {
                            deepest = Some(m);
                        }
                    }
                }
            }
            match (set, deepest) {
                (0, Some(m)) => Err(m),
                (0, None) => Err(Miss { depth, message: format!("`{}` is applied to an empty list", step.field) }),
                (n, _) => Ok(n),
            }
        }
        Value::Object(fields) if fields.contains_key(step.field) => {
            let mut target = fields.get_mut(step.field).expect("checked");
            if let Some(i) = step.index {
                let len = target.as_array().map(Vec::len);
                target = match target.as_array_mut().and_then(|a| a.get_mut(i)) {
                    Some(t) => t,
                    None => {
                        let what = len.map_or("is not a list".to_owned(), |n| format!("has {n} elements"));
                        return Err(Miss { depth: depth + 1, message: format!("`{}[{i}]`: `{}` {what}", step.field, step.field) });
                    }
                };
            }
            if steps.len() == 1 {
                *target = value.clone();
                return Ok(1);
            }
            apply(target, &steps[1..], depth + 1, fanned, value)
        }
        // An enum variant with fields: look through it.
        Value::Object(fields) if fields.len() == 1 && fields.keys().all(|k| k.starts_with(|c: char| c.is_ascii_uppercase())) => {
            let (_, inner) = fields.iter_mut().next().expect("one entry");
            apply(inner, steps, depth, fanned, value)
        }
        // A setting at its default, not written out: added (the experiment's reading checks the name).
        Value::Object(fields) if steps.len() == 1 && step.index.is_none() && !fanned => {
            fields.insert(step.field.to_owned(), value.clone());
            Ok(1)
        }
        Value::Object(fields) => {
            let known: Vec<&str> = fields.keys().map(String::as_str).collect();
            Err(Miss { depth, message: format!("no field `{}` where the fields are {}", step.field, known.join(", ")) })
        }
        other => Err(Miss { depth, message: format!("`{}` is looked up in {}, which has no fields", step.field, describe(other)) }),
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "an unset option (None)".into(),
        Value::String(s) => format!("the variant `{s}`"),
        other => format!("the value `{other}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn experiment() -> Value {
        json!({
            "units": {"max_sentences": 2},
            "methods": [
                "Flat",
                {"SproutRag": {"search": {"Beam": {"beam_width": 5, "delta": 0.0}}, "training": null}},
                {"SproutRag": {"search": "Collapsed", "training": {"lambda": 0.1}}},
            ]
        })
    }

    #[test]
    fn a_plain_field_is_set() {
        let mut e = experiment();
        assert_eq!(set(&mut e, "units.max_sentences", &json!(3)), Ok(1));
        assert_eq!(e["units"]["max_sentences"], 3);
    }

    #[test]
    fn lists_and_variants_are_looked_through() {
        let mut e = experiment();
        assert_eq!(set(&mut e, "methods.search.beam_width", &json!(8)), Ok(1));
        assert_eq!(e["methods"][1]["SproutRag"]["search"]["Beam"]["beam_width"], 8);
        assert_eq!(set(&mut e, "methods.training.lambda", &json!(0.5)), Ok(1));
        assert_eq!(e["methods"][2]["SproutRag"]["training"]["lambda"], 0.5);
        assert_eq!(set(&mut e, "methods.search", &json!("UpperOnly")), Ok(2), "both tree methods");
        assert_eq!(e["methods"][1]["SproutRag"]["search"], "UpperOnly");
    }

    #[test]
    fn an_index_picks_one_element() {
        let mut e = experiment();
        assert_eq!(set(&mut e, "methods[2].search", &json!("LeavesOnly")), Ok(1));
        assert_eq!(e["methods"][1]["SproutRag"]["search"]["Beam"]["beam_width"], 5, "untouched");
        assert_eq!(e["methods"][2]["SproutRag"]["search"], "LeavesOnly");
    }

    #[test]
    fn bad_paths_name_what_is_missing() {
        let mut e = experiment();
        let err = set(&mut e, "methods.search.beam_widht", &json!(1)).unwrap_err();
        assert!(err.contains("no field `beam_widht` where the fields are beam_width, delta"), "{err}");
        let err = set(&mut e, "unitz.max_sentences", &json!(1)).unwrap_err();
        assert!(err.contains("no field `unitz`") && err.contains("methods, units"), "{err}");
        let err = set(&mut e, "methods[7].search", &json!(1)).unwrap_err();
        assert!(err.contains("has 3 elements"), "{err}");
        assert!(set(&mut e, "methods..search", &json!(1)).unwrap_err().contains("not a field name"));
        assert!(set(&mut e, "methods[x]", &json!(1)).unwrap_err().contains("write an index"));
        assert_eq!(e, experiment(), "a failed override changes nothing");
    }

    #[test]
    fn a_setting_left_at_its_default_is_added_on_a_path_without_fan_out() {
        let mut e = experiment();
        assert_eq!(set(&mut e, "methods[2].training.node_loss", &json!(0.3)), Ok(1));
        assert_eq!(e["methods"][2]["SproutRag"]["training"]["node_loss"], 0.3);
        assert_eq!(e["methods"][2]["SproutRag"]["training"]["lambda"], 0.1, "the rest kept");
        // Through a list without an index only written-out fields are set: which elements would take a
        // new one is not known from the data.
        let before = e.clone();
        let err = set(&mut e, "methods.training.frozen_layers", &json!(3)).unwrap_err();
        assert!(err.contains("reaches no field") && err.contains("`frozen_layers`"), "{err}");
        assert_eq!(e, before);
        // Only the last step may be added: a missing object on the way is still an error.
        let err = set(&mut e, "methods[2].trainin.lambda", &json!(1)).unwrap_err();
        assert!(err.contains("no field `trainin`"), "{err}");
    }
}

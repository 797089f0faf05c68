//! A small JSON Schema checker for the subset the tools' `input_schema`s use (object,
//! properties, required, additionalProperties, string/integer/number/boolean/array/object
//! types, minimum/maximum). It runs before serde so that every error names the field,
//! which serde's "invalid type" messages do not.

use serde_json::Value;

/// Checks `input` against `schema`; the error names the offending field.
pub(crate) fn validate(schema: &Value, input: &Value) -> Result<(), String> {
    let Some(obj) = input.as_object() else {
        return Err(format!(
            "input must be a JSON object, got {}",
            type_name(input)
        ));
    };
    let props = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !obj.contains_key(name) {
                return Err(format!("missing required field `{name}`"));
            }
        }
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (key, value) in obj {
        match props.and_then(|p| p.get(key)) {
            Some(prop) => check_property(key, prop, value)?,
            None if closed => {
                let known: Vec<&str> = props
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                return Err(format!(
                    "unknown field `{key}`; expected one of: {}",
                    known.join(", ")
                ));
            }
            None => {}
        }
    }
    Ok(())
}

fn check_property(key: &str, prop: &Value, value: &Value) -> Result<(), String> {
    if let Some(expected) = prop.get("type").and_then(Value::as_str) {
        let ok = match expected {
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            _ => true,
        };
        if !ok {
            return Err(format!(
                "field `{key}` must be {} {expected}, got {}",
                article(expected),
                type_name(value)
            ));
        }
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = prop.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            return Err(format!("field `{key}` must be at least {min}, got {value}"));
        }
        if let Some(max) = prop.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            return Err(format!("field `{key}` must be at most {max}, got {value}"));
        }
    }
    Ok(())
}

fn article(t: &str) -> &'static str {
    if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;

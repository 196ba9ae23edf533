//! `validate_arguments`: a call's arguments checked against the tool's `inputSchema` before it
//! is held or forwarded, where the person asked for it (per server, or per tool). Off by
//! default: lenient servers accept what a strict validator refuses, and a working setup must not
//! break. The schema is compiled once per definition (by its hash) with a linear-time regex
//! engine, so no argument can make a check take long; a schema too large or one the validator
//! cannot compile leaves the call unchecked (logged), never refused for Gatehouse's sake.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::{json, Value};

use crate::config::ServerConfig;
use crate::supervisor::ToolDef;

/// The largest `inputSchema` compiled (bytes of the whole definition).
pub const MAX_SCHEMA_BYTES: usize = 256 * 1024;
/// Compiled schemas kept (by definition hash); past it the cache starts over.
const MAX_COMPILED: usize = 1024;
/// The largest compiled regular expression of a `pattern` (bytes of the regex engine's program).
const MAX_PATTERN_PROGRAM: usize = 1 << 20;

/// A compiled schema with the schema itself (to quote a constraint), or why a definition is not
/// checked.
type Compiled = Result<Arc<(jsonschema::Validator, Value)>, String>;

static COMPILED: LazyLock<Mutex<HashMap<String, Compiled>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Whether calls to `tool` of a server configured as `cfg` are checked: the tool's own
/// `validate_arguments`, else the server's.
pub fn wanted(cfg: &ServerConfig, tool: &str) -> bool {
    cfg.tools
        .get(tool)
        .and_then(|p| p.validate_arguments)
        .unwrap_or(cfg.validate_arguments)
}

/// Why a call's arguments were refused: the message and the `data` of the -32602 error.
#[derive(Debug)]
pub struct Mismatch {
    pub message: String,
    pub data: Value,
}

fn compile(def: &ToolDef) -> Compiled {
    if def.raw.get().len() > MAX_SCHEMA_BYTES {
        return Err(format!(
            "its definition is over {} KiB",
            MAX_SCHEMA_BYTES / 1024
        ));
    }
    let v: Value = serde_json::from_str(def.raw.get()).map_err(|e| e.to_string())?;
    let schema = v
        .get("inputSchema")
        .cloned()
        .ok_or_else(|| "it has no inputSchema".to_owned())?;
    jsonschema::options()
        .with_pattern_options(jsonschema::PatternOptions::regex().size_limit(MAX_PATTERN_PROGRAM))
        .build(&schema)
        .map(|v| Arc::new((v, schema)))
        .map_err(|e| format!("its inputSchema cannot be compiled: {e}"))
}

fn compiled(def: &ToolDef) -> Compiled {
    if let Some(c) = crate::sync::lock(&COMPILED).get(def.hash()) {
        return c.clone();
    }
    // Compiled outside the lock: one large schema never holds up the other calls' checks.
    let c = compile(def);
    if let Err(why) = &c {
        tracing::warn!(tool = %def.name, "arguments of {} are not checked: {why}", def.name);
    }
    let mut cache = crate::sync::lock(&COMPILED);
    if cache.len() >= MAX_COMPILED {
        cache.clear();
    }
    cache.insert(def.hash().to_owned(), c.clone());
    c
}

/// `arguments` (absent: `{}`) against the tool's inputSchema: the first mismatch, with the
/// failing path, what the schema expects there and the constraint's keyword.
pub fn check(def: &ToolDef, arguments: Option<&Value>) -> Result<(), Mismatch> {
    let Ok(compiled) = compiled(def) else {
        return Ok(());
    };
    let (validator, schema) = &*compiled;
    let empty = json!({});
    // The arguments as the call's one reading made them (`crate::arguments`): no key twice.
    let instance = arguments.unwrap_or(&empty);
    let Err(e) = validator.validate(instance) else {
        return Ok(());
    };
    let path = e.instance_path().to_string();
    let keyword = e.kind().keyword().to_owned();
    let schema_path = e.schema_path().to_string();
    // What the schema asks there (`"integer"`, `10`, `["count"]`), when it is small.
    let expected = schema
        .pointer(&schema_path)
        .filter(|v| v.to_string().len() <= 1024)
        .cloned()
        .unwrap_or(Value::Null);
    let message = format!(
        "the arguments of {} do not match its inputSchema at {}: {}",
        def.name,
        if path.is_empty() { "/" } else { &path },
        e
    );
    Err(Mismatch {
        message,
        data: json!({
            "path": path,
            "keyword": keyword,
            "schemaPath": schema_path,
            "expected": expected,
            "reason": e.to_string(),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    fn def(schema: Value) -> ToolDef {
        let raw =
            RawValue::from_string(json!({"name": "t", "inputSchema": schema}).to_string()).unwrap();
        ToolDef::parse(raw, Default::default()).unwrap()
    }

    fn args(v: Value) -> Value {
        v
    }

    /// A mismatch names the failing path, the keyword and the reason; a match passes; a schema
    /// that cannot be compiled leaves the call unchecked.
    #[test]
    fn arguments_are_checked_against_the_input_schema() {
        let d = def(json!({"type": "object", "properties": {
            "count": {"type": "integer", "maximum": 10},
            "tags": {"type": "array", "items": {"type": "string"}}},
            "required": ["count"]}));
        assert!(check(&d, Some(&args(json!({"count": 3, "tags": ["a"]})))).is_ok());
        let m = check(&d, Some(&args(json!({"count": "3"})))).unwrap_err();
        assert_eq!(m.data["path"], "/count", "{:?}", m);
        assert_eq!(m.data["keyword"], "type");
        assert_eq!(m.data["expected"], "integer", "{:?}", m);
        let m = check(&d, Some(&args(json!({"count": 30})))).unwrap_err();
        assert_eq!(m.data["keyword"], "maximum", "{:?}", m);
        assert_eq!(m.data["expected"], 10, "{:?}", m);
        let m = check(&d, Some(&args(json!({"count": 1, "tags": [1]})))).unwrap_err();
        assert_eq!(m.data["path"], "/tags/0", "{:?}", m);
        let m = check(&d, None).unwrap_err();
        assert_eq!(m.data["keyword"], "required", "{:?}", m);
        // A pattern the linear-time engine cannot compile (a backreference): not checked.
        let odd = def(
            json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "(a)\\1"}}}),
        );
        assert!(check(&odd, Some(&args(json!({"x": 5})))).is_ok());
    }
}

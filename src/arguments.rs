//! A call's arguments read once, by the one grammar every server reads the same way: I-JSON
//! (RFC 7493). Parsers disagree on a key given twice (serde keeps the last, cJSON and RapidJSON
//! the first), on a lone surrogate (refused, replaced or kept), on an integer past 2^53 (exact
//! in Python, rounded in JavaScript) and on `1e400` (refused, or infinity). A rule, a grant, a
//! digest or a view that read such a text one way while the server read it another would judge
//! a call nobody made. So the arguments are read here, in one pass, into the one [`Value`] every
//! reader in Gatehouse uses, and a text outside I-JSON is refused with the path of what could
//! not be read (`arguments.pad`) — never forwarded, never read as "no arguments". What reaches
//! the server is the client's bytes, which any conforming parser reads as that same value.

use std::borrow::Cow;

use serde_json::{Map, Number, Value};

/// How deep arguments may nest (objects and arrays): past it, a text is refused (serde's own
/// limit is 128; a tool's arguments are rarely deeper than a few levels).
pub const MAX_DEPTH: usize = 64;

/// The largest integer every JSON reader holds exactly (2^53 − 1, I-JSON's bound).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Why a call's arguments could not be read, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The path of the value (`arguments.items[2].name`; `arguments` for the whole).
    pub path: String,
    /// What is wrong with it, and what to send instead.
    pub why: String,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.why)
    }
}

/// The raw `arguments` of a call read as I-JSON: an object (or `null`, no arguments) with no key
/// given twice at any depth, no lone surrogate, integers within ±(2^53 − 1) and finite numbers.
/// `Ok(None)`: no arguments (absent or `null`).
pub fn read(text: Option<&str>) -> Result<Option<Value>, Unreadable> {
    let Some(text) = text else { return Ok(None) };
    let mut r = Reader {
        b: text.as_bytes(),
        text,
        i: 0,
        path: Vec::new(),
    };
    r.ws();
    let v = r.value(0)?;
    r.ws();
    if r.i != r.b.len() {
        return Err(r.fail("text follows the arguments' value"));
    }
    match v {
        Value::Null => Ok(None),
        Value::Object(_) => Ok(Some(v)),
        other => Err(Unreadable {
            path: "arguments".into(),
            why: format!("must be an object of named arguments, not {}", kind(&other)),
        }),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

enum Seg {
    Key(String),
    Index(usize),
}

struct Reader<'a> {
    b: &'a [u8],
    text: &'a str,
    i: usize,
    path: Vec<Seg>,
}

impl<'a> Reader<'a> {
    fn fail(&self, why: impl Into<String>) -> Unreadable {
        let mut path = String::from("arguments");
        for seg in &self.path {
            match seg {
                Seg::Index(n) => path.push_str(&format!("[{n}]")),
                Seg::Key(k) if plain_key(k) => {
                    path.push('.');
                    path.push_str(k);
                }
                Seg::Key(k) => {
                    path.push('[');
                    path.push_str(&crate::text::reveal(&crate::jsonrpc::json_string(k)));
                    path.push(']');
                }
            }
        }
        Unreadable {
            path,
            why: why.into(),
        }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, Unreadable> {
        match self.b.get(self.i) {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => Ok(Value::String(self.string()?.into_owned())),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.fail("is not JSON")),
            None => Err(self.fail("ends before its value")),
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, Unreadable> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.fail("is not JSON"))
        }
    }

    fn deeper(&self, depth: usize) -> Result<(), Unreadable> {
        if depth > MAX_DEPTH {
            return Err(self.fail(format!("nests deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    fn object(&mut self, depth: usize) -> Result<Value, Unreadable> {
        self.deeper(depth)?;
        self.i += 1;
        let mut map = Map::new();
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return Err(self.fail("holds a member whose name is not a string"));
            }
            let key = self.string()?.into_owned();
            if map.contains_key(&key) {
                return Err(self.fail(format!(
                    "gives the key {} more than once; servers read such an object differently (some the first, some the last): send each key once",
                    crate::text::reveal(&crate::jsonrpc::json_string(&key))
                )));
            }
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return Err(self.fail("is not JSON (a member without its ':')"));
            }
            self.i += 1;
            self.ws();
            self.path.push(Seg::Key(key));
            let v = self.value(depth)?;
            let Some(Seg::Key(key)) = self.path.pop() else {
                return Err(self.fail("is not JSON"));
            };
            map.insert(key, v);
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Object(map));
                }
                _ => return Err(self.fail("is not JSON (an object not closed)")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, Unreadable> {
        self.deeper(depth)?;
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.ws();
            self.path.push(Seg::Index(items.len()));
            let v = self.value(depth)?;
            self.path.pop();
            items.push(v);
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.fail("is not JSON (an array not closed)")),
            }
        }
    }

    /// A string at `self.i` (its opening quote), decoded; a raw control character, a bad escape
    /// or a lone surrogate is refused.
    fn string(&mut self) -> Result<Cow<'a, str>, Unreadable> {
        self.i += 1;
        let start = self.i;
        // The common case: no escape, borrowed as it is.
        while let Some(&c) = self.b.get(self.i) {
            match c {
                b'"' => {
                    let s = &self.text[start..self.i];
                    self.i += 1;
                    return Ok(Cow::Borrowed(s));
                }
                b'\\' => break,
                0..=0x1f => return Err(self.fail("holds a raw control character in a string")),
                _ => self.i += 1,
            }
        }
        let mut out = String::from(&self.text[start..self.i]);
        loop {
            let run = self.i;
            while let Some(&c) = self.b.get(self.i) {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            out.push_str(&self.text[run..self.i]);
            match self.b.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(Cow::Owned(out));
                }
                Some(b'\\') => {
                    self.i += 1;
                    self.escape(&mut out)?;
                }
                Some(_) => return Err(self.fail("holds a raw control character in a string")),
                None => return Err(self.fail("ends inside a string")),
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), Unreadable> {
        let c = self.b.get(self.i).copied();
        self.i += 1;
        let simple = match c {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let hi = self.hex4()?;
                let ch = match hi {
                    0xD800..=0xDBFF => {
                        if !self.b[self.i..].starts_with(b"\\u") {
                            return Err(self.lone(hi));
                        }
                        self.i += 2;
                        let lo = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&lo) {
                            return Err(self.lone(hi));
                        }
                        0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                    }
                    0xDC00..=0xDFFF => return Err(self.lone(hi)),
                    _ => hi,
                };
                char::from_u32(ch).ok_or_else(|| self.lone(hi))?
            }
            _ => return Err(self.fail("holds an escape JSON does not have")),
        };
        out.push(simple);
        Ok(())
    }

    fn lone(&self, unit: u32) -> Unreadable {
        self.fail(format!(
            "holds a lone surrogate (\\u{unit:04x}): it is no character, and servers read it differently; send the text as valid Unicode"
        ))
    }

    fn hex4(&mut self) -> Result<u32, Unreadable> {
        let digits = self
            .b
            .get(self.i..self.i + 4)
            .and_then(|d| std::str::from_utf8(d).ok())
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|d| u32::from_str_radix(d, 16).ok())
            .ok_or_else(|| self.fail("holds a \\u escape without four hex digits"))?;
        self.i += 4;
        Ok(digits)
    }

    fn number(&mut self) -> Result<Value, Unreadable> {
        let start = self.i;
        let digits = |r: &mut Self| {
            let from = r.i;
            while r.b.get(r.i).is_some_and(u8::is_ascii_digit) {
                r.i += 1;
            }
            r.i - from
        };
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let int_start = self.i;
        let n = digits(self);
        if n == 0 || (n > 1 && self.b[int_start] == b'0') {
            return Err(self.fail("is not a JSON number"));
        }
        let mut integer = true;
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            integer = false;
            if digits(self) == 0 {
                return Err(self.fail("is not a JSON number"));
            }
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            integer = false;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            if digits(self) == 0 {
                return Err(self.fail("is not a JSON number"));
            }
        }
        let text = &self.text[start..self.i];
        if integer {
            let magnitude = self.text[int_start..self.i].parse::<u64>().ok();
            match magnitude {
                Some(m) if m <= MAX_SAFE_INTEGER => {
                    let m = i64::try_from(m).unwrap_or(i64::MAX);
                    return Ok(if start == int_start {
                        Value::from(m)
                    } else {
                        Value::from(-m)
                    });
                }
                _ => {
                    return Err(self.fail(format!(
                        "is the integer {}, past 2^53: servers read it differently (exactly, or rounded to {}); send it as a string",
                        cut_digits(text),
                        rounded(text)
                    )))
                }
            }
        }
        match text.parse::<f64>().ok().filter(|f| f.is_finite()) {
            Some(f) => Number::from_f64(f)
                .map(Value::Number)
                .ok_or_else(|| self.fail("is not a finite number")),
            None => Err(self.fail(format!(
                "is the number {}, too large for a double: servers read it differently (an error, or infinity); send it as a string",
                cut_digits(text)
            ))),
        }
    }
}

/// A number's text for a message, at most 40 characters.
fn cut_digits(text: &str) -> String {
    crate::text::cut(text, 40)
}

/// What a reader that holds numbers as doubles makes of an integer's text.
fn rounded(text: &str) -> String {
    text.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map_or_else(|| "infinity".into(), |f| format!("{f:e}"))
}

/// A key shown after a dot in a path: letters, digits, `_` and `-`, not starting with a digit.
fn plain_key(k: &str) -> bool {
    let mut chars = k.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
#[path = "arguments_tests.rs"]
mod tests;

//! How the JSON API reads a request body: only as `application/json`, and only as JSON in which no
//! object gives a key twice.
//!
//! Why the type is required: a body sent as `text/plain`, a form or with no type at all is what a
//! page on another site can make a browser send without asking (a CORS "simple request", no
//! preflight: <https://fetch.spec.whatwg.org/#cors-safelisted-request-header>). The server has no
//! authentication and trusts loopback, so only `application/json`, which a browser sends
//! cross-origin only after a preflight this server never approves, is taken.
//!
//! Why duplicates are refused: RFC 8259 section 4 leaves the meaning of an object with a repeated
//! name to the reader, and readers disagree (serde_json and JavaScript keep the last, others the
//! first), so `{"servers": 16, "servers": 16384}` could be planned as a design its sender did not
//! look at. The request is refused naming the key instead.

use crate::Response;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::fmt;

/// The media type the API takes for a request body.
pub const JSON_TYPE: &str = "application/json";

/// Checks a request's `Content-Type` (`None` when absent) for a body of `body_len` bytes: it must
/// be [`JSON_TYPE`], with any parameters (`; charset=utf-8`); only an empty body may come without
/// one. Otherwise 415, naming the type sent and the type taken.
pub fn check_content_type(content_type: Option<&[u8]>, body_len: usize) -> Result<(), Response> {
    let Some(raw) = content_type else {
        if body_len == 0 {
            return Ok(());
        }
        return Err(unsupported(&format!(
            "a request body of {body_len} bytes came without a Content-Type"
        )));
    };
    let text = String::from_utf8_lossy(raw);
    let media = text.split(';').next().unwrap_or("").trim();
    if media.eq_ignore_ascii_case(JSON_TYPE) {
        return Ok(());
    }
    let shown: String = text.chars().take(80).collect();
    Err(unsupported(&format!("Content-Type {shown:?} is not taken")))
}

fn unsupported(problem: &str) -> Response {
    Response::error(
        415,
        "content-type",
        &format!(
            "{problem}; valid: {JSON_TYPE} (send the body as JSON with Content-Type: {JSON_TYPE})"
        ),
    )
}

/// A request body as JSON: [`Value`], except that an object giving a key twice is an error naming
/// the key's path (`servers`, `designs[1].label`). The error is a 400 answer: `field` is the
/// request key the duplicate is in (`designs`), or `body` for JSON that does not parse.
pub fn parse(body: &[u8]) -> Result<Value, Box<Response>> {
    let duplicate = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(body);
    let parsed = Strict {
        path: "",
        duplicate: &duplicate,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    match (parsed, duplicate.into_inner()) {
        (Ok(v), _) => Ok(v),
        (Err(e), Some(path)) => {
            let field = path
                .split(['.', '['])
                .next()
                .filter(|k| !k.is_empty())
                .unwrap_or("body");
            Err(Box::new(Response::error(
                400,
                field,
                &format!(
                    "{path}: given more than once (line {}, column {}); valid: each key once",
                    e.line(),
                    e.column()
                ),
            )))
        }
        (Err(e), None) => Err(Box::new(Response::error(
            400,
            "body",
            &format!("not JSON: {e}"),
        ))),
    }
}

/// A JSON value at `path`; records the first duplicated key's path in `duplicate`.
#[derive(Clone, Copy)]
struct Strict<'a> {
    path: &'a str,
    duplicate: &'a RefCell<Option<String>>,
}

impl Strict<'_> {
    fn at<'b>(&'b self, path: &'b str) -> Strict<'b> {
        Strict {
            path,
            duplicate: self.duplicate,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut list = Vec::new();
        loop {
            let path = format!("{}[{}]", self.path, list.len());
            match seq.next_element_seed(self.at(&path))? {
                Some(v) => list.push(v),
                None => return Ok(Value::Array(list)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            if object.contains_key(&key) {
                let message = format!("duplicate key {path:?}");
                *self.duplicate.borrow_mut() = Some(path);
                return Err(de::Error::custom(message));
            }
            let value = map.next_value_seed(self.at(&path))?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_and_error(body: &str) -> (String, String) {
        let r = parse(body.as_bytes()).expect_err(body);
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        (
            v["field"].as_str().unwrap().to_string(),
            v["error"].as_str().unwrap().to_string(),
        )
    }

    /// Whatever serde_json reads without duplicates reads the same here, numbers and nesting
    /// included.
    #[test]
    fn reads_what_serde_json_reads() {
        for text in [
            r#"{"a": 1, "b": [1.5, -2, "x", null, true, {"c": {}}], "d": 18446744073709551615}"#,
            "[]",
            "\"s\"",
            "  12  ",
            r#"{"designs": [{"label": "a", "cost_usd": 1e3}, {"label": "a"}]}"#,
        ] {
            let expected: Value = serde_json::from_str(text).unwrap();
            assert_eq!(parse(text.as_bytes()).unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn a_duplicated_key_is_named_with_its_path() {
        let (field, error) = field_and_error(r#"{"servers": 16, "servers": 16384}"#);
        assert_eq!(field, "servers");
        assert!(
            error.starts_with("servers: given more than once (line 1, column "),
            "{error}"
        );
        assert!(error.ends_with("; valid: each key once"), "{error}");
        let (field, error) = field_and_error(
            r#"{"designs": [{"cost_usd": 1}, {"label": "a", "cost_usd": 2, "label": "b"}]}"#,
        );
        assert_eq!(field, "designs");
        assert!(
            error.starts_with("designs[1].label: given more than once"),
            "{error}"
        );
    }

    #[test]
    fn broken_json_and_trailing_bytes_are_not_json() {
        for text in [r#"{"servers": "#, r#"{"a": 1} x"#, "{\"a\": 1,}"] {
            let (field, error) = field_and_error(text);
            assert_eq!(field, "body", "{text}");
            assert!(error.starts_with("not JSON: "), "{text}: {error}");
        }
    }

    #[test]
    fn only_json_bodies_are_taken() {
        for ok in [
            Some("application/json"),
            Some("Application/JSON; charset=utf-8"),
            Some(" application/json ;charset=UTF-8"),
        ] {
            assert!(
                check_content_type(ok.map(str::as_bytes), 10).is_ok(),
                "{ok:?}"
            );
        }
        assert!(
            check_content_type(None, 0).is_ok(),
            "an empty body needs no type"
        );
        for bad in [
            Some("text/plain"),
            Some("text/plain;charset=UTF-8"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("application/jsonx"),
            Some(""),
            None,
        ] {
            let r = check_content_type(bad.map(str::as_bytes), 10).expect_err("refused");
            assert_eq!(r.status, 415);
            let v: Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(v["field"], "content-type");
            assert!(
                v["error"]
                    .as_str()
                    .unwrap()
                    .contains("valid: application/json"),
                "{v}"
            );
        }
        let r = check_content_type(Some(b"text/plain"), 0).expect_err("a wrong type, even empty");
        assert_eq!(r.status, 415);
    }
}

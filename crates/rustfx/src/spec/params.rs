//! An extractor's parameters: their declarations (name, type, default) and
//! their values, checked against the declarations.
//!
//! A declaration says the JSON type of a parameter and its default; the
//! rules on its value (ranges, names, combinations) stay in the core
//! constructor that owns them, which the registry calls. So a spec is
//! checked in two steps with one message style: the type here, the value
//! there.

use crate::{Error, ErrorKind, Result};
use serde_json::Value;

/// The JSON type of a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    /// An integer.
    Int,
    /// An integer or null.
    OptionalInt,
    /// true or false.
    Bool,
    /// A string (usually a name the core parses with `from_name`).
    Str,
    /// A string or null.
    OptionalStr,
    /// A list of integers.
    IntList,
    /// A list of strings.
    StrList,
}

impl ParamType {
    /// The type's name in messages and in the registry's JSON.
    pub fn name(self) -> &'static str {
        match self {
            ParamType::Int => "int",
            ParamType::OptionalInt => "int or null",
            ParamType::Bool => "bool",
            ParamType::Str => "string",
            ParamType::OptionalStr => "string or null",
            ParamType::IntList => "list of int",
            ParamType::StrList => "list of string",
        }
    }
}

/// A parameter's default, written as a constant in the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Default {
    /// No default: a spec must give it.
    Required,
    /// null.
    Null,
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A string.
    Str(&'static str),
    /// A list of integers.
    IntList(&'static [i64]),
    /// A list of strings.
    StrList(&'static [&'static str]),
}

impl Default {
    /// The default as a value, `None` when the parameter is required.
    pub fn value(self) -> Option<ParamValue> {
        Some(match self {
            Default::Required => return None,
            Default::Null => ParamValue::Null,
            Default::Int(v) => ParamValue::Int(v),
            Default::Bool(v) => ParamValue::Bool(v),
            Default::Str(v) => ParamValue::Str(v.to_string()),
            Default::IntList(v) => ParamValue::IntList(v.to_vec()),
            Default::StrList(v) => ParamValue::StrList(v.iter().map(|s| s.to_string()).collect()),
        })
    }
}

/// One parameter of an extractor, declared once in the registry.
#[derive(Clone, Copy, Debug)]
pub struct ParamDecl {
    /// Its name in specs, in the Python signature and on the command line.
    pub name: &'static str,
    /// Its JSON type.
    pub ty: ParamType,
    /// Its default.
    pub default: Default,
    /// The names it accepts, for a parameter that is a closed set (the
    /// core enum's `NAMES`); empty otherwise.
    pub names: &'static [&'static str],
    /// One line: what it does and what is allowed.
    pub doc: &'static str,
}

/// A parameter's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamValue {
    /// null.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A string.
    Str(String),
    /// A list of integers.
    IntList(Vec<i64>),
    /// A list of strings.
    StrList(Vec<String>),
}

impl ParamValue {
    /// The value as JSON.
    pub fn to_json(&self) -> Value {
        match self {
            ParamValue::Null => Value::Null,
            ParamValue::Bool(v) => Value::Bool(*v),
            ParamValue::Int(v) => Value::from(*v),
            ParamValue::Str(v) => Value::from(v.as_str()),
            ParamValue::IntList(v) => Value::from(v.clone()),
            ParamValue::StrList(v) => Value::from(v.clone()),
        }
    }

    /// Reads `json` as a value of type `ty`, or an error naming the
    /// extractor, the parameter and the type it must have.
    pub fn from_json(json: &Value, decl: &ParamDecl, extractor: &str) -> Result<Self> {
        let wrong = || {
            Error::invalid_argument(format!(
                "{extractor}: {} must be {}, got {}",
                decl.name,
                with_article(decl.ty.name()),
                short(json)
            ))
        };
        let int = |v: &Value| v.as_i64().ok_or_else(wrong);
        let string = |v: &Value| v.as_str().map(str::to_string).ok_or_else(wrong);
        Ok(match (decl.ty, json) {
            (ParamType::OptionalInt | ParamType::OptionalStr, Value::Null) => ParamValue::Null,
            (ParamType::Int | ParamType::OptionalInt, v) => ParamValue::Int(int(v)?),
            (ParamType::Bool, Value::Bool(v)) => ParamValue::Bool(*v),
            (ParamType::Str | ParamType::OptionalStr, v) => ParamValue::Str(string(v)?),
            (ParamType::IntList, Value::Array(items)) => {
                ParamValue::IntList(items.iter().map(int).collect::<Result<_>>()?)
            }
            (ParamType::StrList, Value::Array(items)) => {
                ParamValue::StrList(items.iter().map(string).collect::<Result<_>>()?)
            }
            _ => return Err(wrong()),
        })
    }
}

fn with_article(type_name: &str) -> String {
    match type_name.as_bytes().first() {
        Some(b'i') => format!("an {type_name}"),
        Some(b'l') => format!("a {type_name}"),
        _ => format!("a {type_name}"),
    }
}

/// A JSON value for a message, cut to a readable length.
pub fn short(json: &Value) -> String {
    let text = json.to_string();
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// Every parameter of one extractor, in declaration order, each with its
/// value (given or default). Built only by [`FeatureSpec`](super::FeatureSpec),
/// so every value has its declared type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    pub(crate) values: Vec<(&'static str, ParamValue)>,
}

impl Params {
    /// Each parameter's name and value, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &ParamValue)> {
        self.values.iter().map(|(name, value)| (*name, value))
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Result<&ParamValue> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
            .ok_or_else(|| internal(name, "a declared parameter"))
    }

    pub(crate) fn set(&mut self, name: &str, value: ParamValue) {
        if let Some(slot) = self.values.iter_mut().find(|(n, _)| *n == name) {
            slot.1 = value;
        }
    }

    /// An `int` parameter.
    pub fn int(&self, name: &str) -> Result<i64> {
        match self.get(name)? {
            ParamValue::Int(v) => Ok(*v),
            _ => Err(internal(name, "an int")),
        }
    }

    /// An `int or null` parameter.
    pub fn optional_int(&self, name: &str) -> Result<Option<i64>> {
        match self.get(name)? {
            ParamValue::Int(v) => Ok(Some(*v)),
            ParamValue::Null => Ok(None),
            _ => Err(internal(name, "an int or null")),
        }
    }

    /// A `bool` parameter.
    pub fn bool(&self, name: &str) -> Result<bool> {
        match self.get(name)? {
            ParamValue::Bool(v) => Ok(*v),
            _ => Err(internal(name, "a bool")),
        }
    }

    /// A `string` parameter.
    pub fn str(&self, name: &str) -> Result<&str> {
        match self.get(name)? {
            ParamValue::Str(v) => Ok(v),
            _ => Err(internal(name, "a string")),
        }
    }

    /// A `string or null` parameter.
    pub fn optional_str(&self, name: &str) -> Result<Option<&str>> {
        match self.get(name)? {
            ParamValue::Str(v) => Ok(Some(v)),
            ParamValue::Null => Ok(None),
            _ => Err(internal(name, "a string or null")),
        }
    }

    /// A `list of int` parameter.
    pub fn ints(&self, name: &str) -> Result<&[i64]> {
        match self.get(name)? {
            ParamValue::IntList(v) => Ok(v),
            _ => Err(internal(name, "a list of int")),
        }
    }

    /// A `list of string` parameter.
    pub fn strs(&self, name: &str) -> Result<&[String]> {
        match self.get(name)? {
            ParamValue::StrList(v) => Ok(v),
            _ => Err(internal(name, "a list of string")),
        }
    }
}

/// A registry entry asked for a parameter it did not declare, or with
/// another type: a bug in rustfx, never a user's error.
fn internal(name: &str, what: &str) -> Error {
    Error::new(
        ErrorKind::Internal,
        format!("parameter '{name}' is not {what} (a bug in rustfx's registry)"),
    )
}

/// A size parameter as `usize`; a negative value maps to 0, which every
/// core constructor rejects with its own message.
pub fn size(value: i64) -> usize {
    usize::try_from(value).unwrap_or(0)
}

/// An int32 parameter, or an error naming it.
pub fn int32(name: &str, value: i64) -> Result<i32> {
    i32::try_from(value)
        .map_err(|_| Error::invalid_argument(format!("{name} must fit in int32, got {value}")))
}

//! Optional fast path of the analyzer's OTLP JSON reader (`otel_agent_trace.analyzer.readers._native`).
//!
//! `Reader.read(raw, path, line)` reads one record (an ExportTraceServiceRequest as OTLP JSON) straight
//! into what `otlp_json._typed_spans(otlp_typed.decode_export(raw), path, line, report)` returns: a
//! `Record` of `Span` Structs, grouped by trace. It parses with serde_json and builds the Python objects
//! as it goes (no intermediate tree). It reads only the common shape, and only where it reads exactly
//! what the typed path reads; on anything else (base64 ids, kvlist or bytes values, ints out of int64,
//! null where a value is expected, unknown span or AnyValue fields, a trace id in two cases, ...) it
//! returns None and the Python paths read the record, and report what they report.

use std::cell::RefCell;
use std::fmt;
use std::sync::Mutex;

use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString, PyTuple};
use rustc_hash::FxHashMap;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Entries kept per cache (attribute keys, trace ids) before it is cleared: bounded memory.
const CACHE_LIMIT: usize = 1 << 14;
/// Attribute keys longer than this are not remembered.
const KEY_CACHE_MAX_LEN: usize = 128;

#[derive(Default)]
struct Caches {
    keys: FxHashMap<Box<str>, Py<PyString>>,
    traces: FxHashMap<[u8; 32], Py<PyString>>,
}

/// The reader, holding the analyzer's types (given by the caller: no import from here) and the caches
/// of attribute keys and trace ids, which many records repeat.
#[pyclass(frozen)]
struct Reader {
    span: Py<PyAny>,
    event: Py<PyAny>,
    link: Py<PyAny>,
    record: Py<PyAny>,
    none: Py<PyAny>,
    caches: Mutex<Caches>,
}

#[pymethods]
impl Reader {
    /// `Reader(Span, Event, Link, Record, NONE)`: NONE is the empty list shared by spans without
    /// events or links (`otlp_json._NONE`).
    #[new]
    fn new(span: Py<PyAny>, event: Py<PyAny>, link: Py<PyAny>, record: Py<PyAny>, none: Py<PyAny>) -> Self {
        Reader { span, event, link, record, none, caches: Mutex::new(Caches::default()) }
    }

    /// The record's spans (a `Record`), or None where the typed path must read it.
    fn read<'py>(&self, py: Python<'py>, raw: &[u8], path: Bound<'py, PyAny>, line: Bound<'py, PyAny>)
                 -> PyResult<Option<Bound<'py, PyAny>>> {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.read_record(py, raw, path, line))) {
            Ok(result) => result,
            Err(_) => Err(PyRuntimeError::new_err("native reader panicked")),
        }
    }
}

impl Reader {
    fn read_record<'py>(&self, py: Python<'py>, raw: &[u8], path: Bound<'py, PyAny>, line: Bound<'py, PyAny>)
                        -> PyResult<Option<Bound<'py, PyAny>>> {
        let caches = std::mem::take(&mut *self.caches.lock().unwrap_or_else(|e| e.into_inner()));
        let out = self.record.bind(py).call0()?.downcast_into::<PyList>()?;
        let source = PyTuple::new(py, [path, line.clone()])?.into_any();
        let ctx = Ctx {
            py,
            span_t: self.span.bind(py).clone(),
            event_t: self.event.bind(py).clone(),
            link_t: self.link.bind(py).clone(),
            none: self.none.bind(py).clone(),
            caches: RefCell::new(caches),
            err: RefCell::new(None),
            out,
            index: RefCell::new(FxHashMap::default()),
            groups: RefCell::new(Vec::new()),
            rooted: PyList::empty(py),
            source,
            empty: PyString::new(py, ""),
        };
        let mut de = serde_json::Deserializer::from_slice(raw);
        let parsed = ExportSeed(&ctx).deserialize(&mut de).and_then(|()| de.end());
        *self.caches.lock().unwrap_or_else(|e| e.into_inner()) = std::mem::take(&mut *ctx.caches.borrow_mut());
        if let Some(err) = ctx.err.borrow_mut().take() {
            return Err(err);
        }
        if parsed.is_err() {
            return Ok(None);
        }
        let traces = PyDict::new(py);
        for group in ctx.groups.borrow().iter() {
            traces.set_item(&group.id, &group.spans)?;
        }
        let out = ctx.out.into_any();
        out.setattr(intern!(py, "traces"), traces)?;
        out.setattr(intern!(py, "rooted"), ctx.rooted)?;
        out.setattr(intern!(py, "line"), line)?;
        Ok(Some(out))
    }
}

struct Group<'py> {
    raw: [u8; 32],
    id: Bound<'py, PyString>,
    spans: Bound<'py, PyList>,
}

/// What one `read` call builds, shared by the visitors.
struct Ctx<'py> {
    py: Python<'py>,
    span_t: Bound<'py, PyAny>,
    event_t: Bound<'py, PyAny>,
    link_t: Bound<'py, PyAny>,
    none: Bound<'py, PyAny>,
    caches: RefCell<Caches>,
    err: RefCell<Option<PyErr>>,
    out: Bound<'py, PyList>,
    index: RefCell<FxHashMap<[u8; 32], usize>>,
    groups: RefCell<Vec<Group<'py>>>,
    rooted: Bound<'py, PyList>,
    source: Bound<'py, PyAny>,
    empty: Bound<'py, PyString>,
}

impl<'py> Ctx<'py> {
    /// A Python error while building: kept (raised by `read`), and the parse stopped.
    fn fail<E: de::Error>(&self, err: PyErr) -> E {
        *self.err.borrow_mut() = Some(err);
        E::custom("python error")
    }

    fn key(&self, text: &str) -> Bound<'py, PyString> {
        if text.len() > KEY_CACHE_MAX_LEN {
            return PyString::new(self.py, text);
        }
        let mut caches = self.caches.borrow_mut();
        if let Some(key) = caches.keys.get(text) {
            return key.bind(self.py).clone();
        }
        if caches.keys.len() >= CACHE_LIMIT {
            caches.keys.clear();
        }
        let key = PyString::intern(self.py, text);
        caches.keys.insert(text.into(), key.clone().unbind());
        key
    }

    fn trace_str(&self, lower: &[u8; 32]) -> Bound<'py, PyString> {
        let mut caches = self.caches.borrow_mut();
        if let Some(id) = caches.traces.get(lower) {
            return id.bind(self.py).clone();
        }
        if caches.traces.len() >= CACHE_LIMIT {
            caches.traces.clear();
        }
        let id = PyString::new(self.py, ascii(lower));
        caches.traces.insert(*lower, id.clone().unbind());
        id
    }

    /// `callable(*args)` through vectorcall (Struct constructors take positional arguments in C).
    fn call<E: de::Error>(&self, callable: &Bound<'py, PyAny>, args: &[&Bound<'py, PyAny>]) -> Result<Bound<'py, PyAny>, E> {
        let mut ptrs: [*mut ffi::PyObject; 16] = [std::ptr::null_mut(); 16];
        assert!(args.len() <= ptrs.len(), "more arguments than slots"); // (a panic: `read` declines)
        for (slot, arg) in ptrs.iter_mut().zip(args) {
            *slot = arg.as_ptr();
        }
        unsafe {
            let result = ffi::PyObject_Vectorcall(callable.as_ptr(), ptrs.as_ptr(), args.len(), std::ptr::null_mut());
            Bound::from_owned_ptr_or_err(self.py, result).map_err(|e| self.fail(e))
        }
    }
}

fn ascii(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or("")
}

fn decline<E: de::Error>(why: &'static str) -> E {
    E::custom(why)
}

/// Lowercase hex digits of an id of exactly N hex characters (the typed path reads other forms).
fn hex_id<const N: usize, E: de::Error>(text: &str) -> Result<[u8; N], E> {
    let bytes = text.as_bytes();
    if bytes.len() != N {
        return Err(decline("id length"));
    }
    let mut out = [0u8; N];
    for (slot, &c) in out.iter_mut().zip(bytes) {
        *slot = match c {
            b'0'..=b'9' | b'a'..=b'f' => c,
            b'A'..=b'F' => c + 32,
            _ => return Err(decline("id not hex")),
        };
    }
    Ok(out)
}

/// An int64 written as `-?[0-9]+` (what `int()` reads to the same value; other forms are declined).
fn parse_int(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        rest => (false, rest),
    };
    if digits.is_empty() {
        return None;
    }
    let mut value: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_sub((c - b'0') as i64)?;
    }
    if negative { Some(value) } else { value.checked_neg() }
}

fn new_int(py: Python<'_>, value: i64) -> Bound<'_, PyAny> {
    unsafe { Bound::from_owned_ptr(py, ffi::PyLong_FromLongLong(value)) }
}

macro_rules! expecting {
    ($what:literal) => {
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str($what)
        }
    };
}

/// Skips a value the typed Structs do not read (they ignore unknown fields, except where noted).
fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<IgnoredAny>().map(|_| ())
}

/// A field seen twice in one object: declined (what msgspec does with it is not worth matching).
fn once<E: de::Error>(seen: &mut u32, bit: u32) -> Result<(), E> {
    if *seen & bit != 0 {
        return Err(decline("duplicate field"));
    }
    *seen |= bit;
    Ok(())
}

// --- scalars --------------------------------------------------------------------------------------

/// A JSON string, handed to a closure (borrowed from the input, or unescaped).
struct Str<F>(F);

impl<'de, T, F: FnOnce(&str) -> Result<T, &'static str>> DeserializeSeed<'de> for Str<F> {
    type Value = T;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, T, F: FnOnce(&str) -> Result<T, &'static str>> Visitor<'de> for Str<F> {
    type Value = T;
    expecting!("a string");
    fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
        (self.0)(text).map_err(E::custom)
    }
}

/// An int64 given as a JSON integer or (if `strings`) as a string of digits.
struct Int64 {
    strings: bool,
}

impl<'de> DeserializeSeed<'de> for Int64 {
    type Value = i64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<i64, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Int64 {
    type Value = i64;
    expecting!("an int64");
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| decline("int out of int64"))
    }
    fn visit_str<E: de::Error>(self, text: &str) -> Result<i64, E> {
        if !self.strings {
            return Err(decline("string for an int"));
        }
        parse_int(text).ok_or_else(|| decline("int64 string"))
    }
}

/// A small enum (span kind, status code): a JSON integer in 0..=max.
struct Enum(u64);

impl<'de> DeserializeSeed<'de> for Enum {
    type Value = u64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Enum {
    type Value = u64;
    expecting!("an enum number");
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        if v <= self.0 { Ok(v) } else { Err(decline("enum out of range")) }
    }
}

struct Double;

impl<'de> DeserializeSeed<'de> for Double {
    type Value = f64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<f64, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Double {
    type Value = f64;
    expecting!("a number");
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        // serde_json reads the integer `-0` as -0.0 (msgspec: 0.0): a negative zero is declined
        if v == 0.0 && v.is_sign_negative() { Err(decline("negative zero")) } else { Ok(v) }
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }
}

struct Flag;

impl<'de> DeserializeSeed<'de> for Flag {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Flag {
    type Value = bool;
    expecting!("a bool");
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        Ok(v)
    }
}

// --- attributes -----------------------------------------------------------------------------------

/// An AnyValue with exactly one of stringValue, intValue, doubleValue, boolValue, arrayValue (not
/// inside an array: `nested`); anything else is declined (`otlp_typed.Value` forbids unknown fields,
/// and `_value_typed` raises unless exactly one field is set).
struct AnyValue<'c, 'py> {
    ctx: &'c Ctx<'py>,
    nested: bool,
}

impl<'de, 'c, 'py> DeserializeSeed<'de> for AnyValue<'c, 'py> {
    type Value = Bound<'py, PyAny>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'c, 'py> Visitor<'de> for AnyValue<'c, 'py> {
    type Value = Bound<'py, PyAny>;
    expecting!("an AnyValue object");
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let py = self.ctx.py;
        let mut value = None;
        while let Some(key) = map.next_key::<&str>()? {
            if value.is_some() {
                return Err(decline("AnyValue with two fields"));
            }
            value = Some(match key {
                "stringValue" => map.next_value_seed(Str(|s: &str| Ok(PyString::new(py, s).into_any())))?,
                "intValue" => new_int(py, map.next_value_seed(Int64 { strings: true })?),
                "doubleValue" => PyFloat::new(py, map.next_value_seed(Double)?).into_any(),
                "boolValue" => PyBool::new(py, map.next_value_seed(Flag)?).to_owned().into_any(),
                "arrayValue" if !self.nested => map.next_value_seed(ArrayValue(self.ctx))?,
                _ => return Err(decline("AnyValue kind")),
            });
        }
        value.ok_or_else(|| decline("empty AnyValue"))
    }
}

struct ArrayValue<'c, 'py>(&'c Ctx<'py>);

impl<'de, 'c, 'py> DeserializeSeed<'de> for ArrayValue<'c, 'py> {
    type Value = Bound<'py, PyAny>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'c, 'py> Visitor<'de> for ArrayValue<'c, 'py> {
    type Value = Bound<'py, PyAny>;
    expecting!("an arrayValue object");
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let values = PyList::empty(self.0.py);
        let mut seen = 0;
        while let Some(key) = map.next_key::<&str>()? {
            match key {
                "values" => {
                    once(&mut seen, 1)?;
                    map.next_value_seed(Elements { ctx: self.0, list: &values })?;
                }
                _ => skip(&mut map)?,
            }
        }
        Ok(values.into_any())
    }
}

struct Elements<'c, 'l, 'py> {
    ctx: &'c Ctx<'py>,
    list: &'l Bound<'py, PyList>,
}

impl<'de, 'c, 'l, 'py> DeserializeSeed<'de> for Elements<'c, 'l, 'py> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, 'c, 'l, 'py> Visitor<'de> for Elements<'c, 'l, 'py> {
    type Value = ();
    expecting!("a list of AnyValues");
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element_seed(AnyValue { ctx: self.ctx, nested: true })? {
            self.list.append(item).map_err(|e| self.ctx.fail(e))?;
        }
        Ok(())
    }
}

/// A list of KeyValues, into `dict` (later keys replace earlier ones, as `_attributes_typed` does).
struct Attributes<'c, 'd, 'py> {
    ctx: &'c Ctx<'py>,
    dict: &'d Bound<'py, PyDict>,
}

impl<'de, 'c, 'd, 'py> DeserializeSeed<'de> for Attributes<'c, 'd, 'py> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, 'c, 'd, 'py> Visitor<'de> for Attributes<'c, 'd, 'py> {
    type Value = ();
    expecting!("a list of KeyValues");
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(KeyValue { ctx: self.ctx, dict: self.dict })?.is_some() {}
        Ok(())
    }
}

struct KeyValue<'c, 'd, 'py> {
    ctx: &'c Ctx<'py>,
    dict: &'d Bound<'py, PyDict>,
}

impl<'de, 'c, 'd, 'py> DeserializeSeed<'de> for KeyValue<'c, 'd, 'py> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'c, 'd, 'py> Visitor<'de> for KeyValue<'c, 'd, 'py> {
    type Value = ();
    expecting!("a KeyValue object");
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let ctx = self.ctx;
        let (mut key, mut value, mut seen) = (None, None, 0);
        while let Some(field) = map.next_key::<&str>()? {
            match field {
                "key" => {
                    once(&mut seen, 1)?;
                    key = Some(map.next_value_seed(Str(|s: &str| Ok(ctx.key(s))))?);
                }
                "value" => {
                    once(&mut seen, 2)?;
                    value = Some(map.next_value_seed(AnyValue { ctx, nested: false })?);
                }
                _ => skip(&mut map)?,
            }
        }
        match (key, value) {
            (Some(key), Some(value)) => self.dict.set_item(key, value).map_err(|e| ctx.fail(e)),
            _ => Err(decline("KeyValue without key or value")),
        }
    }
}

// --- spans ----------------------------------------------------------------------------------------

/// An object with only `attributes` read (Resource), into `dict`.
struct AttributesOf<'c, 'd, 'py> {
    ctx: &'c Ctx<'py>,
    dict: &'d Bound<'py, PyDict>,
}

impl<'de, 'c, 'd, 'py> DeserializeSeed<'de> for AttributesOf<'c, 'd, 'py> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'c, 'd, 'py> Visitor<'de> for AttributesOf<'c, 'd, 'py> {
    type Value = ();
    expecting!("an object with attributes");
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = 0;
        while let Some(field) = map.next_key::<&str>()? {
            match field {
                "attributes" => {
                    once(&mut seen, 1)?;
                    map.next_value_seed(Attributes { ctx: self.ctx, dict: self.dict })?;
                }
                _ => skip(&mut map)?,
            }
        }
        Ok(())
    }
}

/// The scope's name ("" if it has none).
struct ScopeName<'c, 'py>(&'c Ctx<'py>);

impl<'de, 'c, 'py> DeserializeSeed<'de> for ScopeName<'c, 'py> {
    type Value = Bound<'py, PyString>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'c, 'py> Visitor<'de> for ScopeName<'c, 'py> {
    type Value = Bound<'py, PyString>;
    expecting!("a scope object");
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let py = self.0.py;
        let (mut name, mut seen) = (None, 0);
        while let Some(field) = map.next_key::<&str>()? {
            match field {
                "name" => {
                    once(&mut seen, 1)?;
                    name = Some(map.next_value_seed(Str(|s: &str| Ok(PyString::new(py, s))))?);
                }
                _ => skip(&mut map)?,
            }
        }
        Ok(name.unwrap_or_else(|| self.0.empty.clone()))
    }
}

struct StatusOf<'c, 'py>(&'c Ctx<'py>);

impl<'de, 'c, 'py> DeserializeSeed<'de> for StatusOf<'c, 'py> {
    type Value = (u64, Bound<'py, PyString>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'c, 'py> Visitor<'de> for StatusOf<'c, 'py> {
    type Value = (u64, Bound<'py, PyString>);
    expecting!("a status object");
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let py = self.0.py;
        let (mut code, mut message, mut seen) = (0, None, 0);
        while let Some(field) = map.next_key::<&str>()? {
            match field {
                "code" => {
                    once(&mut seen, 1)?;
                    code = map.next_value_seed(Enum(2))?;
                }
                "message" => {
                    once(&mut seen, 2)?;
                    message = Some(map.next_value_seed(Str(|s: &str| Ok(PyString::new(py, s))))?);
                }
                _ => skip(&mut map)?,
            }
        }
        Ok((code, message.unwrap_or_else(|| self.0.empty.clone())))
    }
}

/// Events or links: a new list of them, or the shared empty one (`_NONE`) when there are none.
struct Items<'c, 'py> {
    ctx: &'c Ctx<'py>,
    links: bool,
}

impl<'de, 'c, 'py> DeserializeSeed<'de> for Items<'c, 'py> {
    type Value = Bound<'py, PyAny>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, 'c, 'py> Visitor<'de> for Items<'c, 'py> {
    type Value = Bound<'py, PyAny>;
    expecting!("a list of events or links");
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut list: Option<Bound<'py, PyList>> = None;
        loop {
            let item = if self.links {
                seq.next_element_seed(LinkOf(self.ctx))?
            } else {
                seq.next_element_seed(EventOf(self.ctx))?
            };
            let Some(item) = item else { break };
            let list = list.get_or_insert_with(|| PyList::empty(self.ctx.py));
            list.append(item).map_err(|e| self.ctx.fail(e))?;
        }
        Ok(match list {
            Some(list) => list.into_any(),
            None => self.ctx.none.clone(),
        })
    }
}

struct EventOf<'c, 'py>(&'c Ctx<'py>);

impl<'de, 'c, 'py> DeserializeSeed<'de> for EventOf<'c, 'py> {
    type Value = Bound<'py, PyAny>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'c, 'py> Visitor<'de> for EventOf<'c, 'py> {
    type Value = Bound<'py, PyAny>;
    expecting!("an event object");
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let ctx = self.0;
        let py = ctx.py;
        let attributes = PyDict::new(py);
        let (mut name, mut time, mut seen) = (None, 0, 0);
        while let Some(field) = map.next_key::<&str>()? {
            match field {
                "name" => {
                    once(&mut seen, 1)?;
                    name = Some(map.next_value_seed(Str(|s: &str| Ok(PyString::new(py, s))))?);
                }
                "timeUnixNano" => {
                    once(&mut seen, 2)?;
                    time = map.next_value_seed(Int64 { strings: true })?;
                }
                "attributes" => {
                    once(&mut seen, 4)?;
                    map.next_value_seed(Attributes { ctx, dict: &attributes })?;
                }
                _ => skip(&mut map)?,
            }
        }
        let name = name.unwrap_or_else(|| ctx.empty.clone()).into_any();
        ctx.call(&ctx.event_t, &[&name, &new_int(py, time), attributes.as_any()])
    }
}

struct LinkOf<'c, 'py>(&'c Ctx<'py>);

impl<'de, 'c, 'py> DeserializeSeed<'de> for LinkOf<'c, 'py> {
    type Value = Bound<'py, PyAny>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'c, 'py> Visitor<'de> for LinkOf<'c, 'py> {
    type Value = Bound<'py, PyAny>;
    expecting!("a link object");
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let ctx = self.0;
        let py = ctx.py;
        let attributes = PyDict::new(py);
        let (mut trace, mut span, mut seen) = (None, None, 0);
        while let Some(field) = map.next_key::<&str>()? {
            match field {
                "traceId" => {
                    once(&mut seen, 1)?;
                    trace = Some(map.next_value_seed(Str(|s: &str| hex_id::<32, serde_json::Error>(s).map_err(|_| "id")))?);
                }
                "spanId" => {
                    once(&mut seen, 2)?;
                    span = Some(map.next_value_seed(Str(|s: &str| hex_id::<16, serde_json::Error>(s).map_err(|_| "id")))?);
                }
                "attributes" => {
                    once(&mut seen, 4)?;
                    map.next_value_seed(Attributes { ctx, dict: &attributes })?;
                }
                _ => skip(&mut map)?,
            }
        }
        let (Some(trace), Some(span)) = (trace, span) else { return Err(decline("link without ids")) };
        let trace = ctx.trace_str(&trace).into_any();
        let span = PyString::new(py, ascii(&span)).into_any();
        ctx.call(&ctx.link_t, &[&trace, &span, attributes.as_any()])
    }
}

/// One span: built and added to the record and to its trace's group.
struct SpanOf<'c, 'r, 'py> {
    ctx: &'c Ctx<'py>,
    resource: &'r Bound<'py, PyDict>,
    scope: &'r Bound<'py, PyString>,
}

impl<'de, 'c, 'r, 'py> DeserializeSeed<'de> for SpanOf<'c, 'r, 'py> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'c, 'r, 'py> Visitor<'de> for SpanOf<'c, 'r, 'py> {
    type Value = ();
    expecting!("a span object");
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let ctx = self.ctx;
        let py = ctx.py;
        let attributes = PyDict::new(py);
        let mut trace: Option<[u8; 32]> = None;
        let mut trace_raw = [0u8; 32];
        let mut span_id: Option<[u8; 16]> = None;
        let mut parent: Option<[u8; 16]> = None;
        let (mut name, mut kind, mut start, mut end, mut status) = (None, 0, 0, 0, None);
        let (mut events, mut links) = (None, None);
        let mut seen = 0u32;
        while let Some(field) = map.next_key::<&str>()? {
            match field {
                "traceId" => {
                    once(&mut seen, 1)?;
                    let (lower, raw) = map.next_value_seed(Str(|s: &str| {
                        let lower = hex_id::<32, serde_json::Error>(s).map_err(|_| "trace id")?;
                        let mut raw = [0u8; 32];
                        raw.copy_from_slice(s.as_bytes());
                        Ok((lower, raw))
                    }))?;
                    trace = Some(lower);
                    trace_raw = raw;
                }
                "spanId" => {
                    once(&mut seen, 2)?;
                    span_id = Some(map.next_value_seed(Str(|s: &str| hex_id::<16, serde_json::Error>(s).map_err(|_| "span id")))?);
                }
                "parentSpanId" => {
                    once(&mut seen, 4)?;
                    parent = map.next_value_seed(Str(|s: &str| {
                        if s.is_empty() { Ok(None) } else { hex_id::<16, serde_json::Error>(s).map(Some).map_err(|_| "parent id") }
                    }))?;
                }
                "name" => {
                    once(&mut seen, 8)?;
                    name = Some(map.next_value_seed(Str(|s: &str| Ok(PyString::new(py, s))))?);
                }
                "kind" => {
                    once(&mut seen, 16)?;
                    kind = map.next_value_seed(Enum(5))?;
                }
                "startTimeUnixNano" => {
                    once(&mut seen, 32)?;
                    start = map.next_value_seed(Int64 { strings: true })?;
                }
                "endTimeUnixNano" => {
                    once(&mut seen, 64)?;
                    end = map.next_value_seed(Int64 { strings: true })?;
                }
                "attributes" => {
                    once(&mut seen, 128)?;
                    map.next_value_seed(Attributes { ctx, dict: &attributes })?;
                }
                "events" => {
                    once(&mut seen, 256)?;
                    events = Some(map.next_value_seed(Items { ctx, links: false })?);
                }
                "links" => {
                    once(&mut seen, 512)?;
                    links = Some(map.next_value_seed(Items { ctx, links: true })?);
                }
                "status" => {
                    once(&mut seen, 1024)?;
                    status = Some(map.next_value_seed(StatusOf(ctx))?);
                }
                // declared `Raw` in `otlp_typed.Span`: known, not read
                "traceState" => {
                    once(&mut seen, 2048)?;
                    skip(&mut map)?;
                }
                "flags" => {
                    once(&mut seen, 4096)?;
                    skip(&mut map)?;
                }
                "droppedAttributesCount" => {
                    once(&mut seen, 8192)?;
                    skip(&mut map)?;
                }
                "droppedEventsCount" => {
                    once(&mut seen, 16384)?;
                    skip(&mut map)?;
                }
                "droppedLinksCount" => {
                    once(&mut seen, 32768)?;
                    skip(&mut map)?;
                }
                _ => return Err(decline("unknown span field")),  // `otlp_typed.Span` forbids them
            }
        }
        let (Some(trace), Some(span_id)) = (trace, span_id) else { return Err(decline("span without ids")) };
        let (trace_id, group) = {
            let mut index = ctx.index.borrow_mut();
            let mut groups = ctx.groups.borrow_mut();
            let at = match index.get(&trace) {
                Some(&at) => {
                    if groups[at].raw != trace_raw {
                        return Err(decline("one trace id in two cases"));  // `_typed_spans` groups span by span
                    }
                    at
                }
                None => {
                    index.insert(trace, groups.len());
                    groups.push(Group { raw: trace_raw, id: ctx.trace_str(&trace), spans: PyList::empty(py) });
                    groups.len() - 1
                }
            };
            (groups[at].id.clone(), groups[at].spans.clone())
        };
        let trace_id = trace_id.into_any();
        let parent = match parent {
            Some(parent) => PyString::new(py, ascii(&parent)).into_any(),
            None => {
                ctx.rooted.append(&trace_id).map_err(|e| ctx.fail(e))?;
                py.None().into_bound(py)
            }
        };
        let (code, message) = status.unwrap_or_else(|| (0, ctx.empty.clone()));
        let args = [
            &trace_id,
            &PyString::new(py, ascii(&span_id)).into_any(),
            &parent,
            &name.unwrap_or_else(|| ctx.empty.clone()).into_any(),
            &new_int(py, start),
            &new_int(py, end),
            &new_int(py, code as i64),
            message.as_any(),
            attributes.as_any(),
            &events.unwrap_or_else(|| ctx.none.clone()),
            &links.unwrap_or_else(|| ctx.none.clone()),
            self.resource.as_any(),
            &ctx.source,
            &new_int(py, kind as i64),
            self.scope.as_any(),
        ];
        let span = ctx.call(&ctx.span_t, &args)?;
        ctx.out.append(&span).map_err(|e| ctx.fail(e))?;
        group.append(&span).map_err(|e| ctx.fail(e))
    }
}

struct SpanList<'c, 'r, 'py> {
    ctx: &'c Ctx<'py>,
    resource: &'r Bound<'py, PyDict>,
    scope: &'r Bound<'py, PyString>,
}

impl<'de, 'c, 'r, 'py> DeserializeSeed<'de> for SpanList<'c, 'r, 'py> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, 'c, 'r, 'py> Visitor<'de> for SpanList<'c, 'r, 'py> {
    type Value = ();
    expecting!("a list of spans");
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(SpanOf { ctx: self.ctx, resource: self.resource, scope: self.scope })?.is_some() {}
        Ok(())
    }
}

struct ScopeSpans<'c, 'r, 'py> {
    ctx: &'c Ctx<'py>,
    resource: &'r Bound<'py, PyDict>,
}

impl<'de, 'c, 'r, 'py> DeserializeSeed<'de> for ScopeSpans<'c, 'r, 'py> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'c, 'r, 'py> Visitor<'de> for ScopeSpans<'c, 'r, 'py> {
    type Value = ();
    expecting!("a scopeSpans object");
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let ctx = self.ctx;
        let mut scope: Option<Bound<'py, PyString>> = None;
        let mut spans_at: Option<(usize, usize)> = None;  // this scope's spans in the record, read before `scope`
        let mut seen = 0;
        while let Some(field) = map.next_key::<&str>()? {
            match field {
                "scope" => {
                    once(&mut seen, 1)?;
                    scope = Some(map.next_value_seed(ScopeName(ctx))?);
                }
                "spans" => {
                    once(&mut seen, 2)?;
                    let first = ctx.out.len();
                    let name = scope.clone().unwrap_or_else(|| ctx.empty.clone());
                    map.next_value_seed(SpanList { ctx, resource: self.resource, scope: &name })?;
                    if scope.is_none() {
                        spans_at = Some((first, ctx.out.len()));
                    }
                }
                "instrumentationLibrary" => return Err(decline("instrumentationLibrary")),  // the orjson path reads it
                _ => skip(&mut map)?,
            }
        }
        if seen & 2 == 0 {
            return Err(decline("scopeSpans without spans"));
        }
        if let (Some(name), Some((first, last))) = (scope, spans_at) {
            for at in first..last {
                let span = ctx.out.get_item(at).map_err(|e| ctx.fail(e))?;
                span.setattr(intern!(ctx.py, "scope"), &name).map_err(|e| ctx.fail(e))?;
            }
        }
        Ok(())
    }
}

struct ResourceSpans<'c, 'py>(&'c Ctx<'py>);

impl<'de, 'c, 'py> DeserializeSeed<'de> for ResourceSpans<'c, 'py> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'c, 'py> Visitor<'de> for ResourceSpans<'c, 'py> {
    type Value = ();
    expecting!("a resourceSpans object");
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let ctx = self.0;
        let resource = PyDict::new(ctx.py);  // shared by its spans; filled where `resource` comes
        let mut seen = 0;
        while let Some(field) = map.next_key::<&str>()? {
            match field {
                "resource" => {
                    once(&mut seen, 1)?;
                    map.next_value_seed(AttributesOf { ctx, dict: &resource })?;
                }
                "scopeSpans" => {
                    once(&mut seen, 2)?;
                    map.next_value_seed(EachScope { ctx, resource: &resource })?;
                }
                _ => skip(&mut map)?,
            }
        }
        if seen & 2 == 0 {
            return Err(decline("resourceSpans without scopeSpans"));
        }
        Ok(())
    }
}

struct EachScope<'c, 'r, 'py> {
    ctx: &'c Ctx<'py>,
    resource: &'r Bound<'py, PyDict>,
}

impl<'de, 'c, 'r, 'py> DeserializeSeed<'de> for EachScope<'c, 'r, 'py> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, 'c, 'r, 'py> Visitor<'de> for EachScope<'c, 'r, 'py> {
    type Value = ();
    expecting!("a list of scopeSpans");
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(ScopeSpans { ctx: self.ctx, resource: self.resource })?.is_some() {}
        Ok(())
    }
}

struct EachResource<'c, 'py>(&'c Ctx<'py>);

impl<'de, 'c, 'py> DeserializeSeed<'de> for EachResource<'c, 'py> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, 'c, 'py> Visitor<'de> for EachResource<'c, 'py> {
    type Value = ();
    expecting!("a list of resourceSpans");
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(ResourceSpans(self.0))?.is_some() {}
        Ok(())
    }
}

struct ExportSeed<'c, 'py>(&'c Ctx<'py>);

impl<'de, 'c, 'py> DeserializeSeed<'de> for ExportSeed<'c, 'py> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'c, 'py> Visitor<'de> for ExportSeed<'c, 'py> {
    type Value = ();
    expecting!("an ExportTraceServiceRequest object");
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = 0;
        while let Some(field) = map.next_key::<&str>()? {
            match field {
                "resourceSpans" => {
                    once(&mut seen, 1)?;
                    map.next_value_seed(EachResource(self.0))?;
                }
                _ => skip(&mut map)?,
            }
        }
        if seen == 0 {
            return Err(decline("no resourceSpans"));
        }
        Ok(())
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Reader>()?;
    Ok(())
}

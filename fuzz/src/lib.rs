//! What the fuzz targets share: tiny trained runs to start from (made once per process, the way
//! the tests make theirs), the device, and structure-aware edits of JSON and safetensors files.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use arbitrary::Arbitrary;
use attnzoo::translation::{train, AttentionKind, ModelKind, TrainSpec, Translator};
use attnzoo_backends::{Backend, DeviceSpec};
use burn::tensor::Device;
use serde_json::Value;

/// The CPU device every target runs on.
pub fn device() -> &'static Device {
    static DEVICE: OnceLock<Device> = OnceLock::new();
    DEVICE.get_or_init(|| {
        Backend::Ndarray
            .open(DeviceSpec::Cpu)
            .expect("ndarray opens")
    })
}

/// A folder that lives as long as the process.
fn scratch() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary folder"))
        .path()
}

/// A fresh folder inside the process's scratch folder, named `name` (emptied first).
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = scratch().join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

const SUBJECTS: [(&str, &str); 3] = [
    ("Der Hund", "The dog"),
    ("Die Katze", "The cat"),
    ("Das Kind", "The child"),
];
const VERBS: [(&str, &str); 3] = [("schläft", "sleeps"), ("läuft", "runs"), ("isst", "eats")];

/// An invented corpus of 9 pairs per split and a lexicon of their words.
fn corpus() -> PathBuf {
    let dir = scratch().join("corpus");
    if dir.is_dir() {
        return dir;
    }
    fs::create_dir_all(&dir).expect("a corpus folder");
    let mut text = String::new();
    for (de_s, en_s) in SUBJECTS {
        for (de_v, en_v) in VERBS {
            let _ = writeln!(text, "{de_s} {de_v} hier.\t{en_s} {en_v} here.");
        }
    }
    for split in ["train.tsv", "valid.tsv", "test.tsv"] {
        fs::write(dir.join(split), &text).expect("a corpus file");
    }
    let lexicon: String = SUBJECTS
        .iter()
        .chain(&VERBS)
        .map(|(de, en)| format!("{de}\t{en}\n"))
        .collect();
    fs::write(dir.join("lexicon.tsv"), lexicon).expect("the lexicon");
    dir
}

/// A run of `model` trained for one epoch (hidden 16, one layer): a complete checkpoint folder.
pub fn tiny_run(model: ModelKind) -> &'static Path {
    static RUNS: [OnceLock<PathBuf>; 2] = [OnceLock::new(), OnceLock::new()];
    let index = usize::from(model == ModelKind::Rnn);
    RUNS[index].get_or_init(|| {
        let out = scratch().join(format!("run-{index}"));
        let spec = TrainSpec {
            model,
            attention: AttentionKind::Bahdanau,
            hidden: 16,
            layers: 1,
            dropout: 0.1,
            lexical_bias: true,
            config: model
                .train_config()
                .with_epochs(1)
                .with_batch_size(4)
                .with_warmup_steps(1),
            epochs: None,
            resume: false,
            corpus: Some(corpus()),
        };
        train(&spec, &out, None, device()).expect("the tiny run trains");
        out
    })
}

/// The tiny Transformer, loaded.
pub fn tiny_translator() -> &'static Translator {
    static TRANSLATOR: OnceLock<Translator> = OnceLock::new();
    TRANSLATOR.get_or_init(|| {
        Translator::load(tiny_run(ModelKind::Transformer), device()).expect("the tiny run loads")
    })
}

/// A JSON value to put somewhere: ordinary values, the awkward numbers JSON allows
/// (`Raw`, spliced in as text) and names of safetensors' data types.
#[derive(Arbitrary, Debug)]
pub enum JsonValue {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A non-negative integer.
    Unsigned(u64),
    /// A negative or positive integer.
    Signed(i64),
    /// A float (non-finite ones become `null`, as serde_json writes them).
    Float(f64),
    /// A string.
    Str(String),
    /// A number token that no Rust number holds.
    Raw(RawNumber),
    /// One of safetensors' data type names, or a wrong one.
    Dtype(u8),
    /// An array.
    Array(Vec<JsonValue>),
    /// An object.
    Object(Vec<(String, JsonValue)>),
}

/// Number tokens beyond `u64`/`f64`.
#[derive(Arbitrary, Debug)]
pub enum RawNumber {
    /// `n` nines (up to 400 digits).
    Digits(u16),
    /// `1e<exponent>`.
    Exponent(i16),
    /// `-0`.
    NegativeZero,
    /// `-` and `n` nines.
    Negative(u16),
}

const DTYPES: [&str; 12] = [
    "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL", "F8_E4M3", "F4",
];

impl JsonValue {
    /// The value, with each raw number a placeholder string recorded in `raw`.
    fn to_value(&self, raw: &mut Vec<String>) -> Value {
        match self {
            JsonValue::Null => Value::Null,
            JsonValue::Bool(b) => Value::Bool(*b),
            JsonValue::Unsigned(n) => Value::from(*n),
            JsonValue::Signed(n) => Value::from(*n),
            JsonValue::Float(x) => {
                serde_json::Number::from_f64(*x).map_or(Value::Null, Value::Number)
            }
            JsonValue::Str(s) => Value::String(s.clone()),
            JsonValue::Raw(number) => {
                let token = match number {
                    RawNumber::Digits(n) => "9".repeat(usize::from(*n % 400) + 1),
                    RawNumber::Exponent(e) => format!("1e{e}"),
                    RawNumber::NegativeZero => "-0".into(),
                    RawNumber::Negative(n) => format!("-{}", "9".repeat(usize::from(*n % 400) + 1)),
                };
                raw.push(token);
                Value::String(format!("\u{1}raw{}\u{1}", raw.len() - 1))
            }
            JsonValue::Dtype(i) => Value::String(DTYPES[usize::from(*i) % DTYPES.len()].into()),
            JsonValue::Array(items) => {
                Value::Array(items.iter().map(|v| v.to_value(raw)).collect())
            }
            JsonValue::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value(raw)))
                    .collect(),
            ),
        }
    }
}

/// One change to a JSON document: `path` picks a node (each step an index into the children,
/// modulo their number), `op` changes it.
#[derive(Arbitrary, Debug)]
pub struct JsonEdit {
    path: Vec<u8>,
    op: JsonOp,
}

/// What a [`JsonEdit`] does to its node.
#[derive(Arbitrary, Debug)]
pub enum JsonOp {
    /// Replaces it.
    Set(JsonValue),
    /// Removes it from its parent.
    Remove,
    /// Adds a field (to an object) or an element (to an array).
    Insert(String, JsonValue),
    /// Wraps it in `depth` arrays (deep nesting).
    Nest(u16),
}

/// Applies `edits` to the JSON text `text`; text that is not JSON is returned as it is.
pub fn edit_json(text: &[u8], edits: &[JsonEdit]) -> Vec<u8> {
    let Ok(mut root) = serde_json::from_slice::<Value>(text) else {
        return text.to_vec();
    };
    let mut raw = Vec::new();
    let mut nests = Vec::new();
    for edit in edits {
        apply(&mut root, &edit.path, &edit.op, &mut raw, &mut nests);
    }
    let mut out = serde_json::to_string_pretty(&root).expect("a Value serialises");
    for (i, token) in raw.iter().enumerate() {
        out = out.replace(&format!("\"\\u0001raw{i}\\u0001\""), token);
    }
    for (i, depth) in nests.iter().enumerate() {
        // Up to 100 000 levels: far past any recursion limit a parser has.
        let depth = usize::from(*depth) % 50_000 * 2;
        out = out.replace(
            &format!("\"\\u0001nest{i}\\u0001\""),
            &format!("{}0{}", "[".repeat(depth), "]".repeat(depth)),
        );
    }
    out.into_bytes()
}

fn apply(node: &mut Value, path: &[u8], op: &JsonOp, raw: &mut Vec<String>, nests: &mut Vec<u16>) {
    let child_count = match node {
        Value::Array(items) => items.len(),
        Value::Object(fields) => fields.len(),
        _ => 0,
    };
    if let (Some((&step, rest)), true) = (path.split_first(), child_count > 0) {
        let index = usize::from(step) % child_count;
        let is_last = rest.is_empty();
        if is_last && matches!(op, JsonOp::Remove) {
            match node {
                Value::Array(items) => {
                    items.remove(index);
                }
                Value::Object(fields) => {
                    let key = fields.keys().nth(index).cloned().expect("in range");
                    fields.remove(&key);
                }
                _ => {}
            }
            return;
        }
        let child = match node {
            Value::Array(items) => &mut items[index],
            Value::Object(fields) => fields.values_mut().nth(index).expect("in range"),
            _ => unreachable!("a node with children"),
        };
        return apply(child, rest, op, raw, nests);
    }
    match op {
        JsonOp::Set(value) => *node = value.to_value(raw),
        JsonOp::Remove => *node = Value::Null,
        JsonOp::Insert(key, value) => match node {
            Value::Array(items) => items.push(value.to_value(raw)),
            Value::Object(fields) => {
                fields.insert(key.clone(), value.to_value(raw));
            }
            _ => *node = value.to_value(raw),
        },
        JsonOp::Nest(depth) => {
            nests.push(*depth);
            *node = Value::String(format!("\u{1}nest{}\u{1}", nests.len() - 1));
        }
    }
}

/// A change to one file of a checkpoint folder.
#[derive(Arbitrary, Debug)]
pub enum FileEdit {
    /// The file as the run wrote it.
    Keep,
    /// No such file.
    Missing,
    /// Other bytes altogether.
    Replace(Vec<u8>),
    /// The first `n` bytes (modulo its length).
    Truncate(u32),
    /// One byte changed.
    Flip {
        /// Where (modulo the length).
        at: u32,
        /// Its new bits, XORed in.
        xor: u8,
    },
    /// Bytes appended.
    Append(Vec<u8>),
    /// A JSON file with fields changed (for safetensors: its header).
    Json(Vec<JsonEdit>),
    /// A safetensors file whose header says it is `header_len` long.
    HeaderLength(u64),
    /// A safetensors file whose tensor data is cut to `n` bytes or padded by `n` zeros.
    Data {
        /// Cut (true) or padded.
        cut: bool,
        /// How many bytes.
        n: u16,
    },
}

impl FileEdit {
    /// `bytes`, changed; `None`: the file is missing.
    pub fn apply(&self, bytes: &[u8], is_safetensors: bool) -> Option<Vec<u8>> {
        let modulo = |n: u32| {
            if bytes.is_empty() {
                0
            } else {
                n as usize % bytes.len()
            }
        };
        Some(match self {
            FileEdit::Keep => bytes.to_vec(),
            FileEdit::Missing => return None,
            FileEdit::Replace(other) => other.clone(),
            FileEdit::Truncate(n) => bytes[..modulo(*n)].to_vec(),
            FileEdit::Flip { at, xor } => {
                let mut out = bytes.to_vec();
                if !out.is_empty() {
                    out[modulo(*at)] ^= xor;
                }
                out
            }
            FileEdit::Append(tail) => [bytes, tail].concat(),
            FileEdit::Json(edits) if is_safetensors => {
                let (header, data) = split_safetensors(bytes);
                let header = edit_json(header, edits);
                [&(header.len() as u64).to_le_bytes()[..], &header, data].concat()
            }
            FileEdit::Json(edits) => edit_json(bytes, edits),
            FileEdit::HeaderLength(n) => {
                let mut out = bytes.to_vec();
                if out.len() >= 8 {
                    out[..8].copy_from_slice(&n.to_le_bytes());
                }
                out
            }
            FileEdit::Data { cut, n } => {
                let mut out = bytes.to_vec();
                if *cut {
                    out.truncate(out.len().saturating_sub(usize::from(*n)));
                } else {
                    out.resize(out.len() + usize::from(*n), 0);
                }
                out
            }
        })
    }
}

/// A safetensors file's JSON header and its data.
fn split_safetensors(bytes: &[u8]) -> (&[u8], &[u8]) {
    let Some(len) = bytes.get(..8) else {
        return (bytes, &[]);
    };
    let len = u64::from_le_bytes(len.try_into().expect("8 bytes")) as usize;
    match bytes.get(8..8usize.saturating_add(len)) {
        Some(header) => (header, &bytes[8 + len..]),
        None => (&bytes[8.min(bytes.len())..], &[]),
    }
}

/// The checksum `state.json` records for a file (FNV-1a, as the checkpoint computes it).
pub fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `state.json` with the checksums of the files in `files` recorded anew, so that edited files
/// get past the checksum check and reach the readers behind it. Not JSON: unchanged.
pub fn rechecksum(state: &[u8], files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let Ok(mut value) = serde_json::from_slice::<Value>(state) else {
        return state.to_vec();
    };
    if let Some(sums) = value.get_mut("checksums").and_then(Value::as_object_mut) {
        for (name, bytes) in files {
            if sums.contains_key(name) {
                sums.insert(name.clone(), Value::from(checksum(bytes)));
            }
        }
    }
    serde_json::to_vec_pretty(&value).expect("a Value serialises")
}

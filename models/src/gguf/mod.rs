//! GGUF, llama.cpp's model file (the `ggml` repository's `docs/gguf.md`): a header, typed
//! metadata (`general.architecture`, `<arch>.*` hyper-parameters, `tokenizer.ggml.*`), tensor
//! infos, and the tensors' data, each at an offset aligned to `general.alignment`.
//!
//! ```text
//! "GGUF" u32 version (2 or 3) | u64 tensor_count | u64 kv_count
//! kv_count × (string key, u32 type, value)          string = u64 length + UTF-8 bytes
//! tensor_count × (string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset)
//! padding to the alignment | data
//! ```
//!
//! The file is memory-mapped, never read into a second copy: a tensor's bytes are a slice of the
//! map. Every count, length and offset is untrusted and checked against the bytes that remain
//! before anything is allocated from it; a bad file is one [`AttnError`] naming the problem.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use memmap2::Mmap;

use crate::error::ensure;
use crate::quant::GgmlType;
use crate::AttnError;

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    /// `UINT8`.
    U8(u8),
    /// `INT8`.
    I8(i8),
    /// `UINT16`.
    U16(u16),
    /// `INT16`.
    I16(i16),
    /// `UINT32`.
    U32(u32),
    /// `INT32`.
    I32(i32),
    /// `FLOAT32`.
    F32(f32),
    /// `BOOL`.
    Bool(bool),
    /// `STRING`.
    Str(String),
    /// `ARRAY` of values of one type.
    Array(Vec<MetaValue>),
    /// `UINT64`.
    U64(u64),
    /// `INT64`.
    I64(i64),
    /// `FLOAT64`.
    F64(f64),
}

impl MetaValue {
    /// A non-negative integer of any width.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            MetaValue::U8(v) => Some(v.into()),
            MetaValue::U16(v) => Some(v.into()),
            MetaValue::U32(v) => Some(v.into()),
            MetaValue::U64(v) => Some(v),
            MetaValue::I8(v) => u64::try_from(v).ok(),
            MetaValue::I16(v) => u64::try_from(v).ok(),
            MetaValue::I32(v) => u64::try_from(v).ok(),
            MetaValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// A signed integer of any width.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            MetaValue::I8(v) => Some(v.into()),
            MetaValue::I16(v) => Some(v.into()),
            MetaValue::I32(v) => Some(v.into()),
            MetaValue::I64(v) => Some(v),
            _ => self.as_u64().and_then(|v| i64::try_from(v).ok()),
        }
    }

    /// A number (integer or float).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            MetaValue::F32(v) => Some(v.into()),
            MetaValue::F64(v) => Some(v),
            _ => self.as_i64().map(|v| v as f64),
        }
    }

    /// A boolean.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            MetaValue::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// A string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            MetaValue::Str(v) => Some(v),
            _ => None,
        }
    }

    /// An array.
    pub fn as_array(&self) -> Option<&[MetaValue]> {
        match self {
            MetaValue::Array(v) => Some(v),
            _ => None,
        }
    }
}

/// A tensor's name, shape, type and place in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    /// Its name, e.g. `blk.0.attn_q.weight`.
    pub name: String,
    /// `ne`: the extent of each dimension, innermost (contiguous) first; a weight of a
    /// `Linear(in → out)` is `[in, out]`.
    pub dims: Vec<usize>,
    /// The element type.
    pub ggml_type: GgmlType,
    /// Start of its bytes in the file.
    pub start: usize,
    /// Its size in bytes.
    pub len: usize,
}

impl TensorInfo {
    /// The number of elements.
    pub fn elements(&self) -> usize {
        self.dims.iter().product()
    }
}

/// An open GGUF file; see the module docs.
#[derive(Debug, Clone)]
pub struct GgufFile {
    /// The format version (2 or 3).
    pub version: u32,
    /// The metadata, by key.
    pub metadata: BTreeMap<String, MetaValue>,
    /// The tensors, in the file's order.
    pub tensors: Vec<TensorInfo>,
    map: Arc<Mmap>,
}

/// Arrays nest at most this deep (the format has no nested arrays in practice).
const MAX_DEPTH: usize = 4;

/// A cursor over untrusted bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], AttnError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len());
        let end = end.ok_or_else(|| {
            AttnError::new(format!(
                "truncated GGUF file: {what} at byte {} needs {n} bytes, {} remain",
                self.pos,
                self.bytes.len() - self.pos
            ))
        })?;
        let slice = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], AttnError> {
        Ok(self.take(N, what)?.try_into().expect("N bytes"))
    }

    fn u32(&mut self, what: &str) -> Result<u32, AttnError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, AttnError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A count of items of at least `min_size` bytes each: checked against the bytes left, so
    /// that no allocation is sized by an unchecked count.
    fn count(&mut self, min_size: usize, what: &str) -> Result<usize, AttnError> {
        let count = self.u64(what)?;
        let left = (self.bytes.len() - self.pos) as u64;
        ensure!(
            count.saturating_mul(min_size.max(1) as u64) <= left,
            "bad GGUF file: {what} is {count}, more than the {left} bytes left can hold"
        );
        Ok(count as usize)
    }

    fn string(&mut self, what: &str) -> Result<String, AttnError> {
        let len = self.count(1, &format!("{what}'s length"))?;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| AttnError::new(format!("bad GGUF file: {what} is not UTF-8")))
    }

    fn value(&mut self, kind: u32, key: &str, depth: usize) -> Result<MetaValue, AttnError> {
        Ok(match kind {
            0 => MetaValue::U8(u8::from_le_bytes(self.array(key)?)),
            1 => MetaValue::I8(i8::from_le_bytes(self.array(key)?)),
            2 => MetaValue::U16(u16::from_le_bytes(self.array(key)?)),
            3 => MetaValue::I16(i16::from_le_bytes(self.array(key)?)),
            4 => MetaValue::U32(self.u32(key)?),
            5 => MetaValue::I32(i32::from_le_bytes(self.array(key)?)),
            6 => MetaValue::F32(f32::from_le_bytes(self.array(key)?)),
            7 => match self.array::<1>(key)?[0] {
                0 => MetaValue::Bool(false),
                1 => MetaValue::Bool(true),
                other => {
                    return Err(AttnError::new(format!(
                        "bad GGUF file: metadata {key} is a bool of value {other}"
                    )))
                }
            },
            8 => MetaValue::Str(self.string(key)?),
            9 => {
                ensure!(
                    depth < MAX_DEPTH,
                    "bad GGUF file: metadata {key} nests arrays deeper than {MAX_DEPTH}"
                );
                let item = self.u32(key)?;
                let size = match item {
                    0 | 1 | 7 => 1,
                    2 | 3 => 2,
                    4..=6 => 4,
                    8..=12 => 8,
                    other => {
                        return Err(AttnError::new(format!(
                            "bad GGUF file: metadata {key} is an array of unknown type {other}"
                        )))
                    }
                };
                let count = self.count(size, &format!("metadata {key}'s length"))?;
                let mut items = Vec::with_capacity(count);
                for _ in 0..count {
                    items.push(self.value(item, key, depth + 1)?);
                }
                MetaValue::Array(items)
            }
            10 => MetaValue::U64(self.u64(key)?),
            11 => MetaValue::I64(i64::from_le_bytes(self.array(key)?)),
            12 => MetaValue::F64(f64::from_le_bytes(self.array(key)?)),
            other => {
                return Err(AttnError::new(format!(
                    "bad GGUF file: metadata {key} has unknown type {other}"
                )))
            }
        })
    }
}

impl GgufFile {
    /// Maps and parses a GGUF file.
    pub fn open(path: &Path) -> Result<GgufFile, AttnError> {
        let file = File::open(path)
            .map_err(|error| AttnError::new(format!("cannot open {}: {error}", path.display())))?;
        // SAFETY: the map is read-only; a file truncated by another process while mapped is
        // outside what a model loader can defend against (as for every mmap-based loader).
        let map = unsafe { Mmap::map(&file) }
            .map_err(|error| AttnError::new(format!("cannot map {}: {error}", path.display())))?;
        Self::parse(Arc::new(map))
            .map_err(|error| AttnError::new(format!("{}: {error}", path.display())))
    }

    /// Parses the bytes of a GGUF file (what [`open`](Self::open) does after mapping it).
    fn parse(map: Arc<Mmap>) -> Result<GgufFile, AttnError> {
        let bytes: &[u8] = &map;
        let mut reader = Reader { bytes, pos: 0 };
        ensure!(
            reader.take(4, "the magic")? == b"GGUF",
            "not a GGUF file (its first bytes are not \"GGUF\")"
        );
        let version = reader.u32("the version")?;
        ensure!(
            version == 2 || version == 3,
            "GGUF version {version} is not supported (2 and 3 are)"
        );
        // A tensor info is at least 8 + 4 + 4 + 8 bytes, a key-value pair 8 + 4 + 1.
        let tensor_count = reader.u64("the tensor count")?;
        let kv_count = reader.count(13, "the metadata count")?;
        let mut metadata = BTreeMap::new();
        for _ in 0..kv_count {
            let key = reader.string("a metadata key")?;
            let kind = reader.u32(&key)?;
            let value = reader.value(kind, &key, 0)?;
            metadata.insert(key, value);
        }
        let left = (bytes.len() - reader.pos) as u64;
        ensure!(
            tensor_count.saturating_mul(24) <= left,
            "bad GGUF file: the tensor count is {tensor_count}, more than the {left} bytes left can hold"
        );
        let alignment = match metadata.get("general.alignment") {
            None => 32,
            Some(value) => match value {
                MetaValue::U32(a) if *a > 0 && a.is_power_of_two() => *a as usize,
                other => {
                    return Err(AttnError::new(format!(
                        "bad GGUF file: general.alignment is {other:?}, not a power of two as a u32"
                    )))
                }
            },
        };
        let mut infos = Vec::with_capacity(tensor_count as usize);
        for _ in 0..tensor_count {
            let name = reader.string("a tensor name")?;
            let n_dims = reader.u32(&name)? as usize;
            ensure!(
                (1..=4).contains(&n_dims),
                "bad GGUF file: tensor {name} has {n_dims} dimensions (1 to 4 are allowed)"
            );
            let mut dims = Vec::with_capacity(n_dims);
            for _ in 0..n_dims {
                let dim = reader.u64(&name)?;
                ensure!(
                    (1..=(1 << 40)).contains(&dim),
                    "bad GGUF file: tensor {name} has a dimension of {dim}"
                );
                dims.push(dim as usize);
            }
            let code = reader.u32(&name)?;
            let ggml_type = GgmlType::from_code(code).ok_or_else(|| {
                AttnError::new(format!(
                    "tensor {name} has ggml type {code}, which is not supported ({})",
                    GgmlType::SUPPORTED
                ))
            })?;
            let offset = reader.u64(&name)?;
            infos.push((name, dims, ggml_type, offset));
        }
        let data_start = reader.pos.next_multiple_of(alignment);
        let mut tensors = Vec::with_capacity(infos.len());
        for (name, dims, ggml_type, offset) in infos {
            let elements = dims
                .iter()
                .try_fold(1usize, |n, &d| n.checked_mul(d))
                .filter(|&n| n <= 1 << 40)
                .ok_or_else(|| AttnError::new(format!("tensor {name} is too large")))?;
            ensure!(
                dims[0] % ggml_type.block_elements() == 0,
                "bad GGUF file: tensor {name} has rows of {} elements, not whole {} blocks of {}",
                dims[0],
                ggml_type.name(),
                ggml_type.block_elements()
            );
            let len = elements / ggml_type.block_elements() * ggml_type.block_bytes();
            ensure!(
                offset % alignment as u64 == 0,
                "bad GGUF file: tensor {name} starts at offset {offset}, not a multiple of the alignment {alignment}"
            );
            let start = (data_start as u64).checked_add(offset);
            let end = start.and_then(|start| start.checked_add(len as u64));
            ensure!(
                end.is_some_and(|end| end <= bytes.len() as u64),
                "bad GGUF file: tensor {name} ({len} bytes at offset {offset}) lies outside the file"
            );
            tensors.push(TensorInfo {
                name,
                dims,
                ggml_type,
                start: start.expect("checked") as usize,
                len,
            });
        }
        // ggml lays the tensors out one after another: two that share bytes, or a name given
        // twice, are a malformed file (a loader would read one tensor's bytes as another's).
        let mut by_start: Vec<&TensorInfo> = tensors.iter().collect();
        by_start.sort_by_key(|tensor| tensor.start);
        for pair in by_start.windows(2) {
            ensure!(
                pair[0].start + pair[0].len <= pair[1].start,
                "bad GGUF file: tensors {} and {} overlap (bytes {}..{} and {}..{})",
                pair[0].name,
                pair[1].name,
                pair[0].start,
                pair[0].start + pair[0].len,
                pair[1].start,
                pair[1].start + pair[1].len
            );
        }
        let mut names = std::collections::HashSet::new();
        if let Some(twice) = tensors.iter().find(|tensor| !names.insert(&tensor.name)) {
            return Err(AttnError::new(format!(
                "bad GGUF file: tensor {} is named twice",
                twice.name
            )));
        }
        Ok(GgufFile {
            version,
            metadata,
            tensors,
            map,
        })
    }

    /// The value of a metadata key, if present.
    pub fn get(&self, key: &str) -> Option<&MetaValue> {
        self.metadata.get(key)
    }

    /// A string value, or an error naming the key.
    pub fn string(&self, key: &str) -> Result<&str, AttnError> {
        self.get(key)
            .ok_or_else(|| AttnError::new(format!("GGUF metadata has no {key}")))?
            .as_str()
            .ok_or_else(|| AttnError::new(format!("GGUF metadata {key} is not a string")))
    }

    /// A non-negative integer value, if present; an error if present but not one.
    pub fn usize_opt(&self, key: &str) -> Result<Option<usize>, AttnError> {
        self.get(key)
            .map(|value| {
                value
                    .as_u64()
                    .and_then(|v| usize::try_from(v).ok())
                    .ok_or_else(|| {
                        AttnError::new(format!(
                            "GGUF metadata {key} is {value:?}, not a non-negative integer"
                        ))
                    })
            })
            .transpose()
    }

    /// A non-negative integer value, or an error naming the key.
    pub fn usize(&self, key: &str) -> Result<usize, AttnError> {
        self.usize_opt(key)?
            .ok_or_else(|| AttnError::new(format!("GGUF metadata has no {key}")))
    }

    /// A finite number, if present; an error if present but not one.
    pub fn f64_opt(&self, key: &str) -> Result<Option<f64>, AttnError> {
        self.get(key)
            .map(|value| {
                value.as_f64().filter(|v| v.is_finite()).ok_or_else(|| {
                    AttnError::new(format!("GGUF metadata {key} is {value:?}, not a number"))
                })
            })
            .transpose()
    }

    /// The tensor of a name, if present.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|tensor| tensor.name == name)
    }

    /// A tensor's bytes (a slice of the map).
    pub fn bytes(&self, tensor: &TensorInfo) -> &[u8] {
        &self.map[tensor.start..tensor.start + tensor.len]
    }

    /// The map, shared with the quantized weights that read from it.
    pub fn map(&self) -> &Arc<Mmap> {
        &self.map
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A GGUF v3 file with one metadata key and one F32 tensor of 4 elements.
    fn tiny() -> Vec<u8> {
        with_tensors(&[("w", 0)])
    }

    /// The same with F32 tensors of 4 elements `(name, offset)`, and data for each.
    fn with_tensors(tensors: &[(&str, u64)]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(b"GGUF");
        b.extend(3u32.to_le_bytes());
        b.extend((tensors.len() as u64).to_le_bytes());
        b.extend(1u64.to_le_bytes()); // kvs
        let key = b"general.architecture";
        b.extend((key.len() as u64).to_le_bytes());
        b.extend(key);
        b.extend(8u32.to_le_bytes());
        b.extend(5u64.to_le_bytes());
        b.extend(b"llama");
        for (name, offset) in tensors {
            b.extend((name.len() as u64).to_le_bytes());
            b.extend(name.as_bytes());
            b.extend(1u32.to_le_bytes());
            b.extend(4u64.to_le_bytes());
            b.extend(0u32.to_le_bytes()); // F32
            b.extend(offset.to_le_bytes());
        }
        while b.len() % 32 != 0 {
            b.push(0);
        }
        for (i, _) in tensors.iter().enumerate() {
            if i > 0 {
                b.extend([0u8; 16]); // the alignment's padding
            }
            for x in [1.0f32, 2.0, 3.0, 4.0] {
                b.extend(x.to_le_bytes());
            }
        }
        b
    }

    #[test]
    fn overlapping_or_twice_named_tensors_are_refused() {
        assert!(parse(&with_tensors(&[("a", 0), ("b", 32)])).is_ok());
        let error = parse(&with_tensors(&[("a", 0), ("b", 0)]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("tensors a and b overlap"), "{error}");
        let error = parse(&with_tensors(&[("a", 0), ("a", 32)]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("tensor a is named twice"), "{error}");
    }

    fn parse(bytes: &[u8]) -> Result<GgufFile, AttnError> {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(bytes).unwrap();
        GgufFile::open(file.path())
    }

    #[test]
    fn reads_a_tiny_file() {
        let file = parse(&tiny()).unwrap();
        assert_eq!(file.string("general.architecture").unwrap(), "llama");
        let w = file.tensor("w").unwrap();
        assert_eq!((w.dims.clone(), w.len), (vec![4], 16));
        assert_eq!(&file.bytes(w)[4..8], &2.0f32.to_le_bytes());
    }

    #[test]
    fn every_cut_of_the_file_is_one_error_line() {
        let bytes = tiny();
        for cut in 0..bytes.len() {
            let error = parse(&bytes[..cut]).unwrap_err().to_string();
            assert!(!error.contains('\n'), "{error}");
        }
    }

    #[test]
    fn a_huge_string_length_is_refused_before_allocating() {
        let mut bytes = tiny();
        bytes[24..32].copy_from_slice(&u64::MAX.to_le_bytes()); // the key's length
        let error = parse(&bytes).unwrap_err().to_string();
        assert!(error.contains("more than the"), "{error}");
        let mut bytes = tiny();
        bytes[4..8].copy_from_slice(&1u32.to_le_bytes());
        assert!(parse(&bytes).unwrap_err().to_string().contains("version 1"));
        let mut bytes = tiny();
        bytes[0] = b'X';
        assert!(parse(&bytes)
            .unwrap_err()
            .to_string()
            .contains("not a GGUF"));
    }
}

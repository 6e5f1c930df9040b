//! A [`tokenizers::Tokenizer`] built from a GGUF file's tokenizer metadata (`tokenizer.ggml.*`),
//! giving the ids `transformers` 5.23 gives with `AutoTokenizer.from_pretrained(dir,
//! gguf_file=name)`: that tokenizer is the reference (`tests/gguf.rs` checks both real files
//! against `tests/fixtures/gguf/tokenizer_reference.json`, made by
//! `scripts/gen_gguf_tokenizer_reference.py`), not llama.cpp's.
//!
//! What is mirrored, step by step, from transformers 5.23.0 (where the tokenizer conversion lives
//! in `integrations/gguf/`; `integrations/ggml.py` and `modeling_gguf_pytorch_utils.py` only map
//! the config):
//!
//! - `integrations/gguf/gguf_tokenizer_mapping.py`, `get_gguf_tokenizer`: the special tokens are
//!   the *strings* `tokens[bos_token_id]` etc.; a `llama` (SentencePiece) vocabulary adds BOS unless
//!   the file says otherwise, a `gemma4` one never does; `tokenizer.ggml.add_space_prefix` and
//!   `tokenizer.ggml.pre` = `default` change nothing.
//! - `select_tokenizer_builder`: `tokenizer.ggml.model` = `llama` on a `gemma`, `gemma2` or
//!   `gemma3` architecture → `gemma_tokenizer`; on `phi3` → `phi3_tokenizer`; otherwise by model:
//!   `gpt2` → `byte_level_tokenizer`, `llama` → `sentencepiece_tokenizer` (`LlamaTokenizer`),
//!   `gemma4` → `sentencepiece_tokenizer` with `GemmaTokenizer`. (`t5`, a Unigram model, is not
//!   built here.)
//! - `byte_level_tokenizer` + `models/gpt2/tokenization_gpt2.py`: a token spelled outside
//!   `bytes_to_unicode`'s alphabet (`convert_slow_tokenizer.py`) is re-spelled byte by byte; BPE
//!   without unk, `ByteLevel(add_prefix_space=False)` pre-tokenizer (GPT-2's regex, whatever
//!   `tokenizer.ggml.pre` says unless `set_split_regex` knows it), `ByteLevel` decoder.
//! - `sentencepiece_tokenizer` + `models/llama/tokenization_llama.py`: BPE with byte fallback and
//!   `fuse_unk`, no unk token, no normalizer, `Metaspace(▁, prepend_scheme="first", split=False)`,
//!   decoder `Replace(▁, " ")`, `ByteFallback`, `Fuse`, `Strip(" ", left=1)`.
//! - `phi3_tokenizer`: the same, but the ▁ prefix comes from a normalizer (`Prepend(▁)`,
//!   `Replace(" ", ▁)`) and there is no pre-tokenizer.
//! - `gemma_tokenizer` + `models/gemma/tokenization_gemma.py`: a token of only whitespace with a
//!   space in it is re-spelled as that many ▁; BPE with byte fallback, `fuse_unk`, unk `<unk>`;
//!   normalizer `Replace(" ", ▁)` and *no* prefix ▁ (unlike Llama); pre-tokenizer
//!   `Split(" ", merged_with_previous)`; decoder `Replace`, `ByteFallback`, `Fuse`.
//! - `get_merges`: the file's merges (`merge.split(" ")`, exactly two parts), or, when it has none,
//!   `generate_merges` (`tokenization_utils_base.py`) over the vocabulary: every split of a token
//!   into two tokens, ranked by the token's score (for Gemma: minus its position in the file).
//! - `add_gguf_special_tokens`: token type 3 (control) → a special added token (for `gpt2` only
//!   if spelled in the byte alphabet), type 4 (user-defined) → a plain added token if in the
//!   vocabulary; neither normalized.
//! - `set_split_regex`: for the `tokenizer.ggml.pre` names it lists (`llama-bpe`, `qwen2`,
//!   `tekken`, `gpt-4o`, …) `Sequence[Split(regex, isolated), ByteLevel(use_regex=False)]`.
//! - `tokenization_utils_tokenizers.py`, `TokenizersBackend.__init__`, run twice: once for the
//!   builder's class (`GPT2Tokenizer`, `LlamaTokenizer`, `GemmaTokenizer`), whose default special
//!   tokens (`<|endoftext|>`; `<s>`, `</s>`, `<unk>`; `<bos>`, `<eos>`, `<unk>`, `<pad>`, `<mask>`)
//!   are added as special tokens, new ids past the vocabulary if absent, and whose post-processor
//!   becomes the identity `TemplateProcessing("$A:0")`; then for the class `AutoTokenizer` picks
//!   from the architecture (`TokenizersBackend` for `llama`, `GemmaTokenizer` for `gemma3_text`),
//!   which adds the file's BOS/EOS/UNK/PAD strings (and its own other defaults, `<mask>` for
//!   Gemma) as special tokens and, only when the file has `tokenizer.ggml.add_bos_token` or
//!   `add_eos_token` (or the defaults above set one), rewrites the post-processor as
//!   `update_post_processor` does: `BOS:0 $A:0 EOS:0` with the flags honoured.
//!
//! Both real files' tokenizers serialize to the same `tokenizer.json` as transformers' (vocabulary,
//! merges in order, added tokens with their flags, every component), and so do variants of them
//! (other architectures, `pre` names, flags and missing defaults). transformers runs the
//! `tokenizers` 0.23 core with Oniguruma regexes, this crate `tokenizers` 0.22 with fancy-regex:
//! no tested text differs, but an exotic one could split differently.
//!
//! The metadata is untrusted: an unsupported model, an id out of range, a malformed merge, a
//! merge of tokens not in the vocabulary or a NaN score is an [`Error::Input`], never a panic.

use std::collections::{BTreeMap, HashMap, HashSet};

use attnzoo_models::gguf::{GgufFile, MetaValue};

use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::byte_level::ByteLevel;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::decoders::strip::Strip;
use tokenizers::decoders::DecoderWrapper;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::normalizers::{Prepend, Replace, Sequence as NormalizerSequence};
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::pre_tokenizers::sequence::Sequence as PreTokenizerSequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::{AddedToken, NormalizerWrapper, SplitDelimiterBehavior, Tokenizer};

use crate::error::{Error, Result};

/// The tokenizer fields of a GGUF file's metadata.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GgufVocab {
    /// `general.architecture`: `llama`, `gemma3`, … (picks the builder for a `llama` model and
    /// the class whose default special tokens are added).
    pub architecture: String,
    /// `tokenizer.ggml.model`: `gpt2` (byte-level BPE) or `llama` (SentencePiece).
    pub model: String,
    /// `tokenizer.ggml.pre`: `smollm`, `llama-bpe`, `qwen2`, `default`, ….
    pub pre: Option<String>,
    /// `tokenizer.ggml.tokens`, by id.
    pub tokens: Vec<String>,
    /// `tokenizer.ggml.scores`; empty if absent.
    pub scores: Vec<f32>,
    /// `tokenizer.ggml.token_type` (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused,
    /// 6 byte); empty if absent.
    pub token_types: Vec<i32>,
    /// `tokenizer.ggml.merges`, each `left right`; empty if absent.
    pub merges: Vec<String>,
    /// `tokenizer.ggml.bos_token_id`.
    pub bos: Option<u32>,
    /// `tokenizer.ggml.eos_token_id`.
    pub eos: Option<u32>,
    /// `tokenizer.ggml.unknown_token_id`.
    pub unk: Option<u32>,
    /// `tokenizer.ggml.padding_token_id`.
    pub pad: Option<u32>,
    /// `tokenizer.ggml.add_bos_token`.
    pub add_bos: Option<bool>,
    /// `tokenizer.ggml.add_eos_token`.
    pub add_eos: Option<bool>,
}

impl GgufVocab {
    /// The tokenizer fields of an open GGUF file.
    pub fn from_gguf(file: &GgufFile) -> Result<Self> {
        Self::from_metadata(&file.metadata)
    }

    /// The tokenizer fields of a GGUF file's metadata: `general.architecture`,
    /// `tokenizer.ggml.model` and `tokenizer.ggml.tokens` are required, the rest optional; a
    /// value of the wrong type is an error naming its key.
    pub fn from_metadata(metadata: &BTreeMap<String, MetaValue>) -> Result<Self> {
        let get = |key: &str| metadata.get(key);
        let wrong = |key: &str, what: &str| bad(format!("{key} is not {what}"));
        let string = |key: &str| -> Result<Option<String>> {
            get(key)
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| wrong(key, "a string"))
                })
                .transpose()
        };
        let required = |key: &str| -> Result<String> {
            string(key)?.ok_or_else(|| bad(format!("the file has no {key}")))
        };
        let array = |key: &str| -> Result<&[MetaValue]> {
            match get(key) {
                None => Ok(&[]),
                Some(v) => v.as_array().ok_or_else(|| wrong(key, "an array")),
            }
        };
        let strings = |key: &str| -> Result<Vec<String>> {
            array(key)?
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| wrong(key, "an array of strings"))
        };
        let id = |key: &str| -> Result<Option<u32>> {
            get(key)
                .map(|v| {
                    v.as_u64()
                        .and_then(|v| u32::try_from(v).ok())
                        .ok_or_else(|| wrong(key, "a token id"))
                })
                .transpose()
        };
        let flag = |key: &str| -> Result<Option<bool>> {
            get(key)
                .map(|v| v.as_bool().ok_or_else(|| wrong(key, "a boolean")))
                .transpose()
        };
        let tokens_key = "tokenizer.ggml.tokens";
        if get(tokens_key).is_none() {
            return Err(bad(format!("the file has no {tokens_key}")));
        }
        Ok(GgufVocab {
            architecture: required("general.architecture")?,
            model: required("tokenizer.ggml.model")?,
            pre: string("tokenizer.ggml.pre")?,
            tokens: strings(tokens_key)?,
            scores: array("tokenizer.ggml.scores")?
                .iter()
                .map(|v| v.as_f64().map(|v| v as f32))
                .collect::<Option<_>>()
                .ok_or_else(|| wrong("tokenizer.ggml.scores", "an array of numbers"))?,
            token_types: array("tokenizer.ggml.token_type")?
                .iter()
                .map(|v| v.as_i64().and_then(|v| i32::try_from(v).ok()))
                .collect::<Option<_>>()
                .ok_or_else(|| wrong("tokenizer.ggml.token_type", "an array of 32-bit integers"))?,
            merges: strings("tokenizer.ggml.merges")?,
            bos: id("tokenizer.ggml.bos_token_id")?,
            eos: id("tokenizer.ggml.eos_token_id")?,
            unk: id("tokenizer.ggml.unknown_token_id")?,
            pad: id("tokenizer.ggml.padding_token_id")?,
            add_bos: flag("tokenizer.ggml.add_bos_token")?,
            add_eos: flag("tokenizer.ggml.add_eos_token")?,
        })
    }
}

/// `llama.cpp`'s token type for a control token (`<|im_start|>`, `<bos>`).
const CONTROL: i32 = 3;
/// `llama.cpp`'s token type for a user-defined token (`<think>`).
const USER_DEFINED: i32 = 4;

fn bad(message: impl std::fmt::Display) -> Error {
    Error::Input(format!("GGUF tokenizer: {message}"))
}

/// Which of transformers' builders a file gets (`select_tokenizer_builder`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Builder {
    /// `byte_level_tokenizer`: `GPT2Tokenizer`.
    ByteLevel,
    /// `sentencepiece_tokenizer`: `LlamaTokenizer`.
    Llama,
    /// `phi3_tokenizer`: `LlamaTokenizer` with the prefix ▁ from a normalizer.
    Phi3,
    /// `gemma_tokenizer`: `GemmaTokenizer` on re-spelled whitespace tokens, merges by position.
    Gemma,
    /// `sentencepiece_tokenizer` with `GemmaTokenizer` (`tokenizer.ggml.model` = `gemma4`).
    Gemma4,
}

impl Builder {
    fn select(architecture: &str, model: &str) -> Result<Builder> {
        Ok(match (model, architecture) {
            ("llama", "gemma" | "gemma2" | "gemma3") => Builder::Gemma,
            ("llama", "phi3") => Builder::Phi3,
            ("llama", _) => Builder::Llama,
            ("gpt2", _) => Builder::ByteLevel,
            ("gemma4", _) => Builder::Gemma4,
            ("t5", _) => {
                return Err(bad(
                    "tokenizer.ggml.model `t5` (a Unigram vocabulary) is not supported; \
                     supported: gpt2, llama, gemma4",
                ))
            }
            _ => {
                return Err(bad(format!(
                "tokenizer.ggml.model `{model}` is not supported; supported: gpt2, llama, gemma4"
            )))
            }
        })
    }

    /// The default special tokens of the builder's class, in `SPECIAL_TOKENS_ATTRIBUTES` order
    /// (bos, eos, unk, sep, pad, cls, mask), as its `__init__` passes them.
    fn class_defaults(self) -> &'static [&'static str] {
        match self {
            Builder::ByteLevel => &["<|endoftext|>", "<|endoftext|>", "<|endoftext|>"],
            Builder::Llama | Builder::Phi3 => &["<s>", "</s>", "<unk>"],
            Builder::Gemma | Builder::Gemma4 => &["<bos>", "<eos>", "<unk>", "<pad>", "<mask>"],
        }
    }
}

/// The named special tokens, other than BOS/EOS/UNK/PAD (which the file's ids set), that the
/// class `AutoTokenizer` picks for this architecture passes by default: `GemmaTokenizer`'s
/// `mask_token` for `gemma`, `gemma2`, `gemma3` (`gemma3_text`); none for the others GGUF loads
/// (`TokenizersBackend` for `llama`, `phi3`, `gemma4_text`, …; `Qwen2Tokenizer`,
/// `GPT2Tokenizer`, `GPTNeoXTokenizer` have no default beyond those four).
fn outer_class_defaults(architecture: &str) -> &'static [&'static str] {
    match architecture {
        "gemma" | "gemma2" | "gemma3" => &["<mask>"],
        _ => &[],
    }
}

/// Builds the tokenizer `transformers` 5.23 builds from these fields; see the module docs.
pub fn tokenizer(vocab: &GgufVocab) -> Result<Tokenizer> {
    let builder = Builder::select(&vocab.architecture, &vocab.model)?;

    // get_gguf_tokenizer: the flags, and the special tokens as strings.
    let mut add_bos = vocab.add_bos;
    if vocab.model == "llama" {
        add_bos.get_or_insert(true);
    } else if vocab.model == "gemma4" {
        add_bos = Some(false);
    }
    let add_eos = vocab.add_eos;
    let named = |key: &str, id: Option<u32>| -> Result<Option<String>> {
        id.map(|id| {
            vocab.tokens.get(id as usize).cloned().ok_or_else(|| {
                bad(format!(
                    "tokenizer.ggml.{key} {id} is out of range for {} tokens",
                    vocab.tokens.len()
                ))
            })
        })
        .transpose()
    };
    let bos = named("bos_token_id", vocab.bos)?;
    let eos = named("eos_token_id", vocab.eos)?;
    let unk = named("unknown_token_id", vocab.unk)?;
    let pad = named("padding_token_id", vocab.pad)?;

    // The builder's class, as its `__init__` and then `TokenizersBackend.__init__` leave it.
    let mut tokenizer = match builder {
        Builder::ByteLevel => byte_level(vocab)?,
        Builder::Llama => sentencepiece(&vocab.tokens, vocab, None, false)?,
        Builder::Phi3 => {
            let mut tokenizer = sentencepiece(&vocab.tokens, vocab, None, false)?;
            let normalizer = NormalizerSequence::new(vec![
                Prepend::new("\u{2581}".into()).into(),
                replace(" ", "\u{2581}")?.into(),
            ]);
            tokenizer.with_normalizer(Some(NormalizerWrapper::from(normalizer)));
            tokenizer.with_pre_tokenizer(None::<PreTokenizerWrapper>);
            tokenizer
        }
        Builder::Gemma => {
            let tokens: Vec<String> = vocab
                .tokens
                .iter()
                .map(|t| {
                    if t.contains(' ') && t.chars().all(python_isspace) {
                        "\u{2581}".repeat(t.chars().count())
                    } else {
                        t.clone()
                    }
                })
                .collect();
            // `positions = {token: -index}`: merges ranked by where a token stands in the file.
            let positions: Vec<f64> = (0..tokens.len()).map(|i| -(i as f64)).collect();
            sentencepiece(&tokens, vocab, Some(&positions), true)?
        }
        Builder::Gemma4 => sentencepiece(&vocab.tokens, vocab, None, true)?,
    };
    let mut defaults: Vec<&str> = Vec::new();
    for token in builder.class_defaults() {
        if !defaults.contains(token) {
            defaults.push(token);
        }
    }
    let defaults: Vec<AddedToken> = defaults
        .into_iter()
        .map(|token| AddedToken::from(token, true))
        .collect();
    tokenizer.add_tokens(&defaults);
    tokenizer.with_post_processor(Some(template(&[], &[])?));

    add_gguf_special_tokens(&mut tokenizer, vocab, builder == Builder::ByteLevel);
    set_split_regex(&mut tokenizer, vocab.pre.as_deref())?;

    // The class `AutoTokenizer` picks, around the tokenizer built above.
    let mut named_tokens: Vec<String> = [&bos, &eos, &unk, &pad]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    named_tokens.extend(
        outer_class_defaults(&vocab.architecture)
            .iter()
            .map(|t| t.to_string()),
    );
    let encoder: HashSet<String> = tokenizer
        .get_added_tokens_decoder()
        .values()
        .map(|token| token.content.clone())
        .collect();
    let mut to_add: Vec<AddedToken> = Vec::new();
    for token in named_tokens {
        if !encoder.contains(&token) && !to_add.iter().any(|t| t.content == token) {
            to_add.push(AddedToken::from(token, true));
        }
    }
    if !to_add.is_empty() {
        tokenizer.add_tokens(&to_add);
    }
    if add_bos.is_some() || add_eos.is_some() {
        // update_post_processor: a flag without its token is dropped.
        let with_id =
            |token: &Option<String>, flag: Option<bool>| -> Result<Option<(String, u32)>> {
                match token {
                    Some(token) if flag == Some(true) => {
                        let id = tokenizer
                            .token_to_id(token)
                            .ok_or_else(|| bad(format!("special token `{token}` has no id")))?;
                        Ok(Some((token.clone(), id)))
                    }
                    _ => Ok(None),
                }
            };
        let bos = with_id(&bos, add_bos)?;
        let eos = with_id(&eos, add_eos)?;
        let processor = template(bos.as_slice(), eos.as_slice())?;
        tokenizer.with_post_processor(Some(processor));
    }
    Ok(tokenizer)
}

/// `TokenizersBackend.update_post_processor`'s template: `BOS:0 $A:0 EOS:0` with the tokens
/// given (none: the identity).
fn template(bos: &[(String, u32)], eos: &[(String, u32)]) -> Result<TemplateProcessing> {
    let before = |type_id: u32| -> String {
        bos.iter()
            .map(|(token, _)| format!("{token}:{type_id} "))
            .collect()
    };
    let after = |type_id: u32| -> String {
        eos.iter()
            .map(|(token, _)| format!(" {token}:{type_id}"))
            .collect()
    };
    let single = format!("{}$A:0{}", before(0), after(0));
    let pair_bos: String = bos.iter().map(|(t, _)| format!(" {t}:1")).collect();
    let pair = format!("{single}{pair_bos} $B:1{}", after(1));
    let special: Vec<(String, u32)> = bos.iter().chain(eos).cloned().collect();
    let invalid = |e: String| bad(format!("cannot build the post-processor: {e}"));
    TemplateProcessing::builder()
        .try_single(single)
        .map_err(invalid)?
        .try_pair(pair)
        .map_err(invalid)?
        .special_tokens(special)
        .build()
        .map_err(|e| invalid(e.to_string()))
}

fn replace(pattern: &str, content: &str) -> Result<Replace> {
    Replace::new(pattern, content).map_err(|e| bad(format!("replace {pattern:?}: {e}")))
}

/// Python's `str.isspace` for one character: Rust's White_Space plus the separators U+001C–U+001F.
fn python_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `bytes_to_unicode`: GPT-2's printable spelling of each byte.
fn bytes_to_unicode() -> [char; 256] {
    let mut spelling = ['\0'; 256];
    let mut n = 0;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        spelling[b as usize] = if printable {
            char::from(b)
        } else {
            n += 1;
            char::from_u32(255 + n).expect("U+0100..U+0143 are chars")
        };
    }
    spelling
}

/// `{token: index}`: a later duplicate wins, as in a Python dict.
fn vocab_of(tokens: &[String]) -> Vocab {
    tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i as u32))
        .collect()
}

/// `get_merges`: the file's merges, or ones derived from the vocabulary and `scores` (by default
/// the file's scores, `dict(zip(tokens, scores))`).
fn merges(
    tokens: &[String],
    vocab: &GgufVocab,
    scores: Option<&[f64]>,
) -> Result<Vec<(String, String)>> {
    if !vocab.merges.is_empty() {
        return vocab
            .merges
            .iter()
            .enumerate()
            .map(
                |(i, merge)| match merge.split(' ').collect::<Vec<_>>()[..] {
                    [left, right] => Ok((left.to_owned(), right.to_owned())),
                    _ => Err(bad(format!(
                    "tokenizer.ggml.merges[{i}] {merge:?} is not two tokens separated by one space"
                ))),
                },
            )
            .collect();
    }
    let file_scores: Vec<f64>;
    let scores = match scores {
        Some(scores) => scores,
        None => {
            if vocab.scores.is_empty() {
                return Err(bad(
                    "the file has neither tokenizer.ggml.merges nor tokenizer.ggml.scores",
                ));
            }
            file_scores = vocab.scores.iter().map(|&s| f64::from(s)).collect();
            &file_scores
        }
    };
    if let Some(i) = scores.iter().position(|s| s.is_nan()) {
        return Err(bad(format!("tokenizer.ggml.scores[{i}] is NaN")));
    }
    Ok(generate_merges(tokens, scores))
}

/// `generate_merges(vocab, vocab_scores)`: each token (in first-appearance order, with the score
/// of its last appearance) split in two at every character where both halves are tokens, the
/// splits of one token by the halves' ids, then all by score, then the halves' lengths, highest
/// first; ties keep that order (Python's sort is stable, also reversed).
fn generate_merges(tokens: &[String], scores: &[f64]) -> Vec<(String, String)> {
    let mut ids: HashMap<&str, u32> = HashMap::with_capacity(tokens.len());
    for (i, token) in tokens.iter().enumerate() {
        ids.insert(token, i as u32);
    }
    // `dict(zip(tokens, scores))`: keys in first-appearance order, the last score.
    let mut order: Vec<&str> = Vec::new();
    let mut score_of: HashMap<&str, f64> = HashMap::new();
    for (token, &score) in tokens.iter().zip(scores) {
        if score_of.insert(token, score).is_none() {
            order.push(token);
        }
    }
    struct Merge<'a> {
        left: &'a str,
        right: &'a str,
        score: f64,
        left_len: usize,
        right_len: usize,
    }
    let mut merges: Vec<Merge> = Vec::new();
    let mut local: Vec<(u32, u32, Merge)> = Vec::new();
    for token in order {
        let score = score_of[token];
        let chars = token.chars().count();
        local.clear();
        for (index, (at, _)) in token.char_indices().enumerate().skip(1) {
            let (left, right) = token.split_at(at);
            if let (Some(&l), Some(&r)) = (ids.get(left), ids.get(right)) {
                let merge = Merge {
                    left,
                    right,
                    score,
                    left_len: index,
                    right_len: chars - index,
                };
                local.push((l, r, merge));
            }
        }
        local.sort_by_key(|&(l, r, _)| (l, r));
        merges.extend(local.drain(..).map(|(_, _, merge)| merge));
    }
    merges.sort_by(|a, b| {
        // Reversed (highest first) and stable; scores are not NaN here.
        (b.score, b.left_len, b.right_len)
            .partial_cmp(&(a.score, a.left_len, a.right_len))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    merges
        .into_iter()
        .map(|m| (m.left.to_owned(), m.right.to_owned()))
        .collect()
}

fn bpe_error(e: impl std::fmt::Display) -> Error {
    bad(format!("cannot build the BPE model: {e}"))
}

/// `byte_level_tokenizer`: `GPT2Tokenizer(vocab, merges)`.
fn byte_level(vocab: &GgufVocab) -> Result<Tokenizer> {
    let spelling = bytes_to_unicode();
    let alphabet: HashSet<char> = spelling.iter().copied().collect();
    let bpe_vocab: Vocab = vocab
        .tokens
        .iter()
        .enumerate()
        .map(|(i, token)| {
            let key = if token.chars().all(|c| alphabet.contains(&c)) {
                token.clone()
            } else {
                token.bytes().map(|b| spelling[b as usize]).collect()
            };
            (key, i as u32)
        })
        .collect();
    let merges = merges(&vocab.tokens, vocab, None)?;
    let bpe = BPE::builder()
        .vocab_and_merges(bpe_vocab, merges)
        .continuing_subword_prefix(String::new())
        .end_of_word_suffix(String::new())
        .fuse_unk(false)
        .build()
        .map_err(bpe_error)?;
    let mut tokenizer = Tokenizer::new(bpe);
    tokenizer.with_pre_tokenizer(Some(ByteLevel::new(false, true, true)));
    tokenizer.with_decoder(Some(ByteLevel::default()));
    Ok(tokenizer)
}

/// `sentencepiece_tokenizer`: `LlamaTokenizer(vocab, merges)`, or `GemmaTokenizer` when `gemma`.
fn sentencepiece(
    tokens: &[String],
    vocab: &GgufVocab,
    scores: Option<&[f64]>,
    gemma: bool,
) -> Result<Tokenizer> {
    let merges = merges(tokens, vocab, scores)?;
    let mut builder = BPE::builder()
        .vocab_and_merges(vocab_of(tokens), merges)
        .fuse_unk(true)
        .byte_fallback(true);
    if gemma {
        builder = builder.unk_token("<unk>".into());
    }
    let bpe = builder.build().map_err(bpe_error)?;
    let mut tokenizer = Tokenizer::new(bpe);
    let mut decoders: Vec<DecoderWrapper> = vec![
        replace("\u{2581}", " ")?.into(),
        ByteFallback::new().into(),
        Fuse::new().into(),
    ];
    if gemma {
        let split = Split::new(
            SplitPattern::String(" ".into()),
            SplitDelimiterBehavior::MergedWithPrevious,
            false,
        )
        .map_err(|e| bad(format!("split: {e}")))?;
        tokenizer.with_pre_tokenizer(Some(split));
        tokenizer.with_normalizer(Some(replace(" ", "\u{2581}")?));
    } else {
        let metaspace = Metaspace::new('\u{2581}', PrependScheme::First, false);
        tokenizer.with_pre_tokenizer(Some(metaspace));
        decoders.push(Strip::new(' ', 1, 0).into());
    }
    tokenizer.with_decoder(Some(DecoderSequence::new(decoders)));
    Ok(tokenizer)
}

/// `add_gguf_special_tokens`: control tokens as special tokens, user-defined ones as plain added
/// tokens, none normalized.
fn add_gguf_special_tokens(tokenizer: &mut Tokenizer, vocab: &GgufVocab, byte_level: bool) {
    let alphabet: Option<HashSet<char>> =
        byte_level.then(|| bytes_to_unicode().iter().copied().collect());
    let typed = || vocab.tokens.iter().zip(&vocab.token_types);
    let control: Vec<AddedToken> = typed()
        .filter(|&(token, &kind)| {
            kind == CONTROL
                && alphabet
                    .as_ref()
                    .is_none_or(|a| token.chars().all(|c| a.contains(&c)))
        })
        .map(|(token, _)| AddedToken::from(token.clone(), true).normalized(false))
        .collect();
    if !control.is_empty() {
        tokenizer.add_special_tokens(&control);
    }
    let known = tokenizer.get_vocab(true);
    let user_defined: Vec<AddedToken> = typed()
        .filter(|&(token, &kind)| kind == USER_DEFINED && known.contains_key(token))
        .map(|(token, _)| AddedToken::from(token.clone(), false).normalized(false))
        .collect();
    if !user_defined.is_empty() {
        tokenizer.add_tokens(&user_defined);
    }
}

const LLAMA3_SPLIT: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);
const TEKKEN_SPLIT: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*",
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);
const GPT4O_SPLIT: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);
/// `models/qwen2/tokenization_qwen2.py`'s `PRETOKENIZE_REGEX`.
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// `models/qwen3_5/tokenization_qwen3_5.py`'s `PRETOKENIZE_REGEX`.
const QWEN35_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// `GGUF_PRE_TOKENIZER_SPLITS`: the split regex for a `tokenizer.ggml.pre` name.
fn split_regex(pre: &str) -> Option<&'static str> {
    Some(match pre {
        "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "falcon-h1" | "pixtral" | "midm-2.0"
        | "lfm2" | "jina-v5-nano" | "dbrx" | "smaug-bpe" => LLAMA3_SPLIT,
        "tekken" => TEKKEN_SPLIT,
        "qwen2" | "deepseek-r1-qwen" | "kormo" | "f2llmv2" | "megrez" => QWEN2_SPLIT,
        "qwen35" => QWEN35_SPLIT,
        "gpt-4o" | "llama4" | "kanana2" | "talkie" | "minimax-m2" => GPT4O_SPLIT,
        _ => return None,
    })
}

/// `set_split_regex`: for a known `tokenizer.ggml.pre`, split with its regex, then map to bytes.
fn set_split_regex(tokenizer: &mut Tokenizer, pre: Option<&str>) -> Result<()> {
    let Some(regex) = pre.and_then(split_regex) else {
        return Ok(());
    };
    let split = Split::new(
        SplitPattern::Regex(regex.into()),
        SplitDelimiterBehavior::Isolated,
        false,
    )
    .map_err(|e| bad(format!("split regex: {e}")))?;
    let sequence = PreTokenizerSequence::new(vec![
        split.into(),
        ByteLevel::new(false, true, false).into(),
    ]);
    tokenizer.with_pre_tokenizer(Some(sequence));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn ids(tokenizer: &Tokenizer, text: &str) -> Vec<u32> {
        tokenizer.encode(text, true).unwrap().get_ids().to_vec()
    }

    /// A byte-level vocabulary: `a`, `b`, `Ġ` and their merges, two control tokens.
    fn byte_level_vocab() -> GgufVocab {
        GgufVocab {
            architecture: "llama".into(),
            model: "gpt2".into(),
            pre: Some("smollm".into()),
            tokens: strings(&[
                "<|endoftext|>",
                "<|im_start|>",
                "a",
                "b",
                "Ġ",
                "ab",
                "Ġab",
                "<think>",
                "c",
            ]),
            token_types: vec![3, 3, 1, 1, 1, 1, 1, 4, 1],
            merges: strings(&["a b", "Ġ ab"]),
            bos: Some(1),
            eos: Some(0),
            unk: Some(0),
            add_bos: Some(false),
            ..GgufVocab::default()
        }
    }

    #[test]
    fn byte_level_bpe_merges_and_keeps_control_tokens_whole() {
        let tokenizer = tokenizer(&byte_level_vocab()).unwrap();
        assert_eq!(ids(&tokenizer, "ab ab"), [5, 6]);
        assert_eq!(ids(&tokenizer, "<|im_start|>ab<think>"), [1, 5, 7]);
        assert_eq!(ids(&tokenizer, "ba"), [3, 2]);
        assert_eq!(
            tokenizer.decode(&[1, 5, 6], false).unwrap(),
            "<|im_start|>ab ab"
        );
        assert_eq!(tokenizer.decode(&[1, 5, 6], true).unwrap(), "ab ab");
        // `<|endoftext|>` is special (control), `<think>` a plain added token.
        let added = tokenizer.get_added_tokens_decoder();
        assert!(added[&0].special && added[&1].special && !added[&7].special);
    }

    #[test]
    fn the_bos_and_eos_flags_make_the_post_processor() {
        let mut vocab = byte_level_vocab();
        vocab.add_bos = Some(true);
        vocab.add_eos = Some(true);
        assert_eq!(ids(&tokenizer(&vocab).unwrap(), "ab"), [1, 5, 0]);
        vocab.add_bos = None;
        vocab.add_eos = None;
        // A gpt2 vocabulary without the flags adds nothing.
        assert_eq!(ids(&tokenizer(&vocab).unwrap(), "ab"), [5]);
        // A flag without its token is dropped.
        vocab.add_bos = Some(true);
        vocab.bos = None;
        assert_eq!(ids(&tokenizer(&vocab).unwrap(), "ab"), [5]);
    }

    #[test]
    fn a_known_pre_name_splits_with_its_regex() {
        let mut vocab = byte_level_vocab();
        vocab
            .tokens
            .extend(strings(&["1", "2", "3", "4", "12", "123"]));
        vocab.token_types.clear();
        vocab.merges.extend(strings(&["1 2", "12 3"]));
        // GPT-2's regex keeps `1234` one word; llama-bpe's splits digits in threes.
        assert_eq!(ids(&tokenizer(&vocab).unwrap(), "1234"), [14, 12]);
        vocab.pre = Some("llama-bpe".into());
        assert_eq!(ids(&tokenizer(&vocab).unwrap(), "1234"), [14, 12]);
        vocab.merges.push("123 4".into());
        vocab.tokens.push("1234".into());
        assert_eq!(ids(&tokenizer(&vocab).unwrap(), "1234"), [14, 12]);
        vocab.pre = Some("smollm".into());
        assert_eq!(ids(&tokenizer(&vocab).unwrap(), "1234"), [15]);
    }

    #[test]
    fn a_token_outside_the_byte_alphabet_is_respelled() {
        let mut vocab = byte_level_vocab();
        vocab.tokens[4] = " ".into(); // stored as a real space: spelled `Ġ`
        let tokenizer = tokenizer(&vocab).unwrap();
        assert_eq!(ids(&tokenizer, " ab"), [6]);
        assert_eq!(tokenizer.id_to_token(4).as_deref(), Some("Ġ"));
    }

    /// A SentencePiece vocabulary: byte tokens, `▁`, `a`, `b` and merges from the scores.
    fn sentencepiece_vocab(architecture: &str) -> GgufVocab {
        let mut tokens = strings(&["<unk>", "<s>", "</s>"]);
        let mut types = vec![2, 3, 3];
        let mut scores = vec![0.0, 0.0, 0.0];
        for b in 0..=255u8 {
            tokens.push(format!("<0x{b:02X}>"));
            types.push(6);
            scores.push(0.0);
        }
        for (token, score) in [
            ("▁", -1.0),
            ("a", -2.0),
            ("b", -3.0),
            ("ab", -4.0),
            ("▁ab", -5.0),
        ] {
            tokens.push(token.into());
            types.push(1);
            scores.push(score);
        }
        GgufVocab {
            architecture: architecture.into(),
            model: "llama".into(),
            pre: Some("default".into()),
            tokens,
            scores,
            token_types: types,
            bos: Some(1),
            eos: Some(2),
            unk: Some(0),
            ..GgufVocab::default()
        }
    }

    #[test]
    fn llama_sentencepiece_prepends_a_space_and_adds_bos_by_default() {
        let tokenizer = tokenizer(&sentencepiece_vocab("llama")).unwrap();
        // `▁ab` (263): Metaspace puts ▁ before the first word only.
        assert_eq!(ids(&tokenizer, "ab"), [1, 263]);
        assert_eq!(ids(&tokenizer, "ab ab"), [1, 263, 263]);
        // `é` is not in the vocabulary: its UTF-8 bytes.
        assert_eq!(ids(&tokenizer, "é"), [1, 259, 3 + 0xC3, 3 + 0xA9]);
        assert_eq!(
            tokenizer
                .decode(&[1, 263, 263, 3 + 0xC3, 3 + 0xA9], false)
                .unwrap(),
            "<s> ab abé"
        );
    }

    #[test]
    fn gemma_sentencepiece_has_no_prefix_space_and_ranks_merges_by_position() {
        let mut vocab = sentencepiece_vocab("gemma3");
        vocab.tokens[0] = "<pad>".into();
        vocab.tokens.push("  ".into()); // two spaces, stored as such: `▁▁`
        vocab.token_types.push(1);
        vocab.scores.push(-9.0);
        let tokenizer = tokenizer(&vocab).unwrap();
        assert_eq!(ids(&tokenizer, "ab"), [1, 262]);
        assert_eq!(ids(&tokenizer, " ab"), [1, 263]);
        assert_eq!(ids(&tokenizer, "a  b"), [1, 260, 264, 261]);
        assert_eq!(
            tokenizer.decode(&[1, 260, 264, 261], false).unwrap(),
            "<s>a  b"
        );
        // GemmaTokenizer's own defaults: `<unk>`, `<bos>`, `<eos>`, `<mask>` are missing here
        // and come after the vocabulary, `<pad>` is a control token already.
        assert_eq!(tokenizer.token_to_id("<bos>"), Some(265));
        assert_eq!(tokenizer.token_to_id("<mask>"), Some(268));
    }

    #[test]
    fn merges_come_from_scores_highest_first() {
        let tokens = strings(&["a", "b", "c", "ab", "bc", "abc"]);
        let scores = [0.0, 0.0, 0.0, -2.0, -1.0, -3.0];
        let merges = generate_merges(&tokens, &scores);
        let pairs: Vec<(&str, &str)> = merges.iter().map(|(a, b)| (&a[..], &b[..])).collect();
        // Equal scores: the longer left half first.
        assert_eq!(pairs, [("b", "c"), ("a", "b"), ("ab", "c"), ("a", "bc")]);
    }

    #[test]
    fn the_fields_are_read_from_metadata_and_a_wrong_type_is_named() {
        let text = |s: &str| MetaValue::Str(s.into());
        let mut metadata: BTreeMap<String, MetaValue> = [
            ("general.architecture", text("llama")),
            ("tokenizer.ggml.model", text("gpt2")),
            ("tokenizer.ggml.pre", text("smollm")),
            (
                "tokenizer.ggml.tokens",
                MetaValue::Array(vec![text("a"), text("b"), text("ab")]),
            ),
            (
                "tokenizer.ggml.token_type",
                MetaValue::Array(vec![MetaValue::I32(1); 3]),
            ),
            ("tokenizer.ggml.merges", MetaValue::Array(vec![text("a b")])),
            ("tokenizer.ggml.eos_token_id", MetaValue::U32(2)),
            ("tokenizer.ggml.add_bos_token", MetaValue::Bool(false)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let vocab = GgufVocab::from_metadata(&metadata).unwrap();
        assert_eq!(vocab.tokens, ["a", "b", "ab"]);
        assert_eq!(
            (vocab.eos, vocab.bos, vocab.add_bos),
            (Some(2), None, Some(false))
        );
        assert_eq!(ids(&tokenizer(&vocab).unwrap(), "ab"), [2]);

        metadata.insert("tokenizer.ggml.bos_token_id".into(), MetaValue::I32(-1));
        let message = GgufVocab::from_metadata(&metadata).unwrap_err().to_string();
        assert!(
            message.contains("bos_token_id is not a token id"),
            "{message}"
        );
        metadata.remove("tokenizer.ggml.bos_token_id");
        metadata.insert(
            "tokenizer.ggml.merges".into(),
            MetaValue::Array(vec![MetaValue::U8(1)]),
        );
        let message = GgufVocab::from_metadata(&metadata).unwrap_err().to_string();
        assert!(
            message.contains("merges is not an array of strings"),
            "{message}"
        );
        metadata.remove("tokenizer.ggml.tokens");
        let message = GgufVocab::from_metadata(&metadata).unwrap_err().to_string();
        assert!(
            message.contains("has no tokenizer.ggml.tokens"),
            "{message}"
        );
    }

    #[test]
    fn bad_metadata_is_an_error_not_a_panic() {
        let mut vocab = byte_level_vocab();
        vocab.bos = Some(99);
        let message = tokenizer(&vocab).unwrap_err().to_string();
        assert!(
            message.contains("bos_token_id 99 is out of range"),
            "{message}"
        );

        let mut vocab = byte_level_vocab();
        vocab.merges.push("a b c".into());
        let message = tokenizer(&vocab).unwrap_err().to_string();
        assert!(message.contains("merges[2]"), "{message}");

        let mut vocab = byte_level_vocab();
        vocab.merges.push("b a".into()); // `ba` is not a token
        let message = tokenizer(&vocab).unwrap_err().to_string();
        assert!(message.contains("cannot build the BPE model"), "{message}");

        let mut vocab = byte_level_vocab();
        vocab.model = "rwkv".into();
        let message = tokenizer(&vocab).unwrap_err().to_string();
        assert!(message.contains("`rwkv` is not supported"), "{message}");

        let mut vocab = sentencepiece_vocab("llama");
        vocab.scores[5] = f32::NAN;
        let message = tokenizer(&vocab).unwrap_err().to_string();
        assert!(message.contains("scores[5] is NaN"), "{message}");

        let mut vocab = sentencepiece_vocab("llama");
        vocab.scores.clear();
        assert!(tokenizer(&vocab).is_err());

        // A BOS with a space cannot be written in a template: transformers fails too.
        let mut vocab = byte_level_vocab();
        vocab.tokens[1] = "<s x>".into();
        vocab.add_bos = Some(true);
        assert!(tokenizer(&vocab).is_err());
    }
}

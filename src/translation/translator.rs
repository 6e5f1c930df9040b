//! Translation from Rust: load a checkpoint once, then one call translates a batch of sentences.
//!
//! ```no_run
//! # fn main() -> attnzoo::Result<()> {
//! use attnzoo::translation::{DecodeConfig, Translator};
//! let device = attnzoo_backends::Backend::Ndarray.open(Default::default())?;
//! let translator = Translator::load("runs/demo/model", &device)?;
//! let english = translator.translate_text(&["Ich bin müde. Wo ist der Bahnhof?"], &DecodeConfig::default())?;
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};

use attnzoo_models::seq2seq::Seq2Seq;
use burn::tensor::{Device, Int, Tensor, TensorData};

use super::checkpoint::{Checkpoint, Source, Weights};
use super::copy::fill;
use super::corpus::Pair;
use super::decode::{best, decode, DecodeConfig};
use super::metrics::{corpus_bleu, corpus_chrf, Bleu};
use super::sentences;
use super::vocab::{BOS, BOS_ID, EOS, EOS_ID, PAD_ID, UNK_ID};
use crate::attention_maps::{maps_of, rollout, rollout_through, AttentionMaps, Matrix};
use crate::error::{Error, Result};
use crate::heatmap::Heatmap;
use crate::padding::padded;
use crate::validate;
/// The most source or target tokens a heatmap shows, so the picture stays a few megapixels.
pub const MAX_HEATMAP_TOKENS: usize = 60;

/// A trained translation model on one device, with its vocabularies.
pub struct Translator {
    checkpoint: Checkpoint,
    model: Seq2Seq,
    device: Device,
}

/// A translation and every attention map behind it, labelled: what the attention explorer and
/// the heatmaps show.
#[derive(Clone, Debug)]
pub struct Attention {
    /// The German sentence.
    pub sentence: String,
    /// Its English translation, as [`Translator::translate`] gives it.
    pub translation: String,
    /// One label per source token (an unknown word is marked `*`), `S` in all.
    pub source: Vec<String>,
    /// Whether the sentence had more tokens than `source` (the rest was not translated).
    pub cut: bool,
    /// What each decoder step produced, `<eos>` last: `T` labels.
    pub target: Vec<String>,
    /// What each decoder step was fed, `<bos>` first: `T` labels.
    pub decoder_inputs: Vec<String>,
    /// Cross-attention `[layer][head][T][S]` (an RNN: its alignment, one layer of one head).
    pub cross: AttentionMaps,
    /// Encoder self-attention `[layer][head][S][S]` (empty for an RNN).
    pub encoder: AttentionMaps,
    /// Decoder self-attention `[layer][head][T][T]` (empty for an RNN).
    pub decoder: AttentionMaps,
    /// What the lexicon of a lexically biased model says: `p_lex(y_t | f_j)` `[T][S]`, the
    /// probability of each produced token given each source token, which the cross-attention
    /// mixes into the output (`None` for a model without a lexicon).
    pub lexicon: Option<Matrix>,
}

/// A model's translations of a set of pairs, scored against their references.
#[derive(Clone, Debug)]
pub struct Evaluation {
    /// The translations, in the pairs' order.
    pub hypotheses: Vec<String>,
    /// Corpus BLEU.
    pub bleu: Bleu,
    /// Corpus chrF2.
    pub chrf: f64,
}

impl Translator {
    /// Loads the checkpoint in `dir` (its best weights) onto `device`.
    pub fn load(dir: impl AsRef<Path>, device: &Device) -> Result<Self> {
        let checkpoint = Checkpoint::open(dir.as_ref())?;
        let model = checkpoint.load_model(Weights::Best, device)?;
        Ok(Self {
            checkpoint,
            model,
            device: device.clone(),
        })
    }

    /// The checkpoint the model came from.
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    /// The first `max_len` tokens of `sentence`, which may be at most
    /// [`validate::MAX_SENTENCE_CHARS`] long.
    fn source(&self, sentence: &str, max_len: usize) -> Result<Source> {
        let sentence = validate::sentence(sentence).map_err(Error::Input)?;
        Ok(self.checkpoint.vocab.source(sentence, max_len))
    }

    /// English translations of German `texts`, in order: each text cut into its sentences
    /// ([`sentences::split`]), each sentence translated on its own (the models learnt from one
    /// sentence per example, and stop after the first), the translations joined by a space. A
    /// blank text stays empty.
    pub fn translate_text<S: AsRef<str>>(
        &self,
        texts: &[S],
        config: &DecodeConfig,
    ) -> Result<Vec<String>> {
        let split: Vec<Vec<&str>> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let text = validate::sentence(text.as_ref())
                    .map_err(|why| Error::Input(format!("sentence {}: {why}", i + 1)))?;
                Ok(sentences::split(text))
            })
            .collect::<Result<_>>()?;
        let flat: Vec<&str> = split.iter().flatten().copied().collect();
        let mut translated = self.translate(&flat, config)?.into_iter();
        Ok(split
            .iter()
            .map(|parts| joined(translated.by_ref().take(parts.len())))
            .collect())
    }

    /// English translations of German `sentences`, one sequence each, in order (a corpus's
    /// sentences, as [`Translator::evaluate`] scores them; [`Translator::translate_text`] for text
    /// that may hold several sentences); an empty sentence stays empty.
    pub fn translate<S: AsRef<str>>(
        &self,
        sentences: &[S],
        config: &DecodeConfig,
    ) -> Result<Vec<String>> {
        config.validate()?;
        let max_len = self.checkpoint.max_source_len();
        let sources: Vec<Source> = sentences
            .iter()
            .enumerate()
            .map(|(i, sentence)| {
                let source = self
                    .source(sentence.as_ref(), max_len)
                    .map_err(|why| Error::Input(format!("sentence {}: {why}", i + 1)))?;
                if source.cut {
                    crate::note!(
                        "warning: sentence {} has more than {max_len} tokens; translating the first {max_len}",
                        i + 1
                    );
                }
                Ok(source)
            })
            .collect::<Result<_>>()?;
        let wanted: Vec<usize> = (0..sources.len())
            .filter(|&i| !sources[i].ids.is_empty())
            .collect();
        let picked: Vec<Vec<usize>> = wanted.iter().map(|&i| sources[i].ids.clone()).collect();
        let outputs = decode(
            &self.model,
            &picked,
            config,
            self.checkpoint.max_output_len(),
            self.checkpoint.vocab.target.slots(),
            &self.device,
        )?;
        let mut translations = vec![String::new(); sentences.len()];
        for (&i, ids) in wanted.iter().zip(best(outputs)) {
            translations[i] = self
                .checkpoint
                .vocab
                .target
                .decode(&ids, &sources[i].copies);
        }
        Ok(translations)
    }

    /// Translates the German side of `pairs` and scores the translations against the English.
    pub fn evaluate(&self, pairs: &[Pair], config: &DecodeConfig) -> Result<Evaluation> {
        let sources: Vec<&str> = pairs.iter().map(|p| p.german.as_str()).collect();
        let references: Vec<String> = pairs.iter().map(|p| p.english.clone()).collect();
        let hypotheses = self.translate(&sources, config)?;
        Ok(Evaluation {
            bleu: corpus_bleu(&hypotheses, &references)?,
            chrf: corpus_chrf(&hypotheses, &references)?,
            hypotheses,
        })
    }

    /// [`Translator::attend`] for the first sentence of `text` ([`sentences::split`]), and the
    /// translations of the others.
    pub fn attend_text(&self, text: &str, config: &DecodeConfig) -> Result<TextAttention> {
        let text = validate::sentence(text).map_err(Error::Input)?;
        let split = sentences::split(text);
        let Some((first, rest)) = split.split_first() else {
            return Err(Error::Input(
                "nothing to translate: the sentence is empty".into(),
            ));
        };
        Ok(TextAttention {
            first: self.attend(first, config)?,
            rest: self.translate(rest, config)?,
        })
    }

    /// The translation of `sentence` under `config` (greedy or beam search) and every attention
    /// map behind it, both cut at [`MAX_HEATMAP_TOKENS`]. The maps come from one pass that feeds
    /// the decoder the chosen tokens: exactly what decoding them attended to.
    pub fn attend(&self, sentence: &str, config: &DecodeConfig) -> Result<Attention> {
        config.validate()?;
        let max_len = self.checkpoint.max_source_len().min(MAX_HEATMAP_TOKENS);
        let Source {
            ids: source,
            pieces,
            cut,
            copies,
        } = self.source(sentence, max_len)?;
        if source.is_empty() {
            return Err(Error::Input(
                "nothing to translate: the sentence is empty".into(),
            ));
        }
        // The pass below feeds `<bos>` and every produced token: one position more than the
        // translation has tokens, so a translation cut at the model's limit leaves room for it.
        let model_limit =
            (self.checkpoint.max_output_len().saturating_sub(1)).min(MAX_HEATMAP_TOKENS);
        let hypotheses = decode(
            &self.model,
            std::slice::from_ref(&source),
            config,
            model_limit,
            self.checkpoint.vocab.target.slots(),
            &self.device,
        )?;
        let ids = best(hypotheses).remove(0);
        let target_in: Vec<i64> = [BOS_ID].iter().chain(&ids).map(|&id| id as i64).collect();
        let len = target_in.len();
        let target_in =
            Tensor::<2, Int>::from_data(TensorData::new(target_in, [1, len]), &self.device);
        let (source_tensor, padding) = padded(std::slice::from_ref(&source), PAD_ID, &self.device);
        let lexicon = match self.model.lexicon() {
            Some(lexicon) => {
                // [1, S, V] → the produced tokens' columns [1, S, T] → [1, 1, T, S].
                let produced: Vec<i64> = ids.iter().chain([&EOS_ID]).map(|&id| id as i64).collect();
                let columns =
                    Tensor::<1, Int>::from_data(TensorData::new(produced, [len]), &self.device);
                let p_lex = lexicon.rows(source_tensor.clone()).select(2, columns);
                maps_of(vec![p_lex.swap_dims(1, 2).unsqueeze_dim(1)])?
                    .pop()
                    .and_then(|mut heads| heads.pop())
            }
            None => None,
        };
        let maps = self.model.attention(source_tensor, padding, target_in)?;
        let cross = maps_of(maps.cross)?;
        if cross.is_empty() {
            return Err(Error::Input(
                "this model has no attention (the no-attention baseline)".into(),
            ));
        }
        let vocab = &self.checkpoint.vocab;
        let labels = pieces
            .into_iter()
            .map(|(id, text)| match id {
                UNK_ID => format!("{text}*"),
                _ => fill(vec![text], &copies).concat(),
            })
            .collect();
        let words: Vec<String> = ids
            .iter()
            .map(|&id| fill(vec![vocab.target.token(id).to_string()], &copies).concat())
            .collect();
        Ok(Attention {
            sentence: sentence.to_string(),
            translation: vocab.target.decode(&ids, &copies),
            source: labels,
            cut,
            target: words.iter().cloned().chain([EOS.to_string()]).collect(),
            decoder_inputs: [BOS.to_string()].into_iter().chain(words).collect(),
            cross,
            encoder: maps_of(maps.encoder)?,
            decoder: maps_of(maps.decoder)?,
            lexicon,
        })
    }
}

/// What the attention explorer shows for a text: the attention behind its first sentence and
/// the translations of the sentences after it.
#[derive(Clone, Debug)]
pub struct TextAttention {
    /// [`Translator::attend`] of the first sentence.
    pub first: Attention,
    /// The translations of the other sentences, in order.
    pub rest: Vec<String>,
}

impl TextAttention {
    /// The whole text's translation, as [`Translator::translate_text`] gives it.
    pub fn translation(&self) -> String {
        joined(std::iter::once(&self.first.translation).chain(&self.rest))
    }
}

/// Sentences' translations as one text: joined by a space.
fn joined(translations: impl Iterator<Item = impl AsRef<str>>) -> String {
    let parts: Vec<String> = translations.map(|part| part.as_ref().to_owned()).collect();
    parts.join(" ")
}

impl Attention {
    /// Encoder self-attention rollout `[S][S]`; `None` for an RNN.
    pub fn encoder_rollout(&self) -> Option<Matrix> {
        rollout(&self.encoder)
    }

    /// Decoder self-attention rollout `[T][T]`; `None` for an RNN.
    pub fn decoder_rollout(&self) -> Option<Matrix> {
        rollout(&self.decoder)
    }

    /// Which source tokens each output step draws on `[T][S]`: the last layer's head-mean
    /// cross-attention through the encoder's rollout (an RNN: its alignment).
    pub fn cross_rollout(&self) -> Matrix {
        rollout_through(&self.cross, self.encoder_rollout().as_ref()).unwrap_or_default()
    }

    /// Writes one heatmap (PNG and SVG) per layer and head into `out` (created if needed):
    /// `attention.png` for a single map, else `attention-layerL-headH.png`; and `lexicon.png`
    /// when the model has a lexicon. Returns the PNGs.
    pub fn write_heatmaps(&self, out: &Path) -> Result<Vec<PathBuf>> {
        std::fs::create_dir_all(out).map_err(|error| Error::write(out, error))?;
        let sentence: String = self.sentence.chars().take(2 * MAX_HEATMAP_TOKENS).collect();
        let mut written = Vec::new();
        for (layer, heads) in self.cross.iter().enumerate() {
            for (head, steps) in heads.iter().enumerate() {
                let rows = steps.len().min(self.target.len());
                let weights: Vec<f32> = steps.iter().take(rows).flatten().copied().collect();
                let (stem, title) = if self.cross.len() == 1 && heads.len() == 1 {
                    ("attention".to_string(), format!("attention: {sentence}"))
                } else {
                    (
                        format!("attention-layer{}-head{}", layer + 1, head + 1),
                        format!(
                            "cross-attention layer {} head {}: {sentence}",
                            layer + 1,
                            head + 1
                        ),
                    )
                };
                let path = out.join(stem);
                Heatmap {
                    title: &title,
                    row_labels: &self.target[..rows],
                    col_labels: &self.source,
                    weights: &weights,
                }
                .write(&path)?;
                written.push(path.with_extension("png"));
            }
        }
        if let Some(lexicon) = &self.lexicon {
            let path = out.join("lexicon");
            Heatmap {
                title: &format!("lexicon p(target | source): {sentence}"),
                row_labels: &self.target,
                col_labels: &self.source,
                weights: &lexicon.concat(),
            }
            .write(&path)?;
            written.push(path.with_extension("png"));
        }
        Ok(written)
    }
}

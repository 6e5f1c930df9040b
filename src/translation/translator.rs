//! Translation from Rust: load a checkpoint once, then one call translates a batch of sentences.
//!
//! ```no_run
//! # fn main() -> attnzoo::Result<()> {
//! use attnzoo::translation::{DecodeConfig, Translator};
//! let device = attnzoo_backends::Backend::Ndarray.open(Default::default())?;
//! let translator = Translator::load("runs/demo/model", &device)?;
//! let english = translator.translate(&["Wo ist der Bahnhof?"], &DecodeConfig::default())?;
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};

use attnzoo_models::seq2seq::Seq2Seq;
use burn::tensor::Device;

use super::checkpoint::{Checkpoint, Weights};
use super::corpus::Pair;
use super::decode::{attend, best, decode, AttentionMaps, DecodeConfig};
use super::metrics::{corpus_bleu, corpus_chrf, Bleu};
use super::vocab::{EOS, UNK_ID};
use crate::error::{Error, Result};
use crate::heatmap::Heatmap;

/// The most source or target tokens a heatmap shows, so the picture stays a few megapixels.
pub const MAX_HEATMAP_TOKENS: usize = 60;

/// A trained translation model on one device, with its vocabularies.
pub struct Translator {
    checkpoint: Checkpoint,
    model: Seq2Seq,
    device: Device,
}

/// The attention behind one greedy translation, labelled for heatmaps.
#[derive(Clone, Debug)]
pub struct Attention {
    /// The German sentence.
    pub sentence: String,
    /// One label per source token (an unknown word is marked `*`).
    pub source: Vec<String>,
    /// One label per output token, `<eos>` last.
    pub target: Vec<String>,
    /// `[layer][head][target step][source position]`.
    pub maps: AttentionMaps,
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

    /// Source ids of sentence `number` (1-based, for the warning), at most `max_len`: a longer
    /// sentence is cut, with a warning on stderr.
    fn source_ids(&self, sentence: &str, number: usize, max_len: usize) -> Vec<usize> {
        let mut ids = self.checkpoint.vocab.source.encode(sentence);
        if ids.len() > max_len {
            crate::note!(
                "warning: sentence {number} has {} tokens; translating the first {max_len}",
                ids.len()
            );
            ids.truncate(max_len);
        }
        ids
    }

    /// English translations of German `sentences`, in order; an empty sentence stays empty.
    pub fn translate<S: AsRef<str>>(
        &self,
        sentences: &[S],
        config: &DecodeConfig,
    ) -> Result<Vec<String>> {
        config.validate()?;
        let max_len = self.checkpoint.max_source_len();
        let sources: Vec<Vec<usize>> = sentences
            .iter()
            .enumerate()
            .map(|(i, s)| self.source_ids(s.as_ref(), i + 1, max_len))
            .collect();
        let wanted: Vec<usize> = (0..sources.len())
            .filter(|&i| !sources[i].is_empty())
            .collect();
        let picked: Vec<Vec<usize>> = wanted.iter().map(|&i| sources[i].clone()).collect();
        let outputs = decode(
            &self.model,
            &picked,
            config,
            self.checkpoint.max_output_len(),
            &self.device,
        )?;
        let mut translations = vec![String::new(); sentences.len()];
        for (&i, ids) in wanted.iter().zip(best(outputs)) {
            translations[i] = self.checkpoint.vocab.target.decode(&ids);
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

    /// The greedy translation of `sentence` and the attention behind it, both cut at
    /// [`MAX_HEATMAP_TOKENS`] (with a message on stderr); `config` gives the length and repetition rules.
    pub fn attend(&self, sentence: &str, config: &DecodeConfig) -> Result<Attention> {
        let max_len = self.checkpoint.max_source_len().min(MAX_HEATMAP_TOKENS);
        let source = self.source_ids(sentence, 1, max_len);
        if source.is_empty() {
            return Err(Error::Input(
                "nothing to translate: the sentence is empty".into(),
            ));
        }
        let model_limit = self.checkpoint.max_output_len().min(MAX_HEATMAP_TOKENS);
        let (ids, maps) = attend(&self.model, &source, config, model_limit, &self.device)?;
        if maps.is_empty() {
            return Err(Error::Input(
                "this model has no attention (the no-attention baseline)".into(),
            ));
        }
        let vocab = &self.checkpoint.vocab;
        let source = vocab
            .source
            .pieces(sentence)
            .into_iter()
            .take(source.len())
            .map(|(id, text)| {
                if id == UNK_ID {
                    format!("{text}*")
                } else {
                    text
                }
            })
            .collect();
        let target = ids
            .iter()
            .map(|&id| vocab.target.token(id).to_string())
            .chain([EOS.to_string()])
            .collect();
        Ok(Attention {
            sentence: sentence.to_string(),
            source,
            target,
            maps,
        })
    }
}

impl Attention {
    /// Writes one heatmap (PNG and SVG) per layer and head into `out` (created if needed):
    /// `attention.png` for a single map, else `attention-layerL-headH.png`. Returns the PNGs.
    pub fn write_heatmaps(&self, out: &Path) -> Result<Vec<PathBuf>> {
        std::fs::create_dir_all(out).map_err(|error| Error::write(out, error))?;
        let sentence: String = self.sentence.chars().take(2 * MAX_HEATMAP_TOKENS).collect();
        let mut written = Vec::new();
        for (layer, heads) in self.maps.iter().enumerate() {
            for (head, steps) in heads.iter().enumerate() {
                let rows = steps.len().min(self.target.len());
                let weights: Vec<f32> = steps.iter().take(rows).flatten().copied().collect();
                let (stem, title) = if self.maps.len() == 1 && heads.len() == 1 {
                    ("attention".to_string(), format!("attention: {sentence}"))
                } else {
                    (
                        format!("attention-layer{}-head{}", layer + 1, head + 1),
                        format!("layer {} head {}: {sentence}", layer + 1, head + 1),
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
        Ok(written)
    }
}

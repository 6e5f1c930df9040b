//! `attnzoo data fetch | train | translate | eval | bleu | attend | demo`.

use std::io::Write;
use std::path::{Path, PathBuf};

use attnzoo_backends::DeviceArgs;
use attnzoo_models::attention::AlignmentScore;
use attnzoo_models::seq2seq::{RnnSeq2SeqConfig, Seq2Seq, Seq2SeqConfig, TransformerSeq2SeqConfig};
use burn::tensor::Device;
use clap::{Args, ValueEnum};

use crate::heatmap::Heatmap;
use crate::home_cache;
use crate::translation::batch::examples;
use crate::translation::checkpoint::{Checkpoint, Vocabularies};
use crate::translation::corpus::{self, find_corpus, read_split, Pair, Split};
use crate::translation::decode::{attend, beam, greedy, BeamConfig};
use crate::translation::metrics::{corpus_bleu, corpus_chrf};
use crate::translation::train::{train, Data, TrainConfig};
use crate::translation::vocab::{Vocab, EOS, UNK_ID};
use crate::CliError;

/// Which translation model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModelKind {
    /// Bidirectional-LSTM encoder, LSTM decoder with alignment attention.
    Rnn,
    /// Transformer encoder-decoder.
    Transformer,
}

/// The RNN decoder's attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AttentionKind {
    /// No attention (the baseline).
    None,
    /// Bahdanau (additive), scored with the previous state.
    Bahdanau,
    /// Luong dot.
    Dot,
    /// Luong general.
    General,
    /// Luong concat.
    Concat,
    /// Luong location.
    Location,
}

/// `attnzoo train` options.
#[derive(Args, Debug, Clone)]
pub struct TrainArgs {
    /// Checkpoint folder (created; with --resume, continued)
    #[arg(long)]
    pub out: PathBuf,
    /// Model
    #[arg(long, value_enum, default_value = "rnn")]
    pub model: ModelKind,
    /// Attention of the RNN decoder
    #[arg(long, value_enum, default_value = "bahdanau")]
    pub attention: AttentionKind,
    /// RNN state width, or the Transformer's d_model
    #[arg(long, default_value_t = 256)]
    pub hidden: usize,
    /// Epochs (with --resume: the new total)
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Stop after this much training time in all (earlier runs of a resumed checkpoint count)
    #[arg(long)]
    pub max_minutes: Option<f64>,
    /// Continue the checkpoint in --out
    #[arg(long)]
    pub resume: bool,
    /// Sentence pairs per batch
    #[arg(long, default_value_t = 64)]
    pub batch_size: usize,
    /// Peak learning rate [default: 1e-3 for the RNN, 5e-4 for the Transformer]
    #[arg(long)]
    pub learning_rate: Option<f64>,
    /// Probability of feeding the RNN decoder the gold previous token
    #[arg(long, default_value_t = 1.0)]
    pub teacher_forcing: f64,
    /// Linear warmup steps before the 1/√step decay
    #[arg(long, default_value_t = 100)]
    pub warmup_steps: usize,
    /// Label smoothing
    #[arg(long, default_value_t = 0.1)]
    pub label_smoothing: f32,
    /// Split words into subwords: a byte-pair-encoding vocabulary of this many tokens per
    /// language (0: whole words, those seen at least twice)
    #[arg(long, default_value_t = 0)]
    pub bpe: usize,
    /// Dictionary word and phrase pairs mixed into each epoch's sentences (0: sentences only)
    #[arg(long, default_value_t = 0)]
    pub lexicon: usize,
    /// Transformer layers (encoder and decoder each)
    #[arg(long, default_value_t = 3)]
    pub layers: usize,
    /// Dropout
    #[arg(long)]
    pub dropout: Option<f64>,
    /// Seed of weights, data order and teacher forcing
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Train on the first N training pairs only (quick checks)
    #[arg(long)]
    pub train_limit: Option<usize>,
    /// Corpus folder [default: the newest under ~/.cache/attnzoo]
    #[arg(long)]
    pub corpus: Option<PathBuf>,
    #[command(flatten)]
    pub device: DeviceArgs,
}

impl TrainArgs {
    /// The `attnzoo train` defaults (clap's, so they are written once) for a run in `out`.
    pub fn defaults(out: &Path) -> Self {
        #[derive(clap::Parser)]
        struct Train {
            #[command(flatten)]
            args: TrainArgs,
        }
        <Train as clap::Parser>::parse_from([
            std::ffi::OsStr::new("train"),
            "--out".as_ref(),
            out.as_os_str(),
        ])
        .args
    }
}

/// Decoding options.
#[derive(Args, Debug, Clone, Copy)]
pub struct DecodeArgs {
    /// Beam size (1 = greedy, batched)
    #[arg(long, default_value_t = 1)]
    pub beam: usize,
    /// GNMT length-penalty α
    #[arg(long, default_value_t = 0.6)]
    pub alpha: f64,
    /// Longest output as a multiple of the source length (plus 5)
    #[arg(long, default_value_t = 2.0)]
    pub max_len_ratio: f64,
}

fn corpus_folder(corpus: &Option<PathBuf>) -> Result<PathBuf, CliError> {
    match corpus {
        Some(dir) => Ok(dir.clone()),
        None => find_corpus(&home_cache()),
    }
}

fn model_config(args: &TrainArgs, source: usize, target: usize, max_len: usize) -> Seq2SeqConfig {
    match args.model {
        ModelKind::Rnn => {
            let score = match args.attention {
                AttentionKind::None => None,
                AttentionKind::Bahdanau => Some(AlignmentScore::Additive),
                AttentionKind::Dot => Some(AlignmentScore::Dot),
                AttentionKind::General => Some(AlignmentScore::General),
                AttentionKind::Concat => Some(AlignmentScore::Concat),
                AttentionKind::Location => Some(AlignmentScore::Location {
                    max_source_len: max_len,
                }),
            };
            let config = RnnSeq2SeqConfig::new(source, target)
                .with_embedding_dim(args.hidden)
                .with_hidden_dim(args.hidden)
                .with_attention(score);
            Seq2SeqConfig::Rnn(match args.dropout {
                Some(dropout) => config.with_dropout(dropout),
                None => config,
            })
        }
        ModelKind::Transformer => {
            let config = TransformerSeq2SeqConfig::new(source, target)
                .with_d_model(args.hidden)
                .with_d_ff(4 * args.hidden)
                .with_encoder_layers(args.layers)
                .with_decoder_layers(args.layers)
                .with_max_len(max_len + 2);
            Seq2SeqConfig::Transformer(match args.dropout {
                Some(dropout) => config.with_dropout(dropout),
                None => config,
            })
        }
    }
}

/// `attnzoo train`: trains (or resumes) a checkpoint; returns it.
pub fn train_command(args: &TrainArgs) -> Result<Checkpoint, CliError> {
    let (backend, device) = args.device.open()?;
    eprintln!("training on {backend} ({device:?})");
    let corpus = corpus_folder(&args.corpus)?;
    let mut train_pairs = read_split(&corpus, Split::Train)?;
    if let Some(limit) = args.train_limit {
        train_pairs.truncate(limit);
    }
    let valid_pairs = read_split(&corpus, Split::Valid)?;
    let mut lexicon_pairs = corpus::read_lexicon(&corpus)?;
    let mut checkpoint = if args.resume {
        let mut checkpoint = Checkpoint::open(&args.out)?;
        if let Some(epochs) = args.epochs {
            checkpoint.train.epochs = epochs;
        }
        eprintln!(
            "resuming {} after epoch {} ({:.0} s trained)",
            args.out.display(),
            checkpoint.state.epoch,
            checkpoint.state.seconds
        );
        checkpoint
    } else {
        if args.out.join("state.json").exists() || args.out.join("model.json").exists() {
            return Err(CliError::Input(format!(
                "{} already holds a checkpoint: pass --resume to continue it, or choose another --out",
                args.out.display()
            )));
        }
        let mut config = TrainConfig::new()
            .with_batch_size(args.batch_size)
            .with_warmup_steps(args.warmup_steps)
            .with_teacher_forcing(args.teacher_forcing)
            .with_label_smoothing(args.label_smoothing)
            .with_seed(args.seed)
            .with_bpe_vocab(args.bpe)
            .with_lexicon_per_epoch(args.lexicon)
            .with_learning_rate(args.learning_rate.unwrap_or(match args.model {
                ModelKind::Rnn => 1e-3,
                ModelKind::Transformer => 5e-4,
            }));
        if let Some(epochs) = args.epochs {
            config.epochs = epochs;
        }
        if config.lexicon_per_epoch == 0 {
            lexicon_pairs.clear();
        }
        let build = |side: fn(&Pair) -> &str| {
            let sentences = train_pairs.iter().chain(&lexicon_pairs).map(side);
            if config.bpe_vocab == 0 {
                Ok(Vocab::build(sentences, config.min_count, config.max_vocab))
            } else {
                Vocab::build_bpe(sentences, config.min_count, config.bpe_vocab)
                    .map_err(CliError::Input)
            }
        };
        let vocab = Vocabularies {
            source: build(|pair| &pair.german)?,
            target: build(|pair| &pair.english)?,
        };
        eprintln!(
            "{} training pairs, {} vocabularies of {} (German) and {} (English) tokens",
            train_pairs.len(),
            if vocab.source.is_subword() {
                "subword"
            } else {
                "word"
            },
            vocab.source.len(),
            vocab.target.len()
        );
        let model = model_config(args, vocab.source.len(), vocab.target.len(), config.max_len);
        Checkpoint::create(&args.out, model, config, vocab)?
    };
    let max_len = checkpoint.train.max_len;
    let data = Data {
        train: examples(
            &train_pairs,
            &checkpoint.vocab.source,
            &checkpoint.vocab.target,
            max_len,
        ),
        lexicon: examples(
            match checkpoint.train.lexicon_per_epoch {
                0 => &[],
                _ => &lexicon_pairs,
            },
            &checkpoint.vocab.source,
            &checkpoint.vocab.target,
            max_len,
        ),
        valid: examples(
            &valid_pairs,
            &checkpoint.vocab.source,
            &checkpoint.vocab.target,
            max_len,
        ),
        valid_pairs,
    };
    let train_device = device.clone().autodiff();
    train_device.seed(checkpoint.train.seed);
    let model = if checkpoint.state.weights.is_empty() {
        checkpoint.model.try_init(&train_device)?
    } else {
        checkpoint.load_model(&train_device)?
    };
    train(&mut checkpoint, model, &data, &device, args.max_minutes)?;
    Ok(checkpoint)
}

/// A loaded checkpoint on an inference device.
struct Translator {
    checkpoint: Checkpoint,
    model: Seq2Seq,
    device: Device,
}

impl Translator {
    fn open(dir: &Path, device: &DeviceArgs) -> Result<Self, CliError> {
        let (_, device) = device.open()?;
        let checkpoint = Checkpoint::open(dir)?;
        let model = checkpoint.load_model(&device)?;
        Ok(Self {
            checkpoint,
            model,
            device,
        })
    }

    /// The longest output: twice the longest training sentence, within the Transformer's
    /// position table (which also holds `<bos>`).
    fn output_cap(&self) -> usize {
        let cap = 2 * self.checkpoint.train.max_len;
        match &self.checkpoint.model {
            Seq2SeqConfig::Transformer(config) => cap.min(config.max_len - 1),
            Seq2SeqConfig::Rnn(_) => cap,
        }
    }

    /// Source ids, truncated to the model's maximum with a warning.
    fn source_ids(&self, sentence: &str, line: usize) -> Vec<usize> {
        let mut ids = self.checkpoint.vocab.source.encode(sentence);
        let max_len = self.checkpoint.train.max_len;
        if ids.len() > max_len {
            eprintln!(
                "warning: line {line} has {} tokens; translating the first {max_len}",
                ids.len()
            );
            ids.truncate(max_len);
        }
        ids
    }

    /// Translations of `sentences`, in order; an empty sentence stays empty.
    fn translate(&self, sentences: &[String], decode: DecodeArgs) -> Result<Vec<String>, CliError> {
        let sources: Vec<Vec<usize>> = sentences
            .iter()
            .enumerate()
            .map(|(i, s)| self.source_ids(s, i + 1))
            .collect();
        let wanted: Vec<usize> = (0..sources.len())
            .filter(|&i| !sources[i].is_empty())
            .collect();
        let picked: Vec<Vec<usize>> = wanted.iter().map(|&i| sources[i].clone()).collect();
        let max_len = self.output_cap();
        let outputs = if decode.beam <= 1 {
            greedy(&self.model, &picked, max_len, &self.device)?
        } else {
            let config = BeamConfig {
                beam: decode.beam,
                alpha: decode.alpha,
                max_len_ratio: decode.max_len_ratio,
                n_best: 1,
            };
            beam(&self.model, &picked, config, max_len, &self.device)?
        };
        let mut translations = vec![String::new(); sentences.len()];
        for (&i, ids) in wanted.iter().zip(outputs) {
            translations[i] = self.checkpoint.vocab.target.decode(&ids);
        }
        Ok(translations)
    }
}

/// `attnzoo translate`: German lines on stdin → English lines on stdout.
pub fn translate_command(
    checkpoint: &Path,
    decode: DecodeArgs,
    device: &DeviceArgs,
) -> Result<(), CliError> {
    let translator = Translator::open(checkpoint, device)?;
    let sentences = super::read_lines(std::io::stdin().lock())?;
    let mut stdout = std::io::stdout().lock();
    for line in translator.translate(&sentences, decode)? {
        writeln!(stdout, "{line}").map_err(|error| CliError::Input(format!("stdout: {error}")))?;
    }
    Ok(())
}

/// `attnzoo eval`: BLEU and chrF of a checkpoint on a split.
pub fn eval_command(
    checkpoint: &Path,
    split: Split,
    limit: Option<usize>,
    corpus: &Option<PathBuf>,
    decode: DecodeArgs,
    device: &DeviceArgs,
) -> Result<(), CliError> {
    let translator = Translator::open(checkpoint, device)?;
    let mut pairs = read_split(&corpus_folder(corpus)?, split)?;
    if let Some(limit) = limit {
        pairs.truncate(limit);
    }
    let (bleu, chrf) = score(&translator, &pairs, decode)?;
    println!("{bleu}");
    println!("chrF2 = {chrf:.2}");
    Ok(())
}

fn score(
    translator: &Translator,
    pairs: &[Pair],
    decode: DecodeArgs,
) -> Result<(crate::translation::metrics::Bleu, f64), CliError> {
    let sources: Vec<String> = pairs.iter().map(|p| p.german.clone()).collect();
    let references: Vec<String> = pairs.iter().map(|p| p.english.clone()).collect();
    let hypotheses = translator.translate(&sources, decode)?;
    Ok((
        corpus_bleu(&hypotheses, &references)?,
        corpus_chrf(&hypotheses, &references)?,
    ))
}

/// The translations of `pairs`' German sides by the checkpoint in `dir`.
pub fn translate_pairs(
    dir: &Path,
    pairs: &[Pair],
    decode: DecodeArgs,
    device: &DeviceArgs,
) -> Result<Vec<String>, CliError> {
    let sources: Vec<String> = pairs.iter().map(|p| p.german.clone()).collect();
    Translator::open(dir, device)?.translate(&sources, decode)
}

/// `attnzoo bleu`: corpus BLEU of stdin against `reference`, as sacreBLEU prints it or as JSON.
pub fn bleu_command(reference: &Path, json: bool) -> Result<(), CliError> {
    let references = super::read_lines(std::fs::File::open(reference).map_err(|error| {
        CliError::Input(format!("cannot read {}: {error}", reference.display()))
    })?)?;
    let hypotheses = super::read_lines(std::io::stdin().lock())?;
    let bleu = corpus_bleu(&hypotheses, &references)?;
    if json {
        println!("{}", serde_json::to_string(&bleu).expect("BLEU serialises"));
    } else {
        println!("{bleu}");
    }
    Ok(())
}

/// `attnzoo attend`: heatmaps of the attention behind one greedy translation, in `out`.
pub fn attend_command(
    checkpoint: &Path,
    sentence: &str,
    out: &Path,
    device: &DeviceArgs,
) -> Result<Vec<PathBuf>, CliError> {
    let translator = Translator::open(checkpoint, device)?;
    write_heatmaps(&translator, sentence, out)
}

fn write_heatmaps(
    translator: &Translator,
    sentence: &str,
    out: &Path,
) -> Result<Vec<PathBuf>, CliError> {
    let source = translator.source_ids(sentence, 1);
    if source.is_empty() {
        return Err(CliError::Input(
            "nothing to translate: the sentence is empty".into(),
        ));
    }
    let (ids, maps) = attend(
        &translator.model,
        &source,
        translator.output_cap(),
        &translator.device,
    )?;
    if maps.is_empty() {
        return Err(CliError::Input(
            "this model has no attention (the no-attention baseline)".into(),
        ));
    }
    let vocab = &translator.checkpoint.vocab;
    let columns: Vec<String> = vocab
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
    let rows: Vec<String> = ids
        .iter()
        .map(|&id| vocab.target.token(id).to_string())
        .chain([EOS.to_string()])
        .collect();
    std::fs::create_dir_all(out)
        .map_err(|error| CliError::Input(format!("cannot create {}: {error}", out.display())))?;
    let mut written = Vec::new();
    for (layer, heads) in maps.iter().enumerate() {
        for (head, steps) in heads.iter().enumerate() {
            let weights: Vec<f32> = steps.iter().take(rows.len()).flatten().copied().collect();
            let (stem, title) = if maps.len() == 1 && heads.len() == 1 {
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
                row_labels: &rows[..steps.len().min(rows.len())],
                col_labels: &columns,
                weights: &weights,
            }
            .write(&path)
            .map_err(CliError::Input)?;
            written.push(path.with_extension("png"));
        }
    }
    Ok(written)
}

/// `attnzoo data fetch`.
pub fn data_fetch(cache: Option<PathBuf>) -> Result<(), CliError> {
    let dir = corpus::fetch(cache)?;
    println!("{}", dir.display());
    Ok(())
}

/// `attnzoo demo`: fetch → train for `minutes` → test BLEU → five translations → heatmaps.
pub fn demo(
    minutes: f64,
    out: &Path,
    model: ModelKind,
    device: &DeviceArgs,
) -> Result<(), CliError> {
    let cache = home_cache();
    if find_corpus(&cache).is_err() {
        eprintln!("fetching the German–English corpus (Debian's trans-de-en, GPL-2+) …");
        corpus::fetch(Some(cache.clone()))?;
    }
    let checkpoint_dir = out.join("model");
    let resume = checkpoint_dir.join("state.json").is_file();
    let trained_before = if resume {
        Checkpoint::open(&checkpoint_dir)?.state.seconds
    } else {
        0.0
    };
    eprintln!(
        "training {model:?} for {minutes} min into {} …",
        checkpoint_dir.display()
    );
    let args = TrainArgs {
        model,
        epochs: Some(100),
        max_minutes: Some(trained_before / 60.0 + minutes),
        resume,
        device: device.clone(),
        ..TrainArgs::defaults(&checkpoint_dir)
    };
    let checkpoint = train_command(&args)?;
    if checkpoint.state.weights.is_empty() {
        return Err(CliError::Input(format!(
            "{minutes} min was not enough for one epoch: run the demo with more --minutes"
        )));
    }
    let translator = Translator::open(&checkpoint_dir, device)?;
    let test = read_split(&find_corpus(&cache)?, Split::Test)?;
    let greedy_decode = DecodeArgs {
        beam: 1,
        alpha: 0.6,
        max_len_ratio: 2.0,
    };
    let (bleu, chrf) = score(&translator, &test, greedy_decode)?;
    println!(
        "test split, {} pairs, greedy: {bleu}, chrF2 = {chrf:.2}",
        test.len()
    );
    let sample: Vec<&Pair> = test
        .iter()
        .filter(|p| p.german.split_whitespace().count() <= 10)
        .take(5)
        .collect();
    let beam_decode = DecodeArgs {
        beam: 5,
        ..greedy_decode
    };
    let translations = translator.translate(
        &sample.iter().map(|p| p.german.clone()).collect::<Vec<_>>(),
        beam_decode,
    )?;
    for (pair, translation) in sample.iter().zip(&translations) {
        println!(
            "\nDE   {}\nREF  {}\nOURS {translation}",
            pair.german, pair.english
        );
    }
    if let Some(first) = sample.first() {
        let written = write_heatmaps(&translator, &first.german, out)?;
        println!(
            "\nattention heatmaps: {}",
            written
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

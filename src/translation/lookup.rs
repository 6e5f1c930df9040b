//! Word-by-word dictionary lookup: the scale a translation model's BLEU is read against.
//!
//! A test BLEU of 5 means little on its own. Replacing each German word by the English of its
//! first entry in the [`LEXICON`](super::corpus::LEXICON) — no training, no word order, no
//! inflection — scores about 2 BLEU and 27 chrF2 on the test split: a model below that chrF2 has
//! not yet learned what the dictionary already knows. `attnzoo demo` prints it beside the
//! model's scores.
//!
//! The rule is `scripts/dictionary_baseline.py`'s, and the scores equal that script's sacreBLEU
//! ones (docs/MEASUREMENTS.md): each word and each punctuation mark of a sentence (the tokens of
//! Python's `\w+|[^\w\s]`) is replaced by the English of the first lexicon entry whose German
//! side is that one word, compared lowercased, with a leading `to ` dropped (`gehen` → `go`); a
//! token the lexicon lacks is kept as it is; the tokens are joined by spaces.

use std::collections::HashMap;
use std::path::Path;

use super::corpus::{read_lexicon, Pair};
use super::metrics::{corpus_bleu, corpus_chrf};
use super::translator::Evaluation;
use crate::error::Result;

/// The single-word entries of a lexicon: lowercased German word → English.
#[derive(Clone, Debug, Default)]
pub struct DictionaryLookup {
    words: HashMap<String, String>,
}

impl DictionaryLookup {
    /// The lookup of the lexicon in the corpus folder `corpus` (as [`find_corpus`] finds it).
    ///
    /// [`find_corpus`]: super::corpus::find_corpus
    pub fn load(corpus: &Path) -> Result<Self> {
        Ok(Self::new(&read_lexicon(corpus)?))
    }

    /// The lookup of lexicon entries: those whose German side has no space, the first of each
    /// lowercased German word winning.
    pub fn new(lexicon: &[Pair]) -> Self {
        let mut words = HashMap::new();
        for entry in lexicon.iter().filter(|entry| !entry.german.contains(' ')) {
            words.entry(entry.german.to_lowercase()).or_insert_with(|| {
                let english = entry.english.as_str();
                english.strip_prefix("to ").unwrap_or(english).to_string()
            });
        }
        Self { words }
    }

    /// How many German words it knows.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether it knows no word.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// `sentence` looked up token by token: "Wo ist der Bahnhof?" → "where is the station ?"
    /// with a lexicon that has those words and no `?`.
    pub fn translate(&self, sentence: &str) -> String {
        tokens(sentence)
            .map(|token| {
                self.words
                    .get(&token.to_lowercase())
                    .map_or(token, String::as_str)
            })
            .collect::<Vec<&str>>()
            .join(" ")
    }

    /// Looks up the German side of `pairs` and scores the result against the English, as
    /// [`Translator::evaluate`](super::Translator::evaluate) scores a model.
    pub fn evaluate(&self, pairs: &[Pair]) -> Result<Evaluation> {
        let hypotheses: Vec<String> = pairs.iter().map(|p| self.translate(&p.german)).collect();
        let references: Vec<String> = pairs.iter().map(|p| p.english.clone()).collect();
        Ok(Evaluation {
            bleu: corpus_bleu(&hypotheses, &references)?,
            chrf: corpus_chrf(&hypotheses, &references)?,
            hypotheses,
        })
    }
}

/// Python's `\w` on text: a letter or number of any script, or `_`.
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Python's `\s` on text: Unicode white space and the four information separators
/// (U+001C–U+001F), which Python counts as space and Rust does not.
fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The tokens of `text` by Python's `re.findall(r"\w+|[^\w\s]", text)`: runs of word characters,
/// and every other character that is not space on its own.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        rest = rest.trim_start_matches(is_space);
        let first = rest.chars().next()?;
        let end = match is_word(first) {
            true => rest.find(|c: char| !is_word(c)).unwrap_or(rest.len()),
            false => first.len_utf8(),
        };
        let (token, tail) = rest.split_at(end);
        rest = tail;
        Some(token)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(german: &str, english: &str) -> Pair {
        Pair {
            german: german.into(),
            english: english.into(),
        }
    }

    #[test]
    fn tokens_are_pythons_word_runs_and_single_marks() {
        let got: Vec<&str> =
            tokens("  Straße, Größe\tund 3,5 Äpfel—für__dich?! (ja) e-mail… 2.\u{1f}x").collect();
        let expected: Vec<&str> =
            "Straße , Größe und 3 , 5 Äpfel — für__dich ? ! ( ja ) e - mail … 2 . x"
                .split(' ')
                .collect();
        assert_eq!(got, expected);
        assert_eq!(tokens(" \t\n").count(), 0);
    }

    #[test]
    fn each_word_becomes_the_first_single_word_entry_lowercased_without_to() {
        let lookup = DictionaryLookup::new(&[
            pair("Bahnhof", "station"),
            pair("bahnhof", "railway station"), // a later entry for the same lowercased word
            pair("wo", "where"),
            pair("ist", "is"),
            pair("der Bahnhof", "the station"), // not a single word
            pair("gehen", "to go"),
            pair("Tomate", "tomato"),
        ]);
        assert_eq!(lookup.len(), 5);
        assert_eq!(
            lookup.translate("Wo ist der Bahnhof? Wir gehen!"),
            "where is der station ? Wir go !"
        );
        assert_eq!(
            lookup.translate("Tomate"),
            "tomato",
            "only a leading `to ` goes"
        );
        assert_eq!(lookup.translate(""), "");
    }

    #[test]
    fn it_loads_a_corpus_lexicon_and_scores_like_a_model() {
        let corpus = tempfile::tempdir().unwrap();
        std::fs::write(
            corpus.path().join(super::super::corpus::LEXICON),
            "Hund\tdog\nbellt\tto bark\nder\tthe\nDer Hund\tthe dog\n",
        )
        .unwrap();
        let lookup = DictionaryLookup::load(corpus.path()).unwrap();
        let pairs = [
            pair("Der Hund bellt.", "the dog bark ."),
            pair("Der Hund.", "the dog ."),
        ];
        let scored = lookup.evaluate(&pairs).unwrap();
        assert_eq!(scored.hypotheses, ["the dog bark .", "the dog ."]);
        assert!((scored.bleu.score - 100.0).abs() < 1e-9, "{}", scored.bleu);
        assert!((scored.chrf - 100.0).abs() < 1e-9, "{}", scored.chrf);
        assert!(lookup.evaluate(&[]).is_err(), "no pairs, no score");
    }

    #[test]
    fn a_missing_lexicon_says_how_to_fetch_it() {
        let empty = tempfile::tempdir().unwrap();
        let error = DictionaryLookup::load(empty.path()).unwrap_err();
        assert!(error.to_string().contains("attnzoo data fetch"), "{error}");
    }
}

//! Names and numbers copied through translation: placeholders for the words a translation keeps
//! as they are (the "copyable" unknown words of Luong et al. 2015, "Addressing the Rare Word
//! Problem in Neural Machine Translation"; placeholders as in Crego et al. 2016, "SYSTRAN's Pure
//! Neural Machine Translation Systems").
//!
//! Each vocabulary has the slot tokens `<copy1>` … `<copy8>`. In a training pair, each German word
//! with a digit or a capital that the English side has verbatim ("Berlin", "1938") becomes a
//! slot on both sides, numbered by its first place in the German sentence, so the model learns
//! to put slot k where the word goes. When translating, [`CopyRule::mark`] makes a slot of each
//! word with a digit and each capitalised word the model cannot translate: neither seen
//! translated in the training sentences nor a dictionary headword with another translation
//! ("Anna", "Aarhus"); the output's slot k is the k-th such word again ([`fill`]).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::corpus::Pair;
use super::vocab::tokenize;
// The slot tokens are the vocabulary's (`vocab` owns them; nothing there calls back here).
pub use super::vocab::{fill, slot_of, slot_token, SLOTS};

/// Whether `word` has a digit.
fn has_digit(word: &str) -> bool {
    word.chars().any(char::is_numeric)
}

/// A word a translation may keep as it is: it has a digit, or it starts with a capital and is
/// longer than one letter.
fn copyable(word: &str) -> bool {
    let mut chars = word.chars();
    has_digit(word) || (chars.next().is_some_and(char::is_uppercase) && chars.next().is_some())
}

/// A sentence's words with some of them replaced by slots.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Marked {
    /// The words, each slotted one as its slot token.
    pub words: Vec<String>,
    /// The word of each slot, slot 1 first.
    pub copies: Vec<String>,
}

/// `words` with each word that `copies` says yes to as a slot: the same word, the same slot; at
/// most [`SLOTS`] of them.
fn marked(words: Vec<String>, mut copies: impl FnMut(&str) -> bool) -> Marked {
    let mut marked = Marked::default();
    for word in words {
        let slot = match marked.copies.iter().position(|copy| *copy == word) {
            Some(i) => Some(i + 1),
            None if marked.copies.len() < SLOTS && copies(&word) => {
                marked.copies.push(word.clone());
                Some(marked.copies.len())
            }
            None => None,
        };
        marked.words.push(slot.map_or(word, slot_token));
    }
    marked
}

/// A training pair's words, each copyable German word that the English has verbatim a slot on
/// both sides.
pub fn mark_pair(pair: &Pair) -> (Vec<String>, Vec<String>) {
    let english = tokenize(&pair.english);
    let german = marked(tokenize(&pair.german), |word| {
        copyable(word) && english.iter().any(|e| e == word)
    });
    let english = english
        .into_iter()
        .map(
            |word| match german.copies.iter().position(|copy| *copy == word) {
                Some(i) => slot_token(i + 1),
                None => word,
            },
        )
        .collect();
    (german.words, english)
}

/// Which words of a German sentence to copy when translating: those with a digit, and the
/// capitalised ones not among the words the model can translate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "Vec<String>", into = "Vec<String>")]
pub struct CopyRule {
    /// Lowercased: the training sentences' German words that stay words in some pair, and the
    /// dictionary's one-word headwords with a translation other than themselves.
    translatable: HashSet<String>,
}

impl From<Vec<String>> for CopyRule {
    fn from(words: Vec<String>) -> Self {
        Self {
            translatable: words.into_iter().collect(),
        }
    }
}

impl From<CopyRule> for Vec<String> {
    fn from(rule: CopyRule) -> Self {
        let mut words: Vec<String> = rule.translatable.into_iter().collect();
        words.sort_unstable();
        words
    }
}

impl CopyRule {
    /// The rule of a model trained on `pairs` (marked by [`mark_pair`]) beside the dictionary
    /// `lexicon`.
    pub fn learn(pairs: &[Pair], lexicon: &[Pair]) -> Self {
        let mut translatable: HashSet<String> = pairs
            .iter()
            .flat_map(|pair| mark_pair(pair).0)
            .filter(|word| slot_of(word).is_none())
            .map(|word| word.to_lowercase())
            .collect();
        translatable.extend(
            lexicon
                .iter()
                .filter(|entry| !entry.german.contains(' '))
                .filter(|entry| entry.german.to_lowercase() != entry.english.to_lowercase())
                .map(|entry| entry.german.to_lowercase()),
        );
        Self { translatable }
    }

    /// Whether `word` is kept as it is.
    fn copies(&self, word: &str) -> bool {
        has_digit(word) || (copyable(word) && !self.translatable.contains(&word.to_lowercase()))
    }

    /// The words of a German sentence to translate, those to copy as slots.
    pub fn mark(&self, sentence: &str) -> Marked {
        marked(tokenize(sentence), |word| self.copies(word))
    }
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

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(String::from).collect()
    }

    #[test]
    fn a_pair_slots_the_names_and_numbers_both_sides_share() {
        let (german, english) = mark_pair(&pair(
            "1938 flüchtete Helen mit Helen nach Amerika .",
            "In 1938 Helen fled to America with Helen .",
        ));
        assert_eq!(
            german,
            words("<copy1> flüchtete <copy2> mit <copy2> nach Amerika .")
        );
        assert_eq!(
            english,
            words("In <copy1> <copy2> fled to America with <copy2> .")
        );
        // "Das" is not in the English; "in" has no capital.
        let (german, _) = mark_pair(&pair("Das ist in Ordnung.", "That is in order."));
        assert_eq!(german, words("Das ist in Ordnung ."));
    }

    #[test]
    fn translating_slots_numbers_and_unknown_capitalised_words() {
        let rule = CopyRule::learn(
            &[
                pair("Ich wohne in Berlin.", "I live in Berlin."),
                pair("Der Bahnhof ist alt.", "The station is old."),
            ],
            &[
                pair("Zug", "train"),
                pair("Hamburg", "Hamburg"),
                pair("Guten Tag", "hello"),
            ],
        );
        let marked = rule.mark("Anna fährt um 8 Uhr mit dem Zug nach Hamburg, nicht Berlin!");
        assert_eq!(
            marked.words,
            words("<copy1> fährt um <copy2> <copy3> mit dem Zug nach <copy4> , nicht <copy5> !")
        );
        assert_eq!(marked.copies, words("Anna 8 Uhr Hamburg Berlin"));
        // Known words stay words, in any case.
        assert_eq!(
            rule.mark("Der Bahnhof").words,
            words("Der Bahnhof"),
            "translatable"
        );
        let filled = fill(
            words("<copy1> takes the <copy4> train at <copy2> <copy7> ."),
            &marked.copies,
        );
        assert_eq!(filled, words("Anna takes the Hamburg train at 8 ."));
    }

    #[test]
    fn at_most_eight_slots_and_the_rule_round_trips_as_a_word_list() {
        let rule = CopyRule::default();
        let marked = rule.mark("1 2 3 4 5 6 7 8 9 10");
        assert_eq!(marked.copies.len(), SLOTS);
        assert_eq!(marked.words[8..], words("9 10"));
        assert_eq!(slot_of("<copy8>"), Some(8));
        assert_eq!(slot_of("<copy9>"), None);
        assert_eq!(slot_of("copy1"), None);
        let rule = CopyRule::learn(&[pair("Der Hund bellt.", "The dog barks.")], &[]);
        let json = serde_json::to_string(&rule).unwrap();
        assert_eq!(json, r#"[".","bellt","der","hund"]"#);
        assert_eq!(serde_json::from_str::<CopyRule>(&json).unwrap(), rule);
    }
}

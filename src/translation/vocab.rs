//! Word-level vocabularies: a sentence becomes words and punctuation marks; words seen fewer
//! than `min_count` times in the training split become `<unk>`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// Padding (id 0), ignored by the loss.
pub const PAD: &str = "<pad>";
/// Start of a target sentence (id 1).
pub const BOS: &str = "<bos>";
/// End of a sentence (id 2).
pub const EOS: &str = "<eos>";
/// Unknown word (id 3).
pub const UNK: &str = "<unk>";

/// Id of [`PAD`].
pub const PAD_ID: usize = 0;
/// Id of [`BOS`].
pub const BOS_ID: usize = 1;
/// Id of [`EOS`].
pub const EOS_ID: usize = 2;
/// Id of [`UNK`].
pub const UNK_ID: usize = 3;

/// Tokens and their ids; the four special tokens come first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vocab {
    tokens: Vec<String>,
    #[serde(skip)]
    ids: HashMap<String, usize>,
}

/// Splits a sentence into words (letters, digits and inner apostrophes or hyphens) and single
/// punctuation marks.
pub fn tokenize(sentence: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let chars: Vec<char> = sentence.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let joins = matches!(c, '\'' | '’' | '-')
            && !word.is_empty()
            && chars.get(i + 1).is_some_and(|next| next.is_alphanumeric());
        if c.is_alphanumeric() || joins {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            tokens.push(std::mem::take(&mut word));
        }
        if !c.is_whitespace() {
            tokens.push(c.to_string());
        }
    }
    if !word.is_empty() {
        tokens.push(word);
    }
    tokens
}

/// Joins tokens into text: a space between tokens, none before closing punctuation or after
/// opening quotes and brackets.
pub fn detokenize(tokens: &[String]) -> String {
    let mut text = String::new();
    let mut glue_next = true;
    for token in tokens {
        let closing = matches!(
            token.as_str(),
            "." | "," | "?" | "!" | ":" | ";" | "“" | "”" | "’" | ")" | "]" | "%"
        );
        if !glue_next && !closing {
            text.push(' ');
        }
        text.push_str(token);
        glue_next = matches!(token.as_str(), "„" | "‚" | "(" | "[" | "‘");
    }
    text
}

impl Vocab {
    /// The vocabulary of `sentences`: the specials, then tokens seen at least `min_count`
    /// times, most frequent first (ties alphabetical), at most `max_size` in all.
    pub fn build<'a>(
        sentences: impl IntoIterator<Item = &'a str>,
        min_count: usize,
        max_size: usize,
    ) -> Self {
        let mut counts: HashMap<String, usize> = HashMap::new();
        for sentence in sentences {
            for token in tokenize(sentence) {
                *counts.entry(token).or_default() += 1;
            }
        }
        let mut frequent: Vec<(String, usize)> = counts
            .into_iter()
            .filter(|(_, count)| *count >= min_count)
            .collect();
        frequent.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let tokens = [PAD, BOS, EOS, UNK]
            .map(String::from)
            .into_iter()
            .chain(frequent.into_iter().map(|(token, _)| token))
            .take(max_size.max(4))
            .collect();
        Self::from_tokens(tokens)
    }

    /// A vocabulary with these tokens, in this order.
    pub fn from_tokens(tokens: Vec<String>) -> Self {
        let ids = tokens
            .iter()
            .enumerate()
            .map(|(id, token)| (token.clone(), id))
            .collect();
        Self { tokens, ids }
    }

    /// Restores the id index after deserialising.
    pub fn reindexed(self) -> Self {
        Self::from_tokens(self.tokens)
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether there are no tokens at all.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Whether the specials are where the models expect them.
    pub fn has_specials(&self) -> bool {
        self.tokens.len() >= 4 && self.tokens[..4] == [PAD, BOS, EOS, UNK]
    }

    /// Ids of a sentence's tokens (unknown ones are [`UNK_ID`]).
    pub fn encode(&self, sentence: &str) -> Vec<usize> {
        tokenize(sentence)
            .iter()
            .map(|token| self.ids.get(token).copied().unwrap_or(UNK_ID))
            .collect()
    }

    /// The token of an id.
    pub fn token(&self, id: usize) -> &str {
        self.tokens.get(id).map_or(UNK, String::as_str)
    }

    /// Text of ids, stopping at `<eos>` and skipping the other specials.
    pub fn decode(&self, ids: &[usize]) -> String {
        let tokens: Vec<String> = ids
            .iter()
            .take_while(|&&id| id != EOS_ID)
            .filter(|&&id| id != PAD_ID && id != BOS_ID)
            .map(|&id| self.token(id).to_string())
            .collect();
        detokenize(&tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_punctuation_round_trip() {
        let tokens = tokenize("I’ve met Hans-Peter, haven't I? „Ja“ (sehr) gut!");
        assert_eq!(
            tokens,
            [
                "I’ve",
                "met",
                "Hans-Peter",
                ",",
                "haven't",
                "I",
                "?",
                "„",
                "Ja",
                "“",
                "(",
                "sehr",
                ")",
                "gut",
                "!"
            ]
        );
        assert_eq!(
            detokenize(&tokens),
            "I’ve met Hans-Peter, haven't I? „Ja“ (sehr) gut!"
        );
    }

    #[test]
    fn rare_words_become_unk_and_decoding_stops_at_eos() {
        let vocab = Vocab::build(["the dog barks .", "the cat sleeps ."], 2, 100);
        assert!(vocab.has_specials());
        assert_eq!(vocab.token(4), "."); // ties alphabetical: "." < "the"
        let ids = vocab.encode("the zebra.");
        assert_eq!(ids, vec![5, UNK_ID, 4]);
        assert_eq!(
            vocab.decode(&[BOS_ID, 5, UNK_ID, 4, EOS_ID, 5]),
            "the <unk>."
        );
        let json = serde_json::to_string(&vocab).unwrap();
        let back: Vocab = serde_json::from_str::<Vocab>(&json).unwrap().reindexed();
        assert_eq!(back, vocab);
    }
}

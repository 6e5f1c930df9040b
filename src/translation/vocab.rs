//! Vocabularies. A sentence first becomes words and punctuation marks ([`tokenize`]); then either
//! each word is a token (words seen fewer than `min_count` times in the training split become
//! `<unk>`), or each word is split into subwords by byte-pair encoding (Sennrich et al. 2016)
//! learned on the training split with the `tokenizers` crate: pieces after a word's first carry
//! the [`CONTINUATION`] prefix, so decoding glues them back.

use std::collections::HashMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use tokenizers::models::bpe::{BpeTrainerBuilder, BPE};

use tokenizers::{AddedToken, Model, Trainer};

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

/// Marks a subword that continues the word before it.
pub const CONTINUATION: &str = "##";

// The copy slots are tokens of every vocabulary, as the specials are, so they live here;
// `translation::copy` decides which words become slots (and re-exports these).

/// Slot tokens per vocabulary: words past the eighth are left as they are.
pub const SLOTS: usize = 8;

/// The token of slot `k` (1-based).
pub fn slot_token(k: usize) -> String {
    format!("<copy{k}>")
}

/// Slot `k` (1-based) of a token, if it is one.
pub fn slot_of(token: &str) -> Option<usize> {
    let k: usize = token
        .strip_prefix("<copy")?
        .strip_suffix('>')?
        .parse()
        .ok()?;
    (1..=SLOTS).contains(&k).then_some(k)
}

/// Tokens with each slot replaced by its word; a slot the sentence has no word for is dropped.
pub fn fill(tokens: Vec<String>, copies: &[String]) -> Vec<String> {
    tokens
        .into_iter()
        .filter_map(|token| match slot_of(&token) {
            Some(k) => copies.get(k - 1).cloned(),
            None => Some(token),
        })
        .collect()
}

/// Tokens and their ids; the four special tokens come first, then (in vocabularies built since
/// names and numbers are copied) the [`SLOTS`] slot tokens that `translation::copy` fills.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Vocab {
    tokens: Vec<String>,
    /// The subword segmentation (its vocabulary is `tokens`); `None`: whole words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bpe: Option<BPE>,
    #[serde(skip)]
    ids: HashMap<String, usize>,
}

/// The tokens every new vocabulary starts with: the four specials, then the copy slots.
fn specials() -> Vec<String> {
    [PAD, BOS, EOS, UNK]
        .map(String::from)
        .into_iter()
        .chain((1..=SLOTS).map(slot_token))
        .collect()
}

/// Splits a sentence into words (letters, digits, inner apostrophes or hyphens, and the points,
/// commas and colons inside a number: "3,50", "8:30") and single punctuation marks.
pub fn tokenize(sentence: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let chars: Vec<char> = sentence.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1);
        let joins = !word.is_empty()
            && match c {
                '\'' | '’' | '-' => next.is_some_and(|next| next.is_alphanumeric()),
                '.' | ',' | ':' => {
                    word.ends_with(|last: char| last.is_ascii_digit())
                        && next.is_some_and(char::is_ascii_digit)
                }
                _ => false,
            };
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
        let specials = specials();
        let size = max_size.max(specials.len());
        let tokens = specials
            .into_iter()
            .chain(frequent.into_iter().map(|(token, _)| token))
            .take(size)
            .collect();
        Self::new(tokens, None)
    }

    /// A subword vocabulary of at most `size` tokens (specials included) learned by byte-pair
    /// encoding on the words of `sentences`; merges seen fewer than `min_count` times are not made.
    pub fn build_bpe<'a>(
        sentences: impl Iterator<Item = &'a str> + Send,
        min_count: usize,
        size: usize,
    ) -> Result<Self, String> {
        let mut trainer = BpeTrainerBuilder::new()
            .vocab_size(size)
            .min_frequency(min_count as u64)
            .show_progress(false)
            .special_tokens(
                specials()
                    .into_iter()
                    .map(|t| AddedToken::from(t, true))
                    .collect(),
            )
            .continuing_subword_prefix(CONTINUATION.into())
            .build();
        let mut bpe = BPE::builder()
            .unk_token(UNK.into())
            .continuing_subword_prefix(CONTINUATION.into())
            .build()
            .map_err(|error| error.to_string())?;
        trainer
            .feed(sentences, |sentence| Ok(tokenize(sentence)))
            .and_then(|()| trainer.train(&mut bpe))
            .map_err(|error| format!("byte-pair encoding failed: {error}"))?;
        let mut by_id: Vec<(String, u32)> = bpe.get_vocab().into_iter().collect();
        by_id.sort_by_key(|(_, id)| *id);
        let tokens = by_id.into_iter().map(|(token, _)| token).collect();
        Ok(Self::new(tokens, Some(bpe)))
    }

    fn new(tokens: Vec<String>, bpe: Option<BPE>) -> Self {
        let ids = tokens
            .iter()
            .enumerate()
            .map(|(id, token)| (token.clone(), id))
            .collect();
        Self { tokens, bpe, ids }
    }

    /// Restores the id index after deserialising, checking that no token is listed twice, that
    /// the specials are where the models expect them and that the subword model numbers its
    /// tokens as `tokens` does.
    pub fn reindexed(self) -> Result<Self, String> {
        let vocab = Self::new(self.tokens, self.bpe);
        if vocab.ids.len() != vocab.tokens.len() {
            let mut seen = std::collections::HashSet::new();
            let twice = vocab.tokens.iter().find(|token| !seen.insert(*token));
            return Err(format!(
                "the token {:?} is listed twice",
                twice.map_or("", String::as_str)
            ));
        }
        if vocab.tokens.len() < 4 || vocab.tokens[..4] != [PAD, BOS, EOS, UNK] {
            return Err("the vocabulary lacks <pad> <bos> <eos> <unk> at ids 0–3".into());
        }
        if let Some(bpe) = &vocab.bpe {
            let numbered_alike = bpe.get_vocab_size() == vocab.len()
                && vocab
                    .tokens
                    .iter()
                    .enumerate()
                    .all(|(id, token)| bpe.token_to_id(token) == Some(id as u32));
            if !numbered_alike {
                return Err("the subword model and the token list disagree".into());
            }
        }
        Ok(vocab)
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether there are no tokens at all.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Whether words are split into subwords.
    pub fn is_subword(&self) -> bool {
        self.bpe.is_some()
    }

    /// Whether the vocabulary has the copy slots.
    pub fn has_slots(&self) -> bool {
        self.ids.contains_key(&slot_token(1))
    }

    /// The copy slots' ids (right after the specials, [`UNK_ID`] last), empty when the vocabulary
    /// has none.
    pub fn slots(&self) -> Range<usize> {
        let first = UNK_ID + 1;
        match self.has_slots() {
            true => first..first + SLOTS,
            false => first..first,
        }
    }

    /// Ids of a sentence's words (unknown ones are [`UNK_ID`]).
    pub fn encode(&self, words: &[String]) -> Vec<usize> {
        self.pieces(words).into_iter().map(|(id, _)| id).collect()
    }

    /// The tokens of a sentence's words: each id beside the text it stands for (the word itself
    /// where the id is [`UNK_ID`]). A slot token is its own token.
    pub fn pieces(&self, words: &[String]) -> Vec<(usize, String)> {
        let mut pieces = Vec::new();
        for word in words {
            let word = word.clone();
            if let Some(&id) = self.ids.get(&word).filter(|_| slot_of(&word).is_some()) {
                pieces.push((id, word));
                continue;
            }
            let Some(bpe) = &self.bpe else {
                pieces.push((self.ids.get(&word).copied().unwrap_or(UNK_ID), word));
                continue;
            };
            // BPE fails only on a character it cannot name: the whole word is then unknown.
            match bpe.tokenize(&word) {
                Ok(subwords) => pieces.extend(subwords.into_iter().map(|piece| {
                    let id = piece.id as usize;
                    let text = if id == UNK_ID {
                        word[piece.offsets.0..piece.offsets.1].to_string()
                    } else {
                        piece.value
                    };
                    (id, text)
                })),
                Err(_) => pieces.push((UNK_ID, word)),
            }
        }
        pieces
    }

    /// The token of an id.
    pub fn token(&self, id: usize) -> &str {
        self.tokens.get(id).map_or(UNK, String::as_str)
    }

    /// Text of ids, stopping at `<eos>`, skipping the other specials and putting each copy
    /// slot's word from `copies` in its place.
    pub fn decode(&self, ids: &[usize], copies: &[String]) -> String {
        let tokens: Vec<String> = ids
            .iter()
            .take_while(|&&id| id != EOS_ID)
            .filter(|&&id| id != PAD_ID && id != BOS_ID)
            .map(|&id| self.token(id).to_string())
            .collect();
        let tokens = fill(tokens, copies);
        if !self.is_subword() {
            return detokenize(&tokens);
        }
        let mut words: Vec<String> = Vec::new();
        for token in tokens {
            match (token.strip_prefix(CONTINUATION), words.last_mut()) {
                (Some(rest), Some(word)) => word.push_str(rest),
                (Some(rest), None) => words.push(rest.to_string()),
                (None, _) => words.push(token),
            }
        }
        detokenize(&words)
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
    fn numbers_keep_their_points_commas_and_colons() {
        let tokens = tokenize("Um 8:30 kostet es 3,50 oder 1.000 Euro, nicht 3, 4. 5.");
        assert_eq!(
            tokens,
            [
                "Um", "8:30", "kostet", "es", "3,50", "oder", "1.000", "Euro", ",", "nicht", "3",
                ",", "4", ".", "5", "."
            ]
        );
        assert_eq!(
            detokenize(&tokens),
            "Um 8:30 kostet es 3,50 oder 1.000 Euro, nicht 3, 4. 5."
        );
    }

    #[test]
    fn rare_words_become_unk_and_decoding_stops_at_eos() {
        let vocab = Vocab::build(["the dog barks .", "the cat sleeps ."], 2, 100);
        let (dot, the) = (4 + SLOTS, 5 + SLOTS);
        assert_eq!(vocab.token(dot), "."); // ties alphabetical: "." < "the"
        let ids = vocab.encode(&tokenize("the zebra."));
        assert_eq!(ids, vec![the, UNK_ID, dot]);
        assert_eq!(
            vocab.decode(&[BOS_ID, the, UNK_ID, dot, EOS_ID, the], &[]),
            "the <unk>."
        );
        let json = serde_json::to_string(&vocab).unwrap();
        let back = serde_json::from_str::<Vocab>(&json).unwrap().reindexed();
        assert_eq!(back.unwrap(), vocab);
    }

    #[test]
    fn subwords_split_rare_words_and_decode_back() {
        let sentences = [
            "the walker walks.",
            "walking is the walk.",
            "the talker talks and talks.",
            "talking is walking, walking talking.",
        ];
        let vocab = Vocab::build_bpe(sentences.into_iter(), 1, 60).unwrap();
        assert!(vocab.is_subword());
        assert!(vocab.len() <= 60);
        assert_eq!(vocab.tokens[..4 + SLOTS], specials());
        // An unseen word is made of known pieces, and decoding glues them back.
        let pieces = vocab.pieces(&tokenize("the talkers walk."));
        assert!(pieces.len() > 4, "{pieces:?}");
        assert!(pieces
            .iter()
            .any(|(_, text)| text.starts_with(CONTINUATION)));
        let ids: Vec<usize> = pieces.iter().map(|(id, _)| *id).collect();
        assert_eq!(vocab.decode(&ids, &[]), "the talkers walk.");
        // A slot is its own token (never made from text), and decoding puts its word in its
        // place.
        let words: Vec<String> = ["walk", "<copy2>", "."].map(String::from).into();
        let pieces = vocab.pieces(&words);
        assert_eq!(pieces[pieces.len() - 2], (5, "<copy2>".to_string()));
        let ids: Vec<usize> = pieces.iter().map(|(id, _)| *id).collect();
        let copies = ["Anna", "Berlin"].map(String::from);
        assert_eq!(vocab.decode(&ids, &copies), "walk Berlin.");
        // A character never seen is <unk>, shown as itself.
        let unknown = vocab.pieces(&tokenize("zebra"));
        assert!(unknown.contains(&(UNK_ID, "z".to_string())), "{unknown:?}");
        // It survives a JSON round trip.
        let json = serde_json::to_string(&vocab).unwrap();
        let back = serde_json::from_str::<Vocab>(&json)
            .unwrap()
            .reindexed()
            .unwrap();
        assert!(!back.encode(&tokenize("walk <copy2>.")).contains(&5));
        assert_eq!(back.encode(&words), ids);
    }

    #[test]
    fn a_vocabulary_without_specials_is_refused() {
        let json = r#"{"tokens": ["a", "b"]}"#;
        let error = serde_json::from_str::<Vocab>(json)
            .unwrap()
            .reindexed()
            .unwrap_err();
        assert!(error.contains("<pad>"), "{error}");
    }
}

//! German text cut into sentences. The translation models learnt from one sentence per example,
//! so they end a translation (`<eos>`) where the first sentence ends: "Ich bin müde. Das Haus ist
//! groß." came out as "I am tired." Each sentence is translated on its own instead.
//!
//! A sentence ends at a line break, or at `.`, `!`, `?` or `…` (with any further stops, closing
//! quotes or brackets) followed by a space and then a capital letter, a digit or an opening quote
//! or bracket. A full stop after a number (`am 3. Oktober`), a single letter (`J. S. Bach`,
//! `z. B.`) or a common abbreviation (`Dr.`, `usw.`) ends nothing.

/// Abbreviations that end with a full stop inside a sentence, lower case.
const ABBREVIATIONS: [&str; 24] = [
    "abs", "bd", "bzw", "ca", "dr", "evtl", "fr", "ggf", "hr", "inkl", "jh", "jr", "mio", "mrd",
    "nr", "prof", "s", "sog", "st", "str", "tel", "usw", "vgl", "zb",
];

/// Characters that may follow a sentence's last stop before the space: more stops, closing quotes
/// and brackets.
fn closes(c: char) -> bool {
    matches!(
        c,
        '.' | '!' | '?' | '…' | '"' | '\'' | '“' | '”' | '‘' | '’' | '«' | '»' | ')' | ']'
    )
}

/// Whether a sentence may begin with `c`.
fn opens(c: char) -> bool {
    c.is_uppercase()
        || c.is_ascii_digit()
        || matches!(c, '„' | '"' | '“' | '»' | '«' | '(' | '‚' | '¿' | '¡')
}

/// Whether the full stop after `before` (the text up to it) belongs to a word, not a sentence's end.
fn abbreviates(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '.'))
        .next()
        .unwrap_or("")
        .replace('.', "");
    if word.is_empty() {
        return false;
    }
    word.chars().all(|c| c.is_ascii_digit())
        || word.chars().count() == 1
        || ABBREVIATIONS.contains(&word.to_lowercase().as_str())
}

/// The sentences of `text`, trimmed, in order; none for blank text.
pub fn split(text: &str) -> Vec<&str> {
    let mut sentences = Vec::new();
    for line in text.lines() {
        let mut start = 0;
        let mut chars = line.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            if !matches!(c, '.' | '!' | '?' | '…') {
                continue;
            }
            let mut end = at + c.len_utf8();
            while let Some(&(next, c)) = chars.peek().filter(|(_, c)| closes(*c)) {
                end = next + c.len_utf8();
                chars.next();
            }
            let rest = &line[end..];
            let next = rest.trim_start();
            let spaced = next.len() < rest.len();
            if !spaced || !next.chars().next().is_some_and(opens) {
                continue;
            }
            if c == '.' && abbreviates(&line[..at]) {
                continue;
            }
            sentences.push(&line[start..end]);
            start = line.len() - next.len();
        }
        sentences.push(&line[start..]);
    }
    sentences
        .into_iter()
        .map(str::trim)
        .filter(|sentence| !sentence.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn sentences_end_at_stops_before_a_capital() {
        assert_eq!(
            split("Ich bin müde. Das Haus ist groß."),
            ["Ich bin müde.", "Das Haus ist groß."]
        );
        assert_eq!(
            split("Wo ist er?! „Ich weiß es nicht.“ Er kommt… 3 Tage später."),
            [
                "Wo ist er?!",
                "„Ich weiß es nicht.“",
                "Er kommt…",
                "3 Tage später."
            ]
        );
        assert_eq!(split("Eins.\nZwei\n\n  drei  "), ["Eins.", "Zwei", "drei"]);
        assert_eq!(split("Hallo!Wie geht's?"), ["Hallo!Wie geht's?"]);
    }

    #[test]
    fn abbreviations_numbers_and_initials_end_nothing() {
        for text in [
            "Wir treffen uns am 3. Oktober in Berlin.",
            "Das hat J. S. Bach geschrieben.",
            "Er kauft z. B. Äpfel, Birnen usw. Und dann geht er.",
            "Dr. Müller ist da.",
            "Er schläft. und träumt.",
            "Er sagte: „Nein.“",
        ] {
            assert_eq!(split(text), [text], "{text}");
        }
        assert!(split(" \n\t").is_empty());
        assert!(split("").is_empty());
    }
}

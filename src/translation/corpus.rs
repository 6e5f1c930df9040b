//! The German–English sentence pairs of Debian's `trans-de-en` package (the Ding dictionary,
//! GPL-2+): fetched with `apt-get download`, never committed.
//!
//! Each dictionary line is `German :: English`; both sides split on ` | ` into sub-entries aligned
//! by position. A pair is kept when both sides are sentences — they end in `.`, `?` or `!`, have
//! at least 3 words and none of `{ } [ ] ( ) ; / ~` — and it was not seen before. The split is
//! decided by a hash of the German side, so a sentence with several translations stays in one
//! split: ≈ 6.8 % test, ≈ 3.4 % valid, the rest train.
//!
//! The dictionary's other entries — words and phrases, ~370k — are the [`LEXICON`]: training
//! data that teaches the vocabulary 13k sentences cannot (Sennrich & Zhang 2019, "Revisiting
//! Low-Resource Neural Machine Translation", on how little data NMT gets). Each keeps the first
//! synonym of each side, without the grammatical and usage notes (`{m}`, `[Am.]`, `(jdn.)`,
//! `<purer>`, `/AHU/`). No entry is taken from a line that holds a valid or test sentence, nor
//! one whose German side is such a sentence.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::debian;
use crate::error::{Error, Result};
use crate::files::{read_file_lines, write_atomically};
use crate::home_cache;

/// A German sentence and its English translation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    /// Source.
    pub german: String,
    /// Reference translation.
    pub english: String,
}

/// Which part of the corpus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Split {
    /// Training pairs.
    Train,
    /// Validation pairs (loss and BLEU each epoch).
    Valid,
    /// Held-out test pairs.
    Test,
}

impl Split {
    /// Every split.
    pub const ALL: [Split; 3] = [Split::Train, Split::Valid, Split::Test];

    /// The file name in the corpus folder.
    pub fn file_name(self) -> &'static str {
        match self {
            Split::Train => "train.tsv",
            Split::Valid => "valid.tsv",
            Split::Test => "test.tsv",
        }
    }

    /// The split of a German sentence: FNV-1a of its bytes, modulo 1000.
    pub fn of(german: &str) -> Split {
        let hash = german.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
        match hash % 1000 {
            0..68 => Split::Test,
            68..102 => Split::Valid,
            _ => Split::Train,
        }
    }
}

const FORBIDDEN: [char; 9] = ['{', '}', '[', ']', '(', ')', ';', '/', '~'];

fn is_sentence(text: &str) -> bool {
    text.ends_with(['.', '?', '!'])
        && text.split_whitespace().count() >= 3
        && !text.contains(FORBIDDEN)
}

/// The file of word and phrase pairs in a corpus folder.
pub const LEXICON: &str = "lexicon.tsv";

/// The sentence pairs of a dictionary file's text, in file order, without duplicates.
pub fn sentence_pairs(dictionary: &str) -> Vec<Pair> {
    let mut seen = HashSet::new();
    let mut pairs = Vec::new();
    for line in dictionary.lines().filter(|line| !line.starts_with('#')) {
        let Some((german, english)) = line.split_once(" :: ") else {
            continue;
        };
        for (german, english) in german.split(" | ").zip(english.split(" | ")) {
            let (german, english) = (german.trim(), english.trim());
            if is_sentence(german) && is_sentence(english) && seen.insert((german, english)) {
                pairs.push(Pair {
                    german: german.to_string(),
                    english: english.to_string(),
                });
            }
        }
    }
    pairs
}

/// `text` without notes in brackets and braces and abbreviations between slashes, whitespace
/// normalised; empty when alternatives remain (`sheer/pure mockery`), which cannot be told apart.
fn without_notes(text: &str) -> String {
    let mut kept = String::new();
    let mut closing: Vec<char> = Vec::new();
    for c in text.chars() {
        match (c, closing.last()) {
            ('{', _) => closing.push('}'),
            ('[', _) => closing.push(']'),
            ('(', _) => closing.push(')'),
            ('<', _) => closing.push('>'),
            (_, Some(&end)) if c == end => {
                closing.pop();
            }
            (_, Some(_)) => {}
            _ => kept.push(c),
        }
    }
    let words: Vec<&str> = kept
        .split_whitespace()
        .filter(|word| !(word.len() > 2 && word.starts_with('/') && word.ends_with('/')))
        .collect();
    if words.iter().any(|word| word.contains('/')) {
        return String::new();
    }
    words.join(" ")
}

/// The word and phrase pairs of a dictionary file's text (the [`LEXICON`]), in file order,
/// without duplicates: every aligned sub-entry that is not a sentence pair, first synonym of
/// each side, notes removed — except from lines that hold a sentence of `held_out`, entries
/// whose German side is one, and entries without a German letter or digit (the dictionary
/// expands `?` into an institute's name).
pub fn lexicon_pairs(dictionary: &str, held_out: &HashSet<&str>) -> Vec<Pair> {
    let mut seen = HashSet::new();
    let mut pairs = Vec::new();
    for line in dictionary.lines().filter(|line| !line.starts_with('#')) {
        let Some((german, english)) = line.split_once(" :: ") else {
            continue;
        };
        if german
            .split(" | ")
            .any(|entry| held_out.contains(entry.trim()))
        {
            continue;
        }
        for (german, english) in german.split(" | ").zip(english.split(" | ")) {
            if is_sentence(german.trim()) && is_sentence(english.trim()) {
                continue;
            }
            let first = |side: &str| {
                side.split(';')
                    .map(without_notes)
                    .find(|synonym| !synonym.is_empty())
            };
            let (Some(german), Some(english)) = (first(german), first(english)) else {
                continue;
            };
            if !german.chars().any(char::is_alphanumeric) {
                continue;
            }
            if !held_out.contains(german.as_str()) && seen.insert((german.clone(), english.clone()))
            {
                pairs.push(Pair { german, english });
            }
        }
    }
    pairs
}

/// The folder that holds the splits of one package version.
pub fn corpus_dir(cache: &Path, version: &str) -> PathBuf {
    cache.join(format!("trans-de-en-{version}"))
}

/// The newest fetched corpus in `cache`, or an error that says how to fetch one.
pub fn find_corpus(cache: &Path) -> Result<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(cache)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with("trans-de-en-") && is_complete(path)
        })
        .collect();
    found.sort_by_cached_key(|path| version_key(&path.to_string_lossy()));
    found.pop().ok_or_else(|| {
        Error::Input(format!(
            "no German–English corpus in {}: run `attnzoo data fetch` first",
            cache.display()
        ))
    })
}

/// A key that orders version strings as versions: runs of digits compare as numbers, so
/// `1.10-1` comes after `1.9-6`.
fn version_key(version: &str) -> Vec<(u64, String)> {
    let mut key = Vec::new();
    let mut rest = version;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(digits);
        let text = tail
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(tail.len());
        key.push((number.parse().unwrap_or(0), tail[..text].to_string()));
        rest = &tail[text..];
    }
    key
}

/// Whether `dir` holds every split and the lexicon.
fn is_complete(dir: &Path) -> bool {
    Split::ALL
        .iter()
        .map(|split| split.file_name())
        .chain([LEXICON])
        .all(|name| dir.join(name).is_file())
}

/// Reads one split.
pub fn read_split(dir: &Path, split: Split) -> Result<Vec<Pair>> {
    read_corpus_file(&dir.join(split.file_name()))
}

/// Reads the word and phrase pairs of the [`LEXICON`].
pub fn read_lexicon(dir: &Path) -> Result<Vec<Pair>> {
    read_corpus_file(&dir.join(LEXICON))
}

/// A file of the fetched corpus; when it is missing, the error says how to fetch it.
fn read_corpus_file(path: &Path) -> Result<Vec<Pair>> {
    read_pairs(path).map_err(|error| match path.exists() {
        true => error,
        false => Error::Input(format!("{error} (run `attnzoo data fetch`)")),
    })
}

/// Reads a file of `german<TAB>english` lines.
pub fn read_pairs(path: &Path) -> Result<Vec<Pair>> {
    let lines = read_file_lines(path)?;
    parse_pairs(
        lines.iter().map(String::as_str),
        &path.display().to_string(),
    )
}

/// `german<TAB>english` lines, read from `origin` (for the error).
fn parse_pairs<'a>(lines: impl Iterator<Item = &'a str>, origin: &str) -> Result<Vec<Pair>> {
    lines
        .enumerate()
        .map(|(number, line)| {
            let columns: Vec<&str> = line.split('\t').collect();
            let [german, english] = columns[..] else {
                return Err(Error::Input(format!(
                    "{origin}:{}: {} tab-separated columns, not 2 (german<TAB>english)",
                    number + 1,
                    columns.len()
                )));
            };
            if let Some(side) = [("German", german), ("English", english)]
                .into_iter()
                .find_map(|(side, text)| text.trim().is_empty().then_some(side))
            {
                return Err(Error::Input(format!(
                    "{origin}:{}: the {side} side is empty",
                    number + 1
                )));
            }
            Ok(Pair {
                german: german.into(),
                english: english.into(),
            })
        })
        .collect()
}

/// Forty everyday sentences ("Wo ist der Bahnhof?") with our own translations, none of them a
/// sentence of the corpus or an entry of the lexicon: what a visitor asks, to see what a model
/// does outside the dictionary's examples (`data/everyday.tsv`).
pub fn everyday() -> Vec<Pair> {
    let text = include_str!("../../data/everyday.tsv");
    parse_pairs(text.lines(), "data/everyday.tsv")
        .expect("data/everyday.tsv is german<TAB>english lines (a unit test reads it)")
}

/// `attnzoo data fetch`: downloads the package, extracts the dictionary and writes the splits.
/// Returns the corpus folder.
pub fn fetch(cache: Option<PathBuf>) -> Result<PathBuf> {
    let cache = cache.unwrap_or_else(home_cache);
    fs::create_dir_all(&cache)
        .map_err(|error| Error::Input(format!("cannot create {}: {error}", cache.display())))?;
    remove_abandoned_downloads(&cache);
    let work = cache.join(format!("download.{}", std::process::id()));
    fs::create_dir_all(&work)
        .map_err(|error| Error::Input(format!("{}: {error}", work.display())))?;
    let result = download_and_split(&cache, &work);
    let _ = fs::remove_dir_all(&work);
    result
}

/// Removes the `download.<pid>` folders of fetches whose process is gone (killed mid-download).
fn remove_abandoned_downloads(cache: &Path) {
    for entry in fs::read_dir(cache).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|name| name.strip_prefix("download."));
        if pid.is_some_and(|pid| !Path::new("/proc").join(pid).exists()) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

fn download_and_split(cache: &Path, work: &Path) -> Result<PathBuf> {
    let deb = debian::download("trans-de-en", work)?;
    let version = deb
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.strip_prefix("trans-de-en_"))
        .and_then(|rest| rest.split('_').next())
        .ok_or_else(|| Error::Input(format!("unexpected package name {}", deb.display())))?
        .to_string();
    // The splits are written again even where they exist: that repairs a damaged cache.
    let dir = corpus_dir(cache, &version);
    debian::extract(&deb, &work.join("root"))?;
    let dictionary_path = work.join("root/usr/share/trans/de-en");
    let dictionary = fs::read_to_string(&dictionary_path).map_err(|error| {
        Error::Input(format!(
            "cannot read {}: {error}",
            dictionary_path.display()
        ))
    })?;
    let pairs = sentence_pairs(&dictionary);
    if pairs.is_empty() {
        return Err(Error::Input(format!(
            "{} holds no sentence pairs: the package is not the dictionary expected",
            dictionary_path.display()
        )));
    }
    fs::create_dir_all(&dir)
        .map_err(|error| Error::Input(format!("{}: {error}", dir.display())))?;
    let tsv = |pairs: &mut dyn Iterator<Item = &Pair>| -> String {
        pairs
            .map(|pair| format!("{}\t{}\n", pair.german, pair.english))
            .collect()
    };
    for split in Split::ALL {
        let lines = tsv(&mut pairs.iter().filter(|pair| Split::of(&pair.german) == split));
        crate::note!("{split:?}: {} pairs", lines.lines().count());
        write_atomically(&dir.join(split.file_name()), lines.as_bytes())?;
    }
    let held_out: HashSet<&str> = pairs
        .iter()
        .map(|pair| pair.german.as_str())
        .filter(|german| Split::of(german) != Split::Train)
        .collect();
    let lexicon = lexicon_pairs(&dictionary, &held_out);
    crate::note!("lexicon: {} word and phrase pairs", lexicon.len());
    write_atomically(&dir.join(LEXICON), tsv(&mut lexicon.iter()).as_bytes())?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_entries_align_by_position_and_only_sentences_survive() {
        let dictionary = "# comment :: ignored\n\
            Hund {m} | Der Hund bellt laut. | Er kommt morgen an. :: dog | The dog barks loudly. | He arrives tomorrow.\n\
            Ja. | Das ist (sehr) gut. :: Yes. | That is (very) good.\n\
            Der Hund bellt laut. :: The dog barks loudly.\n\
            Wie geht es dir? :: How are you?\n";
        let pairs = sentence_pairs(dictionary);
        let got: Vec<(&str, &str)> = pairs
            .iter()
            .map(|p| (p.german.as_str(), p.english.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("Der Hund bellt laut.", "The dog barks loudly."),
                ("Er kommt morgen an.", "He arrives tomorrow."),
                ("Wie geht es dir?", "How are you?"),
            ]
        );
    }

    #[test]
    fn lexicon_entries_lose_their_notes_and_keep_the_first_synonym() {
        let dictionary = "Lüftungsgerät {n}; Lüfter {m} | Lüftungsgeräte {pl} :: air handling unit /AHU/; air handler | air handling units\n\
            blank; pur [geh.] {adj} | blanker Hohn | Das ist blanker Unsinn. :: sheer; pure <purer> | sheer/pure mockery | That's sheer nonsense.\n\
            (im Gedränge) aneinanderstoßen {vi} :: to jostle against each other\n\
            ? :: National Institute of Occupational Safety and Health\n";
        let got: Vec<(String, String)> = lexicon_pairs(dictionary, &HashSet::new())
            .into_iter()
            .map(|p| (p.german, p.english))
            .collect();
        let expected = [
            ("Lüftungsgerät", "air handling unit"),
            ("Lüftungsgeräte", "air handling units"),
            ("blank", "sheer"),
            ("aneinanderstoßen", "to jostle against each other"),
        ];
        assert_eq!(got, expected.map(|(g, e)| (g.to_string(), e.to_string())));
    }

    #[test]
    fn no_lexicon_entry_comes_from_a_held_out_line_or_is_a_held_out_sentence() {
        let dictionary = "Hund {m} | Der Hund bellt laut. :: dog | The dog barks loudly.\n\
            Katze {f} | Die Katze schläft. :: cat | The cat sleeps.\n\
            Maus {f} | Der Hund bellt laut :: mouse | loud barking\n\
            Der Hund bellt laut. [ugs.] :: The dog barks loudly!\n";
        let held_out: HashSet<&str> = ["Der Hund bellt laut.", "Der Hund bellt laut"].into();
        let lexicon = lexicon_pairs(dictionary, &held_out);
        let german: Vec<&str> = lexicon.iter().map(|p| p.german.as_str()).collect();
        assert_eq!(
            german,
            ["Katze"],
            "the sentence pair of line 2 is not lexicon either"
        );
    }

    #[test]
    fn the_everyday_sentences_are_forty_distinct_pairs() {
        let pairs = everyday();
        assert_eq!(pairs.len(), 40);
        assert!(pairs
            .iter()
            .all(|p| is_sentence(&p.german) || p.german.split_whitespace().count() < 3));
        assert!(pairs.iter().all(|p| !p.english.trim().is_empty()));
        let german: HashSet<&str> = pairs.iter().map(|p| p.german.as_str()).collect();
        assert_eq!(german.len(), pairs.len());
    }

    #[test]
    fn a_pairs_file_without_a_tab_names_its_line() {
        let error = parse_pairs("Ja.\tYes.\nNein. No.\n".lines(), "mine.tsv").unwrap_err();
        assert_eq!(
            error.to_string(),
            "mine.tsv:2: 1 tab-separated columns, not 2 (german<TAB>english)"
        );
    }

    #[test]
    fn a_pair_with_an_empty_side_names_its_line_and_side() {
        for (text, side) in [("Ja.\tYes.\n\tNo.\n", "German"), ("Ja.\t \n", "English")] {
            let error = parse_pairs(text.lines(), "mine.tsv")
                .unwrap_err()
                .to_string();
            assert!(
                error.ends_with(&format!("the {side} side is empty")),
                "{error}"
            );
        }
    }

    #[test]
    fn the_newest_corpus_is_found_by_version_order() {
        let cache = tempfile::tempdir().unwrap();
        for version in ["1.9-6", "1.10-1", "1.2-9"] {
            let dir = corpus_dir(cache.path(), version);
            fs::create_dir_all(&dir).unwrap();
            for split in Split::ALL {
                fs::write(dir.join(split.file_name()), "").unwrap();
            }
            fs::write(dir.join(LEXICON), "").unwrap();
        }
        assert_eq!(
            find_corpus(cache.path()).unwrap(),
            corpus_dir(cache.path(), "1.10-1")
        );
    }

    #[test]
    fn a_killed_fetch_leaves_no_download_folder_behind() {
        let cache = tempfile::tempdir().unwrap();
        let abandoned = cache.path().join("download.4294967295"); // no such process
        let running = cache
            .path()
            .join(format!("download.{}", std::process::id()));
        fs::create_dir_all(abandoned.join("root")).unwrap();
        fs::create_dir_all(&running).unwrap();
        remove_abandoned_downloads(cache.path());
        assert!(!abandoned.exists() && running.exists());
    }

    #[test]
    fn the_split_depends_only_on_the_german_side() {
        let splits: Vec<Split> = (0..20000)
            .map(|i| Split::of(&format!("Satz Nummer {i}.")))
            .collect();
        let count = |split| splits.iter().filter(|&&s| s == split).count();
        assert!(
            (1200..1550).contains(&count(Split::Test)),
            "{}",
            count(Split::Test)
        );
        assert!(
            (550..820).contains(&count(Split::Valid)),
            "{}",
            count(Split::Valid)
        );
        assert_eq!(
            Split::of("Guten Morgen, Herr Meier."),
            Split::of("Guten Morgen, Herr Meier.")
        );
    }
}

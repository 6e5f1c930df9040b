//! The German–English sentence pairs of Debian's `trans-de-en` package (the Ding dictionary,
//! GPL-2+): fetched with `apt-get download`, never committed.
//!
//! Each dictionary line is `German :: English`; both sides split on ` | ` into sub-entries aligned
//! by position. A pair is kept when both sides are sentences — they end in `.`, `?` or `!`, have
//! at least 3 words and none of `{ } [ ] ( ) ; / ~` — and it was not seen before. The split is
//! decided by a hash of the German side, so a sentence with several translations stays in one
//! split: ≈ 6.8 % test, ≈ 3.4 % valid, the rest train.

use std::fs;
use std::path::{Path, PathBuf};

use crate::debian;
use crate::error::{Error, Result};
use crate::files::write_atomically;
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

/// The sentence pairs of a dictionary file's text, in file order, without duplicates.
pub fn sentence_pairs(dictionary: &str) -> Vec<Pair> {
    let mut seen = std::collections::HashSet::new();
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
            name.starts_with("trans-de-en-") && path.join(Split::Test.file_name()).is_file()
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

/// Reads one split (`german<TAB>english` lines).
pub fn read_split(dir: &Path, split: Split) -> Result<Vec<Pair>> {
    let path = dir.join(split.file_name());
    let text = fs::read_to_string(&path).map_err(|error| {
        Error::Input(format!(
            "cannot read {}: {error} (run `attnzoo data fetch`)",
            path.display()
        ))
    })?;
    text.lines()
        .enumerate()
        .map(|(number, line)| {
            let (german, english) = line.split_once('\t').ok_or_else(|| {
                Error::Input(format!("{}:{}: no tab", path.display(), number + 1))
            })?;
            Ok(Pair {
                german: german.into(),
                english: english.into(),
            })
        })
        .collect()
}

/// `attnzoo data fetch`: downloads the package, extracts the dictionary and writes the splits.
/// Returns the corpus folder.
pub fn fetch(cache: Option<PathBuf>) -> Result<PathBuf> {
    let cache = cache.unwrap_or_else(home_cache);
    fs::create_dir_all(&cache)
        .map_err(|error| Error::Input(format!("cannot create {}: {error}", cache.display())))?;
    let work = cache.join(format!("download.{}", std::process::id()));
    fs::create_dir_all(&work)
        .map_err(|error| Error::Input(format!("{}: {error}", work.display())))?;
    let result = download_and_split(&cache, &work);
    let _ = fs::remove_dir_all(&work);
    result
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
    let dir = corpus_dir(cache, &version);
    if dir.join(Split::Test.file_name()).is_file() {
        eprintln!("corpus already in {}", dir.display());
        return Ok(dir);
    }
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
    for split in Split::ALL {
        let lines: String = pairs
            .iter()
            .filter(|pair| Split::of(&pair.german) == split)
            .map(|pair| format!("{}\t{}\n", pair.german, pair.english))
            .collect();
        eprintln!("{split:?}: {} pairs", lines.lines().count());
        write_atomically(&dir.join(split.file_name()), lines.as_bytes())?;
    }
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
    fn the_newest_corpus_is_found_by_version_order() {
        let cache = tempfile::tempdir().unwrap();
        for version in ["1.9-6", "1.10-1", "1.2-9"] {
            let dir = corpus_dir(cache.path(), version);
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join(Split::Test.file_name()), "").unwrap();
        }
        assert_eq!(
            find_corpus(cache.path()).unwrap(),
            corpus_dir(cache.path(), "1.10-1")
        );
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

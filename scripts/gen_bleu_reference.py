#!/usr/bin/env python3
"""sacreBLEU's corpus BLEU and chrF on test data this project generates (no corpus text).

    python scripts/gen_bleu_reference.py      (needs: pip install sacrebleu==2.6.0)

Writes tests/fixtures/bleu/cases.json: a list of {name, hypotheses, references, bleu, chrf},
where bleu holds score, precisions, bp, sys_len, ref_len as sacreBLEU reports them.
"""
import json
import random
from pathlib import Path

import sacrebleu

random.seed(2015)
words = ("the a dog cat house tree river city runs sleeps sees finds big small red old new "
         "quickly never always today tomorrow with without under over and but because").split()
punct = [".", "!", "?", ",", "3.14", "1,000", "e-mail", "don't", "(yes)", "&amp;", "Ünïcödé", "東京"]


def sentence(n):
    tokens = [random.choice(words + punct[:2] if random.random() < 0.9 else punct) for _ in range(n)]
    return " ".join(tokens).capitalize() + random.choice([".", "!", "?"])


def perturb(s, rate):
    out = []
    for token in s.split():
        r = random.random()
        if r < rate / 3:
            continue
        if r < 2 * rate / 3:
            out.append(random.choice(words))
        else:
            out.append(token)
        if random.random() < rate / 3:
            out.append(random.choice(words))
    return " ".join(out)


cases = []


def add(name, hyps, refs):
    bleu = sacrebleu.corpus_bleu(hyps, [refs])
    chrf = sacrebleu.corpus_chrf(hyps, [refs])
    cases.append({
        "name": name,
        "hypotheses": hyps,
        "references": refs,
        "bleu": {"score": bleu.score, "precisions": bleu.precisions, "bp": bleu.bp,
                 "sys_len": bleu.sys_len, "ref_len": bleu.ref_len, "line": str(bleu)},
        "chrf": chrf.score,
    })


refs = [sentence(random.randint(3, 20)) for _ in range(300)]
add("corpus, light noise", [perturb(r, 0.2) for r in refs], refs)
add("corpus, heavy noise", [perturb(r, 0.7) for r in refs], refs)
short = [" ".join(r.split()[: max(1, len(r.split()) // 2)]) for r in refs[:50]]
add("short hypotheses (brevity penalty)", short, refs[:50])
add("no 4-gram matches (exp smoothing)", ["the dog runs", "a cat sleeps", "big red tree"],
    ["the dog runs today", "a cat sleeps now", "big tree"])
add("no 2-gram matches at all", ["dog the", "cat a"], ["the dog", "a cat"])
add("empty hypotheses", ["", "the cat", ""], ["a dog runs.", "the cat sleeps.", "ok then."])
add("identical", refs[:20], refs[:20])
add("tokenisation: punctuation, numbers, entities", ["It costs 1,000.50$ -- e-mail me (now)!", "A&amp;B &lt;tag&gt; 3-4"],
    ["It costs 1,000.50 $ - e-mail me (now) !", "A&B <tag> 3 - 4"])
add("nothing in common", ["a b c d e f"], ["u v w x y z"])
add("an empty reference", ["the cat sleeps", "Der Hund."], ["the cat sleeps", ""])

out = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "bleu" / "cases.json"
out.write_text(json.dumps({"sacrebleu": sacrebleu.__version__, "cases": cases}, indent=1, ensure_ascii=False) + "\n")
for case in cases:
    print(case["name"], case["bleu"]["line"], "chrF", round(case["chrf"], 2))

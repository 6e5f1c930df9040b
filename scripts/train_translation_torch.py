#!/usr/bin/env python3
"""attnzoo's Transformer translation recipe in PyTorch, for the README's BLEU-vs-training-minutes
comparison on the same CPU cores.

    python scripts/train_translation_torch.py --checkpoint runs/tr --minutes 5 10 30 [--threads 2] [--lexicon N]

Needs torch (2.9.0), sacrebleu, tokenizers and numpy, e.g. in ~/.cache/attnzoo/torch-venv.
--checkpoint is an attnzoo Transformer checkpoint folder: only its model.json (sizes),
train.json (recipe) and vocab.json (the subword vocabularies) are read, never its trained weights, so
both sides train from scratch on identical token ids. (With `lexical_bias`, the lexicon p_lex that
attnzoo estimated by IBM Model 1 before training, data rather than a weight, is read from any of
its weights files, so both sides bias by the same table.) The run reproduces `attnzoo train`:

- data: the fetched corpus (~/.cache/attnzoo/trans-de-en-*/, as `attnzoo data fetch` left it);
  each epoch is every training pair plus the epoch's slice of `lexicon_per_epoch` lexicon pairs
  (one order of the lexicon shuffled by the seed), cut into length-bucketed batches of
  `batch_size` with attnzoo's own SplitMix64 generator, so the batches and their order are
  attnzoo's; sources truncated to `max_len` tokens, targets to `max_len - 1` plus <eos>;
- tokens: attnzoo's word splitter (`tokenize` in src/translation/vocab.rs), then each word
  through the checkpoint's serialised BPE model (loaded by the `tokenizers` package, the same
  Rust code attnzoo links); `--encode source|target` prints the ids of stdin's lines and exits;
- model: pre-norm Transformer encoder-decoder with final LayerNorms, sinusoidal positions,
  √d_model-scaled embeddings, dropout on embeddings, sublayer outputs and inside the ReLU
  feed-forward (none on attention weights, as attnzoo), separate embeddings, output Linear or
  tied to the target embedding (`tied_output`); with `lexical_bias`, log(ā·p_lex[source] + 0.001)
  added to the logits, ā the last decoder layer's cross-attention averaged over heads (Arthur et
  al. 2016); embeddings drawn from N(0, 1/d_model) as
  attnzoo's, the rest PyTorch's default initialisation, which draws from the same
  distributions as Burn's defaults (Linear U(±1/√fan_in));
- training: Adam (β 0.9/0.999, ε 1e-5: Burn's defaults), linear warmup then lr·√(warmup/step),
  label-smoothed cross-entropy ignoring <pad>, gradient clipping to L2 norm `clip_norm` per
  parameter tensor (Burn clips each tensor, not the global norm);
- clock: --minutes of wall time from the first step, counting validation as attnzoo does; the
  epoch under way ends when a budget is reached and is still validated, and the test split is
  scored off the clock before the next epoch begins, so `--minutes 5 10 30` is three runs as
  attnzoo's `train --resume --max-minutes` continues one. After each epoch:
  valid loss, and greedy valid BLEU (output ≤ ceil(2·|x|)+5 tokens, ≤ max_len), as attnzoo;
- test: the epoch with the best valid BLEU (the latest on a tie), as attnzoo keeps it; greedy
  decoding of the 984 test pairs as `attnzoo eval`/`attnzoo demo` do (never <pad>,
  <bos> or <unk>; output ≤ ceil(2·|x|)+5 tokens, ≤ 2·max_len; the position table is made long
  enough for that, where attnzoo's holds max_len + 2), then sacreBLEU's default corpus BLEU
  (13a) and chrF. Prints a summary at each budget and, last, one JSON line per budget.

Not reproduced: attnzoo saves a checkpoint after each epoch inside its clock; this script saves
nothing. attnzoo's counterpart of `--minutes 5 10` (the default recipe):

    attnzoo train --out runs/tr --max-minutes 5 && attnzoo eval runs/tr --split test
    attnzoo train --out runs/tr --max-minutes 10 --resume && attnzoo eval runs/tr --split test
"""
import argparse
import copy
import glob
import json
import math
import os
import sys
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import sacrebleu  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

PAD, BOS, EOS, UNK = 0, 1, 2, 3
CONTINUATION = "##"
MASK64 = (1 << 64) - 1


# ---- text: attnzoo's word splitter, subwords and detokenizer (src/translation/vocab.rs) ----
DIGITS = "0123456789"


def tokenize(sentence):
    """Words (letters, digits, inner ' ’ -, and . , : inside a number) and single punctuation
    marks, as attnzoo's `tokenize`. Python's isalnum/isspace stand for Rust's
    char::is_alphanumeric/is_whitespace; they agree on every character of the corpus (they differ
    on a few rare marks such as U+0345)."""
    tokens, word = [], []
    n = len(sentence)
    for i, c in enumerate(sentence):
        following = sentence[i + 1] if i + 1 < n else ""
        joins = bool(word) and (
            (c in "'’-" and following.isalnum())
            or (c in ".,:" and word[-1] in DIGITS and following != "" and following in DIGITS)
        )
        if c.isalnum() or joins:
            word.append(c)
            continue
        if word:
            tokens.append("".join(word))
            word = []
        if not c.isspace():
            tokens.append(c)
    if word:
        tokens.append("".join(word))
    return tokens


CLOSING = {".", ",", "?", "!", ":", ";", "“", "”", "’", ")", "]", "%"}
OPENING = {"„", "‚", "(", "[", "‘"}


def detokenize(tokens):
    text, glue_next = [], True
    for token in tokens:
        if not glue_next and token not in CLOSING:
            text.append(" ")
        text.append(token)
        glue_next = token in OPENING
    return "".join(text)


# ---- names and numbers copied through slots (src/translation/copy.rs) ----
SLOTS = 8


def slot_of(token):
    if token.startswith("<copy") and token.endswith(">") and token[5:-1].isdigit():
        k = int(token[5:-1])
        return k if 1 <= k <= SLOTS else None
    return None


def copyable(word):
    return any(c.isnumeric() for c in word) or (len(word) > 1 and word[0].isupper())


def marked(words, copies):
    """`words` with each word `copies` says yes to as a slot; the same word, the same slot."""
    out, found = [], []
    for word in words:
        if word in found:
            out.append(f"<copy{found.index(word) + 1}>")
        elif len(found) < SLOTS and copies(word):
            found.append(word)
            out.append(f"<copy{len(found)}>")
        else:
            out.append(word)
    return out, found


def mark_pair(german, english):
    english = tokenize(english)
    words, found = marked(tokenize(german), lambda w: copyable(w) and w in english)
    return words, [f"<copy{found.index(w) + 1}>" if w in found else w for w in english]


def fill(tokens, copies):
    out = []
    for token in tokens:
        k = slot_of(token)
        if k is None:
            out.append(token)
        elif k <= len(copies):
            out.append(copies[k - 1])
    return out


class CopyRule:
    """Which German words become slots when translating (vocab.json's "copy" list)."""

    def __init__(self, translatable):
        self.translatable = set(translatable)

    def mark(self, sentence):
        return marked(tokenize(sentence), lambda w: copyable(w) and (
            any(c.isnumeric() for c in w) or w.lower() not in self.translatable))


class Vocab:
    """One side of an attnzoo vocab.json: token list plus the serialised BPE model."""

    def __init__(self, side):
        self.tokens = side["tokens"]
        bpe = side.get("bpe")
        if bpe is None:  # whole words (attnzoo trained without --bpe)
            self.ids = {t: i for i, t in enumerate(self.tokens)}
            self.model = None
        else:
            # The same serde code as attnzoo's reads the model: same vocab, merges and options.
            empty = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
                     "normalizer": None, "pre_tokenizer": None, "post_processor": None,
                     "decoder": None, "model": bpe}
            self.model = Tokenizer.from_str(json.dumps(empty)).model
            if any(self.model.token_to_id(t) != i for i, t in enumerate(self.tokens)):
                raise SystemExit("vocab.json: the subword model and the token list disagree")
        if self.tokens[:4] != ["<pad>", "<bos>", "<eos>", "<unk>"]:
            raise SystemExit("vocab.json lacks <pad> <bos> <eos> <unk> at ids 0-3")
        self.cache = {}

    def __len__(self):
        return len(self.tokens)

    def word_ids(self, word):
        ids = self.cache.get(word)
        if ids is None:
            if self.model is None:
                ids = [self.ids.get(word, UNK)]
            else:
                try:
                    ids = [t.id for t in self.model.tokenize(word)]
                except Exception:  # attnzoo: a word BPE cannot split is one <unk>
                    ids = [UNK]
            self.cache[word] = ids
        return ids

    def encode(self, words):
        """Ids of a sentence's words; a copy slot is its own token (src/translation/vocab.rs)."""
        ids = []
        for word in words:
            if slot_of(word) and word in self.tokens[:4 + SLOTS]:
                ids.append(self.tokens.index(word))
            else:
                ids.extend(self.word_ids(word))
        return ids

    def has_slots(self):
        return "<copy1>" in self.tokens[:4 + SLOTS]

    def decode(self, ids, copies=()):
        tokens = []
        for i in ids:
            if i == EOS:
                break
            if i not in (PAD, BOS):
                tokens.append(self.tokens[i] if i < len(self.tokens) else "<unk>")
        tokens = fill(tokens, copies)
        if self.model is None:
            return detokenize(tokens)
        words = []
        for token in tokens:
            if token.startswith(CONTINUATION):
                if words:
                    words[-1] += token[len(CONTINUATION):]
                else:
                    words.append(token[len(CONTINUATION):])
            else:
                words.append(token)
        return detokenize(words)


# ---- data: attnzoo's corpus files, SplitMix64 and bucketing (src/translation/batch.rs) ----
def read_pairs(path):
    """`german<TAB>english` lines split as Rust's str::lines does (\\n, optional \\r)."""
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    pairs = []
    for line in lines:
        if line.endswith("\r"):
            line = line[:-1]
        german, sep, english = line.partition("\t")
        if not sep:
            raise SystemExit(f"{path}: a line without a tab")
        pairs.append((german, english))
    return pairs


class SplitMix:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def shuffle(self, items):  # Fisher-Yates, as attnzoo
        for i in range(len(items) - 1, 0, -1):
            j = self.next_u64() % (i + 1)
            items[i], items[j] = items[j], items[i]


def bucketed(examples, batch_size, rng):
    order = list(range(len(examples)))
    rng.shuffle(order)
    order.sort(key=lambda i: (len(examples[i][0]), len(examples[i][1])))  # stable
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    rng.shuffle(batches)
    return batches


def padded(rows):
    width = max(1, max(len(r) for r in rows))
    ids = torch.full((len(rows), width), PAD, dtype=torch.long)
    for r, row in enumerate(rows):
        ids[r, :len(row)] = torch.tensor(row, dtype=torch.long)
    return ids


def make_batch(examples, indices):
    src = padded([examples[i][0] for i in indices])
    tin = padded([[BOS] + examples[i][1] for i in indices])
    tout = padded([examples[i][1] + [EOS] for i in indices])
    return src, src.eq(PAD), tin, tout, sum(len(examples[i][1]) + 1 for i in indices)


# ---- the model (models/src/seq2seq/transformer.rs, models/src/transformer/*.rs) ----
def sinusoidal_table(max_len, d_model):
    step = torch.tensor(-(math.log(10000.0) / d_model), dtype=torch.float32)
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * step)
    angle = torch.arange(max_len, dtype=torch.float32)[:, None] * div[None, :]
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table


class MultiHead(nn.Module):
    """Projections, SDPA, output projection; a query whose keys are all masked gets zero."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h = n_heads
        self.query, self.key, self.value, self.output = (nn.Linear(d_model, d_model) for _ in range(4))

    def split(self, x):
        b, t, d = x.shape
        return x.view(b, t, self.h, d // self.h).transpose(1, 2)

    def project_kv(self, memory):
        return self.split(self.key(memory)), self.split(self.value(memory))

    def forward(self, x, k, v, key_padding=None, causal=False, need_weights=False):
        """With `need_weights` (padding given), also keeps the weights' mean over heads
        [B, T, S] in `self.weights`, from the same softmax that mixes the values."""
        q = self.split(self.query(x))
        if need_weights:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
            weights = torch.softmax(scores.masked_fill(key_padding[:, None, None, :], -1e30), -1)
            self.weights = weights.mean(1)
            ctx = weights @ v
        elif key_padding is None:
            ctx = F.scaled_dot_product_attention(q, k, v, is_causal=causal and q.size(2) > 1)
        else:
            bias = torch.zeros(key_padding.shape, dtype=q.dtype).masked_fill(key_padding, -1e30)
            ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=bias[:, None, None, :])
            ctx = ctx * (~key_padding).any(-1).to(ctx.dtype)[:, None, None, None]
        b, h, t, dk = ctx.shape
        return self.output(ctx.transpose(1, 2).reshape(b, t, h * dk))


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout):
        super().__init__()
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.linear2(self.dropout(F.relu(self.linear1(x)))))


class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout):
        super().__init__()
        self.self_attn = MultiHead(d_model, n_heads)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, padding):
        y = self.norm1(x)
        x = x + self.dropout(self.self_attn(y, *self.self_attn.project_kv(y), key_padding=padding))
        return x + self.feed_forward(self.norm2(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout):
        super().__init__()
        self.self_attn, self.cross_attn = MultiHead(d_model, n_heads), MultiHead(d_model, n_heads)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, memory_kv, padding, cache=None, need_weights=False):
        """`cache` (decoding one step at a time): [keys, values] of the earlier positions."""
        y = self.norm1(x)
        k, v = self.self_attn.project_kv(y)
        if cache is not None:
            if cache[0] is not None:
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
            cache[0], cache[1] = k, v
        x = x + self.dropout(self.self_attn(y, k, v, causal=cache is None))
        x = x + self.dropout(self.cross_attn(self.norm2(x), *memory_kv, key_padding=padding,
                                             need_weights=need_weights))
        return x + self.feed_forward(self.norm3(x))


class TransformerSeq2Seq(nn.Module):
    def __init__(self, c, positions):
        super().__init__()
        d, self.d_model = c["d_model"], c["d_model"]
        args = (d, c["n_heads"], c["d_ff"], c["dropout"])
        self.source_embedding = nn.Embedding(c["source_vocab"], d)
        self.target_embedding = nn.Embedding(c["target_vocab"], d)
        self.register_buffer("positions", sinusoidal_table(positions, d), persistent=False)
        self.encoder = nn.ModuleList(EncoderLayer(*args) for _ in range(c["encoder_layers"]))
        self.encoder_norm = nn.LayerNorm(d)
        self.decoder = nn.ModuleList(DecoderLayer(*args) for _ in range(c["decoder_layers"]))
        self.decoder_norm = nn.LayerNorm(d)
        self.output = None if c.get("tied_output", False) else nn.Linear(d, c["target_vocab"])
        self.dropout = nn.Dropout(c["dropout"])
        # Arthur et al. 2016's lexical bias (`lexical_bias`): p_lex [V_s, V_t], data, not trained
        # (filled from the attnzoo checkpoint, which estimated it by IBM Model 1).
        lexicon = torch.zeros(c["source_vocab"], c["target_vocab"]) if c.get("lexical_bias") else None
        self.register_buffer("lexicon", lexicon)
        for embedding in (self.source_embedding, self.target_embedding):
            nn.init.normal_(embedding.weight, 0.0, d ** -0.5)

    def embed(self, embedding, tokens, offset=0):
        x = embedding(tokens) * math.sqrt(self.d_model)
        return self.dropout(x + self.positions[offset:offset + tokens.size(1)])

    def project(self, h):
        return self.output(h) if self.output is not None else h @ self.target_embedding.weight.t()

    def encode(self, source, padding):
        x = self.embed(self.source_embedding, source)
        for layer in self.encoder:
            x = layer(x, padding)
        memory = self.encoder_norm(x)
        rows = None if self.lexicon is None else F.embedding(source, self.lexicon)  # [B, S, V_t]
        return [layer.cross_attn.project_kv(memory) for layer in self.decoder], rows

    def decode(self, memory, padding, tokens, caches=None, offset=0):
        """`memory`: what `encode` returned (each layer's keys and values, the lexicon's rows)."""
        memory_kv, rows = memory
        x = self.embed(self.target_embedding, tokens, offset)
        for i, layer in enumerate(self.decoder):
            last = i == len(self.decoder) - 1
            x = layer(x, memory_kv[i], padding, None if caches is None else caches[i],
                      need_weights=rows is not None and last)
        logits = self.project(self.decoder_norm(x))
        if rows is None:
            return logits
        weights = self.decoder[-1].cross_attn.weights  # [B, T, S]
        return logits + torch.log(weights @ rows + 1e-3)

    def forward(self, source, padding, target_in):
        return self.decode(self.encode(source, padding), padding, target_in)


# ---- training pieces (src/translation/train.rs, decode.rs) ----
def learning_rate_at(cfg, step):
    step, warmup = max(step, 1), max(cfg["warmup_steps"], 1)
    return cfg["learning_rate"] * min(step / warmup, math.sqrt(warmup / step))


def clip_per_tensor(params, clip):
    """Burn's GradientClipping::Norm: each parameter tensor's gradient scaled to L2 norm ≤ clip."""
    grads = [p.grad for p in params if p.grad is not None]
    for g, norm in zip(grads, torch._foreach_norm(grads)):
        g.mul_(torch.clamp(clip / (norm + torch.finfo(g.dtype).tiny), max=1.0))


@torch.no_grad()
def mean_loss(model, examples, batch_size, smoothing):
    total, tokens = 0.0, 0
    for start in range(0, len(examples), batch_size):
        src, pad, tin, tout, n = make_batch(examples, range(start, min(start + batch_size, len(examples))))
        logits = model(src, pad, tin)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tout.reshape(-1),
                               ignore_index=PAD, label_smoothing=smoothing)
        total, tokens = total + loss.item() * n, tokens + n
    return total / max(tokens, 1)


def step_limit(source_len, max_len, ratio=2.0):
    return min(math.ceil(ratio * source_len) + 5, max(max_len, 1))


@torch.no_grad()
def greedy(model, sources, max_len, vocab_size, slots=range(0)):
    """attnzoo's batched greedy search (batches of 64; <pad> <bos> <unk> never produced; no copy
    slot among `slots` more often than in its source)."""
    banned = torch.zeros(vocab_size)
    banned[[PAD, BOS, UNK]] = -1e9
    outputs = []
    for start in range(0, len(sources), 64):
        rows = sources[start:start + 64]
        src = padded(rows)
        pad = src.eq(PAD)
        memory = model.encode(src, pad)
        caches = [[None, None] for _ in model.decoder]
        limits = [step_limit(len(r), max_len) for r in rows]
        out, done = [[] for _ in rows], [False] * len(rows)
        tokens = torch.full((len(rows), 1), BOS, dtype=torch.long)
        for t in range(max(limits)):
            logits = model.decode(memory, pad, tokens, caches, offset=t)[:, -1] + banned
            for r, (source, produced) in enumerate(zip(rows, out)):
                for slot in slots:
                    if produced.count(slot) >= source.count(slot):
                        logits[r, slot] = -1e9
            nxt = logits.argmax(-1)
            for r, token in enumerate(nxt.tolist()):
                if not done[r]:
                    if token == EOS or len(out[r]) >= limits[r]:
                        done[r] = True
                    else:
                        out[r].append(token)
            if all(done):
                break
            tokens = nxt[:, None]
        outputs.extend(out)
    return outputs


def translate(model, vocab_in, vocab_out, rule, sentences, max_len, limit):
    """As attnzoo's Translator::translate: sources cut to max_len, outputs ≤ limit, the copy
    slots of `rule` (None: no slots) filled."""
    marks = [rule.mark(s) if rule else (tokenize(s), []) for s in sentences]
    sources = [vocab_in.encode(words)[:max_len] for words, _ in marks]
    wanted = [i for i, s in enumerate(sources) if s]
    slots = range(4, 4 + SLOTS) if vocab_out.has_slots() else range(0)
    ids = greedy(model, [sources[i] for i in wanted], limit, len(vocab_out), slots)
    result = [""] * len(sentences)
    for i, out in zip(wanted, ids):
        result[i] = vocab_out.decode(out, marks[i][1])
    return result


def torch_name(burn_name):
    """A Burn record name of attnzoo's Transformer (`Transformer.encoder.layers.0.norm1.gamma`)
    as this model's parameter name (`encoder.0.norm1.weight`)."""
    name = burn_name.removeprefix("Transformer.")
    for side in ("encoder", "decoder"):
        name = name.replace(f"{side}.layers.", f"{side}.").replace(f"{side}.norm.", f"{side}_norm.")
    return name.replace(".gamma", ".weight").replace(".beta", ".bias").replace("lexicon.table", "lexicon")


def decode_checkpoint(model, checkpoint, state, src_vocab, tgt_vocab, rule, test_pairs, max_len):
    """Greedy decoding of the test split with attnzoo's best weights, as `attnzoo eval` does:
    sentences per second (model loading excluded) and sacreBLEU of the same outputs."""
    from safetensors.torch import load_file

    weights = load_file(os.path.join(checkpoint, state["best_weights"]))
    # Burn's Linear keeps its weight as [in, out], PyTorch's as [out, in].
    model.load_state_dict({torch_name(k): v.t() if k.endswith("weight") and "embedding" not in k
                           and v.dim() == 2 else v for k, v in weights.items()})
    model.eval()
    start = time.perf_counter()
    hyps = translate(model, src_vocab, tgt_vocab, rule, [p[0] for p in test_pairs], max_len, 2 * max_len)
    seconds = time.perf_counter() - start
    bleu = sacrebleu.corpus_bleu(hyps, [[p[1] for p in test_pairs]])
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads: greedy decoding of "
          f"{len(test_pairs)} test sentences with {checkpoint}'s best weights in {seconds:.2f} s "
          f"({len(test_pairs) / seconds:.0f} sentences/s): {bleu}")


def find_corpus():
    found = sorted(d for d in glob.glob(os.path.expanduser("~/.cache/attnzoo/trans-de-en-*"))
                   if all(os.path.isfile(os.path.join(d, f))
                          for f in ("train.tsv", "valid.tsv", "test.tsv", "lexicon.tsv")))
    if not found:
        raise SystemExit("no corpus under ~/.cache/attnzoo: run `attnzoo data fetch`")
    return found[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="attnzoo checkpoint folder (its json files)")
    parser.add_argument("--minutes", type=float, nargs="+",
                        help="wall-clock training budgets: the run scores the test split at each")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lexicon", type=int, help="lexicon pairs per epoch (default: train.json's)")
    parser.add_argument("--corpus", help="corpus folder (default: the newest fetched one)")
    parser.add_argument("--test-limit", type=int, help="score only the first N test pairs (smoke tests)")
    parser.add_argument("--decode", action="store_true",
                        help="load the checkpoint's best weights, time greedy decoding of the test split, exit")
    parser.add_argument("--encode", choices=["source", "target"],
                        help="print the ids of stdin's lines with that vocabulary, then exit")
    args = parser.parse_args()

    def load(name):
        with open(os.path.join(args.checkpoint, name), encoding="utf-8") as f:
            return json.load(f)

    vocab_json = load("vocab.json")
    vocabs = {side: Vocab(vocab_json[side]) for side in ("source", "target")}
    if args.encode:
        for line in sys.stdin.read().split("\n")[:-1]:
            print(" ".join(map(str, vocabs[args.encode].encode(tokenize(line.removesuffix("\r"))))))
        return
    if args.minutes is None and not args.decode:
        parser.error("--minutes is required")
    model_json, cfg = load("model.json"), load("train.json")
    if "Transformer" not in model_json:
        raise SystemExit(f"{args.checkpoint}: not a Transformer checkpoint ({list(model_json)})")
    mcfg = model_json["Transformer"]
    cfg.setdefault("lexicon_per_epoch", 0)
    if args.lexicon is not None:
        cfg["lexicon_per_epoch"] = args.lexicon
    src_vocab, tgt_vocab = vocabs["source"], vocabs["target"]
    if (len(src_vocab), len(tgt_vocab)) != (mcfg["source_vocab"], mcfg["target_vocab"]):
        raise SystemExit("model.json's vocabulary sizes differ from vocab.json's")

    torch.set_num_threads(args.threads)
    torch.manual_seed(cfg["seed"])
    corpus = args.corpus or find_corpus()
    max_len, batch_size, smoothing = cfg["max_len"], cfg["batch_size"], cfg["label_smoothing"]

    rule = CopyRule(vocab_json["copy"]) if "copy" in vocab_json and src_vocab.has_slots() else None

    def example(pair):
        german, english = mark_pair(*pair) if rule else (tokenize(pair[0]), tokenize(pair[1]))
        return src_vocab.encode(german)[:max_len], tgt_vocab.encode(english)[:max_len - 1]

    prep = time.perf_counter()
    train = [example(p) for p in read_pairs(os.path.join(corpus, "train.tsv"))]
    valid_pairs = read_pairs(os.path.join(corpus, "valid.tsv"))
    valid = [example(p) for p in valid_pairs]
    test_pairs = read_pairs(os.path.join(corpus, "test.tsv"))[:args.test_limit]
    per_epoch = cfg["lexicon_per_epoch"]
    lexicon_pairs = read_pairs(os.path.join(corpus, "lexicon.tsv")) if per_epoch else []
    lexicon_order = list(range(len(lexicon_pairs)))
    SplitMix(cfg["seed"]).shuffle(lexicon_order)
    lexicon_cache = {}

    def epoch_examples(epoch):
        """Data::epoch: every training pair, then the epoch's slice of the shuffled lexicon
        (encoded here on first use; attnzoo encodes the whole lexicon before its clock starts)."""
        take = min(per_epoch, len(lexicon_order))
        picked = [lexicon_order[i % len(lexicon_order)] for i in range((epoch - 1) * take, epoch * take)]
        for i in picked:
            if i not in lexicon_cache:
                lexicon_cache[i] = example(lexicon_pairs[i])
        return train + [lexicon_cache[i] for i in picked]

    # attnzoo's table holds model.json's max_len (max_len + 2) positions, but `attnzoo eval` lets
    # greedy outputs reach 2·max_len tokens, where its Transformer stops with "positions up to
    # 53 exceed max_len 52". The sinusoids are a formula: here the table is long enough, which
    # changes nothing in training nor in any translation attnzoo completes.
    model = TransformerSeq2Seq(mcfg, positions=max(mcfg["max_len"], 2 * max_len))
    if model.lexicon is not None:
        from safetensors.torch import load_file

        files = sorted(glob.glob(os.path.join(args.checkpoint, "weights*.safetensors")))
        if not files:
            raise SystemExit(f"{args.checkpoint}: lexical_bias needs the lexicon in a weights file; none found")
        model.lexicon.copy_(load_file(files[0])["Transformer.lexicon.table"])
    if args.decode:
        return decode_checkpoint(model, args.checkpoint, load("state.json"), src_vocab, tgt_vocab,
                                 rule, test_pairs, max_len)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=learning_rate_at(cfg, 1), betas=(0.9, 0.999), eps=1e-5)
    n_params = sum(p.numel() for p in params)
    print(f"PyTorch {torch.__version__}, {args.threads} threads; corpus {corpus}: {len(train)} train, "
          f"{len(valid)} valid, {len(test_pairs)} test, {len(lexicon_pairs)} lexicon pairs "
          f"({per_epoch}/epoch); vocab {len(src_vocab)}/{len(tgt_vocab)}; Transformer d={mcfg['d_model']} "
          f"h={mcfg['n_heads']} ff={mcfg['d_ff']} layers={mcfg['encoder_layers']}+{mcfg['decoder_layers']} "
          f"dropout={mcfg['dropout']} tied={mcfg.get('tied_output', False)}: {n_params:,} parameters "
          f"(data ready in {time.perf_counter() - prep:.1f} s)", flush=True)

    budgets = sorted(set(args.minutes))
    started, paused = time.perf_counter(), 0.0

    def clock():
        return time.perf_counter() - started - paused

    step, epoch, history, reports = 0, 0, [], []
    train_tokens, train_seconds = 0, 0.0

    def report(minutes):
        """Scores the best epoch so far on the test split, off the clock, as `attnzoo eval`
        scores a run continued with --resume up to `minutes`."""
        eval_start = time.perf_counter()
        scorer = copy.deepcopy(model)
        scorer.load_state_dict(best_state)
        scorer.eval()
        hyps = translate(scorer, src_vocab, tgt_vocab, rule, [p[0] for p in test_pairs], max_len, 2 * max_len)
        refs = [[p[1] for p in test_pairs]]
        bleu, chrf = sacrebleu.corpus_bleu(hyps, refs), sacrebleu.corpus_chrf(hyps, refs)
        last = history[-1]
        done, total = map(int, last["batches"].split("/"))
        epochs_done = len(history) - 1 + done / total
        print(f"\n{minutes} min: epochs {epochs_done:.2f} ({step} steps) in {clock():.0f} s "
              f"(training {train_seconds:.0f} s, validation {clock() - train_seconds:.0f} s); "
              f"target tokens/s (training steps only): {train_tokens / max(train_seconds, 1e-9):.0f}")
        print(f"test split, {len(test_pairs)} pairs, greedy, best epoch by valid BLEU ({best_epoch}): {bleu}, "
              f"chrF2 = {chrf.score:.2f} (decoding {time.perf_counter() - eval_start:.0f} s)\n", flush=True)
        reports.append({
            "framework": f"pytorch-{torch.__version__}", "threads": args.threads, "minutes": minutes,
            "checkpoint": os.path.abspath(args.checkpoint), "lexicon_per_epoch": per_epoch,
            "parameters": n_params, "epochs": round(epochs_done, 3), "steps": step,
            "train_tok_per_s": round(train_tokens / max(train_seconds, 1e-9), 1),
            "train_loss": round(last["train_loss"], 4), "valid_loss": round(last["valid_loss"], 4),
            "best_epoch": best_epoch, "test_bleu": round(bleu.score, 2), "test_chrf": round(chrf.score, 2),
        })
        return time.perf_counter() - eval_start

    while epoch < cfg["epochs"] and budgets:
        epoch += 1
        t0 = time.perf_counter()
        examples = epoch_examples(epoch)
        paused += time.perf_counter() - t0
        rng = SplitMix(cfg["seed"] ^ ((epoch * 0x9E3779B9) & MASK64))
        batches = bucketed(examples, batch_size, rng)
        loss_sum, token_sum, trained, out_of_time = 0.0, 0, 0, False
        model.train()
        epoch_start = time.perf_counter()
        for indices in batches:
            if clock() >= budgets[0] * 60.0:
                out_of_time = True
                break
            trained += 1
            src, pad, tin, tout, n = make_batch(examples, indices)
            logits = model(src, pad, tin)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tout.reshape(-1),
                                   ignore_index=PAD, label_smoothing=smoothing)
            loss_value = loss.item()
            if not loss_value < 2 * math.log(len(tgt_vocab)):
                raise SystemExit(f"training diverged: the loss became {loss_value:.3e} at step {step + 1}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            clip_per_tensor(params, cfg["clip_norm"])
            step += 1
            for group in optimizer.param_groups:
                group["lr"] = learning_rate_at(cfg, step)
            optimizer.step()
            loss_sum, token_sum = loss_sum + loss_value * n, token_sum + n
        seconds = time.perf_counter() - epoch_start
        train_tokens, train_seconds = train_tokens + token_sum, train_seconds + seconds
        if trained == 0:  # the budget ran out between epochs: attnzoo keeps the last checkpoint
            epoch -= 1
            if not history:
                raise SystemExit(f"{budgets[0]} min was not enough for one batch")
            print(f"time budget of {budgets[0]} min reached: {epoch} epochs", flush=True)
            paused += report(budgets.pop(0))
            continue
        model.eval()
        valid_loss = mean_loss(model, valid, batch_size, smoothing)
        hyps = translate(model, src_vocab, tgt_vocab, rule, [p[0] for p in valid_pairs], max_len, max_len)
        valid_bleu = sacrebleu.corpus_bleu(hyps, [[p[1] for p in valid_pairs]]).score
        record = {"epoch": epoch, "batches": f"{trained}/{len(batches)}", "train_loss": loss_sum / max(token_sum, 1),
                  "valid_loss": valid_loss, "valid_bleu": valid_bleu, "seconds": clock(),
                  "tok_per_s": token_sum / max(seconds, 1e-9)}
        if all(r["valid_bleu"] <= valid_bleu for r in history):  # attnzoo keeps the latest best
            best_epoch, best_state = epoch, copy.deepcopy(model.state_dict())
        history.append(record)
        print(f"epoch {epoch} ({trained}/{len(batches)} batches, {token_sum / max(seconds, 1e-9):.0f} tok/s): "
              f"train loss {record['train_loss']:.3f}, valid loss {valid_loss:.3f}, valid BLEU {valid_bleu:.2f} "
              f"({record['seconds']:.0f} s)", flush=True)
        if out_of_time:
            print(f"time budget of {budgets[0]} min reached after {trained} of {len(batches)} batches: "
                  f"epoch {epoch} ends here", flush=True)
            paused += report(budgets.pop(0))
    if budgets and history:  # the epochs ran out first
        paused += report(budgets[0])
    for line in reports:
        print(json.dumps(dict(line, history=history)))

if __name__ == "__main__":
    main()

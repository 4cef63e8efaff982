"""Tiny local assets for the first-sight probe measurement (tests/probe/fresh/manifest.toml).

    python tests/probe/fresh/assets.py OUTDIR

Built offline, from configs and the ``tokenizers`` library (no hub):

- ``bert/``   the tiny BERT encoder + WordPiece tokenizer of tests/fixtures/tiny_torch.py;
- ``qwen3/``  a tiny ``Qwen3ForCausalLM`` (q/k/v/o and gate/up/down projections, as LoRA targets name
              them) with a byte-level BPE tokenizer trained on the spot and a ChatML chat template;
- ``conll/``  a CoNLL-2003-shaped dataset folder (``train.json``, ``test.json``: ``tokens``, ``ner_tags``
              in 0..8);
- ``imdb/``   the CSVs an IMDB preparation step writes (``train.csv``, ``validation.csv``, ``test.csv``:
              ``text``, ``label``) and an ``aclImdb/`` folder, so a script's own download step finds
              its data already there;
- ``dpo.json``  preference triples with a system prompt (``system_prompt``, ``prompt``, ``chosen``,
              ``rejected``);
- ``tcm/``    a question/answer dataset folder (``train.json``: ``query``, ``response``);
- ``seqeval/`` a local stand-in of the hub's ``seqeval`` metric for ``evaluate.load`` (overall precision,
              recall, F1 and accuracy over the tags, without the ``seqeval`` package);
- ``ok``      written last.
"""

from __future__ import annotations

import csv
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fixtures import tiny_torch  # noqa: E402

CHATML = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def sentences(n: int, seed: int) -> list[str]:
    return [r["premise"] for r in tiny_torch.rows(n, seed)]


def build_qwen3(out: Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    corpus = sentences(400, 5) + ["user", "assistant", "system", "You are a helpful assistant."]
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, unk_token=None)
    fast.chat_template = CHATML
    fast.save_pretrained(out)
    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=len(fast), hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=256,
                         eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id, bos_token_id=None,
                         tie_word_embeddings=True)
    Qwen3ForCausalLM(config).save_pretrained(out)


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def conll(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for s in sentences(n, seed):
        words = s.split()
        out.append({"tokens": words, "ner_tags": [rng.choice([0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]) for _ in words]})
    return out


def imdb(root: Path) -> None:
    rng = random.Random(3)
    good = ["great", "wonderful", "loved", "fun"]
    bad = ["awful", "boring", "hated", "dull"]
    (root / "aclImdb").mkdir(parents=True, exist_ok=True)
    for split, n in (("train", 160), ("validation", 48), ("test", 48)):
        with (root / f"{split}.csv").open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["text", "label"])
            for i in range(n):
                label = i % 2
                words = [rng.choice(good if label else bad) for _ in range(rng.randint(1, 3))]
                w.writerow([f"{rng.choice(sentences(20, i))} {' '.join(words)} .", label])


SEQEVAL = '''"""A local stand-in of the seqeval metric: tag-level scores, no seqeval package."""
import datasets
import evaluate


class Seqeval(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="tag-level precision, recall and F1", citation="", inputs_description="",
            features=datasets.Features({"predictions": datasets.Sequence(datasets.Value("string")),
                                        "references": datasets.Sequence(datasets.Value("string"))}))

    def _compute(self, predictions, references):
        pairs = [(p, r) for ps, rs in zip(predictions, references) for p, r in zip(ps, rs)]
        tp = sum(p == r and r != "O" for p, r in pairs)
        pred = sum(p != "O" for p, _ in pairs)
        ref = sum(r != "O" for _, r in pairs)
        precision = tp / pred if pred else 0.0
        recall = tp / ref if ref else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"overall_precision": precision, "overall_recall": recall, "overall_f1": f1,
                "overall_accuracy": sum(p == r for p, r in pairs) / max(len(pairs), 1)}
'''


def build(outdir: Path) -> Path:
    outdir = Path(outdir)
    if (outdir / "ok").exists():
        return outdir
    outdir.mkdir(parents=True, exist_ok=True)
    tok = tiny_torch.build_tokenizer(outdir / "bert")
    tiny_torch.build_model(outdir / "bert", vocab_size=len(tok))
    build_qwen3(outdir / "qwen3")
    write_jsonl(outdir / "conll" / "train.json", conll(1000, 0))  # the script prints row 848
    write_jsonl(outdir / "conll" / "test.json", conll(40, 1))
    imdb(outdir / "imdb")
    rng = random.Random(6)
    triples = []
    for s in sentences(120, 7):
        triples.append({"system_prompt": "You are a helpful assistant.", "prompt": f"Say something about {s}",
                        "chosen": s, "rejected": " ".join(rng.sample(s.split(), len(s.split())))})
    write_jsonl(outdir / "dpo.json", triples)
    write_jsonl(outdir / "tcm" / "train.json",
                [{"query": f"What about {s}?", "response": s} for s in sentences(120, 8)])
    (outdir / "seqeval").mkdir()
    (outdir / "seqeval" / "seqeval.py").write_text(SEQEVAL, encoding="utf-8")
    (outdir / "ok").write_text("ok\n")
    return outdir


if __name__ == "__main__":
    print(build(Path(sys.argv[1])))

"""TL2xx: batching — forming a batch from the examples (collation, padding)."""

from __future__ import annotations

import libcst as cst

from trainlint.facts import UNKNOWN, DatasetValue, argument, given, has_star_kwargs
from trainlint import codemod
from trainlint.facts import iter_calls, positional
from trainlint.facts import ModelValue, TFDatasetValue, iter_nodes, keyword, literal
from trainlint.findings import Applicability, Severity
from trainlint.rule import Rule, register


@register
class NoPaddingCollator(Rule):
    """`Trainer` without a tokenizer or data collator, on data tokenized without fixed-length padding."""

    code = "TL201"
    name = "no-padding-collator"
    severity = Severity.ERROR
    probe = ("Forms one batch with `trainer.get_train_dataloader()`; a collation failure confirms it "
             "and shows the offending sequence lengths.")
    triggers = ("Trainer",)
    fix = Applicability.UNSAFE

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        if not facts.is_trainer_class(node.func, node) or has_star_kwargs(node):
            return
        if given(node, "data_collator", 2) is not None:
            return
        if given(node, "processing_class", 5) is not None or given(node, "tokenizer") is not None:
            return
        for param, pos in (("train_dataset", 3), ("eval_dataset", 4)):
            expr = argument(node, param, pos)
            if expr is None:
                continue
            value = facts.value_of(expr, node)
            shown = self.ctx.code(expr)
            if isinstance(value, DatasetValue) and value.raw:
                # TL101 reports the raw dataset; once it is swapped for its tokenized twin, this applies
                twin = facts.tokenized_twin(value)
                if twin is not None:
                    shown, value = twin[0], twin[1]
            if not isinstance(value, DatasetValue) or not value.tokenized or value.fixed_length:
                continue
            unknown = [m for m in value.maps if m.calls_tokenizer and m.padding is UNKNOWN]
            if value.unpadded:
                self.report(
                    node.func,
                    f"`{self.ctx.code(node.func)}` has no tokenizer (`processing_class`) and no `data_collator`, and "
                    f"`{shown}` is tokenized without padding to a fixed length: the default collator "
                    'cannot stack sequences of different lengths ("expected sequence of length 43 at dim 1 (got 37)")',
                    hint="pass `data_collator=DataCollatorWithPadding(tokenizer)` (or `processing_class=tokenizer`, "
                    "which pads dynamically)",
                    fix=self._fix(node),
                )
                return
            if unknown:
                self.report(
                    node.func,
                    f"`{self.ctx.code(node.func)}` has no tokenizer (`processing_class`) and no `data_collator`, and "
                    f"trainlint cannot tell whether `{shown}` is padded to a fixed length; if it is not, "
                    'forming a batch fails with "expected sequence of length X at dim 1 (got Y)" — `--probe` forms one batch',
                    hint="pass `data_collator=DataCollatorWithPadding(tokenizer)` unless every example has the same length",
                    severity=Severity.INFO,
                    fix=self._fix(node),
                )
                return

    def _fix(self, trainer: cst.Call):
        """Add `data_collator=DataCollatorWithPadding(<tokenizer>)`, the tokenizer being the one the
        `.map()` function calls, when that name is visible at the Trainer."""
        tokenizer = self._tokenizer_name(trainer)
        if tokenizer is None:
            return None
        got = codemod.ensure_name(self.ctx, "transformers.DataCollatorWithPadding",
                                  "from transformers import DataCollatorWithPadding", "DataCollatorWithPadding")
        if got is None:
            return None
        collator, add = got
        value = f"{collator}({tokenizer})"
        pos = positional(trainer)
        # `Trainer(model, args, None, train)`: the collator's place is taken by an explicit None
        edit = (self.ctx.replace(pos[2].value, value) if len(pos) > 2 and not any(a.star for a in trainer.args)
                else codemod.add_keyword(self.ctx, trainer, "data_collator", value))
        return self.ctx.fix(Applicability.UNSAFE, f"Pass `data_collator={value}`", edit,
                            *([add] if add is not None else []))

    def _tokenizer_name(self, trainer: cst.Call) -> str | None:
        facts = self.ctx.facts
        for call in facts.method_calls("map"):
            fn = facts.function_def(argument(call, "function", 0), call)
            if fn is None:
                continue
            for c in iter_calls(fn.body):
                if not facts.is_tokenizer_call(c, fn):
                    continue
                target = c.func.value if isinstance(c.func, cst.Attribute) else c.func
                if isinstance(target, cst.Name) and facts.lookup(target.value, trainer) is not None:
                    return target.value
        return None


@register
class BatchKeysNotInForward(Rule):
    """(probe) The batch carries keys the model's `forward` does not accept."""

    code = "TL207"
    name = "batch-keys-not-in-forward"
    severity = Severity.ERROR
    probe = "Compares the keys of one real batch with the signature of `model.forward`."

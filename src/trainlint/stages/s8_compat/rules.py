"""TL8xx: API compatibility — calls that fail on current releases of the libraries."""

from __future__ import annotations

import libcst as cst

from trainlint import codemod
from trainlint.facts import MetricValue, argument, literal, positional
from trainlint.findings import Applicability, Severity
from trainlint.rule import Rule, register


def _imported_names(node: cst.ImportFrom):
    if isinstance(node.names, cst.ImportStar):
        return
    for alias in node.names:
        if isinstance(alias.name, cst.Name):
            yield alias


class RemovedName(Rule):
    """Base for "X was removed from library L": flags `from L import X` and `L.X`."""

    module: str
    attr: str
    removed_in: tuple[int, ...]
    dist: str
    replacement: str

    def symptom(self) -> str:
        raise NotImplementedError

    def _severity(self) -> Severity:
        v = self.ctx.settings.version(self.dist)
        return Severity.WARNING if v is not None and v < self.removed_in else Severity.ERROR

    def _message(self) -> str:
        v = self.ctx.settings.version(self.dist)
        since = ".".join(map(str, self.removed_in))
        if v is not None and v < self.removed_in:
            return f"`{self.module}.{self.attr}` is deprecated and gone from {self.dist} {since}: {self.symptom()} after an upgrade"
        return f"`{self.module}.{self.attr}` was removed in {self.dist} {since}: {self.symptom()}"

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        from trainlint.facts import canonical, dotted

        mod = dotted(node.module)
        if mod is None or (mod != self.module and not mod.startswith(self.module + ".")):
            return
        for alias in _imported_names(node):
            # `from transformers import AdamW`, `from transformers.optimization import AdamW`
            if alias.name.value == self.attr and canonical(f"{mod}.{self.attr}") == f"{self.module}.{self.attr}":
                self.report(alias, self._message(), hint=self.replacement, severity=self._severity(),
                            fix=self.import_fix(node, alias))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != self.attr:
            return
        if self.ctx.facts.qualname(node) == f"{self.module}.{self.attr}":
            self.report(node, self._message(), hint=self.replacement, severity=self._severity(),
                        fix=self.attribute_fix(node))

    # autofix: subclasses with a `fix` applicability override these
    def import_fix(self, stmt: cst.ImportFrom, alias: cst.ImportAlias):
        return None

    def attribute_fix(self, node: cst.Attribute):
        return None

    def _calls_of(self, func: cst.BaseExpression) -> list[cst.Call]:
        return [c for c in self.ctx.facts.index.get("Call", ()) if c.func is func]


def _local(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return alias.name.value


@register
class LoadMetricRemoved(RemovedName):
    """`datasets.load_metric` was removed in datasets 3.0: metrics live in the `evaluate` library."""

    code = "TL801"
    name = "load-metric-removed"
    severity = Severity.ERROR
    fix = Applicability.SAFE
    triggers = ("load_metric",)
    module, attr, removed_in, dist = "datasets", "load_metric", (3, 0), "datasets"
    replacement = "use `evaluate.load(...)` (`pip install evaluate`; `import evaluate`)"

    def symptom(self) -> str:
        return "\"ImportError: cannot import name 'load_metric' from 'datasets'\""

    def _fix(self, calls: list[cst.Call], funcs: list[cst.BaseExpression], extra: list):
        # evaluate.load(path, config_name, module_type, ...): the third positional differs
        if any(len(positional(c)) > 2 or any(a.star for a in c.args) for c in calls):
            return None
        edits = [self.ctx.replace(f, self._spelling) for f in funcs] + [e for e in extra if e is not None]
        return self.ctx.fix(Applicability.SAFE, "Replace `datasets.load_metric` with `evaluate.load`", *edits)

    def import_fix(self, stmt, alias):
        spelled = codemod.ensure_name(self.ctx, "evaluate.load", "import evaluate", "evaluate.load")
        if spelled is None:
            return None
        self._spelling, add = spelled
        funcs, others = codemod.name_uses(self.ctx, _local(alias))
        if others:
            return None  # `load_metric` used other than called: leave it to the author
        edits = codemod.replace_import_alias(self.ctx, stmt, alias, None, fallback="import evaluate")
        if edits is None:
            return None
        edits.append(add)
        ids = {id(f) for f in funcs}
        return self._fix([c for c in self.ctx.facts.index.get("Call", ()) if id(c.func) in ids], funcs, edits)

    def attribute_fix(self, node):
        spelled = codemod.ensure_name(self.ctx, "evaluate.load", "import evaluate", "evaluate.load")
        if spelled is None:
            return None
        self._spelling, add = spelled
        return self._fix(self._calls_of(node), [node], [add])


@register
class TransformersAdamWRemoved(RemovedName):
    """`transformers.AdamW` was removed: use `torch.optim.AdamW`."""

    code = "TL802"
    name = "transformers-adamw-removed"
    severity = Severity.ERROR
    fix = Applicability.SAFE
    triggers = ("AdamW",)
    module, attr, removed_in, dist = "transformers", "AdamW", (4, 50), "transformers"
    replacement = "use `torch.optim.AdamW` (same arguments; `correct_bias` is always on)"

    def symptom(self) -> str:
        return "\"ImportError: cannot import name 'AdamW' from 'transformers'\""

    #: transformers.AdamW's defaults that differ from torch.optim.AdamW's (eps 1e-8, weight_decay 0.01)
    _DEFAULTS = (("eps", 3, "1e-6"), ("weight_decay", 4, "0.0"))
    _MESSAGE = ("Replace `transformers.AdamW` with `torch.optim.AdamW` (keeping transformers' defaults "
                "`eps=1e-6`, `weight_decay=0.0` explicit)")

    def _call_edits(self, calls: list[cst.Call]):
        """Keep transformers' defaults explicit on each call; None when a call cannot be kept as is."""
        edits = []
        for c in calls:
            if any(a.star for a in c.args) or len(positional(c)) > 5 or any(
                    a.keyword is not None and a.keyword.value in ("correct_bias", "no_deprecation_warning") for a in c.args):
                return None
            missing = [(n, v) for n, pos, v in self._DEFAULTS if argument(c, n, pos) is None]
            if missing:
                edits.append(codemod.add_keywords(self.ctx, c, missing))
        return edits

    def import_fix(self, stmt, alias):
        funcs, others = codemod.name_uses(self.ctx, _local(alias))
        if others:
            return None  # the class is passed around: its defaults cannot be kept explicit
        ids = {id(f) for f in funcs}
        calls = self._call_edits([c for c in self.ctx.facts.index.get("Call", ()) if id(c.func) in ids])
        if calls is None:
            return None
        asname = f" as {alias.asname.name.value}" if alias.asname is not None else ""
        edits = codemod.replace_import_alias(self.ctx, stmt, alias, f"from torch.optim import AdamW{asname}")
        if edits is None:
            return None
        return self.ctx.fix(Applicability.SAFE, self._MESSAGE, *edits, *calls)

    def attribute_fix(self, node):
        spelled = codemod.ensure_name(self.ctx, "torch.optim.AdamW", "import torch", "torch.optim.AdamW")
        calls = self._call_edits(self._calls_of(node))
        if spelled is None or calls is None:
            return None
        expr, add = spelled
        edits = [self.ctx.replace(node, expr), *calls] + ([add] if add is not None else [])
        return self.ctx.fix(Applicability.SAFE, self._MESSAGE, *edits)


@register
class TFTrainerRemoved(RemovedName):
    """`transformers.TFTrainer` was removed: train TensorFlow models with Keras `compile()`/`fit()`."""

    code = "TL803"
    name = "tftrainer-removed"
    severity = Severity.ERROR
    triggers = ("TFTrainer",)
    module, attr, removed_in, dist = "transformers", "TFTrainer", (4, 30), "transformers"
    replacement = "use Keras: `model.compile(optimizer=...)` and `model.fit(tf_dataset)`"

    def symptom(self) -> str:
        return "\"ImportError: cannot import name 'TFTrainer' from 'transformers'\""


class RenamedKeyword(Rule):
    """Base for a keyword argument renamed in transformers 5 (a TypeError there)."""

    old: str
    new: str
    owner: str  # "trainer" or "training_args"

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        if self.owner == "trainer":
            if not facts.is_trainer_class(node.func, node):
                return
        elif facts.callee(node) not in ("transformers.TrainingArguments", "transformers.Seq2SeqTrainingArguments"):
            return
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == self.old:
                v = self.ctx.settings.version("transformers")
                callee = self.ctx.code(node.func)
                if v is not None and v < (5,):
                    msg = (f"`{callee}({self.old}=...)` is deprecated: it is a TypeError on transformers 5 "
                           f"(\"unexpected keyword argument '{self.old}'\")")
                    sev = Severity.WARNING
                else:
                    msg = (f"`{callee}({self.old}=...)` fails on transformers 5: \"TypeError: __init__() got an "
                           f"unexpected keyword argument '{self.old}'\"")
                    sev = Severity.ERROR
                fix = None
                if not any(a.keyword is not None and a.keyword.value == self.new for a in node.args):
                    fix = self.ctx.fix(Applicability.SAFE, f"Rename `{self.old}=` to `{self.new}=`",
                                       self.ctx.replace(arg.keyword, self.new))
                self.report(arg.keyword, msg, hint=f"rename it: `{self.new}=`", severity=sev, fix=fix)


@register
class TrainerTokenizerArgument(RenamedKeyword):
    """`Trainer(tokenizer=...)`: the argument is `processing_class` since transformers 4.46 and gone in 5."""

    code = "TL804"
    name = "trainer-tokenizer-argument"
    severity = Severity.ERROR
    fix = Applicability.SAFE
    probe = "The TypeError is reported at the script's own line."
    triggers = ("tokenizer",)
    old, new, owner = "tokenizer", "processing_class", "trainer"


@register
class EvaluationStrategyArgument(RenamedKeyword):
    """`TrainingArguments(evaluation_strategy=...)`: renamed `eval_strategy`, gone in transformers 5."""

    code = "TL805"
    name = "evaluation-strategy-argument"
    severity = Severity.ERROR
    fix = Applicability.SAFE
    probe = "The TypeError is reported at the script's own line."
    triggers = ("evaluation_strategy",)
    old, new, owner = "evaluation_strategy", "eval_strategy", "training_args"


_DATASET_METHODS = frozenset({"map", "filter", "to_tf_dataset", "train_test_split", "shuffle", "select",
                              "remove_columns", "rename_column", "set_format", "with_format", "column_names"})


@register
class MetricLoadedAsDataset(Rule):
    """`evaluate.load(...)` (a metric) used where a dataset is meant."""

    code = "TL806"
    name = "metric-loaded-as-dataset"
    severity = Severity.ERROR
    fix = Applicability.UNSAFE
    triggers = ("evaluate",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._reported: set = set()

    def _check(self, receiver: cst.BaseExpression, use: cst.CSTNode, at: cst.CSTNode) -> None:
        v = self.ctx.facts.value_of(receiver, at)
        if not isinstance(v, MetricValue) or v.call is None or v.call in self._reported:
            return
        self._reported.add(v.call)
        load = self.ctx.code(v.call)
        args = ", ".join(self.ctx.code(a.value) for a in v.call.args)
        self.report(
            v.call,
            f"`{load}` loads a metric, not a dataset, but it is used as one (`{self.ctx.code(use)}`): "
            "the script fails with an AttributeError or a KeyError",
            hint=f"load the data with `datasets.load_dataset({args})`",
            fix=self._fix(v.call),
        )

    def _fix(self, call: cst.Call):
        """`evaluate.load("glue", "mnli")` → `load_dataset("glue", "mnli")` (unsafe: the author may have meant
        another dataset). Positional arguments only: the keywords of the two functions differ."""
        if self.ctx.facts.callee(call) != "evaluate.load" or any(a.keyword is not None or a.star for a in call.args):
            return None
        got = codemod.ensure_name(self.ctx, "datasets.load_dataset", "from datasets import load_dataset", "load_dataset")
        if got is None:
            return None
        func, add = got
        return self.ctx.fix(Applicability.UNSAFE, f"Load the data with `{func}(...)`",
                            self.ctx.replace(call.func, func), *([add] if add is not None else []))

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _DATASET_METHODS:
            self._check(node.func.value, node.func, node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        sl = node.slice[0].slice if len(node.slice) == 1 else None
        if isinstance(sl, cst.Index) and isinstance(literal(sl.value), str):
            self._check(node.value, node, node)

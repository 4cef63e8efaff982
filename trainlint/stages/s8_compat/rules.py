"""TL8xx: API compatibility — calls that fail on current releases of the libraries."""

from __future__ import annotations

import dataclasses
from typing import cast

import libcst as cst

from trainlint import codemod
from trainlint.facts import (
    TRAINER_WORDS,
    TRAINING_ARGS_CLASSES,
    TRAINING_ARGS_WORDS,
    ClassValue,
    MetricValue,
    argument,
    dotted,
    keyword,
    literal,
    positional,
)
from trainlint.facts.models import compiled_model
from trainlint.facts.versions import legacy_keras_env
from trainlint.findings import Applicability, Severity
from trainlint.knowledge import TRL_TOKENIZER_ALIAS, TRL_TOKENIZER_RENAMED, api_versions
from trainlint.pins import (
    ABSENT,
    DEPRECATED,
    INSTALLED,
    REMOVED,
    VALID,
    Status,
    available,
    keras_3,
    status,
    version_text,
    versions_of,
)
from trainlint.rule import Rule, register


def _imported_names(node: cst.ImportFrom):
    if isinstance(node.names, cst.ImportStar):
        return
    for alias in node.names:
        if isinstance(alias.name, cst.Name):
            yield alias


class RemovedName(Rule):
    """Base for "X was removed from library L": flags `from L import X` and `L.X`, judged at the version
    of L the script runs (the version table: ``api``)."""

    module: str
    attr: str
    #: the key of the name in the version table (trainlint.knowledge.API_VERSIONS)
    api: str
    replacement: str

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        # `from L import X`, `L.X` (any alias of the module): both words are in the code
        cls.gate = ((cls.attr,), (cls.module,))

    def symptom(self) -> str:
        raise NotImplementedError

    def _status(self) -> Status:
        """The name at the version the script runs: its install command, its requirements, its project's,
        the configured target or the installed version (see trainlint.pins); no evidence: the latest."""
        return status(versions_of(self.ctx), self.api)

    def _message(self, st: Status) -> str:
        api = st.api
        gone = f"{api.dist} {version_text(api.removed)}" if api.removed else api.dist
        if st.state == DEPRECATED:
            since = f" since {api.dist} {version_text(api.deprecated)}" if api.deprecated else ""
            return (f"`{self.module}.{self.attr}` is deprecated{since}{st.runs} and gone from {gone}: "
                    f"{self.symptom()} after an upgrade")
        return f"`{self.module}.{self.attr}` was removed in {gone}{st.runs}: {self.symptom()}"

    def _report_name(self, node: cst.CSTNode, fix) -> None:
        st = self._status()
        if st.severity is None:
            return  # not deprecated in the version the script runs
        replacement = st.api.replacement
        if replacement is not None and not available(versions_of(self.ctx), replacement):
            fix = None  # the replacement does not exist in the version the script runs
        self.report(node, self._message(st), hint=self.replacement, severity=st.severity, fix=fix)

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
                if self._status().severity is not None:
                    self._report_name(alias, self.import_fix(node, alias))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != self.attr:
            return
        if self.ctx.facts.qualname(node) == f"{self.module}.{self.attr}" and self._status().severity is not None:
            self._report_name(node, self.attribute_fix(node))

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
    return cast(cst.Name, alias.name).value  # `_imported_names` gives names only


@register
class LoadMetricRemoved(RemovedName):
    """`datasets.load_metric` was removed in datasets 3.0: metrics live in the `evaluate` library."""

    code = "TL801"
    name = "load-metric-removed"
    severity = Severity.ERROR
    fix = Applicability.SAFE
    module, attr, api = "datasets", "load_metric", "datasets.load_metric"
    replacement = "use `evaluate.load(...)` (`pip install evaluate`; `import evaluate`)"
    probe = ("The ImportError/AttributeError for `load_metric` is reported under this code at the script's own line; "
             "a Trainer that gets built shows the name was not needed.")

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
    module, attr, api = "transformers", "AdamW", "transformers.AdamW"
    replacement = "use `torch.optim.AdamW` (same arguments; `correct_bias` is always on)"
    probe = ("The ImportError/AttributeError for `transformers.AdamW` is reported under this code at the script's own "
             "line; a Trainer that gets built shows the name was not needed.")

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
    module, attr, api = "transformers", "TFTrainer", "transformers.TFTrainer"
    replacement = "use Keras: `model.compile(optimizer=...)` and `model.fit(tf_dataset)`"

    def symptom(self) -> str:
        return "\"ImportError: cannot import name 'TFTrainer' from 'transformers'\""


class RenamedKeyword(Rule):
    """Base for a keyword argument renamed (a TypeError where the old name is gone), judged at the version
    the script runs (the version table: ``api`` for the old name, ``new_api`` for the new one)."""

    old: str
    new: str
    owner: str  # "trainer" or "training_args"
    api: str
    new_api: str

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        if self.owner == "trainer":
            if not facts.is_trainer_class(node.func, node):
                return
        elif facts.callee(node) not in TRAINING_ARGS_CLASSES:
            return
        arg = next((a for a in node.args if a.keyword is not None and a.keyword.value == self.old), None)
        if arg is not None:
            # the script's own pins (`!pip install transformers==4.30`, its requirements.txt) first
            self.report_renamed(node, arg, status(versions_of(self.ctx), self.api), self.new_api)

    def report_renamed(self, node: cst.Call, arg: cst.Arg, st: Status, new_api: str) -> None:
        """Report ``arg`` (the old keyword) as ``st`` says: an error where it is gone, a warning where it is
        deprecated, nothing where it is valid. The rename is offered where ``new_api`` exists."""
        if st.severity is None:
            return
        callee = self.ctx.code(node.func)
        api = st.api
        gone = f"{api.dist} {_release(api.removed)}" if api.removed else api.dist
        new = api_versions(new_api)
        renamed = (f"the argument is `{self.new}` since {new.dist} {version_text(new.introduced)}"
                   if new.introduced else f"the argument is `{self.new}`")
        if st.state == REMOVED:
            msg = (f"`{callee}({self.old}=...)` fails on {gone} and later{st.runs}: \"TypeError: __init__() got an "
                   f"unexpected keyword argument '{self.old}'\" ({renamed})")
        else:
            msg = (f"`{callee}({self.old}=...)` is deprecated{st.runs}: it is a TypeError from {gone} on "
                   f"(\"unexpected keyword argument '{self.old}'\"; {renamed})")
        fix = None
        if not any(a.keyword is not None and a.keyword.value == self.new for a in node.args) \
                and available(versions_of(self.ctx), new_api):
            fix = self.ctx.fix(Applicability.SAFE, f"Rename `{self.old}=` to `{self.new}=`",
                               self.ctx.replace(arg.keyword, self.new))
        self.report(arg.keyword, msg, hint=f"rename it: `{self.new}=`", severity=st.severity, fix=fix)


@register
class TrainerTokenizerArgument(RenamedKeyword):
    """`Trainer(tokenizer=...)`: the argument is `processing_class` since transformers 4.46 and gone in 5."""

    code = "TL804"
    name = "trainer-tokenizer-argument"
    severity = Severity.ERROR
    default = False
    fix = Applicability.SAFE
    probe = "The TypeError is reported at the script's own line."
    #: the keyword itself, and a Trainer class (imported, aliased or a base of a local subclass): one of
    #: transformers' or of trl's (`SFTTrainer`, `DPOTrainer`, ...: every name ends in `Trainer`)
    gate = (("tokenizer",), (*TRAINER_WORDS, "*Trainer"))
    old, new, owner = "tokenizer", "processing_class", "trainer"
    api, new_api = "transformers.Trainer(tokenizer=)", "transformers.Trainer(processing_class=)"

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.facts.is_trainer_class(node.func, node):
            super().visit_Call(node)
            return
        arg = next((a for a in node.args if a.keyword is not None and a.keyword.value == self.old), None)
        if arg is None:
            return
        cls = _trl_trainer(self.ctx.facts, node.func, node)
        if cls is None:
            return
        versions = versions_of(self.ctx)
        st = status(versions, f"trl.{cls}(tokenizer=)")  # no evidence: the latest trl
        if st.pin is None:
            # trl 0.12, the first with `processing_class`, needs transformers 4.46 (its setup.py): a script on an
            # older transformers runs a trl that takes `tokenizer=`
            tf = status(versions, "transformers.Trainer(processing_class=)", default=VALID)
            if tf.state == ABSENT:
                st = dataclasses.replace(st, state=VALID, pin=tf.pin)
        self.report_renamed(node, arg, st, f"trl.{cls}(processing_class=)")


_TRL_TRAINERS = frozenset(TRL_TOKENIZER_ALIAS + TRL_TOKENIZER_RENAMED)


def _trl_trainer(facts, func: cst.BaseExpression, at: cst.CSTNode) -> str | None:
    """The trl trainer class ``func`` names (imported from trl, or a local subclass of one)."""
    qn = facts.qualname(func)
    if qn is None and isinstance(func, cst.Name):
        v = facts.value_of(func, at)
        bases = v.bases if isinstance(v, ClassValue) else ()
        qn = next((b for b in bases if b.startswith("trl.")), None)
    if qn is None or not qn.startswith("trl."):
        return None
    cls = qn.rsplit(".", 1)[-1]
    return cls if cls in _TRL_TRAINERS else None


@register
class EvaluationStrategyArgument(RenamedKeyword):
    """`TrainingArguments(evaluation_strategy=...)`: renamed `eval_strategy` in transformers 4.41, gone in 4.51."""

    code = "TL805"
    name = "evaluation-strategy-argument"
    severity = Severity.ERROR
    fix = Applicability.SAFE
    probe = "The TypeError is reported at the script's own line."
    gate = (("evaluation_strategy",), TRAINING_ARGS_WORDS)
    old, new, owner = "evaluation_strategy", "eval_strategy", "training_args"
    api = "transformers.TrainingArguments(evaluation_strategy=)"
    new_api = "transformers.TrainingArguments(eval_strategy=)"


_DATASET_METHODS = frozenset({"map", "filter", "to_tf_dataset", "train_test_split", "shuffle", "select",
                              "remove_columns", "rename_column", "set_format", "with_format", "column_names"})


@register
class MetricLoadedAsDataset(Rule):
    """`evaluate.load(...)` (a metric) used where a dataset is meant."""

    code = "TL806"
    name = "metric-loaded-as-dataset"
    severity = Severity.ERROR
    fix = Applicability.UNSAFE
    #: a MetricValue comes only from `evaluate.load(...)` or `datasets.load_metric(...)`; the use can be any
    #: string subscript (`metric["train"]`), so it gives no word
    gate = (("evaluate", "load_metric"), ("load", "load_metric"))

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


# ---------------------------------------------------------------------------------------------
# transformers 5 and Keras 3 (TL807–TL809).


def transformers_status(rule: Rule, key: str, *, needs_tensorflow: bool = False) -> Status | None:
    """``key`` of the version table at the transformers the script runs, when it is deprecated or gone
    there, in the order of trainlint.pins: its install command (unpinned: the latest release), its
    requirements, its project's, the configured target, the installed version (for TensorFlow scripts,
    only when TensorFlow is installed too: an environment without it says nothing about where the script
    runs). None: valid there, or nothing says which transformers (no finding without evidence)."""
    from trainlint.config import installed_version

    st = status(versions_of(rule.ctx), key, default=VALID)
    if st.severity is None or st.pin is None:
        return None
    if needs_tensorflow and st.pin.level == INSTALLED and not any(
            installed_version(d) for d in ("tensorflow", "tensorflow-cpu", "tensorflow-macos", "tf-keras")):
        return None
    return st


#: TensorFlow/Keras helpers of transformers 4 that are gone in 5, besides the `TF…` classes
_TF_HELPERS = frozenset({"create_optimizer", "AdamWeightDecay", "WarmUp", "GradientAccumulator", "KerasMetricCallback",
                         "PushToHubCallback", "TFTrainingArguments"})
_TF_MODULES = ("transformers.modeling_tf_utils", "transformers.keras_callbacks", "transformers.optimization_tf",
               "transformers.modeling_tf_outputs", "transformers.tf_utils", "transformers.training_args_tf")


def _release(v: tuple[int, ...]) -> str:
    """A major release as its users name it: (5, 0) is "5"."""
    return str(v[0]) if v and not any(v[1:]) else version_text(v)


def _tf_name(name: str) -> bool:
    return (name.startswith("TF") and name[2:3].isupper() and name != "TFTrainer") or name in _TF_HELPERS


@register
class TFModelOnTransformers5(Rule):
    """transformers TensorFlow classes (`TFAutoModel…`, `create_optimizer`) with transformers ≥ 5, which removed them."""

    code = "TL807"
    name = "tf-model-on-transformers-5"
    severity = Severity.ERROR
    probe = ("A Keras run that reaches `model.fit` shows the TensorFlow classes exist (checked); the ImportError of a "
             "removed class is reported as TL707 at the script's own line.")
    #: a `TF…` name or helper imported from (or read on) transformers, or one of its TensorFlow modules
    gate = (("TF*", *sorted(_TF_HELPERS), *(m.split(".", 1)[1] + "*" for m in _TF_MODULES)), ("transformers",))

    def _status(self) -> Status | None:
        """Where the TensorFlow classes are gone. Their deprecation (a logged warning since 4.53) is not
        reported: pinning `transformers<5` is what this rule asks of a TensorFlow script."""
        st = transformers_status(self, "transformers.TF*", needs_tensorflow=True)
        return st if st is not None and st.state == REMOVED else None

    def _report(self, node: cst.CSTNode, what: str, st: Status) -> None:
        gone = _release(st.api.removed or ())
        self.report(
            node,
            f"{what} transformers {gone} removed TensorFlow (and Flax) support, and this script runs with transformers "
            f"≥ {gone} ({st.pin.describe() if st.pin else ''}): the import fails with \"ImportError: cannot import "
            "name ... from 'transformers'\"",
            hint="train the PyTorch class (`AutoModelFor…` with `Trainer`), or pin `transformers<5` for this script "
            "(e.g. a `# /// script` block with `dependencies = [\"transformers<5\", \"tf-keras\"]`)",
        )

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        mod = dotted(node.module) or ""
        if mod != "transformers" and not mod.startswith("transformers."):
            return
        if mod.startswith(_TF_MODULES):
            if (st := self._status()) is not None:
                self._report(node.module, f"`{mod}` is a TensorFlow module of transformers 4:", st)
            return
        if isinstance(node.names, cst.ImportStar):
            return
        names = [a.name.value for a in node.names if isinstance(a.name, cst.Name) and _tf_name(a.name.value)]
        if names and (st := self._status()) is not None:
            first = next(a for a in node.names if isinstance(a.name, cst.Name) and a.name.value == names[0])
            shown = ", ".join(f"`{n}`" for n in names)
            self._report(first, f"{shown} {'is' if len(names) == 1 else 'are'} TensorFlow API of transformers 4:", st)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if not _tf_name(node.attr.value):
            return
        if self.ctx.facts.raw_qualname(node) == f"transformers.{node.attr.value}" and (st := self._status()) is not None:
            self._report(node, f"`transformers.{node.attr.value}` is TensorFlow API of transformers 4:", st)


@register
class TFKerasOptimizerKeras3(Rule):
    """A `tensorflow.keras` / `keras` optimizer object compiled into a transformers TF model under Keras 3."""

    code = "TL808"
    name = "tf-keras-optimizer-keras3"
    severity = Severity.ERROR
    probe = "The ValueError raised by `compile` is reported under this code, at the script's own line."
    #: `model.compile(...)` on a transformers `TF…` model, with an optimizer from `keras` / `tensorflow.keras`
    gate = (("compile",), ("keras",), ("TF*",), ("transformers",))

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "compile"):
            return
        model = compiled_model(self.ctx.facts, node)
        if model is None or not model.tf:
            return
        facts = self.ctx.facts
        opt = argument(node, "optimizer", 0)
        if isinstance(opt, cst.Name) and facts.raw_qualname(opt) is None:
            b = facts.lookup(opt.value, node)
            opt = b.value if b is not None else None
        if not isinstance(opt, cst.Call):
            return
        raw = facts.raw_qualname(opt.func) or ""
        if not raw.startswith(("tensorflow.keras.", "keras.")) or raw.startswith("keras.src"):
            return
        if raw.startswith("tensorflow.keras.") and legacy_keras_env(self.ctx.source):
            return
        if not keras_3(self.ctx):
            return
        self.report(
            opt,
            f"`{self.ctx.code(opt.func)}` is a Keras 3 optimizer (`tensorflow.keras` is Keras 3 since TensorFlow 2.16), "
            f"but `{model.cls}` is a tf-keras (Keras 2) model: `compile` fails with \"ValueError: Could not "
            "interpret optimizer identifier: <keras.src.optimizers...>\"",
            hint="import the optimizer from tf-keras (`from tf_keras.optimizers import Adam`), or use "
            "`transformers.create_optimizer(...)`, or set `os.environ[\"TF_USE_LEGACY_KERAS\"] = \"1\"` before importing tensorflow",
        )


#: tokenizer classes whose transformers 5 constructor still reads `vocab_file`
_VOCAB_FILE_OK = frozenset({
    "BartphoTokenizer", "BertTokenizerLegacy", "BertGenerationTokenizer", "BertJapaneseTokenizer", "BertweetTokenizer",
    "BioGptTokenizer", "BlenderbotSmallTokenizer", "CamembertTokenizer", "ClvpTokenizer", "CpmTokenizer",
    "CpmTokenizerFast", "CpmAntTokenizer", "CTRLTokenizer", "EsmTokenizer", "FastSpeech2ConformerTokenizer",
    "FlaubertTokenizer", "GPTNeoXJapaneseTokenizer", "GPTSw3Tokenizer", "HerbertTokenizer", "LasrTokenizer",
    "M2M100Tokenizer", "MgpstrTokenizer", "MyT5Tokenizer", "PhobertTokenizer", "PLBartTokenizer",
    "ProphetNetTokenizer", "RoCBertTokenizer", "SeamlessM4TTokenizer", "SiglipTokenizer", "Speech2TextTokenizer",
    "SpeechT5Tokenizer", "TapasTokenizer", "VitsTokenizer", "Wav2Vec2CTCTokenizer", "Wav2Vec2PhonemeCTCTokenizer",
    "XLMTokenizer", "MarianTokenizer", "FSMTTokenizer", "AutoTokenizer", "PreTrainedTokenizer",
})


@register
class IgnoredTokenizerArgument(Rule):
    """`BertTokenizer(vocab_file=...)`: transformers 5 tokenizers take `vocab=`, and ignore `vocab_file`/`merges_file`."""

    code = "TL809"
    name = "ignored-tokenizer-argument"
    severity = Severity.ERROR
    #: the keyword, and a transformers `…Tokenizer` / `…TokenizerFast` class
    gate = (("vocab_file", "merges_file"), ("*Tokenizer", "*TokenizerFast"), ("transformers",))

    def visit_Call(self, node: cst.Call) -> None:
        qn = self.ctx.facts.callee(node) or ""
        if not qn.startswith("transformers."):
            return
        cls = qn.rsplit(".", 1)[-1]
        if not cls.endswith(("Tokenizer", "TokenizerFast")) or cls in _VOCAB_FILE_OK:
            return
        given = [kw for kw in ("vocab_file", "merges_file") if keyword(node, kw) is not None]
        if not given:
            return
        st = transformers_status(self, "transformers.*Tokenizer(vocab_file=)")
        if st is None or st.state != REMOVED:
            return
        bpe = "merges_file" in given
        self.report(
            cast(cst.Arg, keyword(node, given[0])).keyword,
            f"`{cls}({'=..., '.join(given)}=...)`: transformers {_release(st.api.removed or ())} tokenizers ignore "
            f"{' and '.join(f'`{g}`' for g in given)} "
            "without a warning and build "
            + ("an empty vocabulary (every text encodes to `[]`)" if bpe else
               "a default vocabulary of the 5 special tokens (every word becomes the unknown token)")
            + ": the model trains on nothing",
            hint=("pass the files as `vocab=` and `merges=` (or positionally), or save the tokenizer and load it with "
                  "`from_pretrained(directory)`" if bpe else
                  "pass the file as `vocab=` (or positionally), or load with `from_pretrained(directory)`"),
        )

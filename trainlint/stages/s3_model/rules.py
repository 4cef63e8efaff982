"""TL3xx: the model — its head and its parameters."""

from __future__ import annotations

import re
import weakref
from typing import cast

import libcst as cst

from trainlint import codemod, knowledge
from trainlint.facts import (
    TRAINER_WORDS,
    TRAINING_ARGS_CLASSES,
    UNKNOWN,
    ClassValue,
    DatasetValue,
    ModelValue,
    TFDatasetValue,
    TokenizerValue,
    argument,
    dotted,
    given,
    has_star_kwargs,
    iter_nodes,
    keyword,
    literal,
    self_item,
)
from trainlint.facts.constants import string_of
from trainlint.facts.models import model_of
from trainlint.facts.objects import WIDTH_KEEPING, Output, Tensor
from trainlint.facts.program import program
from trainlint.findings import Applicability, Severity
from trainlint.pins import PROJECT, versions_of
from trainlint.rule import Rule, register

#: checkpoints that most likely already carry a fine-tuned classification head of their own
_FINETUNED = re.compile(r"finetuned|fine-tuned|mnli|sst-?2|emotion|sentiment|ner\b|-ner|conll|squad|classif|imdb|xnli"
                        r"|checkpoint-\d+", re.I)

#: checkpoint names of pretrained base models (`bert-base-cased`, `microsoft/deberta-v3-large`): no head yet
_BASE_CHECKPOINT = re.compile(r"(?:^|[-_/])(?:base|large|small|medium|mini|tiny|xl|xxl|cased|uncased)$", re.I)


def dataset_for_model(ctx, model_call: cst.Call) -> knowledge.DatasetInfo | None:
    """The known hub dataset this model is trained on: through the `Trainer` or Keras `fit` that
    uses it, else the one known dataset the file loads."""
    facts = ctx.facts
    for call in facts.trainer_calls():
        m = facts.value_of(argument(call, "model", 0), call)
        if isinstance(m, ModelValue) and m.call is model_call:
            d = facts.value_of(argument(call, "train_dataset", 3), call)
            if isinstance(d, DatasetValue) and d.info is not None:
                return d.info
    for call in facts.method_calls("fit"):
        m = facts.value_of(call.func.value, call)
        if isinstance(m, ModelValue) and m.call is model_call:
            d = facts.value_of(argument(call, "x", 0), call)
            if isinstance(d, TFDatasetValue) and d.base is not None and d.base.info is not None:
                return d.base.info
    return facts.known_dataset()


@register
class MissingNumLabels(Rule):
    """A classification head loaded with `from_pretrained` without `num_labels` (or with the wrong one)."""

    code = "TL301"
    name = "missing-num-labels"
    severity = Severity.ERROR
    measured_from = 4
    probe = "Reads the whole label column and compares its values with `model.config.num_labels`."
    #: `X.from_pretrained` on a class (or a subclass of one) named `*ForSequenceClassification` /
    #: `*ForTokenClassification`. A finding also needs a known dataset (`load_dataset`) or a training
    #: file (a Trainer, `fit`, `backward`), but tests/test_catalog.py's TL003 example makes TL301 raise
    #: on a file with neither, so that group is left out (it closes no file of the benchmark corpus).
    gate = (("from_pretrained",), ("*ForSequenceClassification", "*ForTokenClassification"))
    fix = Applicability.UNSAFE

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained"):
            return
        facts = self.ctx.facts
        value = facts.value_of(node)
        if not isinstance(value, ModelValue) or value.head not in ("sequence-classification", "token-classification"):
            return
        if has_star_kwargs(node) or keyword(node, "config") or keyword(node, "id2label"):
            return
        given_arg = keyword(node, "num_labels")
        if given_arg is None and _saved_here(self.ctx, node):
            return  # the script's own saved model: it has the script's head
        if given_arg is None and self._reloaded_without_count(node, value):
            return
        if given_arg is None and not _model_trained(self.ctx, node) and not (
                isinstance(value.checkpoint, str) and _BASE_CHECKPOINT.search(value.checkpoint)):
            return  # a classifier loaded and not trained: a fine-tuned checkpoint used with its own head
        info = dataset_for_model(self.ctx, node)
        if info is not None and not _task_matches(info, value.head):
            info = None
        if info is None and value.head == "sequence-classification":
            info = _class_count_evidence(self.ctx)
        expected = info.num_labels if info else None
        finetuned = isinstance(value.checkpoint, str) and bool(_FINETUNED.search(value.checkpoint))
        cls = value.cls
        if given_arg is None:
            if expected is None:
                # unknown data: no static finding (`--probe` reads the label column, TL106), unless the
                # labels the file builds say more than 2 (`torch.randint(0, 5, ...)`)
                count = _label_count_evidence(self.ctx)
                if finetuned or count is None or count <= 2:
                    return
                self.report(
                    func,
                    f"`{cls}.from_pretrained` without `num_labels`: the new head has 2 outputs, but the labels this "
                    f"file builds go up to {count - 1}",
                    hint=f'pass `num_labels={count}`: with 2 outputs training fails with "IndexError: Target {count - 1} '
                    'is out of bounds" (a device-side assert on GPU, a NaN loss in Keras)',
                    severity=Severity.WARNING,
                )
                return
            if expected == 2 or info is None:  # (`expected` comes from `info`)
                return
            what = "is a regression task (1 output)" if info.task == "regression" else f"has {expected} classes"
            symptom = ('a shape mismatch in the loss' if info.task == "regression"
                       else f'"IndexError: Target {expected - 1} is out of bounds" (a device-side assert on GPU, a NaN loss in Keras)')
            self.report(
                func,
                f"`{cls}.from_pretrained` without `num_labels`: the head gets 2 outputs but {info.display} {what}",
                hint=f"pass `num_labels={expected}`: with 2 outputs training fails with {symptom}",
                severity=Severity.INFO if finetuned else Severity.ERROR,
                # a checkpoint with a fine-tuned head of its own would need `ignore_mismatched_sizes=True` too
                fix=None if finetuned else self.ctx.fix(
                    Applicability.UNSAFE, f"Pass `num_labels={expected}`",
                    codemod.add_keyword(self.ctx, node, "num_labels", str(expected))),
            )
            return
        given = facts.constant(given_arg.value, node)
        if expected is None or info is None or not isinstance(given, int) or isinstance(given, bool) or given == expected:
            return
        if given == 1 and info.task != "regression":
            return  # TL304 regression-head-on-classes: one output on class labels trains a regressor
        if given < expected:
            self.report(
                given_arg,
                f"`num_labels={given}` but {info.display} has {expected} classes: training fails with "
                f'"IndexError: Target {expected - 1} is out of bounds"',
                hint=f"the head must have one output per class: pass `num_labels={expected}`",
                fix=self._set_fix(given_arg, expected),
            )
        else:
            self.report(
                given_arg,
                f"`num_labels={given}` but {info.display} has {expected} classes: the extra outputs are never "
                "a target",
                hint=f"the extra outputs take probability mass in the softmax and distort the loss and the metrics; "
                f"pass `num_labels={expected}`",
                severity=Severity.WARNING,
                fix=self._set_fix(given_arg, expected),
            )

    def _reloaded_without_count(self, node: cst.Call, value: ModelValue) -> bool:
        """The weights of a classifier this file trains with `num_labels=N` (N not 2) are loaded back into a new
        model of the same class built without it (`state_dict=` of `from_pretrained`, or its `load_state_dict`):
        the new head has the default 2 outputs. True when reported."""
        facts = self.ctx.facts
        weights = keyword(node, "state_dict")
        if weights is None:
            for c in facts.method_calls("load_state_dict"):
                if c.args and _resolves_to(self.ctx, c.func.value, c, node):
                    weights = c
                    break
        if weights is None or _saved_here(self.ctx, node):
            return False
        order = facts.where[node].order
        for call in facts.index.get("Call", ()):
            if call is node or facts.where[call].order > order:
                continue
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained"):
                continue
            count = keyword(call, "num_labels")
            if count is None:
                continue
            other = facts.value_of(call)
            if not isinstance(other, ModelValue) or other.qualname != value.qualname:
                continue
            n = facts.constant(count.value, call)
            known = isinstance(n, int) and not isinstance(n, bool)
            if (known and n == 2) or (not known and n is not UNKNOWN):
                continue
            if not _model_trained(self.ctx, call):
                continue
            code = self.ctx.code(count.value)
            fix = None
            if known or (isinstance(count.value, cst.Name) and facts.lookup(count.value.value, node)
                         is facts.lookup(count.value.value, call)):
                fix = self.ctx.fix(Applicability.UNSAFE, f"Pass `num_labels={code}`",
                                   codemod.add_keyword(self.ctx, node, "num_labels", code))
            how = "`state_dict=`" if isinstance(weights, cst.Arg) else "`load_state_dict`"
            self.report(
                node.func,
                f"`{value.cls}.from_pretrained` without `num_labels` has a head of 2 outputs, but the weights loaded "
                f"here ({how}) come from one with `num_labels={_short(code)}`",
                hint=("" if known else f"unless `{code}` is 2, ") + "the trained weights do not fit the head (a "
                "size-mismatch error, or a head left untrained and \"IndexError: Target 2 is out of bounds\" on the "
                f"labels); pass the same `num_labels={code}` when loading the trained weights",
                severity=Severity.ERROR if known else Severity.WARNING,
                fix=fix,
            )
            return True
        return False

    def _set_fix(self, given_arg: cst.Arg, expected: int):
        return self.ctx.fix(Applicability.UNSAFE, f"Set `num_labels={expected}`",
                            self.ctx.replace(given_arg.value, str(expected)))


def _resolves_to(ctx, expr, at, model_call: cst.Call) -> bool | None:
    """Whether ``expr`` holds the model ``model_call`` made, also through `model.to(device)`-style calls (None:
    trainlint cannot tell what it holds)."""
    if expr is None:
        return None
    v = model_of(ctx.facts, expr, at)
    if v is None:
        v = ctx.facts.value_of(expr, at)
    if v is None:
        return None
    return isinstance(v, ModelValue) and v.call is model_call  # another value: a scikit-learn estimator, ...


def _model_trained(ctx, model_call: cst.Call) -> bool:
    """The model ``model_call`` loads is trained (or evaluated with labels) in this file: given to a
    `Trainer` (or built by its `model_init`), fitted with Keras, or its parameters handed to an optimizer /
    put in train mode in a file that calls `backward()`. Established only: a model trainlint cannot follow to
    one of these does not count."""
    facts = ctx.facts
    for call in facts.trainer_calls():
        if argument(call, "train_dataset", 3) is None and not has_star_kwargs(call) and argument(call, "model_init") is None:
            continue  # `Trainer(model=m).predict(...)`: an evaluation with the model's own head
        m = argument(call, "model", 0)
        if m is None:
            init = facts.function_def(argument(call, "model_init"), call)
            if init is not None and any(c is model_call for c in iter_nodes(init, (cst.Call,))):
                return True
            continue
        if _resolves_to(ctx, m, call, model_call):
            return True
    for call in facts.method_calls("fit"):
        if _resolves_to(ctx, call.func.value, call, model_call):
            return True
    if next(facts.method_calls("backward"), None) is not None:
        for c in (c for name in ("parameters", "named_parameters", "train") for c in facts.method_calls(name)):
            recv = c.func.value
            while isinstance(recv, cst.Attribute) and recv.attr.value in ("module", "base_model", "model"):
                recv = recv.value  # `model.module.parameters()`
            if _resolves_to(ctx, recv, c, model_call):
                return True
    return False


def _path_parts(expr) -> tuple:
    """What a path expression starts with: a string constant, a dotted name, the first piece of an
    f-string / `os.path.join(...)` / `a + "/x"` / `Path(a) / "x"`."""
    while True:
        if isinstance(expr, cst.Call) and expr.args and dotted(expr.func) in (
                "os.path.join", "path.join", "Path", "pathlib.Path", "str"):
            expr = expr.args[0].value
        elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Divide)):
            expr = expr.left
        elif isinstance(expr, cst.FormattedString) and expr.parts:
            first = expr.parts[0]
            if isinstance(first, cst.FormattedStringExpression):
                expr = first.expression
            else:
                return ("str", cast(cst.FormattedStringText, first).value)
        else:
            break
    text = literal(expr)
    if isinstance(text, str):
        return ("str", text)
    d = dotted(expr)
    return ("name", d) if d else ()


def _saved_here(ctx, model_call: cst.Call) -> bool:
    """The checkpoint is a directory this script writes (`save_pretrained(d)`, `trainer.save_model(d)`,
    `TrainingArguments(output_dir=d)`, `args.output_dir`): a model with the script's own head."""
    facts = ctx.facts
    ckpt = argument(model_call, "pretrained_model_name_or_path", 0)
    if ckpt is None:
        return False
    mine = _path_parts(ckpt)
    if not mine:
        return False
    if mine[0] == "name" and mine[1].endswith(".output_dir"):
        return True  # `args.output_dir`, `f"{training_args.output_dir}/checkpoint-500"`
    const = facts.constant(ckpt, model_call) if mine[0] == "name" else mine[1]
    targets: list[cst.BaseExpression | None] = []
    for name in ("save_pretrained", "save_model"):
        targets.extend(argument(c, "save_directory" if name == "save_pretrained" else "output_dir", 0)
                       for c in facts.method_calls(name))
    for call in facts.index.get("Call", ()):
        if (facts.callee(call) or "") in TRAINING_ARGS_CLASSES:
            targets.append(argument(call, "output_dir", 0))
    for t in targets:
        if t is None:
            continue
        theirs = _path_parts(t)
        if theirs and theirs == mine:
            return True
        tc = facts.constant(t, t if t in facts.where else model_call)
        if isinstance(const, str) and isinstance(tc, str) and tc.strip("./") and (
                const.rstrip("/") == tc.rstrip("/") or const.startswith(tc.rstrip("/") + "/")):
            return True
    return False


#: metrics that name their dataset: `evaluate.load("glue", "mrpc")`
_METRIC_LOADERS = frozenset({"evaluate.load", "datasets.load_metric"})


def _class_count_evidence(ctx) -> knowledge.DatasetInfo | None:
    """The classification dataset the file's other evidence names, when no `load_dataset` does:
    `evaluate.load("glue", "mrpc")`, `tfds.load("glue/mrpc")` (one such dataset, else None)."""
    facts = ctx.facts
    found = set()
    for call in facts.index.get("Call", ()):
        qn = facts.callee(call) or ""
        if qn in _METRIC_LOADERS:
            name, config = facts.constant(argument(call, "path", 0), call), facts.constant(argument(call, "config_name", 1), call)
            if name == "glue" and isinstance(config, str):
                found.add(knowledge.dataset_info(name, config))
        elif qn == "tensorflow_datasets.load":
            name = facts.constant(argument(call, "name", 0), call)
            if isinstance(name, str) and "/" in name:
                ds, _, config = name.partition("/")
                found.add(knowledge.dataset_info(ds, config.split(":")[0]))
    found = {i for i in found if i is not None and i.task in ("sequence-classification", "regression")}
    return found.pop() if len(found) == 1 else None


def _label_count_evidence(ctx) -> int | None:
    """How many classes the file's own labels span, when the data is unknown: 2 for a metric with
    `average="binary"` or labels built as all-zero / 0-1 tensors (`labels=torch.zeros(...)`,
    `np.random.randint(0, 2, n)`), N for `randint(0, N, ...)` or `i % N` labels; None when nothing says.
    Once per file (every `from_pretrained` of a classifier asks)."""
    if ctx.facts not in _LABEL_COUNTS:
        _LABEL_COUNTS[ctx.facts] = _label_count_in_file(ctx)
    return _LABEL_COUNTS[ctx.facts]


#: per file's facts (not stored on them): the label count of :func:`_label_count_evidence`, the dotted uses of
#: :func:`_dotted_uses`
_LABEL_COUNTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_DOTTED_USES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _label_count_in_file(ctx) -> int | None:
    facts = ctx.facts
    given: list = []  # (expression given as the labels, where)
    for call in facts.index.get("Call", ()):
        avg = keyword(call, "average")
        if avg is not None and facts.constant(avg.value, call) == "binary":
            return 2
        lab = keyword(call, "labels")
        if lab is not None:
            given.append((lab.value, call))
        f = call.func  # `labels.append(i % 3)`
        if isinstance(f, cst.Attribute) and f.attr.value == "append" and "label" in (dotted(f.value) or "").lower() \
                and call.args:
            given.append((call.args[0].value, call))
    for assign in facts.index.get("Assign", ()):  # `{"labels": np.random.randint(0, 1, n)}`
        for el in iter_nodes(assign.value, (cst.DictElement,)):
            if literal(el.key) in ("labels", "label"):
                given.append((el.value, assign))
    counts = []
    for value, call in given:
        if isinstance(value, cst.ListComp):
            value = value.elt  # `[i % 3 for i in range(n)]`
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Modulo):
            k = facts.constant(value.right, call)
            if isinstance(k, int) and not isinstance(k, bool) and k > 0:
                counts.append(max(k, 2))
            continue
        if isinstance(value, cst.Name):
            b = facts.lookup(value.value, call)
            value = b.value if b is not None else None
        if isinstance(value, cst.Call):
            fn = (dotted(value.func) or "").rsplit(".", 1)[-1]
            if fn in ("zeros", "zeros_like"):
                counts.append(2)
            elif fn == "randint":  # randint(high, size) / randint(low, high, size)
                b = [facts.constant(a.value, call) for a in value.args[:2] if a.keyword is None]
                high = b[1] if len(b) > 1 and isinstance(b[1], int) else (
                    b[0] if b and (len(b) == 1 or isinstance(b[1], (tuple, list))) else None)
                if isinstance(high, int) and not isinstance(high, bool) and high > 0:
                    counts.append(max(high, 2))
    return max(counts) if counts else None


def _task_matches(info: knowledge.DatasetInfo, head: str) -> bool:
    if head == "token-classification":
        return info.task == "token-classification"
    return info.task in ("sequence-classification", "regression")


@register
class ParametersWithoutGradient(Rule):
    """(probe) Trainable parameters receive no gradient, or a non-finite one."""

    code = "TL308"
    name = "parameters-without-gradient"
    severity = Severity.WARNING
    probe = "Runs backward on one batch and lists trainable parameters whose gradient is missing or not finite."


# ---------------------------------------------------------------------------------------------
# Catalog breadth: TL302–TL307.


def _trained_dataset(ctx, model_call: cst.Call) -> knowledge.DatasetInfo | None:
    """The known hub dataset this model is *certainly* trained on: through the `Trainer` or Keras
    `fit` that uses it (unlike :func:`dataset_for_model`, no fallback to the file's one dataset)."""
    facts = ctx.facts
    for call in facts.trainer_calls():
        m = facts.value_of(argument(call, "model", 0), call)
        if isinstance(m, ModelValue) and m.call is model_call:
            d = facts.value_of(argument(call, "train_dataset", 3), call)
            return d.info if isinstance(d, DatasetValue) else None
    for call in facts.method_calls("fit"):
        m = facts.value_of(call.func.value, call)
        if isinstance(m, ModelValue) and m.call is model_call:
            d = facts.value_of(argument(call, "x", 0), call)
            if isinstance(d, TFDatasetValue) and d.base is not None:
                return d.base.info
            return None
    return None


@register
class HeadTaskMismatch(Rule):
    """The model's head does not fit the data it is trained on (a token-classification head on one
    label per sentence, a sequence-classification head on token labels or on unlabelled text)."""

    code = "TL302"
    name = "head-task-mismatch"
    severity = Severity.ERROR
    measured_from = 4
    #: the model goes to a Trainer (or a subclass) or a Keras `fit` with a known hub dataset (`datasets` or
    #: TensorFlow Datasets); or a language-modelling head goes to a Trainer with a `Dataset` class of the file
    gate = (("from_pretrained", "from_config"),
            ("*ForSequenceClassification", "*ForTokenClassification", "*ForMaskedLM", "*ForCausalLM", "*WithLMHead",
             "*LMHeadModel"),
            (*TRAINER_WORDS, "fit"), ("load_dataset", "tensorflow_datasets", "__getitem__"))

    _HEADS_FOR_TASK = {
        "sequence-classification": "AutoModelForSequenceClassification",
        "regression": "AutoModelForSequenceClassification",
        "multi-label": "AutoModelForSequenceClassification",
        "token-classification": "AutoModelForTokenClassification",
        "language-modeling": "AutoModelForCausalLM (or AutoModelForMaskedLM)",
    }

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("from_pretrained", "from_config")):
            return
        value = self.ctx.facts.value_of(node)
        if isinstance(value, ModelValue) and (value.head in _LM_HEADS or value.cls.endswith("WithLMHead")):
            self._lm_head_on_class_ids(node, value)
            return
        if not isinstance(value, ModelValue) or value.head not in ("sequence-classification", "token-classification"):
            return
        info = _trained_dataset(self.ctx, node)
        if info is None:
            return
        found = None
        if value.head == "token-classification" and info.task in ("sequence-classification", "regression", "multi-label"):
            failure = ("an assertion on the shapes in SparseSoftmaxCrossEntropyWithLogits (\"logits and labels "
                       "must have the same first dimension\")" if value.tf else
                       "\"ValueError: Expected input batch_size (4096) to match target batch_size (32)\"")
            found = (f"`{value.cls}` predicts one label per token, but {info.display} has one label per example",
                     f"the loss fails with {failure}")
        elif value.head == "sequence-classification" and info.task == "token-classification":
            found = (f"`{value.cls}` predicts one label per sequence, but {info.display} has one label per token",
                     "the loss fails on the label shape (\"Expected input batch_size (32) to match target batch_size "
                     "(4096)\", or a collation error on the label lists)")
        elif value.head == "sequence-classification" and info.task == "language-modeling":
            found = (f"`{value.cls}` needs a class label per example, but {info.display} is unlabelled text",
                     "without labels the Trainer fails with \"The model did not return a loss from the inputs\", and "
                     "token-id labels (from `group_texts`) do not fit a per-sequence head")
        if found is None:
            return
        self.report(func, f"head-task mismatch: {found[0]}",
                    hint=f"{found[1]}; use the head of the task: "
                    f"`{self._HEADS_FOR_TASK.get(info.task, 'the matching head')}`")

    def _lm_head_on_class_ids(self, node: cst.Call, value: ModelValue) -> None:
        """A language-modelling head (one prediction per token) given to a `Trainer` whose training examples
        (a `Dataset` class of the file) carry one class id each as their label."""
        facts = self.ctx.facts
        for call in facts.trainer_calls():
            m = facts.value_of(argument(call, "model", 0), call)
            if not (isinstance(m, ModelValue) and m.call is node) or given(call, "data_collator", 2) is not None:
                continue  # a collator of its own may build the token labels
            cls = facts.value_of(call.func, call) if isinstance(call.func, cst.Name) else None
            if isinstance(cls, ClassValue) and isinstance(cls.node, cst.ClassDef) and any(
                    isinstance(st, cst.FunctionDef) and st.name.value in ("compute_loss", "training_step")
                    for st in cls.node.body.body):
                continue  # a loss of its own (a verbalizer reading the LM logits at one position, ...)
            data = argument(call, "train_dataset", 3)
            found = _example_class_ids(facts, data, call)
            if found is None:
                continue
            self.report(
                node.func,
                f"head-task mismatch: `{value.cls}` predicts a token at every position, but each example of "
                f"`{_short(self.ctx.code(data))}` has one class id as its `{found}`",
                hint="a language-modelling head's loss wants token ids as labels: it fails with \"ValueError: Expected "
                "input batch_size (4096) to match target batch_size (32)\"; use the head of the task: "
                "`AutoModelForSequenceClassification` (with `num_labels`)",
            )
            return


#: the heads that predict a token at every position (`AutoModelWithLMHead` is either, by checkpoint)
_LM_HEADS = ("masked-lm", "causal-lm")
#: calls that turn one value into a tensor or an array of the same content
_TENSOR_WRAPPERS = frozenset({"torch.tensor", "torch.as_tensor", "torch.LongTensor", "torch.Tensor",
                              "numpy.array", "numpy.asarray", "int"})


def _example_class_ids(facts, data, at) -> str | None:
    """The label key (`labels` / `label`) when every example of ``data`` carries one class id: ``data`` is an
    instance of a class of the file whose `__getitem__` sets that key to `self.x[idx]` (as a tensor or not),
    `self.x` is a constructor argument, and that argument is a list of integer class ids
    (:func:`_class_id_list`). None otherwise."""
    built = data
    if isinstance(data, cst.Name):
        b = facts.lookup(data.value, at)
        built = b.value if b is not None else None
    if not (isinstance(built, cst.Call) and isinstance(built.func, cst.Name)):
        return None
    cls = facts.value_of(built.func, built)
    if not isinstance(cls, ClassValue) or not isinstance(cls.node, cst.ClassDef):
        return None
    methods = {st.name.value: st for st in cls.node.body.body if isinstance(st, cst.FunctionDef)}
    getitem, init = methods.get("__getitem__"), methods.get("__init__")
    if getitem is None or init is None:
        return None
    gparams = [p.name.value for p in getitem.params.params]
    if len(gparams) != 2:
        return None
    for key, expr in _label_assignments(getitem):
        item = self_item(_unwrap_tensor(facts, expr))
        if item is None or item[1] != gparams[1]:
            continue
        attr = item[0]
        param = _init_parameter_of(init, attr)
        if param is None:
            continue
        names = [p.name.value for p in init.params.params][1:]
        arg = argument(built, param, names.index(param)) if param in names else None
        if arg is not None and _class_id_list(facts, arg, built, 0):
            return key
    return None


def _label_assignments(fn: cst.FunctionDef) -> list:
    """(key, value) of `item["labels"] = value` and of a returned `{"labels": value}` in ``fn``."""
    out = []
    for node in iter_nodes(fn.body, (cst.Assign, cst.Return)):
        if isinstance(node, cst.Assign):
            for t in node.targets:
                tgt = t.target
                if isinstance(tgt, cst.Subscript) and len(tgt.slice) == 1 and isinstance(tgt.slice[0].slice, cst.Index):
                    key = literal(tgt.slice[0].slice.value)
                    if key in ("labels", "label"):
                        out.append((key, node.value))
        elif isinstance(node.value, cst.Dict):
            for el in node.value.elements:
                if isinstance(el, cst.DictElement) and literal(el.key) in ("labels", "label"):
                    out.append((literal(el.key), el.value))
    return out


def _unwrap_tensor(facts, expr):
    """`torch.tensor(x)` / `np.array(x)` / `int(x)` → `x`."""
    while isinstance(expr, cst.Call) and len(expr.args) >= 1 and expr.args[0].keyword is None \
            and not expr.args[0].star and (facts.callee(expr) or dotted(expr.func) or "") in _TENSOR_WRAPPERS:
        expr = expr.args[0].value
    return expr


def _init_parameter_of(init: cst.FunctionDef, attr: str) -> str | None:
    """The `__init__` parameter stored as `self.<attr>` (`self.labels = labels`), when that is its only
    assignment."""
    found = []
    for a in iter_nodes(init.body, (cst.Assign,)):
        for t in a.targets:
            if dotted(t.target) == f"self.{attr}":
                found.append(a.value)
    params = {p.name.value for p in init.params.params}
    if len(found) == 1 and isinstance(found[0], cst.Name) and found[0].value in params:
        return found[0].value
    return None


def _int_class(facts, expr, at) -> bool:
    """An integer class id: `1`, `0 if d == "neg" else 1`, `label2id[name]` of a dict literal of ints."""
    v = literal(expr)
    if isinstance(v, int) and not isinstance(v, bool):
        return True
    if isinstance(expr, cst.IfExp):
        return _int_class(facts, expr.body, at) and _int_class(facts, expr.orelse, at)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "int" \
            and facts.lookup("int", at) is None:
        return True  # `int(row["label"])`: one number per example
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name):
        b = facts.lookup(expr.value.value, at)
        table = b.value if b is not None else None
        if isinstance(table, cst.DictComp):  # `{name: i for i, name in enumerate(names)}`
            gen = table.for_in
            return (gen.inner_for_in is None and isinstance(gen.iter, cst.Call)
                    and isinstance(gen.iter.func, cst.Name) and gen.iter.func.value == "enumerate"
                    and isinstance(gen.target, cst.Tuple) and len(gen.target.elements) == 2
                    and isinstance(table.value, cst.Name) and isinstance(gen.target.elements[0].value, cst.Name)
                    and gen.target.elements[0].value.value == table.value.value)
        return isinstance(table, cst.Dict) and bool(table.elements) and all(
            isinstance(el, cst.DictElement) and isinstance(literal(el.value), int)
            and not isinstance(literal(el.value), bool) for el in table.elements)
    return False


def _class_id_list(facts, expr, at, depth: int) -> bool:
    """``expr`` is a list of integer class ids, one per example: a list (or comprehension) of them, or a list
    filled with `.append(id)`, followed through names, the tuples local helpers return and the splits of
    `sklearn`'s `train_test_split`."""
    if depth > 8 or expr is None:
        return False
    if isinstance(expr, cst.ListComp):
        return _int_class(facts, expr.elt, expr if expr in facts.where else at)
    if isinstance(expr, cst.List):
        return bool(expr.elements) and all(isinstance(e, cst.Element) and _int_class(facts, e.value, at)
                                           for e in expr.elements)
    if not isinstance(expr, cst.Name):
        return False
    b = facts.lookup(expr.value, at)
    if b is not None and b.value is None and (facts.unpacked_from(b) or (None,))[0] is at:
        # `y_tr, y_te = train_test_split(x, y)` reads the `y` bound before: the previous binding in that scope
        w = facts.where.get(at)
        earlier = [e for e in facts.bindings.get(w.function if w else None, {}).get(expr.value, ()) if e.order < b.order]
        b = earlier[-1] if earlier else None
    if b is None:
        return False
    if b.value is None:  # `a, b = helper(...)` / `x_tr, x_te, y_tr, y_te = train_test_split(x, y)`
        unpacked = facts.unpacked_from(b)
        if unpacked is None:
            return False
        call, index = unpacked
        if facts.callee(call) == "sklearn.model_selection.train_test_split":
            arrays = [a.value for a in call.args if a.keyword is None and not a.star]
            return index // 2 < len(arrays) and _class_id_list(facts, arrays[index // 2], call, depth + 1)
        fn = facts.function_def(call.func, call)
        if not isinstance(fn, cst.FunctionDef):
            return False
        rets = [r for r in iter_nodes(fn.body, (cst.Return,)) if (w := facts.where.get(r)) is not None
                and w.function is fn and r.value is not None]
        if len(rets) != 1 or not isinstance(rets[0].value, cst.Tuple) or index >= len(rets[0].value.elements):
            return False
        return _class_id_list(facts, rets[0].value.elements[index].value, rets[0], depth + 1)
    if isinstance(b.value, cst.List) and not b.value.elements:  # `labels = []` then `labels.append(...)`
        w = facts.where.get(at)
        scope = w.function if w is not None else None
        if not any(x is b for x in facts.bindings.get(scope, {}).get(expr.value, ())):
            return False
        appended = []
        for c in facts.method_calls("append"):
            cw = facts.where.get(c)
            if (cw is not None and cw.function is scope and isinstance(c.func.value, cst.Name)
                    and c.func.value.value == expr.value and len(c.args) == 1):
                appended.append(c)
        return bool(appended) and all(_int_class(facts, c.args[0].value, c) for c in appended)
    if isinstance(b.value, (cst.List, cst.ListComp, cst.Name)):
        return _class_id_list(facts, b.value, b.value if b.value in facts.where else at, depth + 1)
    return False


def _short(code: str) -> str:
    return code if len(code) <= 40 else code[:37] + "..."


#: decoder-only families whose released configs define no `pad_token_id`
_NO_PAD_CERTAIN = ("gpt2", "gpt-2", "distilgpt2", "gpt-neo", "gpt-j", "gptj", "mistral", "mixtral")
#: decoder-only families whose configs define a `pad_token_id` (OPT, BLOOM, Gemma)
_HAS_PAD = ("opt-", "bloom", "gemma")
#: the released checkpoints whose tokenizers have no pad token (GPT-2's byte-level BPE, GPT-Neo and GPT-J, the
#: Llama 2 / Code Llama and Mistral sentencepiece tokenizers): their own hub names, not derivatives (a fine-tuned
#: or multimodal checkpoint built on them may add one)
_TOKENIZER_WITHOUT_PAD = re.compile(
    r"^(?:openai-community/)?(?:distil)?gpt2(?:-(?:medium|large|xl))?$|^EleutherAI/gpt-(?:neo|j)-|^codellama/CodeLlama-"
    r"|^meta-llama/Llama-2-|^mistralai/(?:Mistral|Mixtral)-", re.I)
_GPT2_TOKENIZER = re.compile(r"^(?:openai-community/)?(?:distil)?gpt2(?:-(?:medium|large|xl))?$", re.I)
#: collators that always pad with the tokenizer they are given (`tokenizer.pad(..., padding=True)`)
_PADDING_COLLATORS = frozenset({"DataCollatorWithPadding", "DataCollatorForSeq2Seq", "DataCollatorForTokenClassification"})
_ASKS_TO_PAD = (True, "max_length", "longest")
_PAD_ERROR = '"ValueError: Asking to pad but the tokenizer does not have a padding token"'


@register
class DecoderWithoutPadToken(Rule):
    """A decoder-only checkpoint without a pad token where one is needed: a trained classifier, a padding tokenizer.

    GPT-2, Llama, Mistral, …: a sequence classifier trained on batches, or the checkpoint's tokenizer asked to pad."""

    code = "TL303"
    name = "decoder-without-pad-token"
    severity = Severity.ERROR
    measured_from = 4
    #: the checkpoint is a string: only the loading call and what pads can be seen in the code's words
    gate = (("from_pretrained",), ("*ForSequenceClassification", "padding", *sorted(_PADDING_COLLATORS),
                                   "PPOTrainer"))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained":
            self._classifier(node)
            return
        facts = self.ctx.facts
        qn = facts.callee(node) or ""
        short = qn.rsplit(".", 1)[-1]
        if qn.startswith("transformers.") and short in _PADDING_COLLATORS:
            self._asked_to_pad(node, argument(node, "tokenizer", 0), f", and `{short}` pads every batch with it")
        elif qn.startswith("trl.") and short == "PPOTrainer" and self._old_ppo_stepped(node):
            self._asked_to_pad(node, argument(node, "tokenizer", 3), ", and `PPOTrainer.step()` pads the batch with it")
        else:
            padding = argument(node, "padding")
            if padding is not None and literal(padding) in _ASKS_TO_PAD:
                called = func.value if isinstance(func, cst.Attribute) and func.attr.value in (
                    "encode", "encode_plus", "batch_encode_plus", "__call__") else func
                # `padding="max_length"` without `max_length` pads only where the tokenizer has a finite
                # `model_max_length` (GPT-2's 1024; Llama's tokenizers have none, and then nothing pads)
                unbounded = literal(padding) == "max_length" and argument(node, "max_length") is None
                self._asked_to_pad(node, called, f" and is asked to pad (`padding={self.ctx.code(padding)}`)", gpt2_only=unbounded)

    # -- the model: `...ForSequenceClassification` ------------------------------------------------
    def _classifier(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        value = facts.value_of(node)
        if not isinstance(value, ModelValue) or value.head != "sequence-classification" or has_star_kwargs(node):
            return
        ckpt = self._checkpoint(node, value.checkpoint)
        if ckpt is None:
            return
        low = ckpt[0].lower()
        if not any(f in low for f in knowledge.DECODER_ONLY) or any(f in low for f in _HAS_PAD):
            return  # premise 1: a decoder-only family without a pad token in its config
        if keyword(node, "config") is not None or "pad_token_id" in self.ctx.source:
            return  # premise 3: the file sets one (anywhere: silence beats a guess)
        if not _model_trained(self.ctx, node):
            return  # premise 2: trained in the file (on batches; only run for inference, one example per call works)
        certain = any(f in low for f in _NO_PAD_CERTAIN)
        self.report(
            node.func,
            f"`{value.cls}.from_pretrained({ckpt[0]!r})`{_default(ckpt)} has no pad token in its config: every batch "
            "of more than one example fails",
            hint='"ValueError: Cannot handle batch sizes > 1 if no padding token is defined." A decoder-only classifier '
            "finds the last token through `config.pad_token_id`; setting `tokenizer.pad_token` alone does not change "
            "it. Set both: `tokenizer.pad_token = tokenizer.eos_token` and `model.config.pad_token_id = "
            "tokenizer.pad_token_id`" + ("" if certain else " (if this checkpoint's config defines `pad_token_id`, "
                                          "it is fine)"),
            severity=Severity.ERROR if certain and ckpt[1] is None else Severity.WARNING,
        )

    def _checkpoint(self, call: cst.Call, known) -> tuple[str, str | None] | None:
        if isinstance(known, str):
            return known, None
        return string_of(self.ctx.facts, argument(call, "pretrained_model_name_or_path", 0), call)

    # -- the tokenizer: asked to pad --------------------------------------------------------------
    def _asked_to_pad(self, node: cst.Call, tokenizer, how: str, gpt2_only: bool = False) -> None:
        """Premise 1: ``tokenizer`` is loaded from a checkpoint whose tokenizer has no pad token; premise 2: it is
        asked to pad here; premise 3: nothing in the file gives it one."""
        facts = self.ctx.facts
        if tokenizer is None or _gives_a_pad_token(facts):
            return
        at = node if node in facts.where else None
        loaded = facts.value_of(tokenizer, at)
        if not isinstance(loaded, TokenizerValue) or not isinstance(loaded.node, cst.Call):
            return
        load = loaded.node
        if not (isinstance(load.func, cst.Attribute) and load.func.attr.value == "from_pretrained"
                and "Tokenizer" in (facts.qualname(load.func.value) or "")):
            return  # a tokenizer class (a processor may hold another tokenizer)
        ckpt = string_of(facts, argument(load, "pretrained_model_name_or_path", 0), load)
        if ckpt is None or not (_GPT2_TOKENIZER if gpt2_only else _TOKENIZER_WITHOUT_PAD).search(ckpt[0]):
            return
        message = f"the `{ckpt[0]}` tokenizer{_default(ckpt)} has no pad token{how}"
        self.report(
            node,
            f"{message}: {_PAD_ERROR}" if len(message) + len(_PAD_ERROR) <= 158 else message,
            hint=f"{_PAD_ERROR}: give it one after loading it, `tokenizer.pad_token = tokenizer.eos_token` (or "
            "`tokenizer.add_special_tokens({'pad_token': '[PAD]'})` and resize the model's embeddings)",
            severity=Severity.ERROR if ckpt[1] is None else Severity.WARNING,
        )

    def _old_ppo_stepped(self, call: cst.Call) -> bool:
        """trl's first `PPOTrainer(config, model, ref_model, tokenizer, ...)` (before 0.12, whose `step()` pads
        the queries and responses with a language-modelling collator), stepped in the file."""
        if versions_of(self.ctx).at_least("trl", (0, 12), down_to=PROJECT):
            return False
        facts = self.ctx.facts
        names = {t.target.value for h in facts.holders(call) if isinstance(h, cst.Assign) for t in h.targets
                 if isinstance(t.target, cst.Name)}
        return any(dotted(c.func.value) in names for c in facts.method_calls("step"))


def _default(ckpt: tuple[str, str | None]) -> str:
    return f" (the `{ckpt[1]}` default)" if ckpt[1] else ""


def _gives_a_pad_token(facts) -> bool:
    """The file sets a pad token somewhere: `x.pad_token = ...`, `x.pad_token_id = ...`, `add_special_tokens`,
    `from_pretrained(..., pad_token=...)`."""
    for a in facts.index.get("Assign", ()):
        if any(isinstance(t.target, cst.Attribute) and t.target.attr.value in ("pad_token", "pad_token_id")
               for t in a.targets):
            return True
    if next(facts.method_calls("add_special_tokens"), None) is not None:
        return True
    return any(keyword(c, "pad_token") is not None for c in facts.method_calls("from_pretrained"))


@register
class RegressionHeadOnClasses(Rule):
    """`num_labels=1` on a sequence classifier trained on class labels: the model becomes a regressor."""

    code = "TL304"
    name = "regression-head-on-classes"
    severity = Severity.ERROR
    measured_from = 4
    probe = "Integer class labels reaching a `num_labels=1` model are reported as TL405, which confirms this finding."
    #: `num_labels=1` as a keyword of the call itself; the classes come from a known hub dataset
    gate = (("from_pretrained", "from_config"), ("num_labels",), ("*ForSequenceClassification",), ("load_dataset",))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("from_pretrained", "from_config")):
            return
        arg = keyword(node, "num_labels")
        if arg is None or keyword(node, "problem_type") is not None or has_star_kwargs(node):
            return
        facts = self.ctx.facts
        if facts.constant(arg.value, node) != 1:
            return
        value = facts.value_of(node)
        if not isinstance(value, ModelValue) or value.head != "sequence-classification":
            return
        if "problem_type" in self.ctx.source:
            return  # premise 1: one output, and no `problem_type` set anywhere (silence beats a guess)
        if not _model_trained(self.ctx, node):
            return  # premise 2: trained in the file
        info = _trained_dataset(self.ctx, node)
        if info is None and not _OTHER_DATA.search(self.ctx.source):
            info = facts.known_dataset()  # the file's only dataset, and no data of its own
        if info is None or info.task != "sequence-classification" or not info.num_labels or info.num_labels < 2:
            return  # premise 3: the data are integer class ids of at least two classes
        self.report(
            arg,
            f"`num_labels=1` but {info.display} has {info.num_labels} integer classes: the model trains as a "
            "regressor (mean-squared error on the class ids)",
            hint="with one output transformers sets `problem_type=\"regression\"` and uses MSELoss on the class ids: "
            "no error, but the model learns a regressor and accuracy stays near chance; "
            f"pass `num_labels={info.num_labels}` (a binary task uses 2 outputs and cross-entropy)",
        )


#: the script builds data of its own besides the hub datasets it loads
_OTHER_DATA = re.compile(r"from_dict|from_pandas|from_list|from_csv|from_json|from_generator|load_from_disk|read_csv|"
                         r"load_dataset\(\s*[\"'](?:csv|json|parquet|text|imagefolder)")

_TYPO_ATTRS = frozenset({"require_grad", "requires_grads", "required_grad", "require_grads", "requires_gradient"})


@register
class FrozenModel(Rule):
    """Every parameter of the trained model is frozen before training, or `param.require_grad`
    (a typo) is set, which freezes nothing."""

    code = "TL305"
    name = "frozen-model"
    severity = Severity.ERROR
    measured_from = 4
    probe = "Counts the parameters with `requires_grad=True` of the model the script trains (none confirms it)."
    fix = Applicability.UNSAFE
    #: four ways to a finding: a misspelt attribute (alone); `requires_grad = False` /
    #: `requires_grad_(False)` then a Trainer or a `torch.optim` optimizer; `requires_grad = False` on a
    #: module in a file with a Trainer, a `torch.optim` optimizer or a `backward()`; `.trainable = False`
    #: then `compile` and `fit`. Each group holds one word of every way.
    gate = (
        (*sorted(_TYPO_ATTRS), "requires_grad", "requires_grad_", "trainable"),
        (*sorted(_TYPO_ATTRS), *TRAINER_WORDS, "optim", "backward", "compile"),
        (*sorted(_TYPO_ATTRS), *TRAINER_WORDS, "optim", "backward", "fit"),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            target = t.target
            if not isinstance(target, cst.Attribute):
                continue
            attr = target.attr.value
            if attr in _TYPO_ATTRS and isinstance(literal(node.value), bool) and _holds_parameters(
                    self.ctx.facts, target.value, node):
                self.report(
                    target.attr,
                    f"`.{attr}` is not a tensor attribute: this sets a new Python attribute, `requires_grad` is "
                    "unchanged and nothing is frozen",
                    hint="spell it `requires_grad` (the misspelt attribute freezes nothing: the layers meant to be "
                    "frozen keep training)",
                    fix=self.ctx.fix(Applicability.UNSAFE, "rename to `requires_grad`",
                                     self.ctx.replace(target.attr, "requires_grad")),
                )
            elif attr == "requires_grad" and literal(node.value) is False:
                if not self._module_flag(node, target):
                    self._torch_freeze(node, target)
            elif attr == "trainable" and literal(node.value) is False and isinstance(target.value, cst.Name):
                self._keras_freeze(node, target.value)

    def visit_Call(self, node: cst.Call) -> None:  # model.requires_grad_(False)
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "requires_grad_"):
            return
        arg = argument(node, "requires_grad", 0)
        if arg is None or literal(arg) is not False or not isinstance(node.func.value, cst.Name):
            return
        w = self.ctx.facts.where.get(node)
        if w is None or _conditional(w):
            return
        self._check_frozen(node.func.value.value, node, node)

    # -- torch -------------------------------------------------------------------------------
    def _module_flag(self, assign: cst.Assign, target: cst.Attribute) -> bool:
        """`model.encoder.requires_grad = False` on a module of a file that trains: `requires_grad` is an
        attribute of tensors, not of `nn.Module`, so this sets a plain Python attribute and freezes nothing.
        True when reported."""
        facts = self.ctx.facts
        holder = target.value
        if isinstance(holder, cst.Name) and holder.value == "self":
            return False  # a module's own attribute, set in its own code: maybe a flag it reads itself
        if next(facts.trainer_calls(), None) is None and next(facts.method_calls("backward"), None) is None and not any(
                (facts.callee(c) or "").startswith("torch.optim.") for c in facts.index.get("Call", ())):
            return False  # nothing is trained here
        why = _module_evidence(facts, holder, assign)
        if why is None:
            return False
        code = self.ctx.code(holder)
        fix = None
        if len(assign.targets) == 1:
            fix = self.ctx.fix(Applicability.UNSAFE, f"call `{code}.requires_grad_(False)`",
                               self.ctx.replace(assign, f"{code}.requires_grad_(False)"))
        self.report(
            target.attr,
            f"`{_short(code)}` is a module ({why}): `requires_grad` set on it is a plain attribute: nothing is "
            "frozen",
            hint="`requires_grad` is an attribute of tensors: its parameters keep `requires_grad=True`, still receive "
            f"gradients, and an optimizer over them still updates them. Freeze them: `{code}.requires_grad_(False)` "
            f"(or `for p in {code}.parameters(): p.requires_grad = False`)",
            fix=fix,
        )
        return True

    def _torch_freeze(self, assign: cst.Assign, target: cst.Attribute) -> None:
        """`for p in model.parameters(): p.requires_grad = False` with nothing conditional around it."""
        facts = self.ctx.facts
        if not isinstance(target.value, cst.Name):
            return
        w = facts.where.get(assign)
        loop = w.inside(cst.For) if w else None
        if loop is None:
            return
        if _conditional(w, loop):
            # `if ...: p.requires_grad = False else: p.requires_grad = False` inside the loop freezes all the
            # same (reported at the `else` branch's, which was meant to stay trainable)
            branch = _both_branches_freeze(w, loop, assign, target.value.value)
            if branch is None or branch == "body" or _conditional(w, loop, inner_ok=True):
                return
        it = loop.iter
        if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute)
                and it.func.attr.value in ("parameters", "named_parameters") and not it.args
                and dotted(it.func.value) is not None):
            return
        var = _loop_param_name(loop.target, it.func.attr.value)
        if var != target.value.value:
            return
        both = " (by both branches of the `if`)" if _conditional(w, loop) else ""
        self._check_frozen(cast(str, dotted(it.func.value)), loop, target, both)  # not None: checked above

    def _check_frozen(self, model_name: str, at: cst.CSTNode, report_node: cst.CSTNode, how: str = "") -> None:
        facts = self.ctx.facts
        src = self.ctx.source
        if _unfreezes(facts) or re.search(r"(?<![a-z])(?:peft|lora|adapter)", src, re.I):
            return
        w = facts.where.get(at)
        if w is None:
            return
        if facts.assigned_later(model_name, at) or _attribute_assigned_later(facts, model_name, at):
            return
        trained = self._trained_after(model_name, at)
        if trained is None:
            return
        self.report(
            report_node,
            f"every parameter of `{_short(model_name)}` is frozen{how} before it is trained ({_short(trained)}): "
            "no weight can change",
            hint='`loss.backward()` fails with "RuntimeError: element 0 of tensors does not require grad and does not '
            f'have a grad_fn". Freeze only the body (e.g. `for p in {model_name}.base_model.parameters(): ...`) and '
            "keep the head trainable, or drop the freezing loop",
        )

    def _trained_after(self, model_name: str, at: cst.CSTNode) -> str | None:
        """How `model_name` is trained after `at` in the same scope: a Trainer, an optimizer, or None."""
        facts = self.ctx.facts
        w = facts.where[at]
        for call in facts.index.get("Call", ()):
            cw = facts.where.get(call)
            if cw is None or cw.order <= w.order or cw.function is not w.function:
                continue
            if facts.is_trainer_class(call.func, call):
                m = argument(call, "model", 0)
                if isinstance(m, cst.Name) and m.value == model_name:
                    return f"`{self.ctx.code(call.func)}(model={model_name})`"
            qn = facts.callee(call) or ""
            if qn.startswith("torch.optim.") and call.args:
                p = call.args[0].value
                if isinstance(p, cst.Name):  # `params = model.parameters(); AdamW(params, ...)`
                    b = facts.lookup(p.value, call)
                    p = b.value if b is not None and isinstance(b.value, cst.Call) else p
                if (isinstance(p, cst.Call) and isinstance(p.func, cst.Attribute) and p.func.attr.value == "parameters"
                        and dotted(p.func.value) == model_name):
                    return f"`{self.ctx.code(call.func)}({model_name}.parameters())`"
        return None

    # -- keras -------------------------------------------------------------------------------
    def _keras_freeze(self, assign: cst.Assign, name: cst.Name) -> None:
        facts = self.ctx.facts
        w = facts.where.get(assign)
        if w is None or _conditional(w):
            return
        value = facts.value_of(name, assign)
        if not isinstance(value, ModelValue):
            return
        compiled = fitted = None
        for meth in ("compile", "fit"):
            for call in facts.method_calls(meth):
                cw = facts.where.get(call)
                recv = call.func.value
                if (cw is not None and cw.order > w.order and cw.function is w.function
                        and isinstance(recv, cst.Name) and recv.value == name.value):
                    if meth == "compile":
                        compiled = compiled or call
                    else:
                        fitted = fitted or call
        if compiled is None or fitted is None:
            return
        for a in facts.index.get("Assign", ()):
            aw = facts.where[a]
            if aw.order > w.order and literal(a.value) is True and any(
                isinstance(t.target, cst.Attribute) and t.target.attr.value == "trainable" for t in a.targets
            ):
                return
        if facts.assigned_later(name.value, assign):
            return
        self.report(
            assign,
            f"`{name.value}.trainable = False` freezes the whole model, which is then compiled and trained with "
            "`fit`: no weight can change",
            hint="there are no trainable weights, the loss never moves; freeze only the body (e.g. "
            f"`{name.value}.layers[0].trainable = False`) or remove this line",
        )


#: methods that only an `nn.Module` has (a tensor has none of them)
_MODULE_METHODS = frozenset({"parameters", "named_parameters", "children", "named_children", "modules",
                             "named_modules", "state_dict", "load_state_dict", "register_forward_hook"})
#: the iterators over the submodules of a module: `(name, module)` pairs for the `named_` ones
_SUBMODULE_ITERATORS = {"children": False, "modules": False, "named_children": True, "named_modules": True}
#: torch.nn classes that are tensors (or hold tensors), not modules
_TENSOR_CLASSES = frozenset({"Parameter", "UninitializedParameter", "UninitializedBuffer", "ParameterList",
                             "ParameterDict", "Buffer"})


def _holds_parameters(facts, holder: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """``holder`` is a parameter or a module: the variable of a loop over `.parameters()` /
    `.named_parameters()` (also through `enumerate`), a `.weight` / `.bias`, or a module (:func:`_module_evidence`)."""
    if isinstance(holder, cst.Attribute) and holder.attr.value in ("weight", "bias"):
        return True
    w = facts.where.get(at)
    if isinstance(holder, cst.Name) and w is not None:
        for b in reversed(w.blocks):
            it = b.iter if isinstance(b, cst.For) else None
            while isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value in (
                    "list", "enumerate", "filter") and it.args:
                it = it.args[-1].value
            if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.func.attr.value in (
                    "parameters", "named_parameters"):
                second = _second_of_pair(b.target)
                var = _loop_param_name(b.target, it.func.attr.value) or (
                    _loop_param_name(second, "parameters") if second is not None else None)
                if var == holder.value:
                    return True
    return _module_evidence(facts, holder, at) is not None


def _module_evidence(facts, holder: cst.BaseExpression, at: cst.CSTNode) -> str | None:
    """Why ``holder`` (the object whose `.requires_grad` is set) is an `nn.Module` and not a tensor, or None:
    an element of `X.children()` / `X.modules()`; a model the dataflow knows (`from_pretrained`), or an
    `nn.Linear(...)`-like module assigned to it; or its uses in the file: a parameter under it
    (`holder.weight`, `holder.conv.weight`), a module-only method (`holder.parameters()`), a call
    `holder(x)`. A name or dotted path rooted at `self` is looked up in its own class only."""
    w = facts.where.get(at)
    if w is None:
        return None
    if isinstance(holder, cst.Name):
        for b in reversed(w.blocks):  # `for child in model.children(): child.requires_grad = False`
            if not isinstance(b, cst.For):
                continue
            it: cst.BaseExpression = b.iter
            tgt: cst.BaseExpression | None = b.target
            while True:  # `list(model.children())[:-1]`, `enumerate(model.children())`
                if isinstance(it, cst.Subscript):
                    it = it.value
                elif isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value in (
                        "list", "tuple", "reversed", "enumerate") and len(it.args) == 1:
                    if it.func.value == "enumerate":
                        tgt = _second_of_pair(tgt)
                    it = it.args[0].value
                else:
                    break
            meth = it.func.attr.value if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) else None
            if meth not in _SUBMODULE_ITERATORS:
                continue
            if _SUBMODULE_ITERATORS[meth]:
                tgt = _second_of_pair(tgt)
            if isinstance(tgt, cst.Name) and tgt.value == holder.value:
                return f"an element of `.{meth}()`"
        v = facts.value_of(holder, at)
        if _torch_model(v):
            return f"a `{v.cls}` model"
    # `model.base_model`, `model.get_input_embeddings()`: the modules a transformers model hands out
    if isinstance(holder, cst.Attribute) and holder.attr.value == "base_model" and _torch_model(
            facts.value_of(holder.value, at)):
        return "the base model of a transformers model"
    if (isinstance(holder, cst.Call) and isinstance(holder.func, cst.Attribute) and not holder.args
            and holder.func.attr.value in _MODULE_GETTERS and _torch_model(facts.value_of(holder.func.value, at))):
        return f"returned by `.{holder.func.attr.value}()`"
    path = dotted(holder)
    if path is None:
        return None
    root = facts.module
    head = path.split(".", 1)[0]
    if head == "self":
        root = w.inside(cst.ClassDef)
        if root is None:
            return None
    elif w.function is not None and head in facts.bindings.get(w.function, {}):
        root = w.function  # a local name: its uses in its own function
    uses = _dotted_uses(facts, root)
    for name, value in uses["assigned"].get(path, ()):
        if _constructs_module(facts, value, name):
            return f"assigned `{facts.module.code_for_node(value.func)}(...)`"
    prefix = path + "."
    for d in uses["attributes"]:
        if d.startswith(prefix):
            last = d.rsplit(".", 1)[1]
            if last in ("weight", "bias"):
                return f"it holds `{d}`"
            if d.count(".") == path.count(".") + 1 and last in _MODULE_METHODS:
                return f"it has `.{last}()`"
    if path in uses["called"]:
        return "it is called"
    return None


#: the methods of a transformers model that return one of its modules
_MODULE_GETTERS = frozenset({"get_input_embeddings", "get_output_embeddings", "get_encoder", "get_decoder"})


def _torch_model(v) -> bool:
    """A PyTorch model loaded with `from_pretrained` (not TensorFlow, Flax or Keras)."""
    return (isinstance(v, ModelValue) and v.pretrained and not v.tf and "Flax" not in v.cls
            and not v.qualname.startswith("keras."))


def _constructs_module(facts, value, at) -> bool:
    """`nn.Linear(...)`, a torchvision model, a transformers model loaded with `from_pretrained`."""
    if not isinstance(value, cst.Call):
        return False
    qn = facts.callee(value) or ""
    if qn.startswith("torch.nn.") and qn.count(".") == 2:
        short = qn.rsplit(".", 1)[1]
        return short[:1].isupper() and short not in _TENSOR_CLASSES
    if qn.startswith("torchvision.models.") or qn == "timm.create_model":
        return True
    return _torch_model(facts.value_of(value, at) if at in facts.where else None)


def _dotted_uses(facts, root: cst.CSTNode) -> dict:
    """The dotted paths used under ``root``: every attribute chain, the chains called, and what each chain
    is assigned (one local walk per root, memoised)."""
    memo = _DOTTED_USES.setdefault(facts, {})
    key = id(root)
    if key not in memo:
        attributes: set[str] = set()
        called: set[str] = set()
        assigned: dict[str, list] = {}
        for n in iter_nodes(root, (cst.Attribute, cst.Call, cst.Assign)):
            if isinstance(n, cst.Attribute):
                d = dotted(n)
                if d is not None:
                    attributes.add(d)
            elif isinstance(n, cst.Call):
                d = dotted(n.func)
                if d is not None:
                    called.add(d)
            else:
                for t in n.targets:
                    d = dotted(t.target)
                    if d is not None:
                        assigned.setdefault(d, []).append((n, n.value))
        memo[key] = {"attributes": attributes, "called": called, "assigned": assigned}
    return memo[key]


def _both_branches_freeze(w, loop: cst.For, assign: cst.Assign, var: str) -> str | None:
    """"body" / "else" when the innermost `if` inside ``loop`` around ``assign`` has an `else` and both branches
    set `var.requires_grad = False` (which branch ``assign`` is in); None otherwise."""
    inner = list(w.blocks[w.blocks.index(loop) + 1:]) if loop in w.blocks else []
    if len(inner) != 1 or not isinstance(inner[0], cst.If) or not isinstance(inner[0].orelse, cst.Else):
        return None
    node = inner[0]

    def freezes(block) -> bool:
        for a in iter_nodes(block, (cst.Assign,)):
            for t in a.targets:
                tg = t.target
                if (isinstance(tg, cst.Attribute) and tg.attr.value == "requires_grad" and isinstance(tg.value, cst.Name)
                        and tg.value.value == var and literal(a.value) is False):
                    return True
        return False

    if node.orelse is None or not (freezes(node.body) and freezes(node.orelse)):
        return None
    return "else" if any(a is assign for a in iter_nodes(node.orelse, (cst.Assign,))) else "body"


def _conditional(w, loop: cst.For | None = None, inner_ok: bool = False) -> bool:
    """The statement may not run: an `if` (other than the `__main__` guard), a `while`, or a loop other
    than ``loop`` encloses it (``inner_ok``: not counting the blocks inside ``loop``, nor an `if` around
    ``loop`` that only decides whether to freeze: a configuration flag)."""
    seen_loop = False
    for b in w.blocks:
        if b is loop:
            seen_loop = True
            continue
        if inner_ok and (seen_loop or (isinstance(b, cst.If) and _flag_test(b.test))):
            continue
        if isinstance(b, (cst.While, cst.For)):
            return True
        if isinstance(b, cst.If) and "__main__" not in cst.Module([]).code_for_node(b.test):
            return True
    return False


def _flag_test(test: cst.BaseExpression) -> bool:
    """`if opt.fix_encoder:` / `if args.freeze:`: an option read from a configuration object."""
    return isinstance(test, cst.Attribute) and isinstance(test.value, (cst.Name, cst.Attribute))


def _second_of_pair(target: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """`p` of a loop target `name, p` (`named_parameters()`, `enumerate(...)`); None for any other target."""
    return target.elements[1].value if isinstance(target, cst.Tuple) and len(target.elements) == 2 else None


def _loop_param_name(target: cst.BaseExpression, meth: str) -> str | None:
    if meth == "parameters" and isinstance(target, cst.Name):
        return target.value
    v = _second_of_pair(target) if meth == "named_parameters" else None
    return v.value if isinstance(v, cst.Name) else None


def _unfreezes(facts) -> bool:
    """Anything in the file sets `requires_grad = True` / `requires_grad_(True)`."""
    for a in facts.index.get("Assign", ()):
        if literal(a.value) is not False and any(
            isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad" for t in a.targets
        ):
            return True
    for c in facts.method_calls("requires_grad_"):
        arg = argument(c, "requires_grad", 0)
        if arg is None or literal(arg) is not False:
            return True
    return False


def _attribute_assigned_later(facts, name: str, at: cst.CSTNode) -> bool:
    """`model.classifier = nn.Linear(...)` after `at`: a new, trainable submodule."""
    order = facts.where[at].order
    for a in facts.index.get("Assign", ()):
        if facts.where[a].order <= order:
            continue
        for t in a.targets:
            tgt = t.target
            while isinstance(tgt, cst.Attribute):
                if dotted(tgt.value) == name:
                    return True
                tgt = tgt.value
    return False


@register
class ModelInitCalled(Rule):
    """`Trainer(model_init=model_init())`: a model is passed where the factory function is expected."""

    code = "TL306"
    name = "model-init-called"
    severity = Severity.ERROR
    measured_from = 4
    fix = Applicability.SAFE
    gate = (("model_init",), TRAINER_WORDS)

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        if not facts.is_trainer_class(node.func, node):
            return
        arg = keyword(node, "model_init")
        if arg is None or not isinstance(arg.value, cst.Call):
            return
        inner = arg.value
        if not self._returns_model(inner, node):
            return
        fix = None
        hint = "pass the function itself, not its result"
        if not inner.args:
            fn = self.ctx.code(inner.func)
            hint = f"pass the function: `model_init={fn}`"
            fix = self.ctx.fix(Applicability.SAFE, f"pass `{fn}`", self.ctx.replace(inner, fn))
        self.report(
            inner,
            f"`model_init={_short(self.ctx.code(inner))}` passes a model, not a function: the Trainer fails with "
            '"RuntimeError: model_init should have 0 or 1 argument."',
            hint="the Trainer calls `model_init()` itself, once per run and per hyperparameter trial; " + hint,
            fix=fix,
        )

    def _returns_model(self, call: cst.Call, at: cst.CSTNode) -> bool:
        facts = self.ctx.facts
        if isinstance(facts.value_of(call, at), ModelValue):
            return True
        fn = facts.function_def(call.func, at)
        if not isinstance(fn, cst.FunctionDef):
            return False
        found = False
        for ret in iter_nodes(fn.body, (cst.Return,)):
            w = facts.where.get(ret)
            if w is None or w.function is not fn or ret.value is None:
                continue
            v = facts.value_of(ret.value, ret)
            if isinstance(v, ModelValue):
                found = True
            else:
                return False  # something else on some path (a closure, a partial): not sure
        return found


_POLICY_SETTERS = frozenset({
    "keras.mixed_precision.set_global_policy", "keras.mixed_precision.experimental.set_policy",
    "keras.mixed_precision.set_policy", "keras.config.set_dtype_policy",
})


@register
class LateMixedPrecision(Rule):
    """The Keras mixed-precision policy is set after the model is built: the model keeps float32."""

    code = "TL307"
    name = "late-mixed-precision"
    severity = Severity.WARNING
    measured_from = 4
    #: a policy setter, and a model built before it: `Sequential`/`Model`, or a `TF*` class's `from_pretrained`
    gate = (("set_global_policy", "set_policy", "set_dtype_policy"), ("Sequential", "Model", "TF*"))

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        if facts.callee(node) not in _POLICY_SETTERS:
            return
        pol = facts.constant(argument(node, "policy", 0), node)
        if not isinstance(pol, str) or pol in ("float32", "float64"):
            return  # premise 1: a lower-precision policy, named by the source
        w = facts.where[node]
        before: list[cst.Call] = []
        after: list[cst.Call] = []
        for call in facts.index.get("Call", ()):
            cw = facts.where.get(call)
            if cw is None or cw.function is not w.function or call is node:
                continue
            if not self._builds_model(call):
                continue
            (before if cw.order < w.order else after).append(call)
        if not before or after:
            return
        model = before[-1]
        self.report(
            node,
            f"the mixed-precision policy is set after the model is built (`{_short(self.ctx.code(model.func))}(...)` "
            "above): that model keeps computing in float32",
            hint="a policy applies only to layers created afterwards: no speed-up and no memory saving; set the "
            "policy first, at the top of the script, before any model or layer is created",
        )

    def _builds_model(self, call: cst.Call) -> bool:
        facts = self.ctx.facts
        qn = facts.callee(call) or ""
        if qn in ("keras.Sequential", "keras.models.Sequential", "keras.Model", "keras.models.Model"):
            return True
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("from_pretrained", "from_config"):
            owner = facts.qualname(call.func.value) or ""
            cls = owner.rsplit(".", 1)[-1]
            return owner.startswith("transformers.") and cls.startswith("TF") and knowledge.head_of(cls) is not None
        return False


# ---------------------------------------------------------------------------------------------
# TL312: a softmax over one unit.

#: torch layers that keep a 2-D batch 2-D (a `Flatten()` before them makes it 2-D)
_RANK_KEEPING = frozenset({"Linear", "LazyLinear", "ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "SELU", "GELU",
                           "SiLU", "Sigmoid", "Tanh", "Dropout", "AlphaDropout", "BatchNorm1d", "LayerNorm", "Identity"})


def _softmax_dim(facts, node: cst.CSTNode | None, framework: str) -> int | None:
    """The axis a softmax layer or call normalises over, when the source fixes it: Keras' `Activation("softmax")`
    / `activation="softmax"` (the last axis) or `Softmax(axis=...)`; torch's `dim=` (None when not given)."""
    if not isinstance(node, cst.Call):
        return None
    if framework == "keras":
        short = (facts.callee(node) or "").rsplit(".", 1)[-1]
        if short != "Softmax":
            return -1
        axis = facts.constant(argument(node, "axis", 0), node) if argument(node, "axis", 0) is not None else -1
        return axis if isinstance(axis, int) else None
    q = facts.callee(node) or ""
    if q.rsplit(".", 1)[-1] == "Softmax" or (isinstance(node.func, cst.Attribute) and q == ""):
        dim = argument(node, "dim", 0)  # `nn.Softmax(dim)`, `x.softmax(dim)`
    else:
        dim = argument(node, "dim", 1)  # `F.softmax(x, dim)`, `torch.softmax(x, dim)`
    value = facts.constant(dim, node) if dim is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@register
class SoftmaxOverOneUnit(Rule):
    """A softmax over a single output unit: its output is always 1.0."""

    code = "TL312"
    name = "softmax-over-one-unit"
    severity = Severity.ERROR
    default = False
    measured_from = 4
    #: the one unit is a Keras `Dense` or a torch `Linear` of the file
    gate = (("Dense", "Linear", "LazyLinear"),)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._reported: set[int] = set()
        self._softmax_names: set[str] | None = None

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        q = facts.callee(node) or ""
        short = q.rsplit(".", 1)[-1]
        p = program(facts)
        if q.startswith("keras.layers.") and short == "Dense":
            m = p.module(node, node)  # premises 1-3: `Dense(1, activation="softmax")`, over its own last axis
            units = m.units if m is not None else None
            if units is None:
                given_units = facts.constant(argument(node, "units", 0), node)
                units = given_units if isinstance(given_units, int) and not isinstance(given_units, bool) else None
            if m is not None and m.output is Output.PROBABILITIES and units == 1:
                self._report(node, f"`{_short(self.ctx.code(node))}`")
        elif q in ("keras.Sequential", "keras.models.Sequential", "torch.nn.Sequential"):
            m = p.module(node, node)
            if m is not None and m.layers is not None:
                self._check_layers(m.layers, m.framework)
        elif q in ("torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax") or (
                isinstance(node.func, cst.Attribute) and node.func.attr.value == "softmax" and not q
                and isinstance(p.of(node.func.value, node), Tensor)):  # `x.softmax(-1)` (not `self.softmax(x)`)
            t = p.of(node, node)
            if isinstance(t, Tensor) and t.units == 1 and _softmax_dim(facts, node, "torch") == -1:
                self._report(node, f"`{_short(self.ctx.code(node))}`")
        elif not q.startswith(("torch.", "keras.")) and node.args and not node.args[0].star and self._may_be_softmax(
                node.func):
            # a softmax layer called on a tensor: `Activation("softmax")(x)`, `self.softmax(x)`
            layer = p.module(node.func, node)
            if layer is None or layer.layers is None or len(layer.layers) != 1:
                return
            only = layer.layers[0]
            if only.output is not Output.PROBABILITIES or only.name not in WIDTH_KEEPING:
                return
            t = p.of(node, node)
            if isinstance(t, Tensor) and t.units == 1 and _softmax_dim(facts, only.node, layer.framework) == -1:
                self._report(node, f"`{_short(self.ctx.code(node))}`")

    def _may_be_softmax(self, func: cst.BaseExpression) -> bool:
        """``func`` is a softmax layer made in the call itself, or a name / attribute the file binds to one."""
        facts = self.ctx.facts
        if isinstance(func, cst.Call):
            return (facts.callee(func) or "").rsplit(".", 1)[-1] in ("Activation", "Softmax")
        if self._softmax_names is None:
            self._softmax_names = set()
            for a in facts.index.get("Assign", ()):
                if isinstance(a.value, cst.Call) and (facts.callee(a.value) or "").rsplit(".", 1)[-1] in (
                        "Activation", "Softmax"):
                    for t in a.targets:
                        target = t.target
                        if isinstance(target, (cst.Name, cst.Attribute)):
                            self._softmax_names.add(target.value if isinstance(target, cst.Name) else target.attr.value)
        name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
        return name in self._softmax_names

    def _check_layers(self, layers: tuple, framework: str) -> None:
        """A softmax layer whose input has one unit: the layer before it (through width-keeping ones) has
        `units == 1`, and the softmax normalises the last axis (torch: `dim=-1`, or `dim=1` on the 2-D batch a
        `Flatten()` earlier in the same stack makes)."""
        width: int | None = None
        flat = False
        for layer in layers:
            if layer.output is Output.PROBABILITIES and layer.name in WIDTH_KEEPING and width == 1:
                dim = _softmax_dim(self.ctx.facts, layer.node, framework)
                if dim == -1 or (dim == 1 and flat and framework == "torch"):
                    self._report(layer.node, f"`{_short(self.ctx.code(layer.node))}` after a layer of one unit")
            if layer.units is not None:
                width = layer.units
            elif layer.name not in WIDTH_KEEPING:
                width = None
            if framework == "torch":
                flat = (layer.name == "Flatten" and not (isinstance(layer.node, cst.Call) and layer.node.args)) or (
                    flat and layer.name in _RANK_KEEPING)

    def _report(self, node: cst.CSTNode | None, what: str) -> None:
        if node is None or id(node) in self._reported:
            return
        self._reported.add(id(node))
        self.report(
            node,
            f"{what}: a softmax over a single unit is always 1.0, so the output never depends on the input and "
            "nothing learns",
            hint="softmax normalises over the classes axis; with one unit every sample gets exactly 1.0 (the loss "
            "and the predictions are constant, gradients are zero). For a binary output use one unit with "
            "`sigmoid` (and binary cross-entropy), or two units with softmax (and categorical cross-entropy)",
        )

"""TL6xx: evaluation and metrics — what `compute_metrics` receives and returns."""

from __future__ import annotations

import re

import libcst as cst

from trainlint import codemod

#: calls after which predictions are class ids (or at least not raw logits any more)
from trainlint.facts import (
    TRAINER_WORDS,
    TRAINING_ARGS_CLASSES,
    TRAINING_ARGS_WORDS,
    UNKNOWN,
    MetricValue,
    TrainerValue,
    argument,
    has_star_kwargs,
    iter_calls,
    iter_nodes,
    keyword,
    literal,
)
from trainlint.facts.expr import dotted, short_code
from trainlint.facts.models import trainer_arguments
from trainlint.facts.flow import flow
from trainlint.facts.losses import loss_site
from trainlint.facts.objects import Output
from trainlint.facts.scores import scores
from trainlint.facts.steps import pass_of, trains
from trainlint.findings import Applicability, Severity
from trainlint.rule import Rule, register

_TRANSFORMS = frozenset({
    "argmax", "argmin", "argsort", "topk", "max", "round", "rint", "floor", "ceil", "where", "sigmoid",
    "expit", "squeeze", "ravel", "flatten", "decode", "batch_decode", "astype", "greater", "int", "postprocess",
    "postprocess_text", "map", "apply", "vectorize", "threshold", "predict",
})
#: sklearn-style metric functions whose predictions must be class ids: name -> index of y_pred
_SKLEARN = {
    "accuracy_score": 1, "f1_score": 1, "precision_score": 1, "recall_score": 1, "matthews_corrcoef": 1,
    "classification_report": 1, "confusion_matrix": 1, "precision_recall_fscore_support": 1,
    "balanced_accuracy_score": 1, "cohen_kappa_score": 1,
}
_REGRESSION_METRICS = ("mse", "mae", "pearsonr", "spearmanr", "r_squared", "stsb", "rmse")
#: `evaluate` / `datasets` metrics whose `predictions` are class ids (GLUE and SuperGLUE but their regression task)
_CLASS_ID_METRICS = frozenset({"accuracy", "f1", "precision", "recall", "matthews_correlation", "glue", "super_glue",
                               "xnli", "confusion_matrix"})


def _short(code: str) -> str:
    return code if len(code) <= 40 else code[:37] + "..."


def func_name(func: cst.BaseExpression) -> str | None:
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None


def compute_metrics_functions(ctx):
    """(function node, the call that registers it) for every `compute_metrics` given to a Trainer
    (without a `preprocess_logits_for_metrics`) or to `KerasMetricCallback(metric_fn=...)`."""
    facts = ctx.facts
    for call in facts.trainer_calls():
        if argument(call, "preprocess_logits_for_metrics") is not None:
            continue
        fn = facts.function_def(argument(call, "compute_metrics"), call)
        if fn is not None:
            yield fn, call
    for call in facts.index.get("Call", ()):
        qn = facts.callee(call) or ""
        if qn.endswith("KerasMetricCallback"):
            fn = facts.function_def(argument(call, "metric_fn", 0), call)
            if fn is not None:
                yield fn, call


@register
class MetricsWithoutArgmax(Rule):
    """`compute_metrics` hands the raw logits to a metric that expects class ids."""

    code = "TL601"
    name = "metrics-without-argmax"
    severity = Severity.ERROR
    measured_from = 4
    probe = "Runs one evaluation batch through the model and the user's `compute_metrics`."
    #: a `compute_metrics=` given to a transformers Trainer, or a `*KerasMetricCallback`; inside it, a metric
    #: `.compute(predictions=...)` or an sklearn metric (the names of `_SKLEARN`)
    gate = (
        ("compute_metrics", "*KerasMetricCallback"),
        (*TRAINER_WORDS, "*KerasMetricCallback"),
        ("transformers", "*KerasMetricCallback"),
        ("predictions", *_SKLEARN),
        ("compute", *_SKLEARN),
    )
    fix = Applicability.UNSAFE

    def finish(self) -> None:
        seen = set()
        for fn, _ in compute_metrics_functions(self.ctx):
            if fn in seen or not isinstance(fn, cst.FunctionDef):
                continue
            seen.add(fn)
            self._check(fn)

    def _check(self, fn: cst.FunctionDef) -> None:
        params = fn.params.params
        if not params:
            return
        arg = params[0].name.value
        # any transformation or comparison anywhere: trust the author
        for c in iter_calls(fn.body):
            name = c.func.attr.value if isinstance(c.func, cst.Attribute) else c.func.value if isinstance(c.func, cst.Name) else None
            if name in _TRANSFORMS:
                return
        if next(iter_nodes(fn.body, (cst.Comparison, cst.For, cst.ListComp, cst.GeneratorExp)), None) is not None:
            return
        preds = self._prediction_names(fn, arg)
        where = self.ctx.facts.where
        # in document order: the first metric call that gets the logits is the one reported
        for c in sorted(iter_calls(fn.body), key=lambda n: where[n].order if n in where else 0):
            target = self._metric_prediction_arg(c, fn)
            if target is None:
                continue
            if (isinstance(target, cst.Name) and target.value in preds) or self._is_raw_predictions(target, arg):
                func = c.func.attr.value if isinstance(c.func, cst.Attribute) else getattr(c.func, "value", "")
                error = ("ValueError: Classification metrics can't handle a mix of binary and "
                         "continuous-multioutput targets" if func in _SKLEARN
                         else "Predictions and/or references don't match the expected format")
                self.report(
                    c,
                    f"`{fn.name.value}` passes the raw logits (`{_short(self.ctx.code(target))}`) to a metric that "
                    "expects class ids: the first evaluation fails",
                    hint=f"the logits have shape (batch, num_labels); evaluation fails at the end of the epoch with "
                    f"\"{error}\". Take the class first: `{self.ctx.code(target)} = np.argmax("
                    f"{self.ctx.code(target)}, axis=-1)`",
                    fix=self._fix(target),
                )
                return

    def _fix(self, target: cst.BaseExpression):
        """Wrap the predictions handed to the metric in `np.argmax(..., axis=-1)` (unsafe: a model that
        returns a tuple of arrays, or a regression head, needs something else)."""
        got = codemod.ensure_name(self.ctx, "numpy.argmax", "import numpy as np", "np.argmax")
        if got is None:
            return None
        argmax, add = got
        new = f"{argmax}({self.ctx.code(target)}, axis=-1)"
        return self.ctx.fix(Applicability.UNSAFE, f"Pass `{new}` to the metric",
                            self.ctx.replace(target, new), *([add] if add is not None else []))

    @staticmethod
    def _is_raw_predictions(expr: cst.BaseExpression, arg: str) -> bool:
        # eval_pred.predictions / eval_pred[0]
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == arg:
            return expr.attr.value in ("predictions", "logits")
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
            sl = expr.slice[0].slice
            first = isinstance(sl, cst.Index) and isinstance(sl.value, cst.Integer) and sl.value.value == "0"
            if isinstance(expr.value, cst.Name) and expr.value.value == arg:
                return first
            # eval_pred.predictions[0]: the logits when the model returns a tuple
            return first and MetricsWithoutArgmax._is_raw_predictions(expr.value, arg)
        if isinstance(expr, cst.IfExp):
            # `p.predictions[0] if isinstance(p.predictions, tuple) else p.predictions`
            return MetricsWithoutArgmax._is_raw_predictions(expr.body, arg) and \
                MetricsWithoutArgmax._is_raw_predictions(expr.orelse, arg)
        return False

    def _prediction_names(self, fn: cst.FunctionDef, arg: str) -> set[str]:
        names: set[str] = set()
        for node in iter_nodes(fn.body, (cst.Assign,)):
            value = node.value
            for t in node.targets:
                tgt = t.target
                if isinstance(tgt, (cst.Tuple, cst.List)) and isinstance(value, cst.Name) and value.value == arg:
                    first = tgt.elements[0].value if tgt.elements else None
                    if isinstance(first, cst.Name):
                        names.add(first.value)
                elif isinstance(tgt, cst.Name) and self._is_raw_predictions(value, arg):
                    names.add(tgt.value)
        return names

    def _metric_prediction_arg(self, call: cst.Call, fn) -> cst.BaseExpression | None:
        """Premise 3: the predictions argument of a metric known to expect class ids: an `evaluate` /
        `datasets` metric loaded by the name of a classification metric, or a scikit-learn classification metric."""
        facts = self.ctx.facts
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "compute":
            metric = facts.value_of(func.value, call if call in facts.where else None)
            if not isinstance(metric, MetricValue) or metric.call is None:
                return None
            spec = [facts.constant(a.value, metric.call) for a in metric.call.args[:2]]
            name = spec[0].rsplit("/", 1)[-1].lower() if spec and isinstance(spec[0], str) else None
            if name not in _CLASS_ID_METRICS or any(r in " ".join(map(str, spec)).lower() for r in _REGRESSION_METRICS):
                return None
            return argument(call, "predictions")
        name = func_name(func)
        if (facts.qualname(func) or "").startswith("sklearn.") and name is not None and name in _SKLEARN:
            return argument(call, "y_pred", _SKLEARN[name])
        return None


@register
class ComputeMetricsError(Rule):
    """(probe) `compute_metrics` raises, or returns no dict, on one real evaluation batch."""

    code = "TL607"
    name = "compute-metrics-error"
    severity = Severity.ERROR
    probe = "Runs one evaluation batch through the model and `compute_metrics`, before any training."


# ---------------------------------------------------------------------------------------------
# What the metric functions return (TL602, TL603), predictions vs labels (TL604), choosing the best
# checkpoint (TL605, TL606).


_EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit"})


def _statements(block) -> list:
    """The statements of an indented block or a one-line suite (`if x: return 1`)."""
    if isinstance(block, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=block.body)]
    return list(getattr(block, "body", ()))


def can_complete(stmts) -> bool:
    """Can execution run past the end of these statements (a path with no `return`/`raise`)?"""
    return all(_stmt_completes(s) for s in stmts)


def _stmt_completes(s) -> bool:
    if isinstance(s, cst.SimpleStatementLine):
        for small in s.body:
            if isinstance(small, (cst.Return, cst.Raise)):
                return False
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                f = small.value.func
                name = f.value if isinstance(f, cst.Name) else (
                    f"{f.value.value}.{f.attr.value}" if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) else "")
                if name in _EXITS:
                    return False
            if isinstance(small, cst.Assert) and literal(small.test) is False:
                return False
        return True
    if isinstance(s, cst.If):
        if can_complete(_statements(s.body)):
            return True
        if s.orelse is None:
            return True
        if isinstance(s.orelse, cst.If):
            return _stmt_completes(s.orelse)
        return can_complete(_statements(s.orelse.body))
    if isinstance(s, cst.While):
        forever = literal(s.test) is True or (isinstance(s.test, cst.Integer) and s.test.value != "0")
        if forever and next(iter_nodes(s.body, (cst.Break,)), None) is None:
            return False
        return True
    if isinstance(s, cst.With):
        return can_complete(_statements(s.body))
    if isinstance(s, cst.Try):
        if s.finalbody is not None and not can_complete(_statements(s.finalbody.body)):
            return False
        body = can_complete(_statements(s.body)) and (s.orelse is None or can_complete(_statements(s.orelse.body)))
        return body or any(can_complete(_statements(h.body)) for h in s.handlers)
    if isinstance(s, cst.Match):
        wildcard = any(isinstance(c.pattern, cst.MatchAs) and c.pattern.pattern is None and c.guard is None
                       for c in s.cases)
        return not wildcard or any(can_complete(_statements(c.body)) for c in s.cases)
    return True


def returns_of(facts, fn: cst.FunctionDef) -> list[cst.Return]:
    return [r for r in facts.index.get("Return", ()) if facts.where[r].function is fn]


def none_paths(facts, fn: cst.FunctionDef) -> tuple[list[cst.CSTNode], bool]:
    """(where the function returns None: bare/`None` returns, or its name when it can fall off the end;
    whether it returns a value on some other path). Generators are left alone."""
    if next(iter_nodes(fn.body, (cst.Yield,)), None) is not None:
        return [], True
    returns = returns_of(facts, fn)
    nodes: list[cst.CSTNode] = [r for r in returns if r.value is None or literal(r.value) is None]
    with_value = any(r.value is not None and literal(r.value) is not None for r in returns)
    if can_complete(_statements(fn.body)):
        nodes.append(fn.name)
    return nodes, with_value


def metric_functions(facts, param: str):
    """(function, registering call) for every function given as `param` to a Trainer."""
    for call in facts.trainer_calls():
        fn = facts.function_def(argument(call, param), call)
        if isinstance(fn, cst.FunctionDef):
            yield fn, call


class _ReturnsNone(Rule):
    """Base of TL602/TL603: a metric hook that returns None on some path."""

    param: str

    def symptom(self) -> str:
        raise NotImplementedError

    def hint(self) -> str:
        raise NotImplementedError

    def functions(self):
        yield from metric_functions(self.ctx.facts, self.param)

    def role(self, call: cst.Call) -> str:
        """What the function is to the call that registers it."""
        return f"the Trainer's `{self.param}`"

    def finish(self) -> None:
        seen = set()
        for fn, call in self.functions():
            if fn in seen:
                continue
            seen.add(fn)
            nodes, with_value = none_paths(self.ctx.facts, fn)
            if not nodes:
                continue
            name = fn.name.value
            first = nodes[0]
            if not with_value:
                where = "returns nothing"
                severity = Severity.ERROR
            elif first is fn.name:
                where = "can reach its end without a `return` (None)"
                severity = Severity.WARNING
            else:
                where = f"returns None on some path (`{_short(self.ctx.code(first).strip())}`)"
                severity = Severity.WARNING
            role = self.role(call)
            shown = f"`{name}`" if name == self.param or name == role.strip("`") else f"`{name}` ({role})"
            self.report(first, f"{shown} {where}: {self.symptom()}", hint=self.hint(), severity=severity)


@register
class MetricsReturnsNone(_ReturnsNone):
    """`compute_metrics` returns nothing (None) on some path."""

    code = "TL602"
    name = "metrics-returns-none"
    severity = Severity.ERROR
    measured_from = 4
    probe = "Runs one evaluation batch through `compute_metrics` and checks that it returns a dict."
    #: a `compute_metrics=` given to a transformers Trainer, or a `*KerasMetricCallback`
    gate = (
        ("compute_metrics", "*KerasMetricCallback"),
        (*TRAINER_WORDS, "*KerasMetricCallback"),
        ("transformers", "*KerasMetricCallback"),
    )
    param = "compute_metrics"

    def functions(self):
        yield from metric_functions(self.ctx.facts, self.param)
        for call in self.ctx.facts.index.get("Call", ()):
            if (self.ctx.facts.callee(call) or "").endswith("KerasMetricCallback"):
                fn = self.ctx.facts.function_def(argument(call, "metric_fn", 0), call)
                if isinstance(fn, cst.FunctionDef):
                    yield fn, call

    def role(self, call: cst.Call) -> str:
        if (self.ctx.facts.callee(call) or "").endswith("KerasMetricCallback"):
            return f"the `metric_fn` of `{self.ctx.code(call.func)}`"
        return super().role(call)

    def symptom(self) -> str:
        return "the first evaluation fails"

    def hint(self) -> str:
        return ("it fails after predicting the whole eval set (\"TypeError: 'NoneType' object does not support item "
                "assignment\"; Keras: \"metric_fn should return a dict\"); return a dict of metric values on every "
                "path, e.g. `return {\"accuracy\": acc}`")


@register
class PreprocessLogitsReturnsNone(_ReturnsNone):
    """`preprocess_logits_for_metrics` returns None on some path."""

    code = "TL603"
    name = "preprocess-logits-returns-none"
    severity = Severity.ERROR
    measured_from = 4
    probe = "Runs one evaluation batch through `preprocess_logits_for_metrics` and checks what it returns."
    #: a `preprocess_logits_for_metrics=` given to a transformers Trainer
    gate = (("preprocess_logits_for_metrics",), TRAINER_WORDS, ("transformers",))
    param = "preprocess_logits_for_metrics"

    def symptom(self) -> str:
        return "`compute_metrics` receives `predictions=None`"

    def hint(self) -> str:
        return ("the Trainer stores None instead of the predictions, and evaluation fails (or reports metrics of "
                "nothing); return the processed logits on every path, e.g. `return logits.argmax(dim=-1)`")


# -- TL604 -------------------------------------------------------------------------------------

_ARGMAX = frozenset({"argmax", "softmax", "sigmoid", "log_softmax", "topk", "argsort"})
#: sklearn-style metrics: name -> position of y_pred
_Y_PRED_AT = {"accuracy_score": 1, "f1_score": 1, "precision_score": 1, "recall_score": 1,
              "classification_report": 1, "confusion_matrix": 1, "matthews_corrcoef": 1,
              "balanced_accuracy_score": 1, "cohen_kappa_score": 1, "precision_recall_fscore_support": 1}


@register
class PredictLabelsAsPredictions(Rule):
    """`trainer.predict(...)[1]` / `.label_ids` (the gold labels) used as the model's predictions."""

    code = "TL604"
    name = "predict-labels-as-predictions"
    severity = Severity.ERROR
    measured_from = 4
    #: `<trainer>.predict(...)` on a transformers Trainer (the Trainer may come from a helper: no group for it)
    gate = (("predict",),)

    def _is_predict_output(self, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> bool:
        """Premise 1: ``expr`` holds what a transformers `Trainer`'s `predict(...)` returns."""
        facts = self.ctx.facts
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "predict":
            return isinstance(facts.value_of(expr.func.value, at), TrainerValue)
        if isinstance(expr, cst.Name) and depth < 3:
            b = facts.lookup(expr.value, at)
            if b is not None and isinstance(b.value, cst.Call):
                return self._is_predict_output(b.value, b.value if b.value in facts.where else at, depth + 1)
        return False

    def _labels(self, expr: cst.BaseExpression | None, at: cst.CSTNode, depth: int = 0) -> bool:
        """`out.label_ids` / `out[1]` / the second name of `preds, labels, _ = trainer.predict(...)`, where `out`
        is a `trainer.predict(...)` result (also through a name): the gold labels."""
        if expr is None:
            return False
        facts = self.ctx.facts
        if isinstance(expr, cst.Attribute) and expr.attr.value == "label_ids":
            return self._is_predict_output(expr.value, at)
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
            sl = expr.slice[0].slice
            if isinstance(sl, cst.Index) and literal(sl.value) == 1:
                return self._is_predict_output(expr.value, at)
        if isinstance(expr, cst.Name) and depth < 2:
            b = facts.lookup(expr.value, at)
            if b is None:
                return False
            if b.value is None:
                unpacked = facts.unpacked_from(b)
                return unpacked is not None and unpacked[1] == 1 and self._is_predict_output(
                    unpacked[0], unpacked[0] if unpacked[0] in facts.where else at)
            if isinstance(b.value, cst.BaseExpression) and not isinstance(b.value, cst.Name):
                return self._labels(b.value, b.value if b.value in facts.where else at, depth + 1)
        return False

    def _report(self, node: cst.CSTNode, how: str) -> None:
        self.report(
            node,
            f"{how} the gold labels (`label_ids`, item 1 of `trainer.predict(...)`), not the model's predictions",
            hint="metrics computed on them are perfect (100% accuracy) and say nothing about the model; take the "
            "predictions from `output.predictions` (item 0; logits: apply `argmax(-1)`) and compare them with "
            "`output.label_ids`",
        )

    def visit_Call(self, node: cst.Call) -> None:
        """Premise 2: the labels are used as predictions: put through `argmax`-like calls, given as
        `predictions=` / `y_pred=`, or as the `y_pred` of a scikit-learn metric."""
        f = node.func
        short = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else None
        if short in _ARGMAX:
            target = argument(node, "input", 0) if isinstance(f, cst.Name) or self.ctx.facts.qualname(f) else None
            if target is None and isinstance(f, cst.Attribute) and not self.ctx.facts.qualname(f):
                target = f.value  # labels.argmax(-1)
            if target is not None and self._labels(target, node):
                self._report(target, f"`{short}` is applied to")
            return
        for kw in ("predictions", "y_pred"):
            arg = keyword(node, kw)
            if arg is not None and self._labels(arg.value, node):
                self._report(arg.value, f"`{kw}=` is given")
                return
        if short in _Y_PRED_AT and (self.ctx.facts.qualname(f) or "").startswith("sklearn."):
            target = argument(node, "y_pred", _Y_PRED_AT[short])
            if target is not None and self._labels(target, node):
                self._report(target, f"`{short}` gets as `y_pred`")


# -- TL605 / TL606 -----------------------------------------------------------------------------



def _strategy(facts, expr: cst.BaseExpression | None, at: cst.CSTNode, default: str):
    if expr is None:
        return default
    v = facts.constant(expr, at)
    if isinstance(v, str):
        return v.lower()
    if isinstance(expr, cst.Attribute) and (facts.qualname(expr) or "").split(".")[-2:-1] in (
            ["IntervalStrategy"], ["SaveStrategy"]):
        return expr.attr.value.lower()
    return UNKNOWN


@register
class BestModelStrategyMismatch(Rule):
    """`load_best_model_at_end=True` with evaluation and save strategies (or steps) that do not line up."""

    code = "TL605"
    name = "best-model-strategy-mismatch"
    severity = Severity.ERROR
    measured_from = 4
    gate = (TRAINING_ARGS_WORDS, ("load_best_model_at_end",), ("transformers",))

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        if facts.callee(node) not in TRAINING_ARGS_CLASSES or has_star_kwargs(node):
            return
        best = keyword(node, "load_best_model_at_end")
        if best is None or facts.constant(best.value, node) is not True:
            return
        ev_kw = keyword(node, "eval_strategy") or keyword(node, "evaluation_strategy")
        sv_kw = keyword(node, "save_strategy")
        ev = _strategy(facts, ev_kw.value if ev_kw else None, node, "no")
        sv = _strategy(facts, sv_kw.value if sv_kw else None, node, "steps")
        if ev is UNKNOWN or sv is UNKNOWN or sv == "best":
            return
        if ev != sv:
            shown_ev = f"eval_strategy=\"{ev}\"" + ("" if ev_kw else " (the default)")
            shown_sv = f"save_strategy=\"{sv}\"" + ("" if sv_kw else " (the default)")
            self.report(
                best,
                f"`load_best_model_at_end=True` with {shown_ev} and {shown_sv}: `TrainingArguments` raises a "
                "ValueError",
                hint="\"ValueError: --load_best_model_at_end requires the save and eval strategy to match\"; use the "
                f"same strategy for both, e.g. `eval_strategy=\"{sv if sv != 'no' else 'epoch'}\", "
                f"save_strategy=\"{sv if sv != 'no' else 'epoch'}\"` (or `save_strategy=\"best\"`)",
            )
            return
        if ev != "steps":
            return
        save_kw, eval_kw, log_kw = keyword(node, "save_steps"), keyword(node, "eval_steps"), keyword(node, "logging_steps")
        save = facts.constant(save_kw.value, node) if save_kw else 500
        ev_steps = facts.constant(eval_kw.value, node) if eval_kw else None
        if ev_steps is None or ev_steps == 0:
            ev_steps = facts.constant(log_kw.value, node) if log_kw else 500
        nums = (save, ev_steps)
        if not all(isinstance(n, (int, float)) and not isinstance(n, bool) and n > 0 for n in nums):
            return
        if save >= 1 and ev_steps >= 1:
            bad = int(save) % int(ev_steps) != 0
        elif save < 1 and ev_steps < 1:
            bad = round(save * 1_000_000) % round(ev_steps * 1_000_000) != 0
        else:
            bad = True
        if bad:
            self.report(
                save_kw.value if save_kw else best,
                f"`load_best_model_at_end=True` with `save_steps={save:g}` not a multiple of `eval_steps={ev_steps:g}`: "
                "`TrainingArguments` raises a ValueError",
                hint="\"ValueError: --load_best_model_at_end requires the saving steps to be a round multiple of the "
                f"evaluation steps\"; make `save_steps` a multiple of `eval_steps`, e.g. `save_steps={ev_steps:g}`",
            )


#: keys returned by `evaluate.load(name[, config]).compute(...)`
_METRIC_KEYS = {
    "accuracy": {"accuracy"}, "f1": {"f1"}, "precision": {"precision"}, "recall": {"recall"},
    "matthews_correlation": {"matthews_correlation"}, "mse": {"mse"}, "mae": {"mae"},
    "rouge": {"rouge1", "rouge2", "rougeL", "rougeLsum"}, "exact_match": {"exact_match"},
    "bleu": {"bleu", "precisions", "brevity_penalty", "length_ratio", "translation_length", "reference_length"},
    "sacrebleu": {"score", "counts", "totals", "precisions", "bp", "sys_len", "ref_len"},
    "squad": {"exact_match", "f1"}, "pearsonr": {"pearsonr"}, "spearmanr": {"spearmanr"},
    "roc_auc": {"roc_auc"}, "meteor": {"meteor"},
}
_GLUE_KEYS = {"mrpc": {"accuracy", "f1"}, "qqp": {"accuracy", "f1"}, "stsb": {"pearson", "spearmanr"},
              "cola": {"matthews_correlation"}}
#: what the Trainer adds to every evaluation
_TRAINER_KEYS = frozenset({"loss", "runtime", "samples_per_second", "steps_per_second", "model_preparation_time",
                           "jit_compilation_time", "epoch"})


@register
class UnknownMetricForBestModel(Rule):
    """`metric_for_best_model` names a key that the evaluation never produces."""

    code = "TL606"
    name = "unknown-metric-for-best-model"
    severity = Severity.ERROR
    measured_from = 4
    probe = "Runs one evaluation batch through `compute_metrics` and compares the keys with `metric_for_best_model`."
    #: `TrainingArguments(metric_for_best_model=...)` given as `args` to a transformers Trainer
    gate = (TRAINING_ARGS_WORDS, ("metric_for_best_model",),
            TRAINER_WORDS, ("transformers",))

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        if facts.callee(node) not in TRAINING_ARGS_CLASSES:
            return
        kw = keyword(node, "metric_for_best_model")
        if kw is None:
            return
        metric = facts.constant(kw.value, node)
        if not isinstance(metric, str):
            return
        key = metric[len("eval_"):] if metric.startswith("eval_") else metric
        if key in _TRAINER_KEYS:
            return
        trainers = list(self._trainers(node))
        if not trainers:
            return
        for trainer in trainers:
            if has_star_kwargs(trainer):
                return
            eval_ds = argument(trainer, "eval_dataset", 4)
            if isinstance(eval_ds, cst.Dict) or (isinstance(eval_ds, cst.Name) and isinstance(
                    getattr(facts.lookup(eval_ds.value, trainer), "value", None), cst.Dict)):
                return  # several eval sets: keys are `eval_<name>_<metric>`
            cm = argument(trainer, "compute_metrics")
            if cm is None:
                keys: set[str] | None = set()
                source = "the Trainer has no `compute_metrics`, so evaluation only reports `eval_loss`"
            else:
                fn = facts.function_def(cm, trainer)
                keys = self._keys(fn) if isinstance(fn, cst.FunctionDef) else None
                if keys is None:
                    return
                shown = ", ".join(f'"{k}"' for k in sorted(keys)) or "nothing"
                if len(shown) > 50:
                    shown = f"{len(keys)} other keys"
                source = f"`{fn.name.value}` returns {shown}"
            if keys is None or key in keys:
                return
            self.report(
                kw.value,
                f"`metric_for_best_model=\"{metric}\"` but {source}: the first evaluation fails with a KeyError",
                hint=f"\"KeyError: The `metric_for_best_model` training argument is set to 'eval_{key}', which is not "
                "found in the evaluation metrics\" (the Trainer reports each returned key as `eval_<key>`); "
                + (f"use one of the returned keys ({', '.join(sorted(keys))})" if keys else
                   "pass `compute_metrics=` returning that metric, or use `metric_for_best_model=\"loss\"`"),
            )
            return

    def _trainers(self, args_call: cst.Call):
        facts = self.ctx.facts
        if getattr(self, "_trainer_calls", None) is None:
            self._trainer_calls = list(facts.trainer_calls())
        for call in self._trainer_calls:
            a = argument(call, "args", 1)
            if a is args_call:
                yield call
            elif isinstance(a, cst.Name):
                b = facts.lookup(a.value, call)
                if b is not None and b.value is args_call:
                    yield call

    def _keys(self, fn: cst.FunctionDef) -> set[str] | None:
        """The keys of the dicts `fn` returns, or None when trainlint cannot list them all."""
        facts = self.ctx.facts
        returns = returns_of(facts, fn)
        if not returns:
            return None
        keys: set[str] = set()
        for r in returns:
            k = self._dict_keys(r.value, r, fn)
            if k is None:
                return None
            keys |= k
        return keys

    def _dict_keys(self, expr, at, fn, depth: int = 0) -> set[str] | None:
        facts = self.ctx.facts
        if isinstance(expr, cst.Dict):
            out = set()
            for el in expr.elements:
                if not isinstance(el, cst.DictElement):
                    return None
                k = literal(el.key)
                if not isinstance(k, str):
                    return None
                out.add(k)
            return out
        if isinstance(expr, cst.Call):
            f = expr.func
            if isinstance(f, cst.Attribute) and f.attr.value == "compute":
                return self._metric_keys(f.value, at)
            if isinstance(f, cst.Name) and f.value == "dict" and not expr.args:
                return set()
            return None
        if isinstance(expr, cst.Name) and depth < 3:
            b = facts.lookup(expr.value, at)
            if b is None or not isinstance(b.value, cst.BaseExpression):
                return None
            base = self._dict_keys(b.value, b.value if b.value in facts.where else at, fn, depth + 1)
            if base is None:
                return None
            # `result["f1"] = ...` adds keys; any other mutation (update, setdefault, ...) makes it unknown
            for node in iter_nodes(fn.body, (cst.Subscript, cst.Call)):
                if isinstance(node, cst.Call):
                    f = node.func
                    if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == expr.value \
                            and f.attr.value in ("update", "setdefault", "__setitem__"):
                        return None
                    continue
                if isinstance(node.value, cst.Name) and node.value.value == expr.value:
                    sl = node.slice[0].slice if len(node.slice) == 1 else None
                    k = literal(sl.value) if isinstance(sl, cst.Index) else None
                    if not isinstance(k, str):
                        return None
                    base = base | {k}
            return base
        return None

    def _metric_keys(self, metric_expr, at) -> set[str] | None:
        from trainlint.facts import MetricValue

        facts = self.ctx.facts
        v = facts.value_of(metric_expr, at if at in facts.where else None)
        if not isinstance(v, MetricValue) or v.call is None:
            return None
        name = facts.constant(argument(v.call, "path", 0), v.call)
        config = facts.constant(argument(v.call, "config_name", 1), v.call)
        if not isinstance(name, str):
            return None
        short = name.rsplit("/", 1)[-1].lower()
        if short in ("glue", "super_glue"):
            if not isinstance(config, str):
                return None
            return set(_GLUE_KEYS.get(config, {"accuracy"})) if short == "glue" else None
        keys = _METRIC_KEYS.get(short)
        return set(keys) if keys is not None else None


# ---------------------------------------------------------------------------------------------
# TL609, TL610: hand-written accuracies.

#: reductions that turn a comparison into a rate or a count of correct predictions
_REDUCTIONS = frozenset({
    "torch.mean", "torch.sum", "numpy.mean", "numpy.sum", "numpy.count_nonzero", "tensorflow.reduce_mean",
    "tensorflow.reduce_sum", "tensorflow.math.reduce_mean", "tensorflow.math.reduce_sum",
    "tensorflow.math.count_nonzero", "tensorflow.count_nonzero", "keras.ops.mean", "keras.ops.sum",
})
_REDUCING_METHODS = frozenset({"mean", "sum", "count_nonzero"})
_EQUAL_FUNCTIONS = frozenset({"tensorflow.equal", "tensorflow.math.equal", "torch.eq", "numpy.equal",
                              "keras.ops.equal"})
_GREATER_FUNCTIONS = frozenset({"tensorflow.greater", "tensorflow.math.greater", "tensorflow.greater_equal",
                                "tensorflow.math.greater_equal", "torch.gt", "torch.ge", "numpy.greater",
                                "numpy.greater_equal"})
_ROUNDING = frozenset({"tensorflow.round", "tensorflow.math.round", "torch.round", "numpy.round", "numpy.rint",
                       "numpy.around", "keras.ops.round"})


def _reduced(facts, node: cst.Call) -> cst.BaseExpression | None:
    """What a reduction (`x.float().mean()`, `tf.reduce_mean(tf.cast(x, ...))`, `np.sum(x)`) reduces."""
    q = facts.callee(node) or ""
    if q in _REDUCTIONS:
        return argument(node, "input", 0)
    f = node.func
    if isinstance(f, cst.Attribute) and f.attr.value in _REDUCING_METHODS and not q:
        return f.value
    return None


def _names(expr: cst.BaseExpression) -> set[str]:
    """The variables ``expr`` reads (not the attribute names of `x.attr`)."""
    attrs = {id(a.attr) for a in iter_nodes(expr, (cst.Attribute,))}
    return {n.value for n in iter_nodes(expr, (cst.Name,)) if id(n) not in attrs}


def _half(facts, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """``expr`` is the threshold 0.5: `0.5`, `tf.ones_like(x) * 0.5`, `0.5 * torch.ones_like(x)`."""
    if facts.constant(expr, at) == 0.5:
        return True
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        for half, ones in ((expr.left, expr.right), (expr.right, expr.left)):
            if literal(half) == 0.5 and isinstance(ones, cst.Call) and (facts.callee(ones) or "").endswith(".ones_like"):
                return True
    return False


@register
class AccuracyOnLogits(Rule):
    """A hand-written accuracy on class scores without argmax or threshold: logits compared with the labels,
    rounded or thresholded at 0.5 as if they were probabilities; probabilities compared with the labels."""

    code = "TL609"
    name = "accuracy-on-logits"
    severity = Severity.ERROR
    default = False
    measured_from = 4
    #: a reduction of the comparison (a method `.mean()` / `.sum()`, or a function of the same names)
    gate = (("mean", "sum", "reduce_mean", "reduce_sum", "count_nonzero"),)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._reported: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        inner = _reduced(facts, node)  # premise 3: the comparison is counted (a rate or a number of hits)
        if inner is None:
            return
        for cmp in iter_nodes(inner, (cst.Comparison, cst.Call)):
            if isinstance(cmp, cst.Comparison) and len(cmp.comparisons) == 1:
                op = cmp.comparisons[0].operator
                left, right = cmp.left, cmp.comparisons[0].comparator
                if isinstance(op, cst.Equal):
                    self._equality(cmp, left, right, node)
                elif isinstance(op, (cst.GreaterThan, cst.GreaterThanEqual)):
                    self._threshold(cmp, left, right, node)
                elif isinstance(op, (cst.LessThan, cst.LessThanEqual)):
                    self._threshold(cmp, right, left, node)
            elif isinstance(cmp, cst.Call):
                q = facts.callee(cmp) or ""
                a, b = argument(cmp, "x", 0), argument(cmp, "y", 1)
                if a is None or b is None:
                    continue
                if q in _EQUAL_FUNCTIONS:
                    self._equality(cmp, a, b, node)
                elif q in _GREATER_FUNCTIONS:
                    self._threshold(cmp, a, b, node)

    def _equality(self, cmp: cst.CSTNode, left: cst.BaseExpression, right: cst.BaseExpression, at: cst.Call) -> None:
        facts = self.ctx.facts
        for side, other in ((left, right), (right, left)):
            if literal(other) is not UNKNOWN:
                return  # premise 2: compared with labels, not with a constant
            value: cst.BaseExpression | None = side
            rounded = False
            if isinstance(side, cst.Call) and (facts.callee(side) or "") in _ROUNDING:
                value, rounded = argument(side, "x", 0), True  # `tf.round(x)`
            elif isinstance(side, cst.Call) and isinstance(side.func, cst.Attribute) and side.func.attr.value == "round" \
                    and not side.args and not facts.callee(side):
                value, rounded = side.func.value, True  # `x.round()`
            if value is None:
                continue
            found = scores(facts).kind(value, at)  # premise 1: class scores
            if found is None:
                continue
            if _names(value) & _names(other) or scores(facts).kind(other, at) is not None:
                return  # premise 2: compared with something else than the labels (`probs == probs.max(...)`)
            kind, why = found
            if kind is Output.LOGITS:
                how = "rounds them" if rounded else "compares them with the labels"
                self._report(cmp, value, f"holds logits (given to `{self._loss_name(why)}`), but the accuracy {how} "
                             "as if they were class decisions")
                return
            if not rounded:
                self._report(cmp, value, "holds probabilities, but the accuracy compares them with the labels for "
                             "equality, which almost never holds")
                return

    def _threshold(self, cmp: cst.CSTNode, value: cst.BaseExpression, bound: cst.BaseExpression, at: cst.Call) -> None:
        facts = self.ctx.facts
        if not _half(facts, bound, at):
            return
        found = scores(facts).kind(value, at)
        if found is not None and found[0] is Output.LOGITS:  # premises 1-2: logits thresholded as probabilities
            self._report(cmp, value, f"holds logits (given to `{self._loss_name(found[1])}`), but the accuracy "
                         "thresholds them at 0.5 as if they were probabilities")

    def _loss_name(self, node: cst.CSTNode) -> str:
        f = node.func if isinstance(node, cst.Call) else node
        return _short(self.ctx.code(f))

    def _report(self, cmp: cst.CSTNode, value: cst.BaseExpression, what: str) -> None:
        if id(cmp) in self._reported:
            return
        self._reported.add(id(cmp))
        self.report(
            cmp,
            f"`{_short(self.ctx.code(value))}` {what}",
            hint="the accuracy does not measure the model: logits are no probabilities (their decision boundary is 0, "
            "not 0.5; `round` of a logit is no class), and probabilities equal a label almost never. Compare class "
            "decisions: `scores.argmax(dim=1) == labels` for several classes, `(logits > 0)` or "
            "`torch.sigmoid(logits) > 0.5` (TensorFlow: `tf.round(tf.sigmoid(logits))`) for a binary output",
        )


@register
class ArgmaxWithoutDim(Rule):
    """`argmax()` without `dim` / `axis` over a batch of scores, compared with the labels of every example."""

    code = "TL610"
    name = "argmax-without-dim"
    severity = Severity.ERROR
    default = False
    measured_from = 4
    gate = (("argmax",),)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if len(node.comparisons) != 1 or not isinstance(node.comparisons[0].operator, (cst.Equal, cst.NotEqual)):
            return
        left, right = node.left, node.comparisons[0].comparator
        for side, other in ((left, right), (right, left)):
            scores_expr = self._flat_argmax(side)  # premise 1: argmax over the flattened tensor
            if scores_expr is None or not isinstance(side, cst.Call):
                continue
            self._check(side, scores_expr, other)
            return

    def _flat_argmax(self, expr: cst.BaseExpression) -> cst.BaseExpression | None:
        if not isinstance(expr, cst.Call):
            return None
        facts = self.ctx.facts
        q = facts.callee(expr) or ""
        if q in ("torch.argmax", "numpy.argmax"):
            if argument(expr, "dim" if q.startswith("torch") else "axis", 1) is not None or any(
                    a.star for a in expr.args):
                return None
            return argument(expr, "input" if q.startswith("torch") else "a", 0)
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value == "argmax" and not q and not expr.args:
            return f.value
        return None

    def _check(self, argmax: cst.Call, scores_expr: cst.BaseExpression, labels: cst.BaseExpression) -> None:
        """Premises 2-3: the scores and the labels are the prediction and the target of one class-id loss of
        the file (so the scores have a row per example, and the labels one class id per row)."""
        facts = self.ctx.facts
        where = self._recorded(argmax)
        if where is None:
            return
        s = scores(facts)
        want = (s.key(scores_expr, where), s.key(labels, where))
        if None in want:
            return
        for call in facts.index.get("Call", ()):
            site = loss_site(facts, call)
            if site is None or site.loss.targets != "class ids" or site.prediction is None or site.target is None:
                continue
            if site.loss.framework != "torch" or site.compiled:
                continue
            if (s.key(site.prediction, call), s.key(site.target, call)) == want:
                self.report(
                    argmax,
                    f"`{_short(self.ctx.code(argmax))}` has no `dim`: it returns one index into the flattened "
                    f"`{_short(self.ctx.code(scores_expr))}`, compared with every example's label",
                    hint=f"`{_short(self.ctx.code(scores_expr))}` has a row of class scores per example (it is the "
                    f"input of `{site.loss.name}`); without `dim` argmax flattens it, so the accuracy compares one "
                    "number with all the labels. Use `argmax(dim=1)` (the class axis)",
                )
                return

    def _recorded(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """A node of the walk at ``node``'s place (the call itself, or a call inside it)."""
        facts = self.ctx.facts
        if node in facts.where:
            return node
        return next((c for c in iter_nodes(node, (cst.Call,)) if c in facts.where), None)


# ---------------------------------------------------------------------------------------------
# TL608: the evaluation runs on the training data.

#: the words that name an evaluation, first or last in an identifier (`val_loader`, `run_eval`, `x_test`)
_EVAL_WORDS = ("val", "valid", "validation", "validate", "eval", "evaluation", "evaluate", "dev", "test", "testing")
_EVAL_WORD = re.compile(rf"^(?:{'|'.join(_EVAL_WORDS)})(?:_|\d|$)|_(?:{'|'.join(_EVAL_WORDS)})\d*$")
_TRAIN_WORD = re.compile(r"(?:^|_)(?:train|training|tr)(?:_|$|\d)")
#: a literal argument that names the training split (`split="train"`, a path `data/train`)
_TRAIN_SPLIT = re.compile(r"(?:^|[^a-z])train(?:ing)?(?:[^a-z]|$)", re.I)
#: names of data objects (a loader, a dataset, its batches)
_DATA_WORD = re.compile(r"loader|(?:^|_)dl(?:_|$)|data|(?:^|_)ds(?:_|$)|(?:^|_)set(?:_|$)|batches|iter|samples", re.I)
_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip", "trange"})
_LOADER_CLASSES = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})


def _last(text: str | None) -> str:
    return (text or "").rsplit(".", 1)[-1]


def _says_train_split(facts, call: cst.Call) -> bool:
    """An argument of ``call`` names the training split: `train=True`, or a literal string such as `"train"`,
    `split="train"` or a path `data/train`."""
    for a in call.args:
        v = literal(a.value)
        if a.keyword is not None and a.keyword.value == "train" and v is True:
            return True
        if isinstance(v, str) and _TRAIN_SPLIT.search(v):
            return True
    return False


def _iterated(expr: cst.BaseExpression) -> cst.BaseExpression:
    """What a `for` iterates under `enumerate(...)`, `tqdm(...)`, `iter(...)`."""
    while isinstance(expr, cst.Call) and (func_name(expr.func) or "") in _WRAPPERS and expr.args:
        expr = expr.args[0].value
    return expr


def _iteration_sites(facts) -> list[tuple[str, cst.CSTNode]]:
    """(the dotted text iterated, the For / the `iter()` call) for every iteration of a named object."""
    out = []
    for f in facts.index.get("For", ()):
        text = dotted(_iterated(f.iter))
        if text is not None:
            out.append((text, f))
    for c in facts.index.get("Call", ()):
        if isinstance(c.func, cst.Attribute) and c.func.attr.value in ("__iter__", "__next__") and not c.args:
            text = dotted(c.func.value)
            if text is not None:
                out.append((text, c))
    return out


def _site_expr(site: cst.CSTNode) -> cst.CSTNode:
    """What an iteration site iterates: a `for`'s iterable, or the receiver of `x.__iter__()`."""
    if isinstance(site, cst.For):
        return _iterated(site.iter)
    return site.func.value if isinstance(site, cst.Call) and isinstance(site.func, cst.Attribute) else site


def _same_scope(facts, a: cst.CSTNode, b: cst.CSTNode, text: str) -> bool:
    """``text`` names the same object at ``a`` and at ``b``: `self.<attr>` in methods of one class, or a name of
    one function (or of the module)."""
    wa, wb = facts.where.get(a), facts.where.get(b)
    if wa is None or wb is None:
        return False
    if text.startswith("self."):
        ca = next((x for x in reversed(wa.blocks) if isinstance(x, cst.ClassDef)), None)
        cb = next((x for x in reversed(wb.blocks) if isinstance(x, cst.ClassDef)), None)
        return ca is not None and ca is cb
    return wa.function is wb.function


def _evaluation_data(node: cst.CSTNode) -> bool:
    """``node`` names an object of evaluation data (`val_loader`, `self.test_dataset`)."""
    last = _last(dotted(node)) if isinstance(node, (cst.Name, cst.Attribute)) else ""
    return bool(last) and bool(_EVAL_WORD.search(last)) and bool(_DATA_WORD.search(last))


def _evaluation_context(node: cst.CSTNode) -> bool:
    """A function named for evaluation, or an `if` whose test reads evaluation data."""
    if isinstance(node, cst.FunctionDef):
        return bool(_EVAL_WORD.search(node.name.value))
    return isinstance(node, cst.If) and any(_evaluation_data(n) for n in iter_nodes(node.test, (cst.Name, cst.Attribute)))


def _trainer_evaluates(facts, trainer: cst.Call) -> bool:
    """The Trainer evaluates its `eval_dataset`: the file calls an `evaluate()`, or the training arguments set an
    `eval_strategy` other than "no" (the default); False where the arguments are not shown."""
    if any(True for _ in facts.method_calls("evaluate")):
        return True
    given = trainer_arguments(facts, trainer)
    if given is None:
        return False
    args, at = given
    strategy = keyword(args, "eval_strategy") or keyword(args, "evaluation_strategy")
    if strategy is not None:  # a literal, a name bound to one, or `IntervalStrategy.NO`, read as TL605 reads it
        return _strategy(facts, strategy.value, at, "no") != "no"
    do_eval = keyword(args, "do_eval")
    return do_eval is not None and facts.constant(do_eval.value, at) not in (False, None)


@register
class EvaluateOnTrainingData(Rule):
    """The evaluation or validation runs on the training data."""

    code = "TL608"
    name = "evaluate-on-training-data"
    severity = Severity.WARNING
    default = False
    measured_from = 4
    probe = "Compares the evaluation data with the training data: the same object, or the same first examples."
    gate = ((*TRAINER_WORDS, *(f"{w}*" for w in _EVAL_WORDS), *(f"*{w}" for w in _EVAL_WORDS)),)

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        pairs: list[tuple[cst.BaseExpression | None, cst.BaseExpression | None, str]] = []
        meth = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        q = facts.qualname(node.func) or ""
        if (keyword(node, "eval_dataset") is not None or q == "transformers.Trainer" and len(node.args) > 4) \
                and facts.is_trainer_class(node.func, node):
            if not _trainer_evaluates(facts, node):
                return  # the eval_dataset is never measured: eval_strategy "no" and no evaluate() call
            train = argument(node, "train_dataset", 3 if q == "transformers.Trainer" else None)
            evals = argument(node, "eval_dataset", 4 if q == "transformers.Trainer" else None)
            values = [e.value for e in evals.elements] if isinstance(evals, (cst.List, cst.Tuple)) else \
                [e.value for e in evals.elements if isinstance(e, cst.DictElement)] if isinstance(evals, cst.Dict) else [evals]
            pairs.extend((train, v, "`eval_dataset`") for v in values)
        elif meth == "fit" and keyword(node, "validation_data") is not None:
            val = argument(node, "validation_data")
            x, y = argument(node, "x", 0), argument(node, "y", 1)
            if isinstance(val, (cst.Tuple, cst.List)) and len(val.elements) >= 2 and x is not None and y is not None:
                pairs.append((x, val.elements[0].value, "`validation_data`"))
                pairs.append((y, val.elements[1].value, "`validation_data`"))
            elif y is None:
                pairs.append((x, val, "`validation_data`"))
        # premise: each evaluation input is the very object (or the same split) the training gets
        if not pairs:
            return
        flows = flow(facts)
        for t, v, _ in pairs:
            if t is None or v is None or flows.identity(t) is None or flows.identity(t) != flows.identity(v):
                return
        _, v, role = pairs[0]
        assert v is not None
        self.report(
            v,
            f"{role} `{_short(self.ctx.code(v))}` is the very data given for training: the evaluation measures "
            "the fit to the training data, not generalisation",
            hint="Evaluating on the examples the model is trained on reports an optimistic, ever-improving score; "
                 "early stopping and best-model selection then follow it. Hold out a split the model never trains on "
                 "(`dataset[\"validation\"]`, `train_test_split`, `validation_split=`) and evaluate on that.",
        )

    def finish(self) -> None:
        self._same_split()
        self._evaluation_iterates_training_data()

    def _same_split(self) -> None:
        """Premises: the evaluation data is built by the same call, with the same arguments, as the training data,
        and that call names the training split; the evaluation data is used whole (no sampler or subset picks a
        part of it)."""
        facts = self.ctx.facts
        made: list[tuple[str, cst.Assign, cst.Call]] = []
        for a in facts.index.get("Assign", ()):
            if isinstance(a.value, cst.Call) and len(a.targets) == 1 and (text := dotted(a.targets[0].target)):
                made.append((text, a, a.value))
        for text, a, call in made:
            if not _EVAL_WORD.search(_last(text)) or not _says_train_split(facts, call):
                continue
            code = " ".join(self.ctx.code(call).split())
            twin = next((t for t, b, other in made if b is not a and _TRAIN_WORD.search(_last(t))
                         and not _EVAL_WORD.search(_last(t)) and _same_scope(facts, a, b, "self." if t.startswith("self.") else t)
                         and " ".join(self.ctx.code(other).split()) == code and self._same_names(call, other)), None)
            if twin is None or not self._used_whole(flow(facts), call):
                continue
            self.report(
                call,
                f"`{text}` is built by the same call as `{twin}` (`{short_code(code, 32)}`): the evaluation runs on "
                "the training split",
                hint="Both objects hold the same examples, so every validation score is measured on training data "
                     "(optimistic, and misleading for early stopping or model selection). Build the evaluation data "
                     "from the held-out split (`train=False`, `split=\"validation\"`).",
            )

    def _same_names(self, a: cst.Call, b: cst.Call) -> bool:
        """Every name read in ``a`` and in ``b`` is bound to the same thing at both places."""
        flows = flow(self.ctx.facts)
        na = [n for n in iter_nodes(a, (cst.Name,)) if n.value in flows.reads and any(r is n for r in flows.reads[n.value])]
        nb = [n for n in iter_nodes(b, (cst.Name,)) if n.value in flows.reads and any(r is n for r in flows.reads[n.value])]
        if [n.value for n in na] != [n.value for n in nb]:
            return False
        for x, y in zip(na, nb):
            rx = {id(r.target) for r in flows.reaching(x.value, x)}
            ry = {id(r.target) for r in flows.reaching(y.value, y)}
            if rx != ry:
                return False
        return True

    def _used_whole(self, flows, made: cst.Call) -> bool:
        """The object ``made`` is only read, or given whole to a DataLoader without a sampler (or to `eval_dataset`)."""
        uses = flows.uses(made)
        for use in uses:
            if use.kind in ("attr", "test"):
                continue
            if use.kind == "arg" and isinstance(use.node, cst.Call):
                q = self.ctx.facts.qualname(use.node.func) or ""
                if q in _LOADER_CLASSES and use.detail in ("dataset", 0) and keyword(use.node, "sampler") is None \
                        and keyword(use.node, "batch_sampler") is None and self._no_sampler_in_kwargs(use.node) or \
                        use.detail in ("eval_dataset", "validation_data"):
                    continue
            return False
        return bool(uses)

    def _no_sampler_in_kwargs(self, loader: cst.Call) -> bool:
        """The `**kwargs` of a DataLoader call hold no sampler: it has none, or the file gives the same `**kwargs`
        with `shuffle=True` to another DataLoader (a sampler with `shuffle=True` raises a ValueError)."""
        stars = [self.ctx.code(a.value) for a in loader.args if a.star == "**"]
        if not stars:
            return True
        for c in self.ctx.facts.index.get("Call", ()):
            if c is not loader and (self.ctx.facts.qualname(c.func) or "") in _LOADER_CLASSES \
                    and literal(argument(c, "shuffle", 2)) is True \
                    and [self.ctx.code(a.value) for a in c.args if a.star == "**"] == stars:
                return True
        return False

    def _evaluation_iterates_training_data(self) -> None:
        """Premises: a function named for evaluation (or a block under a test that reads evaluation data, `if
        val_loader is not None:`) runs no training step; it iterates an object that a training loop of the file
        iterates; it reads an evaluation object (`self.test_loader`) that nothing in the file iterates: the
        evaluation was meant for that one."""
        facts = self.ctx.facts
        sites = _iteration_sites(facts)
        tests = {id(b): b for _, s in sites for b in facts.where[s].blocks if isinstance(b, cst.If)}
        for ctx in (*facts.index.get("FunctionDef", ()), *tests.values()):
            if not _evaluation_context(ctx):
                continue
            mine = [(t, s) for t, s in sites if ctx in facts.where[s].blocks and not _EVAL_WORD.search(_last(t))]
            for text, site in mine:
                others = [s for t, s in sites if t == text and s is not site and _same_scope(facts, s, site, text)
                          and self._same_bindings(text, s, site)]
                meant = self._unused_evaluation_data(ctx, text, sites, site) if others else None
                if meant is None or trains(facts, ctx) or not any(
                        (block := pass_of(facts, s)) is not None and trains(facts, block) for s in others):
                    continue
                where = f"`{ctx.name.value}`" if isinstance(ctx, cst.FunctionDef) else \
                    f"the loop under `if {short_code(self.ctx.code(ctx.test), 28)}`"
                self.report(
                    site,
                    f"{where} iterates the training loader `{text}`, not `{meant}` (never iterated): it evaluates "
                    "on training data",
                    hint=f"The scores computed there are measured on the examples the model trains on "
                         f"(optimistic; model selection follows them). Iterate `{meant}` there.",
                )

    def _same_bindings(self, text: str, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """A plain name ``text`` iterated at ``a`` and at ``b`` may be bound by the same assignments at both."""
        if "." in text:
            return True
        flows = flow(self.ctx.facts)
        read_a, read_b = (next((n for n in iter_nodes(_site_expr(x), (cst.Name,)) if n.value == text), None)
                          for x in (a, b))
        if read_a is None or read_b is None:
            return False
        ra = {id(r.target) for r in flows.reaching(text, read_a)}
        return bool(ra) and ra == {id(r.target) for r in flows.reaching(text, read_b)}

    def _unused_evaluation_data(self, fn: cst.FunctionDef | cst.If, text: str, sites, at: cst.CSTNode) -> str | None:
        """An object named for evaluation that ``fn`` reads (other than ``text``, iterated at ``at``) and the file
        never iterates."""
        facts = self.ctx.facts
        iterated = {t for t, _ in sites}
        for node in iter_nodes(fn.body if isinstance(fn, cst.FunctionDef) else fn, (cst.Attribute, cst.Name)):
            d = dotted(node)
            if d is None or d == text or d in iterated or not _EVAL_WORD.search(_last(d)) \
                    or not _DATA_WORD.search(_last(d)):
                continue
            if d.startswith("self.") and d.count(".") == 1 and text.startswith("self.") or (
                    "." not in d and "." not in text and facts.lookup(d, at) is not None):
                return d
        return None

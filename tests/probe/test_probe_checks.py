"""The probe-check registry (``trainlint.probe.child.registry``): checks subscribe to the observation
points the framework plugins announce, each declaring its codes in its decorator and nowhere else; they
run in pipeline order; the codes they declare match the rule catalog and their own module's source.
Fast: the registry, the points and the stage probe modules import only the standard library."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from support import recording_harness
from trainlint.probe import protocol
from trainlint.probe.child import points, registry
from trainlint.probe.child.points import Classification, Pipeline, Point

SRC = Path(__file__).resolve().parents[2] / "trainlint"
STAGE_PROBES = sorted([*SRC.glob("stages/s*/probe.py"), *SRC.glob("stages/s*/probe_keras.py")])
CHILD = SRC / "probe" / "child"


def _code_literals(path: Path) -> set[str]:
    """Every string constant that is exactly a rule code (docstrings and comments are not), except in a
    test of what was already reported (``"TL106" in h.emitted``: a code read, not reported)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    read: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Compare, ast.BinOp)) and any(
                isinstance(n, ast.Attribute) and n.attr == "emitted" for n in ast.walk(node)):
            read.update(id(n) for n in ast.walk(node))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and re.fullmatch(r"TL\d{3}", n.value) and id(n) not in read}


def _module(path: Path) -> str:
    return ".".join(path.relative_to(SRC.parent).with_suffix("").parts)


def test_every_code_a_probe_module_reports_is_declared_by_a_check_of_that_module():
    checks = registry.all_checks()
    for path in STAGE_PROBES:
        name = _module(path)
        declared = {code for c in checks if c.fn.__module__ == name for code in c.codes + c.cannot_confirm}
        undeclared = _code_literals(path) - declared
        assert not undeclared, f"{path.relative_to(SRC)} reports {sorted(undeclared)} no check of it declares"


def test_no_code_is_written_outside_the_checks():
    """The plugins, the harness, the registry and the helpers report nothing of their own: no code list."""
    for path in sorted(CHILD.rglob("*.py")):
        assert not _code_literals(path), f"{path.relative_to(SRC)} names rule codes: they belong to a check"


def test_probe_codes_equal_the_rules_that_declare_a_probe():
    """The codes the probe can confirm are exactly the codes whose Rule says what the probe does; a code
    a check can only leave open is a rule's."""
    from trainlint.rule import all_rules

    rules = all_rules()
    with_probe = {code for code, rule in rules.items() if rule.probe}
    declared = registry.declared_codes()
    assert not declared - with_probe, f"reported by the probe, no `probe` in their Rule: {sorted(declared - with_probe)}"
    assert not with_probe - declared, f"a `probe` in their Rule, never reported: {sorted(with_probe - declared)}"
    open_only = {code for c in registry.all_checks() for code in c.cannot_confirm}
    assert open_only <= set(rules), sorted(open_only - set(rules))


def test_each_check_subscribes_to_a_point_of_its_modules_framework():
    for c in registry.all_checks():
        framework = "keras" if c.fn.__module__.endswith(".probe_keras") else "torch"
        assert c.point.framework in (framework, "any"), f"{c.name} ({c.fn.__module__}) at {c.point.name}"


def test_every_point_is_announced_by_a_plugin_and_has_checks():
    """A point no plugin announces is dead; one no check subscribes to is noise."""
    sources = "\n".join(p.read_text(encoding="utf-8") for p in [*CHILD.glob("frameworks/*.py"), CHILD / "main.py"])
    subscribed = {c.point.name for c in registry.all_checks()}
    for name, value in vars(points).items():
        if isinstance(value, Point):
            assert re.search(rf"\b{name}\b", sources), f"no plugin announces {name}"
            assert value.name in subscribed, f"no check subscribes to {name}"


@pytest.mark.parametrize("point", [points.TRAINER_BATCH, points.FIT_BATCH], ids=lambda p: p.name)
def test_checks_run_in_pipeline_order(point):
    found = registry.checks_at(point)
    assert len(found) >= 6
    assert [c.order for c in found] == sorted(c.order for c in found)
    for c in found:
        digit = int(re.search(r"\.s(\d)_", c.fn.__module__).group(1))
        assert c.stage == digit
    # Where a check needs what another stage computes, its order says so.
    names = [c.name for c in found]
    if point is points.TRAINER_BATCH:
        assert names.index("s3_model.check_forward") < names.index("s4_loss.check_loss") < names.index(
            "s3_model.check_gradients") < names.index("s5_optimizer.check_trainer_step")
    else:
        assert names.index("s3_model.check_forward") < names.index("s1_data.check_label_range")


def test_no_stage_probe_uses_another_stages_private_names():
    for path in STAGE_PROBES:
        own = path.parent.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                m = re.match(r"trainlint\.stages\.(s\d_\w+)", node.module)
                if m and m.group(1) != own:
                    private = [a.name for a in node.names if a.name.startswith("_")]
                    assert not private, f"{own}/{path.name} imports {private} from {node.module}"


def of(h, kind):
    return [e for e in h.events if isinstance(e, kind)]


TEST_PIPELINE: Point[Pipeline] = Point("test.pipeline", "torch", pipeline=True)
TEST_CLASSIFIER: Point[object] = Point("test.classifier", "torch", classifier=True)


@pytest.fixture
def fake_stage():
    """Checks registered as if from a stage-2 module, removed afterwards."""
    created = []

    def add(point, fn, *codes, **kw):
        fn.__module__ = "trainlint.stages.s2_batching.fake_probe"
        registry.check(point, *codes, **kw)(fn)
        created.append(fn)

    yield add
    registry._CHECKS[:] = [c for c in registry._CHECKS if c.fn not in created]


def test_a_check_that_fails_is_incomplete_and_a_stop_skips_the_rest(fake_stage):
    ran = []

    def broken(h, s):
        ran.append("broken")
        raise KeyError("input_ids")

    def stopper(h, s):
        ran.append("stopper")
        s.stop = True

    def later(h, s):
        ran.append("later")

    fake_stage(TEST_PIPELINE, broken, "TL201")
    fake_stage(TEST_PIPELINE, stopper, "TL202", order=210)
    fake_stage(TEST_PIPELINE, later, "TL207", order=220)
    h = recording_harness(strict=False)
    registry.announce(h, TEST_PIPELINE, Pipeline(1))
    assert ran == ["broken", "stopper"]
    [incomplete] = of(h, protocol.Incomplete)
    assert incomplete.check == "s2_batching.broken" and "KeyError" in incomplete.reason
    assert incomplete.codes == ("TL201",)
    assert [p.name for p in of(h, protocol.Phase)] == ["batching", "batching"]
    with pytest.raises(KeyError):  # strict (in-process tests): the bug fails the test
        registry.announce(recording_harness(), TEST_PIPELINE, Pipeline(1))


def test_the_first_classification_wins_and_a_broken_classifier_is_skipped(fake_stage):
    def broken(h, s):
        raise RuntimeError("bug")

    def first(h, s):
        return ("TL201", "m1", "e1") if s == "mine" else None

    def second(h, s):
        return Classification("TL202", "m2", "e2", ("TL207",))

    fake_stage(TEST_CLASSIFIER, broken, "TL201", order=100)
    fake_stage(TEST_CLASSIFIER, first, "TL201", order=200)
    fake_stage(TEST_CLASSIFIER, second, "TL202", order=300)
    h = recording_harness(strict=False)
    assert registry.classify(h, TEST_CLASSIFIER, "mine") == Classification("TL201", "m1", "e1")
    assert registry.classify(h, TEST_CLASSIFIER, "other") == Classification("TL202", "m2", "e2", ("TL207",))


def test_check_rejects_what_is_not_a_rule_code_or_a_point():
    with pytest.raises(ValueError):
        registry.check(points.TRAINER_BATCH, "T201")
    with pytest.raises(TypeError):
        registry.check("trainer.batch", "TL201")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Point("x", "jax")

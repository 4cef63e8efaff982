"""The IPython extension in a real Jupyter kernel: the course's Trainer notebook (tiny local checkpoint,
no hub) executed by ``nbclient`` with ``%load_ext trainlint``: the static findings under the cells as
they run, ``%trainlint probe trainer`` confirming the label and collation bugs with the sandboxed
probe's evidence, the fixed notebook all clear, and the Trainer's objects equal to before by value."""

from __future__ import annotations

import pytest

from support import need_modules
from test_ipython_probe import COURSE_CELLS, buggy_cells

pytestmark = pytest.mark.probe

need_modules("nbclient", "nbformat", "ipykernel", "torch", "transformers", "datasets")

BEFORE = """import random
import torch
snap = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
rng = (torch.random.get_rng_state().clone(), np.random.get_state()[1].copy(), random.getstate())
mode = trainer.model.training"""

AFTER = """same = (all(torch.equal(v, trainer.model.state_dict()[k]) for k, v in snap.items())
        and torch.equal(rng[0], torch.random.get_rng_state()) and (rng[1] == np.random.get_state()[1]).all()
        and rng[2] == random.getstate() and trainer.optimizer is None and trainer.state.global_step == 0
        and trainer.model.training == mode and all(p.grad is None for p in trainer.model.parameters()))
print("objects unchanged:", bool(same))"""


def execute(cells: list[str], tmp_path, name: str):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    sources = ["%load_ext trainlint", f"OUT = {str(tmp_path / 'out')!r}", *cells, BEFORE, "%trainlint probe trainer",
               AFTER]
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    nbformat.write(nb, str(tmp_path / name))  # kept with the test's files: what the front end would show
    return nb


def outputs(cell, mime: str) -> str:
    texts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") in ("display_data", "execute_result"):
            texts.append(out.get("data", {}).get(mime, ""))
        elif out.get("output_type") == "stream" and mime == "text/plain":
            texts.append(out.get("text", ""))
    return "\n".join(texts)


def test_buggy_course_notebook_in_a_real_kernel(tiny_env, tmp_path):
    nb = execute(buggy_cells(), tmp_path, "buggy.ipynb")
    trainer_cell = nb.cells[2 + 6]
    # the static finding under the cell that builds the Trainer, in HTML and in text
    assert "TL201" in outputs(trainer_cell, "text/plain"), trainer_cell.outputs
    assert "rules/TL201.md" in outputs(trainer_cell, "text/html")
    probe = outputs(nb.cells[-2], "text/plain")
    assert "TL201 [confirmed]" in probe and "input_ids lengths in the batch: [" in probe, probe
    assert "TL106 [confirmed]" in probe and "out of range: 2×200" in probe, probe
    assert "confirmed" in outputs(nb.cells[-2], "text/html")
    assert "objects unchanged: True" in outputs(nb.cells[-1], "text/plain"), nb.cells[-1].outputs
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_fixed_course_notebook_all_clear_in_a_real_kernel(tiny_env, tmp_path):
    nb = execute(COURSE_CELLS, tmp_path, "fixed.ipynb")
    shown = [outputs(c, "text/plain") for c in nb.cells[:-3]]
    assert not any("trainlint:" in s for s in shown), shown
    probe = outputs(nb.cells[-2], "text/plain")
    assert "All checks passed on the live objects." in probe and "[confirmed]" not in probe, probe
    assert "objects unchanged: True" in outputs(nb.cells[-1], "text/plain")

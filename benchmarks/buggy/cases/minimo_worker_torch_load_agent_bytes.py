# /// script
# dependencies = ["torch>=2.6", "celery", "omegaconf"]
# ///
# (the environment of the report: PyTorch 2.6)
# Minimo's self-improvement loop ships the whole prover agent (a pickled Python object holding the policy's
# language model) to Celery workers as bytes; the worker task rebuilds it with `torch.load(f)` on an
# io.BytesIO. Since PyTorch 2.6 torch.load defaults to weights_only=True, which cannot unpickle arbitrary
# objects: every worker task fails with UnpicklingError.
# evidence: gpoesia/minimo#21 ("Address change in PyTorch 2.6 load API by using weights_only=False": _pickle.
# UnpicklingError: Weights only load failed; merged, the maintainer: "Thanks!"), commit
# gpoesia/minimo@db8478b3263ca660e9ffab3d9ab87b5650a54be0
import io
import os
from dataclasses import dataclass
from typing import Optional

import torch
from celery import Celery

import peano


@dataclass
class StudentResult:
    error: Optional[str]
    success: bool
    problem: str
    solution_actions: Optional[list[str]]
    iterations: int


@dataclass
class BackgroundTheory:
    theory: str
    premises: list[str]


redis_url = f'redis://{os.environ.get("REDIS", "localhost")}'
app = Celery('worker', backend=redis_url, broker=redis_url)
app.conf.task_serializer = 'pickle'
app.conf.result_serializer = 'pickle'
app.conf.accept_content = ['application/json', 'application/x-python-serialize']


@app.task
def try_prove(agent_dump: bytes, theory: BackgroundTheory, statement: str) -> StudentResult:
    with io.BytesIO(agent_dump) as f:
        agent = torch.load(f)  # BUG TL810: PyTorch 2.6 loads with weights_only=True by default: a pickled agent object is refused (UnpicklingError)

    state = peano.PyProofState(theory.theory, theory.premises, statement)
    agent_result = agent.proof_search(statement, state)
    solution_actions = agent_result.root.get_solution_actions() if agent_result.success else None
    return StudentResult(None, agent_result.success, statement,
                         list(map(str, solution_actions)) if solution_actions else None,
                         agent_result.iterations)

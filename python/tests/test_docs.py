"""The examples of docs/python.md and docs/distributed.md run as written (each ```python block, in
a fresh namespace; distributed.md's torchrun example runs under torchrun in test_distributed.py)."""
import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"
DOC = DOCS / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
CP_DOC = DOCS / "distributed.md"
CP_BLOCKS = [b for b in re.findall(r"```python\n(.*?)```", CP_DOC.read_text(), re.S)
             if not b.startswith("# cp_example.py")]


def test_the_page_has_examples():
    assert len(BLOCKS) >= 9
    assert len(CP_BLOCKS) >= 1


@pytest.mark.parametrize("code", BLOCKS, ids=[f"example{i}" for i in range(len(BLOCKS))])
def test_example_runs(code):
    exec(compile(code, str(DOC), "exec"), {"__name__": "__docs__"})


@pytest.mark.parametrize("code", CP_BLOCKS, ids=[f"distributed{i}" for i in range(len(CP_BLOCKS))])
def test_distributed_example_runs(code):
    exec(compile(code, str(CP_DOC), "exec"), {"__name__": "__docs__"})

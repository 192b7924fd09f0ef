"""The examples of docs/python.md and docs/distributed.md run as written (each ```python block, in
a fresh namespace; distributed.md's torchrun example runs under torchrun in test_distributed.py)."""
import linecache
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


def _run(code, doc, name):
    # The block's own lines under a name of its own: torch.compile (dynamo) reads a function's
    # source through linecache, and the page's lines at the block's line numbers are other text.
    filename = f"{doc}:{name}"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    exec(compile(code, filename, "exec"), {"__name__": "__docs__"})


@pytest.mark.parametrize("i", range(len(BLOCKS)), ids=[f"example{i}" for i in range(len(BLOCKS))])
def test_example_runs(i):
    _run(BLOCKS[i], DOC, f"example{i}")


@pytest.mark.parametrize("i", range(len(CP_BLOCKS)),
                         ids=[f"distributed{i}" for i in range(len(CP_BLOCKS))])
def test_distributed_example_runs(i):
    _run(CP_BLOCKS[i], CP_DOC, f"distributed{i}")

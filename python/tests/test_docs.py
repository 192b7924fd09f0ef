"""The examples of docs/python.md run as written (each ```python block, in a fresh namespace)."""
import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_page_has_examples():
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("code", BLOCKS, ids=[f"example{i}" for i in range(len(BLOCKS))])
def test_example_runs(code):
    exec(compile(code, str(DOC), "exec"), {"__name__": "__docs__"})

#!/usr/bin/env python3
"""Checks that what the comments name exists, so a rename or a removal cannot leave them stale.

In the comments of src/, include/, tests/, python/, tools/, fuzz/, reference/, bench/, examples/,
scripts/ and cmake/:
  - every file path (`cpu/isa.hpp`, `src/core/plan_state.hpp`, `softmax_state.h`) names a file of
    the repository: a path with a folder must be the tail of a file's path, a bare name the name of
    a file (see EXTERNAL_FILES for the upstream and third-party files comments may cite);
  - every qualified name (`core::fail`, `cpu::parallel_for`) and every snake_case call
    (`bind_data()`) names an identifier that the code (comments removed) of those folders uses;
  - every citation of a contract section names one that exists: `docs/<page>.md §2.7`,
    `docs/<page>.md §0.2 item 6`, `docs/semantics.md decision 13b`, and a bare `§2.7` cites
    docs/semantics.md. The contract lives in docs/, so `spec §...` (the old citation of a document
    outside the repository) is refused. The citations in docs/*.md and README.md are checked too
    (a page's bare `§2.7` cites its own section or docs/semantics.md's).
In the pages (README.md and the .md files of docs/, bench/ and examples/), check_pages:
  - every relative Markdown link and every path from a top folder (`src/cpu/isa.hpp`,
    `bench/peers.py`, `tests/support/`) names a file or folder of the repository;
  - every `snake_case()` call, every `kvflash_*` name in backticks and every `--target NAME`
    names something the code uses or a CMake target;
  - docs/README.md, bench/README.md and examples/README.md name every file of their folder, and
    README.md every page of docs/.
In both, a section cited by its title (`docs/api.md, "Building a program"`) is a heading of that
page, or the start of one.
Run by CTest (`comment_refs`, so by scripts/test.sh too). Prints one line per stale reference and
exits 1 if there is any.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCANNED = ["src", "include", "tests", "python", "tools", "fuzz", "reference", "bench", "examples",
           "scripts", "cmake"]
CODE_EXT = (".cpp", ".hpp", ".h", ".c", ".cu", ".cuh", ".py", ".cmake", ".sh")
FILE_EXT = r"(?:hpp|h|cpp|cc|c|cu|cuh|py|md|cmake|sh|txt|json|toml|map|in|yml)"

# Files of other projects that comments cite on purpose (upstream sources, system headers).
EXTERNAL_FILES = {
    "acl_rt.h", "acl_base.h", "acl_meta.h", "aclnn_incre_flash_attention.h",
    "aclnn_sparse_flash_attention.h", "acl/acl.h", "cuda_runtime.h", "cuda_fp16.h", "asm/prctl.h", "immintrin.h",
    "cuda_bf16.h", "ATen/Parallel.h", "torch/library.h", "sys/auxv.h", "sanitizer/common_interface_defs.h",
    "sanitizer/lsan_interface.h", "CMakeLists.txt", "setup.py", "conftest.py", "pyproject.toml",
    "ref.py", "tests/ref.py", "parallel.h", "ParallelOpenMP.h", "libgomp.so.1",
    "vllm/attention/ops/merge_attn_states.py", "merge_attn_states.py",
    "sparse_flash_attention_golden.py", "incre_flash_attention_tiling.cpp",
    "incre_flash_attention_tiling_check.cpp", "ascend_quant_pre_impl.h", "ReshapeAndCachAtb.cpp",
    "vllm_ascend/attention/attention_v1.py", "attention_v1.py", "amx_mla.py",
    # generated into the build folder (cmake/version.h.in)
    "kvflash/version.h", "version.h",
    # CANN's environment script, and the C headers securectype.h brings in as CANN's does
    "set_env.sh", "stddef.h", "stdio.h", "string.h", "stdlib.h",
}
# Identifiers of other projects that comments name as calls (C/CUDA runtimes, torch, libFuzzer).
EXTERNAL_SYMBOLS = {
    "LLVMFuzzerTestOneInput", "LLVMFuzzerCustomMutator", "LLVMFuzzerMutate", "pthread_atfork",
    "torch_npu", "npu_incre_flash_attention", "npu_sparse_flash_attention",
    "npu_fused_infer_attention_score", "merge_attn_states", "get_kv_block", "posix_memalign",
    "__cxa_thread_atexit", "malloc_usable_size", "dl_iterate_phdr", "sched_getaffinity",
    "cudaStreamSynchronize", "cudaMemcpyAsync", "cudaLaunchHostFunc", "cudaGetLastError",
    "ldmatrix", "cp_async", "__shfl_xor_sync", "torch.compile", "torch.export",
    # notation of the formulas the comments quote from docs/semantics.md
    "round_half_even", "sat8",
}


def repo_files():
    out = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel = os.path.relpath(dirpath, ROOT)
        parts = rel.split(os.sep)
        if parts[0] in (".git", "build", ".venv") or parts[0].startswith("build"):
            dirnames[:] = []
            continue
        if any(p in ("__pycache__", "corpus", ".pytest_cache") for p in parts):
            continue
        for f in filenames:
            out.append(os.path.normpath(os.path.join(rel, f)).replace(os.sep, "/"))
    return out


STRING_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"' + r"|'(?:[^'\\\n]|\\.)'")


def split_code(path, text):
    """(comment text with line numbers, code text) of one file."""
    comments, code = [], []
    if path.endswith((".py", ".cmake", ".sh")) or os.path.basename(path) == "CMakeLists.txt":
        for n, line in enumerate(text.splitlines(), 1):
            m = re.search(r"(?:^|\s)#(?!include|define|pragma|if|endif|else)(.*)$", line)
            if m and not line.lstrip().startswith("#!"):
                comments.append((n, m.group(1)))
                code.append(line[: m.start()])
            else:
                code.append(line)
        return comments, "\n".join(code)
    in_block = False
    for n, line in enumerate(text.splitlines(), 1):
        rest, code_line = line, ""
        while rest:
            if in_block:
                end = rest.find("*/")
                comments.append((n, rest if end < 0 else rest[:end]))
                if end < 0:
                    rest = ""
                else:
                    in_block, rest = False, rest[end + 2 :]
                continue
            stripped = STRING_RE.sub(lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', rest)
            i, j = stripped.find("//"), stripped.find("/*")
            if i >= 0 and (j < 0 or i < j):
                code_line += rest[:i]
                comments.append((n, rest[i + 2 :]))
                rest = ""
            elif j >= 0:
                code_line += rest[:j]
                in_block, rest = True, rest[j + 2 :]
            else:
                code_line += rest
                rest = ""
        code.append(code_line)
    return comments, "\n".join(code)


PATH_RE = re.compile(r"(?<![\w./*-])((?:[\w.-]+/)*[\w-]+(?:[.\w-]*)\." + FILE_EXT + r")(?![\w/])")
BRACE_RE = re.compile(r"(?<![\w*])((?:[\w.-]+/)*[\w-]*)\{([\w.,-]+)\}((?:[\w-]*)(?:\." + FILE_EXT + r")?)(?![\w{])")
QUAL_RE = re.compile(r"\b((?:[A-Za-z_]\w*::)+)(~?[A-Za-z_]\w*)")
CALL_RE = re.compile(r"(?<![\w.:>])([a-z][a-z0-9]*_[a-z0-9_]+)\(")
CITE_RE = re.compile(
    r"(?:(docs/[\w-]+\.md)\s+)?(§|decision\s+#?)(\d+[a-z]?(?:\.\d+)*)(?:\s+item\s+(\d+))?")
SPEC_RE = re.compile(r"\b[Ss]pec\s+(§|decision)|shared/spec")


def doc_sections(path, cache={}):
    if path in cache:
        return cache[path]
    sections, decisions = {}, set()
    full = os.path.join(ROOT, path)
    if os.path.exists(full):
        current = None
        for line in open(full, encoding="utf-8"):
            m = re.match(r"#+\s+(\d+(?:\.\d+)*)\.?\s", line)
            if m:
                current = m.group(1)
                sections[current] = set()
                continue
            m = re.match(r"\s*(\d+)\.\s", line)
            if m and current:
                sections[current].add(m.group(1))
            m = re.match(r"\|\s*(\d+[a-z]?)\s*\|", line)
            if m:
                decisions.add(m.group(1))
    cache[path] = (os.path.exists(full), sections, decisions)
    return cache[path]


def check_citation(doc, kind, number, item):
    exists, sections, decisions = doc_sections(doc)
    if not exists:
        return f"{doc} does not exist"
    if kind.startswith("decision"):
        return None if number in decisions else f"{doc} has no decision {number}"
    if number not in sections:
        return f"{doc} has no section §{number}"
    if item and item not in sections[number]:
        return f"{doc} §{number} has no item {item}"
    return None


TOP_DIRS = ("src", "include", "tests", "python", "tools", "fuzz", "reference", "bench", "examples",
            "scripts", "cmake", "docs")
# A path in a page: from a top folder of the repository, to a file or (ending in /) a folder.
PAGE_PATH_RE = re.compile(r"(?<![\w./<$-])((?:" + "|".join(TOP_DIRS) + r")/[\w./-]*[\w/])")
# Lines that cite another project's files (the source lists of the contract pages): their paths are
# that project's, not this repository's.
UPSTREAM_LINE_MARKERS = ("ops-transformer", "op-plugin", "op_plugin", "same repo", "OT `", "[SFA-",
                         "[RC]", "deepseek-ai/", "gitcode", "vllm-project/")
# Names that pages write as calls and that are not this code's: upstream functions (DeepSeek's
# model code, DeepGEMM, torch_npu) and the notation of formulas.
PAGE_EXTERNAL_SYMBOLS = {
    "npu_quant_lightning_indexer", "npu_lightning_indexer_grad", "wq_b", "k_norm", "weights_proj",
    "wk_weights_proj", "fp8_index", "apply_rotary_emb", "fp8_mqa_logits", "fp8_paged_mqa_logits",
    "sat_int8", "t_kv", "t_allgather", "t_merge",
}
LINK_RE = re.compile(r"\]\(([^)\s]+)\)")
TICK_RE = re.compile(r"`([^`\n]+)`")
TARGET_RE = re.compile(r"--target\s+([\w-]+)")
CMAKE_TARGET_RE = re.compile(r"add_(?:executable|library|custom_target)\(\s*([\w-]+)")


def check_pages(files, code_words, targets):
    """The pages (README.md, docs/, bench/, examples/): what they name must exist too (code_words:
    the identifiers of the code and the external ones; targets: the CMake targets).
      - a relative Markdown link ](path) names a file or folder, from the page's own folder;
      - a path from a top folder (src/..., bench/peers.py, tests/support/) names one of the
        repository, from its root or from the page's folder (a path with *, < or { is a
        pattern, not checked);
      - a `snake_case()` call in backticks names an identifier the code uses;
      - `--target NAME` and a `kvflash_*` name in backticks name a CMake target or an identifier
        the code uses."""
    problems = []
    known = set(files)
    for f in files:
        parts = f.split("/")
        for i in range(1, len(parts)):
            known.add("/".join(parts[:i]) + "/")
    pages = [f for f in files if f.endswith(".md") and f.split("/")[0] in ("docs", "bench", "examples")]
    pages.append("README.md")
    for f in pages:
        base = os.path.dirname(f)
        for n, line in enumerate(open(os.path.join(ROOT, f), encoding="utf-8"), 1):
            where = f"{f}:{n}"
            for m in LINK_RE.finditer(line):
                link = m.group(1).split("#")[0]
                if not link or re.match(r"^[a-z]+:", link):
                    continue
                path = os.path.normpath(os.path.join(base, link)).replace(os.sep, "/")
                if path not in known and path + "/" not in known:
                    problems.append(f"{where}: links {link}, which does not exist")
            upstream = any(marker in line for marker in UPSTREAM_LINE_MARKERS)
            for m in PAGE_PATH_RE.finditer(line if not upstream else ""):
                path = m.group(1)
                rest = line[m.end():m.end() + 2]
                # a pattern (ops.{hpp,cpp}, li_fuzz.*, RUN-{1t,2t}.json, <build>) or a placeholder
                if re.match(r"[*<{-]|\.[*{]", rest) or re.search(r"(^|[/-])[A-Z]+([.-]|$)", path):
                    continue
                path = path.rstrip(".")
                # from the repository's root, or from the page's folder (examples/README.md's
                # python/...)
                if not os.path.exists(os.path.join(ROOT, path)) and \
                        not os.path.exists(os.path.join(ROOT, base, path)):
                    problems.append(f"{where}: names {path}, which does not exist")
            for t in TICK_RE.finditer(line):
                tick = t.group(1)
                for m in CALL_RE.finditer(tick):
                    if m.group(1) not in code_words:
                        problems.append(f"{where}: names {m.group(1)}(), which the code does not have")
                for m in re.finditer(r"(?<![\w.])(kvflash_\w+)", tick):
                    if m.group(1) not in code_words and m.group(1) not in targets:
                        problems.append(f"{where}: names {m.group(1)}, which no target or code has")
            problems += check_titles(where, line)
            for m in TARGET_RE.finditer(line):
                if m.group(1) not in targets and not m.group(1).isupper():
                    problems.append(f"{where}: builds --target {m.group(1)}, which CMake does not have")
    return problems


# A cited section by its title: `docs/api.md, "Building a program"`, `python.md "Threads"`.
TITLE_RE = re.compile(r"\b((?:docs/)?[\w-]+\.md),? \"([^\"]{3,80})\"")


def doc_titles(path, cache={}):
    """The headings of a page, without their #s."""
    if path not in cache:
        full = os.path.join(ROOT, path)
        cache[path] = [line.lstrip("#").strip() for line in open(full, encoding="utf-8")
                       if line.startswith("#")] if os.path.exists(full) else None
    return cache[path]


def check_titles(where, text):
    """Every section cited by title names a heading of that page (or the start of one: a citation
    may shorten it)."""
    problems = []
    for m in TITLE_RE.finditer(text):
        page = m.group(1) if m.group(1).startswith("docs/") else "docs/" + m.group(1)
        titles = doc_titles(page)
        if titles is None:
            continue  # not a page of docs/ (the path checks report a missing one)
        if not any(t.startswith(m.group(2)) for t in titles):
            problems.append(f"{where}: cites {m.group(1)} \"{m.group(2)}\", which has no such section")
    return problems


# The folders whose README.md indexes every file in them (bench/runs/ holds data: the folder is
# named, not each run).
INDEXED_FOLDERS = ("docs", "bench", "examples")


def check_indexes(files):
    """Each INDEXED_FOLDERS/README.md names every file of its folder, by its path from the folder."""
    problems = []
    for folder in INDEXED_FOLDERS:
        index = f"{folder}/README.md"
        if not os.path.exists(os.path.join(ROOT, index)):
            problems.append(f"{index}: missing (it indexes every file of {folder}/)")
            continue
        text = open(os.path.join(ROOT, index), encoding="utf-8").read()
        for f in files:
            if not f.startswith(folder + "/") or f == index or f.startswith("bench/runs/"):
                continue
            if f[len(folder) + 1:] not in text:
                problems.append(f"{index}: does not list {f}")
    # The README's list of documents names every page of docs/ as well.
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    for f in files:
        if f.startswith("docs/") and f.endswith(".md") and f != "docs/README.md" and f not in readme:
            problems.append(f"README.md: does not name {f}")
    return problems


def main():
    files = repo_files()
    tails = set()
    names = set()
    for f in files:
        names.add(os.path.basename(f))
        parts = f.split("/")
        for i in range(len(parts)):
            tails.add("/".join(parts[i:]))
    scanned = [f for f in files if f.split("/")[0] in SCANNED and
               (f.endswith(CODE_EXT) or os.path.basename(f) == "CMakeLists.txt")]
    per_file, code_words = {}, set()
    for f in scanned:
        text = open(os.path.join(ROOT, f), encoding="utf-8", errors="replace").read()
        comments, code = split_code(f, text)
        per_file[f] = comments
        code_words.update(re.findall(r"[A-Za-z_]\w*", code))
    problems = []
    for f, comments in per_file.items():
        for n, c in comments:
            where = f"{f}:{n}"
            paths = [m.group(1) for m in PATH_RE.finditer(c)]
            for m in BRACE_RE.finditer(c):  # ops.{hpp,cpp}
                cands = [m.group(1) + alt + m.group(3) for alt in m.group(2).split(",")]
                paths += [p for p in cands if re.search(r"\." + FILE_EXT + "$", p)]
            for p in paths:
                p = p.rstrip(".")
                if "{" in p or p in EXTERNAL_FILES or p.startswith(("http", "www.")):
                    continue
                if p.startswith("../") or p.startswith("shared/"):
                    problems.append(f"{where}: names {p}, outside the repository")
                    continue
                known = p in tails if "/" in p else p in names
                if not known and re.match(r"^[\w-]+\.(md|txt|json|toml|yml)$", p) is None or \
                        (not known and "/" in p):
                    problems.append(f"{where}: names {p}, which does not exist")
            for m in QUAL_RE.finditer(c):
                sym = m.group(2).lstrip("~")
                if m.group(1).split("::")[0] in ("std", "at", "c10", "torch", "testing", "CLI"):
                    continue
                if sym not in code_words and sym not in EXTERNAL_SYMBOLS:
                    problems.append(f"{where}: names {m.group(1)}{m.group(2)}, which the code does not have")
            for m in CALL_RE.finditer(c):
                sym = m.group(1)
                if sym not in code_words and sym not in EXTERNAL_SYMBOLS:
                    problems.append(f"{where}: names {sym}(), which the code does not have")
            problems += check_titles(where, c)
            if SPEC_RE.search(c):
                problems.append(f"{where}: cites the contract outside docs/ (write docs/semantics.md §...)")
            for m in CITE_RE.finditer(c):
                doc = m.group(1) or "docs/semantics.md"
                err = check_citation(doc, m.group(2), m.group(3).rstrip("."), m.group(4))
                if err:
                    problems.append(f"{where}: cites {m.group(0).strip()}: {err}")
    targets = set()
    for f in files:
        if f.endswith(".cmake") or os.path.basename(f) == "CMakeLists.txt":
            targets.update(CMAKE_TARGET_RE.findall(open(os.path.join(ROOT, f), encoding="utf-8").read()))
    # The test executables tests/CMakeLists.txt makes in loops: one per *_test.cpp, one per area.
    areas = re.search(r"set\(KVFLASH_TEST_AREAS ([\w ]+)\)",
                      open(os.path.join(ROOT, "tests/CMakeLists.txt"), encoding="utf-8").read())
    targets.update(a + "_tests" for a in (areas.group(1).split() if areas else []) + ["misc"])
    targets.update(os.path.basename(f)[:-4] for f in files
                   if f.startswith("tests/") and f.count("/") == 1 and f.endswith("_test.cpp"))
    problems += check_pages(files, code_words | EXTERNAL_SYMBOLS | PAGE_EXTERNAL_SYMBOLS, targets)
    problems += check_indexes(files)
    # The pages of docs/ (and the README) cite the contract the same way; check their citations.
    for f in files:
        if not (f.startswith("docs/") and f.endswith(".md")) and f != "README.md":
            continue
        for n, line in enumerate(open(os.path.join(ROOT, f), encoding="utf-8"), 1):
            if SPEC_RE.search(line) and f != "docs/semantics.md":
                problems.append(f"{f}:{n}: cites the contract outside docs/ (write docs/semantics.md §...)")
            for m in CITE_RE.finditer(line):
                # A page's bare citation is of its own sections or of docs/semantics.md's;
                # "x.y.z" may also be point z of section x.y.
                number = m.group(3).rstrip(".")
                docs = [m.group(1)] if m.group(1) else [f, "docs/semantics.md"]
                tries = [(number, m.group(4))]
                if m.group(1) is None and number.count(".") == 2:
                    tries.append((number.rsplit(".", 1)[0], None))
                errs = [check_citation(d, m.group(2), num, item) for d in docs for num, item in tries]
                err = None if None in errs else errs[0]
                if err:
                    problems.append(f"{f}:{n}: cites {m.group(0).strip()}: {err}")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} stale reference(s) in comments and pages", file=sys.stderr)
        return 1
    print(f"comment references: {len(per_file)} files and the pages checked, all names exist")
    return 0


if __name__ == "__main__":
    sys.exit(main())

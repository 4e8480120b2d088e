#!/usr/bin/env python3
"""check-paths.py — every repository path named in the docs and comments exists (ctest check_paths,
label unit).

Scans the tracked text files (.md .c .h .cu .cuh .sh .py .cmake, CMakeLists.txt) for:
  - tokens that start with a top-level folder of the repository (`gemm/tc/README.md`,
    `runtime/tokenizer.c`, `scripts/test.sh`, `gemm/decode/`): each must name a file or folder of
    the repository (tracked, or present in the working tree outside build folders);
  - relative markdown links in .md files (`[TABLE.md](TABLE.md)`, `[x](../bf16.h)`), resolved
    from the file's folder; URLs and `#anchors` are not checked;
  - bare document names (upper-case, ending in .md, no folder): some file of the repository
    must have that name;
  - absolute paths into a developer's machine (under /work or /home): never valid.
To stay precise it skips URLs, tokens with wildcards or placeholders (`*`, `{`, `$`, `<`, `NN_`),
build outputs (build*/...), and does not read JSON. Prints `file:line: path` for each dangling
path and exits 1 when there is one.

Usage: check-paths.py [repo-root]   (default: the folder above this script)
"""
import os
import re
import subprocess
import sys

TEXT_EXT = (".md", ".c", ".h", ".cu", ".cuh", ".sh", ".py", ".cmake")
MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
BARE_DOC = re.compile(r"(?<![\w./-])([A-Z][A-Z0-9_]*(?:-[A-Z0-9_]+)*\.md)\b")
MACHINE = re.compile(r"(?<![\w.~-])/(?:work|home)/[\w./-]+")
SKIP_CHARS = set("*{}$<>%?[]|\\")
TRAIL = ".,:;)]}'\"`!"


def tracked(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                         capture_output=True).stdout.decode()
    return [f for f in out.split("\0") if f]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    files = tracked(root)
    known = set(files)
    for f in files:  # every folder above a tracked file
        parts = f.split("/")
        for i in range(1, len(parts)):
            known.add("/".join(parts[:i]))
    basenames = {os.path.basename(f) for f in files}
    exts = {os.path.splitext(f)[1] for f in files}
    tops = sorted({f.split("/")[0] for f in files if "/" in f and not f.startswith("build")},
                  key=len, reverse=True)
    token = re.compile(r"(?<![\w./~-])((?:%s)/[\w./+-]*)" % "|".join(re.escape(t) for t in tops))

    def exists(p):
        p = os.path.normpath(p)
        if p in known:
            return True
        full = os.path.join(root, p)  # new files not yet added: the working tree counts
        return os.path.exists(full) and not p.startswith("build")

    bad = []
    for f in files:
        if not (f.endswith(TEXT_EXT) or os.path.basename(f) == "CMakeLists.txt"):
            continue
        try:
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                lines = fh.read().split("\n")
        except (OSError, UnicodeDecodeError):
            continue
        here = os.path.dirname(f)
        for n, line in enumerate(lines, 1):
            for m in MACHINE.finditer(line):
                bad.append((f, n, m.group(0).rstrip(TRAIL)))
            text = URL.sub(" ", line)
            if f.endswith(".md"):
                for m in MD_LINK.finditer(text):
                    target = m.group(1).split("#", 1)[0]
                    if not target or target.startswith(("mailto:", "/")) or SKIP_CHARS & set(target):
                        continue
                    if not exists(os.path.join(here, target)):
                        bad.append((f, n, target))
            for m in token.finditer(text):
                p = m.group(1).rstrip(TRAIL)
                p = re.sub(r":\d+$", "", p).rstrip(TRAIL)
                end = m.end(1)
                if end < len(text) and text[end] in SKIP_CHARS:
                    continue  # a pattern such as gemm/decode/NN_*.cu or .../bench-{nn,nt}.json
                if "NN_" in p or p.endswith("/.") or os.path.splitext(p)[1] not in exts:
                    continue  # a pattern, or another project's file (tokenizers' models/bpe/word.rs)
                if not exists(p.rstrip("/")):
                    bad.append((f, n, p))
            for m in BARE_DOC.finditer(text):
                if m.group(1) not in basenames and not exists(os.path.join(here, m.group(1))):
                    bad.append((f, n, m.group(1)))
    bad = sorted(set(bad), key=lambda b: (b[0], b[1], b[2]))
    for f, n, p in bad:
        print(f"{f}:{n}: {p}")
    if bad:
        print(f"check-paths: {len(bad)} dangling path(s)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

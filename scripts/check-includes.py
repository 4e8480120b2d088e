#!/usr/bin/env python3
"""check-includes.py — the project's include layering, checked (ctest check_includes, label unit).

Floors, lowest first; a file may include its own floor and the ones below it, never one above:
  0  include/ (the public header tinfer.h) and base/ (status and error slots, dtypes)
  1  gemm/ and ops/ (kernels; neither includes the other, and within gemm/ the tensor-core
     family gemm/tc/ and the decode family gemm/decode/ do not include each other's files:
     what both use lives at the gemm/ level, gemm/cuda/). The CUDA support every kernel file
     needs, the launch / error check, the device facts, programmatic dependent launch and the
     mbarrier / bulk-copy primitives (gemm/cuda/cuda_check.h, gemm/cuda/device.h,
     gemm/cuda/pdl.cuh, gemm/cuda/mbar.cuh), counts as floor 0: ops/cuda/ includes it too.
  2  models/
  3  runtime/
  examples/ and tests/ may include anything.

For every tracked .c/.h/.cu/.cuh file each `#include "..."` is resolved as the compiler does:
relative to the including file's folder, then the include folders the build passes (INCLUDE_DIRS;
those that do not exist are skipped). An include that resolves to no project file (a system or
third-party header) is not checked. Prints `file:line: <floor> includes <floor> (<target>)` for
every violation and exits 1 when there is one.

Usage: check-includes.py [repo-root]   (default: the folder above this script)
"""
import os
import re
import subprocess
import sys

# The include folders of the build (CMake target_include_directories / include_directories).
INCLUDE_DIRS = ["", "include", "runtime", "models/convert", "tests/common", "tests/loader"]

FLOORS = [("include/", 0, "include"), ("base/", 0, "base"), ("gemm/", 1, "gemm"), ("ops/", 1, "ops"),
          ("models/", 2, "models"), ("runtime/", 3, "runtime")]
# CUDA support shared by every kernel family (floor 0 for this check; see the docstring).
SHARED_CUDA = ("gemm/cuda/cuda_check.h", "gemm/cuda/device.h", "gemm/cuda/pdl.cuh",
               "gemm/cuda/mbar.cuh")
SOURCE_EXT = (".c", ".h", ".cu", ".cuh")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def floor_of(path):
    """(floor number, name) of a repo-relative path, or None for files that may include anything."""
    for prefix, floor, name in FLOORS:
        if path.startswith(prefix):
            return floor, name
    return None


def family_of(path):
    """The gemm kernel family a path belongs to ('tc', 'decode'), else None."""
    for fam in ("tc", "decode"):
        if path.startswith("gemm/" + fam + "/"):
            return fam
    return None


def tracked_sources(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout.decode()
        files = [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk the tree
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith(".") and not x.startswith("build")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(f for f in files if f.endswith(SOURCE_EXT) and os.path.isfile(os.path.join(root, f)))


def resolve(root, src, name):
    """Repo-relative path the include `name` of file `src` resolves to, or None."""
    cands = [os.path.join(os.path.dirname(src), name)]
    cands += [os.path.join(d, name) for d in INCLUDE_DIRS if d == "" or os.path.isdir(os.path.join(root, d))]
    for c in cands:
        c = os.path.normpath(c)
        if not c.startswith("..") and os.path.isfile(os.path.join(root, c)):
            return c.replace(os.sep, "/")
    return None


def check(root):
    bad = []
    for src in tracked_sources(root):
        mine = floor_of(src)
        if mine is None:
            continue
        with open(os.path.join(root, src), encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        for no, line in enumerate(lines, 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            target = resolve(root, src, m.group(1))
            if target is None:
                continue
            theirs = (0, "cuda support") if target in SHARED_CUDA else floor_of(target)
            if theirs is None:  # a test or example header: above every library floor
                theirs = (4, target.split("/")[0])
            why = None
            if theirs[0] > mine[0]:
                why = "floor %d (%s) includes floor %d (%s)" % (mine[0], mine[1], theirs[0], theirs[1])
            elif theirs[0] == mine[0] and theirs[1] != mine[1] and mine[0] != 0:
                why = "%s includes %s (same floor, kept apart)" % (mine[1], theirs[1])
            else:
                a, b = family_of(src), family_of(target)
                if a and b and a != b:
                    why = "gemm/%s includes gemm/%s internals" % (a, b)
            if why:
                bad.append("%s:%d: %s (%s)" % (src, no, why, target))
    return bad


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    bad = check(root)
    for b in bad:
        print(b)
    n = len(tracked_sources(root))
    if bad:
        print("check-includes: %d include(s) point upward or across (%d files checked)" % (len(bad), n))
        return 1
    print("check-includes: ok (%d files checked)" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())

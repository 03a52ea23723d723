#!/usr/bin/env python3
"""Which fields of the Kernel does each mm function that takes the whole Kernel touch?

docs/architecture.md ("Who takes the whole Kernel") states the rule: an entry point that
crosses subsystems takes `&mut Kernel`; a function that works on one structure takes that
structure. This script measures how far the model is from it.

For every fn under crates/foliosim-model/src/mm/ with a parameter of type `&Kernel` or
`&mut Kernel` (and every method of `impl Kernel`, whose receiver is the whole Kernel), it
reads the body and sorts each use of the parameter:
  - `k.field` (a field of `pub struct Kernel` in mm/mod.rs): that field is touched;
  - `k.method(..)` (a method of `impl Kernel`) or a bare `k` (passed on, reborrowed):
    the function needs the whole Kernel.
A function that touches exactly one field and never needs the whole Kernel is a candidate:
it can take that structure instead. Text-level (comments and strings stripped, braces
matched), not a Rust parser: a closure parameter shadowing `k` would be miscounted.

Usage: tools/house/kernel_borrowers.py [--list] [--under PREFIX ...] [--tsv] [--src DIR]
  (no flags)  counts overall and per area, then the candidates
  --list      every whole-Kernel function with the fields it touches
  --tsv       one line per function: file line fn mut whole in_trait fields
  --src DIR   read another tree's model src/ (e.g. `git archive main` unpacked)
"""
import argparse
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "crates", "foliosim-model", "src")
MM = os.path.join(ROOT, "mm")

TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|::|->|=>|[{}()\[\].,;:&*<>=!|]|\S")


def strip(text):
    """Blank comments, strings and char literals, keeping newlines (for line numbers)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i : j + 1]))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:]):
            m = re.match(r"'(\\.|[^\\'])'", text[i:])
            out.append(" " * len(m.group(0)))
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def tokens(text):
    line = 1
    pos = 0
    for m in TOKEN.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        yield m.group(0), line


def kernel_fields():
    text = strip(open(os.path.join(MM, "mod.rs")).read())
    body = text[text.index("pub struct Kernel {") :]
    body = body[: body.index("\n}")]
    return set(re.findall(r"pub\s+([a-z_][a-z0-9_]*)\s*:", body))


def match_close(toks, i, open_, close):
    depth = 0
    for j in range(i, len(toks)):
        if toks[j][0] == open_:
            depth += 1
        elif toks[j][0] == close:
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


def impl_kernel_ranges(toks):
    """Token index ranges of `impl Kernel {` blocks."""
    out = []
    for i in range(len(toks) - 2):
        if toks[i][0] == "impl" and toks[i + 1][0] == "Kernel" and toks[i + 2][0] == "{":
            out.append((i + 2, match_close(toks, i + 2, "{", "}")))
    return out


def trait_ranges(toks):
    """Token index ranges of `trait X {` and `impl X for Y {` blocks: their fns' signatures
    are the trait's, so one cannot change alone."""
    out = []
    for i, (t, _) in enumerate(toks):
        if t not in ("trait", "impl") or (i > 0 and toks[i - 1][0] in (".", "::")):
            continue
        j = i + 1
        while j < len(toks) and toks[j][0] not in ("{", ";"):
            j += 1
        if j < len(toks) and toks[j][0] == "{":
            if t == "trait" or any(x[0] == "for" for x in toks[i:j]):
                out.append((j, match_close(toks, j, "{", "}")))
    return out


def test_ranges(toks):
    """Token index ranges of `mod tests {` blocks: test set-up is not the model."""
    return [
        (i + 2, match_close(toks, i + 2, "{", "}"))
        for i in range(len(toks) - 2)
        if toks[i][0] == "mod" and toks[i + 1][0] == "tests" and toks[i + 2][0] == "{"
    ]


def functions(path):
    """Yield (name, line, kernel_param, mut, in_trait, body_tokens) for the fns taking the
    whole Kernel, test code left out (files tests.rs and *_test.rs, `mod tests` blocks)."""
    if re.search(r"(^|_)tests?\.rs$", os.path.basename(path)):
        return
    toks = list(tokens(strip(open(path).read())))
    impls, traits, tests = impl_kernel_ranges(toks), trait_ranges(toks), test_ranges(toks)
    for i, (t, line) in enumerate(toks):
        if t != "fn" or i + 2 >= len(toks) or toks[i + 2][0] not in ("(", "<"):
            continue
        if any(a < i < b for a, b in tests):
            continue
        name = toks[i + 1][0]
        p = i + 2
        if toks[p][0] == "<":
            depth = 0
            while p < len(toks):
                depth += toks[p][0] == "<"
                depth -= toks[p][0] == ">"
                p += 1
                if depth == 0:
                    break
        if p >= len(toks) or toks[p][0] != "(":
            continue
        close = match_close(toks, p, "(", ")")
        params = [x[0] for x in toks[p + 1 : close]]
        param, mut = kernel_param(params, any(a < i < b for a, b in impls))
        if not param:
            continue
        b = close
        while b < len(toks) and toks[b][0] not in ("{", ";"):
            b += 1
        if b >= len(toks) or toks[b][0] == ";":
            continue
        end = match_close(toks, b, "{", "}")
        in_trait = any(a < i < b2 for a, b2 in traits)
        yield name, line, param, mut, in_trait, toks[b + 1 : end]


def kernel_param(params, in_impl_kernel):
    if in_impl_kernel and "self" in params[:3]:
        return "self", "mut" in params[: params.index("self")]
    for j in range(len(params) - 2):
        if params[j + 1] == ":" and params[j + 2] == "&":
            rest = params[j + 3 : j + 5]
            if rest[:1] == ["Kernel"]:
                return params[j], False
            if rest == ["mut", "Kernel"]:
                return params[j], True
    return None, False


def uses(body, param, fields, methods):
    """The Kernel fields the body touches, the Kernel methods it calls on the parameter, and
    whether it passes the parameter on whole (a bare `k`)."""
    touched, called, passed = set(), set(), False
    for j, (t, _) in enumerate(body):
        if t != param or (j > 0 and body[j - 1][0] in (".", "::")):
            continue
        nxt = body[j + 1][0] if j + 1 < len(body) else ""
        if nxt == ":":  # a struct-literal field or a type ascription, not a use
            continue
        if nxt != ".":
            passed = True
            continue
        name = body[j + 2][0] if j + 2 < len(body) else ""
        call = j + 3 < len(body) and body[j + 3][0] in ("(", "::")
        if name in fields and not call:
            touched.add(name)
        elif name in methods or call:
            called.add(name)
        else:
            touched.add(name)
    return touched, called, passed


def kernel_methods():
    names = set()
    for path in rust_files(ROOT):
        toks = list(tokens(strip(open(path).read())))
        for a, b in impl_kernel_ranges(toks):
            names.update(toks[k + 1][0] for k in range(a, b) if toks[k][0] == "fn")
    return names


def rust_files(root):
    for d, _, files in sorted(os.walk(root)):
        for f in sorted(files):
            if f.endswith(".rs"):
                yield os.path.join(d, f)


def area(rel, prefixes):
    for p in prefixes:
        if rel.startswith(p):
            return True
    return False


MINE = ["compaction", "migrate", "khugepaged", "huge_memory", "memory.rs", "thp_fault_alloc",
        "rmap", "swapfile", "swap_state", "swap_alloc", "zswap", "swap_readahead",
        "swapout_fallback", "swap_devstore", "tlb"]


class Fn:
    def __init__(self, rel, line, name, mut, in_trait, touched, called, passed, method):
        self.rel, self.line, self.name, self.mut, self.in_trait = rel, line, name, mut, in_trait
        self.touched, self.called, self.passed, self.method = touched, called, passed, method
        self.whole = passed

    def where(self):
        return f"{self.rel}:{self.line} {self.name} ({'&mut' if self.mut else '&'})"


def resolve(rows):
    """Fold the fields of the Kernel methods a fn calls into its own (to a fixpoint): `k.node(n)`
    touches what `Kernel::node` touches. A call of a method that passes the Kernel on, or of an
    unknown method, needs the whole Kernel."""
    methods = {}
    for r in rows:
        if r.method:
            methods.setdefault(r.name, []).append(r)
    changed = True
    while changed:
        changed = False
        for r in rows:
            before = (len(r.touched), r.whole)
            for m in r.called:
                defs = methods.get(m)
                if not defs:
                    r.whole = True
                for d in defs or []:
                    r.touched |= d.touched
                    r.whole |= d.whole
            changed |= before != (len(r.touched), r.whole)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--tsv", action="store_true")
    ap.add_argument("--under", nargs="*", default=None, help="mm/ path prefixes (default: all)")
    ap.add_argument("--src", help="the model's src/ to read (default: this checkout's)")
    a = ap.parse_args()
    if a.src:
        global ROOT, MM
        ROOT, MM = a.src, os.path.join(a.src, "mm")
    fields, methods = kernel_fields(), kernel_methods()
    rows = []
    for path in rust_files(MM):
        rel = os.path.relpath(path, MM)
        for name, line, param, mut, in_trait, body in functions(path):
            touched, called, passed = uses(body, param, fields, methods)
            rows.append(Fn(rel, line, name, mut, in_trait, touched, called, passed, param == "self"))
    resolve(rows)
    if a.under:
        rows = [r for r in rows if area(r.rel, a.under)]
    if a.tsv:
        for r in rows:
            print(f"{r.rel}\t{r.line}\t{r.name}\t{'mut' if r.mut else 'ref'}\t{int(r.whole)}"
                  f"\t{int(r.in_trait)}\t{','.join(sorted(r.touched))}")
        return
    summary(rows, a.list)


# Read-only during a run, like the kernel's boot parameters and sysctls: a function on one
# structure may borrow these beside it.
CONFIG = {"cfg", "cost", "compaction"}


def summary(rows, listing):
    free = [r for r in rows if not r.whole and not r.method]
    cands = [r for r in free if len(r.touched) <= 1 and not r.in_trait]
    with_cfg = [
        r for r in free
        if len(r.touched) > 1 and len(r.touched - CONFIG) == 1 and not r.in_trait
    ]
    traits = [r for r in free if len(r.touched) <= 1 and r.in_trait]
    mine = [r for r in rows if area(r.rel, MINE)]
    print(f"whole-Kernel fns under mm/: {len(rows)} ({sum(r.mut for r in rows)} &mut)")
    print(f"  methods of impl Kernel (self): {sum(r.method for r in rows)}")
    print(f"  in house4's area ({' '.join(MINE)}): {len(mine)}")
    print(f"  need the whole Kernel (pass it on, or call a method that does): "
          f"{sum(r.whole for r in rows)}")
    for n in (0, 1, 2):
        print(f"  free fns touching exactly {n} field(s), nothing passed on: "
              f"{sum(len(r.touched) == n for r in free)}")
    print(f"  candidates (0 or 1 field, not a trait method): {len(cands)}"
          f" (in house4's area: {sum(area(r.rel, MINE) for r in cands)})")
    print(f"  one structure plus configuration ({', '.join(sorted(CONFIG))}): {len(with_cfg)}"
          f" (in house4's area: {sum(area(r.rel, MINE) for r in with_cfg)})")
    print(f"  trait methods touching 0 or 1 field (the trait's signature decides): {len(traits)}")
    print("\ncandidates (file:line fn -> the field):")
    for r in sorted(cands, key=lambda r: (r.rel, r.line)):
        print(f"  {r.where()} -> {' '.join(sorted(r.touched)) or '(none)'}")
    print("\none structure plus configuration (file:line fn -> the fields):")
    for r in sorted(with_cfg, key=lambda r: (r.rel, r.line)):
        print(f"  {r.where()} -> {' '.join(sorted(r.touched))}")
    if listing:
        print("\nevery whole-Kernel fn (file:line fn, WHOLE or the fields it touches):")
        for r in rows:
            tag = "WHOLE" if r.whole else ("trait " if r.in_trait else "") + " ".join(sorted(r.touched))
            print(f"  {r.where()} {tag}")


if __name__ == "__main__":
    sys.exit(main())

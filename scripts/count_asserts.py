#!/usr/bin/env python3
"""Counts the asserted checks written in the integration tests (tests/**/*.rs).

Usage: scripts/count_asserts.py [DIR ...]   (default: tests)
Prints one line per file and a total; `--total` prints only the total.

The rule (static, on the source text; comments and string contents are ignored):

1. Every call of an assertion macro counts 1: assert!, assert_eq!, assert_ne!, debug_assert*!,
   prop_assert!, prop_assert_eq!, prop_assert_ne!.
2. Every call of an asserting helper counts 1 (its definition `fn name(` does not):
   - a function or method whose name starts with `assert_`, `check` or `expect_`, or is `verify`
     / `verify_dumps`;
   - a checker method that compares a reply with the value given at the call site, called with
     at least one argument: `.is(` `.is3(` `.both(` `.is_err(` `.absent(` `.eq(` `.eqb(`
     `.eq_args(` `.err(` `.err_args(` `.ok(` `.ok_args(` `.int(` (the steppers of commands.rs,
     cases.rs and tests/common) and `.fail(` (a mismatch reported by hand).
3. A `for PATTERN in [ROWS]` / `in &[ROWS]` loop over a literal array (a table) counts its body
   once per row: rows x (checks in the body). A loop over anything else counts its body once.
4. A step script, `.steps(r#"..."#)` / `.steps("...")`, counts one per step line (a line that is
   not blank and not a `#` comment).
"""
import glob
import os
import re
import sys

MACRO = re.compile(r"\b(?:debug_)?(?:prop_)?assert(?:_eq|_ne)?!\s*[(\[{]")
HELPER_FN = re.compile(r"(?<![\w.])(?:assert_\w+|check\w*|expect_\w+|verify|verify_dumps)\s*\(")
HELPER_METHOD = re.compile(
    r"\.(?:assert_\w+|check\w*|expect_\w+|verify|is|is3|both|is_err|absent|eq|eqb|eq_args|err|"
    r"err_args|ok|ok_args|int|fail)\s*\(\s*(?!\))"
)
FN_DEF = re.compile(r"\bfn\s+$")
STEPS = re.compile(r"\.steps\s*\(\s*")


def strip(src):
    """Blanks comments; keeps string literals (returned separately) but blanks their inside."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif re.match(r'b?r(#*)"', src[i:i + 8]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'b?r(#*)"', src[i:])
            end = '"' + m.group(1)
            j = src.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            body = src[i:j]
            out.append(body[: m.end()] + re.sub(r"[^\n]", "x", body[m.end(): -len(end)]) + end)
            i = j
        elif c == '"' or (c == "b" and src.startswith('b"', i) and (i == 0 or not src[i - 1].isalnum())):
            k = i + (1 if c == '"' else 2)
            j = k
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:k] + re.sub(r"[^\n]", "x", src[k:j]) + '"')
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'|'\\x..'|'\\u\{[0-9a-fA-F]+\}'", src[i:i + 12]):
            m = re.match(r"'(\\.|[^\\'])'|'\\x..'|'\\u\{[0-9a-fA-F]+\}'", src[i:i + 12])
            out.append("'x'" + " " * (m.end() - 3))
            i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def match_close(s, i, open_c, close_c):
    """Index just past the bracket closing the one at s[i]."""
    d = 0
    for j in range(i, len(s)):
        if s[j] == open_c:
            d += 1
        elif s[j] == close_c:
            d -= 1
            if d == 0:
                return j + 1
    return len(s)


def top_level_items(s):
    """Number of top-level comma-separated items of an array literal body."""
    d, items, cur = 0, 0, False
    for ch in s:
        if ch in "([{":
            d += 1
        elif ch in ")]}":
            d -= 1
        if ch == "," and d == 0:
            items += cur
            cur = False
        elif not ch.isspace():
            cur = True
    return items + cur


def count(code, orig):
    total = 0
    i = 0
    loop = re.compile(r"\bfor\b[^{;]*?\bin\s+(&?\s*\[)?")
    while True:
        m = loop.search(code, i)
        stop = m.start() if m else len(code)
        total += flat(code[i:stop], orig[i:stop])
        if not m:
            return total
        rows = 1
        j = m.end()
        if m.group(1):
            k = code.index("[", m.start(1))
            e = match_close(code, k, "[", "]")
            rows = max(1, top_level_items(code[k + 1:e - 1]))
            total += flat(code[m.end():e], orig[m.end():e])  # checks inside the rows themselves
            j = e
        b = code.find("{", j)
        if b < 0:
            return total
        total += flat(code[m.end() if not m.group(1) else j:b], orig[m.end() if not m.group(1) else j:b])
        e = match_close(code, b, "{", "}")
        total += rows * count(code[b + 1:e - 1], orig[b + 1:e - 1])
        i = e


def flat(code, orig):
    n = len(MACRO.findall(code))
    for rx in (HELPER_FN, HELPER_METHOD):
        for m in rx.finditer(code):
            if FN_DEF.search(code[max(0, m.start() - 8):m.start()]):
                continue
            n += 1
    for m in STEPS.finditer(code):
        lit = re.match(r'r(#*)"(.*?)"\1|"((?:\\.|[^"\\])*)"', orig[m.end():], re.S)
        if lit:
            body = lit.group(2) if lit.group(2) is not None else lit.group(3)
            n += sum(1 for l in body.splitlines() if l.strip() and not l.strip().startswith("#"))
    return n


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    dirs = args or [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")]
    total, lines = 0, 0
    for d in dirs:
        for f in sorted(glob.glob(os.path.join(d, "**", "*.rs"), recursive=True)):
            src = open(f, encoding="utf-8").read()
            # helper definitions (`fn is(`) are skipped by FN_DEF; test bodies are all counted.
            n = count(strip(src), src)
            total += n
            lines += src.count("\n")
            if "--total" not in sys.argv:
                print(f"{n:6} {os.path.relpath(f)}")
    print(f"{total:6} asserted checks in {lines} lines" if "--total" not in sys.argv else total)


if __name__ == "__main__":
    main()

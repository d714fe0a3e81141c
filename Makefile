# Two set-up commands on a fresh machine: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run test test-postgres bench lint install install-dev migrate

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $@

$(DEV_STAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

install: $(STAMP)
install-dev: $(DEV_STAMP)

migrate: $(STAMP)
	$(BIN)/python manage.py migrate --noinput

run: migrate
	$(BIN)/python manage.py seed_demo
	$(BIN)/python manage.py runserver 127.0.0.1:8000

# The whole suite in two pytest-xdist workers (the machine's two cores): about two thirds of the wall time of one.
test: $(DEV_STAMP)
	$(BIN)/python -m pytest -n 2

# The Django tests against the PostgreSQL named by DATABASE_URL (.ci/run starts a throwaway cluster for it), in two
# workers (each with its own test database): half the wall time of one.
test-postgres: $(DEV_STAMP)
	@case "$$DATABASE_URL" in postgres*) ;; *) echo "test-postgres needs DATABASE_URL=postgres://..." >&2; exit 2;; esac
	$(BIN)/python -m pytest tests/web tests/postgres -n 2 --override-ini="addopts=-ra --strict-markers -p no:cacheprovider"

bench: $(STAMP)
	@$(BIN)/python -c "import fast_tavern" 2>/dev/null || $(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python -m bench

lint: $(DEV_STAMP)
	$(BIN)/ruff check .


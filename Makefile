# tally: the two commands a user needs are `make demo` and `make test`.
# Everything else (packages, configure, build) happens on the way.

BUILD      ?= build
BUILD_ASAN ?= build-asan
JOBS       ?= 2
CMAKE_GEN  := cmake -S . -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: all deps build demo test test-plain test-asan tsan ci-extra bench fuzz soak install clean

all: build

deps:
	@scripts/deps.sh build

build: deps
	@$(CMAKE_GEN) -B $(BUILD) -DTALLY_TESTS=OFF >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target tally

# The table ends with a `tally explain` line for each pod or Run that waits;
# the last lines say where the page is and how to ask why.
demo: build
	@echo "== tally simulate examples/cluster =="
	@./$(BUILD)/tally simulate examples/cluster
	@./$(BUILD)/tally simulate -o html examples/cluster > $(BUILD)/report.html 2>/dev/null
	@echo "== HTML report: $(CURDIR)/$(BUILD)/report.html =="
	@echo "== why a pod or Run waits: run a tally explain line above, as ./$(BUILD)/tally explain ..."
	@echo "   (or put tally on PATH: sudo make install, or export PATH=\"$(CURDIR)/$(BUILD):\$$PATH\") =="

test:
	@scripts/deps.sh test
	@$(MAKE) --no-print-directory test-plain test-asan

test-plain:
	@$(CMAKE_GEN) -B $(BUILD) -DTALLY_TESTS=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	@echo "== unit and scenario tests =="
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan:
	@cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DTALLY_SANITIZE=ON -DTALLY_TESTS=ON >/dev/null
	@cmake --build $(BUILD_ASAN) -j $(JOBS)
	@echo "== the same suite under ASan + UBSan =="
	@cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

tsan:
	@scripts/deps.sh test
	@scripts/tsan.sh

ci-extra:
	@scripts/deps.sh extra
	@scripts/ci-extra.sh

bench:
	@scripts/deps.sh bench
	@mkdir -p build-bench
	@bash -c 'set -o pipefail; scripts/bench.sh | tee build-bench/bench.txt'
	@scripts/plot.sh build-bench/bench.txt build-bench/plots

fuzz:
	@scripts/deps.sh extra
	@scripts/fuzz.sh $${FUZZ_SECONDS:-60}

soak:
	@scripts/deps.sh test
	@$(CMAKE_GEN) -B $(BUILD) -DTALLY_TESTS=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target test_invariants test_live
	@echo "== invariant soak: 20000 random clusters and 20000 Run event sequences (docs/reliability.md) =="
	@TALLY_PROPERTY_CASES=$${TALLY_PROPERTY_CASES:-20000} ./$(BUILD)/test_invariants
	@echo "== live ledger soak: 10^6 random watch events, each checked against a recomputation (docs/live.md) =="
	@TALLY_LIVE_EVENTS=$${TALLY_LIVE_EVENTS:-1000000} ./$(BUILD)/test_live
	@cmake --build $(BUILD) -j $(JOBS) --target tally
	@echo "== live multi-replica soak: $${LIVE_ROUNDS:-1000} rounds of failover and of each reservation race (docs/controllers.md) =="
	@python3 tests/live/failover.py $(BUILD)/tally --rounds $${LIVE_ROUNDS:-1000}
	@for mode in upsizes claims; do for n in 2 3; do \
	  python3 tests/live/reserve_race.py $(BUILD)/tally --mode $$mode --replicas $$n --rounds $${LIVE_ROUNDS:-1000} --faults || exit 1; \
	done; done

install: build
	@cmake --install $(BUILD) --prefix /usr/local

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) build-valgrind build-fuzz build-tsan

# The two commands a fresh machine needs: `make run` and `make test`. Both install what is
# missing (scripts/setup.sh), configure and build first.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
TASK ?= tasks/swi_glu
CANDIDATE ?= tests/fixtures/swi_glu/correct_fast.cpp
REFERENCE ?= $(TASK)/reference.cpp

.PHONY: setup configure build run test clean

setup:
	@bash scripts/setup.sh

configure: setup
	@test -f $(BUILD_DIR)/build.ninja || cmake -S . -B $(BUILD_DIR) -G Ninja -DTEMPER_WERROR=ON

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The main job on the bundled task: judge a candidate on every case, then time it against the
# task's reference (one measurement and one confirmation job per case, 3 s per arm).
run: build
	./$(BUILD_DIR)/temper judge $(TASK) $(CANDIDATE) --reference $(REFERENCE) \
	  --measure-jobs 1 --confirm-jobs 1 --cap 3 --json $(BUILD_DIR)/judge-report.json

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600

clean:
	rm -rf $(BUILD_DIR)

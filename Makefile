# The two commands a fresh machine needs: `make run` and `make test`. Both install what is
# missing (scripts/setup.sh), configure and build first.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
TASK ?= tasks/swi_glu
CANDIDATE ?= $(TASK)/reference.cpp

.PHONY: setup configure build run test clean

setup:
	@bash scripts/setup.sh

configure: setup
	@test -f $(BUILD_DIR)/build.ninja || cmake -S . -B $(BUILD_DIR) -G Ninja -DTEMPER_WERROR=ON

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The main job on the bundled task.
run: build
	./$(BUILD_DIR)/temper judge $(TASK) $(CANDIDATE) --json $(BUILD_DIR)/judge-report.json

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600

clean:
	rm -rf $(BUILD_DIR)

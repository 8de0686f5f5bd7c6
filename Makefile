# The two commands a fresh machine needs: `make run` and `make test`. Both install what is
# missing (scripts/setup.sh), configure and build first.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
TASK ?= tasks/swi_glu

.PHONY: setup configure build run test clean

setup:
	@bash scripts/setup.sh

configure: setup
	@test -f $(BUILD_DIR)/build.ninja || cmake -S . -B $(BUILD_DIR) -G Ninja -DTEMPER_WERROR=ON

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The main job: a campaign on the bundled task with the built-in agents (the planfile Teacher
# reads tasks/swi_glu/plans, the tuner Student tunes the plan's kernel knobs through the
# harness), short timing jobs (1 s per arm, one measurement and one confirmation job per case),
# then the final kernel judged against the starting reference and against PyTorch (at one
# thread and at its default thread count) on every case. Kernels may use every CPU temper may
# run on (--threads all), as PyTorch does by default. The campaign lives
# in $(CAMPAIGN): running `make run` again resumes it, and a finished one prints its summary.
#
# First, `temper kb bootstrap` certifies the roofline figures (bandwidth, FMA peak) this
# machine's class lacks, into ~/.temper/hw_kb (docs/kb.md), so the judge's reports give each
# case's fraction of the hardware bound: a few minutes on a new machine, nothing once done. A
# machine where it cannot finish still runs the campaign, without the roofline.
CAMPAIGN ?= campaigns/swi_glu
run: build
	-./$(BUILD_DIR)/temper kb bootstrap --quiet
	./$(BUILD_DIR)/temper run $(TASK) --dir $(CAMPAIGN) --threads all --cap 1 --measure-jobs 1 --confirm-jobs 1

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600

clean:
	rm -rf $(BUILD_DIR)

# scripts/: the repository's own checks (issue 15), also run by make test.
#   make docs          rewrites the generated parts of README.md and the man
#                      pages from shim/options.def and tools/launch_flags.def
#                      (scripts/gen-docs.sh)
#   make check-docs    fails, with a diff, when they drifted, or when the
#                      README's table differs from `spillway options`
#   make check-layers  fails on an edge between layers that points up
#                      (docs/design.md, "Layers"), and on a circle between
#                      files inside shim/ or policy/ (STRICT_LAYERS=0: only
#                      warns of circles)
# Both check themselves first: a doc or a layer broken on purpose must fail.
DOCS_GEN     := $(BUILD)/tools/gendocs
LAYER_OBJS   := $(patsubst %.c,$(BUILD)/%.o,$(filter-out bench/gpuapi_rt.c, \
                  $(wildcard shim/*.c policy/*.c stats/*.c tools/*.c bench/*.c)))

docs: $(DOCS_GEN)
	scripts/gen-docs.sh $(DOCS_GEN) .
check-docs: $(DOCS_GEN) $(BUILD)/tools/spillway
	BUILD=$(BUILD) scripts/check-docs.sh
check-layers: $(LAYER_OBJS)
	BUILD=$(BUILD) scripts/check-layers.sh $(if $(filter 0,$(STRICT_LAYERS)),--warn-circles)
.PHONY: docs check-docs check-layers

UNIT_TESTS += scripts/check-docs.sh scripts/check-layers.sh

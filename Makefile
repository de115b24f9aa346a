# tollgate: a gVisor-first OCI runtime shim with a governed tool bridge.
#
# make            build build/tollgate (and the in-container client)
# make deps       install missing Debian packages through apt-get, and the
#                 newest runsc the Debian archive offers (Debian 12: from
#                 bookworm-backports, pinned to runsc alone; RUNSC_CHANNEL=stable
#                 keeps the release's own 20221219; see bundles/apt/runsc.sh)
# make check      every test: unit, SDK unit and types, integration (real runsc and runc), fuzz and bench smoke
# make sdk-unit   the host SDK's unit tests (pytest in .venv, no containers)
# make typecheck  mypy --strict on the host SDK (.venv)
# make demo       the main job end to end under gVisor
# make asan       unit tests under AddressSanitizer and UBSan
# make install PREFIX=/usr/local   (tollgate, clients, the host SDK in lib/tollgate/tollgate_sdk)

PREFIX  ?= /usr/local
BUILD   ?= build
RUNTIME ?= runsc
RUNSC_CHANNEL ?= backports
VENV    ?= .venv

CC      ?= cc
PKGS    := yajl libseccomp libcap-ng libmnl libcrypto
OPT     ?= -O2 -g
CFLAGS_ALL = $(OPT) -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -I. \
             $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(CFLAGS) $(EXTRA_CFLAGS)
LDLIBS_ALL = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm $(LDLIBS)
# build/tollgate links libcrypto statically (the rest stays dynamic): it is
# exec'd for every runtime call, and loading libcrypto.so cost ~0.5 ms of
# each exec (perf stat of `tollgate --version`: 1.9 -> 1.4 ms), a tenth of
# tollgate's share of a container start.  Only SHA-256 and HMAC are used
# (no TLS, X.509 or ASN.1 parsing); an OpenSSL update still needs a rebuild.
LDLIBS_TOLLGATE = $(filter-out -lcrypto,$(shell pkg-config --libs $(PKGS) 2>/dev/null)) \
                  -Wl,-Bstatic -lcrypto -Wl,-Bdynamic \
                  $(filter-out -lcrypto,$(shell pkg-config --static --libs libcrypto 2>/dev/null)) \
                  -lpthread -lm $(LDLIBS)

# Every .c directly in these directories is part of the tollgate library;
# shim/cli/main.c holds main().  The floors go one way (base <- oci,
# governance <- bridge <- shim; tests/layering.sh checks it).  bridge/client/
# is built separately because it runs inside the container.
LIB_DIRS := base oci governance bridge shim shim/lifecycle shim/cli
LIB_SRCS := $(filter-out shim/cli/main.c,$(wildcard $(addsuffix /*.c,$(LIB_DIRS))))
LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))

DEB_PACKAGES := build-essential pkg-config libyajl-dev libseccomp-dev libcap-ng-dev \
                libmnl-dev libcriterion-dev libssl-dev runc busybox-static \
                containerd clang libclang-rt-14-dev python3 python3-yaml iproute2 \
                python3-grpcio python3-grpc-tools docker.io \
                podman containernetworking-plugins mmdebstrap libcurl4-openssl-dev python3-venv tini

.PHONY: all deps deps-system deps-python deps-node check check-side unit sdk-unit typecheck rootfs structure integration asan fuzz fuzz-smoke install clean \
        demo demo-interactive demo-agent bench bench-smoke

all: $(BUILD)/tollgate $(BUILD)/tollgate-call $(BUILD)/tollgate-http $(BUILD)/tollgate-probe $(BUILD)/tollgate-flood \
     rootfs

# The Python rootfs the SDK and `tollgate mcp` run programs on, beside
# build/tollgate where they look for it (docs/sdk.md).  Made from the
# host's Debian python3.11 (no download); python.sh rebuilds it only when
# the interpreter, its packages or the script changed, so a second make
# costs a checksum.
rootfs:
	@bash bundles/rootfs/python.sh $(BUILD)/rootfs/python >/dev/null

# Install only what is missing; apt-get update runs once, and only then.
# runsc is not in DEB_PACKAGES: bundles/apt/runsc.sh chooses its suite and
# upgrades an older one already installed.
# deps is three steps: the Debian packages and runsc first (the others need
# python3-venv, npm and the compiler), then the Python environment and the
# MCP clients at once: each mostly waits on its registry (a fresh clone
# here: 57 s one after the other, 38 s at once).
deps: deps-system
	@$(MAKE) --no-print-directory -j2 deps-python deps-node

deps-system:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@RUNSC_CHANNEL=$(RUNSC_CHANNEL) sh bundles/apt/runsc.sh

deps-python:
	@# The host side's Python environment (.venv, git-ignored): the pinned,
	@# hashed sdk/requirements.lock and the SDK installed editable; made once.
	@sh sdk/venv.sh $(VENV)

deps-node:
	@# The MCP clients of tests/integration/test_mcp.sh: the official TypeScript
	@# SDK and the MCP Inspector (its v1 CLI, which runs on node 20; v2 wants
	@# node 22.19), pinned by tests/mcp/package-lock.json, into
	@# tests/mcp/node_modules (git-ignored); npm from Debian when no node is
	@# installed at all.
	@command -v npm >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq --no-install-recommends nodejs npm; }
	@[ -f tests/mcp/node_modules/@modelcontextprotocol/sdk/package.json ] && \
	  [ -f tests/mcp/node_modules/@modelcontextprotocol/inspector/package.json ] || \
	  (cd tests/mcp && npm ci --no-audit --no-fund --loglevel=error)

$(BUILD)/obj/%.o: %.c $(wildcard */*.h */*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c -o $@ $<

$(BUILD)/libtollgate.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/tollgate: $(BUILD)/obj/shim/cli/main.o $(BUILD)/libtollgate.a
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_TOLLGATE)

# The http tool backend's request maker (docs/egress.md), run by the gate
# as the tools' uid.  Its own binary: libcurl (and the libssl and
# libcrypto.so it loads) stays out of build/tollgate, which is exec'd for
# every runtime call and carries a static libcrypto.
$(BUILD)/tollgate-http: governance/egress/http_fetch.c $(BUILD)/libtollgate.a
	$(CC) $(CFLAGS_ALL) $(shell pkg-config --cflags libcurl 2>/dev/null) -o $@ $< \
	  $(BUILD)/libtollgate.a $(shell pkg-config --libs libcurl 2>/dev/null) $(LDLIBS_ALL)

# The in-container clients: static, no dependency on the container's libc.
$(BUILD)/tollgate-call: bridge/client/tollgate-call.c bridge/client/rlimit_exec.c $(wildcard bridge/client/*.h)
	@mkdir -p $(dir $@)
	$(CC) -O2 -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -I. -static -o $@ $(filter %.c,$^)

# The confinement probe, run inside containers by the hardening tests.
$(BUILD)/tollgate-probe: tests/probe/probe.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -static -o $@ $<

# The hostile flooder and latency client, run inside containers by
# tests/integration/test_bridge_flood.sh.
$(BUILD)/tollgate-flood: tests/flood/flood.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -static -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libtollgate.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libtollgate.a $(LDLIBS_ALL) -lcriterion

unit: $(UNIT_BINS)
	@bash tests/run-unit.sh $(UNIT_BINS)

# The host SDK (sdk/): its unit tests under pytest and mypy --strict, both
# from the project's virtual environment (make deps).
sdk-unit:
	@bash tests/run-sdk-unit.sh $(abspath $(VENV))
typecheck:
	@cd sdk && $(abspath $(VENV))/bin/mypy

# The floors point one way, no file or function does several jobs, and no
# test waits on a condition it expanded once.
structure:
	@bash tests/layering.sh
	@bash tests/sizes.sh
	@bash tests/lint_waits.sh

integration: all
	@BUILD=$(abspath $(BUILD)) bash tests/integration/run.sh

# The last line is the whole run's count: unit suites, integration checks
# and the final leak checks.
# The checks that need no container (structure, unit, typecheck, sdk-unit,
# fuzz-smoke) run one after another beside the integration lanes, which
# spend most of their time waiting on sandboxes: the suite's wall time is
# the integration's, not the sum (docs/performance.md, "The suite").
check: deps
	@rm -f $(BUILD)/check-counts; mkdir -p $(BUILD); touch $(BUILD)/check-started
	$(MAKE) -j2 all
	COUNTS_FILE=$(abspath $(BUILD))/check-counts $(MAKE) -k -j2 check-side integration
	$(MAKE) bench-smoke
	@COUNTS_FILE=$(abspath $(BUILD))/check-counts CHECK_STARTED=$(abspath $(BUILD))/check-started bash tests/leaks.sh
check-side:
	$(MAKE) structure
	$(MAKE) unit
	$(MAKE) typecheck
	$(MAKE) sdk-unit
	$(MAKE) fuzz-smoke

# Sanitizer build in its own directory so it never mixes with the normal one.
# The unit tests run the static client and the binary of the normal build.
asan: all
	$(MAKE) BUILD=build/asan OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  LDLIBS="-fsanitize=address,undefined" unit

FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
fuzz:
	@bash tests/fuzz/run.sh $${FUZZ_SECONDS:-300}
fuzz-smoke:
	@if [ -n "$(FUZZ_SRCS)" ]; then bash tests/fuzz/run.sh 20; else echo "fuzz-smoke: no fuzz targets yet"; fi

bench: all
	@if [ -f bench/run.sh ]; then bash bench/run.sh full; else echo "bench: not written yet"; exit 1; fi
bench-smoke: all
	@if [ -f bench/run.sh ]; then bash bench/run.sh smoke; else echo "bench-smoke: not written yet"; fi

# The main job: the orders-reconciliation program under gVisor with governed tools.
demo: deps
	$(MAKE) -j2 all
	@BUILD=$(abspath $(BUILD)) RUNTIME=$(RUNTIME) bash bundles/examples/orders/demo.sh

# The large refund waits for `tollgate approve` from another terminal.
demo-interactive: deps
	$(MAKE) -j2 all
	@BUILD=$(abspath $(BUILD)) RUNTIME=$(RUNTIME) bash bundles/examples/orders/demo.sh --interactive

# The reference agent harness: a failed attempt, its stderr fed back, a retry.
demo-agent: deps
	$(MAKE) -j2 all
	@BUILD=$(abspath $(BUILD)) RUNTIME=$(RUNTIME) bash bundles/examples/agent/run.sh

install: all
	install -D -m 0755 $(BUILD)/tollgate $(DESTDIR)$(PREFIX)/bin/tollgate
	install -D -m 0755 $(BUILD)/tollgate-call $(DESTDIR)$(PREFIX)/lib/tollgate/tollgate-call
	install -D -m 0755 $(BUILD)/tollgate-http $(DESTDIR)$(PREFIX)/lib/tollgate/tollgate-http
	install -D -m 0644 bridge/client/tollgate.py $(DESTDIR)$(PREFIX)/lib/tollgate/tollgate.py
	install -d $(DESTDIR)$(PREFIX)/lib/tollgate/tollgate_sdk/mcp $(DESTDIR)$(PREFIX)/lib/tollgate/tollgate_sdk/serve \
	  $(DESTDIR)$(PREFIX)/lib/tollgate/tollgate_sdk/_listener $(DESTDIR)$(PREFIX)/lib/tollgate/tollgate_sdk/_container
	install -m 0644 sdk/tollgate_sdk/*.py sdk/tollgate_sdk/py.typed $(DESTDIR)$(PREFIX)/lib/tollgate/tollgate_sdk/
	install -m 0644 sdk/tollgate_sdk/mcp/*.py $(DESTDIR)$(PREFIX)/lib/tollgate/tollgate_sdk/mcp/
	install -m 0644 sdk/tollgate_sdk/serve/*.py $(DESTDIR)$(PREFIX)/lib/tollgate/tollgate_sdk/serve/
	install -m 0644 sdk/tollgate_sdk/_listener/*.py $(DESTDIR)$(PREFIX)/lib/tollgate/tollgate_sdk/_listener/
	install -m 0644 bridge/client/kernel.py $(DESTDIR)$(PREFIX)/lib/tollgate/tollgate_sdk/_container/kernel.py
	@# The Python rootfs beside the binary, where the SDK looks for it
	@# (PREFIX/lib/tollgate/rootfs/python beside PREFIX/bin/tollgate).
	rm -rf $(DESTDIR)$(PREFIX)/lib/tollgate/rootfs/python
	install -d $(DESTDIR)$(PREFIX)/lib/tollgate/rootfs
	cp -a $(BUILD)/rootfs/python $(DESTDIR)$(PREFIX)/lib/tollgate/rootfs/python
	install -d $(DESTDIR)$(PREFIX)/share/tollgate
	cp -r bundles/profiles bundles/seccomp $(DESTDIR)$(PREFIX)/share/tollgate/
	cp bundles/backend-floor.json $(DESTDIR)$(PREFIX)/share/tollgate/
	install -D -m 0644 docs/tollgate.1 $(DESTDIR)$(PREFIX)/share/man/man1/tollgate.1
	@# The audit chain is keyed by default: an unkeyed one proves only that
	@# nothing was damaged by accident (docs/audit.md).  A per-node key,
	@# created once (never replaced: old logs verify with it), and a default
	@# host config that names it, unless the node has its own config.
	install -d -m 0755 $(DESTDIR)/etc/tollgate
	@if [ ! -s $(DESTDIR)/etc/tollgate/audit.key ]; then \
	  (umask 077; head -c 32 /dev/urandom > $(DESTDIR)/etc/tollgate/audit.key.tmp) && \
	  mv $(DESTDIR)/etc/tollgate/audit.key.tmp $(DESTDIR)/etc/tollgate/audit.key && \
	  echo "created the audit key $(DESTDIR)/etc/tollgate/audit.key (0600)"; fi
	chmod 0600 $(DESTDIR)/etc/tollgate/audit.key
	@[ -e $(DESTDIR)/etc/tollgate/config.json ] || \
	  printf '{\n  "audit_key": "/etc/tollgate/audit.key"\n}\n' > $(DESTDIR)/etc/tollgate/config.json

clean:
	rm -rf build
